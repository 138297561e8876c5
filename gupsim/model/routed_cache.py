"""The whole working set of ``routed`` in a round-robin L1: per-hop miss cycles.

Seed 000 §4.3 sizes the software router's working set at 16,384 nodes
(32x32x16) as 16 KB of next-hop lookup table, under 3 KB of per-router
headers and 8 KB of buckets, 27 KB in all, and concludes that it "fits into
a 32 KB L1 cache".  That holds for a cache that keeps the lines in use.  The
PowerPC 440's L1 data cache does not: it is 64-way set-associative with
32-byte lines and replaces the ways of a set *round-robin*, "as each new line
is brought into that set", whether or not the victim was just used (IBM,
*PPC440x5 CPU Core User's Manual*, 2002, §4.1.1, pp. 96-97; Blue Gene/L's
cores are PPC440s, M. Ohmacht et al., IBM J. Res. & Dev. 49(2/3), 2005).  So
every line a process brings in, above all the GUPS-table line of each applied
update (a new line from a table of half the node's memory, seed 000 §3.1),
pushes the oldest line out, hot or not.

**The model** (the standard characteristic-time approximation for FIFO and
round-robin caches under independent references; A. Dan and D. Towsley,
SIGMETRICS 1990; V. Martina et al., INFOCOM 2014).  A line inserted at a miss
stays ``T`` (measured here in updates of the process) and then leaves,
whatever happened to it meanwhile.  An item referenced at Poisson rate
``lam`` is then present a fraction ``lam T / (1 + lam T)`` of the time and a
reference to it misses with probability ``1 / (1 + lam T)``.  By Little's law
the cache holds ``T`` times the misses per update, so ``T`` solves
``capacity_lines = T * (stream + sum_k refs_k / (1 + lam_k T))``.  The
classes, per update a process handles (``H`` software hops on average):

* the lookup table, one byte per process (§4.3): ``H`` references, each
  line at rate ``H line / ranks``;
* one 32-byte header per software router (§4.3), one line each: a router of
  dimension ``d`` (length ``L_d``) is touched at rate ``1 / L_d``;
* the buckets, ``capacity`` updates of 8 bytes each (§4.2): a bucket of
  dimension ``d`` is appended at rate ``1 / L_d``, spread over its lines;
* the receive buffer of each dimension, one packet: its lines are written
  and read once per packet received on that dimension;
* one GUPS-table line per update, never reused (the stream).

A miss on a hot line costs the L3 latency if the line is in L3 (the same
model at the L3's capacity, which the node's processes share) and the memory
latency if not, beyond the L1 hit.  The cache sizes and latencies are seed
000 §5.1's.  The table line's own miss is ``t_u`` (86 cycles) already.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from gupsim.model.cpu_cache import routed_lookup_miss_cycles

if TYPE_CHECKING:
    from gupsim.config.torus import CacheConfig

UPDATE_BYTES = 8
_BISECTION_STEPS = 200


@dataclass(frozen=True)
class RefClass:
    """References of one kind: how many per update, and the rate at which each of its lines is touched."""

    refs_per_update: float
    line_rate: float


def characteristic_time(classes: list[RefClass], stream_lines: float, capacity_lines: float) -> float:
    """``T`` (in updates) of a round-robin cache of ``capacity_lines`` under these references.

    The occupancy ``T * misses(T)`` grows with ``T`` without bound when the
    stream is positive; with no stream the cache may never fill, and ``T``
    is then infinite (nothing hot is ever evicted).
    """
    def occupancy(t: float) -> float:
        return t * (stream_lines + sum(c.refs_per_update / (1.0 + c.line_rate * t) for c in classes))

    hot_lines = sum(c.refs_per_update / c.line_rate for c in classes if c.line_rate > 0)
    if stream_lines <= 0 and hot_lines <= capacity_lines:
        return math.inf
    lo, hi = 0.0, 1.0
    while occupancy(hi) < capacity_lines:
        hi *= 2.0
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if occupancy(mid) < capacity_lines:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def miss_probability(line_rate: float, t: float) -> float:
    """Chance that a reference to a line touched at ``line_rate`` misses a cache of characteristic time ``t``."""
    if math.isinf(t):
        return 0.0
    return 1.0 / (1.0 + line_rate * t)


def routed_classes(lengths: list[int], ranks: int, bucket_capacity: int, updates_per_packet: int,
                   line_bytes: int) -> list[RefClass]:
    """The hot references of one ``routed`` process per update (see the module docstring)."""
    hops = [(length - 1) / length for length in lengths]
    total_hops = sum(hops)
    classes = [RefClass(total_hops, total_hops * line_bytes / ranks)]  # next-hop lookup
    bucket_lines = max(1, math.ceil(UPDATE_BYTES * bucket_capacity / line_bytes))
    per_packet = max(1, min(updates_per_packet, bucket_capacity))  # a full bucket's packets carry at most this
    buffer_lines = max(1, math.ceil(UPDATE_BYTES * per_packet / line_bytes))
    for length, h in zip(lengths, hops):
        if h <= 0:
            continue
        classes.append(RefClass(h, 1.0 / length))  # router headers of this dimension
        classes.append(RefClass(h, 1.0 / length / bucket_lines))  # bucket appends
        packets = h / per_packet  # packets received on this dimension per update
        classes.append(RefClass(packets * buffer_lines, packets))  # receive buffer
    return classes


def _class_cost(cache: "CacheConfig", c: RefClass, t1: float, t3: float) -> float:
    m1 = miss_probability(c.line_rate, t1)
    m3 = min(m1, miss_probability(c.line_rate, t3))
    return c.refs_per_update * ((m1 - m3) * (cache.l3_hit_cycles - cache.l1_hit_cycles)
                                + m3 * (cache.memory_cycles - cache.l1_hit_cycles))


def round_robin_miss_cycles(cache: "CacheConfig | None", lengths: list[int], ranks: int, bucket_capacity: int,
                            updates_per_packet: int, processes_per_node: int = 1) -> float:
    """Expected miss cycles per software hop of ``routed``'s whole working set in a round-robin L1."""
    hops = sum((length - 1) / length for length in lengths)
    if cache is None or ranks < 2 or hops <= 0:
        return 0.0
    classes = routed_classes(lengths, ranks, bucket_capacity, updates_per_packet, cache.line_bytes)
    t1 = characteristic_time(classes, 1.0, cache.l1_bytes / cache.line_bytes)
    # The node's processes share the L3: each gets its share of the capacity.
    t3 = characteristic_time(classes, 1.0, cache.l3_bytes / cache.line_bytes / max(1, processes_per_node))
    return sum(_class_cost(cache, c, t1, t3) for c in classes) / hops


def lookup_only_miss_cycles(cache: "CacheConfig | None", lengths: list[int], ranks: int, bucket_capacity: int,
                            updates_per_packet: int, processes_per_node: int = 1) -> float:
    """Per-hop misses on the next-hop lookup alone, the rest assumed to stay in L1 (seed 000 §4.3's argument)."""
    return routed_lookup_miss_cycles(cache, ranks, sum((length - 1) / length for length in lengths))


#: ``cache.routed_working_set`` names the model of routed's per-hop L1 misses.
ROUTED_CACHE_MODELS: dict[str, Callable[..., float]] = {
    "lookup": lookup_only_miss_cycles,
    "round-robin": round_robin_miss_cycles,
}
