"""The fast engine (gupsim.engines.fast) against the SimPy reference: same numbers, its own determinism, its plumbing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.model import hpcc
from gupsim.config import load_machine
from gupsim.base.errors import GupsimError
from gupsim.app.reporting import model_fields
from gupsim.engines.run import RECORD_KEYS, make_run_config, simulate
from gupsim.topology.grid import HALF_RING_TIES
from tests.engines.fast.conftest import assert_engines_agree, kernel_machine

UPC = {"payload_bytes": 64, "wire_bytes": 75, "local_overhead_cycles": 40.0, "remote_overhead_cycles": 60.0}

PER_DIM = {"network.fifos": "per-dimension", "network.link_bytes_per_s": 1e7}
IN_ORDER = {"network.buffer_order": "fifo", "network.link_bytes_per_s": 1e7}
SLOTS = {"network.bubble_accounting": "packets"}
ROUND_ROBIN = {"cache.routed_working_set": "round-robin"}
PARITY = {"network.half_ring_ties": "source-parity", "network.topology": "torus", "network.link_bytes_per_s": 1e7}

CASES = [
    # (algorithm, shape, updates per process, machine overrides, algorithm options)
    ("one-packet", "2x2x2", 600, {}, {}),                                               # mesh
    ("one-packet", "4x4x2", 300, {"network.topology": "torus"}, {}),                    # torus, bubble
    ("one-packet", "4x2x2", 300, {"cpu.processes_per_node": 2}, {}),                    # virtual-node mode
    ("one-packet", "4x2x2", 300, {"network.topology": "torus", "network.routing": "adaptive"}, {}),
    ("one-packet", "2x2x2", 300, {"cpu.processes_per_node": 2}, UPC),                   # seed 001's packet
    ("routed", "2x2x2", 600, {}, {}),
    ("routed", "4x4x2", 600, {"network.topology": "torus"}, {}),
    ("routed", "4x2x2", 600, {"cpu.processes_per_node": 2}, {}),
    ("routed", "4x2x2", 600, {"network.topology": "torus", "network.routing": "adaptive"}, {}),
    # FIFOs per dimension (and node-local), with slow links so that they fill
    ("one-packet", "4x2x2", 300, {**PER_DIM, "cpu.processes_per_node": 2}, {}),
    ("one-packet", "4x4x2", 300, {**PER_DIM, "network.topology": "torus", "network.routing": "adaptive"}, {}),
    ("routed", "4x4x2", 600, {**PER_DIM, "network.topology": "torus"}, {}),
    ("routed", "4x2x2", 600, {**PER_DIM, "cpu.processes_per_node": 2}, {}),
    ("routed", "4x2x2", 600, {**PER_DIM, "network.topology": "torus", "network.routing": "adaptive"}, {}),
    # buffers and injection FIFOs in hardware order (head-of-line blocking), slow links so that packets queue
    ("one-packet", "4x4x2", 300, {**IN_ORDER, "network.topology": "torus"}, {}),
    ("one-packet", "4x2x2", 300, {**IN_ORDER, **PER_DIM, "cpu.processes_per_node": 2}, {}),
    ("one-packet", "4x4x2", 300, {**IN_ORDER, "network.topology": "torus", "network.routing": "adaptive"}, {}),
    ("routed", "4x4x2", 600, {**IN_ORDER, **PER_DIM, "network.topology": "torus"}, {}),
    ("routed", "4x2x2", 600, {**IN_ORDER, **PER_DIM, "cpu.processes_per_node": 2}, {}),
    ("routed", "4x4x2", 600, {**IN_ORDER, **PER_DIM, "network.topology": "torus", "network.routing": "adaptive"}, {}),
    # BG/L's half-ring tie rule (source parity), slow links so that the two ways round load differently
    ("one-packet", "4x4x2", 300, PARITY, {}),
    ("one-packet", "4x4x4", 200, {**PARITY, "network.routing": "adaptive"}, {}),
    ("one-packet", "6x4x2", 200, {**PARITY, **PER_DIM, "cpu.processes_per_node": 2}, {}),
    ("routed", "4x4x2", 600, {**PARITY, **PER_DIM}, {}),
    ("routed", "4x4x4", 300, {**PARITY, **PER_DIM, "network.routing": "adaptive"}, {}),
    ("baseline", "4x4x2", 200, PARITY, {}),
    # routed's whole working set in a round-robin L1 (a per-hop cost the model layer computes)
    ("routed", "4x4x2", 600, {**ROUND_ROBIN, "network.topology": "torus"}, {}),
    ("routed", "4x2x2", 600, {**ROUND_ROBIN, "cpu.processes_per_node": 2}, {}),
    # the head moves on once the router has 8 bytes of it (BG/P's setting), not a whole chunk
    ("one-packet", "4x4x2", 300, {"network.topology": "torus", "network.cut_through_bytes": 8}, {}),
    # escape channels counted in full-packet slots (network.bubble_accounting: packets): 1-chunk packets hold 8
    ("routed", "4x4x2", 600, {**SLOTS, **IN_ORDER, **PER_DIM, "network.topology": "torus", "network.routing": "adaptive"},
     {}),
]


# Blue Gene/L's VC router (bgl-vc) on small tori, slow links so that its VCs fill: the records of both engines
# agree as bluegene-l's do, for every algorithm that runs on a torus (issue 44)
VC = {"network.topology": "torus", "network.router.name": "bgl-vc", "network.link_bytes_per_s": 1e7}
ADAPTIVE_VC = {**VC, "network.routing": "adaptive"}
VC_CASES = [  # the CI runs those not marked slow: one per algorithm, with several VCs, token delays and orders
    pytest.param("one-packet", "2x2x2", 400, VC, {}, marks=pytest.mark.slow),
    pytest.param("one-packet", "4x4x2", 300, {**ADAPTIVE_VC, "network.router.escape_vcs": 2,
                                               "network.router.token_return_ns": 200.0}, {}, marks=pytest.mark.slow),
    pytest.param("one-packet", "4x4x4", 150, {**ADAPTIVE_VC, **IN_ORDER, "network.half_ring_ties": "source-parity"}, {},
                 marks=pytest.mark.slow),
    pytest.param("routed", "2x2x2", 400, ADAPTIVE_VC, {}, marks=pytest.mark.slow),
    ("routed", "4x4x2", 400, {**VC, **PER_DIM, **IN_ORDER, "network.router.escape_vcs": 3}, {}),
    ("one-packet", "4x4x2", 300, {**ADAPTIVE_VC, **SLOTS, "network.router.escape_vcs": 2}, {}),
    ("routed", "4x4x4", 200, {**ADAPTIVE_VC, **PER_DIM, "network.half_ring_ties": "source-parity",
                              "network.router.dynamic_vcs": 1, "network.router.token_return_ns": 100.0}, {}),
    pytest.param("baseline", "2x2x2", 200, ADAPTIVE_VC, {}, marks=pytest.mark.slow),
    ("baseline", "4x4x2", 150, {**VC, "network.router.escape_vcs": 2, "network.router.vc_depth_chunks": 16}, {}),
    pytest.param("baseline", "4x4x4", 100, {**ADAPTIVE_VC, **IN_ORDER, "network.router.dynamic_vcs": 3}, {},
                 marks=pytest.mark.slow),
]


def _run(algorithm, shape, updates, sets, options, engine, seed=0, warm_start=False):
    machine = load_machine("bgl", sets)
    return simulate(make_run_config(machine=machine, shape=shape, algorithm=algorithm, updates_per_process=updates,
                                    algorithm_options=options, engine=engine, seed=seed, warm_start=warm_start))


@pytest.mark.parametrize("algorithm, shape, updates, sets, options", CASES + VC_CASES)
def test_fast_engine_reproduces_the_simpy_reference_bit_for_bit(algorithm, shape, updates, sets, options):
    fast_sim, fast = _run(algorithm, shape, updates, sets, options, "fast")
    ref_sim, ref = _run(algorithm, shape, updates, sets, options, "simpy")
    for key in RECORD_KEYS:
        assert key in fast
    assert_engines_agree(fast_sim, fast, ref_sim, ref)


@pytest.mark.parametrize("shape, updates, sets, seed", [
    ("4x4x2", 600, {"network.topology": "torus"}, 0),
    ("4x2x2", 600, {"cpu.processes_per_node": 2}, 1),
    ("4x4x4", 300, {**PARITY, **PER_DIM, "network.routing": "adaptive"}, 2),
    ("3x1x1", 900, {}, 0),
])
def test_a_warm_start_is_the_same_on_both_engines(shape, updates, sets, seed):
    """Both engines start from the same pre-filled buckets (gupsim.algorithms.routed_warm) and apply the
    updates a process owns at its first step: the records, links and mark times agree bit for bit."""
    fast_sim, fast = _run("routed", shape, updates, sets, {}, "fast", seed=seed, warm_start=True)
    ref_sim, ref = _run("routed", shape, updates, sets, {}, "simpy", seed=seed, warm_start=True)
    assert fast["warm_start"] and fast_sim.warm.taken.sum() > 0
    assert_engines_agree(fast_sim, fast, ref_sim, ref)


@pytest.mark.parametrize("engine", ["fast", "simpy"])
def test_the_half_ring_tie_rule_reaches_the_routes_of_both_engines(engine):
    """Source parity moves half of every ring's ties to the - links: the + links carry less than under plus
    (so the cases above compare routes that differ, not two copies of plus)."""
    plus_bytes, minus_bytes = {}, {}
    for ties in HALF_RING_TIES:
        links = _run("one-packet", "4x4x4", 100, {**PARITY, "network.half_ring_ties": ties}, {}, engine)[0].outcome().links
        port = links["link"] % 6
        plus_bytes[ties], minus_bytes[ties] = links["bytes"][port % 2 == 0].sum(), links["bytes"][port % 2 == 1].sum()
    assert plus_bytes["plus"] > minus_bytes["plus"]
    assert abs(plus_bytes["source-parity"] - minus_bytes["source-parity"]) < 0.1 * plus_bytes["source-parity"]


@pytest.mark.parametrize("algorithm", ["one-packet", "routed"])
def test_fast_engine_is_deterministic_and_the_seed_selects_the_stretch(algorithm):
    a = _run(algorithm, "4x4x4", 256, {}, {}, "fast", seed=2)[1]
    b = _run(algorithm, "4x4x4", 256, {}, {}, "fast", seed=2)[1]
    c = _run(algorithm, "4x4x4", 256, {}, {}, "fast", seed=3)[1]
    assert model_fields(a) == model_fields(b)
    assert c["sim_time_s"] != a["sim_time_s"]


def test_routed_kernel_counts_spun_polls_when_the_reference_does():
    """The polls a waiting ``routed`` rank spins are counted when it resumes, after the events of the same
    instant; the kernel had counted them one event early, so a window mark crossed by another rank in
    between saw more (``send_blocking_factor_polled`` 0.98739 against 0.98775 here, a difference the random
    what-ifs below can find)."""
    sets = {"network.topology": "torus", "network.buffer_order": "pool", "network.link_bytes_per_s": 4e6,
            "network.chunk_bytes": 16, "network.link_buffer_chunks": 16, "network.injection_fifo_chunks": 8,
            "network.reception_fifo_chunks": 8, "cpu.processes_per_node": 2}
    fast_sim, fast = _run("routed", "1x3x3", 31, sets, {}, "fast", seed=34)
    ref_sim, ref = _run("routed", "1x3x3", 31, sets, {}, "simpy", seed=34)
    assert 0 < ref["alg_send_blocking_factor_polled"] < 1
    assert_engines_agree(fast_sim, fast, ref_sim, ref)


@pytest.mark.parametrize("algorithm, shape, updates, seed, sets, options", [
    ("one-packet", "2x4x4", 50, 215, {"network.max_chunks_per_packet": 4, "network.packet_header_bytes": 0,
                                      "network.packet_trailer_bytes": 0, "network.link_buffer_chunks": 11,
                                      "network.injection_fifo_chunks": 8, "network.reception_fifo_chunks": 9,
                                      "network.router_delay_ns": 10.0, "network.link_bytes_per_s": 172.9e6,
                                      "network.buffer_order": "pool", "cpu.clock_hz": 1.4e9,
                                      "cpu.processes_per_node": 2}, {}),
    ("baseline", "4x2x2", 200, 1, {"network.link_buffer_chunks": 8, "network.injection_fifo_chunks": 8,
                                   "network.reception_fifo_chunks": 8, "network.link_bytes_per_s": 2e7},
     {"termination": "messages"}),
])
def test_both_engines_report_a_deadlock_in_the_same_line(algorithm, shape, updates, seed, sets, options):
    """A torus without deadlock avoidance: the same instant, waiting ranks, packets stuck and updates applied
    (the fast engine's line names the ranks and the packets too)."""
    from gupsim.base.errors import DeadlockError

    sets = {**sets, "network.topology": "torus", "network.flow_control": "none"}
    lines = []
    for engine in ("fast", "simpy"):
        with pytest.raises(DeadlockError) as err:
            _run(algorithm, shape, updates, sets, options, engine, seed=seed)
        lines.append(str(err.value))
    assert lines[0] == lines[1]
    assert " wait" in lines[0] and "packets stuck in the network" in lines[0]


@st.composite
def _what_if(draw, longest=4, most_updates=120):
    """A random small BG/L what-if that every kernel models: the SimPy engine's configuration space, less
    the options the kernels refuse (``cut_through_bytes``, ``routed``'s shared receive buckets)."""
    algorithm = draw(st.sampled_from(["one-packet", "routed", "baseline"]))
    dims = [draw(st.integers(1, longest)) for _ in range(3)]
    if dims == [1, 1, 1]:
        dims[0] = 2
    packet = draw(st.sampled_from([4, 8]))  # chunks
    torus = draw(st.sampled_from(["mesh", "torus"]))
    sets = {
        "network.topology": torus,
        "network.routing": draw(st.sampled_from(["deterministic", "adaptive"])),
        "network.fifos": ("per-dimension" if algorithm == "routed"
                          else draw(st.sampled_from(["shared", "per-dimension"]))),
        "network.buffer_order": draw(st.sampled_from(["fifo", "pool"])),
        "network.half_ring_ties": draw(st.sampled_from(sorted(HALF_RING_TIES))),
        "network.link_bytes_per_s": draw(st.sampled_from([4e6, 3e7, 175e6, 7e8])),
        "network.chunk_bytes": draw(st.sampled_from([16, 32])),
        "network.max_chunks_per_packet": packet,
        "network.link_buffer_chunks": draw(st.sampled_from([2 * packet, 2 * packet + 3, 64])),
        "network.injection_fifo_chunks": draw(st.sampled_from([packet, 2 * packet + 1])),
        "network.reception_fifo_chunks": draw(st.sampled_from([packet, 64])),
        "cpu.processes_per_node": draw(st.sampled_from([1, 2])),
        "cache.routed_working_set": draw(st.sampled_from(["lookup", "round-robin"])),
    }
    options = {}
    if algorithm == "baseline":
        options = {"termination": draw(st.sampled_from(["counter", "messages"])),
                   "max_pending": draw(st.sampled_from([16, 1024]))}
    warm = algorithm == "routed" and draw(st.booleans())  # routed's warm start (gupsim.algorithms.routed_warm)
    return (algorithm, "x".join(map(str, dims)), draw(st.integers(16, most_updates)), sets, options,
            draw(st.integers(0, 999)), warm)


@settings(max_examples=25, deadline=None)
@given(_what_if())
def test_fast_engine_reproduces_the_simpy_reference_on_random_what_ifs(what_if):
    """The fixed grid above checks each feature; this draws mixtures of them (packet and buffer sizes,
    routing, buffer order, FIFOs, processes per node, termination).  A random search like it finds
    differences such as a FINISHED that overtakes data, or polls counted one event early."""
    _engines_agree_on(what_if)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_what_if(longest=8, most_updates=800))
def test_fast_engine_reproduces_the_simpy_reference_on_larger_random_what_ifs(what_if):
    """The same on up to 8x8x8 and 800 updates per process (300 draws: 8.6 and 20 min on two seeds,
    640 MB; ``pytest -m slow -k larger``)."""
    _engines_agree_on(what_if)


@st.composite
def _vc_what_if(draw):
    """A random what-if of :func:`_what_if` under Blue Gene/L's VC router, with its VCs, depth and token delay
    drawn too."""
    algorithm, shape, updates, sets, options, seed, warm = draw(_what_if())
    packet = sets["network.max_chunks_per_packet"]
    sets = {**sets, "network.router.name": "bgl-vc", "network.router.escape_vcs": draw(st.integers(1, 3)),
            "network.router.dynamic_vcs": draw(st.integers(0, 3)),
            "network.router.vc_depth_chunks": draw(st.sampled_from([2 * packet, 2 * packet + 3, 64])),
            "network.router.token_return_ns": draw(st.sampled_from([0.0, 37.5, 400.0]))}
    return algorithm, shape, updates, sets, options, seed, warm


@pytest.mark.slow  # the CI keeps the VC cases above and the decision-trace scripts (test_router_conformance)
@settings(max_examples=20, deadline=None)
@given(_vc_what_if())
def test_fast_engine_reproduces_the_simpy_reference_on_random_vc_router_what_ifs(what_if):
    """bgl-vc's VCs, depths and token delays mixed with the other what-ifs: both engines agree record for record."""
    _engines_agree_on(what_if)


def _engines_agree_on(what_if):
    """Record for record; a what-if whose buffers deadlock (the space holds some: e.g. ``baseline`` on 2x1x1 with
    shared 4-chunk FIFOs and FINISHED messages) must deadlock on both engines in the same line."""
    from gupsim.base.errors import DeadlockError

    algorithm, shape, updates, sets, options, seed, warm = what_if
    try:
        fast_sim, fast = _run(algorithm, shape, updates, sets, options, "fast", seed=seed, warm_start=warm)
    except DeadlockError as err:
        with pytest.raises(DeadlockError) as ref_err:
            _run(algorithm, shape, updates, sets, options, "simpy", seed=seed, warm_start=warm)
        assert str(ref_err.value) == str(err)
        return
    ref_sim, ref = _run(algorithm, shape, updates, sets, options, "simpy", seed=seed, warm_start=warm)
    assert fast["updates_applied"] == fast_sim.num_ranks * updates
    assert_engines_agree(fast_sim, fast, ref_sim, ref)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**62))
def test_compiled_jump_ahead_is_hpcc_starts(n):
    from gupsim.engines.fast.stream import starts_many

    assert int(starts_many(np.array([n], dtype=np.int64))[0]) == hpcc.starts(n)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=5000),
       st.integers(min_value=0, max_value=2**64 - 1))
def test_compiled_owner_is_hpcc_which_pe(log2_size, procs, value):
    from gupsim.engines.fast.stream import owner_of

    if 2**log2_size < procs:
        return
    lay = hpcc.TableLayout(log2_size, procs)
    args = [np.uint64(x) for x in (lay.table_size - 1, lay.top, lay.min_local_table_size, lay.remainder)]
    assert owner_of.py_func(np.uint64(value), *args) == lay.owner_of(value)
    assert owner_of(np.uint64(value), *args) == lay.owner_of(value)


def test_auto_picks_the_fast_engine_only_where_a_kernel_exists(bgl):
    from gupsim.engines.run import choose_engine

    def cfg(algorithm, **kw):
        return make_run_config(machine=bgl, shape="2x2x2", algorithm=algorithm, updates_per_process=64, **kw)

    assert choose_engine(cfg("one-packet")) == "fast"
    assert choose_engine(cfg("routed")) == "fast"
    assert choose_engine(cfg("baseline")) == "fast"
    assert choose_engine(cfg("upc")) == "simpy"
    assert choose_engine(cfg("routed", verify=True)) == "simpy"
    assert choose_engine(cfg("routed", engine="simpy")) == "simpy"
    with pytest.raises(GupsimError, match="no fast kernel for algorithm 'upc'"):
        choose_engine(cfg("upc", engine="fast"))
    assert simulate(cfg("upc"))[1]["engine"] == "simpy"


def test_engine_flag_on_the_command_line(capsys):
    from gupsim.app.cli import main

    main(["run", "--shape", "2x2x1", "--algorithm", "routed", "--updates", "64", "--engine", "fast"])
    assert "fast engine" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["run", "--shape", "2x2x1", "--algorithm", "upc", "--engine", "fast"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("gupsim: error: --engine fast: no fast kernel")


def test_a_run_too_big_for_memory_is_refused_in_one_line_before_anything_is_built(bgl):
    cfg = make_run_config(machine=bgl, shape="512x512x256", algorithm="routed", updates_per_process=16, engine="fast")
    with pytest.raises(GupsimError, match=r"fast engine\).* needs about .* GB") as exc:
        simulate(cfg)
    assert "\n" not in str(exc.value)


def test_fast_estimate_covers_measured_peaks():
    """The per-rank figures in gupsim.engines.fast are measured peaks (docs/performance.md); they must stay above
    what a 4096-rank run actually allocates in NumPy arrays."""
    from gupsim.base.memory import FAST_NODE_BYTES
    from gupsim.engines.fast import KERNELS, FastSimulation
    from gupsim.engines.fast.engine import per_rank_bytes

    for algorithm in KERNELS:
        sim = FastSimulation(make_run_config(machine=kernel_machine(algorithm), shape="16x16x16", algorithm=algorithm,
                                             updates_per_process=16))
        ranks = sim.num_ranks
        arrays = sim._arrays() | sim._kernel_arrays()
        held = sum(sum(x.nbytes for x in a) if isinstance(a, tuple) else a.nbytes  # the queue is a tuple
                   for a in arrays.values())
        # the estimate's figure per process (alltoall's includes its row of P entries per process)
        assert held < ranks * per_rank_bytes(sim.run) + 4096 * FAST_NODE_BYTES, algorithm


@pytest.mark.parametrize("engine", ["simpy", "fast"])
def test_both_engines_refuse_more_than_1024_pending_updates(bgl, engine):
    cfg = make_run_config(machine=bgl, shape="2x2x2", algorithm="routed", updates_per_process=2000,
                          algorithm_options={"bucket_capacity": 1000}, engine=engine)
    with pytest.raises(GupsimError, match="1024"):
        simulate(cfg)


@pytest.mark.parametrize("machine", ["hypatia-dv"])
def test_auto_uses_simpy_for_machines_the_kernels_do_not_model(machine):
    from gupsim.config import load_machine
    from gupsim.engines.run import choose_engine

    m = load_machine(machine)
    algorithm = "dv" if machine == "hypatia-dv" else "one-packet"
    shape = "4x1x1" if machine == "hypatia-dv" else "2x2x2"
    run = make_run_config(machine=m, shape=shape, algorithm=algorithm, updates_per_process=8)
    assert choose_engine(run) == "simpy"
    with pytest.raises(GupsimError, match="--engine fast"):
        choose_engine(make_run_config(machine=m, shape=shape, algorithm=algorithm, updates_per_process=8,
                                      engine="fast"))


def test_line_aligned_tables_start_on_a_cache_line_and_keep_their_values_when_grown():
    from gupsim.engines.fast import tables as tb

    for shape, dtype, fill in (((1000, tb.PK_COLS), np.int32, 0), ((300, 8), np.int32, -1), ((77,), np.int64, 5)):
        a = tb.line_aligned(shape, dtype, fill)
        assert a.ctypes.data % tb.CACHE_LINE == 0 and a.flags.c_contiguous and (a == fill).all()
        a.flat[:] = np.arange(a.size) % 1000
        b = tb.grow_on_lines(a, 2 * shape[0])
        assert b.ctypes.data % tb.CACHE_LINE == 0 and b.shape == (2 * shape[0], *shape[1:])
        assert (b[:shape[0]] == a).all()
    assert tb.PK_COLS * 4 == tb.CACHE_LINE  # a packet's int32 row is one line
