"""A partitioned run of the fast engine: the torus cut into parts, one thread each, synchronised in windows.

docs/design/partitioned-engine.md sets out the design; this module is its engine.  The nodes are cut
into slabs along the torus's longest dimension (:func:`slabs`), one part each.  A part owns its nodes' entities
in the canonical event order (:mod:`gupsim.engines.order`): their ranks and routers, and the state they write
(a link's pool belongs to its near end, a buffer's order to its far end, a rank's FIFOs to its rank).  Each part
has its own event queue and counters; every other table is shared, and within a window each part writes only
the rows it owns.

**Windows.**  Time is cut into windows ``[kW, (k+1)W)`` no wider than the model's lookahead ``L``: the shortest
delay between an event at one node and its effect at another (a head's hop, a credit return to the link's near
end; :func:`lookahead_s`).  In a window every part runs its own events in the canonical order, on its own thread
(the kernels' loops release the GIL).  What an event schedules for another part's entity (a head reaching a
router across the cut, a credit return to a pool across it) is keyed by the scheduling entity as in a serial run
and kept in the part's outbox (:func:`gupsim.engines.fast.core.post`); it falls in a later window, and is handed
to its part at the window's end.  An event therefore sees the state it sees in a serial run, and does the same
thing, bit for bit: the records equal the serial engine's for any number of parts (the argument is the design
page's §1; ``tests/engines/fast/test_partitioned.py`` checks it at 1, 2 and 3 parts).

**What needs the whole run's order** (the window's marks, the stopping rule's checks, the last update) is
:mod:`gupsim.engines.fast.windows`'s: it runs the windows, in parallel or, near such a point, serially on the parts
put back together (:meth:`Partition.merge`).  The integer counters are sums, exact in any order; the
applied-times marks are placed from each part's log of its updates' times
(:func:`gupsim.engines.fast.routed.log_apply`): the mark at ``m`` updates is the ``m``-th smallest time.

Where the cut is made, how many threads run and when the run goes serial change no record: only the wall time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from gupsim.base.errors import GupsimError
from gupsim.engines.fast import core as c, credits as cr, events as ev, tables as tb
from gupsim.engines.fast.contract import QUEUE, Kernel, Network

#: Counters that are sums over the events that ran, added up over the parts (every other counter is the
#: queue's own bookkeeping or the run's state, kept by the serial engine).
SUMMED_COUNTERS = (tb.C_INJECTED, tb.C_WIRE, tb.C_DELIVERED, tb.C_EVENTS, tb.C_APPLIED, tb.C_HOPS, tb.C_LAZY,
                   tb.C_RESCHEDULED, tb.C_DEFER_FULL, tb.C_MOVED, tb.C_REFILED, tb.C_THROTTLE_WAITS,
                   tb.C_THROTTLE_POLLS, tb.C_THROTTLE_QUEUED)
#: A part's apply log and outbox rows (they are emptied whenever they fill; the log keeps LOG_MARGIN free).
LOG_ROWS = 1 << 16
OUTBOX_ROWS = 1 << 14
#: The outbox rows an event may still fill after its part's outbox reached ``C_OUT_ROOM`` (a hop posts two).
OUTBOX_MARGIN = 64


def lookahead_s(float_params: np.ndarray, min_wire_bytes: int) -> float:
    """The shortest delay from an event at a node to its effect at another (docs/design/partitioned-engine.md
    §3): a head's hop (its first chunk, or the cut-through bytes, plus the router delay) and a credit return (at
    least the serialisation of the shortest packet, ``min_wire_bytes`` on the wire)."""
    fp = float_params
    serial = min_wire_bytes / fp[tb.F_RATE]
    return min(serial, min(serial, fp[tb.F_CHUNK_S]) + fp[tb.F_ROUTER_S])


def slabs(coords: np.ndarray, shape: tuple[int, ...], parts: int) -> np.ndarray:
    """The part of each node: ``parts`` slabs of (nearly) equal thickness across the longest dimension."""
    d = int(np.argmax(shape))
    if parts > shape[d]:
        raise GupsimError(f"{parts} parts: the longest dimension of a {'x'.join(map(str, shape))} torus has "
                          f"only {shape[d]} planes to cut into slabs")
    return (coords[:, d].astype(np.int64) * parts) // shape[d]


# ------------------------------------------------------------------ compiled helpers


@njit(cache=True, _nrt=False)
def drain_queue(q, ctr, out):
    """Move every pending event of queue ``q`` into ``out`` (rows: time bits, key, payload); empty the queue;
    return the number moved.  Its popped keys (``C_SEEN_*``) stay: they are the part's history, not its queue."""
    hh, cal, far = q[0], q[1], q[2]
    n = 0
    for i in range(ctr[tb.C_HEAP_N]):
        out[n, 0], out[n, 1], out[n, 2] = hh[i, 0], hh[i, 1], hh[i, 2]
        n += 1
    for s in range(cal.shape[0]):
        for k in range(cal.shape[1]):
            e = cal[s, k]
            while e >= 0:
                out[n, 0], out[n, 1], out[n, 2] = far[e, 0], far[e, 1], far[e, 2]
                n += 1
                e = far[e, 3]
            cal[s, k] = -1
    ctr[tb.C_HEAP_N], ctr[tb.C_FAR_N], ctr[tb.C_CAL_N] = 0, 0, 0
    ctr[tb.C_FAR_TOP], ctr[tb.C_FAR_FREE], ctr[tb.C_OV_MIN] = 0, -1, ev.NO_BUCKET
    return n


@njit(cache=True, _nrt=False)
def event_parts(entries, n, node_part, pk, ip, out):
    """Into ``out``: the part that runs each of the first ``n`` events, the part of the node of the entity it
    runs as."""
    for i in range(n):
        payload = entries[i, 2]
        kind, a = ev.event_kind(payload), ev.event_arg(payload)
        if kind == tb.EV_CPU or kind == tb.EV_WAKE:
            node = tb.node_of(ip, a)
        elif kind == tb.EV_GIVE:
            node = c.pool_node(ip, ev.give_pool(a))
        else:
            node = pk[a, tb.PK_NODE]
        out[i] = node_part[node]
    return out


@njit(cache=True, _nrt=False)
def push_entries(q, ctr, entries, rows):
    """Queue the events ``entries[rows]`` (time bits, key, payload) at their own keys."""
    for i in rows:
        ev.push_keyed(q, ctr, entries[i, 0], entries[i, 1], entries[i, 2])


@njit(cache=True, _nrt=False)
def deliver(posts, rows, q, ctr, pk, pq, dq, rk, ip, window_end_bits):
    """Hand the events other parts posted (``posts[rows]``: time bits, key, payload, part) to their part: a head's
    hop into its queue, a credit return to its pool, kept or queued as the pool's owner would have filed it
    (:func:`gupsim.engines.fast.credits.file_return`).  False if one falls before ``window_end_bits``: the
    lookahead was broken, and the run must not go on."""
    for i in rows:
        tbits, key, payload = posts[i, 0], posts[i, 1], posts[i, 2]
        if tbits < window_end_bits:
            return False
        if ev.event_kind(payload) == tb.EV_GIVE:
            a = ev.event_arg(payload)
            cr.file_return(pk, pq, dq, rk, ip, q, ctr, ev.give_pool(a), ev.give_chunks(a), tbits, key)
        else:
            ev.push_keyed(q, ctr, tbits, key, payload)
    return True


@njit(cache=True, _nrt=False)
def move_free(pk, src, dst, count):
    """Move ``count`` packet rows from the free list of counters ``src`` to that of ``dst``."""
    for _ in range(count):
        p = src[tb.C_FREE_HEAD]
        src[tb.C_FREE_HEAD] = pk[p, tb.PK_NEXT]
        pk[p, tb.PK_NEXT] = dst[tb.C_FREE_HEAD]
        dst[tb.C_FREE_HEAD] = p
    src[tb.C_NFREE] -= count
    dst[tb.C_NFREE] += count


# ------------------------------------------------------------------ a part


@dataclass
class Part:
    """One part's own tables: its queue, counters, parameters (logging its applies), apply log, outbox and the
    kernel's summed arrays; every other table is the run's, shared."""

    index: int
    queue: tuple
    counters: np.ndarray
    int_params: np.ndarray
    log: np.ndarray
    outbox: np.ndarray
    summed: dict
    node_part: np.ndarray
    now: float = 0.0
    logged: list = field(default_factory=list)
    short_of_packets: bool = False
    busy_s: float = 0.0
    #: never written: a part's kernel logs its applies instead of keeping the window's marks
    window_times: np.ndarray = field(default_factory=lambda: np.full(2, np.nan))

    def network(self, a: dict) -> Network:
        own = {QUEUE: self.queue, "counters": self.counters, "int_params": self.int_params,
               "applied_times": self.log, "outbox": self.outbox, "window_times": self.window_times,
               "node_part": self.node_part}
        return Network(*(own.get(name, a.get(name)) for name in Network._fields))

    def state(self, kernel: Kernel, a: dict) -> tuple:
        return kernel.state(*(self.summed.get(name, a[name]) for name in kernel.state._fields))

    def take_log(self) -> None:
        n = int(self.counters[tb.C_LOG_N])
        if n:
            self.logged.append(self.log[:n].copy())
            self.counters[tb.C_LOG_N] = 0


def _entries(rows: int) -> np.ndarray:
    return np.empty((max(rows, 1), 3), dtype=np.int64)


@dataclass
class Partition:
    """A run's parts, and the moves between the serial engine's state (``a``) and theirs."""

    #: the part of each node (:func:`slabs`); the serial state keeps its own, all 0, so that nothing is posted
    node_part: np.ndarray
    summed_arrays: tuple
    parts: list = field(default_factory=list)

    @property
    def count(self) -> int:
        return int(self.node_part.max()) + 1

    def split(self, a: dict) -> None:
        """Cut the serial state ``a`` into parts: its events to the parts that run them, its free packet rows
        shared out, fresh counters (the sums start at 0) and logs."""
        ctr, q = a["counters"], a[QUEUE]
        pending = int(ctr[tb.C_HEAP_N] + ctr[tb.C_FAR_N])
        entries = _entries(pending)
        n = drain_queue(q, ctr, entries)
        owner = np.empty(n, dtype=np.int64)
        event_parts(entries, n, self.node_part, a["packets"], a["int_params"], owner)
        count = self.count
        bucket_s = 1.0 / float(np.int64(ctr[tb.C_INV_W]).view(np.float64))
        free_each = int(ctr[tb.C_NFREE]) // count
        self.parts = []
        for p in range(count):
            rows = np.flatnonzero(owner == p)
            pc = ctr.copy()
            pc[list(SUMMED_COUNTERS)] = 0
            pc[tb.C_HEAP_N], pc[tb.C_FREE_HEAD], pc[tb.C_NFREE] = 0, -1, 0
            heap, cal, far, _ = ev.new_queue(2 * len(rows) + ev.HEAP_MARGIN, pc, bucket_s, slots=cal_slots(q))
            part_q = (heap, cal, far, q[3])  # the sequence numbers are the run's: an entity's only in its part
            push_entries(part_q, pc, entries, rows)
            pc[tb.C_PART], pc[tb.C_OUT_N], pc[tb.C_OUT_ROOM], pc[tb.C_LOG_N] = p, 0, OUTBOX_ROWS - OUTBOX_MARGIN, 0
            pc[tb.C_NEXT_MARK], pc[tb.C_DONE], pc[tb.C_PAUSE_AT] = c.NO_MARK, 0, np.iinfo(np.int64).max
            move_free(a["packets"], ctr, pc, free_each if p < count - 1 else int(ctr[tb.C_NFREE]))
            ip = a["int_params"].copy()
            ip[tb.I_LOG_APPLIES] = 1
            summed = {name: np.zeros_like(a[name]) for name in self.summed_arrays}
            self.parts.append(Part(p, part_q, pc, ip, np.empty(LOG_ROWS), np.empty((OUTBOX_ROWS, 4), np.int64),
                                   summed, self.node_part))

    def merge(self, a: dict) -> None:
        """Put the parts back into the serial state ``a``: their events into its queue, their sums added, their
        free rows returned, the latest key any of them popped."""
        ctr = a["counters"]
        drained = []
        for part in self.parts:
            pc = part.counters
            entries = _entries(int(pc[tb.C_HEAP_N] + pc[tb.C_FAR_N]))
            drained.append(entries[:drain_queue(part.queue, pc, entries)])
            for k in SUMMED_COUNTERS:
                ctr[k] += pc[k]
            ctr[tb.C_ERROR] = max(ctr[tb.C_ERROR], pc[tb.C_ERROR])
            if (pc[tb.C_SEEN_T], pc[tb.C_SEEN_K]) > (ctr[tb.C_SEEN_T], ctr[tb.C_SEEN_K]):
                ctr[tb.C_SEEN_T], ctr[tb.C_SEEN_K] = pc[tb.C_SEEN_T], pc[tb.C_SEEN_K]
            move_free(a["packets"], pc, ctr, int(pc[tb.C_NFREE]))
            for name, value in part.summed.items():
                a[name] += value
        entries = np.concatenate(drained) if drained else _entries(0)[:0]
        a[QUEUE] = ev.grow_queue(a[QUEUE], ctr, len(entries))
        push_entries(a[QUEUE], ctr, entries, np.arange(len(entries)))
        self.parts = []


def cal_slots(q: tuple) -> int:
    return q[1].shape[0] - 1
