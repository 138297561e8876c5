"""How long a fast run spent getting its kernels from Numba, kept apart from the run's own wall time.

On an empty Numba cache the first fast run compiles every kernel it calls: 51 CPU seconds for ``baseline`` (the
README's first command), 25-30 more for ``routed`` or ``routed-split``, 10 for ``one-packet``, measured by
``benchmarks/compile_profile.py`` (docs/performance-log.md), against a second or two of simulation on a small
machine; counted into ``wall_s`` it would make the first run in a process look 50 times slower than the next.
Numba announces its work through :mod:`numba.core.event`: ``numba:compiler_lock`` is held while a dispatcher
compiles a signature or loads it from the cache, and ``numba:compile`` starts only when there is no cached
version, i.e. a real compilation.  The listeners are process-wide, so runs in threads of one process
(``gupsim sweep --in-process``) also count the time they waited for the compiler lock while another run held it.

**One signature per function.**  Numba compiles a function once per tuple of argument types, and a call from
compiled code passes a module constant as its own literal type (``flush_cpu(..., PH_SENT)`` is compiled for
``Literal[int](2)``, and again for each other phase) and a packet-table element as ``int32`` where another call
site passes an ``int64``.  Each variant compiled the function and every callee that inherits the type again:
10 of the first run's 65 CPU seconds.  :func:`install` makes every call between this package's compiled functions
pass its integers as ``int64`` and its literal integers and booleans as plain values, so each function compiles
once.  Widening is exact (an ``int32`` fits an ``int64``, and Numba already does its arithmetic in ``int64``), and
LLVM still folds a constant argument once it inlines the callee.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from numba.core import dispatcher, event, types

NOTICE = ("compiling the fast engine's kernels (once per algorithm, then cached: 35-60 s on an idle 2-core box, "
          "more on a busy one)")
#: The functions :func:`install` gives one signature: those of the fast engine's package.
PACKAGE = __name__.rpartition(".")[0]


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


def widened(ty: types.Type) -> types.Type:
    """The argument type a call between the package's compiled functions compiles its callee for: a literal
    integer or boolean as its plain type, a signed integer narrower than 64 bits as ``int64``."""
    if isinstance(ty, (types.IntegerLiteral, types.BooleanLiteral)):
        ty = types.unliteral(ty)
    if isinstance(ty, types.Integer) and ty.signed and ty.bitwidth < 64:
        return types.int64
    return ty


_real_get_call_template = dispatcher.Dispatcher.get_call_template


def _one_signature(self, args, kws):
    """Numba's typing of a call to a compiled function from compiled code, the argument types widened first for
    this package's functions (the caller's values are converted to them at the call)."""
    if self.py_func.__module__.startswith(PACKAGE + "."):
        args = tuple(widened(a) for a in args)
        kws = {k: widened(v) for k, v in kws.items()}
    return _real_get_call_template(self, args, kws)


def install() -> None:
    dispatcher.Dispatcher.get_call_template = _one_signature


install()
