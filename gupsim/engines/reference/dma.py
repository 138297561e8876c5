"""Blue Gene/P's DMA engine and sender-driven throttling, on top of the torus network.

Seed 002 §2 and §3.2: every BG/P node has six bidirectional torus links but
one shared DMA engine.  The cores do not handle torus packets; the DMA
engine injects and receives them for every core, and it is built to drive
all six links at once, so its capacity is about six times one link's, for
data going out and for data coming in.  Intra-node messages also go through
it ("down to the DMA engine and back up"), which is why intra-node bandwidth
is about six times inter-node bandwidth (Fig. 3b).  Flow-through traffic
does not touch the DMA engine (§3.3).

Seed 002 §3.4: congestion is managed by the sender.  A sender whose first
link is busy throttles its rate; a packet already in the network (flow-through
traffic) is not throttled, because its sender cannot see the busy link.  That
is why, when P0->P3 and P1->P2 share the link P1-P2, the flow-through stream
keeps its full bandwidth and the local one loses.

:class:`DmaNetwork` adds these to :class:`gupsim.engines.reference.torus_network.Network` without
changing it (BG/L runs use the plain class):

* **Injection.**  Each node has one injection server of
  ``dma.engine_bytes_per_s``; every packet any core of the node launches is
  served first come, first served for ``wire_bytes / rate`` before it may
  enter its first link.
* **Throttling.**  After the DMA, a packet enters its first link only when
  that link is idle or busy with this node's own injected packets; if other
  traffic holds it, the packet is held back (``throttle_waits`` counts such
  packets, ``throttle_queued`` those of them held behind another,
  ``throttled_s`` sums the seconds from being held back to entering the
  link).  The node's held-back packets for one link wait in a first-in,
  first-out queue, in the order they came out of the DMA: BG/P's DMA takes
  its work from injection FIFOs of descriptors, first in, first out (US
  patent 8,037,213, "Replenishing data descriptors in a DMA injection FIFO
  buffer", Archer, Blocksome, Cernohous, Heidelberger, Kumar and Parker,
  IBM, filed 2007), so held-back packets of one link do not pass each
  other.  Only the queue's head backs off: it waits ``throttle_backoff_ns``
  past the link's current reservation and looks again, until the link is
  free.  When it enters the link, the next held packet heads the queue and
  looks at once (one event), backing off past the reservation just made.  A
  packet that finds the link idle or carrying the node's own packets enters
  at once, as the rule says, even while others are held (they look only at
  their back-off's end).  Packets in transit reserve links as soon as their
  head arrives (the plain network's rule), so at a shared link they win over
  local injection.
* **Reception.**  Each node has one reception server of the same rate; a
  packet that arrived over the torus also pays ``rx_packet_overhead_ns``
  (the receive path's extra overhead, seed 002 §3.7, fitted on Fig. 7a).
  A packet between two cores of one node skips the links: DMA out, then DMA
  in, without the torus overhead.

Simulation cost: against the plain network, each packet costs two more
SimPy events (the injection and reception services), plus, for a held-back
packet, one event when it heads its queue and the head's polls
(``throttle_polls``): a few per packet that backs off, however many of the
node's packets are held behind it, since only the head polls.  (If every
held packet polled on its own, k packets held at one link would cost k
events per back-off: about 200 polls per held packet under virtual-node
one-packet load, docs/performance-log.md.)
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from gupsim.engines.links import throttled_total_s
from gupsim.engines.reference.torus_network import Mailbox, Network, Packet

if TYPE_CHECKING:
    import simpy

    from gupsim.config.torus import DmaConfig, NetworkConfig
    from gupsim.topology.grid import Topology


class DmaMailbox(Mailbox):
    """A reception FIFO whose packets become visible only after the node's DMA has received them."""

    __slots__ = ("net",)

    def __init__(self, env: "simpy.Environment", net: "DmaNetwork"):
        super().__init__(env)
        self.net = net

    def put(self, item: Any) -> None:
        self.net.dma_receive(self, item)

    def deliver(self, item: Any) -> None:
        Mailbox.put(self, item)


class DmaNetwork(Network):
    """The torus network with one DMA engine per node and sender-driven throttling."""

    def __init__(self, env: "simpy.Environment", topology: "Topology", net: "NetworkConfig",
                 processes_per_node: int, dma: "DmaConfig"):
        super().__init__(env, topology, net, processes_per_node)
        self.dma = dma
        self.data_header_bytes = dma.header_bytes
        self._dma_rate = dma.engine_bytes_per_s
        self._rx_overhead_s = dma.rx_packet_overhead_ns * 1e-9
        self._backoff_s = dma.throttle_backoff_ns * 1e-9
        nodes = topology.num_nodes
        self._tx_free_at = [0.0] * nodes
        self._rx_free_at = [0.0] * nodes
        self.dma_tx_busy_s = [0.0] * nodes
        self.dma_rx_busy_s = [0.0] * nodes
        self._local_end = [-1.0] * (nodes * topology.ports)  # end of the last reservation made by injection
        self.throttle_waits = 0
        self.throttled_s_per_link = [0.0] * (nodes * topology.ports)  # summed at the end: links.throttled_total_s
        self.throttle_polls = 0
        self.throttle_queued = 0
        self._held: dict[int, deque] = {}  # per first link: the node's packets held back, in injection order
        self.inbox = [DmaMailbox(env, self) for _ in range(self.num_ranks)]

    def launch(self, pkt: Packet) -> None:
        self._launched(pkt)
        self.env.process(self._dma_transit(pkt)).entity = self.router_entity(self.node_of(pkt.src))

    def _dma_transit(self, pkt: Packet):
        env = self.env
        src, dst = self.node_of(pkt.src), self.node_of(pkt.dst)
        service = pkt.wire_bytes / self._dma_rate
        start = max(env.now, self._tx_free_at[src])
        self._tx_free_at[src] = start + service
        self.dma_tx_busy_s[src] += service
        yield env.timeout(start + service - env.now)
        if src == dst:
            # Intra-node: DMA out and straight back in; no link, no router (seed 002 §3.2).
            rec = self.reception[pkt.dst]
            if not rec.take(pkt.chunks):
                yield rec.wait(pkt.chunks)
            self.injection[pkt.src].give(pkt.chunks)
            self.packets_delivered += 1
            self.inbox[pkt.dst].put(pkt)
            return
        link = self.route(src, dst)[0] if not self._adaptive else None
        if link is not None:
            if self.link_free_at[link] > env.now and self.link_free_at[link] != self._local_end[link]:
                yield from self._throttle(link, self._held.get(link))
            self._local_end[link] = max(env.now, self.link_free_at[link]) + pkt.wire_bytes / self._rate
        yield from self._transit(pkt)

    def _throttle(self, link: int, held):
        """Generator: sender-driven throttling at the node's first ``link`` (seed 002 §3.4), which other traffic
        holds: the packet joins the link's queue of the node's held-back packets (``held``, None before the
        first), and only the queue's head backs off and looks again."""
        env = self.env
        self.throttle_waits += 1
        began = env.now
        if held is None:
            held = self._held[link] = deque()
        turn = env.event() if held else None
        held.append(turn)
        if turn is not None:
            self.throttle_queued += 1
            yield turn  # the packet before it has entered the link
        while self.link_free_at[link] > env.now:
            self.throttle_polls += 1
            yield env.timeout(self.link_free_at[link] - env.now + self._backoff_s)
        self.throttled_s_per_link[link] += env.now - began
        held.popleft()
        if held:
            held[0].succeed()  # the next packet heads the queue and looks at the link at once

    def dma_stats(self) -> dict[str, Any]:
        """The engines' busy seconds per node and the throttle's back-offs (:attr:`gupsim.engines.outcome.RunOutcome.dma`)."""
        return {"tx_busy_s": np.array(self.dma_tx_busy_s), "rx_busy_s": np.array(self.dma_rx_busy_s),
                "throttle_waits": self.throttle_waits, "throttled_s": throttled_total_s(self.throttled_s_per_link),
                "throttle_polls": self.throttle_polls, "throttle_queued": self.throttle_queued}

    def dma_receive(self, box: DmaMailbox, pkt: Packet) -> None:
        """Serve ``pkt`` on its destination node's reception engine, then make it visible."""
        node = self.node_of(pkt.dst)
        service = pkt.wire_bytes / self._dma_rate
        if self.node_of(pkt.src) != node:
            service += self._rx_overhead_s
        start = max(self.env.now, self._rx_free_at[node])
        self._rx_free_at[node] = start + service
        self.dma_rx_busy_s[node] += service
        ev = self.env.timeout(start + service - self.env.now)
        ev.callbacks.append(lambda _e: box.deliver(pkt))


def make_torus_network(env: "simpy.Environment", topology: "Topology", machine, processes_per_node: int) -> Network:
    """The network a torus machine describes: with a DMA engine if it has a ``dma`` section."""
    if machine.dma is None:
        return Network(env, topology, machine.network, processes_per_node)
    return DmaNetwork(env, topology, machine.network, processes_per_node, machine.dma)
