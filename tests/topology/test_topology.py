"""Tests for gupsim.topology: structure against NetworkX, bounds against brute force and Table 2."""

from __future__ import annotations

import itertools
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.base.errors import GupsimError, UnknownNameError
from tests.conftest import reference
from gupsim.topology import TOPOLOGIES, Mesh3D, Torus3D, make_topology, parse_shape
from gupsim.topology.grid import HALF_RING_TIES

def nx_grid(kind: str, shape: tuple[int, int, int]) -> nx.Graph:
    # grid_graph takes dims slowest-first; reversed so node tuples read (x, y, z).
    return nx.grid_graph(dim=list(reversed(shape)), periodic=(kind == "torus"))


# --- parsing and registry -------------------------------------------------------


def test_parse_shape_valid() -> None:
    assert parse_shape("8x8x16") == (8, 8, 16)
    assert parse_shape(" 64X32x32 ") == (64, 32, 32)
    assert parse_shape("1x1x2") == (1, 1, 2)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("8x0x4", "each dimension must be a positive integer"),
        ("8x-1x4", "each dimension must be a positive integer"),
        ("8x8.0x4", "each dimension must be a positive integer"),
        ("axbxc", "each dimension must be a positive integer"),
        ("8x8", "expected three dimensions"),
        ("8x8x8x8", "expected three dimensions"),
        ("", "expected three dimensions"),
        ("1x1x1", "at least 2 nodes"),
    ],
)
def test_parse_shape_rejects(text: str, fragment: str) -> None:
    with pytest.raises(GupsimError) as info:
        parse_shape(text)
    message = str(info.value)
    assert fragment in message
    assert repr(text) in message
    assert "\n" not in message


@pytest.mark.parametrize("shape", [(8, 0, 4), (8, 8), (2.0, 2, 2), (1, 1, 1), (True, 2, 2)])
def test_tuple_shapes_validated(shape: tuple) -> None:
    with pytest.raises(GupsimError):
        make_topology("torus", shape)


def test_registry_and_unknown_kind() -> None:
    assert TOPOLOGIES["torus"] is Torus3D and TOPOLOGIES["mesh"] is Mesh3D
    assert isinstance(make_topology("mesh", "4x4x2"), Mesh3D)
    assert isinstance(make_topology("torus", (8, 8, 8)), Torus3D)
    with pytest.raises(UnknownNameError) as info:
        make_topology("hypercube", "8x8x8")
    assert "'hypercube'" in str(info.value)
    assert "valid choices: data-vortex, fat-tree, mesh, torus" in str(info.value)


def test_repr_and_basic_attributes() -> None:
    topo = make_topology("torus", "8x4x2")
    assert repr(topo) == "Torus3D(8x4x2)"
    assert repr(make_topology("mesh", "4x4x2")) == "Mesh3D(4x4x2)"
    assert (topo.shape, topo.num_nodes, topo.ports, topo.dims) == ((8, 4, 2), 64, 6, 3)
    assert topo.num_link_slots == 64 * 6


# --- node and link bookkeeping ---------------------------------------------------


@pytest.mark.parametrize("kind", ["torus", "mesh"])
def test_coordinates_x_fastest(kind: str) -> None:
    topo = make_topology(kind, "3x4x5")
    expected = list(itertools.product(range(5), range(4), range(3)))  # z slowest
    coords = [(x, y, z) for z, y, x in expected]
    assert [topo.coords(n) for n in range(topo.num_nodes)] == coords
    assert topo.coords_array().tolist() == [list(c) for c in coords]
    assert [topo.node_id(c) for c in coords] == list(range(topo.num_nodes))
    with pytest.raises(ValueError):
        topo.coords(topo.num_nodes)


def test_ports_and_missing_links() -> None:
    torus = make_topology("torus", "4x3x1")
    assert torus.neighbor(torus.node_id((0, 0, 0)), 0) == torus.node_id((1, 0, 0))
    assert torus.neighbor(torus.node_id((0, 0, 0)), 1) == torus.node_id((3, 0, 0))
    assert torus.neighbor(torus.node_id((0, 2, 0)), 2) == torus.node_id((0, 0, 0))
    assert torus.neighbor(0, 4) is None and torus.neighbor(0, 5) is None  # length-1 z
    mesh = make_topology("mesh", "4x3x2")
    assert mesh.neighbor(mesh.node_id((0, 1, 1)), 1) is None
    assert mesh.neighbor(mesh.node_id((3, 1, 1)), 0) is None
    assert mesh.neighbor(mesh.node_id((3, 1, 1)), 1) == mesh.node_id((2, 1, 1))
    assert mesh.neighbor(mesh.node_id((3, 1, 1)), 5) == mesh.node_id((3, 1, 0))


def test_length_two_torus_dimension_has_two_links() -> None:
    topo = make_topology("torus", "2x3x3")
    node = topo.node_id((0, 1, 2))
    other = topo.node_id((1, 1, 2))
    assert topo.neighbor(node, 0) == topo.neighbor(node, 1) == other
    assert topo.link_id(node, 0) != topo.link_id(node, 1)
    graph = topo.to_networkx()
    assert graph.number_of_edges(node, other) == 2
    assert topo.num_links == topo.num_nodes * 6


@pytest.mark.parametrize(("kind", "shape"), [("torus", "4x2x1"), ("mesh", "3x3x2"), ("torus", "3x1x5")])
def test_links_consistent(kind: str, shape: str) -> None:
    topo = make_topology(kind, shape)
    links = topo.links()
    assert len(links) == topo.num_links
    seen = []
    for node in range(topo.num_nodes):
        for port in range(topo.ports):
            dst = topo.neighbor(node, port)
            if dst is None:
                with pytest.raises(ValueError):
                    topo.link_endpoints(topo.link_id(node, port))
                continue
            seen.append(topo.link_id(node, port))
            assert topo.link_endpoints(topo.link_id(node, port)) == (node, dst)
            # Every link has a reverse link on the opposite port.
            assert topo.neighbor(dst, port ^ 1) == node
            assert topo.hops(node, dst) == 1
    assert links.tolist() == seen
    graph = topo.to_networkx()
    assert graph.number_of_nodes() == topo.num_nodes
    assert graph.number_of_edges() == topo.num_links
    assert sorted(d["link"] for _, _, d in graph.edges(data=True)) == seen


# --- structure against NetworkX -----------------------------------------------------

NX_CASES = [
    ("torus", (3, 3, 3)),
    ("torus", (4, 3, 5)),
    ("torus", (8, 4, 6)),
    ("torus", (7, 3, 4)),
    ("mesh", (4, 4, 2)),
    ("mesh", (1, 5, 3)),
    ("mesh", (8, 4, 8)),
    ("mesh", (2, 1, 1)),
]


@pytest.mark.parametrize(("kind", "shape"), NX_CASES)
def test_matches_networkx_grid(kind: str, shape: tuple[int, int, int]) -> None:
    topo = make_topology(kind, shape)
    ref = nx_grid(kind, shape)
    assert topo.num_nodes == ref.number_of_nodes()
    assert topo.num_links == 2 * ref.number_of_edges()
    ours = topo.to_networkx()
    assert sorted(d for _, d in ours.out_degree()) == sorted(d for _, d in ref.degree())
    assert topo.diameter == nx.diameter(ref)
    # Same graph, not just the same statistics: relabel ours to coordinates.
    undirected = {frozenset((topo.coords(u), topo.coords(v))) for u, v in ours.edges()}
    assert undirected == {frozenset(e) for e in ref.edges()}


@pytest.mark.parametrize(("kind", "shape"), NX_CASES)
def test_route_length_is_shortest_path(kind: str, shape: tuple[int, int, int]) -> None:
    topo = make_topology(kind, shape)
    ref = nx_grid(kind, shape)
    rng = np.random.default_rng(7)
    pairs = rng.integers(0, topo.num_nodes, size=(60, 2))
    for src, dst in pairs.tolist():
        expected = nx.shortest_path_length(ref, topo.coords(src), topo.coords(dst))
        assert len(topo.route(src, dst)) == expected
        assert topo.hops(src, dst) == expected
    assert topo.hops_array(pairs[:, 0], pairs[:, 1]).tolist() == [
        nx.shortest_path_length(ref, topo.coords(s), topo.coords(d)) for s, d in pairs.tolist()
    ]


# --- routing properties ----------------------------------------------------------------

shapes = st.tuples(*[st.integers(1, 9)] * 3).filter(lambda s: s[0] * s[1] * s[2] >= 2)


@settings(max_examples=250, deadline=None)
@given(kind=st.sampled_from(["torus", "mesh"]), shape=shapes, a=st.integers(0, 10**6), b=st.integers(0, 10**6),
       ties=st.sampled_from(sorted(HALF_RING_TIES)))
def test_route_properties(kind: str, shape: tuple[int, int, int], a: int, b: int, ties: str) -> None:
    """Under every half-ring tie rule a route is minimal (hops <= diameter), in dimension order, and the
    same whether decided at the source or hop by hop (the reference's adaptive escape and the fast kernels
    ask next_port at every node)."""
    topo = TOPOLOGIES[kind](shape, ties)
    src, dst = a % topo.num_nodes, b % topo.num_nodes
    route = topo.route(src, dst)
    node = src
    for link in route:
        start, end = topo.link_endpoints(link)
        assert start == node
        node = end
    assert node == dst
    assert len(route) == topo.hops(src, dst) <= topo.diameter
    assert topo.hops_array([src], [dst]).tolist() == [len(route)]
    ports = [link % topo.ports for link in route]
    dims = [p // 2 for p in ports]
    assert dims == sorted(dims)
    for d in set(dims):
        assert len({p for p in ports if p // 2 == d}) == 1  # never turns back within a dimension
    assert topo.route(src, src) == [] and topo.hops(src, src) == 0
    assert topo.next_port(src, dst) == (ports[0] if ports else None)
    node, hop_by_hop = src, []
    while node != dst:
        port = topo.next_port(node, dst)
        hop_by_hop.append(topo.link_id(node, port))
        node = topo.neighbor(node, port)
    assert hop_by_hop == route


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["torus", "mesh"]), shape=shapes, a=st.integers(0, 10**6), b=st.integers(0, 10**6))
def test_minimal_ports_are_exactly_the_closer_ones(kind: str, shape: tuple[int, int, int], a: int, b: int) -> None:
    topo = make_topology(kind, shape)
    src, dst = a % topo.num_nodes, b % topo.num_nodes
    here = topo.hops(src, dst)
    closer = [
        p
        for p in range(topo.ports)
        if topo.neighbor(src, p) is not None and topo.hops(topo.neighbor(src, p), dst) == here - 1
    ]
    assert topo.minimal_ports(src, dst) == closer
    assert len({p // 2 for p in closer}) == sum(c != d for c, d in zip(topo.coords(src), topo.coords(dst)))


def _blrts_tie_goes_plus(x: int, size: int) -> bool:
    """IBM's BLRTS hint computation for a destination size/2 away, transcribed as an independent oracle:
    the cut-offs of _blade_torus_calc_hints_same_as_blrts() (blade_on_blrts.c) applied by
    BGLTorusCalcHints() (spi_ts_hints.c), IBM BlueMatter commit 43474e48."""
    n_xp = (x + 1) % size
    if n_xp % 2:
        h_xp, h_xm = min(size - 1, x + size // 2), max(0, x - (size // 2 - 1))
    else:
        h_xp, h_xm = min(size - 1, x + (size // 2 - 1)), max(0, x - size // 2)
    dest = (x + size // 2) % size
    if x < dest:
        return dest <= h_xp
    return not dest >= h_xm


@pytest.mark.parametrize("size", [2, 4, 6, 8, 16, 32, 64])
def test_source_parity_ties_are_blrts_hint_cutoffs(size: int) -> None:
    topo = Torus3D((size, 1, 1), "source-parity")
    for x in range(size):
        dst = (x + size // 2) % size
        assert topo.next_port(x, dst) == (0 if _blrts_tie_goes_plus(x, size) else 1), x
        assert topo.next_port(x, dst) == (0 if x % 2 == 0 else 1)  # even coordinates go +
        assert topo.minimal_ports(x, dst) == [0, 1]  # adaptive routing still sees both ways as minimal


@pytest.mark.parametrize("size", [4, 8])
def test_source_parity_loads_both_ways_round_a_ring_equally(size: int) -> None:
    """All-pairs traffic on one ring: the + and - links carry the same load under source parity; under plus
    every node's tie adds size/2 hops to the + way, size*size/2 in all."""
    loads = {}
    for ties in HALF_RING_TIES:
        topo = Torus3D((size, 1, 1), ties)
        plus = minus = 0
        for src in range(size):
            for dst in range(size):
                for link in topo.route(src, dst):
                    plus, minus = (plus + 1, minus) if link % 6 == 0 else (plus, minus + 1)
        loads[ties] = (plus, minus)
    assert loads["source-parity"][0] == loads["source-parity"][1]
    assert loads["plus"][0] - loads["plus"][1] == size * size // 2


def test_unknown_tie_rule_is_one_line() -> None:
    with pytest.raises(UnknownNameError, match="half_ring_ties 'random'"):
        Torus3D((4, 4, 4), "random")


def test_torus_tie_goes_plus() -> None:
    topo = make_topology("torus", "4x1x2")
    src, dst = topo.node_id((1, 0, 0)), topo.node_id((3, 0, 1))
    assert [link % 6 for link in topo.route(src, dst)] == [0, 0, 4]
    assert topo.minimal_ports(src, dst) == [0, 1, 4, 5]
    assert topo.next_port(src, dst) == 0
    assert [link % 6 for link in topo.route(dst, src)] == [0, 0, 4]
    # Not a tie: shorter way is minus.
    assert [link % 6 for link in topo.route(topo.node_id((0, 0, 0)), topo.node_id((3, 0, 0)))] == [1]


@pytest.mark.parametrize(
    ("kind", "shape"),
    [("torus", s) for s in [(2, 1, 1), (3, 3, 2), (5, 4, 1), (2, 2, 7), (6, 5, 3)]]
    + [("mesh", s) for s in [(2, 1, 1), (3, 3, 2), (5, 4, 1), (1, 7, 6), (4, 4, 2)]],
)
def test_mean_hops_matches_brute_force(kind: str, shape: tuple[int, int, int]) -> None:
    topo = make_topology(kind, shape)
    n = topo.num_nodes
    # Independent of hops_array: lengths of actual routes, which the tests above tie to BFS.
    total = sum(len(topo.route(s, d)) for s in range(n) for d in range(n))
    assert topo.mean_hops == pytest.approx(total / (n * (n - 1)), rel=1e-12)
    src, dst = np.divmod(np.arange(n * n), n)
    assert int(topo.hops_array(src, dst).sum()) == total


# --- analytic bounds against brute force ----------------------------------------------------


def brute_force_cuts(kind: str, shape: tuple[int, int, int]) -> tuple[Fraction, int]:
    """(min over 1 <= |S| <= N/2 of C(S, S̄)/|S|, min C(S, S̄) over |S| = floor(N/2)) by enumeration."""
    topo = make_topology(kind, shape)
    n = topo.num_nodes
    masks = np.arange(1 << n, dtype=np.uint32)
    inside = ((masks[:, None] >> np.arange(n, dtype=np.uint32)) & 1).astype(np.int16)
    sizes = inside.sum(axis=1)
    crossing = np.zeros(1 << n, dtype=np.int16)
    # Links come from the topology's own neighbour function, so parallel links count twice.
    for node in range(n):
        for port in range(topo.ports):
            dst = topo.neighbor(node, port)
            if dst is not None:
                crossing += inside[:, node] & (1 - inside[:, dst])
    best = min(Fraction(int(crossing[sizes == s].min()), s) for s in range(1, n // 2 + 1))
    return best, int(crossing[sizes == n // 2].min())


TINY = [("torus", s) for s in [(3, 3, 2), (2, 2, 2), (4, 2, 2), (4, 4, 1), (3, 2, 2), (2, 3, 3), (5, 3, 1), (9, 2, 1), (7, 1, 2), (2, 1, 1), (3, 1, 1)]] + [
    ("mesh", s) for s in [(4, 2, 2), (4, 4, 1), (3, 3, 2), (2, 2, 2), (9, 2, 1), (5, 3, 1), (3, 3, 1), (6, 3, 1), (1, 1, 17), (2, 1, 1)]
]


@pytest.mark.parametrize(("kind", "shape"), TINY)
def test_bounds_match_brute_force(kind: str, shape: tuple[int, int, int]) -> None:
    alpha, bisection = brute_force_cuts(kind, shape)
    topo = make_topology(kind, shape)
    assert topo.edge_expansion() == alpha
    # For odd N this checks the documented floor(N/2) convention as well.
    assert topo.bisection_links() == bisection


def test_staircase_bisection_beats_plane_cuts() -> None:
    # Cutting the length-9 dimension needs half a plane; it is still far cheaper than a plane cut of y.
    assert make_topology("mesh", "9x2x1").bisection_links() == 3
    assert make_topology("torus", "9x2x1").bisection_links() == 6


def test_table2_edge_expansion() -> None:
    table = reference("bgl_table2_bottlenecks.csv")
    assert len(table) == 12
    for row in table.itertuples():
        # Seed 000 Table 2 footnote: partitions up to 256 nodes are meshes, larger ones tori.
        kind = "mesh" if row.nodes <= 256 else "torus"
        topo = make_topology(kind, row.shape)
        assert topo.num_nodes == row.nodes
        assert float(topo.edge_expansion()) == pytest.approx(row.alpha_over_C, abs=1e-12), row.shape
        # Eq. (2): alpha <= C(bisection)/(N/2).
        assert topo.edge_expansion() <= Fraction(2 * topo.bisection_links(), topo.num_nodes)
