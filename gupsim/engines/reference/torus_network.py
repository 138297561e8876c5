"""The torus network: directed links moving packets of 32-byte chunks.

Seed 000 §5.1 describes the Blue Gene/L torus: packets of n x 32-byte
chunks (n = 1..8), an 8-byte hardware header and a 4-byte trailer on the
wire, cut-through routing and finite virtual-channel buffers.  This module is
the readable SimPy reference model of that network:

* **Serialization.**  A packet of ``c`` chunks occupies a directed link for
  ``(32 c + header + trailer) / link_bytes_per_s`` seconds; packets on one
  link are served first come, first served.
* **Cut-through.**  The head reaches the next router one chunk time plus the
  router delay after it starts on a link, and may start on the next link
  then, while its tail is still arriving.
* **Finite buffers, back-pressure.**  Each directed link ends in an input
  buffer of ``link_buffer_chunks``.  A packet may start on a link only when
  it has reserved room in that link's buffer; it frees the room it held
  upstream when its tail has left.  A full buffer therefore stalls the link
  feeding it, and congestion propagates back to the injection FIFO of the
  sender, where it throttles the CPU (seed 000 §6.1's send-blocking factor)
  or the messaging engine.
* **Deadlock freedom.**  Dimension-order routing around a torus ring with
  finite buffers can deadlock (every buffer on the ring full, each packet
  waiting for the next).  Blue Gene/L avoids it with *bubble* flow control:
  a packet may enter a ring (be injected, or turn into a new dimension) only
  if the buffer it enters keeps room for one more full packet after it;
  continuing along the ring needs room for itself only.  Meshes have no
  rings and need no bubble.  ``network.bubble_accounting`` says how the room
  is counted: ``chunks``, each packet its own (exact for packets of one
  size: mixed sizes can split a ring's free room between buffers until none
  holds a packet), or ``packets``, each packet a full packet's room, which
  is deadlock-free for any mix (docs/model.md, "Mixed packet sizes").
* **Routing.**  ``deterministic``: dimension order (x, y, z), ties on a
  torus going ``+``.  ``adaptive`` (BG/L's dynamic routing, seed 000 §5.1):
  every link has a second input buffer, a dynamic virtual channel; at each
  hop a packet takes the dynamic channel of any *minimal* direction that has
  room (the least busy link first), and otherwise waits on the
  dimension-order escape channel with the bubble rule, which keeps the
  whole scheme deadlock-free (escape channels form an acyclic order).
* **Reception.**  A packet that reaches its destination waits for room in
  the receiving process's reception FIFO, which only the receiving CPU
  drains: a slow receiver backs traffic up into the network.
* **FIFOs per dimension.**  ``fifos: shared`` gives each process one
  injection and one reception FIFO.  ``per-dimension`` gives it one of each
  per torus dimension plus one for node-local packets (virtual-node mode):
  a packet is injected into the FIFO of the first dimension of its
  dimension-order route and received into the FIFO of the dimension it
  arrives from.  That is what seed 000 §4.3's pseudo-code assumes ("can send
  a packet on dim", "packet available on dim"), and what its deadlock
  argument for software routing needs: with shared FIFOs, x-packets that a
  node cannot yet receive fill the one reception FIFO and stop the z-packets
  that would drain it (``routed`` then deadlocks once the network is the
  bottleneck, e.g. with slow links).

* **Buffer order** (``network.buffer_order``).  ``pool``: a buffer or an
  injection FIFO is room only, and any packet in it whose next room is free
  may go on.  ``fifo``: packets leave each link buffer (each virtual
  channel) and each injection FIFO in the order they entered it, as the
  hardware's FIFOs deliver them: a packet asks for its next room only once
  every packet ahead of it in its buffer has got its own and started, so a
  packet waiting for a busy link also holds up the packets behind it bound
  for free ones (head-of-line blocking).  Seed 000 §6.2 suspects
  "instantaneous congestion and blocking at individual nodes" behind the
  65,536-node result; this is one such mechanism.

Counters per directed link: wire bytes, busy seconds and blocked seconds
(packet-seconds spent waiting for room downstream before using the link).

Routing, the virtual channel with its bubble, the adaptive choice and the
admission of a packet to a buffer are the router's decisions
(:mod:`gupsim.engines.reference.router`, chosen by name); this module keeps the
links, buffers, clocks and counters, and asks the router at every hop.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import simpy
from gupsim.engines.links import link_stats
from gupsim.engines.order import router_entity
from gupsim.engines.reference.router import make_router
from gupsim.engines.router_rules import admits, grants, held_room
from gupsim.topology.grid import HALF_RING_TIES

if TYPE_CHECKING:
    from gupsim.config.torus import NetworkConfig
    from gupsim.topology.grid import Topology


#: Routes remembered at most (about 430 bytes each, measured: ~110 MB at the cap).
ROUTE_CACHE_LIMIT = 1 << 18


class Packet:
    """One hardware packet; ``message`` ties it to the software message it is part of."""

    __slots__ = ("src", "dst", "chunks", "wire_bytes", "payload", "message", "updates", "rx_fifo", "at_front")

    def __init__(self, src: int, dst: int, chunks: int, wire_bytes: int, payload: int,
                 updates: Any = None, message: Any = None):
        self.src, self.dst = src, dst  # ranks, not nodes
        self.chunks, self.wire_bytes, self.payload = chunks, wire_bytes, payload
        self.updates, self.message = updates, message
        self.rx_fifo: Credits | None = None  # the reception FIFO it holds room in, once it has arrived
        self.at_front: simpy.Event | None = None  # buffer_order fifo: fires when it heads its buffer


class Mailbox:
    """Packets that have fully arrived in a process's reception FIFO.

    One waiter only (the process's own CPU), which is all a node needs and
    costs one event per wake-up instead of SimPy Store's event per item.
    """

    __slots__ = ("env", "items", "_waiter")

    def __init__(self, env: simpy.Environment):
        self.env, self.items, self._waiter = env, deque(), None

    def put(self, item: Any) -> None:
        self.items.append(item)
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.triggered:
            waiter.succeed()

    def wait(self) -> simpy.Event:
        event = self.env.event()
        if self.items:
            event.succeed()
        else:
            self._waiter = event
        return event


class Credits:
    """Room in a buffer, counted in chunks, granted without SimPy events when free.

    Waiters are served in order, in two classes: packets continuing along a
    ring come first, packets entering a ring (which must leave a bubble of
    ``bubble`` chunks free behind them) second.  Keeping the classes apart is
    what makes the bubble rule deadlock-free: a packet already on the ring is
    never stuck behind one that is waiting to get on.

    A pool with a ``slot`` (an escape channel with ``network.bubble_accounting:
    packets``) counts a smaller packet as holding ``slot`` chunks
    (:func:`gupsim.engines.router_rules.held_room`) in everything it takes and
    gets back.
    """

    __slots__ = ("env", "capacity", "free", "slot", "_cont", "_enter", "_watchers", "order", "head_free_at", "owner")

    def __init__(self, env: simpy.Environment, capacity: int, owner: int | None = None, slot: int = 0):
        self.env, self.capacity, self.free, self.slot = env, capacity, capacity, slot
        # the entity whose code a credit return to this pool runs as (gupsim.engines.order)
        self.owner = owner
        # buffer_order fifo: the packets holding room here, oldest first, and when the oldest may leave
        self.order: deque = deque()
        self.head_free_at = 0.0
        self._cont: deque = deque()
        self._enter: deque = deque()
        self._watchers: list[tuple[int, simpy.Event]] = []

    def take(self, chunks: int, bubble: int = 0) -> bool:
        """Take the room now if that is allowed without overtaking a waiter."""
        chunks = held_room(chunks, self.slot)
        if not admits(self.free, chunks, bubble, bool(self._cont), bool(self._enter)):
            return False
        self.free -= chunks
        return True

    def wait(self, chunks: int, bubble: int = 0) -> simpy.Event:
        """An event that fires once the room has been granted (and taken)."""
        event = self.env.event()
        (self._enter if bubble else self._cont).append((event, held_room(chunks, self.slot), bubble))
        self._serve()
        return event

    def when_free(self, chunks: int) -> simpy.Event:
        """An event that fires once at least ``chunks`` are free (nothing is taken)."""
        event = self.env.event()
        if self.free >= chunks and not self.waiting:
            event.succeed()
        else:
            self._watchers.append((min(chunks, self.capacity), event))
        return event

    def give(self, chunks: int) -> None:
        self.free += held_room(chunks, self.slot)
        self._serve()
        if self._watchers:
            ready = [w for w in self._watchers if self.free >= w[0]]
            if ready:
                self._watchers = [w for w in self._watchers if self.free < w[0]]
                for _, event in ready:
                    if not event.triggered:
                        event.succeed()

    def _serve(self) -> None:
        for queue in (self._cont, self._enter):
            while queue:
                event, chunks, bubble = queue[0]
                if not grants(self.free, chunks, bubble):
                    return
                queue.popleft()
                self.free -= chunks
                event.succeed()

    @property
    def waiting(self) -> int:
        return len(self._cont) + len(self._enter)


class FifoInjection:
    """Injection through a per-sender FIFO of credits (``self.injection``), then ``self.launch``.

    Shared by every network with injection FIFOs: the torus link model here and
    the fat tree of :mod:`gupsim.engines.reference.switched_network`.  ``self.injection`` and
    ``self.reception`` hold ``fifo_groups`` FIFOs per rank (one unless a
    network has FIFOs per dimension).
    """

    fifo_groups = 1
    #: Bytes of every packet's chunks taken by a header the network itself adds (gupsim.engines.reference.dma: BG/P's DMA
    #: header; none on BG/L or the fat tree).  An algorithm's data starts after it.
    data_header_bytes = 0
    #: Optional callback on every launched packet (gupsim.engines.reference.telemetry's histograms); None costs nothing.
    on_launch = None

    def _launched(self, pkt: Packet) -> None:
        """Count ``pkt`` as injected.  Every ``launch`` calls it, so an override cannot skip the hook."""
        self.packets_injected += 1
        self.wire_bytes_injected += pkt.wire_bytes
        if self.on_launch is not None:
            self.on_launch(pkt)

    @property
    def max_data_bytes(self) -> int:
        """Application bytes one packet carries: its chunks less :attr:`data_header_bytes`."""
        return self.cfg.max_payload_bytes - self.data_header_bytes

    def injection_fifo(self, pkt: Packet) -> Credits:
        """The injection FIFO ``pkt`` enters."""
        return self.injection[pkt.src]

    def dimension_fifos(self, rank: int, dims: int) -> list[Credits]:
        """The injection FIFO a packet of ``rank`` leaving along dimension 0..dims-1 enters.

        Seed 000 §4.3's "can send a packet on dim": with FIFOs per dimension each dimension has its
        own (the last group is node-local); with shared FIFOs every entry is the rank's one FIFO.
        """
        g = self.fifo_groups
        return [self.injection[rank * g + (d if g > 1 else 0)] for d in range(dims)]

    def reception_fifo(self, pkt: Packet) -> Credits:
        """The reception FIFO ``pkt`` holds room in (it has arrived)."""
        return pkt.rx_fifo if pkt.rx_fifo is not None else self.reception[pkt.dst]

    def try_inject(self, pkt: Packet) -> bool:
        """Put ``pkt`` in its sender's injection FIFO if there is room now."""
        if not self.injection_fifo(pkt).take(pkt.chunks):
            return False
        self.launch(pkt)
        return True

    def inject(self, pkt: Packet):
        """Generator: wait for room in the injection FIFO, then launch ``pkt``."""
        fifo = self.injection_fifo(pkt)
        if not fifo.take(pkt.chunks):
            yield fifo.wait(pkt.chunks)
        self.launch(pkt)

    def request_injection(self, pkt: Packet) -> simpy.Event:
        """Queue for room in the injection FIFO; :meth:`launch` once the event fires."""
        return self.injection_fifo(pkt).wait(pkt.chunks)


class Network(FifoInjection):
    """Directed links, buffers and FIFOs of a machine, with per-link counters."""

    def __init__(self, env: simpy.Environment, topology: "Topology", net: "NetworkConfig",
                 processes_per_node: int = 1, router: str | None = None):
        self.env, self.topology, self.cfg = env, topology, net
        self.ppn = processes_per_node
        self.num_ranks = topology.num_nodes * processes_per_node
        rate = net.link_bytes_per_s
        # The head moves on once the router has cut_through_bytes of it (one chunk unless set).
        self._chunk_s = (net.cut_through_bytes or net.chunk_bytes) / rate
        self._router_s = net.router_delay_ns * 1e-9
        self._rate = rate
        self._adaptive = net.routing == "adaptive"
        #: The half-ring tie rule's code (gupsim.topology.grid.HALF_RING_TIES), as the router's rules take it.
        self.ties_code = HALF_RING_TIES[topology.ties].code
        self._ordered = net.buffer_order == "fifo"
        self._dynamic: list[Credits | None] = [None] * (topology.num_nodes * topology.ports)
        self._link_dst = [int(v) for v in topology.neighbor_array().ravel()]
        slots = topology.num_nodes * topology.ports
        self.link_free_at = [0.0] * slots
        self._buffers: list[Credits | None] = [None] * slots  # made on first use
        self.link_bytes = [0] * slots
        self.link_busy_s = [0.0] * slots
        self.link_blocked_s = [0.0] * slots
        # FIFOs of rank r: r * fifo_groups + group; the groups are the dimensions, then node-local
        self.fifo_groups = topology.ports // 2 + 1 if net.fifos == "per-dimension" else 1
        # node coordinates, for choosing a packet's injection FIFO (only needed per dimension)
        self._coords = [tuple(int(v) for v in c) for c in topology.coords_array()] if self.fifo_groups > 1 else []
        fifos = self.num_ranks * self.fifo_groups
        # a rank's FIFOs belong to the rank (entity r), a link's buffers to the router at its near end (link_owner)
        self.injection = [Credits(env, net.injection_fifo_chunks, i // self.fifo_groups) for i in range(fifos)]
        self.reception = [Credits(env, net.reception_fifo_chunks, i // self.fifo_groups) for i in range(fifos)]
        self.inbox = [Mailbox(env) for _ in range(self.num_ranks)]
        self.packets_injected = 0
        self.wire_bytes_injected = 0
        self.packets_delivered = 0
        self._routes: dict[tuple[int, int], list[int]] = {}
        #: Where each packet's head goes and whether it may go now (gupsim.engines.reference.router).
        self.router = make_router(router or net.router.name, self)

    # ------------------------------------------------------------------ packets

    def packet_chunks(self, payload_bytes: int) -> int:
        chunks = max(1, -(-payload_bytes // self.cfg.chunk_bytes))
        if chunks > self.cfg.max_chunks_per_packet:
            raise ValueError(f"payload of {payload_bytes} B exceeds one packet")
        return chunks

    def make_packet(self, src: int, dst: int, payload_bytes: int, updates: Any = None,
                    message: Any = None, wire_bytes: int | None = None) -> Packet:
        chunks = self.packet_chunks(payload_bytes)
        if wire_bytes is None:
            wire_bytes = chunks * self.cfg.chunk_bytes + self.cfg.wire_overhead_bytes
        return Packet(src, dst, chunks, wire_bytes, payload_bytes, updates, message)

    def node_of(self, rank: int) -> int:
        return rank // self.ppn

    def router_entity(self, node: int) -> int:
        """The entity of ``node``'s router in the event order: after every rank's."""
        return router_entity(self.num_ranks, node)

    def route(self, src_node: int, dst_node: int) -> list[int]:
        key = (src_node, dst_node)
        route = self._routes.get(key)
        if route is None:
            if len(self._routes) >= ROUTE_CACHE_LIMIT:
                self._routes.clear()  # all-to-all traffic on a big machine would otherwise keep N^2 routes
            route = self._routes[key] = self.topology.route(src_node, dst_node)
        return route

    def injection_fifo(self, pkt: Packet) -> Credits:
        """Per dimension: the FIFO of the first dimension of the dimension-order route (last: node-local)."""
        g = self.fifo_groups
        if g == 1:
            return self.injection[pkt.src]
        a, b = self._coords[pkt.src // self.ppn], self._coords[pkt.dst // self.ppn]
        first = next((d for d in range(g - 1) if a[d] != b[d]), g - 1)
        return self.injection[pkt.src * g + first]

    def credits(self, chunks: int, owner: int, slot: int = 0) -> Credits:
        """A new pool of ``chunks`` tokens whose returns run as entity ``owner`` (a router's VCs), counted in
        slots of ``slot`` chunks (an escape VC's, :attr:`Router.escape_slot`) or in chunks (0)."""
        return Credits(self.env, chunks, owner, slot)

    def link_owner(self, link: int) -> int:
        """The entity a credit return to ``link``'s buffers runs as: the router at its near end, which holds the
        tokens (gupsim.engines.order), so a return and the grants it makes stay with the sender."""
        return self.router_entity(link // self.topology.ports)

    def link_dst(self, link: int) -> int:
        """The node at the far end of ``link``."""
        return self._link_dst[link]

    def escape_buffer(self, link: int) -> Credits:
        """The escape channel of ``link`` (its input buffer), made on first use."""
        buf = self._buffers[link]
        if buf is None:
            buf = self._buffers[link] = Credits(self.env, self.cfg.link_buffer_chunks, self.link_owner(link),
                                                self.router.escape_slot)
        return buf

    # ------------------------------------------------------------------ injection

    def launch(self, pkt: Packet) -> None:
        """Send ``pkt``, which already holds its room in the injection FIFO."""
        self._launched(pkt)
        self.env.process(self._transit(pkt)).entity = self.router_entity(self.node_of(pkt.src))

    def release_later(self, delay: float, credits: Credits, chunks: int) -> None:
        """Give ``chunks`` back to ``credits`` after ``delay`` seconds."""
        if delay <= 0:
            credits.give(chunks)
            return
        ev = self.env.timeout(delay)
        ev.entity = credits.owner
        ev.callbacks.append(lambda _e: credits.give(chunks))

    def _transit(self, pkt: Packet):
        """A packet's way from its injection FIFO to its receiver's inbox: at each node the router decides
        (:class:`gupsim.engines.reference.router.Router`), the network serialises it on the link chosen."""
        env, router = self.env, self.router
        held = self.injection_fifo(pkt)
        serial = pkt.wire_bytes / self._rate
        head_s = min(serial, self._chunk_s) + self._router_s
        start = env.now
        ports = self.topology.ports
        node, dst = self.node_of(pkt.src), self.node_of(pkt.dst)
        dim = -1  # the escape ring the packet is in, -1 for none
        arrived_on = self.fifo_groups - 1  # the reception FIFO group: node-local unless a link is used
        token_s = 0.0  # the injection FIFO's room returns with the tail
        if self._ordered:
            held.order.append(pkt)
        while node != dst:
            if self._ordered:
                yield from self._wait_front(held, pkt)
            asked = env.now
            link, buf = router.adaptive(pkt, node, dst) if self._adaptive else (-1, None)
            if buf is not None:
                dim = -1  # on a dynamic channel: re-entering the escape ring needs the bubble again
            else:
                link = router.route(node, dst)
                dim, bubble = router.virtual_channel(link, dim)
                buf = router.escape_channel(link, bubble)
                if not router.admit(pkt, node, link, buf, bubble):
                    yield buf.wait(pkt.chunks, bubble)
                    router.granted(pkt, node, link, bubble)
                    self.link_blocked_s[link] += env.now - asked
            arrived_on = (link % ports) >> 1
            node = self._link_dst[link]
            start = max(env.now, self.link_free_at[link])
            self.link_free_at[link] = start + serial
            self.link_busy_s[link] += serial
            self.link_bytes[link] += pkt.wire_bytes
            self.release_later(start + serial + token_s - env.now, held, pkt.chunks)
            token_s = router.token_return_s  # from now on ``held`` is a link's VC, whose tokens return late
            if self._ordered:
                self._leave(held, start)
                buf.order.append(pkt)
            held = buf
            arrival = env.timeout(start + head_s - env.now)
            env.active_process.entity = self.router_entity(node)  # from now on its code runs at that router
            yield arrival
        # Destination: wait for room in the reception FIFO, then for the tail.
        rec = self.reception[pkt.dst * self.fifo_groups + arrived_on] if self.fifo_groups > 1 \
            else self.reception[pkt.dst]
        pkt.rx_fifo = rec
        if self._ordered:
            yield from self._wait_front(held, pkt)
        if not router.admit(pkt, node, -1, rec, 0):
            yield rec.wait(pkt.chunks)
            router.granted(pkt, node, -1, 0)
        if self._ordered:
            self._leave(held, env.now)
        tail = start + serial + self._router_s - env.now
        # The buffer's room comes back with the tail, and no sooner than a hop (or the packet's serialisation, if
        # shorter) after the packet starts into the reception FIFO: the time its head takes through the router.
        # The floor is what gives the event order its lookahead (gupsim.engines.order); it binds only when the
        # packet waited for reception room past its tail, or is shorter than a hop.
        self.release_later(max(tail, min(serial, head_s)) + token_s, held, pkt.chunks)
        if tail > 0:
            yield env.timeout(tail)
        self.packets_delivered += 1
        self.inbox[pkt.dst].put(pkt)

    def _wait_front(self, held: Credits, pkt: Packet):
        """Generator (``buffer_order: fifo``): until ``pkt`` heads ``held`` and the packet before it has left."""
        if held.order[0] is not pkt:
            pkt.at_front = self.env.event()
            yield pkt.at_front
        wait = held.head_free_at - self.env.now
        if wait > 0:
            yield self.env.timeout(wait)

    @staticmethod
    def _leave(held: Credits, at: float) -> None:
        """The head of ``held`` leaves it at ``at`` (it has its next room); the next packet heads it then."""
        held.order.popleft()
        held.head_free_at = at
        if held.order:
            nxt = held.order[0]
            if nxt.at_front is not None:
                event, nxt.at_front = nxt.at_front, None
                event.succeed()

    def dynamic_channel(self, link: int) -> Credits:
        """The dynamic virtual channel of ``link`` (adaptive routing), made on first use."""
        vc = self._dynamic[link]
        if vc is None:
            vc = self._dynamic[link] = Credits(self.env, self.cfg.link_buffer_chunks, self.link_owner(link))
        return vc

    def consumed(self, pkt: Packet) -> None:
        """The receiving CPU has read ``pkt`` out of its reception FIFO."""
        self.reception_fifo(pkt).give(pkt.chunks)

    # ------------------------------------------------------------------ counters

    def link_stats(self) -> dict[str, Any]:
        return link_stats(self.topology, self.link_bytes, self.link_busy_s, self.link_blocked_s, self.link_free_at,
                          self.env.now)
