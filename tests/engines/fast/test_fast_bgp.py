"""Blue Gene/P on the fast engine (gupsim.engines.fast.dma) against the SimPy reference (gupsim.engines.reference.dma):
the DMA engines, sender-driven throttling, the receive overhead, the intra-node path and the DMA header, in
SMP, dual and virtual-node mode, on meshes, tori and a line of nodes; the records equal, bit for bit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.base.errors import GupsimError
from gupsim.config import load_machine
from gupsim.engines.run import choose_engine
from gupsim.engines.run import make_run_config, simulate
from tests.engines.fast.conftest import assert_agree_or_deadlock_alike, assert_engines_agree

SMP, DUAL, VN = ({"cpu.processes_per_node": n} for n in (1, 2, 4))
TORUS = {"network.topology": "torus"}
#: Seed 002 Fig. 5's setting: nodes in a row, where P0->P3 flows through the link P1->P2 that P1 injects into.
#: Slower links keep the first links busy, so that senders are throttled often.
LINE = {"network.link_bytes_per_s": 1e8}

CASES = [
    # (algorithm, shape, updates per process, machine overrides): each mode on a mesh
    ("one-packet", "2x2x2", 300, SMP),
    ("one-packet", "2x2x2", 200, DUAL),
    ("one-packet", "2x2x2", 150, VN),
    ("routed", "4x2x2", 300, SMP),
    ("routed", "2x2x2", 300, DUAL),
    ("routed", "4x2x2", 200, VN),
    ("baseline", "2x2x2", 200, SMP),
    ("baseline", "2x2x1", 150, VN),
    # throttled congestion on a line of nodes (mesh and torus ring)
    ("one-packet", "8x1x1", 200, {**LINE, **SMP}),
    ("routed", "8x1x1", 300, {**LINE, **DUAL}),
    ("one-packet", "8x1x1", 200, {**LINE, **TORUS, **SMP}),
    # tori
    ("one-packet", "4x4x2", 150, {**TORUS, **DUAL}),
    ("routed", "4x4x2", 200, {**TORUS, **VN}),
    ("baseline", "4x2x2", 150, {**TORUS, **DUAL}),
    # adaptive routing (no throttling: the reference throttles on the deterministic first link only), and
    # buffers in hardware order
    ("one-packet", "4x2x2", 150, {**TORUS, **DUAL, "network.routing": "adaptive"}),
    ("routed", "4x2x2", 200, {**TORUS, **SMP, "network.buffer_order": "fifo"}),
    # Blue Gene/L's VC router (issue 44: BG/P shares BG/L's header and VCs): two escape VCs with a token delay, and
    # adaptively with its dynamic VCs
    ("routed", "4x4x2", 200, {**TORUS, **VN, "network.router.name": "bgl-vc", "network.router.escape_vcs": 2,
                              "network.router.token_return_ns": 50.0}),
    ("one-packet", "4x2x2", 150, {**TORUS, **DUAL, "network.routing": "adaptive", "network.router.name": "bgl-vc"}),
]


def _run(algorithm, shape, updates, sets, engine, seed=0, options=None):
    machine = load_machine("bgp", sets)
    return simulate(make_run_config(machine=machine, shape=shape, algorithm=algorithm, updates_per_process=updates,
                                    engine=engine, seed=seed, algorithm_options=options or {}))


@pytest.mark.parametrize("algorithm, shape, updates, sets", CASES)
def test_fast_engine_reproduces_bgp_on_the_simpy_reference_bit_for_bit(algorithm, shape, updates, sets):
    fast_sim, fast = _run(algorithm, shape, updates, sets, "fast")
    ref_sim, ref = _run(algorithm, shape, updates, sets, "simpy")
    assert_engines_agree(fast_sim, fast, ref_sim, ref)
    assert fast["dma_tx_utilisation_mean"] > 0 and fast["dma_rx_utilisation_mean"] > 0
    if sets.get("network.routing") != "adaptive":
        assert fast["throttle_waits"] > 0 and fast["throttled_s"] > 0  # the throttle was exercised, not idle
        if algorithm == "one-packet":  # and its queue: packets held behind others, which do not poll
            assert fast_sim.outcome().dma["throttle_queued"] > 0


def test_the_dma_model_changes_the_record_on_both_engines():
    """Without the DMA section the same run differs (so the cases above compare the DMA model, not BG/L's)."""
    sets = {**DUAL, "network.link_bytes_per_s": 1e8}
    with_dma = _run("one-packet", "4x1x1", 200, sets, "fast")[1]
    faster = _run("one-packet", "4x1x1", 200, {**sets, "dma.throttle_backoff_ns": 5000.0}, "fast")[1]
    assert faster["sim_time_s"] != with_dma["sim_time_s"]
    assert faster["throttled_s"] > with_dma["throttled_s"]


def test_bgp_runs_on_the_fast_engine_for_every_algorithm_it_has():
    machine = load_machine("bgp", DUAL)

    def cfg(algorithm, **kw):
        return make_run_config(machine=machine, shape="2x2x1", algorithm=algorithm, updates_per_process=64, **kw)

    for algorithm in ("one-packet", "routed", "baseline", "routed-split"):
        assert choose_engine(cfg(algorithm)) == "fast"
    assert choose_engine(cfg("upc")) == "simpy"
    with pytest.raises(GupsimError, match="no fast kernel for algorithm 'upc'") as err:
        choose_engine(cfg("upc", engine="fast"))
    assert "\n" not in str(err.value)


@st.composite
def _dma_what_if(draw):
    """A random small BG/P what-if: DMA rate, header, receive overhead and back-off, with the network and mode."""
    algorithm = draw(st.sampled_from(["one-packet", "routed", "baseline"]))
    dims = [draw(st.integers(1, 4)) for _ in range(3)]
    if dims == [1, 1, 1]:
        dims[0] = 2
    sets = {
        "dma.engine_bytes_per_s": draw(st.sampled_from([2e8, 1e9, 2.55e9, 1e10])),
        "dma.header_bytes": draw(st.sampled_from([0, 8, 16, 32])),
        "dma.rx_packet_overhead_ns": draw(st.sampled_from([0.0, 41.15, 250.0])),
        "dma.throttle_backoff_ns": draw(st.sampled_from([0.0, 10.0, 100.0, 1000.0])),
        "network.topology": draw(st.sampled_from(["mesh", "torus"])),
        "network.routing": draw(st.sampled_from(["deterministic", "deterministic", "adaptive"])),
        "network.buffer_order": draw(st.sampled_from(["pool", "fifo"])),
        "network.link_bytes_per_s": draw(st.sampled_from([5e7, 425e6, 2e9])),
        "network.cut_through_bytes": draw(st.sampled_from([None, 8, 32])),
        "network.link_buffer_chunks": draw(st.sampled_from([16, 32])),
        "network.injection_fifo_chunks": draw(st.sampled_from([8, 256])),
        "network.reception_fifo_chunks": draw(st.sampled_from([8, 256])),
        "cpu.processes_per_node": draw(st.sampled_from([1, 2, 4])),
    }
    return algorithm, "x".join(map(str, dims)), draw(st.integers(16, 100)), sets, draw(st.integers(0, 999))


@settings(max_examples=15, deadline=None)
@given(_dma_what_if())
def test_fast_engine_reproduces_bgp_on_random_dma_what_ifs(what_if):
    """Record for record; a what-if whose buffers deadlock must deadlock on both engines in the same line."""
    algorithm, shape, updates, sets, seed = what_if
    assert_agree_or_deadlock_alike(lambda engine: _run(algorithm, shape, updates, sets, engine, seed=seed), updates)
