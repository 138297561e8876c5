"""What a fast kernel provides, what the fast engine gives it, and the registry that checks the two meet.

A kernel is one algorithm's compiled event loop (``one_packet.py``, ``routed.py``, ``routed_split.py``,
``baseline.py``, ``alltoall.py``).  The
engine (:mod:`gupsim.engines.fast.engine`) builds the network's state, asks the kernel for its own, runs the
kernel's loop batch by batch (:mod:`gupsim.engines.fast.driver`) and, once the run ends, asks the kernel what
it counted.  Everything it asks for is a member of :class:`Kernel`; a kernel module exports one instance,
``KERNEL``, and the engine registers it (:func:`register_kernel`), which checks the contract first.

State travels in two named tuples of NumPy arrays, never as loose positional arrays: :class:`Network` (the
engine's, the same for every kernel) and the kernel's own ``state`` class.  Numba compiles a named tuple's
field access to a constant offset, so a loop that takes the two tuples runs as fast as one that took every
array by position (docs/performance-log.md).  Between batches the driver rebuilds both tuples from one dict of
arrays keyed by field name, since the tables that grow are replaced by longer ones; a checkpoint keeps the
arrays by the same names.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

from gupsim.base.errors import GupsimError


class Network(NamedTuple):
    """The network's state and what else the engine builds the same for every kernel (the event queue, the run's
    counters, the window's times, the applied-times series, the HPCC streams); columns and indices: :mod:`gupsim.engines.fast.tables`.

    The compiled helpers name a field by a short local alias (given in brackets) where one line reads many."""

    #: [pk] int32 (packet rows, ``PK_COLS``): a packet's source, destination, size, where it is and what it waits for.
    packets: np.ndarray
    #: [pf] float64 (packet rows, ``PF_COLS``): when it started on its link, when it asked for room.
    packet_times: np.ndarray
    #: [pq] int32 (pools, ``PQ_COLS``): a credit pool's free chunks, waiter queues and buffer order.
    pools: np.ndarray
    #: [dq] int64 (pools, ``DEFER_SLOTS + 1``, 3): credit returns kept beside each pool (time bits, key, chunks).
    deferred: np.ndarray
    #: [rk] int32 (ranks, ``RK_NET_COLS``): a rank's inbox and what wakes its CPU.
    ranks: np.ndarray
    #: [lf] float64 (links [+ nodes + links], ``LF_COLS``): a link's free-at time, busy and blocked seconds, and the
    #: end of its node's last injected reservation; with a DMA engine, one row per node below, then one throttle
    #: queue per link (:mod:`gupsim.engines.fast.dma`).
    link_times: np.ndarray
    #: [lb] int64 (links,): bytes each link carried.
    link_bytes: np.ndarray
    #: [ip] int64 (``N_IPARAMS``,): shape, routing, pool offsets, run length (``I_*``).
    int_params: np.ndarray
    #: [fp] float64 (``N_FPARAMS``,): link rate, chunk and router seconds, CPU cycle (``F_*``).
    float_params: np.ndarray
    #: [nbr] int64 (links,): the node at the far end of each link.
    neighbors: np.ndarray
    #: int64 (nodes, 3): each node's coordinates.
    coords: np.ndarray
    #: [hh] (heap, calendar, far table, each entity's next sequence number): the event queue (:mod:`gupsim.engines.fast.events`).
    queue: tuple
    #: [ctr] int64 (``N_COUNTERS``,): run counters and the queue's bookkeeping (``C_*``).
    counters: np.ndarray
    #: float64 (2,): simulated times at which the measured window opened and closed (NaN until then).
    window_times: np.ndarray
    #: [at] float64 (marks,): simulated times at which the updates applied crossed each mark of
    #: :func:`gupsim.model.output_analysis.applied_marks` (NaN until then; ``I_NMARKS``, ``C_NEXT_MARK``).
    applied_times: np.ndarray
    #: uint64 (ranks,): each rank's current HPCC stream value.
    streams: np.ndarray
    #: uint64 (4,): the table layout ``owner_of`` needs (mask, top, min local size, remainder).
    layout: np.ndarray
    #: int64 (nodes,): the part of a partitioned run each node belongs to (all 0 in a serial run; the part a loop
    #: runs is ``C_PART``): :mod:`gupsim.engines.fast.partitioned`.
    node_part: np.ndarray
    #: [ob] int64 (rows, 4): the events a part scheduled for another part's entities (time bits, key, payload,
    #: that part), delivered at its window's end (``C_OUT_N`` rows used; empty in a serial run).
    outbox: np.ndarray


#: The network's per-packet tables: the driver grows them (and a kernel's ``packet_arrays``) together.
NETWORK_PACKET_ARRAYS = ("packets", "packet_times")
#: The field the event queue lives in: a tuple of arrays, saved as ``queue0``, ``queue1``, ...
QUEUE = "queue"


@dataclass(frozen=True)
class Kernel:
    """One algorithm's compiled kernel: the members the fast engine and its driver use, and nothing else.

    ``arrays`` below is the run's dict of every array by field name (the :class:`Network` fields and the
    ``state`` fields); ``ranks`` is the number of processes.

    * ``name``: the algorithm it compiles (``gupsim.algorithms`` registry name).
    * ``state``: a ``typing.NamedTuple`` class of the kernel's own arrays; its field names must differ from
      :class:`Network`'s.
    * ``loop(state, network, now) -> (now, finished)``: a Numba-compiled function that processes events from
      simulated time ``now`` (seconds) until the run ends (``finished`` True) or the batch ends (False: a
      table must grow, or the driver's pause point ``C_PAUSE_AT`` came).  It
      must stop when the queue needs room (``events.needs_room``) and after an event once
      ``events.batch_over``, and end the run (True) before an event past the stopping rule's time
      (``events.past_stop``); the driver does the rest between batches.
    * ``prepare(sim, options) -> dict``: the kernel's arrays, keyed by ``state``'s field names, for a
      :class:`gupsim.engines.fast.engine.FastSimulation` and its validated algorithm options.
    * ``counters(arrays) -> dict``: the algorithm's counters at the end, named as the SimPy class's
      attributes that its ``metrics()`` reads.
    * ``window_counters(arrays) -> [dict, dict]``: the same counters at the window's two marks, as the SimPy
      class's ``counters()`` reports them (empty dicts if its metrics need none).
    * ``ended(arrays) -> bool array (ranks,)``: whose process has returned (for a deadlock's report).
    * ``updates_left(arrays) -> int array (ranks,)``: updates each rank has still to generate.
    * ``error_message(code, arrays) -> str``: one line for a nonzero ``counters[C_ERROR]``.
    * ``per_rank_bytes``: measured peak bytes per process above the fixed part (the memory estimate).
    * ``per_rank_pair_bytes``, optional: bytes per process *per process*, for a kernel whose tables hold a row of
      P entries for each of the P processes (``alltoall``'s bucket and block sizes); the estimate adds P times it
      to every process's ``per_rank_bytes``.
    * ``options``: the algorithm options the kernel implements; any other must keep its default, else the
      run goes to SimPy (:meth:`gupsim.engines.fast.engine.FastEngine.unsupported`).
    * ``packet_arrays``: the kernel's own per-packet tables (rows indexed by packet number), grown with the
      network's.
    * ``grow_tables(arrays)``, optional: grow the kernel's own tables between batches (in place in
      ``arrays``); ``grown_arrays`` names them, so that a checkpoint's may be longer than a fresh run's.
    * ``summed_arrays``, optional: a kernel that runs in parts (:mod:`gupsim.engines.fast.partitioned`) names
      its counters here: each part keeps its own, summed when the parts are put back together.  Such a kernel
      logs each update's time in ``applied_times`` instead of keeping the marks when ``I_LOG_APPLIES`` is set
      (:func:`gupsim.engines.fast.routed.log_apply`).  Empty: the kernel runs serially only.
    """

    name: str
    state: type
    loop: Any
    prepare: Callable[[Any, Any], dict]
    counters: Callable[[dict], dict]
    window_counters: Callable[[dict], list]
    ended: Callable[[dict], np.ndarray]
    updates_left: Callable[[dict], np.ndarray]
    error_message: Callable[[int, dict], str]
    per_rank_bytes: int
    options: frozenset = frozenset()
    per_rank_pair_bytes: int = 0
    packet_arrays: tuple = ()
    grow_tables: Optional[Callable[[dict], None]] = None
    grown_arrays: tuple = ()
    summed_arrays: tuple = ()

    def state_of(self, arrays: dict) -> tuple:
        """The kernel's state tuple from the run's arrays."""
        return self.state(*(arrays[name] for name in self.state._fields))


_CALLABLES = ("prepare", "counters", "window_counters", "ended", "updates_left", "error_message")


def contract_problems(kernel: Kernel) -> list[str]:
    """What ``kernel`` lacks or gets wrong against the contract of :class:`Kernel` (empty: it meets it)."""
    problems = [f"{name} is missing" for name in _CALLABLES if not callable(getattr(kernel, name, None))]
    fields = getattr(kernel.state, "_fields", None)
    if not isinstance(kernel.state, type) or not issubclass(kernel.state, tuple) or fields is None:
        problems.append("state is not a NamedTuple class")
        fields = ()
    elif set(fields) & set(Network._fields):
        problems.append(f"state reuses the network's field(s) {', '.join(sorted(set(fields) & set(Network._fields)))}")
    py_func = getattr(kernel.loop, "py_func", None)
    if py_func is None:
        problems.append("loop is not a Numba-compiled function")
    elif len(inspect.signature(py_func).parameters) != 3:
        problems.append("loop does not take (state, network, now)")
    for member in ("packet_arrays", "grown_arrays"):
        strays = [name for name in getattr(kernel, member) if name not in fields]
        if strays:
            problems.append(f"{member} names {', '.join(strays)}, not in its state")
    if kernel.grown_arrays and not callable(kernel.grow_tables):
        problems.append("grown_arrays without grow_tables")
    if not isinstance(kernel.per_rank_bytes, int) or kernel.per_rank_bytes <= 0:
        problems.append("per_rank_bytes is not a positive integer")
    return problems


class UnknownKernel(GupsimError, KeyError):
    """An algorithm without a fast kernel, asked for one: the message lists those that have one."""

    def __str__(self) -> str:
        return str(self.args[0])


class KernelRegistry(dict):
    """Kernels by algorithm name; a name not registered is refused in one line listing the registered ones."""

    def __missing__(self, name: str) -> Kernel:
        raise UnknownKernel(f"no fast kernel for algorithm {name!r} (fast kernels: {', '.join(sorted(self))})")


def register_kernel(registry: KernelRegistry, kernel: Kernel) -> Kernel:
    """Add ``kernel`` to ``registry`` under its name, once it meets the contract; else one line naming what fails."""
    problems = contract_problems(kernel)
    if problems:
        raise GupsimError(f"fast kernel {getattr(kernel, 'name', '?')!r} does not meet the kernel contract "
                          f"(gupsim.engines.fast.contract.Kernel): {'; '.join(problems)}")
    if kernel.name in registry:
        raise GupsimError(f"fast kernel {kernel.name!r} is registered twice")
    registry[kernel.name] = kernel
    return kernel
