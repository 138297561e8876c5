"""The compiled ``baseline`` kernel (gupsim/fast/baseline.py) against the SimPy reference, bit for bit.

The cases make every path of the kernel run: blocked send tests (slow links, so
the SBF is high), MPI_Isend packets waiting for room in the injection FIFO,
meshes and tori, deterministic and adaptive routing, virtual-node mode, and
each option (``max_pending``, ``receive_test_every``, ``termination``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.algorithms.baseline import Baseline
from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, simulate
from tests.engines.fast.conftest import assert_engines_agree

SLOW = {"network.link_bytes_per_s": 2e6}  # ~90x slower links: most send tests block
#: Slow links, small chunks, adaptive routing: a rank's later packets pass its earlier ones on the torus
OVERTAKE = {"network.topology": "torus", "network.routing": "adaptive", "network.link_bytes_per_s": 4.5e6,
            "network.chunk_bytes": 16}

CASES = [
    # (shape, updates per process, machine overrides, options)
    ("2x2x2", 300, {}, {}),                                                            # mesh, nothing blocks
    ("4x4x2", 600, {**SLOW, "network.topology": "torus"}, {}),                          # torus, bubble, blocked
    ("4x2x2", 600, {**SLOW, "cpu.processes_per_node": 2}, {}),                          # virtual-node mode
    ("4x2x2", 600, {**SLOW, "network.topology": "torus", "network.routing": "adaptive"}, {}),
    ("2x2x2", 800, {**SLOW, "network.injection_fifo_chunks": 8}, {"receive_test_every": 7}),
    ("4x2x2", 400, {**SLOW, "cpu.processes_per_node": 2, "network.reception_fifo_chunks": 16}, {"max_pending": 32}),
    ("4x4x2", 600, {"network.link_bytes_per_s": 2e7, "network.topology": "torus"},
     {"termination": "messages", "max_pending": 64}),
    # FINISHED waits for the last data send: without it, a FINISHED packet granted FIFO room at the
    # same instant overtook the data and its receiver stopped reading (updates lost)
    ("2x2x2", 600, {"network.link_bytes_per_s": 2e6}, {"termination": "messages"}),
    # a FINISHED that overtook data in the network waits for it (MPI's order): adaptive routing, pool buffers
    ("4x4x2", 64, {**OVERTAKE, "network.buffer_order": "fifo"}, {"termination": "messages"}),
    ("4x4x2", 128, {**OVERTAKE, "network.buffer_order": "pool"}, {"termination": "messages"}),
    # FIFOs per dimension (and node-local)
    ("4x4x2", 600, {**SLOW, "network.topology": "torus", "network.fifos": "per-dimension"}, {}),
    ("4x2x2", 400, {**SLOW, "cpu.processes_per_node": 2, "network.fifos": "per-dimension"}, {"max_pending": 32}),
    # buffers and FIFOs in hardware order (head-of-line blocking)
    ("4x4x2", 600, {**SLOW, "network.topology": "torus", "network.buffer_order": "fifo"}, {}),
    ("4x2x2", 400, {**SLOW, "cpu.processes_per_node": 2, "network.buffer_order": "fifo",
                    "network.routing": "adaptive", "network.topology": "torus"}, {"max_pending": 32}),
]


def _run(shape, updates, sets, options, engine):
    return simulate(make_run_config(machine=load_machine("bgl", sets), shape=shape, algorithm="baseline",
                                    updates_per_process=updates, algorithm_options=options, engine=engine))


@pytest.mark.parametrize("shape, updates, sets, options", CASES)
def test_baseline_kernel_reproduces_the_simpy_reference_bit_for_bit(shape, updates, sets, options):
    assert_engines_agree(*_run(shape, updates, sets, options, "fast"), *_run(shape, updates, sets, options, "simpy"))


def test_the_slow_cases_really_block():
    """The blocked-test paths (the any_of wait, FIFO waits) are only checked if they run."""
    rec = _run(*CASES[1][:3], {}, "fast")[1]
    assert rec["send_blocking_factor"] > 0.5


def test_baseline_kernel_matches_the_accounting_when_nothing_blocks(bgl):
    """On 8x8x4 (256 nodes, beyond what the default suite runs on SimPy) nothing blocks, and the
    simulated cycles per update equal the CPU accounting with the simulated bucket size within 2%."""
    rec = simulate(make_run_config(machine=bgl, shape="8x8x4", algorithm="baseline", updates_per_process=4096,
                                   engine="fast"))[1]
    assert rec["send_blocking_factor"] < 0.01
    model = Baseline.steady_cycles_per_update(bgl, 256, rec["updates_per_message"])
    assert rec["cycles_per_update"] == pytest.approx(model, rel=0.02)


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 500), st.integers(1, 24),
       st.lists(st.tuples(st.booleans(), st.integers(0, 10**6)), max_size=300))
def test_kernel_buckets_pop_what_the_reference_buckets_pop(nr, limit, ops):
    """The indexed heap (entries carry their hash slot) against :class:`Buckets`: adds (while fewer than
    ``max_pending`` updates wait, as the kernel adds) and pops interleaved, the table sized as prepare()
    sizes it; with more destinations than slots, probe runs form and deletions shift entries back."""
    from gupsim.model.bucketing import Buckets
    from gupsim.engines.fast import bucket_heap as bh

    t = bh.tables(nr, limit)  # sized as the baseline kernel sizes them for nr ranks; rank 0's rows
    hk, hkey, hpos, mask, shift = t["heap"][:1], t["dests"][:1], t["positions"][:1], t["mask"], t["shift"]
    n = 0
    ref = Buckets()
    for add, x in ops:
        if (add or not len(ref)) and ref.pending < limit:
            dest = x % nr
            ref.add(dest, 0)
            n = bh.add(hk, hkey, hpos, 0, n, dest, nr, mask, shift)
        elif len(ref):
            dest, bucket = ref.pop_largest()
            assert bh.pop_largest(hk, hkey, hpos, 0, n, nr, mask, shift) == (dest, len(bucket))
            n -= 1
        assert n == len(ref)
        for pos in range(len(ref)):  # each entry names its table slot, and the slot points back
            entry = int(hk[0, pos])
            assert hkey[0, entry & mask] == nr - 1 - (entry >> shift) % nr and hpos[0, entry & mask] == pos
    while len(ref):
        dest, bucket = ref.pop_largest()
        assert bh.pop_largest(hk, hkey, hpos, 0, n, nr, mask, shift) == (dest, len(bucket))
        n -= 1
    assert (hkey == -1).all()


@pytest.mark.parametrize("engine", ["simpy", "fast"])
@pytest.mark.parametrize("updates, order, seed", [(64, "fifo", 2), (128, "pool", 0)])
def test_a_finished_message_that_overtakes_data_waits_for_it(engine, updates, order, seed):
    """MPI matches one sender's messages in order, so HPCC's receiver has every update of a rank before its
    FINISHED.  With adaptive routing (and pool buffers) the network delivers out of order; a
    receiver that stopped reading once it had every FINISHED would lose the overtaken updates
    (``SimulationError: updates lost``)."""
    machine = load_machine("bgl", {**OVERTAKE, "network.buffer_order": order})
    sim, rec = simulate(make_run_config(machine=machine, shape="4x4x2", algorithm="baseline", seed=seed,
                                        updates_per_process=updates, algorithm_options={"termination": "messages"},
                                        engine=engine))
    assert rec["updates_applied"] == 32 * updates
    if engine == "simpy":
        alg = sim.algorithm
        assert alg.finished_ranks == 32
        assert alg.data_received == alg.data_sent_to and sum(alg.data_sent_to) == rec["alg_messages_sent"]
