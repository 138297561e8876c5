"""The canonical event order: one order of a run's events, kept by every engine.

Both engines process the events of a run in one order, defined here and nowhere else
(docs/architecture.md, "Event order").  An event is keyed

    (time, phase, entity, seq)

* ``time``: when it happens.
* ``phase``: :data:`URGENT` (0: a process starting, SimPy's Initialize), :data:`NORMAL` (1: everything else),
  :data:`END_OF_INSTANT` (2: after every other event of its instant; the stopping rule's end of the run, and
  where an allocator decides once every arrival of the instant is in).
* ``entity``: the part of the machine that scheduled it, i.e. whose code was running: rank ``r`` is entity
  :func:`rank_entity` ``(r) = r``, the router of node ``n`` is entity :func:`router_entity` ``= ranks + n``.
  A CPU's event runs as its rank; a packet's event (its head reaching a router, a grant, its tail, its turn
  in a buffer) as the router its head is at; a credit return as its pool's owner (a link's buffers: the
  router at the link's near end, the sender, which holds the tokens; a rank's FIFOs: the rank).
* ``seq``: how many events that entity had scheduled before: a counter each entity keeps for itself.

**The lookahead.**  With that ownership, whatever one node's event does to another node happens at least
``L`` later, ``L`` the smaller of a head's hop (one chunk, or the cut-through bytes, plus the router delay)
and the shortest packet's serialisation: a head reaches the next router a hop after it could start; a
buffer's room comes back once the tail has left it, a serialisation after the packet started onto its next
link, or, at its destination, with the tail and no sooner than a hop (or its serialisation, if shorter)
after it started into the reception FIFO.  A return is scheduled by the far end and runs as the near end,
so its grants stay with the waiters they wake.  A partitioned engine may run windows of width ``L`` in
parallel (docs/design/partitioned-engine.md): 251.4 ns on Blue Gene/L, 51.9 ns on Blue Gene/P.

Events pop in increasing key.  Nothing in the key is global: not SimPy's event id, not a packet's row in a
table allocated from a shared free list.  So whichever part of a partitioned machine owns an entity computes
its keys alone, and the run stays a pure function of (config, seed) however the machine is split.  Ties in
time and phase go to the lower entity; an entity's own events keep their order of scheduling.

The reference engine keeps the order in its SimPy environment
(:class:`gupsim.engines.reference.simulation.CountingEnvironment`, a tuple key); the fast engine packs
(phase, entity, seq) into one int64 (:func:`order_key`, the layout below) beside the time's bits
(:mod:`gupsim.engines.fast.events`).  ``tests/engines/test_order.py`` checks that the packed key orders as
the tuple does.

The entity numbering is engine-neutral, so :func:`rank_entity` and :func:`router_entity` are written once
and callable from Python and from Numba kernels alike (``register_jitable``).
"""

from __future__ import annotations

from numba.extending import register_jitable

URGENT, NORMAL = 0, 1  # SimPy's priorities: process initialisation before ordinary events
#: After every other event of its instant, those scheduled later included.
END_OF_INSTANT = 2

# A packed key is ``phase << PHASE_SHIFT | entity << SEQ_BITS | seq``: 24 bits of entity (16M ranks and
# routers), 37 of the entity's own sequence (1.4e11 events scheduled by one entity; none ever renumbers),
# and the phase above them, all below the int64's sign bit.
SEQ_BITS = 37
ENTITY_BITS = 24
PHASE_SHIFT = SEQ_BITS + ENTITY_BITS
MAX_ENTITIES = 1 << ENTITY_BITS
SEQ_MASK = (1 << SEQ_BITS) - 1


@register_jitable(inline="always")
def rank_entity(rank):
    """The entity of rank ``rank``: ranks come first."""
    return rank


@register_jitable(inline="always")
def router_entity(num_ranks, node):
    """The entity of node ``node``'s router: after every rank's."""
    return num_ranks + node


@register_jitable(inline="always")
def order_key(phase, entity, seq):
    """(phase, entity, seq) packed into one int64 that orders as the tuple does."""
    return (phase << PHASE_SHIFT) | (entity << SEQ_BITS) | seq


def entities(num_ranks: int, num_nodes: int) -> int:
    """How many entities a machine of ``num_ranks`` ranks on ``num_nodes`` nodes has."""
    return num_ranks + num_nodes
