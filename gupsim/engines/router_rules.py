"""The torus router's decisions as pure functions, written once for both engines.

Seed 000 §5.1's Blue Gene/L router makes four kinds of decision for the head of a packet at a node, and one
for the room it leaves behind.  Each is a plain function of integers and floats here, with no engine state:

* **route and output port** (:func:`ring_offset`, :func:`output_port`): dimension order, x then y then z,
  the shorter way round a ring and, exactly half-way round, the way the half-ring tie rule says
  (:data:`gupsim.topology.grid.HALF_RING_TIES`, by its ``code``);
* **virtual channel** (:func:`entry_bubble`): the escape channel's bubble rule.  A packet entering a ring
  (injected, turning into a new dimension, or leaving a dynamic channel) must leave a whole packet's room
  free behind it; one continuing along the ring needs room for itself only.  BG/L keeps its rings
  deadlock-free this way instead of with a dateline (BookSim2's ``dim_order_torus`` and SST merlin's
  ``torus`` change VC at the dateline; gupsim's models have no dateline VC, and ``cray-t3e.yaml``'s bubble
  stands in for the T3E's);
* **the room a packet holds** (:func:`held_room`) on an escape channel: its own chunks, or a whole packet's
  room with ``network.bubble_accounting: packets`` (Puente et al.'s bubble in packet slots), which keeps
  the rule deadlock-free when packets of several sizes share a ring (docs/model.md, "Mixed packet sizes");
* **the adaptive choice** (:func:`minimal_ports`, :func:`less_busy`): among the minimal directions whose
  dynamic channel has room, the link that frees soonest, the first such in port order on a tie;
* **BG/L's VC router** (:func:`more_tokens`, :func:`fewer_waiters`): the dynamic VC with the most free
  downstream tokens in the hint-bit directions, and which of a link's escape VCs a packet asks for;
* **allocation between inputs competing for one output** (:func:`admits`, :func:`grants`): a buffer serves
  its waiters first come first served in two classes, continuing packets before entering ones (SST merlin
  keeps the same split between its crossbar arbiter and the port's space check; here the space check is
  :func:`grants` and the arbiter is the order of the two queues), and a packet arriving now may take room
  only if that overtakes no waiter;
* **token return**: room a packet held comes back when its tail has left the buffer; its time is the
  engines' (serialisation), the amount is the packet's chunks, so there is no decision to share.

The reference engine calls these from :class:`gupsim.engines.reference.router.Router`; the fast engine
compiles the same functions with Numba (:mod:`gupsim.engines.fast.router`).  They take and return only
scalars so that one source serves both: a Python int/float in one, a machine word in the other; and none calls
another, since Numba compiles each one alone (a call to a plain Python function does not compile).
"""

from __future__ import annotations


def ring_offset(a: int, b: int, length: int, wraps: bool, ties: int) -> int:
    """Signed steps from coordinate ``a`` to ``b`` in one dimension of ``length`` (0: same coordinate).

    On a ring (``wraps``) the shorter way round; a tie half-way round goes by rule ``ties``, the ``code`` of
    :data:`gupsim.topology.grid.HALF_RING_TIES`: 0 (plus) always +, 1 (source-parity) + when the +
    neighbour's coordinate (a+1) mod length is odd."""
    if not wraps:
        return b - a
    delta = b - a  # (b - a) mod length without a division: both are in [0, length)
    if delta < 0:
        delta += length
    if 2 * delta == length:
        if ties == 0:
            return delta
        nxt = a + 1 if a + 1 < length else 0
        return delta if nxt & 1 else -delta
    return delta if 2 * delta < length else delta - length


def output_port(dim: int, offset: int) -> int:
    """The port leaving along ``dim`` towards a nonzero ``offset``: 2 dim the + way, 2 dim + 1 the - way."""
    return 2 * dim if offset > 0 else 2 * dim + 1


def minimal_ports(dim: int, offset: int, length: int, wraps: bool) -> tuple[int, int]:
    """The ports of ``dim`` that bring a packet ``offset`` steps away one hop closer: (port, -1), or both
    directions of a ring exactly half-way round, or (-1, -1) if ``offset`` is 0."""
    if offset == 0:
        return -1, -1
    if wraps and 2 * abs(offset) == length:
        return 2 * dim, 2 * dim + 1
    return (2 * dim if offset > 0 else 2 * dim + 1), -1  # output_port(), spelled out (see admits)


def less_busy(free_at: float, best_free_at: float, have_best: bool) -> bool:
    """The adaptive choice's order: a candidate link beats the best so far if it frees sooner (ties keep the
    earlier port)."""
    return not have_best or free_at < best_free_at


def more_tokens(free: int, best_free: int, have_best: bool) -> bool:
    """BG/L's adaptive choice (docs/research/bgl-router-facts.md rows 5, 12): a dynamic VC beats the
    best so far if its sender holds more of its tokens (ties keep the earlier port, then the earlier VC)."""
    return not have_best or free > best_free


def fewer_waiters(waiting: int, free: int, best_waiting: int, best_free: int, have_best: bool) -> bool:
    """The escape VC a packet queues for among a link's several: the one with fewer packets waiting for it,
    then the one with more free tokens (ties keep the earlier VC)."""
    if not have_best or waiting < best_waiting:
        return True
    return waiting == best_waiting and free > best_free


def entry_bubble(link_dim: int, ring_dim: int, bubble: int) -> int:
    """The chunks a packet must leave free behind it on the escape channel of a link along ``link_dim``:
    ``bubble`` when it enters that ring (it is on ``ring_dim``, -1 for none), else 0."""
    return bubble if link_dim != ring_dim else 0


def held_room(chunks: int, slot: int) -> int:
    """The room a packet of ``chunks`` takes in a pool whose room is counted in slots of ``slot`` chunks:
    ``slot`` if the packet is smaller, else its own chunks (``slot`` 0 counts chunks).

    Escape channels count in full-packet slots with ``network.bubble_accounting: packets``; every other pool,
    and every escape channel with ``chunks``, counts chunks.  Counted in chunks, a ring's free room can split
    between buffers into pieces smaller than the packets waiting for it, and the ring stops with room free
    (docs/model.md, "Mixed packet sizes"); counted in slots, free room comes in whole packets and the bubble
    rule's proof for one packet size holds.  The rule is idempotent, so either engine may apply it at any
    layer."""
    return slot if chunks < slot else chunks


def grants(free: int, chunks: int, bubble: int) -> bool:
    """Whether ``free`` chunks of room let a packet of ``chunks`` in, leaving ``bubble`` free behind it."""
    return free >= chunks + bubble


def admits(free: int, chunks: int, bubble: int, continuing_wait: bool, entering_wait: bool) -> bool:
    """Whether a packet arriving now may take room at once: enough room (:func:`grants`) and no waiter it
    would overtake.  A continuing packet (``bubble`` 0) waits only behind continuing ones; an entering one
    behind every waiter, so a packet on the ring is never held up by one waiting to get on."""
    if continuing_wait or (bubble != 0 and entering_wait):
        return False
    return free >= chunks + bubble  # grants(), spelled out: Numba compiles each rule alone


# ------------------------------------------------------------------ the decision trace
# The kinds of decision a router reports to its trace hook (both engines, the same codes): the conformance
# tests (tests/engines/test_router_conformance.py) compare the two engines' traces row by row.

#: Room taken at once on the escape channel of ``port`` (``bubble``: what it had to leave free).
DECISION_ESCAPE = 0
#: Room taken at once on the dynamic channel of ``port`` (adaptive routing).
DECISION_DYNAMIC = 1
#: Refused on the escape channel of ``port``: the packet waits in its queue (entering if ``bubble`` > 0).
DECISION_WAIT = 2
#: A waiting packet granted its room on ``port`` (the allocator's decision, made when room came back).
DECISION_GRANT = 3
#: At its destination: room taken in the reception FIFO at once (``port`` -1).
DECISION_EJECT = 4
#: At its destination: waits for room in the reception FIFO.
DECISION_EJECT_WAIT = 5
