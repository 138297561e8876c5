"""routed's working set in a round-robin L1 (gupsim.model.routed_cache)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gupsim.base.errors import GupsimError
from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, simulate
from gupsim.model.routed_cache import (ROUTED_CACHE_MODELS, RefClass, characteristic_time, miss_probability,
                                       round_robin_miss_cycles, routed_classes)

SHAPES = [(4, 4, 2), (8, 8, 8), (16, 8, 16), (16, 32, 16), (32, 32, 16), (64, 32, 32)]


def _per_update(cache, shape, ppn=1, model="round-robin"):
    lengths = list(shape) + ([ppn] if ppn > 1 else [])
    ranks = math.prod(shape) * ppn
    hops = sum((n - 1) / n for n in lengths)
    return ROUTED_CACHE_MODELS[model](cache, lengths, ranks, 1024 // sum(lengths), 29, ppn) * hops


@given(st.lists(st.tuples(st.floats(0.01, 10), st.floats(1e-6, 1.0)), min_size=1, max_size=6),
       st.floats(0.01, 2.0), st.floats(16, 1e5))
def test_the_cache_holds_t_times_the_misses(raw, stream, capacity):
    """Little's law for a round-robin cache: every inserted line stays T, so occupancy = T x misses."""
    classes = [RefClass(r, lam) for r, lam in raw]
    t = characteristic_time(classes, stream, capacity)
    misses = stream + sum(c.refs_per_update * miss_probability(c.line_rate, t) for c in classes)
    assert t * misses == pytest.approx(capacity, rel=1e-6)


def test_a_stream_alone_gives_capacity_over_rate_and_hot_data_that_fits_never_misses():
    assert characteristic_time([], 2.0, 1000.0) == pytest.approx(500.0)
    t = characteristic_time([RefClass(1.0, 0.01)], 0.0, 1000.0)  # 100 hot lines, no stream
    assert math.isinf(t) and miss_probability(0.01, t) == 0.0


def test_lines_the_stream_evicts_cost_misses_even_when_the_hot_data_fits(bgl):
    """§4.3's 27 KB fit 32 KB, but a round-robin L1 still evicts them: misses at 16,384 nodes, none without a stream."""
    classes = routed_classes([32, 32, 16], 16384, 12, 29, bgl.cache.line_bytes)
    hot_bytes = sum(c.refs_per_update / c.line_rate for c in classes) * bgl.cache.line_bytes
    assert hot_bytes < bgl.cache.l1_bytes
    assert round_robin_miss_cycles(bgl.cache, [32, 32, 16], 16384, 12, 29) > 5.0
    assert math.isinf(characteristic_time(classes, 0.0, bgl.cache.l1_bytes / bgl.cache.line_bytes))


def test_miss_cycles_grow_with_machine_size_and_exceed_the_lookup_alone(bgl):
    rr = [_per_update(bgl.cache, s) for s in SHAPES]
    assert rr == sorted(rr)
    assert all(_per_update(bgl.cache, s) > _per_update(bgl.cache, s, model="lookup") for s in SHAPES)
    c = bgl.cache  # at most every hot reference misses to memory
    hops = sum((n - 1) / n for n in SHAPES[-1])
    assert rr[-1] < hops * 4 * (c.memory_cycles - c.l1_hit_cycles)
    assert _per_update(bgl.cache, (32, 32, 16), ppn=2) > _per_update(bgl.cache, (32, 32, 16))


def test_no_cache_section_means_no_cycles():
    assert round_robin_miss_cycles(None, [32, 32, 16], 16384, 12, 29) == 0.0


def test_the_option_reaches_the_hop_cost_of_a_run():
    # A 4 KB L1, so the round-robin misses (about 27 cycles a hop) cost more than one run's jitter between two
    # machines (3.5 cycles per update rms: tests/algorithms/test_routed.py); with the 32 KB L1 they cost ~4.
    def miss(model):
        machine = load_machine("bgl", {"cache.routed_working_set": model, "cache.l1_bytes": 4096})
        rec = simulate(make_run_config(machine=machine, shape="4x4x2", algorithm="routed", updates_per_process=4096,
                                       engine="fast"))[1]
        return rec["alg_lookup_miss_cycles_per_hop"], rec["cycles_per_update"]
    (lookup, cost_lookup), (rr, cost_rr) = miss("lookup"), miss("round-robin")
    assert lookup == 0.0 < rr
    assert cost_rr > cost_lookup


def test_an_unknown_working_set_model_is_one_line():
    with pytest.raises(GupsimError, match="routed_working_set"):
        load_machine("bgl", {"cache.routed_working_set": "lru"})
