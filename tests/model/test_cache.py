"""The cache-miss model of the baseline's per-destination data (gupsim.model.cpu_cache)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gupsim.algorithms.baseline import Baseline
from gupsim.model.bucketing import mean_bucket_size
from gupsim.model.cpu_cache import baseline_cache_costs, hit_fraction, miss_cycles
from gupsim.config import load_machine
from gupsim.base.errors import GupsimError
from gupsim.engines.run import make_run_config, simulate


@given(st.floats(1, 1e9), st.floats(1, 1e12), st.floats(1.01, 100))
def test_hit_fraction_is_a_probability_that_falls_with_reuse_distance(capacity, reuse, factor):
    h = hit_fraction(capacity, reuse)
    assert 0.0 <= h <= 1.0
    assert hit_fraction(capacity, reuse * factor) <= h
    assert hit_fraction(capacity * factor, reuse) >= h


def test_miss_cycles_run_from_an_l1_hit_to_a_memory_access(bgl):
    c = bgl.cache
    assert miss_cycles(c, 1.0) == pytest.approx(0.0, abs=1e-9)
    assert miss_cycles(c, 1e15) == pytest.approx(c.memory_cycles - c.l1_hit_cycles, rel=1e-3)
    # Data that outgrows L1 but fits L3 costs about the L3 latency.
    assert miss_cycles(c, 30 * c.l1_bytes) == pytest.approx(c.l3_hit_cycles - c.l1_hit_cycles, rel=0.05)


def test_no_cache_section_means_no_cache_cycles(bgl):
    costs = baseline_cache_costs(None, 256.0, 16384, 1.07)
    assert costs.per_remote_update == costs.per_message_side == 0.0
    assert baseline_cache_costs(bgl.cache, 256.0, 1, 1.0).per_remote_update == 0.0


def test_miss_costs_grow_with_machine_size(bgl):
    sizes = {n: mean_bucket_size(n, updates=2**12) for n in (32, 512, 2048, 16384, 65536)}
    per_update = [baseline_cache_costs(bgl.cache, 256.0, n, b).per_remote_update for n, b in sizes.items()]
    per_message = [baseline_cache_costs(bgl.cache, 256.0, n, b).per_message_side for n, b in sizes.items()]
    assert per_update == sorted(per_update) and per_message == sorted(per_message)
    assert per_update[0] < 1.0  # 32 destinations fit L1 easily
    # Once everything misses L3, the heap path and the bucket header go to memory.
    c = bgl.cache
    assert per_update[-1] < (math.log2(65535) + 1) * (c.memory_cycles - c.l1_hit_cycles)


def test_the_seeds_l1_argument_holds_in_the_model(bgl):
    """§6.1: L1 misses start to matter from N >= 512 (16 KB of pending updates + 20 B per destination)."""
    small = baseline_cache_costs(bgl.cache, 0.0, 64, mean_bucket_size(64, updates=2**12)).per_remote_update
    large = baseline_cache_costs(bgl.cache, 0.0, 512, mean_bucket_size(512, updates=2**12)).per_remote_update
    assert small < 15.0 < large


def test_cache_fields_are_settable_and_validated():
    m = load_machine("bgl", {"cache.l1_bytes": 65536})
    assert m.cache.l1_bytes == 65536
    with pytest.raises(GupsimError, match="latencies must grow"):
        load_machine("bgl", {"cache.l3_hit_cycles": 200})


def test_accounting_matches_the_simulation_while_nothing_blocks(bgl):
    """The closed-form cycle count of the baseline is the simulation's when the CPU is the bottleneck."""
    rec = simulate(make_run_config(machine=bgl, shape="4x4x2", algorithm="baseline", updates_per_process=4096))[1]
    assert rec["send_blocking_factor"] < 0.01
    model = Baseline.steady_cycles_per_update(bgl, 32, rec["updates_per_message"])
    assert model == pytest.approx(rec["cycles_per_update"], rel=0.02)


def test_machine_file_holds_the_fitted_peer_state(bgl):
    """The YAML's mpi.peer_state_bytes is what the documented fit gives (N = 4096 row, by the accounting)."""
    from gupsim.studies.validation import load_experiment

    assert load_experiment("bgl-table3").fit_peer_state_bytes() == pytest.approx(bgl.mpi.peer_state_bytes, rel=0.01)


# ----------------------------------------------------------------------------- routed's lookup table


@given(st.integers(2, 1 << 20), st.floats(1.0, 4.0))
def test_routed_lookup_misses_grow_with_the_machine_and_stay_within_one_l3_hit(ranks, hops):
    from gupsim.model.cpu_cache import routed_lookup_miss_cycles

    c = load_machine("bgl").cache
    cost = routed_lookup_miss_cycles(c, ranks, hops)
    assert 0.0 <= cost <= c.memory_cycles - c.l1_hit_cycles + 1e-9
    if ranks <= 1 << 17:  # a table of at most 128 KB is held by the 4 MB L3: at most an L3 hit
        assert cost <= c.l3_hit_cycles - c.l1_hit_cycles + 1e-6
    assert routed_lookup_miss_cycles(c, 2 * ranks, hops) >= cost


def test_routed_pays_lookup_misses_only_where_the_table_outgrows_l1():
    from gupsim.model.cpu_cache import routed_lookup_miss_cycles

    c = load_machine("bgl").cache
    assert routed_lookup_miss_cycles(c, 2048, 2.75) < 0.01  # 2 KB table: it stays in L1
    assert routed_lookup_miss_cycles(c, 65536, 2.92) > 10 * routed_lookup_miss_cycles(c, 8192, 2.84)
    assert routed_lookup_miss_cycles(None, 65536, 2.92) == 0.0  # no cache section: no cost


def test_routed_records_carry_the_lookup_cost_and_spend_it(bgl):
    def cycles(machine):
        # 2048 per process: at 512 the steady-state window is mostly bucket fill and drain, and the
        # cycles per update jitter by more than the lookup cost
        return simulate(make_run_config(machine=machine, shape="4x4x4", algorithm="routed",
                                        updates_per_process=2048))[1]

    lookup = {"cache.routed_working_set": "lookup"}  # the lookup table alone (gupsim.model.cpu_cache)
    plain = cycles(load_machine("bgl", lookup))
    assert plain["alg_lookup_miss_cycles_per_hop"] < 1e-3  # 64 ranks: nothing
    # a 256-byte L1 makes the 64-byte table miss: the cost shows in the record and in the cycles
    small = cycles(load_machine("bgl", lookup | {"cache.l1_bytes": 64, "cache.line_bytes": 8}))
    assert small["alg_lookup_miss_cycles_per_hop"] > 5
    assert small["cycles_per_update"] > plain["cycles_per_update"] + 5


def test_machine_file_holds_the_fitted_mpi_costs(bgl):
    """bgl.yaml's mpi.test_cycles and heap_cycles_per_level are what the §6.1 fit at N = 32 gives."""
    from gupsim.studies.validation import load_experiment

    test_cycles, heap_cycles = load_experiment("bgl-table3").fit_mpi_costs()
    assert test_cycles == pytest.approx(bgl.mpi.test_cycles, abs=0.1)
    assert heap_cycles == pytest.approx(bgl.mpi.heap_cycles_per_level, abs=0.1)
