"""The canonical event order (gupsim.engines.order): the packed key orders as its tuple, and both engines take
their phases and entity numbering from it (the engines-agree tests check that they keep it)."""

from __future__ import annotations

from hypothesis import given, strategies as st
from numba import njit

from gupsim.engines import order

phases = st.sampled_from([order.URGENT, order.NORMAL, order.END_OF_INSTANT])
entities = st.integers(0, order.MAX_ENTITIES - 1)
seqs = st.integers(0, order.SEQ_MASK)


@given(phases, entities, seqs, phases, entities, seqs)
def test_packed_key_orders_as_its_tuple(p1, e1, s1, p2, e2, s2):
    k1, k2 = order.order_key(p1, e1, s1), order.order_key(p2, e2, s2)
    assert 0 <= k1 < 2**63 and 0 <= k2 < 2**63
    assert (k1 < k2) == ((p1, e1, s1) < (p2, e2, s2))
    assert (k1 == k2) == ((p1, e1, s1) == (p2, e2, s2))


@njit
def _jitted(num_ranks, node, phase, entity, seq):
    return order.router_entity(num_ranks, node), order.order_key(phase, entity, seq)


@given(st.integers(1, 1 << 20), st.integers(0, 1 << 20), phases, entities, seqs)
def test_the_order_computes_the_same_in_a_kernel_and_in_python(num_ranks, node, phase, entity, seq):
    assert _jitted(num_ranks, node, phase, entity, seq) == (order.router_entity(num_ranks, node),
                                                            order.order_key(phase, entity, seq))


def test_routers_come_after_every_rank():
    ranks, nodes = 64, 32
    assert [order.rank_entity(r) for r in range(ranks)] == list(range(ranks))
    assert min(order.router_entity(ranks, n) for n in range(nodes)) == ranks
    assert max(order.router_entity(ranks, n) for n in range(nodes)) == order.entities(ranks, nodes) - 1

