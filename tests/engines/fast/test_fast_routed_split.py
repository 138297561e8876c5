"""``routed-split`` on the fast engine (gupsim/engines/fast/routed_split.py) against the SimPy class
(gupsim/algorithms/routed_split.py) on Blue Gene/P: dual and virtual-node mode, one to three router cores,
meshes, tori and a throttled line of nodes; the records equal, bit for bit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.base.errors import GupsimError
from gupsim.config import load_machine
from gupsim.engines.run import choose_engine
from gupsim.engines.run import make_run_config, simulate
from tests.engines.fast.conftest import assert_agree_or_deadlock_alike, assert_engines_agree

DUAL, VN = ({"cpu.processes_per_node": n} for n in (2, 4))
TORUS = {"network.topology": "torus"}
LINE = {"network.link_bytes_per_s": 1e8}  # slow links on a line of nodes: senders are throttled often

CASES = [
    # (shape, updates per process, machine overrides, algorithm options)
    ("2x2x2", 200, DUAL, {}),
    ("4x2x2", 150, VN, {}),
    ("4x2x2", 150, VN, {"router_cores": 2}),
    ("4x4x2", 150, {**TORUS, **DUAL}, {}),
    ("4x2x2", 150, {**TORUS, **VN}, {"router_cores": 2}),
    ("2x2x2", 120, {**TORUS, **VN}, {"router_cores": 3, "handoff_cycles": 25.0, "bucket_capacity": 4}),
    ("8x1x1", 200, {**LINE, **DUAL}, {}),
]


def _run(shape, updates, sets, options, engine, seed=0):
    machine = load_machine("bgp", sets)
    return simulate(make_run_config(machine=machine, shape=shape, algorithm="routed-split",
                                    updates_per_process=updates, engine=engine, seed=seed,
                                    algorithm_options=options))


@pytest.mark.parametrize("shape, updates, sets, options", CASES)
def test_fast_engine_reproduces_routed_split_on_the_simpy_reference_bit_for_bit(shape, updates, sets, options):
    fast_sim, fast = _run(shape, updates, sets, options, "fast")
    ref_sim, ref = _run(shape, updates, sets, options, "simpy")
    assert_engines_agree(fast_sim, fast, ref_sim, ref)
    assert fast["updates_applied"] == fast_sim.num_ranks * updates
    assert fast["alg_handoffs_per_update"] > 0 and fast["alg_packets_sent"] > 0  # workers and routers both ran


def test_routed_split_is_auto_fast_and_refuses_what_its_kernel_does_not_model_in_one_line():
    machine = load_machine("bgp", DUAL)

    def cfg(**kw):
        return make_run_config(machine=machine, shape="2x2x1", algorithm="routed-split", updates_per_process=64, **kw)

    assert choose_engine(cfg()) == "fast"
    shared = {"receive_buckets": "shared"}
    assert choose_engine(cfg(algorithm_options=shared)) == "simpy"
    with pytest.raises(GupsimError, match="option receive_buckets='shared' is not in the routed-split kernel") as err:
        choose_engine(cfg(algorithm_options=shared, engine="fast"))
    assert "\n" not in str(err.value)


def test_routed_split_in_smp_mode_is_refused_alike_on_both_engines():
    """One core per node leaves no worker: the same one line from either engine."""
    messages = []
    for engine in ("fast", "simpy"):
        with pytest.raises(GupsimError) as err:
            _run("2x2x1", 64, {"cpu.processes_per_node": 1}, {}, engine)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "leaves no worker core" in messages[0] and "\n" not in messages[0]


@st.composite
def _split_what_if(draw):
    """A random small routed-split run: shape, mode, router cores, hand-off cost, buffers, seed."""
    dims = [draw(st.integers(1, 4)) for _ in range(3)]
    if dims == [1, 1, 1]:
        dims[0] = 2
    ppn = draw(st.sampled_from([2, 4]))
    sets = {"cpu.processes_per_node": ppn,
            "network.topology": draw(st.sampled_from(["mesh", "torus"])),
            "network.link_bytes_per_s": draw(st.sampled_from([5e7, 425e6, 2e9])),
            "network.injection_fifo_chunks": draw(st.sampled_from([8, 256])),
            "network.reception_fifo_chunks": draw(st.sampled_from([8, 256])),
            "dma.throttle_backoff_ns": draw(st.sampled_from([0.0, 100.0]))}
    options = {"router_cores": draw(st.integers(1, ppn - 1)),
               "handoff_cycles": draw(st.sampled_from([0.0, 10.0, 40.0]))}
    return "x".join(map(str, dims)), draw(st.integers(16, 100)), sets, options, draw(st.integers(0, 999))


@settings(max_examples=12, deadline=None)
@given(_split_what_if())
def test_fast_engine_reproduces_routed_split_on_random_runs(what_if):
    """Record for record, nothing lost; a run whose buffers deadlock must deadlock on both engines alike."""
    shape, updates, sets, options, seed = what_if
    assert_agree_or_deadlock_alike(lambda engine: _run(shape, updates, sets, options, engine, seed=seed), updates)
