"""One processor's DRAM under random updates: latency and misses in flight (seed 003).

Seed 003 ("Comparison with other systems", "Discussion") finds that on
Hypatia the Data Vortex run is limited by "the Intel processor to local DDR
memory access speed", with "strongly diminishing returns with respect to the
number of threads running in each CPU".  A random update of a table far
larger than the caches is one cache-line miss, so its cost is a latency, and
throughput is Little's law: misses in flight / latency.  Two limits bound the
misses in flight:

* each core tracks at most ``line_fill_buffers_per_core`` (10 on Sandy
  Bridge and Haswell, Intel's optimisation manual), so one update thread
  alone reaches at most 10 / latency;
* the whole processor sustains at most ``outstanding_misses_per_processor``
  (its uncore queues, DRAM banks and page walks together), which is what a
  second, third and fourth thread run into.  This number is not published
  for these processors; it is fitted (see ``gupsim/studies/experiments/dv_hypatia.py``).

So ``T`` update threads give ``min(T * lfb, cap) / latency`` updates per
second, further capped by the cores' own issue rate: a steep rise from one
thread, then a flat line, the diminishing returns of seed 003.

:class:`ProcessorMemory` turns that into times without a SimPy event per
access: accesses start no closer than ``latency / in_flight`` apart (the
fluid form of ``in_flight`` slots each held for one latency, which also
allows a fitted, non-integer cap) and complete one latency after they start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gupsim.config.switched import MemoryConfig


def misses_in_flight(mem: "MemoryConfig", threads: int) -> float:
    return min(threads * mem.line_fill_buffers_per_core, mem.outstanding_misses_per_processor)


def update_rate(mem: "MemoryConfig", threads: int, clock_hz: float, issue_cycles: float) -> float:
    """Steady updates per second of one processor with ``threads`` update threads (the analytic limit)."""
    memory = misses_in_flight(mem, threads) / (mem.dram_latency_ns * 1e-9)
    cores = threads * clock_hz / issue_cycles if issue_cycles > 0 else float("inf")
    return min(memory, cores)


def fit_outstanding_misses(rate_per_processor: float, mem: "MemoryConfig") -> float:
    """The processor-wide cap that makes Little's law give ``rate_per_processor`` (closed form)."""
    return rate_per_processor * mem.dram_latency_ns * 1e-9


class ProcessorMemory:
    """Timing of the random table accesses of one processor's update threads."""

    __slots__ = ("latency_s", "gap_s", "issue_s", "next_start", "accesses")

    def __init__(self, mem: "MemoryConfig", threads: int, clock_hz: float, issue_cycles: float):
        self.latency_s = mem.dram_latency_ns * 1e-9
        self.gap_s = self.latency_s / misses_in_flight(mem, threads)
        self.issue_s = issue_cycles / clock_hz / threads  # the threads issue side by side
        self.next_start = 0.0
        self.accesses = 0

    def batch(self, start: float, count: int) -> tuple[float, float]:
        """Issue ``count`` updates from ``start``: (cores done issuing, last access complete)."""
        if count <= 0:
            return start, start
        # Access i is issued at start + i*issue_s and begins at max(issued, previous begin + gap);
        # a thread whose fill buffers are all busy stalls until its access begins.
        first = max(start, self.next_start)
        last_begin = max(first + (count - 1) * self.gap_s, start + (count - 1) * self.issue_s)
        if self.issue_s >= self.gap_s:
            last_begin = max(first, start) + (count - 1) * self.issue_s
        self.next_start = last_begin + self.gap_s
        self.accesses += count
        return last_begin + self.issue_s, last_begin + self.latency_s
