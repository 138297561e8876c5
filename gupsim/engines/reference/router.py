"""The torus router: the decisions a packet's head meets at each node, behind one interface.

Seed 000 §5.1's Blue Gene/L router, as :class:`gupsim.engines.reference.torus_network.Network` moves packets:
the network owns the links, buffers and clocks (serialisation, cut-through, counters); the :class:`Router` owns
every decision about where a packet goes and whether it may go now.  The split follows BookSim2 (a ``Router``
subclass and a routing function chosen by name, the allocator and arbiters apart) and SST merlin (the
topology's ``route`` sets port and VC; the space check on the output port and the crossbar arbiter are separate
interfaces).  The decisions are the pure functions of :mod:`gupsim.engines.router_rules`, which the fast
engine compiles into its router kernel (:mod:`gupsim.engines.fast.router`), so both engines decide with one
source.  Routers are registered by name (:data:`ROUTERS`): ``bluegene-l`` (seed 000 §5.1), and ``bgl-vc``,
Blue Gene/L's virtual channels and tokens (both also in the fast engine: :data:`gupsim.engines.fast.core.ROUTER_KERNELS`).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from gupsim.base.errors import UnknownNameError
from gupsim.engines import router_rules as rules

# The network's packets, buffers (Credits) and the network itself are gupsim.engines.reference.torus_network's,
# which imports this module: they are typed Any here, so that the two do not import each other.
Packet = Credits = Network = Any

#: A decision trace hook: ``(time, node, packet, kind, port, bubble)``, ``kind`` one of ``router_rules.DECISION_*``.
TraceHook = Callable[[float, int, Packet, int, int, int], None]


class Router:
    """The contract every torus router keeps (the network calls nothing else of it).

    A router decides for the head of packet ``pkt`` at ``node`` bound for node ``dst``; the network then
    serialises the packet on the link chosen, and returns the room it held upstream once its tail has left.

    * :meth:`adaptive` ``(pkt, node, dst) -> (link, channel)``: with adaptive routing, a minimal link whose
      dynamic channel has room now, with that room taken; ``(-1, None)`` sends the packet to the escape channel.
    * :meth:`route` ``(node, dst) -> link``: the escape channel's next link (dimension order).
    * :meth:`virtual_channel` ``(link, ring_dim) -> (dim, bubble)``: the escape channel's rule for ``link``
      given the ring the packet is on (-1: none): the ring it will be on, and the chunks it must leave free
      behind it (the bubble, when it enters a ring).
    * :meth:`escape_channel` ``(link, bubble) -> buffer``: which of ``link``'s escape VCs the packet asks for
      (the network's one input buffer of ``link`` unless a router has several).
    * :meth:`admit` ``(pkt, node, link, buffer, bubble) -> bool``: allocation for a packet arriving now:
      room taken at once, or False and the packet waits in ``buffer``'s queue (``buffer.wait``), where the
      buffer grants waiters continuing packets first, then entering ones, each in arrival order
      (:meth:`gupsim.engines.reference.torus_network.Credits.give`); ``link`` -1 is the reception FIFO.
    * :meth:`granted` ``(pkt, node, link, bubble)``: a waiting packet was granted its room.
    * the token return is the network's: ``chunks`` come back ``start + serialisation`` (plus
      :attr:`token_return_s` for a link's VC) after the packet starts on its next link
      (:meth:`gupsim.engines.reference.torus_network.Network.release_later`).

    :attr:`trace`, if set, hears every decision (:data:`TraceHook`); None costs one attribute test.
    """

    name: ClassVar[str] = "abstract"
    #: Seconds from a packet's tail leaving a link's VC to its tokens being back at the sender.
    token_return_s: float = 0.0
    #: The slot an escape channel counts a packet's room in (``network.bubble_accounting: packets``), 0 for
    #: chunks; the network makes its escape buffers with it (:func:`gupsim.engines.router_rules.held_room`).
    escape_slot: int = 0

    def __init__(self, network: Network) -> None:
        self.network = network
        self.trace: TraceHook | None = None

    def adaptive(self, pkt: Packet, node: int, dst: int) -> tuple[int, Credits]:
        raise NotImplementedError

    def route(self, node: int, dst: int) -> int:
        raise NotImplementedError

    def virtual_channel(self, link: int, ring_dim: int) -> tuple[int, int]:
        raise NotImplementedError

    def escape_channel(self, link: int, bubble: int) -> Credits:
        return self.network.escape_buffer(link)

    def admit(self, pkt: Packet, node: int, link: int, buffer: Credits, bubble: int) -> bool:
        raise NotImplementedError

    def granted(self, pkt: Packet, node: int, link: int, bubble: int) -> None:
        raise NotImplementedError


class BlueGeneLRouter(Router):
    """Blue Gene/L's torus router (seed 000 §5.1): dimension-order escape channels with the bubble rule and,
    with ``routing: adaptive``, one dynamic channel per link taken on the least busy minimal direction."""

    name = "bluegene-l"

    def __init__(self, network: Network) -> None:
        super().__init__(network)
        topo = network.topology
        self._ports = topo.ports
        self._shape, self._wraps = topo.shape, topo.wraps
        self._ties = network.ties_code
        self._coords = [tuple(int(v) for v in c) for c in topo.coords_array()]
        cfg = network.cfg
        #: Chunks an entering packet must leave free behind it (0: no bubble rule, a mesh or flow_control none).
        self.bubble = cfg.bubble_chunks(topo.wraps)
        #: The slot an escape channel counts a packet's room in (:func:`rules.held_room`), 0 for its own chunks.
        self.escape_slot = cfg.escape_slot_chunks(topo.wraps)

    def _offsets(self, node: int, dst: int) -> list[int]:
        a, b = self._coords[node], self._coords[dst]
        return [rules.ring_offset(a[d], b[d], self._shape[d], self._wraps, self._ties) for d in range(3)]

    def route(self, node: int, dst: int) -> int:
        for d, off in enumerate(self._offsets(node, dst)):
            if off:
                return node * self._ports + rules.output_port(d, off)
        return -1

    def adaptive(self, pkt: Packet, node: int, dst: int) -> tuple[int, Credits]:
        net = self.network
        free_at = net.link_free_at
        best = -1
        for d, off in enumerate(self._offsets(node, dst)):
            for port in rules.minimal_ports(d, off, self._shape[d], self._wraps):
                if port < 0:
                    continue
                link = node * self._ports + port
                vc = net.dynamic_channel(link)
                if vc.free >= pkt.chunks and not vc.waiting and \
                        rules.less_busy(free_at[link], free_at[best], best >= 0):
                    best = link
        if best < 0:
            return -1, None
        vc = net.dynamic_channel(best)
        vc.take(pkt.chunks)
        if self.trace is not None:
            self.trace(net.env.now, node, pkt, rules.DECISION_DYNAMIC, best % self._ports, 0)
        return best, vc

    def virtual_channel(self, link: int, ring_dim: int) -> tuple[int, int]:
        dim = (link % self._ports) >> 1
        return dim, rules.entry_bubble(dim, ring_dim, self.bubble)

    def admit(self, pkt: Packet, node: int, link: int, buffer: Credits, bubble: int) -> bool:
        ok = buffer.take(pkt.chunks, bubble)
        if self.trace is not None:
            kind = (rules.DECISION_ESCAPE if ok else rules.DECISION_WAIT) if link >= 0 else \
                (rules.DECISION_EJECT if ok else rules.DECISION_EJECT_WAIT)
            self.trace(self.network.env.now, node, pkt, kind, link % self._ports if link >= 0 else -1, bubble)
        return ok

    def granted(self, pkt: Packet, node: int, link: int, bubble: int) -> None:
        if self.trace is not None:
            self.trace(self.network.env.now, node, pkt, rules.DECISION_GRANT,
                       link % self._ports if link >= 0 else -1, bubble)


class BglVcRouter(BlueGeneLRouter):
    """Blue Gene/L's torus router as built (docs/research/bgl-router-facts.md rows 2-7, 12).

    * **Virtual channels.**  Each input link has ``router.escape_vcs`` bubble escape VCs (BG/L: one, BN) and,
      with ``routing: adaptive``, ``router.dynamic_vcs`` dynamic VCs (BG/L: D0, D1), each its own pool of
      ``router.vc_depth_chunks`` tokens, each a FIFO of its own with ``buffer_order: fifo`` (head-of-line
      blocking per VC, not per link).
    * **Token flow control.**  The sender holds a VC's tokens (its :class:`Credits`); they come back
      ``router.token_return_ns`` after the packet's tail has left the VC.
    * **Bubble escape.**  Deterministic packets, and dynamic ones that find no dynamic VC, take an escape VC
      with the bubble rule (entering or turning leaves a full packet free; assumed, facts row 6).  Among a
      link's escape VCs a packet asks for the one with fewest waiters, then most tokens
      (:func:`rules.fewer_waiters`).
    * **Adaptivity.**  A dynamic packet may move only in the direction its hint bits allow in each
      dimension (facts row 12: one per dimension, half-ring ties as ``network.half_ring_ties`` says), and
      takes the dynamic VC with the most free tokens (:func:`rules.more_tokens`).
    * **Arbitration** between packets waiting for one VC: arrival order, continuing before entering
      (``router.arbitration: arrival``).
    """

    name = "bgl-vc"

    def __init__(self, network: Network) -> None:
        super().__init__(network)
        vc = network.cfg.router
        self.escape_vcs, self.dynamic_vcs, self.depth = vc.escape_vcs, vc.dynamic_vcs, vc.vc_depth_chunks
        self.token_return_s = vc.token_return_ns * 1e-9
        slots = self.network.topology.num_nodes * self._ports
        #: Link ``l``'s escape VC ``v`` is ``escape[l * escape_vcs + v]``, its dynamic VC ``v`` likewise.
        self.escape: list[Credits | None] = [None] * (slots * self.escape_vcs)
        self.dynamic: list[Credits | None] = [None] * (slots * self.dynamic_vcs)

    def _vc(self, pools: list, link: int, per_link: int, v: int) -> Credits:
        i = link * per_link + v
        pool = pools[i]
        if pool is None:
            net = self.network
            slot = self.escape_slot if pools is self.escape else 0  # only escape VCs keep the bubble
            pool = pools[i] = net.credits(self.depth, net.link_owner(link), slot)
        return pool

    def escape_channel(self, link: int, bubble: int) -> Credits:
        best, best_wait, best_free = 0, 0, 0
        for v in range(self.escape_vcs):
            vc = self._vc(self.escape, link, self.escape_vcs, v)
            if rules.fewer_waiters(vc.waiting, vc.free, best_wait, best_free, v > 0):
                best, best_wait, best_free = v, vc.waiting, vc.free
        return self._vc(self.escape, link, self.escape_vcs, best)

    def adaptive(self, pkt: Packet, node: int, dst: int) -> tuple[int, Credits]:
        best, best_link, best_free = None, -1, 0
        for d, off in enumerate(self._offsets(node, dst)):
            if not off:
                continue
            link = node * self._ports + rules.output_port(d, off)  # the hint bit of dimension d
            for v in range(self.dynamic_vcs):
                vc = self._vc(self.dynamic, link, self.dynamic_vcs, v)
                if vc.free >= pkt.chunks and not vc.waiting and \
                        rules.more_tokens(vc.free, best_free, best is not None):
                    best, best_link, best_free = vc, link, vc.free
        if best is None:
            return -1, None
        best.take(pkt.chunks)
        if self.trace is not None:
            self.trace(self.network.env.now, node, pkt, rules.DECISION_DYNAMIC, best_link % self._ports, 0)
        return best_link, best

    def pools(self) -> list[Credits]:
        """Every VC made so far (for checks that all tokens came back)."""
        return [p for p in self.escape + self.dynamic if p is not None]


#: The routers by name (``Network(router=...)``, ``network.router.name``).
ROUTERS: dict[str, type[Router]] = {r.name: r for r in (BlueGeneLRouter, BglVcRouter)}


def router_class(name: str) -> type[Router]:
    """The router registered as ``name``; an unknown name is refused listing the registered ones."""
    if name not in ROUTERS:
        raise UnknownNameError("router", name, list(ROUTERS))
    return ROUTERS[name]


def make_router(name: str, network: Any) -> Router:
    return router_class(name)(network)
