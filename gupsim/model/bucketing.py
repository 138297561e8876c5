"""The baseline's bucketing rule, and a fast model of the bucket size it yields.

HPCC's MPI code (seed 000 §2) keeps one bucket of pending updates per
destination and a max-heap over the bucket sizes; when 1024 updates are
pending it sends the largest bucket.  :class:`Buckets` is that data
structure; the ``baseline`` algorithm uses it inside the full simulation.

The mean number of updates per message depends only on this rule and on
the destinations of the updates (seed 000 §4.1: "We wrote a simple
simulator to estimate the average bucket size"), not on the network, as
long as sends are not blocked (the SBF of Table 3 is below 0.003).
:func:`mean_bucket_size` is that simple simulator: one process's real HPCC
update stream pushed through :class:`Buckets`, with a message sent each
time 1024 updates are pending.  It runs the whole 65,536-node machine's
bucketing in a fraction of a second because it needs only one process.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from gupsim.model import hpcc

MAX_PENDING = 1024


class Buckets:
    """Per-destination buckets with a lazily updated max-heap of their sizes."""

    __slots__ = ("_buckets", "_heap", "pending")

    def __init__(self) -> None:
        self._buckets: dict[int, list[int]] = {}
        self._heap: list[tuple[int, int]] = []  # (-size, dest); stale entries skipped on pop
        self.pending = 0

    def add(self, dest: int, value: int) -> None:
        bucket = self._buckets.get(dest)
        if bucket is None:
            bucket = self._buckets[dest] = []
        bucket.append(value)
        heapq.heappush(self._heap, (-len(bucket), dest))
        self.pending += 1

    def pop_largest(self) -> tuple[int, list[int]]:
        """Remove and return the largest bucket (ties: lowest destination)."""
        heap, buckets = self._heap, self._buckets
        while heap:
            neg, dest = heapq.heappop(heap)
            bucket = buckets.get(dest)
            if bucket is not None and len(bucket) == -neg:
                del buckets[dest]
                self.pending -= len(bucket)
                if len(heap) > 4 * (len(buckets) + 16):
                    self._compact()
                return dest, bucket
        raise IndexError("pop_largest from empty Buckets")

    def _compact(self) -> None:
        # Stale entries accumulate one per insert; rebuild so memory stays O(pending).
        self._heap = [(-len(b), d) for d, b in self._buckets.items()]
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._buckets)


def mean_bucket_size(num_procs: int, updates: int = 2**17, rank: int = 0,
                     log2_words_per_proc: int = 25, start_fraction: float = 0.6180339887498949) -> float:
    """Mean updates per message of the baseline on ``num_procs`` processes.

    Simulates one rank's stretch of its own HPCC slice (the same stretch the
    full simulation uses), discards the warm-up (until the first message),
    and averages over the messages that carry the next ``updates`` updates.
    """
    if num_procs < 2:
        raise ValueError("bucketing needs at least two processes")
    layout = hpcc.TableLayout(int(math.log2(num_procs)) + log2_words_per_proc, num_procs)
    first = 4 * layout.global_start(rank) + int(start_fraction * 4 * layout.local_size(rank))
    buckets = Buckets()
    sizes: list[int] = []
    sent = -1  # counting starts after the first message, which ends the warm-up
    block = 8192
    while sent < updates:
        values = hpcc.stream(first, block)
        first += block
        for dest in layout.owner(values).tolist():
            if dest == rank:
                continue
            buckets.add(dest, 0)
            if buckets.pending == MAX_PENDING:
                size = len(buckets.pop_largest()[1])
                if sent < 0:
                    sent = 0
                    continue
                sizes.append(size)
                sent += size
                if sent >= updates:
                    break
    return float(np.mean(sizes))
