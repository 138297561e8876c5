"""The window loop of a partitioned run: parallel windows where nothing needs the global order, serial ones where
something does.

:mod:`gupsim.engines.fast.partitioned` cuts the torus into parts; this module runs them (docs/design/
partitioned-engine.md §1-2, §8).  Time is cut into windows ``[kW, (k+1)W)``, ``W`` the model's lookahead
(:func:`gupsim.engines.fast.partitioned.lookahead_s`) shrunk by :data:`WINDOW_SHRINK`.  In a parallel window each
part runs its events on its own thread (the kernels' loops release the GIL), then what the parts posted to one
another is handed over and the applied-times marks the window crossed are placed from the parts' logs.

Four points of a run need its global order: the window's two marks (the algorithm's counters at 25% and 75% of the
updates), the stopping rule's checks and the last update.  Within a margin of one (:data:`MARGIN_WINDOWS` times the
most updates a window has applied, at least :data:`MARGIN_PER_RANK` a process) the parts are put back into the
serial engine's state and the serial loop runs, window by window, until the point has passed.  A parallel window
that passes one all the same raises :class:`Overrun`; the engine then runs the whole run again serially, which is
slower and never different.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np

from gupsim.base.errors import GupsimError
from gupsim.base.memory import peak_rss_mb
from gupsim.engines.fast import core as c, credits as cr, driver, events as ev, tables as tb
from gupsim.engines.fast.contract import QUEUE, Kernel
from gupsim.engines.fast.partitioned import OUTBOX_MARGIN, Part, Partition, deliver, move_free

#: The window narrower than the lookahead by this share: a sum of floats may round an effect a few ulps early.
WINDOW_SHRINK = 1e-6
#: The margin before a point the run must reach in order (:meth:`WindowLoop._near_ordered_point`): this many
#: times the most updates any window has applied so far, and at least ``MARGIN_PER_RANK`` updates a process.
MARGIN_WINDOWS = 3
MARGIN_PER_RANK = 2


class Overrun(GupsimError):
    """A parallel window reached a point of the run that needs the global order (it was within no margin)."""


@dataclass
class WindowStats:
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
        self.stop_rule, self.threads, self.pacer = stop_rule, threads, driver.BatchPacer(batch_events)
        self.ranks = int(a["int_params"][tb.I_NRANKS])
        self.points = _ordered_points(a["int_params"], marks, stop_rule is not None)
        self.at = WindowStats(now=now, window=int(math.floor(now / self.width)),
                              applied=int(a["counters"][tb.C_APPLIED]))

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
            at.now, finished, took_s = self.pacer.run_batch(kernel, a, at.now)
            at.busy_s += took_s
            if finished:
                break
            self._check_rule()
            driver.between_batches(kernel, a)
        at.applied = int(ctr[tb.C_APPLIED])
        at.serial_windows += 1
        over = ctr[tb.C_DONE] or ctr[tb.C_ERROR] or ctr[tb.C_HEAP_N] == 0 or at.rule_stop != driver.NO_STOP
        if not over:
            self._next_window(int(a[QUEUE][0][0, 0]))
        return bool(over)

    def _check_rule(self) -> None:
        """The stopping rule at the mark counts crossed since it was last evaluated; its time is kept apart from
        ``C_STOP_T``, which here also ends each window."""
        at = self.at
        if self.stop_rule is not None and at.rule_stop == driver.NO_STOP and driver.rule_holds(self.a, self.stop_rule):
            at.rule_stop = int(np.float64(at.now).view(np.int64))

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
                _refill(self.kernel, a, part, parts)
        at.busy_s += sum(part.busy_s for part in parts)
        self._exchange(end_bits)
        self._place_marks()
        at.parallel_windows += 1
        at.now = max(part.now for part in parts)
        errors = [int(part.counters[tb.C_ERROR]) for part in parts]
        firsts = [int(part.queue[0][0, 0]) for part in parts if part.counters[tb.C_HEAP_N] > 0]
        if any(errors) or not firsts:  # an error, or nothing left to run: the serial engine says which
            self.partition.merge(a)
            at.ending = True
            return
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
            part.queue = ev.grow_queue(part.queue, part.counters, len(rows))
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
    with a stopping rule, each of its checks (the mark counts of ``output_analysis.check_points``)."""
    points = [int(ip[tb.I_MARK0]), int(ip[tb.I_MARK1]), int(ip[tb.I_TOTAL])]
    every, first = int(ip[tb.I_CHECK_EVERY]), int(ip[tb.I_FIRST_CHECK])
    if rule and every > 0:
        points += [int(marks[k - 1]) for k in range(-(-max(first, 1) // every) * every, len(marks) + 1, every)]
    return np.unique(np.array(points, dtype=np.int64))


def _refill(kernel: Kernel, a: dict, short: Part, parts: list[Part]) -> None:
    """Give a part short of free packet rows half the surplus of the part with the most, with every part stopped;
    double the shared tables only when no part has rows to spare.  A packet's row goes back to the free list of
    the part that delivers it, so rows drift from parts that inject more to parts that receive more, and growing
    whenever one part runs short would double the tables more often than a serial run does (1.2 times the serial
    peak RSS at 32x32x16, against 1.07 with the rows shared out).  Which row a packet takes changes no record."""
    donor = max(parts, key=lambda part: int(part.counters[tb.C_NFREE]))
    have, spare = int(short.counters[tb.C_NFREE]), int(donor.counters[tb.C_NFREE])
    if donor is not short and (have + spare) // 2 >= 2 * tb.PACKET_MARGIN:
        move_free(a["packets"], donor.counters, short.counters, (spare - have) // 2)
    else:
        driver.grow_packets(kernel, a, short.counters)  # the new rows to the part short of them


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
        part.queue = ev.grow_queue(part.queue, pc)
        if pc[tb.C_OUT_N] > pc[tb.C_OUT_ROOM]:
            part.outbox = tb.grow_on_lines(part.outbox, 2 * part.outbox.shape[0])
            pc[tb.C_OUT_ROOM] = part.outbox.shape[0] - OUTBOX_MARGIN
        if pc[tb.C_NFREE] < tb.PACKET_MARGIN:
            part.short_of_packets = True
            return
