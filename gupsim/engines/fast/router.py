"""The fast engine's router kernel: the torus router's decisions, compiled, behind one declared interface.

Seed 000 §5.1's router (the reference engine's :class:`gupsim.engines.reference.router.Router` states the
contract) decides, for the head of a packet at a node: its output port (dimension order), its virtual channel
(the escape channel's bubble rule, or adaptive routing's dynamic channel), and, where inputs compete for one
output, who gets the room.  The decisions themselves are the pure functions of :mod:`gupsim.engines.router_rules`,
compiled here; the transit in :mod:`gupsim.engines.fast.core` calls the router only through the five functions
:class:`RouterKernel` declares (``route``, ``adaptive``, ``vc``, ``escape_channel``, ``admit``, ``trace``), as
BookSim2 calls its router's routing function and allocator, and SST merlin keeps ``Topology::route`` apart from
the port's space check (:func:`admit` here).

Why module functions and not a tuple of functions handed down the loop, as a kernel's loop takes its CPU step:
the CPU step is handed to an inlined loop and never leaves it, but the transit's helpers are not inlined, and a
compiled function passed on as a value to one is a Python object address in the machine code, which Numba
refuses to cache (``has_dynamic_globals``, measured on this module's first form): every run would compile
the kernels afresh.  So the interface is a set of module names: the pure decisions here, and the three that
take or read a credit pool's room (``adaptive``, ``escape_channel``, ``admit``) in :mod:`gupsim.engines.fast.core`,
beside the pools they touch (this module stays below :mod:`gupsim.engines.fast.credits` in the import graph,
which is at its depth cap); ``core.ROUTER_KERNELS`` registers the routers by name.

**Two routers, one compiled transit.**  ``bluegene-l`` and ``bgl-vc`` share the route, the bubble rule and the
allocator; they differ in how many VCs a link has (its pools), the tokens per VC, the token return delay, and
adaptive routing's choice (the least busy minimal link, or the dynamic VC with most tokens in the hint-bit
directions).  The first three are data (``I_ESCAPE_VCS``, ``I_DYNAMIC_VCS``, the pools' room, ``F_TOKEN_S``);
the choice is a branch on ``I_ROUTER``, taken once per adaptive hop.  Choosing the router by the type of the state
handed down (an ``overload``, as :func:`trace` is chosen) would compile every kernel once per router, doubling the
cold compile (35-60 s a kernel) for a branch that a CPU predicts every time; bluegene-l's events per second with
the branch are measured in docs/performance-log.md.

The state a decision reads travels as :class:`Transit`, a named tuple of the network's tables by component
(packets, pools, links, ranks, parameters, queue, counters), never as a list of positional arrays.  A helper
that Numba does not inline copies its arguments at each call; :class:`Transit` holds exactly the tables the
transit reads, so passing it costs what passing those arrays did (the whole
:class:`gupsim.engines.fast.contract.Network` at every hop made the kernels 7-23% slower,
docs/performance-log.md).

**Decision trace.**  The transit calls :func:`trace` at every decision with ``(log, now, node, packet, kind,
port, bubble)`` (``kind``: ``router_rules.DECISION_*``).  ``log`` is ``None`` in every run
(:func:`gupsim.engines.fast.core.network_event`): :func:`trace` then compiles to nothing, chosen by the type
of ``log``, so the trace costs nothing when off.  The conformance tests
(``tests/engines/test_router_conformance.py``) pass a float array of :data:`TRACE_COLS` columns
(:func:`new_trace_log`) to :func:`gupsim.engines.fast.core.routed_event`, a specialisation of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import overload

from gupsim.engines import router_rules as rules
from gupsim.engines.fast.contract import Network
from gupsim.engines.fast.tables import I_BUBBLE, I_TIES, I_WRAPS, I_X

_compile = njit(cache=True, inline="always", _nrt=False)

ring_offset = _compile(rules.ring_offset)
output_port = _compile(rules.output_port)
minimal_ports = _compile(rules.minimal_ports)
less_busy = _compile(rules.less_busy)
more_tokens = _compile(rules.more_tokens)
fewer_waiters = _compile(rules.fewer_waiters)
entry_bubble = _compile(rules.entry_bubble)


#: The :class:`gupsim.engines.fast.contract.Network` fields a packet's transit reads, in :class:`Transit`'s order.
TRANSIT_FIELDS = ("packets", "packet_times", "pools", "deferred", "ranks", "link_times", "link_bytes",
                  "int_params", "float_params", "neighbors", "coords", "queue", "counters", "node_part", "outbox")
# Typed as Network's fields are, and documented there: a router kernel specialises on these tables only.
Transit = NamedTuple("Transit", [(name, Network.__annotations__[name]) for name in TRANSIT_FIELDS])
Transit.__doc__ = """The tables a packet's transit reads: :data:`TRANSIT_FIELDS` of
:class:`gupsim.engines.fast.contract.Network` (whose comments say what each holds)."""


@njit(cache=True, inline="always", _nrt=False)
def transit_of(net):
    """The :class:`Transit` of a :class:`gupsim.engines.fast.contract.Network`."""
    return Transit(net.packets, net.packet_times, net.pools, net.deferred, net.ranks, net.link_times,
                   net.link_bytes, net.int_params, net.float_params, net.neighbors, net.coords, net.queue,
                   net.counters, net.node_part, net.outbox)


@njit(cache=True, inline="always", _nrt=False)
def dimension_order_port(t, node, dst):
    """Route and output port: the first port of the dimension-order route from ``node`` to ``dst`` (-1 if
    they are the same node)."""
    ip, coords = t.int_params, t.coords
    for d in range(3):
        off = ring_offset(coords[node, d], coords[dst, d], ip[I_X + d], ip[I_WRAPS], ip[I_TIES])
        if off != 0:
            return output_port(d, off)
    return -1


@njit(cache=True, inline="always", _nrt=False)
def escape_bubble(t, port, ring_dim):
    """The escape channel's rule for a link leaving by ``port``, the packet being on ring ``ring_dim`` (-1:
    none): (the ring it will be on, the chunks it must leave free behind it)."""
    d = port >> 1
    return d, entry_bubble(d, ring_dim, t.int_params[I_BUBBLE])


#: A trace row: time, node, packet row, decision kind (``router_rules.DECISION_*``), port, bubble.
TRACE_COLS = 6


def trace(log, now, node, p, kind, port, bubble):
    """Report one decision to ``log``: nothing if it is None, else :func:`record_trace`."""


@overload(trace, inline="always", jit_options={"_nrt": False})
def _trace(log, now, node, p, kind, port, bubble):
    if isinstance(log, types.NoneType):
        return lambda log, now, node, p, kind, port, bubble: None
    return lambda log, now, node, p, kind, port, bubble: record_trace(log, now, node, p, kind, port, bubble)


@njit(cache=True, _nrt=False)
def record_trace(log, now, node, p, kind, port, bubble):
    """Append one decision to ``log`` (row 0 column 0 counts the rows written after it; rows past its end are
    dropped and counted)."""
    n = int(log[0, 0]) + 1
    log[0, 0] = n
    if n < log.shape[0]:
        row = log[n]
        row[0], row[1], row[2], row[3], row[4], row[5] = now, node, p, kind, port, bubble


def new_trace_log(rows: int) -> np.ndarray:
    """An empty decision log with room for ``rows`` decisions."""
    return np.zeros((rows + 1, TRACE_COLS))


@dataclass(frozen=True)
class RouterKernel:
    """One router's compiled decisions (the interface :mod:`gupsim.engines.fast.core`'s transit calls).

    * ``code``: the int parameter ``I_ROUTER`` that selects this router's rules where the routers differ;
    * ``channels(network_config) -> (escape VCs, dynamic VCs, tokens per VC, token return seconds)``: the credit
      pools each link gets (:mod:`gupsim.engines.fast.tables`' ``I_ESCAPE_VCS``, ``I_DYNAMIC_VCS``, ``F_TOKEN_S``);
    * ``route(t, node, dst) -> port``: the escape channel's output port (-1 at the destination);
    * ``adaptive(t, node, dst, chunks) -> (link, pool)``: a dynamic VC's link and pool with its room taken, or
      (-1, -1) (always, unless the network routes adaptively);
    * ``vc(t, port, ring_dim) -> (dim, bubble)``: the ring the packet will be on, and the bubble it must leave;
    * ``escape_channel(t, link, bubble) -> pool``: which of the link's escape VCs the packet asks for;
    * ``admit(t, pool, chunks, bubble) -> bool``: room taken now, or the packet must wait in the pool's queue
      (continuing waiters before entering ones; :func:`gupsim.engines.fast.credits.give` grants them);
    * ``trace(log, now, node, packet, kind, port, bubble)``: the decision trace (nothing when ``log`` is None).

    ``t`` is a :class:`Transit`.
    """

    name: str
    code: int
    channels: Any
    route: Any
    adaptive: Any
    vc: Any
    escape_channel: Any
    admit: Any
    trace: Any
