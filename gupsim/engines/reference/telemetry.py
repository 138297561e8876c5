"""Optional, larger parts of a run record: per-link load, histograms, time series.

The plain record (:func:`gupsim.engines.run.make_record`) stays small: means and
ratios.  The figures need more, and only when asked for
(:class:`gupsim.studies.sweep.RecordExtras`, ``gupsim run --links --histograms
--sample-interval-s``):

* ``links``: one entry per directed link, tidy columns -- source and
  destination node coordinates, dimension (0 = x, 1 = y, 2 = z), direction
  (+1/-1), wire bytes, busy seconds, blocked seconds (packet-seconds waiting
  for room downstream) and utilisation (busy / run time).  These are the
  Network's own counters (seed 000 §5.1 link model; the load on the sparsest
  cut is what eq. (2) bounds);
* ``histograms``: updates per packet, and updates per message (the baseline's
  bucket size when it sends, seed 000 §4.1 and Table 3; for the algorithms
  whose message is a packet, the same as per packet).  A baseline message's
  updates are counted evenly over its packets.  Counted as packets launch, as
  value -> count maps, so memory is O(distinct sizes);
* ``timeseries``: every ``sample_interval_s`` of simulated time, the updates
  applied, the send-blocking factor so far and in the interval (seed 000
  §6.1's SBF: blocked / attempted sends), the share of processes whose
  injection FIFO cannot take one more full packet (injection throttling),
  and the link-blocked seconds accumulated.  The sampler stops by itself
  when an interval passes with no other event, so a deadlocked machine
  still empties the event queue and is reported as a deadlock.

A network that cannot give an extra says so on its topology class
(``telemetry_unavailable``: the switched fabrics have no torus links to
tabulate, nor the FIFO and link-blocking counters the sampler reads), and
:func:`check_available` refuses it before the run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from gupsim.base.errors import GupsimError
from gupsim.topology.base import TOPOLOGIES, parse_shape

if TYPE_CHECKING:
    from gupsim.engines.outcome import RunOutcome
    from gupsim.model.run_config import RunConfig

#: Each extra as gupsim run's flag and a sweep's record key, which a refusal names (either may have asked).
OPTIONS = {"links": ("--links", "record.links"), "histograms": ("--histograms", "record.histograms"),
           "timeseries": ("--sample-interval-s", "record.sample_interval_s")}


class Telemetry:
    """Attach to a built :class:`gupsim.engines.reference.simulation.Simulation` (to count and sample as it runs;
    annotated ``Any`` here, since the SimPy engine that attaches it sits above this module); add the asked-for extras to its
    record from its outcome (:meth:`results`)."""

    def __init__(self, links: bool = False, histograms: bool = False, sample_interval_s: float | None = None):
        self.links, self.histograms, self.sample_interval_s = links, histograms, sample_interval_s
        self.per_packet: Counter = Counter()
        self.per_message: Counter = Counter()
        self.samples: dict[str, list[float]] = {k: [] for k in (
            "t_s", "updates_applied", "sbf_cumulative", "sbf_interval", "throttled_fraction",
            "link_blocked_s", "packets_injected")}

    @classmethod
    def from_extras(cls, extras: Any) -> "Telemetry":
        return cls(links=extras.links, histograms=extras.histograms, sample_interval_s=extras.sample_interval_s)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The extras asked for, as keys of :data:`OPTIONS`."""
        asked = {"links": self.links, "histograms": self.histograms,
                 "timeseries": self.sample_interval_s is not None}
        return tuple(kind for kind, on in asked.items() if on)

    @property
    def wanted(self) -> bool:
        return bool(self.kinds)

    def attach(self, sim: Any) -> None:
        if self.histograms:
            last_message: dict[int, Any] = {}

            def count(pkt: Any) -> None:
                msg = pkt.message
                updates = getattr(msg, "updates", None)
                if updates is not None:  # a software message split into packets
                    n = len(updates)
                    if not n:
                        return  # a control message (HPCC's FINISHED)
                    self.per_packet[round(n / msg.npackets, 3)] += 1
                    if last_message.get(pkt.src) is not msg:  # a sender's packets of one message are consecutive
                        last_message[pkt.src] = msg
                        self.per_message[n] += 1
                else:
                    n = len(pkt.updates) if isinstance(pkt.updates, (list, tuple)) else 1
                    self.per_packet[n] += 1
                    self.per_message[n] += 1

            sim.net.on_launch = count
        if self.sample_interval_s is not None:
            sim.env.process(self._sample(sim))

    def _sample(self, sim: Any):
        env, net, dt = sim.env, sim.net, self.sample_interval_s
        full = net.cfg.max_chunks_per_packet
        prev_tests = prev_blocked = 0.0
        prev_events = -1
        while not sim.all_applied.triggered:
            counters = sim.algorithm.counters()
            tests, blocked = counters.get("send_tests", 0), counters.get("send_tests_blocked", 0)
            s = self.samples
            s["t_s"].append(env.now)
            s["updates_applied"].append(sim.applied)
            s["sbf_cumulative"].append(blocked / tests if tests else 0.0)
            s["sbf_interval"].append((blocked - prev_blocked) / (tests - prev_tests) if tests > prev_tests else 0.0)
            s["throttled_fraction"].append(sum(f.free < full for f in net.injection) / len(net.injection))
            s["link_blocked_s"].append(float(sum(net.link_blocked_s)))
            s["packets_injected"].append(net.packets_injected)
            prev_tests, prev_blocked = tests, blocked
            events = sim.env.events_scheduled
            if events - prev_events <= 1:
                return  # only our own timeout happened: the machine is stuck, let the queue empty
            prev_events = events
            yield env.timeout(dt)

    def results(self, outcome: "RunOutcome") -> dict[str, Any]:
        """The extras of the finished run whose ``outcome`` is given."""
        out: dict[str, Any] = {}
        if self.links:
            out["links"] = link_table(outcome)
        if self.histograms:
            out["histograms"] = {
                "updates_per_packet": {str(k): v for k, v in sorted(self.per_packet.items())},
                "updates_per_message": {str(k): v for k, v in sorted(self.per_message.items())},
            }
        if self.sample_interval_s is not None:
            out["timeseries"] = {k: list(v) for k, v in self.samples.items()}
        return out


def check_available(run: "RunConfig", kinds: Collection[str]) -> None:
    """Refuse, in one line, an extra that the run's network cannot give (its topology's ``telemetry_unavailable``)."""
    kind = run.machine.network.topology_kind(math.prod(parse_shape(run.shape)))
    unavailable = TOPOLOGIES[kind].telemetry_unavailable
    for extra in kinds:
        if extra in unavailable:
            flag, key = OPTIONS[extra]
            raise GupsimError(f"{flag} (a sweep's {key}) is not available on a {kind} network "
                              f"(machine {run.machine.name}): {unavailable[extra]}")


def link_table(outcome: "RunOutcome") -> dict[str, list]:
    """Per directed link counters as tidy columns (lists, JSON-ready)."""
    topo, stats, t = outcome.topology, outcome.links, outcome.sim_time_s
    cols: dict[str, list] = {k: [] for k in ("src", "dst", "dim", "dir", "bytes", "busy_s", "blocked_s", "utilisation")}
    for i, link in enumerate(stats["link"].tolist()):
        src, dst = topo.link_endpoints(link)
        port = link % topo.ports
        cols["src"].append(list(topo.coords(src)))
        cols["dst"].append(list(topo.coords(dst)))
        cols["dim"].append(port >> 1)
        cols["dir"].append(1 if port % 2 == 0 else -1)
        cols["bytes"].append(int(stats["bytes"][i]))
        cols["busy_s"].append(float(stats["busy_s"][i]))
        cols["blocked_s"].append(float(stats["blocked_s"][i]))
        cols["utilisation"].append(float(stats["busy_s"][i]) / t if t > 0 else 0.0)
    return cols


