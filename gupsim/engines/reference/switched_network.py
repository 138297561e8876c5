"""Network models of the switched fabrics: FDR InfiniBand and the Data Vortex (seed 003).

Both expose what the algorithms use of the torus :class:`gupsim.engines.reference.torus_network.Network`
(``make_packet``, ``inject``/``try_inject``/``launch``, per-rank
``injection`` and ``reception`` room, ``inbox``, ``release_later``,
counters and ``link_stats``), so HPCC's ``baseline`` runs over InfiniBand
unchanged.

**InfiniBand** (:class:`FatTreeNetwork`).  A packet carries up to an MTU of
payload plus its headers and CRCs; it is cut through each switch it passes
(``router_delay_ns`` each, head one credit unit behind) and serialised on
each link at the FDR data rate, links serving packets first come, first
served.  The path's timing is reserved when the packet leaves its send
queue, and the adapter latency is added once.  Link-level credit flow
control is not modelled: at HPCC MPI rates the links are nearly idle (the
run records their utilisation), and a slow receiver still pushes back
through its finite receive buffer and the sender's send queue.

**Data Vortex** (:class:`DataVortexNetwork`).  Every packet is one 64-bit
payload with its header word.  A VIC stripes the packets the host hands it
over its 16 lanes, each lane a separate switch network (seed 003 Fig. 3).
Inside a lane's network nothing arbitrates or queues: a packet that finds
the output it needs (an up-port, a down-port or its destination's port)
busy is *deflected* and comes round again ``deflection_delay_ns`` later,
until the port is free (each output keeps a calendar of the packet times it
has promised, so paths reserved at send time still interleave as in time
order) (the "proprietary data flow switching mechanism that
does not include an arbiter", seed 003).  Contention therefore costs
latency, never throughput collapse: a port is busy only while a packet is
on it.  At a two-level crossing the packet takes whichever second-level
chip's up-port frees first.  Arrived packets wait in the destination VIC
until its host reads them out by DMA; a VIC may have at most
``vic_window_packets`` packets not yet read out at their destinations,
which is how a slow receiver throttles its senders.  Arrivals are kept in
a heap per destination and a receiver is woken only when it waits, so the
cost is a few events per batch of packets, not per packet.
"""

from __future__ import annotations

import bisect
import heapq
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from gupsim.engines.reference.torus_network import Credits, FifoInjection, Mailbox, Packet

if TYPE_CHECKING:
    from gupsim.topology.switched import SwitchedTopology


class _FabricBase:
    """Ranks, per-rank room, counters and link bookkeeping shared by both fabrics."""

    def __init__(self, env: simpy.Environment, topology: "SwitchedTopology", machine: Any,
                 processes_per_node: int, link_slots: int):
        self.env, self.topology, self.cfg = env, topology, machine.network
        self.ppn = processes_per_node
        self.num_ranks = topology.num_nodes * processes_per_node
        self.inbox = [Mailbox(env) for _ in range(self.num_ranks)]
        self.link_bytes = [0] * link_slots
        self.link_busy_s = [0.0] * link_slots
        self._free_at = [0.0] * link_slots
        self.packets_injected = 0
        self.wire_bytes_injected = 0
        self.packets_delivered = 0

    def node_of(self, rank: int) -> int:
        return rank // self.ppn

    def release_later(self, delay: float, credits: Credits, chunks: int) -> None:
        if delay <= 0:
            credits.give(chunks)
            return
        ev = self.env.timeout(delay)
        ev.callbacks.append(lambda _e: credits.give(chunks))

    def link_stats(self) -> dict[str, Any]:
        busy = np.asarray(self.link_busy_s)
        return {"link": np.arange(len(busy)), "bytes": np.asarray(self.link_bytes, dtype=np.int64),
                "busy_s": busy, "blocked_s": np.zeros(len(busy))}


class FatTreeNetwork(FifoInjection, _FabricBase):
    """FDR InfiniBand: adapters, one switch or a two-level fat tree, MTU-sized packets."""

    def __init__(self, env, topology, machine, processes_per_node: int = 1):
        super().__init__(env, topology, machine, processes_per_node, topology.num_link_slots)
        net = self.cfg
        self._rate = net.link_bytes_per_s
        self._head_s = net.chunk_bytes / self._rate + net.router_delay_ns * 1e-9
        self._adapter_s = net.adapter_delay_ns * 1e-9
        self.injection = [Credits(env, net.injection_fifo_chunks) for _ in range(self.num_ranks)]
        self.reception = [Credits(env, net.reception_fifo_chunks) for _ in range(self.num_ranks)]

    def packet_chunks(self, payload_bytes: int) -> int:
        if payload_bytes > self.cfg.mtu_bytes:
            raise ValueError(f"payload of {payload_bytes} B exceeds the MTU")
        return max(1, math.ceil((payload_bytes + self.cfg.packet_header_bytes) / self.cfg.chunk_bytes))

    def make_packet(self, src: int, dst: int, payload_bytes: int, updates: Any = None,
                    message: Any = None, wire_bytes: int | None = None) -> Packet:
        if wire_bytes is None:
            wire_bytes = payload_bytes + self.cfg.packet_header_bytes
        return Packet(src, dst, self.packet_chunks(payload_bytes), wire_bytes, payload_bytes, updates, message)

    def launch(self, pkt: Packet) -> None:
        """Reserve the packet's path now; it reaches the receive buffer at the computed time."""
        env = self.env
        self._launched(pkt)
        serial = pkt.wire_bytes / self._rate
        head = min(serial, self._head_s)
        t = env.now + self._adapter_s / 2
        first = True
        for link in self.topology.route(self.node_of(pkt.src), self.node_of(pkt.dst)):
            t = max(t, self._free_at[link])
            self._free_at[link] = t + serial
            self.link_busy_s[link] += serial
            self.link_bytes[link] += pkt.wire_bytes
            if first:  # the send queue's room is free once the tail has left the adapter
                self.release_later(t + serial - env.now, self.injection[pkt.src], pkt.chunks)
                first = False
            t += head
        env.process(self._deliver(pkt, t - head + serial + self._adapter_s / 2))

    def _deliver(self, pkt: Packet, at: float):
        yield self.env.timeout(at - self.env.now)
        rec = self.reception[pkt.dst]
        if not rec.take(pkt.chunks):
            yield rec.wait(pkt.chunks)
        self.packets_delivered += 1
        self.inbox[pkt.dst].put(pkt)

    def consumed(self, pkt: Packet) -> None:
        self.reception[pkt.dst].give(pkt.chunks)


class DataVortexNetwork(_FabricBase):
    """VICs with parallel lanes into deflection-routed switch networks; one endpoint per rank."""

    #: Optional callback on every packet sent, one update each (gupsim.engines.reference.telemetry's histograms).
    on_launch = None

    def __init__(self, env, topology, machine, processes_per_node: int = 1):
        net = machine.network
        super().__init__(env, topology, machine, processes_per_node, net.lanes_per_vic * topology.num_link_slots)
        self.lanes = net.lanes_per_vic
        self._slots = topology.num_link_slots
        self._pkt_s = net.lane_packet_s
        self._level_s = net.switch_level_delay_ns * 1e-9
        self._deflect_s = net.deflection_delay_ns * 1e-9
        self._lane_next = [0] * self.num_ranks
        self._arrivals: list[list] = [[] for _ in range(self.num_ranks)]
        self._waiter: list[simpy.Event | None] = [None] * self.num_ranks
        self._wake_at = [math.inf] * self.num_ranks
        self._seq = 0
        # The sender's window: packets out in the network or unread at their destinations.
        self.injection = [Credits(env, net.vic_window_packets) for _ in range(self.num_ranks)]
        self.deflections = 0
        self._calendar: dict[int, list[float]] = {}
        self.latency_sum_s = 0.0

    # ------------------------------------------------------------------ sending

    def send(self, src: int, dests: list[int], values: list[int], first_ready: float, gap_s: float) -> None:
        """The VIC got these packets from host memory, the i-th at ``first_ready + i*gap_s``; send them."""
        topo, lanes, pkt_s, slots = self.topology, self.lanes, self._pkt_s, self._slots
        free, busy, level_s = self._free_at, self.link_busy_s, self._level_s
        lane = self._lane_next[src]
        node = self.node_of(src)
        deflections, latency = 0, 0.0
        for i, (dst, value) in enumerate(zip(dests, values)):
            ready = first_ready + i * gap_s
            base = lane * slots
            path = topo.route(node, self.node_of(dst))
            # The endpoint's own lane into the switch: serialisation only.
            link = base + path[0]
            t = max(ready, free[link])
            free[link] = t + pkt_s
            busy[link] += pkt_s
            if len(path) == 4:  # between groups any second-level chip will do: the first up-port free
                t += pkt_s + level_s
                up0 = base + topo.up_link(topo.group(node), 0)
                t, chip, k = self._claim_any(up0, topo.uplinks, dst % topo.uplinks, t)
                deflections += k
                busy[up0 + chip] += pkt_s
                path = topo.route(node, self.node_of(dst), chip)[1:]
            for link_id in path[1:]:
                t += pkt_s + level_s
                link = base + link_id
                t, k = self._claim(link, t)
                deflections += k
                busy[link] += pkt_s
            arrive = t + pkt_s
            latency += arrive - ready
            self._seq += 1
            heapq.heappush(self._arrivals[dst], (arrive, self._seq, src, value))
            lane = lane + 1 if lane + 1 < lanes else 0
        self._lane_next[src] = lane
        n = len(dests)
        self.packets_injected += n
        self.wire_bytes_injected += n * self.cfg.wire_bytes
        if self.on_launch is not None:  # telemetry only: the model itself keeps no packet objects
            for dst, value in zip(dests, values):
                self.on_launch(Packet(src, dst, 1, self.cfg.wire_bytes, self.cfg.packet_payload_bytes, value))
        self.deflections += deflections
        self.latency_sum_s += latency
        for dst in set(dests):
            if self._waiter[dst] is not None:
                self._wake(dst)

    def _claim_any(self, first: int, count: int, start: int, t: float) -> tuple[float, int, int]:
        """Take the first free of ``count`` outputs ``first..first+count-1`` (from ``start`` round), deflecting
        while all are taken; returns (time, chosen offset, deflections)."""
        k = 0
        while True:
            for j in range(count):
                c = (start + j) % count
                if self._free_now(first + c, t):
                    self._claim(first + c, t)
                    return t, c, k
            t += self._deflect_s
            k += 1

    def _free_now(self, link: int, t: float) -> bool:
        cal = self._calendar.get(link)
        if not cal:
            return True
        pkt_s, eps = self._pkt_s, self._pkt_s * 1e-9
        i = bisect.bisect_right(cal, t - pkt_s + eps)
        return not (i < len(cal) and cal[i] < t + pkt_s - eps)

    def _claim(self, link: int, t: float) -> tuple[float, int]:
        """Take switch output ``link`` for one packet time from ``t``, deflecting while it is taken.

        Each output keeps the (sorted) start times it has promised; a packet
        reserved later in simulated time but earlier on the clock still gets
        a free gap, as it would if the switch were stepped in time order.
        """
        cal = self._calendar.get(link)
        if cal is None:
            cal = self._calendar[link] = []
        pkt_s, eps = self._pkt_s, self._pkt_s * 1e-9
        old = bisect.bisect_left(cal, self.env.now - pkt_s)
        if old > 64:  # forget slots that are over
            del cal[:old]
        k = 0
        while True:
            i = bisect.bisect_right(cal, t - pkt_s + eps)
            if i < len(cal) and cal[i] < t + pkt_s - eps:
                t += self._deflect_s  # taken: round the ring once more
                k += 1
                continue
            cal.insert(i, t)
            return t, k

    # ------------------------------------------------------------------ receiving

    def take_arrived(self, dst: int, limit: int) -> list[tuple[int, int]]:
        """(source, value) of up to ``limit`` packets that have arrived in ``dst``'s VIC by now."""
        heap, now, out = self._arrivals[dst], self.env.now, []
        while heap and heap[0][0] <= now and len(out) < limit:
            _, _, src, value = heapq.heappop(heap)
            out.append((src, value))
        self.packets_delivered += len(out)
        return out

    def wait_arrival(self, dst: int) -> simpy.Event:
        """An event that fires when a packet has arrived for ``dst`` (the group counter says so)."""
        event = self.env.event()
        self._waiter[dst] = event
        self._wake(dst)
        return event

    def _wake(self, dst: int) -> None:
        heap = self._arrivals[dst]
        if not heap:
            return
        at = heap[0][0]
        if at <= self.env.now:
            self._fire(dst)
        elif at < self._wake_at[dst]:
            self._wake_at[dst] = at
            ev = self.env.timeout(at - self.env.now)
            ev.callbacks.append(lambda _e: self._fire(dst))

    def _fire(self, dst: int) -> None:
        heap, waiter = self._arrivals[dst], self._waiter[dst]
        self._wake_at[dst] = math.inf
        if waiter is None or waiter.triggered:
            return
        if heap and heap[0][0] <= self.env.now:
            self._waiter[dst] = None
            waiter.succeed()
        else:
            self._wake(dst)

    def read_out(self, sources: list[int], at: float) -> None:
        """The destination's host has read these packets out of its VIC at ``at``: return the senders' window."""
        counts: dict[int, int] = {}
        for src in sources:
            counts[src] = counts.get(src, 0) + 1
        for src, k in counts.items():
            self.release_later(at - self.env.now, self.injection[src], k)

    def capacity_packets_per_s(self) -> float:
        """Packets per second one VIC can put on (or take off) its lanes."""
        return self.lanes / self._pkt_s
