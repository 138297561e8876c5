"""What ``gupsim run`` says while it runs: a bar on a terminal, a line every half minute elsewhere.

A run redirected to a file or a pipe (a batch job, ``nohup``, CI) used to say nothing until its record: 80 s
of silence on a cold Numba cache, and no way to tell a slow run from a hung one.  ``--progress`` chooses:

* ``bar``: tqdm's bar on stderr (only where stderr is a terminal: a bar's carriage returns garble a log);
* ``plain``: one line on stderr every :data:`PLAIN_EVERY_S` seconds of wall time with the updates applied,
  the share done and the time left at the rate so far (an estimate: the rate is uneven, buckets fill first);
* ``none``: nothing;
* ``auto`` (the default): ``bar`` on a terminal, ``plain`` otherwise.

The compile notice is said whatever the mode but ``none``, on a terminal or not (:func:`compile_notice`), with
the figure measured on the machine the README names (:data:`COMPILE_NOTICE`); the fast engine's own notice
(``gupsim.engines.fast.compiling``) reaches terminals only.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TextIO

#: Wall seconds between two ``plain`` progress lines.
PLAIN_EVERY_S = 30.0
#: Wall seconds into a run before the bar shows (a short run shows none).
BAR_DELAY_S = 1.0
#: The ``--progress`` modes.
MODES = ("auto", "bar", "plain", "none")
#: What a run off a terminal says when Numba starts compiling: measured on the README's machine (2-core box, empty
#: cache, CPU seconds, which are an idle box's wall seconds: ``one-packet`` 35, ``baseline`` 51, ``routed`` 59,
#: ``routed-split`` 60; benchmarks/compile_profile.py, docs/performance-log.md).
COMPILE_NOTICE = ("compiling the fast engine's kernels for this algorithm (once per algorithm, cached after: "
                  "35-60 s on an idle 2-core box, more on a busy one)")


def resolve(mode: str, stream: TextIO | None = None) -> str:
    """``auto`` made concrete: ``bar`` where ``stream`` (stderr) is a terminal, ``plain`` elsewhere."""
    if mode != "auto":
        return mode
    stream = stream or sys.stderr
    return "bar" if stream.isatty() else "plain"


class PlainProgress:
    """The ``plain`` mode's callback: ``tell(applied, total)`` prints a line when :data:`PLAIN_EVERY_S` has
    passed since the last one (the engines call it every few seconds)."""

    def __init__(self, desc: str, stream: TextIO, every_s: float = PLAIN_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.desc, self.stream, self.every_s, self.clock = desc, stream, every_s, clock
        self.start = clock()
        self.last = self.start
        # the rate is measured from the engine's first report: the time before it was spent compiling
        self.first: tuple[float, int] | None = None

    def __call__(self, applied: int, total: int) -> None:
        now = self.clock()
        if self.first is None:
            self.first = (now, applied)
        if now - self.last < self.every_s:
            return
        self.last = now
        self.stream.write(self.line(applied, total, now) + "\n")
        self.stream.flush()

    def line(self, applied: int, total: int, now: float) -> str:
        """"gupsim: 4x4x4 baseline: 131,072 of 262,144 updates (50%), 30 s so far, about 30 s left"."""
        share = applied / total if total else 0.0
        since, before = self.first or (now, applied)
        rate = (applied - before) / (now - since) if now > since else 0.0
        left = f", about {(total - applied) / rate:.0f} s left at most at this rate" if rate > 0 else ""
        return (f"gupsim: {self.desc}: {applied:,} of {total:,} updates at most ({share:.0%}), "
                f"{now - self.start:.0f} s so far{left}")


@contextmanager
def bar(desc: str) -> Iterator[Callable[[int, int], None]]:
    """tqdm's bar of updates applied, from :data:`BAR_DELAY_S` into the run; log lines go above it."""
    import logging

    from tqdm import tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

    # mininterval=0: the engines report a few times a second at most, and each report should show
    with tqdm(desc=desc, unit="update", unit_scale=True, dynamic_ncols=True, leave=False, mininterval=0,
              delay=BAR_DELAY_S) as shown, logging_redirect_tqdm([logging.getLogger("gupsim")]):
        def tell(applied: int, total: int) -> None:
            shown.total = total
            shown.update(applied - shown.n)
        yield tell


@contextmanager
def reporting(desc: str, mode: str) -> Iterator[Callable[[int, int], None] | None]:
    """The progress callback for ``mode`` (one of :data:`MODES`), with the compile notice off a terminal."""
    mode = resolve(mode)
    notice = compile_notice() if mode == "plain" else nullcontext()
    with notice:
        if mode == "bar" and sys.stderr.isatty():
            with bar(desc) as tell:
                yield tell
        elif mode == "plain":
            yield PlainProgress(desc, sys.stderr)
        else:
            yield None


@contextmanager
def compile_notice(stream: TextIO | None = None) -> Iterator[None]:
    """Say :data:`COMPILE_NOTICE` on ``stream`` (stderr) when Numba starts a real compilation (not a cache
    load) inside the block; on a terminal the fast engine says its own."""
    from numba.core import event

    out = stream or sys.stderr

    class Announce(event.Listener):
        said = False

        def on_start(self, ev: Any) -> None:
            if not self.said:
                self.said = True
                out.write(f"gupsim: {COMPILE_NOTICE}\n")
                out.flush()

        def on_end(self, ev: Any) -> None:
            pass

    with event.install_listener("numba:compile", Announce()):
        yield
