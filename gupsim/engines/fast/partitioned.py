"""A partitioned run of the fast engine: the torus cut into parts, one thread each, synchronised in windows.

docs/design/partitioned-engine.md sets out the design; this module is its engine (issue 45).  The nodes are cut
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

**What needs the whole run's order.**  The integer counters are sums, exact in any order.  The applied-times
marks are placed from each part's log of its updates' times (:func:`gupsim.engines.fast.routed.log_apply`): the
mark at ``m`` updates is the ``m``-th smallest time, whatever the parts.  Four things need the global order at
one point of it: the window's two marks (the algorithm's counters when 25% and 75% of the updates are applied),
the stopping rule's checks, the last update, and an error.  Near each of these (:func:`_margin`) the run goes
serial: the parts' queues and counters are merged into the serial engine's and the ordinary loop runs, window
by window, until the point has passed; then the run is cut into parts again.  A parallel window that reaches
one of them all the same (the margin is a bound learnt from the run, not a proof) raises :class:`Overrun`, and
the engine runs the whole run again serially: slower, never different.

Where the cut is made, how many threads run and when the run goes serial change no record: only the wall time.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numba import njit

from gupsim.base.errors import GupsimError
from gupsim.base.memory import peak_rss_mb
from gupsim.engines.fast import core as c, credits as cr, driver, events as ev, tables as tb
from gupsim.engines.fast.contract import NETWORK_PACKET_ARRAYS, QUEUE, Kernel, Network
from gupsim.model.output_analysis import check_points

#: Counters that are sums over the events that ran, added up over the parts (every other counter is the
#: queue's own bookkeeping or the run's state, kept by the serial engine).
SUMMED_COUNTERS = (tb.C_INJECTED, tb.C_WIRE, tb.C_DELIVERED, tb.C_EVENTS, tb.C_APPLIED, tb.C_HOPS, tb.C_LAZY,
                   tb.C_RESCHEDULED, tb.C_DEFER_FULL, tb.C_MOVED, tb.C_REFILED)
#: A part's apply log and outbox rows (they are emptied whenever they fill; the log keeps LOG_MARGIN free).
LOG_ROWS = 1 << 16
OUTBOX_ROWS = 1 << 14
#: The outbox rows an event may still fill after its part's outbox reached ``C_OUT_ROOM`` (a hop posts two).
OUTBOX_MARGIN = 64
#: The window narrower than the lookahead by this share: a sum of floats may round an effect a few ulps early.
WINDOW_SHRINK = 1e-6
#: The margin before a point the run must reach in order (:func:`_margin`): this many times the most updates any
#: window has applied so far, and at least ``MARGIN_PER_RANK`` updates a process.
MARGIN_WINDOWS = 3
MARGIN_PER_RANK = 2


class Overrun(GupsimError):
    """A parallel window reached a point of the run that needs the global order (it was within no margin)."""


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
    ctr[tb.C_FAR_TOP], ctr[tb.C_FAR_FREE], ctr[tb.C_OV_MIN] = 0, -1, (1 << 62) - 1
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

    def network(self, a: dict) -> Network:
        own = {QUEUE: self.queue, "counters": self.counters, "int_params": self.int_params,
               "applied_times": self.log, "outbox": self.outbox, "window_times": np.full(2, np.nan),
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


def _queue_with_room(q: tuple, ctr: np.ndarray, extra: int) -> tuple:
    """``q`` with room for ``extra`` more events and the queue's margin."""
    heap, cal, far, seqs = q
    need = int(ctr[tb.C_HEAP_N] + ctr[tb.C_FAR_N]) + extra + ev.HEAP_MARGIN
    if need > heap.shape[0]:
        heap = tb.grow_on_lines(heap, max(2 * heap.shape[0], need))
    if need > far.shape[0]:
        far = tb.grow_on_lines(far, max(2 * far.shape[0], need))
    return heap, cal, far, seqs


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
        a[QUEUE] = _queue_with_room(a[QUEUE], ctr, len(entries))
        push_entries(a[QUEUE], ctr, entries, np.arange(len(entries)))
        self.parts = []


def cal_slots(q: tuple) -> int:
    return q[1].shape[0] - 1


# ------------------------------------------------------------------ the window loop


@dataclass
class Progress:
    """Where the run is: the window, the updates applied, the most any window applied, the stopping rule."""

    now: float = 0.0
    window: int = 0
    applied: int = 0
    most: int = 0
    rule_stop: int = driver.NO_STOP
    parallel_windows: int = 0
    serial_windows: int = 0
    #: the run's end is near (an error, or nothing left to run): the serial engine finishes it
    ending: bool = False
    #: wall seconds of the window loop, and the seconds its threads spent running events (summed over them)
    wall_s: float = 0.0
    busy_s: float = 0.0


class WindowLoop:
    """Runs a kernel's events window by window: in parallel where no point needing the global order is near,
    serially (the serial engine's own loop on the merged state) where one is."""

    def __init__(self, kernel: Kernel, a: dict, partition: Partition, window_s: float, marks: np.ndarray,
                 stop_rule: Callable[[np.ndarray, int], bool] | None, threads: int,
                 batch_events: int = driver.BATCH_EVENTS, now: float = 0.0) -> None:
        self.kernel, self.a, self.partition, self.marks = kernel, a, partition, marks
        self.width = window_s * (1.0 - WINDOW_SHRINK)
        self.stop_rule, self.threads, self.batch_events = stop_rule, threads, batch_events
        self.ranks = int(a["int_params"][tb.I_NRANKS])
        self.points = _ordered_points(a["int_params"], marks, stop_rule is not None)
        self.at = Progress(now=now, window=int(math.floor(now / self.width)), applied=int(a["counters"][tb.C_APPLIED]))

    def run(self, progress: Callable[[int, int], None] | None = None, checkpoint: driver.Checkpoint | None = None,
            earlier: tuple[float, float] = (0.0, 0.0)) -> float:
        """Run to the end; return the final time (the serial engine's, bit for bit).  ``progress(applied, total)``
        hears how far it has got every second or so; ``checkpoint``, if given, keeps the run's state every
        ``checkpoint.every_s`` seconds of wall time, as the serial driver does (``earlier``: the wall seconds
        and peak RSS of the pieces before this one), in the serial engine's form: either engine resumes it."""
        a, at = self.a, self.at
        total = int(a["int_params"][tb.I_TOTAL])
        started = told = saved = time.perf_counter()
        with ThreadPoolExecutor(self.threads, thread_name_prefix="gupsim-part") as pool:
            while True:
                near = self._near_ordered_point()
                if self.partition.parts and near:
                    self.partition.merge(a)
                elif not self.partition.parts and not near and not at.ending:
                    self.partition.split(a)
                if self.partition.parts:
                    self._parallel_window(pool)
                elif self._serial_window():
                    break
                clock = time.perf_counter()
                if progress is not None and clock - told >= 1.0:
                    progress(at.applied, total)
                    told = clock
                if checkpoint is not None and clock - saved >= checkpoint.every_s:
                    self._save(checkpoint, earlier[0] + clock - started, earlier[1])
                    saved = time.perf_counter()
        at.wall_s = time.perf_counter() - started
        if progress is not None:
            progress(at.applied, total)
        ctr = a["counters"]
        ctr[tb.C_STOP_T] = at.rule_stop
        return cr.settle_all(a[QUEUE], ctr, a["pools"], a["deferred"], at.now)

    def _save(self, checkpoint: driver.Checkpoint, wall_s: float, earlier_peak_mb: float) -> None:
        """Keep the run's state: the parts put back together first (they are cut again before the next window)."""
        a = self.a
        if self.partition.parts:
            self.partition.merge(a)
        a["counters"][tb.C_STOP_T] = self.at.rule_stop  # the stopping rule's, not the window's
        driver.save(checkpoint, a, self.at.now, wall_s, max(earlier_peak_mb, peak_rss_mb()))

    def efficiency(self) -> float:
        """The share of the threads' wall time spent running events (the rest: windows' barriers, exchanges and
        serial stretches, when the other threads wait)."""
        return self.at.busy_s / (self.threads * self.at.wall_s) if self.at.wall_s > 0 else float("nan")

    # -------------------------------------------------------------- when to go serial

    def _near_ordered_point(self) -> bool:
        """True when the next point that needs the global order is within the margin of the updates applied."""
        at = self.at
        i = np.searchsorted(self.points, at.applied, side="right")
        if i == len(self.points):
            return True
        return self.points[i] - at.applied <= max(MARGIN_WINDOWS * at.most, MARGIN_PER_RANK * self.ranks)

    def _next_window(self, first_bits: int) -> None:
        """Skip to the window of the earliest pending event (time bits ``first_bits``), if it is beyond the next."""
        at = self.at
        at.window += 1
        if first_bits >= 0:
            at.window = max(at.window, int(math.floor(float(np.int64(first_bits).view(np.float64)) / self.width)))

    def _end_bits(self) -> int:
        return int(np.float64((self.at.window + 1) * self.width).view(np.int64))

    # -------------------------------------------------------------- serial

    def _serial_window(self) -> bool:
        """Run the serial loop to the window's end (or the run's); True once the run is over."""
        kernel, a, at = self.kernel, self.a, self.at
        ctr = a["counters"]
        end_bits = self._end_bits()
        while True:
            ctr[tb.C_STOP_T] = min(at.rule_stop, end_bits - 1)
            ctr[tb.C_PAUSE_AT] = ctr[tb.C_EVENTS] + self.batch_events
            started = time.perf_counter()
            at.now, finished = kernel.loop(kernel.state_of(a), driver.network_of(a), at.now)
            at.busy_s += time.perf_counter() - started
            if finished:
                break
            self._check_rule()
            driver._between_batches(kernel, a)
        at.applied = int(ctr[tb.C_APPLIED])
        at.serial_windows += 1
        over = ctr[tb.C_DONE] or ctr[tb.C_ERROR] or ctr[tb.C_HEAP_N] == 0 or at.rule_stop != driver.NO_STOP
        if not over:
            self._next_window(int(a[QUEUE][0][0, 0]))
        return bool(over)

    def _check_rule(self) -> None:
        """The stopping rule at each of its mark counts crossed since it was last evaluated (as
        :func:`gupsim.engines.fast.driver._check_stop`, whose ``C_STOP_T`` here also ends each window)."""
        ctr, at = self.a["counters"], self.at
        if self.stop_rule is None or at.rule_stop != driver.NO_STOP:
            return
        crossed = int(ctr[tb.C_MARK_INDEX])
        first = int(self.a["int_params"][tb.I_FIRST_CHECK])
        times = self.a["applied_times"]
        if any(self.stop_rule(times, k) for k in check_points(int(ctr[tb.C_CHECKED]), crossed, first)):
            at.rule_stop = int(np.float64(at.now).view(np.int64))
        ctr[tb.C_CHECKED] = crossed

    # -------------------------------------------------------------- parallel

    def _parallel_window(self, pool: ThreadPoolExecutor) -> None:
        a, at, parts = self.a, self.at, self.partition.parts
        end_bits = self._end_bits()
        for part in parts:
            part.counters[tb.C_STOP_T] = end_bits - 1
        running = parts
        for part in parts:
            part.busy_s = 0.0
        while running:
            list(pool.map(lambda part: _run_part(self.kernel, part, a), running))
            running = [part for part in running if part.short_of_packets]
            for part in running:
                _grow_packets(self.kernel, a, part)
        at.busy_s += sum(part.busy_s for part in parts)
        self._exchange(end_bits)
        self._place_marks()
        at.parallel_windows += 1
        errors = [int(part.counters[tb.C_ERROR]) for part in parts]
        firsts = [int(part.queue[0][0, 0]) for part in parts if part.counters[tb.C_HEAP_N] > 0]
        if any(errors) or not firsts:  # an error, or nothing left to run: the serial engine says which
            self.partition.merge(a)
            at.ending = True
            return
        at.now = max(part.now for part in parts)
        self._next_window(min(firsts))

    def _exchange(self, end_bits: int) -> None:
        """Hand every event a part posted to the part that runs it."""
        a, parts = self.a, self.partition.parts
        posted = [part.outbox[:part.counters[tb.C_OUT_N]] for part in parts]
        for part in parts:
            part.counters[tb.C_OUT_N] = 0
        posts = np.concatenate(posted)
        if not len(posts):
            return
        for part in parts:
            rows = np.flatnonzero(posts[:, 3] == part.index)
            if not len(rows):
                continue
            part.queue = _queue_with_room(part.queue, part.counters, len(rows))
            if not deliver(posts, rows, part.queue, part.counters, a["packets"], a["pools"], a["deferred"],
                           a["ranks"], part.int_params, end_bits):
                raise GupsimError("partitioned run: an event crossed parts within its window (the lookahead is "
                                  "shorter than the window); rerun with --threads 1")

    def _place_marks(self) -> None:
        """The applied-times marks this window crossed, from every part's log of its updates' times."""
        a, at = self.a, self.at
        logs = []
        for part in self.partition.parts:
            part.take_log()
            logs += part.logged
            part.logged = []
        n = sum(len(log) for log in logs)
        if not n:
            return
        ctr, marks, times_at = a["counters"], self.marks, a["applied_times"]
        i, reach = int(ctr[tb.C_MARK_INDEX]), at.applied + n
        if i < len(marks) and marks[i] <= reach:
            times = np.sort(np.concatenate(logs))
            while i < len(marks) and marks[i] <= reach:
                times_at[i] = times[marks[i] - at.applied - 1]
                i += 1
        ctr[tb.C_MARK_INDEX], ctr[tb.C_CHECKED] = i, i
        ctr[tb.C_NEXT_MARK] = marks[i] if i < len(marks) else c.NO_MARK
        at.applied, at.most = reach, max(at.most, n)
        passed = np.searchsorted(self.points, reach, side="right")
        if passed and self.points[passed - 1] > reach - n:
            raise Overrun(f"a parallel window applied {n:,} updates and passed the point at "
                          f"{int(self.points[passed - 1]):,}, which needs the run's global order")


def _ordered_points(ip: np.ndarray, marks: np.ndarray, rule: bool) -> np.ndarray:
    """The update counts at which the run needs its global order: the window's two marks, the last update and,
    with a stopping rule, each of its checks (the mark counts of ``driver.check_points``)."""
    points = [int(ip[tb.I_MARK0]), int(ip[tb.I_MARK1]), int(ip[tb.I_TOTAL])]
    every, first = int(ip[tb.I_CHECK_EVERY]), int(ip[tb.I_FIRST_CHECK])
    if rule and every > 0:
        points += [int(marks[k - 1]) for k in range(-(-max(first, 1) // every) * every, len(marks) + 1, every)]
    return np.unique(np.array(points, dtype=np.int64))


def _run_part(kernel: Kernel, part: Part, a: dict) -> None:
    """Run one part's events to its window's end, emptying its log and growing its own tables as they fill;
    stop early, flagged, if the shared packet tables must grow (the driver grows them with every part stopped)."""
    pc = part.counters
    part.short_of_packets = False
    while True:
        started = time.perf_counter()
        part.now, finished = kernel.loop(part.state(kernel, a), part.network(a), part.now)
        part.busy_s += time.perf_counter() - started
        if finished:
            return
        part.take_log()
        pc[tb.C_PAUSE_AT] = np.iinfo(np.int64).max
        part.queue = driver._grow_queue(part.queue, pc)
        if pc[tb.C_OUT_N] > pc[tb.C_OUT_ROOM]:
            part.outbox = tb.grow_on_lines(part.outbox, 2 * part.outbox.shape[0])
            pc[tb.C_OUT_ROOM] = part.outbox.shape[0] - OUTBOX_MARGIN
        if pc[tb.C_NFREE] < tb.PACKET_MARGIN:
            part.short_of_packets = True
            return


def _grow_packets(kernel: Kernel, a: dict, part: Part) -> None:
    """Double the shared packet tables; the new rows go to ``part``, which ran short."""
    old = a["packets"].shape[0]
    for name in NETWORK_PACKET_ARRAYS + kernel.packet_arrays:
        a[name] = tb.grow_on_lines(a[name], 2 * old)
    c.link_free_list(a["packets"], old, 2 * old, part.counters)
