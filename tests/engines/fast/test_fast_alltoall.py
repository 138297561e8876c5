"""The compiled ``alltoall`` kernel (gupsim/engines/fast/alltoall.py) against the SimPy reference, bit for bit.

The cases run every path of the kernel: both exchanges (``fixed``, ``counts``) and schedules (``pairwise``,
``linear``), odd and even process counts that are not powers of two, processes that run out of updates in
different rounds (so that some send empty done blocks while others still fill), a bucket of one update (a
round per update), slow links (the exchange's sends wait for the FIFO and its any_of for the send's end),
virtual-node mode, FIFOs per dimension, adaptive routing and buffers in hardware order; the record's round
metrics (``alg_share_*``, ``alg_fill_cv``, ``alg_fill_wait_share``, ``alg_full_round_gups``) included.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, simulate
from tests.engines.fast.conftest import assert_agree_or_deadlock_alike
from tests.engines.fast.test_fast import _what_if

SLOW = {"network.link_bytes_per_s": 1e7}

CASES = [
    # (machine, shape, updates per process, machine overrides, options)
    ("cray-x1", "2x2x1", 300, {}, {"bucket_size": 16}),                                     # 16 MSPs
    ("cray-x1", "3x1x1", 400, {}, {"bucket_size": 8, "exchange": "counts"}),                # 12
    ("cray-x1", "3x1x1", 400, {}, {"bucket_size": 8, "schedule": "linear"}),
    ("cray-x1", "3x2x1", 500, {"network.link_bytes_per_s": 1e8},
     {"bucket_size": 32, "exchange": "counts", "schedule": "linear"}),                      # 24
    ("bgl", "3x1x1", 600, {}, {"bucket_size": 16}),                                         # P = 3
    ("bgl", "5x1x1", 600, {"network.link_bytes_per_s": 2e6}, {"bucket_size": 16, "exchange": "counts"}),
    ("bgl", "4x2x2", 300, {**SLOW, "network.topology": "torus", "network.routing": "adaptive"}, {"bucket_size": 8}),
    ("bgl", "4x2x1", 300, {**SLOW, "cpu.processes_per_node": 2, "network.fifos": "per-dimension"},
     {"bucket_size": 8, "schedule": "linear"}),
    ("bgl", "3x3x1", 400, {**SLOW, "network.buffer_order": "fifo", "network.topology": "torus"},
     {"bucket_size": 4, "exchange": "counts"}),
    ("bgl", "2x1x1", 100, {}, {"bucket_size": 1}),                                          # a round per update
]


def _run(machine, shape, updates, sets, options, engine, seed=0):
    return simulate(make_run_config(machine=load_machine(machine, sets), shape=shape, algorithm="alltoall",
                                    updates_per_process=updates, algorithm_options=options, engine=engine,
                                    seed=seed))


@pytest.mark.parametrize("machine, shape, updates, sets, options", CASES)
def test_alltoall_kernel_reproduces_the_simpy_reference_bit_for_bit(machine, shape, updates, sets, options):
    assert_agree_or_deadlock_alike(lambda engine: _run(machine, shape, updates, sets, options, engine), updates)


def test_the_cases_run_out_in_different_rounds_and_keep_full_rounds():
    """The equality above is only worth as much as the paths it runs: a run whose processes run out of
    updates in different rounds has rounds left out of the shares, and full rounds whose shares are numbers."""
    _, rec = _run(*CASES[1], "fast")
    assert 0 < rec["alg_full_rounds"] < rec["alg_rounds"] - 1
    assert 0 < rec["alg_share_exchange"] < 1 and rec["alg_fill_cv"] > 0


@st.composite
def _alltoall_what_if(draw):
    """A random small BG/L what-if of test_fast's space, running alltoall with its options drawn: up to 2x2x2
    nodes (16 processes) and 120 updates each, so that SimPy's P(P - 1) messages a round stay a few seconds."""
    _, shape, updates, sets, _, seed, _ = draw(_what_if(longest=2, most_updates=120))
    options = {"bucket_size": draw(st.sampled_from([3, 8, 32])),
               "exchange": draw(st.sampled_from(["fixed", "counts"])),
               "schedule": draw(st.sampled_from(["pairwise", "linear"]))}
    return shape, updates, sets, options, seed


@settings(max_examples=25, deadline=None)
@given(_alltoall_what_if())
def test_alltoall_kernel_reproduces_the_simpy_reference_on_random_what_ifs(what_if):
    shape, updates, sets, options, seed = what_if
    assert_agree_or_deadlock_alike(lambda engine: _run("bgl", shape, updates, sets, options, engine, seed), updates)
