"""``gupsim run``'s progress bar: it hears how far a run has got, and it does not change the run.

Both engines tell a ``progress(applied, total)`` callback the updates applied
so far (the fast engine between its batches, the SimPy reference every
``simulation.PROGRESS_EVERY_EVENTS`` events); here the batches are made short so
that a small run reports many times.
"""

from __future__ import annotations

import io

import pytest

from gupsim.app.progress import PlainProgress, reporting
from gupsim.config import load_machine
from gupsim.base.errors import DeadlockError
from gupsim.engines.fast import driver
from gupsim.engines.reference import simulation
from gupsim.app.reporting import model_fields
from gupsim.engines.run import make_run_config, simulate


@pytest.mark.parametrize("engine, algorithm", [("fast", "routed"), ("fast", "baseline"), ("simpy", "routed"),
                                               ("simpy", "one-packet")])
def test_a_run_told_to_report_is_the_same_run_and_reports_from_zero_to_all(engine, algorithm, monkeypatch):
    monkeypatch.setattr(driver, "BATCH_EVENTS", 101)
    monkeypatch.setattr(simulation, "PROGRESS_EVERY_EVENTS", 101)
    cfg = make_run_config(machine=load_machine("bgl"), shape="4x2x2", algorithm=algorithm,
                          updates_per_process=300, engine=engine)
    heard = []
    told = simulate(cfg, progress=lambda applied, total: heard.append((applied, total)))[1]
    plain = simulate(cfg)[1]
    assert told["engine"] == engine
    assert model_fields(told) == model_fields(plain)
    total = 16 * 300
    assert heard[0] == (0, total) and heard[-1] == (total, total)
    assert len(heard) > 20 and {t for _, t in heard} == {total}
    applied = [a for a, _ in heard]
    assert applied == sorted(applied) and len(set(applied)) > 10


def test_a_deadlock_is_still_reported_while_reporting_progress():
    tiny = {"network.injection_fifo_chunks": 8, "network.reception_fifo_chunks": 8,
            "network.link_buffer_chunks": 8, "network.topology": "mesh"}
    cfg = make_run_config(machine=load_machine("bgl", tiny), shape="4x4x1", algorithm="routed",
                          updates_per_process=1024, engine="simpy",
                          algorithm_options={"bucket_capacity": 100, "receive_buckets": "shared"})
    with pytest.raises(DeadlockError, match="wait on each other"):
        simulate(cfg, progress=lambda applied, total: None)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_bar_shows_on_a_terminal_a_log_gets_plain_lines_and_none_is_nothing(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    with reporting("4x4x4 routed", "auto") as tell:
        assert isinstance(tell, PlainProgress)  # not a terminal: a line every 30 s, no bar
    with reporting("4x4x4 routed", "bar") as tell:
        assert tell is None  # a bar's carriage returns would garble a log
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with reporting("4x4x4 routed", "none") as tell:
        assert tell is None
    monkeypatch.setattr("gupsim.app.progress.BAR_DELAY_S", 0)  # no delay before the bar shows
    with reporting("4x4x4 routed", "auto") as tell:
        tell(0, 2000)
        tell(2000, 2000)
    shown = terminal.getvalue()
    assert "4x4x4 routed" in shown and "2.00k/2.00k" in shown
