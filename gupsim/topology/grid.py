"""Direct-network topologies: the Blue Gene/L 3D torus and its 3D-mesh partitions.

A node of Blue Gene/L has six nearest-neighbour links, one in each direction
of each of the three dimensions (seed 000 §5.1).  The network model therefore
only needs to know, for every node and every *port*, which node the link leads
to.  Port ``2*d`` is the ``+`` direction of dimension ``d`` and port ``2*d+1``
the ``-`` direction, with ``x, y, z = 0, 1, 2``.  Nodes are numbered with x
fastest: ``id = x + X*(y + Y*z)``.  A directed link is named by the port it
leaves from, ``link_id = node*6 + port``, so link state can live in flat arrays
of ``num_link_slots`` entries; slots of links that do not exist (mesh faces,
dimensions of length 1) are simply never used.

Two topologies are registered:

* ``"torus"`` (:class:`Torus3D`): every dimension wraps around.  This is what
  partitions of 512 nodes and more are (seed 000 Table 2).
* ``"mesh"`` (:class:`Mesh3D`): no wrap-around links.  Partitions up to 256
  nodes are meshes (footnote to seed 000 Table 2).

Network bound (seed 000 §3.2).  Random updates are uniform over the nodes, so
for any cut ``(S, S̄)`` the traffic from S to S̄ is proportional to
``|S||S̄|/N`` while its capacity is ``C(S, S̄)``.  That gives eq. (2),
``GUPS <= (2N/b) * alpha(G)``, with the *smallest edge expansion*
``alpha(G) = min_{|S| <= N/2} C(S, S̄)/|S|``.  Finding it is NP-hard in
general, but for the torus the paper computes it from "the face with smallest
area" (§5.2).  :meth:`Topology.edge_expansion` and
:meth:`Topology.bisection_links` give the closed forms, both in units of one
directed link's capacity C; they were checked against exhaustive search over
all subsets S for every shape with at most 32 nodes (and in the test suite
for small shapes).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import ClassVar

import networkx as nx
import numpy as np

from gupsim.topology.base import Shape, _validated, parse_shape, register_topology

from gupsim.base.errors import UnknownNameError
from gupsim.base.memory import refuse_if_over


#: Peak bytes per node of building the per-node tables (the (N, 6) neighbour table, the (N, 3) coordinates
#: and the per-port temporaries of :meth:`Topology._build_neighbor_table`), rounded up.
TABLE_BYTES_PER_NODE = 160


@dataclass(frozen=True)
class HalfRingTies:
    """How deterministic routing breaks a tie: a destination exactly ``length/2`` away on a ring of even
    ``length``, where both ways round are equally short.

    ``code`` is the value the fast kernels read from ``int_params[I_TIES]``
    (:func:`gupsim.engines.fast.core._offset` mirrors ``goes_plus`` for each code).  The rule depends only on
    the coordinate ``a`` of the node deciding, in the tied dimension; that coordinate is the source's until
    the packet moves in that dimension, after which it is no longer tied, so deciding hop by hop
    (:meth:`Topology.next_port`) and at the source (:meth:`Topology.route`) give the same route.
    """

    code: int
    goes_plus: Callable[[int, int], bool]  # (a, length) -> True for the + way


#: The half-ring tie rules by name (``network.half_ring_ties``).
HALF_RING_TIES: dict[str, HalfRingTies] = {
    # Always the + way: gupsim's rule before BG/L's was found; it loads the + half of every even ring more.
    "plus": HalfRingTies(0, lambda a, length: True),
    # BG/L's BLRTS hint cut-offs (IBM BlueMatter, svntrunk/src/BonB/src/blade_on_blrts.c,
    # _blade_torus_calc_hints_same_as_blrts(), commit 43474e48): the + cut-off reaches length/2 away when the
    # + neighbour's coordinate (a+1) mod length is odd, else length/2 - 1 (the - cut-off mirrors it), so a
    # tie goes + from even coordinates and - from odd ones.  (The code's comment states the parity the other
    # way round; this is what the code computes.)
    "source-parity": HalfRingTies(1, lambda a, length: (a + 1) % length % 2 == 1),
}


def half_ring_ties(name: str) -> HalfRingTies:
    if name not in HALF_RING_TIES:
        raise UnknownNameError("half_ring_ties", name, list(HALF_RING_TIES))
    return HALF_RING_TIES[name]


class Topology:
    """A 3D direct network with six ports per node.

    Subclasses only say how one dimension behaves (wrap-around or not); all
    node, link and routing bookkeeping is shared.
    """

    kind: ClassVar[str] = "abstract"
    dims: ClassVar[int] = 3
    ports: ClassVar[int] = 6
    wraps: ClassVar[bool] = False
    #: Record extras (gupsim.engines.reference.telemetry kinds) this network cannot give, each with why; the torus gives all.
    telemetry_unavailable: ClassVar[dict[str, str]] = {}
    # Directed links a plane cut crosses, per node of the plane, in one direction.
    _cut_multiplicity: ClassVar[int] = 1

    def __init__(self, shape: str | Sequence[int], ties: str = "plus") -> None:
        self.shape: Shape = parse_shape(shape) if isinstance(shape, str) else _validated(shape, shape)
        self.ties: str = ties
        self._ties: HalfRingTies = half_ring_ties(ties)
        self.num_nodes: int = self.shape[0] * self.shape[1] * self.shape[2]
        self.num_link_slots: int = self.num_nodes * self.ports
        self._strides = (1, self.shape[0], self.shape[0] * self.shape[1])

    @cached_property
    def _nbr(self) -> np.ndarray:
        # Built once, on first use, so that routing and the simulator's inner loop never recompute
        # coordinates, while the closed forms (bounds, hop counts) of a shape far too large to hold in
        # memory still answer; -1 marks a port with no link.
        table = self._build_neighbor_table()
        table.setflags(write=False)
        return table

    @cached_property
    def num_links(self) -> int:
        """Directed links that exist: per dimension of length L, every node's two ports on a torus
        (L >= 2), all but the two end planes' outward ones on a mesh."""
        return sum(self._dim_links(length) * (self.num_nodes // length) for length in self.shape)

    @classmethod
    def from_config(cls, shape: str | Sequence[int], network: object = None) -> "Topology":
        # Closed-form bounds build a topology without a network section; routing is not asked of those.
        return cls(shape) if network is None else cls(shape, network.half_ring_ties)  # type: ignore[attr-defined]

    # --- per-dimension behaviour, overridden by subclasses -------------------

    def _step(self, c: np.ndarray, length: int, sign: int) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates one step away along a dimension, and which of them exist."""
        raise NotImplementedError

    def _offset(self, a: int, b: int, length: int) -> int:
        """Signed number of steps of the minimal dimension-order route from a to b."""
        raise NotImplementedError

    def _dim_distances(self, a: np.ndarray, b: np.ndarray, length: int) -> np.ndarray:
        raise NotImplementedError

    def _dim_distance_sum(self, length: int) -> int:
        """Sum of distances over all ordered coordinate pairs along one dimension."""
        raise NotImplementedError

    def _dim_diameter(self, length: int) -> int:
        raise NotImplementedError

    def _dim_links(self, length: int) -> int:
        """Directed links along one line of ``length`` nodes of a dimension."""
        raise NotImplementedError

    def _check_tables_fit(self, what: str) -> None:
        """Refuse, in one line, per-node tables that cannot fit in the memory available now."""
        shape = "x".join(map(str, self.shape))
        refuse_if_over(self.num_nodes * TABLE_BYTES_PER_NODE,
                       f"{self.kind} {shape}: {what} of {self.num_nodes:,} nodes need", "use a smaller shape")

    # --- nodes ----------------------------------------------------------------

    def _check_node(self, node: int) -> int:
        node = operator.index(node)
        if not 0 <= node < self.num_nodes:
            raise ValueError(f"node {node} out of range for {self!r} (0..{self.num_nodes - 1})")
        return node

    def coords(self, node: int) -> Shape:
        node = self._check_node(node)
        rest, x = divmod(node, self.shape[0])
        z, y = divmod(rest, self.shape[1])
        return (x, y, z)

    def node_id(self, coords: Sequence[int]) -> int:
        x, y, z = (operator.index(c) for c in coords)
        if not all(0 <= c < n for c, n in zip((x, y, z), self.shape)):
            raise ValueError(f"coordinates {tuple(coords)} out of range for {self!r}")
        return x + self.shape[0] * (y + self.shape[1] * z)

    def coords_array(self) -> np.ndarray:
        """Coordinates of every node as an ``(N, 3)`` int64 array, row = node id."""
        self._check_tables_fit("the coordinate tables")
        ids = np.arange(self.num_nodes, dtype=np.int64)
        return np.stack(
            [ids % self.shape[0], (ids // self.shape[0]) % self.shape[1], ids // self._strides[2]],
            axis=1,
        )

    # --- links ----------------------------------------------------------------

    def _build_neighbor_table(self) -> np.ndarray:
        self._check_tables_fit("the neighbour tables")
        coords = self.coords_array()
        table = np.full((self.num_nodes, self.ports), -1, dtype=np.int64)
        for d, length in enumerate(self.shape):
            for port, sign in ((2 * d, 1), (2 * d + 1, -1)):
                moved, exists = self._step(coords[:, d], length, sign)
                ids = np.arange(self.num_nodes) + (moved - coords[:, d]) * self._strides[d]
                table[:, port] = np.where(exists, ids, -1)
        return table

    def neighbor_array(self) -> np.ndarray:
        """Read-only ``(N, 6)`` table of neighbours, -1 where a port has no link."""
        return self._nbr

    def neighbor(self, node: int, port: int) -> int | None:
        """The node that ``port`` of ``node`` leads to, or None if there is no link.

        On a torus dimension of length 2 the ``+`` and ``-`` ports lead to the same
        neighbour, but they are two distinct physical links (Blue Gene/L cables
        both), so they have distinct link ids and both count towards capacity.
        """
        node = self._check_node(node)
        if not 0 <= port < self.ports:
            raise ValueError(f"port {port} out of range (0..{self.ports - 1})")
        nbr = int(self._nbr[node, port])
        return None if nbr < 0 else nbr

    def link_id(self, node: int, port: int) -> int:
        return node * self.ports + port

    def links(self) -> np.ndarray:
        """Ids of the directed links that exist, ascending."""
        return np.flatnonzero(self._nbr.ravel() >= 0)

    def link_endpoints(self, link_id: int) -> tuple[int, int]:
        node, port = divmod(operator.index(link_id), self.ports)
        dst = self.neighbor(node, port) if 0 <= node < self.num_nodes else None
        if dst is None:
            raise ValueError(f"link {link_id} does not exist in {self!r}")
        return (node, dst)

    # --- routing --------------------------------------------------------------

    def _offsets(self, src: int, dst: int) -> list[int]:
        a, b = self.coords(src), self.coords(dst)
        return [self._offset(a[d], b[d], self.shape[d]) for d in range(self.dims)]

    def route(self, src: int, dst: int) -> list[int]:
        """Deterministic dimension-order route (x, then y, then z) as directed link ids.

        The torus goes the shorter way round, and when both are equally short
        the way the topology's half-ring tie rule (:data:`HALF_RING_TIES`) says,
        so the route is always a shortest path.
        """
        links: list[int] = []
        node = src
        for d, off in enumerate(self._offsets(src, dst)):
            port = 2 * d if off > 0 else 2 * d + 1
            for _ in range(abs(off)):
                links.append(node * self.ports + port)
                node = int(self._nbr[node, port])
        return links

    def next_port(self, node: int, dst: int) -> int | None:
        """First port of the dimension-order route from ``node`` to ``dst``."""
        for d, off in enumerate(self._offsets(node, dst)):
            if off:
                return 2 * d if off > 0 else 2 * d + 1
        return None

    def minimal_ports(self, node: int, dst: int) -> list[int]:
        """Every port whose link brings a packet one hop closer to ``dst``.

        One port per dimension that still differs, except that on a torus tie
        (exactly half-way round) both directions are minimal.  Adaptive routing
        chooses among these.
        """
        a, b = self.coords(node), self.coords(dst)
        result: list[int] = []
        for d in range(self.dims):
            off = self._offset(a[d], b[d], self.shape[d])
            if off == 0:
                continue
            if self.wraps and 2 * abs(off) == self.shape[d]:
                result.extend((2 * d, 2 * d + 1))
            else:
                result.append(2 * d if off > 0 else 2 * d + 1)
        return result

    def hops(self, src: int, dst: int) -> int:
        return sum(abs(o) for o in self._offsets(src, dst))

    def hops_array(self, src: np.ndarray | Sequence[int], dst: np.ndarray | Sequence[int]) -> np.ndarray:
        """Vectorised :meth:`hops` over broadcastable arrays of node ids."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        total = np.zeros(np.broadcast(src, dst).shape, dtype=np.int64)
        for d, length in enumerate(self.shape):
            a = (src // self._strides[d]) % length
            b = (dst // self._strides[d]) % length
            total += self._dim_distances(a, b, length)
        return total

    @property
    def diameter(self) -> int:
        return sum(self._dim_diameter(n) for n in self.shape)

    @property
    def mean_hops(self) -> float:
        """Mean shortest-path distance over all ordered pairs with src != dst.

        Distances add over dimensions, and each coordinate pair along dimension d
        occurs (N/L_d)**2 times among all N**2 ordered node pairs.
        """
        n = self.num_nodes
        total = sum((n // length) ** 2 * self._dim_distance_sum(length) for length in self.shape)
        return float(Fraction(total, n * (n - 1)))

    # --- analytic network bounds (seed 000 §3.2, §5.2) ------------------------

    def edge_expansion(self) -> Fraction:
        """Smallest edge expansion alpha(G), in units of one directed link's capacity.

        ``alpha = min over dims with L_d >= 2 of m / floor(L_d/2)``, where ``m`` is
        the number of directed links per node a plane cut crosses one way (1 for
        a mesh, 2 for a torus, whose second plane of links is the wrap-around;
        for a length-2 torus dimension the two are the + and - cables joining the
        same pair).  It is the "face with smallest area" cut of §5.2: floor(L_d/2)
        whole planes, crossing m*N/L_d links, over their floor(L_d/2)*N/L_d nodes.

        Plane cuts are optimal even for odd lengths, although the size cap
        |S| <= N/2 then leaves a half-plane unused: adding part of the middle plane
        never lowers the ratio.  Exhaustive search over every S confirmed this for
        all shapes of up to 32 nodes.
        """
        return min(
            Fraction(self._cut_multiplicity, length // 2) for length in self.shape if length >= 2
        )

    def bisection_links(self) -> int:
        """Directed links crossing a minimum bisection one way (|S| = floor(N/2)).

        An even dimension is cut by a plane (m*N/L_d links).  Cutting an odd
        dimension needs floor(L_d/2) planes plus half of the middle plane, so it
        costs m*N/L_d plus a bisection of that plane, computed recursively; with
        a short even dimension and a long odd one this staircase is cheaper than
        any plane cut (e.g. mesh 9x2x1: 3 links, not 9).  Verified exhaustively
        for all shapes of up to 32 nodes.
        """
        return self._bisection(tuple(n for n in self.shape if n >= 2))

    def _bisection(self, lengths: tuple[int, ...]) -> int:
        if not lengths:
            return 0
        size = math.prod(lengths)  # Python ints: exact for any shape, where np.prod would overflow
        best = None
        for i, length in enumerate(lengths):
            cost = self._cut_multiplicity * size // length
            if length % 2:
                cost += self._bisection(lengths[:i] + lengths[i + 1 :])
            best = cost if best is None else min(best, cost)
        assert best is not None
        return best

    # --- interop --------------------------------------------------------------

    def to_networkx(self) -> nx.MultiDiGraph:
        """Directed multigraph of the links, keyed by port so parallel torus links survive."""
        graph = nx.MultiDiGraph(name=repr(self))
        for node, xyz in enumerate(self.coords_array().tolist()):
            graph.add_node(node, coords=tuple(xyz))
        for link in self.links().tolist():
            node, port = divmod(link, self.ports)
            graph.add_edge(node, int(self._nbr[node, port]), key=port, link=link, port=port)
        return graph

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'x'.join(map(str, self.shape))})"

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self.shape == other.shape  # type: ignore[attr-defined]
                and self.ties == other.ties)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.shape, self.ties))


@register_topology("torus")
class Torus3D(Topology):
    """3D torus: every dimension of length >= 2 wraps around (Blue Gene/L, >= 512 nodes)."""

    wraps = True
    _cut_multiplicity = 2

    def _step(self, c: np.ndarray, length: int, sign: int) -> tuple[np.ndarray, np.ndarray]:
        # A length-1 ring would be a self-loop; Blue Gene/L has no such link.
        return (c + sign) % length, np.full(c.shape, length >= 2)

    def _offset(self, a: int, b: int, length: int) -> int:
        delta = (b - a) % length
        if 2 * delta == length:
            return delta if self._ties.goes_plus(a, length) else -delta
        return delta if 2 * delta < length else delta - length

    def _dim_distances(self, a: np.ndarray, b: np.ndarray, length: int) -> np.ndarray:
        delta = (b - a) % length
        return np.minimum(delta, length - delta)

    def _dim_distance_sum(self, length: int) -> int:
        # Each start sees distances min(j, L-j) for j = 0..L-1, which sum to floor(L^2/4).
        return length * (length * length // 4)

    def _dim_diameter(self, length: int) -> int:
        return length // 2

    def _dim_links(self, length: int) -> int:
        # Both ports of every node; on a length-2 ring they are two cables to the same neighbour.
        return 2 * length if length >= 2 else 0


@register_topology("mesh")
class Mesh3D(Topology):
    """3D mesh: no wrap-around links (Blue Gene/L partitions of up to 256 nodes)."""

    wraps = False
    _cut_multiplicity = 1

    def _step(self, c: np.ndarray, length: int, sign: int) -> tuple[np.ndarray, np.ndarray]:
        moved = c + sign
        return moved, (moved >= 0) & (moved < length)

    def _offset(self, a: int, b: int, length: int) -> int:
        return b - a

    def _dim_distances(self, a: np.ndarray, b: np.ndarray, length: int) -> np.ndarray:
        return np.abs(b - a)

    def _dim_distance_sum(self, length: int) -> int:
        # sum over ordered pairs of |a-b| on a path of L nodes = (L^3 - L)/3.
        return (length**3 - length) // 3

    def _dim_diameter(self, length: int) -> int:
        return length - 1

    def _dim_links(self, length: int) -> int:
        return 2 * (length - 1)

