"""What gupsim run says while it runs, off a terminal too (gupsim.app.progress, gupsim.app.first_run)."""

from __future__ import annotations

import io

from gupsim.app.first_run import estimate_line
from gupsim.app.progress import PlainProgress, resolve
from gupsim.engines.run import make_run_config


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_plain_progress_says_a_line_every_30_s_with_the_rate_measured_after_compiling():
    out, clock = io.StringIO(), _Clock()
    tell = PlainProgress("4x4x4 baseline", out, clock=clock)
    clock.now = 70.0  # compiling: the engine's first report comes now
    tell(1000, 100_000)
    clock.now = 80.0
    tell(11_000, 100_000)  # 10 s after the last line would be too soon: none
    assert out.getvalue().count("\n") == 1
    assert out.getvalue().startswith("gupsim: 4x4x4 baseline: 1,000 of 100,000 updates at most (1%), 70 s so far")
    clock.now = 101.0
    tell(32_000, 100_000)  # 31,000 updates in 31 s since the first report: 68 s left, not 150
    line = out.getvalue().splitlines()[-1]
    assert "32,000 of 100,000" in line and "101 s so far" in line and "about 68 s left" in line


def test_auto_is_a_bar_on_a_terminal_and_plain_elsewhere():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    assert resolve("auto", Tty()) == "bar" and resolve("auto", io.StringIO()) == "plain"
    assert resolve("none", Tty()) == "none"


def test_a_long_run_is_announced_with_its_estimate_and_a_short_one_is_not():
    long = make_run_config(machine="bgl", shape="64x32x32", algorithm="routed", updates_per_process=256)
    line = estimate_line(long)
    assert line and "expected to take about" in line and "min" in line
    assert estimate_line(make_run_config(machine="bgl", shape="2x2x2", algorithm="baseline", updates_per_process=256)) is None
