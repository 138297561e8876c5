"""The Dask clients that sweeps (:mod:`gupsim.studies.sweep`) and reproductions (:mod:`gupsim.studies.validation`) run on.

A client is either an existing scheduler's (``gupsim sweep --scheduler``) or a
``LocalCluster`` of single-threaded workers on this machine's cores.  This
module only starts and stops them; what runs on them is the callers'.

**Ctrl-C.**  In a terminal, Ctrl-C reaches the whole process group: gupsim and
every local worker process.  Each worker's asyncio runner would then print a
``KeyboardInterrupt`` traceback of its own before gupsim's one line saying what
was kept.  So local worker processes are started with SIGINT blocked (a signal
mask a thread passes to the threads and processes it starts, through ``exec``),
and gupsim alone answers Ctrl-C, by closing the cluster, which stops them.  It
is blocked, not ignored: an ignored Ctrl-C in the seconds the cluster takes to
start would be lost, and the whole job would then run to its end and exit 0;
a blocked one waits, and is answered as soon as the cluster is up
(:func:`_signals_wait_while_starting`).  After an interruption the
Dask, Tornado and asyncio loggers are silenced while the cluster closes: what
its tasks say while being cancelled is noise, not news.  They are silenced in
the signal handler itself (:func:`interruptible`), before the
``KeyboardInterrupt`` reaches Dask: a Ctrl-C that lands in Dask's ``sync()``
before its future exists makes the event-loop thread log a ``NameError``
traceback through ``tornado.application`` at once, before the main thread could
silence anything.  Every logger below those names is silenced, not only the
named ones: Dask's configuration gives ``tornado.application`` and
``distributed.client`` levels and handlers of their own.

**SIGTERM**, **SIGHUP** (the terminal closed) and **SIGXCPU** (a CPU-time limit
reached) are answered the same way (:class:`Interrupted`, :data:`STOP_SIGNALS`):
without a handler Python dies at once with no word, the cluster is never
closed, and multiprocessing's resource tracker warns of leaked semaphores.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from gupsim.base.errors import GupsimError, ResourceFault

#: The loggers a closing cluster writes to.
DASK_LOGGERS = ("distributed", "tornado", "asyncio")
#: The signals a long command answers with one line and what it kept (:func:`interruptible`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGXCPU)


def open_client(scheduler: str | None, workers: int | None, processes: bool) -> Any:
    """A Dask client: the given scheduler, or a LocalCluster on this machine's cores."""
    import dask
    from dask.distributed import Client, LocalCluster

    # A compiled fast-engine call can hold the GIL for minutes; with Dask's default
    # worker-ttl (5 min) the scheduler would declare such a worker dead and kill it.
    dask.config.set({"distributed.scheduler.worker-ttl": None})
    if not scheduler:
        _check_open_files()
    try:
        if scheduler:
            return _connect(Client, scheduler)
        # Dashboard on a free port: a second cluster on the box (tests beside a reproduction) would
        # otherwise find 8787 taken and warn on every start.
        # Worker processes use the C allocator for Python objects.  In a worker, pymalloc's arenas stay
        # pinned after a SimPy run by a few objects that live on, so the next run's record would count the
        # dead run's memory; runpool.reset_peak_rss gives the C allocator's free pages back before each run.
        # Workers log only CRITICAL: what fails in a task reaches gupsim as the task's exception, and gupsim
        # reports it; a worker's own ERROR lines are what it says while its scheduler goes away (a heartbeat's
        # "Failed to communicate with scheduler" and its traceback, which a Ctrl-C can still draw from a worker
        # in the moment before _kill_worker_processes reaches it), on the stderr it shares with gupsim.
        stopped: list[int] = []
        with dask.config.set({"distributed.nanny.pre-spawn-environ.PYTHONMALLOC": "malloc"}), \
                _signals_wait_while_starting(processes, stopped):
            cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                   processes=processes, dashboard_address=":0", silence_logs=logging.CRITICAL)
            client = Client(cluster)
        if stopped:  # a signal while the cluster started: answered now, with the cluster closed
            close_client(client, interrupted=True)
            raise Interrupted(stopped[0])
        return client
    except (OSError, TimeoutError, ValueError) as exc:
        if not scheduler:
            raise ResourceFault(f"cannot start a local Dask cluster: {exc}") from None
        raise GupsimError(f"cannot reach a Dask scheduler at {scheduler}: {exc}") from None
    except RuntimeError as exc:  # "Nanny failed to start": the reason is its cause (too few file descriptors)
        cause = exc.__cause__ or exc
        raise ResourceFault(f"cannot start a local Dask cluster: {type(cause).__name__}: "
                            f"{str(cause).splitlines()[0][:200] if str(cause) else exc} (a limit on open files, "
                            "ulimit -n, or on processes?)") from None


#: The fewest open files a local cluster is started with: its scheduler, nannies and workers hold sockets,
#: pipes and /proc files; under ``prlimit --nofile=40`` a sweep had printed 2,909 lines of asyncio and Tornado
#: tracebacks before its first store write failed.
MIN_OPEN_FILES = 256


def _check_open_files() -> None:
    """One line, before anything starts, if this process may open fewer than :data:`MIN_OPEN_FILES` files."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < MIN_OPEN_FILES:
        raise ResourceFault(f"cannot start a local Dask cluster with a limit of {soft} open files (ulimit -n); it "
                            f"needs {MIN_OPEN_FILES} or more: raise the limit, or run on an existing cluster "
                            "(--scheduler)")


#: Seconds to wait for an existing scheduler to answer.  Dask's own time-out covers the connection, not the
#: handshake: an HTTP server at the address would keep ``sweep --scheduler`` waiting for ever.
CONNECT_S = 30.0


def _connect(client_class: Any, scheduler: str) -> Any:
    """A client of the scheduler at ``scheduler``, made in a thread of its own that is given up after
    :data:`CONNECT_S` (a daemon thread: one stuck in a handshake does not keep gupsim from exiting)."""
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = client_class(scheduler, timeout="15s")
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=connect, daemon=True, name="gupsim-connect")
    thread.start()
    thread.join(CONNECT_S)
    if thread.is_alive():
        raise GupsimError(f"cannot reach a Dask scheduler at {scheduler}: nothing there answered as a Dask "
                          f"scheduler within {CONNECT_S:g} s (an address of another kind of server?)")
    if "error" in box:
        exc = box["error"]
        if isinstance(exc, (OSError, TimeoutError, ValueError)):
            raise exc
        # what a reply that is not Dask's makes of its frames (a length read from HTTP text: "Unable to
        # allocate 3.07 EiB") is no Dask scheduler either
        raise GupsimError(f"cannot reach a Dask scheduler at {scheduler}: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:200] if str(exc) else ''}") from None
    return box["client"]


def close_client(client: Any, *, interrupted: bool = False) -> None:
    """Close a client of :func:`open_client` and the local cluster it was given, if any: a Client given
    a cluster does not close it, and its worker processes would outlive the call.  ``interrupted``: the
    caller is unwinding from Ctrl-C, so Dask's own messages while it closes are not shown."""
    cluster = getattr(client, "cluster", None)
    with _quiet(DASK_LOGGERS) if interrupted else contextlib.nullcontext():
        if interrupted and cluster is not None:
            _kill_worker_processes(cluster)
        client.close()
        if cluster is not None:
            cluster.close()


def _kill_worker_processes(cluster: Any) -> None:
    """Kill a local cluster's worker processes, which hold nothing the sweep keeps (the driver stores every row).

    Closed the ordinary way, a worker busy in a compiled kernel cannot answer its nanny in time; the scheduler
    closes first, and when the kernel returns the worker's heartbeat fails with an ERROR and a traceback of
    its own, on the stderr it shares with gupsim, which no logger here can silence.  Each nanny is told first
    that its worker is going, so that it does not start another."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(nanny, "pid", None)  # a Nanny's worker process; a threaded Worker has none
        if not isinstance(pid, int) or not hasattr(nanny, "close_gracefully"):
            continue
        nanny.close_gracefully(reason="gupsim interrupted")
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def _signals_wait_while_starting(processes: bool, stopped: list[int]) -> Iterator[None]:
    """Every one of :data:`STOP_SIGNALS` held back while a local cluster starts, and noted in ``stopped`` for
    the caller to answer once it holds the cluster it must close.  A signal that lands inside the cluster's
    constructor leaves a cluster half made, which Dask then fails to close at exit with a traceback.

    SIGINT is blocked (see the module docstring): the worker processes started meanwhile inherit the mask,
    so a terminal's Ctrl-C never reaches them; a Ctrl-C that came is taken off the pending signals.  The
    others get a handler that only notes them: the workers must still die of the SIGTERM their nanny sends.
    Main thread only (signal handlers and this mask are the main thread's); elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    others = [s for s in STOP_SIGNALS if s != signal.SIGINT]
    previous = {s: signal.signal(s, lambda signum, _frame: stopped.append(signum)) for s in others}
    if processes:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if processes:
            if signal.SIGINT in signal.sigpending():
                signal.sigwait({signal.SIGINT})  # consumed here: unblocked, it would interrupt the caller mid-step
                stopped.append(signal.SIGINT)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        for s, handler in previous.items():
            signal.signal(s, handler)


class Interrupted(KeyboardInterrupt):
    """One of :data:`STOP_SIGNALS`, raised in the main thread by :func:`interruptible`; ``signum`` says which.

    Its one argument is the number: an exception crosses a Dask worker's boundary pickled, and is rebuilt as
    ``Interrupted(*args)``; an argument of the signal's name had failed there with ``'SIGINT' is not a valid
    Signals`` in place of the one line."""

    def __init__(self, signum: int | str) -> None:
        number = int(signal.Signals[signum] if isinstance(signum, str) else signum)
        super().__init__(number)
        self.signum = number

    def __str__(self) -> str:
        return signal.Signals(self.signum).name


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Inside the block, each of :data:`STOP_SIGNALS` silences the Dask loggers and then raises :class:`Interrupted`, so the
    caller's ``finally`` closes the cluster quietly (see the module docstring); the loggers and the handlers are
    restored after the block.  Only the main thread may set handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    silenced: list[list[tuple[logging.Logger, int]]] = []

    def handler(signum: int, _frame: Any) -> None:
        if not silenced:
            silenced.append(_silence(DASK_LOGGERS))
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        for levels in silenced:
            _restore(levels)


def _silence(names: tuple[str, ...]) -> list[tuple[logging.Logger, int]]:
    """Silence the named loggers and every logger below them that exists; return what to restore."""
    existing = [lg for n, lg in logging.root.manager.loggerDict.items()
                if isinstance(lg, logging.Logger) and any(n.startswith(f"{name}.") for name in names)]
    loggers = [logging.getLogger(n) for n in names] + existing
    levels = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    return levels


def _restore(levels: list[tuple[logging.Logger, int]]) -> None:
    for lg, level in reversed(levels):
        lg.setLevel(level)


@contextlib.contextmanager
def _quiet(names: tuple[str, ...]) -> Iterator[None]:
    """The named loggers, and those below them, silent inside the block, as they were after it."""
    levels = _silence(names)
    try:
        yield
    finally:
        _restore(levels)
