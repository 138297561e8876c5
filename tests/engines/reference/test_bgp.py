"""Blue Gene/P: the machine file, the DMA engine, and each seed 002 observation at reduced size."""

from __future__ import annotations

import pytest

from gupsim.studies import bgp
from gupsim.model.bounds import machine_topology
from gupsim.config import load_machine
from gupsim.base.errors import GupsimError, UnknownNameError
from gupsim.engines.reference.microbench import microbenchmark


@pytest.fixture(scope="module")
def smp():
    return bgp.machine()


def test_bgl_has_no_dma_and_bgp_has_one():
    assert load_machine("bgl").dma is None
    m = load_machine("bgp")
    assert m.dma.engine_bytes_per_s == pytest.approx(6 * m.network.link_bytes_per_s)
    assert m.cpu.clock_hz == 850e6


def test_unknown_microbenchmark_lists_the_valid_ones():
    with pytest.raises(UnknownNameError, match="ping-pong"):
        microbenchmark("pingpong")


def test_microbenchmarks_refuse_a_machine_without_dma():
    with pytest.raises(GupsimError, match="no dma section"):
        microbenchmark("ping-pong").run(load_machine("bgl"), "2x1x1")


def test_fig2_small_latency_and_large_bandwidth(smp):
    assert bgp.latency(smp, "2x1x1", 0) == pytest.approx(2.8e-6, rel=0.05)
    bw = bgp.bandwidth(smp, "2x1x1", [(0, 1)], 65536, window=2)["bits_per_s"][0]
    assert bw == pytest.approx(3.0e9, rel=0.05)


def test_fig3_intra_node_same_latency_six_times_bandwidth(smp):
    vn = bgp.machine(4)
    assert bgp.latency(vn, "2x1x1", 0, src=0, dst=1) == pytest.approx(bgp.latency(smp, "2x1x1", 0), rel=0.1)
    intra = bgp.bandwidth(vn, "2x1x1", [(0, 1)], 32768, window=2)["bits_per_s"][0]
    inter = bgp.bandwidth(smp, "2x1x1", [(0, 1)], 32768, window=2)["bits_per_s"][0]
    assert 5.0 < intra / inter < 7.0


def test_fig4_more_hops_cost_latency_not_bandwidth(smp):
    near, far = bgp.latency(smp, "2x1x1", 0), bgp.latency(smp, "8x8x8", 0, farthest=True)
    assert far > near * 1.1  # 12 hops on 8x8x8
    bw_far = bgp.bandwidth(smp, "8x8x8", [(0, 292)], 16384, window=2)["bits_per_s"][0]
    bw_near = bgp.bandwidth(smp, "2x1x1", [(0, 1)], 16384, window=2)["bits_per_s"][0]
    assert bw_far == pytest.approx(bw_near, rel=0.03)


@pytest.mark.parametrize("pairs", [((0, 3), (1, 2)), ((0, 2), (1, 3))])
def test_fig5_flow_through_wins_and_the_local_sender_is_throttled(smp, pairs):
    topo = machine_topology(smp, "8x8x8")
    p = [topo.node_id((x, 0, 0)) for x in range(4)]
    alone = bgp.bandwidth(smp, "8x8x8", [(p[1], p[2])], 16384, window=2)["bits_per_s"][0]
    through, local = bgp.bandwidth(smp, "8x8x8", [(p[a], p[b]) for a, b in pairs], 16384, window=2)["bits_per_s"]
    assert through == pytest.approx(alone, rel=0.05)
    assert 0 < local < 0.5 * alone  # throttled to the link's idle gaps, not counted away
    assert len(topo.route(p[0], p[3])) == 3  # shortest path, P0-P1-P2-P3


def test_fig6_several_cores_help_medium_messages_not_the_peak():
    vn = bgp.machine(4)
    one = bgp.bandwidth(vn, "2x1x1", [(0, 4)], 256, window=4)["aggregate_bits_per_s"]
    four = bgp.bandwidth(vn, "2x1x1", [(c, 4 + c) for c in range(4)], 256, window=4)["aggregate_bits_per_s"]
    assert 1.4 < four / one < 2.6
    big1 = bgp.bandwidth(vn, "2x1x1", [(0, 4)], 65536, window=4)["aggregate_bits_per_s"]
    big4 = bgp.bandwidth(vn, "2x1x1", [(c, 4 + c) for c in range(4)], 65536, window=4)["aggregate_bits_per_s"]
    assert big4 == pytest.approx(big1, rel=0.05)  # the link caps both


def test_fig6_hot_spot_latency_grows_with_system_size(smp):
    lat = [microbenchmark("hot-spot").run(smp, s, nbytes=1024)["latency_s"] for s in ("2x1x1", "2x2x2", "4x4x2")]
    assert lat[0] < lat[1] < lat[2] and lat[2] > 3 * lat[0]


def test_fig7_fan_out_beats_fan_in_at_six_neighbours(smp):
    out6 = bgp.fan_bits_per_s(smp, 6, False, 32768, 2)
    in6 = bgp.fan_bits_per_s(smp, 6, True, 32768, 2)
    assert out6 > 1.15 * in6
    assert in6 > 2 * bgp.fan_bits_per_s(smp, 1, True, 32768, 2)  # more neighbours help


def test_gups_network_bounds_stay_at_or_under_the_sparsest_cut():
    from gupsim.model.bounds import bounds, network_bound_gups

    for nodes in (512, 40960):
        m = bgp.machine(4)
        topo = machine_topology(m, bgp.PARTITIONS[nodes])
        b = bounds(m, bgp.PARTITIONS[nodes])
        cut = network_bound_gups(nodes, float(topo.edge_expansion()), m.network.link_bytes_per_s, 44)
        assert b.network_bound_gups <= cut * (1 + 1e-12)


def test_fig7_fan_out_to_two_neighbours_is_twice_one_stream(smp):
    # Two links, one DMA engine with six links' capacity: nothing is shared. (Counting whole
    # messages only used to drop the lagging stream's last message: 5,638 instead of ~6,000 Mb/s.)
    one = bgp.fan_bits_per_s(smp, 1, False, 32768, 2)
    assert bgp.fan_bits_per_s(smp, 2, False, 32768, 2) == pytest.approx(2 * one, rel=0.02)
