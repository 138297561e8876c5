"""Tests for gupsim.model.hpcc: the HPCC LFSR stream, jump-ahead, table layout and verification."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.base.errors import GupsimError
from gupsim.model.hpcc import MAX_LANES, PERIOD, POLY, TableLayout, VerifyResult, apply_updates, initial_table, next_ran, starts, stream, verify

MASK64 = (1 << 64) - 1


def step_n(x: int, n: int) -> int:
    for _ in range(n):
        x = next_ran(x)
    return x


def scalar_stream(first: int, count: int) -> list[int]:
    """The HPCC inner loop, written out independently of stream()."""
    ran = starts(first)
    out = []
    for _ in range(count):
        ran = ((ran << 1) & MASK64) ^ (POLY if ran >= 1 << 63 else 0)
        out.append(ran)
    return out


# --- next_ran -----------------------------------------------------------------


def test_next_ran_doubles_small_values():
    x, seen = 1, []
    for _ in range(6):
        x = next_ran(x)
        seen.append(x)
    assert seen == [2, 4, 8, 16, 32, 64]


def test_next_ran_feeds_back_poly_when_top_bit_set():
    assert next_ran(1 << 63) == POLY
    assert next_ran(MASK64) == (MASK64 << 1 & MASK64) ^ 7 == 0xFFFFFFFFFFFFFFF9
    assert next_ran(0x8000000000000001) == 0x2 ^ 0x7
    # Just below the top bit: no feedback, no loss.
    assert next_ran((1 << 62) | 1) == (1 << 63) | 2


def test_next_ran_step_64_from_one_is_poly():
    # x^64 == x^2 + x + 1 in the ring, i.e. the value 7.
    assert step_n(1, 63) == 1 << 63
    assert step_n(1, 64) == POLY


# --- starts -------------------------------------------------------------------


def test_starts_zero_and_period_return_one():
    assert starts(0) == 1
    assert starts(PERIOD) == 1
    assert starts(2 * PERIOD) == 1
    assert starts(1) == 2


def test_starts_matches_stepping_from_one_for_small_n():
    x = 1
    for n in range(0, 2001):
        assert starts(n) == x, n
        x = next_ran(x)


@pytest.mark.parametrize("n", [4095, 4096, 65537, 123456])
def test_starts_matches_stepping_for_larger_n(n):
    assert starts(n) == step_n(1, n)


def test_starts_negative_wraps_by_period():
    assert starts(-1) == starts(PERIOD - 1)
    assert next_ran(starts(-1)) == 1
    assert starts(-5) == starts(PERIOD - 5)
    assert step_n(starts(-5), 5) == 1


def test_starts_known_reference_value():
    # x^64 reduced once, x^65 = x^3 + x^2 + x.
    assert starts(64) == 0x7
    assert starts(65) == 0xE


@settings(max_examples=60, deadline=None)
@given(a=st.integers(min_value=-(2**62), max_value=2**62), b=st.integers(0, 200))
def test_starts_is_jump_ahead(a, b):
    assert starts(a + b) == step_n(starts(a), b)


# --- stream -------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, 1, 2, 63, 64, 65, 1000])
def test_stream_equals_scalar_loop_default_lanes(count):
    got = stream(12345, count)
    assert got.dtype == np.uint64
    assert got.shape == (count,)
    assert got.tolist() == scalar_stream(12345, count)


@pytest.mark.parametrize("lanes", [1, 7, 64])
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_stream_equals_scalar_loop_around_lane_multiples(lanes, delta):
    for mult in (1, 3):
        count = lanes * mult + delta
        if count < 0:
            continue
        assert stream(99, count, lanes=lanes).tolist() == scalar_stream(99, count), count


def test_stream_equals_scalar_loop_at_max_lanes_boundary():
    for count in (MAX_LANES - 1, MAX_LANES + 1, 5 * MAX_LANES + 3):
        assert stream(7, count, lanes=MAX_LANES).tolist() == scalar_stream(7, count)


def test_stream_large_count_uses_many_lanes_and_matches_ends():
    count = 300_001
    got = stream(0, count)
    assert got[:50].tolist() == scalar_stream(0, 50)
    assert got[-50:].tolist() == scalar_stream(count - 50, 50)
    # Spot-check lane seams in the middle against the jump-ahead.
    for i in (1, 1234, 150_000, 299_999):
        assert int(got[i]) == starts(i + 1)


def test_stream_from_zero_starts_with_powers_of_two():
    assert stream(0, 5).tolist() == [2, 4, 8, 16, 32]


def test_stream_rejects_negative_count():
    with pytest.raises(GupsimError):
        stream(0, -1)


@settings(max_examples=40, deadline=None)
@given(
    f=st.integers(min_value=-(2**40), max_value=2**62),
    a=st.integers(0, 3000),
    b=st.integers(0, 3000),
    lanes=st.none() | st.integers(1, 50),
)
def test_stream_concatenation(f, a, b, lanes):
    whole = stream(f, a + b, lanes=lanes)
    parts = np.concatenate([stream(f, a, lanes=lanes), stream(f + a, b)])
    assert np.array_equal(whole, parts)


# --- table layout -------------------------------------------------------------


@pytest.mark.parametrize(
    "log2,procs", [(10, 1), (10, 4), (10, 3), (10, 7), (12, 1000), (8, 256), (5, 32), (6, 33)]
)
def test_layout_owner_and_local_offset_round_trip(log2, procs):
    layout = TableLayout(log2, procs)
    assert sum(layout.local_size(p) for p in range(procs)) == layout.table_size
    # Processors tile the table contiguously in order.
    assert layout.global_start(0) == 0
    for p in range(1, procs):
        assert layout.global_start(p) == layout.global_start(p - 1) + layout.local_size(p - 1)

    values = np.concatenate([stream(0, 5000), np.arange(layout.table_size, dtype=np.uint64)])
    owner = layout.owner(values)
    local = layout.local_offset(values, owner)
    assert owner.dtype == np.int64 and local.dtype == np.int64
    g = (values & np.uint64(layout.table_size - 1)).astype(np.int64)
    starts_arr = np.array([layout.global_start(p) for p in range(procs)], dtype=np.int64)
    sizes = np.array([layout.local_size(p) for p in range(procs)], dtype=np.int64)
    assert ((owner >= 0) & (owner < procs)).all()
    assert np.array_equal(starts_arr[owner] + local, g)
    assert (local >= 0).all() and (local < sizes[owner]).all()


def test_layout_non_power_of_two_uneven_split():
    layout = TableLayout(4, 3)  # 16 entries: 6, 5, 5
    assert (layout.min_local_table_size, layout.remainder, layout.top) == (5, 1, 6)
    assert [layout.local_size(p) for p in range(3)] == [6, 5, 5]
    assert [layout.global_start(p) for p in range(3)] == [0, 6, 11]
    offsets = np.arange(16, dtype=np.uint64)
    assert layout.owner(offsets).tolist() == [0] * 6 + [1] * 5 + [2] * 5
    assert layout.local_offset(offsets, layout.owner(offsets)).tolist() == (
        list(range(6)) + list(range(5)) + list(range(5))
    )


def test_layout_owner_uses_low_bits_only():
    layout = TableLayout(4, 4)
    high = np.array([(1 << 63) | 5, (0xABC << 20) | 15], dtype=np.uint64)
    assert layout.owner(high).tolist() == [1, 3]
    assert layout.local_offset(high, layout.owner(high)).tolist() == [1, 3]


def test_layout_huge_table_arithmetic_does_not_overflow():
    layout = TableLayout(63, 1)
    v = np.array([MASK64, 0, 1 << 62], dtype=np.uint64)
    assert layout.owner(v).tolist() == [0, 0, 0]
    assert layout.local_offset(v, layout.owner(v)).tolist() == [(1 << 63) - 1, 0, 1 << 62]


@pytest.mark.parametrize("log2,procs", [(0, 1), (64, 1), (4, 0), (4, -2), (3, 9)])
def test_bad_layouts_raise(log2, procs):
    with pytest.raises(GupsimError):
        TableLayout(log2, procs)


def test_layout_proc_out_of_range_raises():
    layout = TableLayout(4, 3)
    with pytest.raises(GupsimError):
        layout.local_size(3)
    with pytest.raises(GupsimError):
        layout.global_start(-1)


# --- verification -------------------------------------------------------------


def test_apply_updates_handles_repeated_indices():
    layout = TableLayout(3, 1)
    table = initial_table(layout)
    vals = np.array([8 | 2, 16 | 2, 32 | 2, 5], dtype=np.uint64)  # three hit index 2
    apply_updates(table, vals, layout)
    expected = np.arange(8, dtype=np.uint64)
    expected[2] ^= np.uint64(8 | 2) ^ np.uint64(16 | 2) ^ np.uint64(32 | 2)
    expected[5] ^= np.uint64(5)
    assert np.array_equal(table, expected)


def test_apply_updates_rejects_wrong_table():
    layout = TableLayout(4, 1)
    with pytest.raises(GupsimError):
        apply_updates(np.zeros(8, dtype=np.uint64), np.zeros(1, dtype=np.uint64), layout)


def test_verify_passes_after_full_stream():
    layout = TableLayout(12, 5)
    values = stream(0, 4 * layout.table_size)
    table = initial_table(layout)
    apply_updates(table, values, layout)
    assert not np.array_equal(table, initial_table(layout))
    result = verify(table, values, layout)
    assert result == VerifyResult(errors=0, table_size=layout.table_size, passed=True)


def test_verify_fails_with_two_percent_of_updates_dropped():
    layout = TableLayout(12, 5)
    values = stream(0, 4 * layout.table_size)
    rng = np.random.default_rng(0)
    keep = rng.random(values.size) >= 0.02
    table = initial_table(layout)
    apply_updates(table, values[keep], layout)
    result = verify(table, values, layout)
    assert result.errors > 0.01 * layout.table_size
    assert not result.passed


def test_verify_one_percent_boundary():
    layout = TableLayout(12, 1)  # 4096 entries: 40 errors pass, 41 fail
    table = initial_table(layout)
    table[:40] ^= np.uint64(1)
    ok = verify(table, np.empty(0, dtype=np.uint64), layout)
    assert ok.errors == 40 and ok.passed
    table[40] ^= np.uint64(1)
    bad = verify(table, np.empty(0, dtype=np.uint64), layout)
    assert bad.errors == 41 and not bad.passed


def test_verify_does_not_modify_table():
    layout = TableLayout(8, 2)
    values = stream(3, 100)
    table = initial_table(layout)
    apply_updates(table, values, layout)
    before = table.copy()
    verify(table, values, layout)
    assert np.array_equal(table, before)
