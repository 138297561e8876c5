"""The ``gupsim`` script's first step: start the command line, or say in one line why it cannot start.

Importing the command line imports NumPy, pandas, Numba and llvmlite, and compiles nothing yet; under a small
address-space limit (``prlimit --as=300000000``, ``ulimit -v 400000``) one of them fails with a MemoryError,
or llvmlite's shared library cannot be mapped (an OSError), and ``gupsim list`` had printed a traceback.  This
module imports only the standard library itself, so it can always print the line.  ``NUMBA_DISABLE_JIT=1``
makes every fast kernel a plain Python function, which the kernel contract refuses at import (a traceback
too): it is said first, in the user's terms.
"""

from __future__ import annotations

import os
import signal
import sys

#: Exit status for a fault of the environment (gupsim.base.errors.ResourceFault's).
ENVIRONMENT = 1


def _fail(message: str, code: int = ENVIRONMENT) -> None:
    try:
        print(f"gupsim: error: {message}", file=sys.stderr, flush=True)
    except OSError:
        pass
    sys.exit(code)


class Stopped(KeyboardInterrupt):
    """SIGTERM, SIGHUP or SIGXCPU outside a command's own handling (:func:`gupsim.studies.cluster.interruptible`):
    answered as Ctrl-C is, in one line, with the signal's exit status (``signum``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    raise Stopped(signum)


def main(argv: list[str] | None = None) -> None:
    """The ``gupsim`` script (pyproject.toml): :func:`gupsim.app.cli.main`, guarded."""
    # Without a handler these end the process with no word (a "crash"); the import alone takes seconds.
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGXCPU):
        signal.signal(signum, _stop)
    if os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0"):
        _fail("NUMBA_DISABLE_JIT is set: gupsim's fast engine is Numba-compiled kernels and cannot run without "
              "the compiler; unset it")
    try:
        from gupsim.app.cli import main as cli_main
    except KeyboardInterrupt as exc:  # Ctrl-C or a signal while the libraries load: nothing was started
        _fail_stopped(exc)
    except MemoryError:
        _fail("not enough memory to start: the process's memory limit (ulimit -v, prlimit --as) is below what "
              "gupsim's libraries need to load (about 1.5 GB of address space)")
    except Exception as exc:  # noqa: BLE001 - a library that cannot load (llvmlite's .so under a limit)
        first = str(exc).strip().splitlines()[0].split(". ")[0][:300] if str(exc).strip() else ""
        _fail(f"cannot start: {type(exc).__name__}: {first} (a memory limit such as ulimit -v or prlimit --as "
              "can keep a library from loading)")
    try:
        cli_main(argv)
    except MemoryError:
        _fail("out of memory (the process's memory limit, or the machine's, is too small for this command)")


def _fail_stopped(exc: KeyboardInterrupt) -> None:
    try:
        print("gupsim: interrupted: while starting; nothing was done", file=sys.stderr, flush=True)
    except OSError:
        pass
    sys.exit(128 + getattr(exc, "signum", signal.SIGINT))


if __name__ == "__main__":
    main()
