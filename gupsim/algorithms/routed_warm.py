"""``routed``'s warm start: buckets pre-filled from each process's own HPCC stream, as a long run holds them
(seed 000 §4.2-4.3 for the buckets).

HPCC's real runs apply millions of updates a process, so seed 000's numbers are steady-state numbers; a
simulated run starts cold, every bucket empty, and its buckets fill *together*: all of a process's
x-buckets are fed by one stream at one rate, so they come full at about the same time, and the bursts that
follow take thousands of updates a process to lose their phase.  That drift is what kept Table 4's rows
from a 1% interval within 4,096 updates (docs/performance-log.md, "Runs that stop when precise").

**What a long run holds** (``benchmarks/routed_bucket_fills.py``, 4x4x2, 16,384 updates a process, sampled
between 40% and 80% of the updates applied): every bucket, in every dimension, is filled to a level spread
evenly between empty and full (mean 0.49-0.56 of the capacity, standard deviation 0.29, the uniform's
0.29; each tenth of the capacity holds 7-15% of the buckets), and the buckets are nearly independent (the
machine-wide mean fill moves by a standard deviation of 0.02-0.05 of the capacity over time; within a
process the x-buckets' fills correlate by +0.2, the y-buckets' by 0.0).  A process holds about 364 updates
in its buckets there (1024 / (X + Y + Z) per bucket, half full on average).

**The warm state** aims at that.  Each real bucket (process ``p``, dimension ``d``, router coordinate ``j``
other than ``p``'s own) gets a target fill ``floor(capacity * u)``, ``u`` the fractional part of the golden
ratio times the bucket's number (offset by the seed): spread evenly between 0 and capacity - 1, without
structure along one process's buckets, and no bucket full, so the "one full bucket per dimension" rule holds
from the start.  No random number generator is drawn: the targets are a Weyl sequence, the updates the
streams' own.

The buckets are filled with each process's *first* updates, in stream order, round-robin over the
processes (update 1 of every process, then update 2, ...).  An update from ``r`` to owner ``o`` has the
algorithm's dimension-ordered route: it would sit in ``r``'s bucket for ``o``'s x, then in the next
router's bucket for ``o``'s y, and so on.  It is put in the *last* bucket along that route still below its
target (as if it had already travelled the hops before it), so the y- and z-buckets, which a cold run fills
only from forwarded packets, are filled too; where every bucket on the route has reached its target, in
the one least over it, if that stays below full.  An update owned by its own process is applied at the
process's first step, at time 0, as a long run would have applied it.  A process's pre-fill ends once it
has taken its quota (the sum of its own buckets' targets), at its first update that no bucket on its route
can take (that update stays in the stream, so each pre-fill is a prefix of the stream), or at its stream's
end.  So the workload and the table are unchanged: the updates a process generates in the run are the rest
of its stream, and every update is applied once.

How close it comes (Table 4's shapes, 32 to 4,096 nodes): a process pre-fills 331-438 updates on average
(141-567 at the extremes), its buckets hold 322-438 (the long run's 364 on 4x4x2), and the fills have mean
0.37-0.47 of the capacity and standard deviation 0.22-0.25 (the long run's 0.5 and 0.29): the targets the
round-robin cannot meet are the high ones.  Started from it, a run's rate swings *more* in its first
thousand updates a process than a cold run's (on 8x8x8: 0.77, 1.28, 0.58, 1.24 GUPS in steps of 4% of the
run, against 0.53, 0.90, 0.72, 0.89 cold, a steady 0.82): with no packet in the network or waiting to be
received, every CPU starts by generating, the buckets near full go out together, and the machine's CPUs
swing between generating and routing in phase.  A representative bucket state is not a representative
machine state, so the option is measured but not adopted (docs/performance-log.md, "A warm start").

**No CPU is charged for the pre-fill.**  It stands for work done before the stretch the run measures; the
rate is measured after the MSER cut, so what matters is that the state at time 0 looks like a long run's,
not that the pre-fill's cycles are paid.  Charging them would put a burst of CPU at time 0, itself a
transient.  The network starts empty: its transient lasts a few packet latencies, not thousands of updates.

Both engines take the same :class:`WarmState` from :func:`warm_fill` (the SimPy process and the fast
kernel's ``prepare``), so they start from the same state bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gupsim.model import hpcc

#: The golden ratio's fractional part: consecutive multiples are spread evenly over [0, 1) (a Weyl sequence).
PHI = 0.6180339887498949


@dataclass(frozen=True)
class WarmState:
    """Where the pre-fill leaves every process."""

    #: (R,) int64: updates taken from each process's stream (bucketed or applied locally).
    taken: np.ndarray
    #: (R,) uint64: each stream's register after them (the last value taken, or the start if none).
    registers: np.ndarray
    #: (R x slots, capacity) uint64: the values in each bucket, by (holder rank, slot) row, in order.
    bucket_values: np.ndarray
    #: (R x slots,) int64: each bucket's fill.
    bucket_lengths: np.ndarray
    #: (R,) int64: updates of each process's pre-fill owned by the process itself (applied at time 0).
    local_counts: np.ndarray
    #: values of those updates, process by process (``local_counts`` each).
    local_values: np.ndarray

    def locals_of(self, rank: int) -> np.ndarray:
        start = int(self.local_counts[:rank].sum())
        return self.local_values[start:start + int(self.local_counts[rank])]


def targets(rows: int, capacity: int, seed: int) -> np.ndarray:
    """Each bucket row's target fill: ``floor(capacity * frac(PHI * (row + 1 + seed * rows)))``."""
    k = np.arange(1, rows + 1, dtype=np.float64) + float(seed) * rows
    return np.floor(capacity * np.mod(PHI * k, 1.0)).astype(np.int64)


def rank_weights(lengths: list[int]) -> np.ndarray:
    """Rank = coordinates . weights: node ``x + X (y + Y z)`` times the processes a node, plus the core."""
    x, y = lengths[0], lengths[1]
    if len(lengths) > 3:
        c = lengths[3]
        return np.array([c, c * x, c * x * y, 1], dtype=np.int64)
    return np.array([1, x, x * y], dtype=np.int64)


def warm_fill(registers: np.ndarray, layout: hpcc.TableLayout, coords: np.ndarray, lengths: list[int],
              capacity: int, updates_per_process: int, seed: int) -> WarmState:
    """The warm state (module docstring) from every stream's register before its first update, the table
    layout and every rank's software coordinates ``coords`` (R, dimensions)."""
    R, nd = coords.shape
    offsets = np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.int64)
    nslots = int(sum(lengths))
    weights = rank_weights(lengths)
    target = targets(R * nslots, capacity, seed)
    fills = np.zeros(R * nslots, dtype=np.int64)
    values = np.zeros((R * nslots, capacity), dtype=np.uint64)
    reg = np.asarray(registers, dtype=np.uint64).copy()
    taken = np.zeros(R, dtype=np.int64)
    local: list[list[int]] = [[] for _ in range(R)]
    own = np.arange(R)[:, None] * nslots + offsets[None, :] + coords  # rows of a process's own coordinates
    target[own.ravel()] = 0  # never a bucket
    quota = target.reshape(R, nslots).sum(axis=1)
    active = np.arange(R)
    one, seven, sixty_three = np.uint64(1), np.uint64(7), np.uint64(63)
    while len(active):
        active = active[(taken[active] < updates_per_process) & (taken[active] < quota[active])]
        v = (reg[active] << one) ^ ((reg[active] >> sixty_three) * seven)
        owners = layout.owner(v)
        keep = np.zeros(len(active), dtype=bool)
        for i, (r, o) in enumerate(zip(active.tolist(), owners.tolist())):
            if o == r:
                local[r].append(int(v[i]))
                keep[i] = True
                continue
            row = _bucket_for(r, o, coords, offsets, weights, nslots, fills, target, capacity)
            if row < 0:
                continue
            values[row, fills[row]] = v[i]
            fills[row] += 1
            keep[i] = True
        moved = active[keep]
        reg[moved] = v[keep]
        taken[moved] += 1
        active = moved
    counts = np.array([len(x) for x in local], dtype=np.int64)
    flat = np.array([x for xs in local for x in xs], dtype=np.uint64)
    return WarmState(taken=taken, registers=reg, bucket_values=values, bucket_lengths=fills,
                     local_counts=counts, local_values=flat)


def _bucket_for(r: int, o: int, coords: np.ndarray, offsets: np.ndarray, weights: np.ndarray, nslots: int,
                fills: np.ndarray, target: np.ndarray, capacity: int) -> int:
    """The row of the bucket on the route from ``r`` to ``o`` that takes the update: the last one below its
    target, else the one least over its target (the last of equals) if it stays below full; -1 if none."""
    here = coords[r].copy()
    theirs = coords[o]
    below, least = -1, -1
    for d in range(len(here)):
        if here[d] == theirs[d]:
            continue
        holder = int(here @ weights)
        row = holder * nslots + int(offsets[d] + theirs[d])
        if fills[row] < target[row]:
            below = row
        if least < 0 or fills[row] - target[row] <= fills[least] - target[least]:
            least = row
        here[d] = theirs[d]
    if below >= 0:
        return below
    return least if fills[least] < capacity - 1 else -1
