"""The Dask clients that sweeps (:mod:`gupsim.sweep`) and reproductions (:mod:`gupsim.validation`) run on.

A client is either an existing scheduler's (``gupsim sweep --scheduler``) or a
``LocalCluster`` of single-threaded workers on this machine's cores.  This
module only starts and stops them; what runs on them is the callers'.

**Ctrl-C.**  In a terminal, Ctrl-C reaches the whole process group: gupsim and
every local worker process.  Each worker's asyncio runner would then print a
``KeyboardInterrupt`` traceback of its own before gupsim's one line saying what
was kept.  So local worker processes are started with SIGINT ignored (a
disposition a child inherits, and Python keeps), and gupsim alone answers
Ctrl-C, by closing the cluster, which stops them.  After an interruption the
Dask, Tornado and asyncio loggers are silenced while the cluster closes: what
its tasks say while being cancelled is noise, not news.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from gupsim.errors import GupsimError

#: The loggers a closing cluster writes to.
DASK_LOGGERS = ("distributed", "tornado", "asyncio")


def open_client(scheduler: str | None, workers: int | None, processes: bool) -> Any:
    """A Dask client: the given scheduler, or a LocalCluster on this machine's cores."""
    import dask
    from dask.distributed import Client, LocalCluster

    # A compiled fast-engine call can hold the GIL for minutes; with Dask's default
    # worker-ttl (5 min) the scheduler would declare such a worker dead and kill it.
    dask.config.set({"distributed.scheduler.worker-ttl": None})
    try:
        if scheduler:
            return Client(scheduler, timeout="15s")
        # Dashboard on a free port: a second cluster on the box (tests beside a reproduction) would
        # otherwise find 8787 taken and warn on every start.
        # Worker processes use the C allocator for Python objects.  In a worker, pymalloc's arenas stay
        # pinned after a SimPy run by a few objects that live on, so the next run's record counted the
        # dead run's memory (docs/performance-log.md, eleventh pass); runpool.reset_peak_rss gives the C
        # allocator's free pages back before each run.
        with dask.config.set({"distributed.nanny.pre-spawn-environ.PYTHONMALLOC": "malloc"}), \
                _children_ignore_ctrl_c(processes):
            cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                   processes=processes, dashboard_address=":0", silence_logs=logging.ERROR)
        return Client(cluster)
    except (OSError, TimeoutError, ValueError) as exc:
        raise GupsimError(f"cannot reach a Dask scheduler at {scheduler}: {exc}") from None


def close_client(client: Any, *, interrupted: bool = False) -> None:
    """Close a client of :func:`open_client` and the local cluster it was given, if any: a Client given
    a cluster does not close it, and its worker processes would outlive the call.  ``interrupted``: the
    caller is unwinding from Ctrl-C, so Dask's own messages while it closes are not shown."""
    cluster = getattr(client, "cluster", None)
    with _quiet(DASK_LOGGERS) if interrupted else contextlib.nullcontext():
        client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def _children_ignore_ctrl_c(processes: bool) -> Iterator[None]:
    """SIGINT ignored while local worker processes are started, so that they inherit it (see the module
    docstring).  Only the main thread may set a handler; elsewhere (a test's thread) nothing changes."""
    if not processes or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _quiet(names: tuple[str, ...]) -> Iterator[None]:
    """The named loggers silent inside the block, as they were after it."""
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
