"""Per-link statistics of a run, as both engines report them: for every directed link that exists in the
topology, the bytes it carried and the seconds it was busy and blocked (seed 000 §5.1's link model)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def link_stats(topology: Any, link_bytes: Any, link_busy_s: Any, link_blocked_s: Any, link_free_at: Any,
               end_s: float) -> dict[str, Any]:
    """The links of ``topology`` that exist, each with its bytes, busy and blocked seconds (arrays indexed by
    link slot, as both engines keep them), busy counted up to ``end_s``, the run's end.

    Both engines count a packet's seconds on a link when they reserve it, and a reservation may begin later
    (``max(now, free_at)``): a run stopped once precise (``--precision``) ends with reservations past its end.
    Every reservation was made by ``end_s``, so after ``end_s`` a link is busy without a gap until its
    ``link_free_at``; that tail is taken off, or a busy link would read more than 100% busy."""
    links = topology.links()
    beyond = np.maximum(np.asarray(link_free_at, dtype=float) - end_s, 0.0)
    return {
        "link": links,
        "bytes": np.asarray(link_bytes, dtype=np.int64)[links],
        "busy_s": (np.asarray(link_busy_s) - beyond)[links],
        "blocked_s": np.asarray(link_blocked_s)[links],
    }


def throttled_total_s(per_link_s: Any) -> float:
    """The seconds BG/P's DMA held packets back at their first link, over the run: each link's own sum (which
    both engines add in the link's event order, a partitioned run's part included) summed exactly
    (``math.fsum``), so that the total does not depend on the order the links are visited in."""
    return math.fsum(np.asarray(per_link_s, dtype=float))
