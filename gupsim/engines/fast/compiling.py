"""How long a fast run spent getting its kernels from Numba, kept apart from the run's own wall time.

On an empty Numba cache the first fast run compiles every kernel it calls, about 30 s, against a second or
two of simulation on a small machine; counted into ``wall_s`` it would make the first run in a process look 20
times slower than the next.  Numba announces its work through :mod:`numba.core.event`:
``numba:compiler_lock`` is held while a dispatcher compiles a signature or loads it from the cache, and
``numba:compile`` starts only when there is no cached version, i.e. a real compilation.  The listeners are
process-wide, so runs in threads of one process (``gupsim sweep --threads``) also count the time they waited
for the compiler lock while another run held it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from numba.core import event

NOTICE = "compiling the fast engine's kernels (first run only, about 30 s)"


class _FirstCompile(event.Listener):
    """Calls ``announce`` once, when the first real compilation (not a cache load) starts."""

    def __init__(self, announce: Callable[[], None]):
        self._announce: Callable[[], None] | None = announce

    def on_start(self, ev: event.Event) -> None:
        if self._announce is not None:
            announce, self._announce = self._announce, None
            announce()

    def on_end(self, ev: event.Event) -> None:
        pass


def tell_terminal() -> None:
    """The notice on stderr, only where someone is watching: a pipe or a log gets the record alone."""
    if sys.stderr.isatty():
        print(f"gupsim: {NOTICE}", file=sys.stderr, flush=True)


@contextmanager
def compile_time(announce: Callable[[], None] | None = None) -> Iterator[list[float]]:
    """Measure the seconds spent compiling or loading kernels inside the block, in ``spent[0]`` when it ends;
    ``announce()`` (default :func:`tell_terminal`) runs once as the first real compilation starts."""
    spent = [0.0]
    with event.install_listener("numba:compile", _FirstCompile(announce or tell_terminal)), \
            event.install_timer("numba:compiler_lock", lambda s: spent.__setitem__(0, s)):
        yield spent
