"""Which resource limited a run, read from the run's own counters: the CPU, the network, or BG/P's DMA throttle.

Seed 000 §3 bounds GUPS by the processors (eq. 1) and by the network's bisection (eq. 2); a what-if that
relieves the resource that does not bind changes nothing (twice the link rate on a CPU-bound BG/L partition
leaves GUPS where it was), so a summary and a comparison say which one bound the run, with the figures that
show it:

* **network**: the busiest link was busy most of the run (at least :data:`BUSY_LINK`), or the run reached
  most of its own eq. (2) bound (``network_bound_fraction``, the bound with the run's own wire bytes per
  update, at least :data:`BUSY_LINK`);
* **throttling**: BG/P's DMA throttle held sends back for at least :data:`THROTTLED` of the processes' time
  (``throttled_s`` over processes x simulated time);
* **CPU, with network back-pressure**: no link near saturation, but most send attempts (at least
  :data:`BLOCKED`) found the injection FIFO full: the processors set the pace, yet faster links still help
  (``routed`` on 2x2x2: 71% of sends blocked, +5% GUPS with links x2, +9% with x8);
* **CPU** otherwise: the processors were not kept waiting by the network, so they set the pace (the
  send-blocking factor, the share of send attempts that found the network full, is shown beside it).

The thresholds are judgement, not fitted: a link busy 80% of a run that packs messages of many packets
is near saturation (queues grow without bound as utilisation approaches 1), and a fifth of the time spent
throttled is more than any row of seed 002's BG/P tables shows as incidental.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gupsim.studies.headline import as_float

#: The busiest link's busy share (or the share of the eq. (2) bound reached) from which the network binds.
BUSY_LINK = 0.8
#: The share of process time held by the DMA throttle from which throttling binds.
THROTTLED = 0.2
#: The send-blocking factor from which a CPU-bound run is said to feel the network's back-pressure.
BLOCKED = 0.5


@dataclass(frozen=True)
class Limit:
    """The resource that limited a run (``cpu``, ``network`` or ``throttling``) and the figures behind it."""

    resource: str
    busiest_link: float
    bound_share: float
    throttled: float
    send_blocking: float

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "Limit":
        busiest, share = as_float(row.get("link_utilisation_max")), as_float(row.get("network_bound_fraction"))
        procs, t = as_float(row.get("processes")), as_float(row.get("sim_time_s"))
        throttled = as_float(row.get("throttled_s")) / (procs * t) if procs > 0 and t > 0 else math.nan
        blocked = as_float(row.get("send_blocking_factor"))
        resource = "network" if busiest >= BUSY_LINK or share >= BUSY_LINK else \
            "throttling" if throttled >= THROTTLED else "pushed-back" if blocked >= BLOCKED else "cpu"
        return cls(resource, busiest, share, throttled, blocked)

    def name(self) -> str:
        return {"cpu": "CPU", "network": "network", "throttling": "DMA throttling",
                "pushed-back": "CPU, with network back-pressure"}[self.resource]

    def evidence(self) -> str:
        """The figures that say so: "busiest link 19% busy, 3% of send attempts blocked"."""
        parts = []
        if self.busiest_link == self.busiest_link:
            parts.append(f"busiest link {self.busiest_link:.0%} busy")
        if self.bound_share == self.bound_share and self.resource == "network":
            parts.append(f"{self.bound_share:.0%} of its eq. (2) bound")
        if self.throttled == self.throttled and (self.throttled > 0 or self.resource == "throttling"):
            parts.append(f"throttled {self.throttled:.0%} of the time")
        if self.send_blocking == self.send_blocking:
            parts.append(f"{self.send_blocking:.0%} of send attempts blocked")
        return ", ".join(parts)

    def text(self) -> str:
        """"CPU-bound (busiest link 19% busy, 3% of send attempts blocked)"."""
        bound = "CPU-bound, with network back-pressure" if self.resource == "pushed-back" else f"{self.name()}-bound"
        return f"{bound} ({self.evidence()})"
