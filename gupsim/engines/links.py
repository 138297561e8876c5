"""Per-link statistics of a run, as both engines report them: for every directed link that exists in the
topology, the bytes it carried and the seconds it was busy and blocked (seed 000 §5.1's link model)."""

from __future__ import annotations

from typing import Any

import numpy as np


def link_stats(topology: Any, link_bytes: Any, link_busy_s: Any, link_blocked_s: Any) -> dict[str, Any]:
    """The links of ``topology`` that exist, each with its bytes, busy and blocked seconds (arrays indexed by
    link slot, as both engines keep them)."""
    links = topology.links()
    return {
        "link": links,
        "bytes": np.asarray(link_bytes, dtype=np.int64)[links],
        "busy_s": np.asarray(link_busy_s)[links],
        "blocked_s": np.asarray(link_blocked_s)[links],
    }
