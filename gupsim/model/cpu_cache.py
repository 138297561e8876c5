"""Cache misses on per-destination data: why the baseline slows as N grows.

Seed 000 §6.1 names four causes of the baseline's growth from 1,018 cycles
per update at 32 nodes to 9,002 at 16,384: an ``MPI_Test`` per update, heap
operations in O(log N), MPI call overheads divided by the bucket size, and
cache misses once the code's per-destination data outgrows the 32 KB L1
("20 bytes per destination and 16 bytes per update. In addition the MPI data
structures also maintain state for each destination").  The first three are
costs in :class:`gupsim.model.costs.CostModel`; this module is the fourth.  It also
carries the seed's guess for the 65,536-node collapse, the L3 (4 MB), so the
guess can be tested (see docs/validation.md).

**The model.**  Destinations are random, so a destination's data is touched
again only after about N - 1 other remote updates (or messages) have gone
by, each bringing new lines into the caches: the table line it updates, a
line of the per-destination structures, its pending-update slot, and (once
per message) the MPI state of another peer.  With exponentially distributed
reuse gaps, the chance that the data is still in a cache of C bytes after a
reuse distance of R bytes is ``1 - exp(-C / R)``.  An access that misses L1
costs the L3 latency if it hits L3 and the memory latency if not.  The cache
sizes and latencies are seed 000 §5.1's (32 KB L1, 4 MB L3; 3, 28-40 and 86
cycles); the size of MPI's per-peer state is the one fitted constant
(``mpi.peer_state_bytes``; see gupsim/studies/experiments/bgl_table3.py for the row).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gupsim.config.torus import CacheConfig

#: Seed 000 §6.1: 16 bytes per pending update (its 20 bytes per destination fit in one line).
PENDING_UPDATE_BYTES = 16


def hit_fraction(capacity_bytes: float, reuse_bytes: float) -> float:
    """Chance that data reused after ``reuse_bytes`` of other traffic is still cached."""
    if reuse_bytes <= 0:
        return 1.0
    return -math.expm1(-capacity_bytes / reuse_bytes)


def miss_cycles(cache: "CacheConfig", reuse_bytes: float) -> float:
    """Expected cycles beyond an L1 hit for one access reused after ``reuse_bytes`` (inclusive caches)."""
    h1 = hit_fraction(cache.l1_bytes, reuse_bytes)
    h3 = max(h1, hit_fraction(cache.l3_bytes, reuse_bytes))
    return (h3 - h1) * (cache.l3_hit_cycles - cache.l1_hit_cycles) + (1 - h3) * (
        cache.memory_cycles - cache.l1_hit_cycles)


@dataclass(frozen=True)
class BaselineCacheCosts:
    """Expected miss cycles of the baseline at one machine size, beyond L1 hits."""

    per_remote_update: float  # heap path + bucket header of the destination
    per_message_side: float  # MPI's per-peer state, paid by the sender and by the receiver
    structure_reuse_bytes: float  # for the report: how far apart reuses of the same data are
    peer_state_reuse_bytes: float


def baseline_cache_costs(cache: "CacheConfig | None", peer_state_bytes: float, ranks: int,
                         updates_per_message: float) -> BaselineCacheCosts:
    """Miss costs of the baseline on ``ranks`` processes sending ``updates_per_message`` per message."""
    if cache is None or ranks < 2:
        return BaselineCacheCosts(0.0, 0.0, 0.0, 0.0)
    per_message = max(1.0, updates_per_message)
    # New bytes each remote update brings in: the table line it updates, a line of the
    # per-destination structures, its pending slot; each message adds one peer's MPI state.
    per_update = 2 * cache.line_bytes + PENDING_UPDATE_BYTES + peer_state_bytes / per_message
    structure_reuse = (ranks - 1) * per_update  # N-1 remote updates between inserts to one destination
    peer_reuse = structure_reuse * per_message  # N-1 messages between messages to one peer
    structure_accesses = math.log2(max(2, ranks - 1)) + 1  # heap levels + the bucket header
    peer_lines = peer_state_bytes / cache.line_bytes  # expected lines: the state need not be line-aligned
    return BaselineCacheCosts(
        per_remote_update=structure_accesses * miss_cycles(cache, structure_reuse),
        per_message_side=peer_lines * miss_cycles(cache, peer_reuse),
        structure_reuse_bytes=structure_reuse,
        peer_state_reuse_bytes=peer_reuse,
    )


def routed_lookup_miss_cycles(cache: "CacheConfig | None", ranks: int, hops_per_update: float) -> float:
    """Expected miss cycles per software hop of ``routed`` on its next-hop lookup table.

    Seed 000 §4.3 sizes the routed code's working set: an N-byte lookup table
    (one byte per destination), 32 bytes per software router and the 8 KB of
    buckets, 27 KB at 16,384 nodes, "which fits into a 32 KB L1".  The router
    headers and buckets are touched every few hops and stay cached; the
    lookup table is read at a random entry every hop, so one of its lines is
    reused only after about ``ranks / line_bytes`` other hops.  Each of those
    hops brings in a lookup line, and each applied update (one per
    ``hops_per_update`` hops) a line of the GUPS table, so the reuse distance
    is ``ranks * (1 + 1 / hops_per_update)`` bytes; the same exponential
    reuse model as the baseline's turns it into expected cycles.
    """
    if cache is None or ranks < 2 or hops_per_update <= 0:
        return 0.0
    reuse = ranks * (1.0 + 1.0 / hops_per_update)
    return miss_cycles(cache, reuse)
