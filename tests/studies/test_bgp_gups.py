"""bgp-gups: analytic bounds for every size and mode, and simulated rows that stay under them."""

from __future__ import annotations

import pytest

from gupsim.studies.validation import load_experiment

gups = load_experiment("bgp-gups")


@pytest.mark.parametrize("shape, mode, alg, updates", [
    ("2x2x4", "VN", "one-packet", 64),    # network-bound (44 B per update)
    ("4x4x2", "SMP", "one-packet", 128),  # CPU-bound
    ("2x2x4", "VN", "routed-split", 96),
    ("2x2x4", "dual", "routed", 96),
])
def test_simulated_rows_stay_at_or_under_both_bounds(shape, mode, alg, updates):
    bound = gups.row_bounds(shape, mode, alg)
    assert bound["bottleneck"] == ("network" if (mode, alg) == ("VN", "one-packet") else "cpu")
    sim = gups.simulate_row(shape, mode, alg, updates)
    # The whole run's average rate: the windowed rate of so short a run is start-up dominated.
    assert 0 < sim["sim_gups_run"] <= bound["network_bound_gups"]  # the sparsest cut
    assert sim["sim_gups_run"] <= bound["cpu_bound_gups"]


def test_one_packet_in_vn_mode_is_network_bound_on_the_512_node_torus():
    b = gups.row_bounds("8x8x8", "VN", "one-packet")
    assert b["bottleneck"] == "network"
    assert gups.row_bounds("8x8x8", "SMP", "one-packet")["bottleneck"] == "cpu"


def test_table_has_every_size_mode_and_algorithm_and_no_published_target():
    c = gups.reproduce(quick=True)
    f = c.frame
    assert c.targets == {}  # no published BG/P GUPS table: nothing is "compared"
    assert set(f["mode"]) == {"SMP", "dual", "VN"}
    assert set(f["nodes"]) == set(gups.NODES)
    assert len(f) == len(gups.NODES) * (3 * 4 - 1)  # routed-split needs two cores or more
    assert (f[["cpu_bound_gups", "network_bound_gups"]] > 0).all().all()
    assert not f["simulated"].any()  # quick: bounds only
    assert any("simulated rows" in line for line in c.summary_lines())


@pytest.fixture
def made_packets(monkeypatch) -> list:
    """Every packet the SimPy network makes during the test, in the order made."""
    from gupsim.engines.reference.torus_network import Network

    made, real = [], Network.make_packet

    def record(self, *args, **kw):
        made.append(real(self, *args, **kw))
        return made[-1]

    monkeypatch.setattr(Network, "make_packet", record)
    return made


@pytest.mark.parametrize("alg, sw_header", [("routed", 16), ("baseline", 0)])
def test_packets_on_bgp_carry_the_dma_header_in_their_chunks(made_packets, alg, sw_header):
    """A BG/P packet's chunks hold the DMA header before the algorithm's data (gupsim.engines.reference.dma; gupsim.engines.reference.microbench
    sizes its packets so): ``routed``'s software header and 8 bytes per update, or a slice of ``baseline``'s
    MPI message, never more than 240 data bytes, the header included."""
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config, simulate

    bgp = load_machine("bgp")
    dma_header, max_payload = bgp.dma.header_bytes, bgp.network.max_payload_bytes
    simulate(make_run_config(machine=bgp, shape="2x2x2", algorithm=alg, updates_per_process=256, engine="simpy"))
    made = [(pkt.payload, pkt.updates, pkt.message) for pkt in made_packets]
    assert made and all(dma_header < p <= max_payload for p, _, _ in made)
    if alg == "routed":
        assert {p - dma_header - sw_header - 8 * len(u) for p, u, _ in made} == {0}
        assert max(len(u) for _, u, _ in made) == (max_payload - dma_header - sw_header) // 8  # full: 28
    else:  # each message's packets carry its bytes plus one DMA header each
        by_message = {}
        for p, _, m in made:
            by_message.setdefault(id(m), (m, []))[1].append(p)
        for m, payloads in by_message.values():
            assert sum(payloads) == m.nbytes + dma_header * len(payloads)
            assert len(payloads) == -(-m.nbytes // (max_payload - dma_header))


@pytest.mark.parametrize("payload", [8, 24])
def test_one_packet_on_bgp_carries_the_dma_header_beside_its_update(made_packets, payload):
    """``one-packet``'s update rides with the DMA header, as ``routed``'s do: 8 bytes fill one 32-byte
    chunk with it, 24 bytes need two; the raw send is charged for the packet's bytes.
    ``payload_bytes`` alone would size the packet a chunk short above 16 bytes."""
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config, simulate

    bgp = load_machine("bgp")
    dma_header, chunk = bgp.dma.header_bytes, bgp.network.chunk_bytes
    simulate(make_run_config(machine=bgp, shape="2x2x2", algorithm="one-packet", updates_per_process=64,
                             engine="simpy", algorithm_options={"payload_bytes": payload}))
    made = {(pkt.payload, pkt.chunks) for pkt in made_packets}
    assert made_packets and made == {(payload + dma_header, -(-(payload + dma_header) // chunk))}


def test_one_packet_on_bgp_refuses_a_payload_that_leaves_no_room_for_the_dma_header():
    from gupsim.config import load_machine
    from gupsim.base.errors import GupsimError
    from gupsim.engines.run import make_run_config, simulate

    bgp = load_machine("bgp")
    room = bgp.network.max_payload_bytes - bgp.dma.header_bytes
    with pytest.raises(GupsimError, match=f"payload_bytes={room + 1} does not fit one packet .at most {room} "):
        simulate(make_run_config(machine=bgp, shape="2x2x2", algorithm="one-packet", updates_per_process=4,
                                 engine="simpy", algorithm_options={"payload_bytes": room + 1}))


#: How far above a bound a window of the run may go (see the test below); the whole run may not go above at all.
WINDOW_EXCESS = 0.01


@pytest.mark.parametrize("alg, mode", [(alg, mode) for alg in ("baseline", "routed", "one-packet") for mode in ("SMP", "VN")]
                         + [("routed-split", "dual"), ("routed-split", "VN")])
def test_fast_engine_rows_stay_at_or_under_both_bounds_by_either_rate(alg, mode):
    """The rows the full table runs on the fast engine, at its run length, on a small partition: the whole run's
    rate (``sim_gups_run``) never exceeds either bound, and the windowed rate (``sim_gups``) exceeds them by at
    most :data:`WINDOW_EXCESS`.

    The bounds hold for a long run's throughput.  A window of the run may apply updates whose generating CPU
    work fell before it opened, so a window can run a little above a CPU bound (one-packet SMP on 4x4x4: 0.14%
    above under the canonical event order)."""
    shape = "4x4x4"
    bound = gups.row_bounds(shape, mode, alg)
    sim = gups.simulate_row(shape, mode, alg, gups.simulated_updates(512, mode, alg))  # the table's own length
    assert sim["sim_engine"] == "fast"
    assert 0 < sim["sim_gups_run"] <= bound["bound_gups"], (sim["sim_gups_run"], bound)
    assert 0 < sim["sim_gups"] <= bound["bound_gups"] * (1 + WINDOW_EXCESS), (sim["sim_gups"], bound)


def test_full_table_simulates_every_algorithm_on_the_fast_engine_to_1024_nodes():
    assert gups.simulated_updates(1024, "VN", "routed") == gups.FAST_UPDATES
    assert gups.simulated_updates(40960, "VN", "routed") is None
    assert gups.simulated_updates(32768, "VN", "routed") == gups.FAST_UPDATES  # routed alone from 16,384 nodes
    assert gups.simulated_updates(32768, "VN", "one-packet") is None
    assert gups.simulated_updates(4096, "VN", "routed") == gups.FAST_UPDATES  # VN only beyond 1,024 nodes
    assert gups.simulated_updates(4096, "VN", "one-packet") == gups.FAST_UPDATES
    assert gups.simulated_updates(4096, "SMP", "routed") is None
    assert gups.simulated_updates(2048, "VN", "baseline") is None
    assert gups.simulated_updates(512, "VN", "one-packet") == gups.FAST_UPDATES
    assert gups.simulated_updates(512, "SMP", "one-packet") == gups.FAST_UPDATES
    assert gups.simulated_updates(512, "VN", "routed-split") == gups.FAST_UPDATES
    assert gups.simulated_updates(1024, "dual", "routed-split") == gups.FAST_UPDATES
    assert gups.simulated_updates(2048, "VN", "routed-split") is None
    assert gups.simulated_updates(16384, "VN", "routed") == gups.FAST_UPDATES
    assert gups.simulated_updates(16384, "dual", "routed") is None


def test_a_slow_dma_engine_binds_and_the_dma_bound_holds():
    """Slowing the DMA engine fiftyfold makes it the bottleneck by the bounds, and the simulated run keeps under
    that bound with its engines nearly always busy (the bound is the resource that binds, not a loose number)."""
    from gupsim.studies import bgp

    m = bgp.machine(4, {"dma.engine_bytes_per_s": 2.55e9 / 50})
    b = gups.machine_bounds(m, "4x4x4", "routed")
    assert b["bottleneck"] == "dma" and b["bound_gups"] == b["dma_bound_gups"]
    rec = gups.run(gups.make_run_config(machine=m, shape="4x4x4", algorithm="routed", updates_per_process=256))
    assert rec["updates_applied"] / rec["sim_time_s"] / 1e9 <= b["dma_bound_gups"]
    assert rec["dma_tx_utilisation_mean"] > 0.8
    # ... and with bgp.yaml's engine the DMA bound is far above the others on every size of the table
    assert gups.row_bounds("32x32x40", "VN", "routed")["dma_bound_gups"] > 10 * gups.row_bounds(
        "32x32x40", "VN", "routed")["bound_gups"]
