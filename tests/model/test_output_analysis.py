"""MSER-5, the variance-time interval and the stopping rule's marks (gupsim.model.output_analysis), on series
whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from gupsim.model.output_analysis import (BATCHES, MIN_STOP_UPDATES, VT_DF, applied_marks, batch_means,
                                          expected_spread, first_check, independent, mean_variance, mser_cut,
                                          rate_interval, t_975, von_neumann, window_sum_spread)
from gupsim.model.run_config import MAX_PENDING_UPDATES


def _ar1(n, phi, mean, seed, sigma=1.0):
    """X_t = mean + phi (X_{t-1} - mean) + e_t, started from its stationary law."""
    rng = np.random.default_rng(seed)
    x = np.empty(n)
    x[0] = mean + rng.normal(0, sigma / np.sqrt(1 - phi * phi))
    e = rng.normal(0, sigma, n)
    for t in range(1, n):
        x[t] = mean + phi * (x[t - 1] - mean) + e[t]
    return x


def test_marks_are_ceil_k_total_over_m_exactly():
    for total in (7, 1000, 1001, 16_384, 262_144, 536_870_912, 3 * 2**61 + 5):
        m = min(1000, total)
        assert applied_marks(total) == [-(-k * total // m) for k in range(1, m + 1)]
    assert applied_marks(total=10**6)[-1] == 10**6


def test_student_t_points():
    # tabulated t(0.975, df): 2.0930 (19), 2.2281 (10), 2.0423 (30)
    assert t_975(19) == pytest.approx(2.0930, abs=2e-4)
    assert t_975(10) == pytest.approx(2.2281, abs=5e-4)
    assert t_975(30) == pytest.approx(2.0423, abs=2e-4)
    assert t_975(1) == pytest.approx(12.7062, abs=1e-4)  # exact forms, where the expansion is far off
    assert t_975(2) == pytest.approx(4.3027, abs=1e-4)


def test_mser_keeps_a_stationary_series_and_cuts_a_transient():
    x = _ar1(1000, 0.5, 10.0, seed=1)
    assert mser_cut(x.reshape(-1, 5).mean(axis=1)) < 20
    # an exponential transient from 30 down to 10 over the first ~150 points
    bias = 20.0 * np.exp(-np.arange(1000) / 30.0)
    cut = mser_cut((x + bias).reshape(-1, 5).mean(axis=1)) * 5
    assert 60 <= cut <= 300
    longer = mser_cut((x + 20.0 * np.exp(-np.arange(1000) / 90.0)).reshape(-1, 5).mean(axis=1)) * 5
    assert longer > cut


def test_batch_means_interval_covers_an_ar1_mean_at_its_level():
    # AR(1) with phi 0.8: mean 5 known; 20 batches of 500 are long against its correlation time (~9)
    covered = 0
    for seed in range(100):
        mean, half, lag1 = batch_means(_ar1(10_000, 0.8, 5.0, seed))
        covered += abs(mean - 5.0) <= half
    assert 88 <= covered <= 99
    # the half-width matches the known asymptotic variance sigma^2 / (1 - phi)^2 / n
    _, half, _ = batch_means(_ar1(200_000, 0.8, 5.0, 7))
    assert half == pytest.approx(t_975(BATCHES - 1) * np.sqrt(1 / 0.04 / 200_000), rel=0.35)


def test_window_sum_spread_of_white_noise_is_what_the_line_expects():
    # white noise: v(d) = variance x d, and the spread about the series' own mean loses the share L/n of it
    n = 100_000
    x = np.random.default_rng(2).normal(3.0, 2.0, n)
    for length in (1, 10, 1000):
        assert window_sum_spread(x, length) == pytest.approx(4.0 * length * (1 - length / n), rel=0.1)
    for length in (1, 10, 1000, n // 4):
        assert expected_spread(length, n, 0.0, 4.0) == pytest.approx(4.0 * length * (1 - length / n), rel=1e-9)


def test_mean_variance_covers_an_ar1_mean_at_its_level():
    # AR(1) with phi 0.8: sigma^2 = 1 / (1 - phi)^2 = 25 per point; a correlation time (~9) short against n/20
    covered, ratios = 0, []
    for seed in range(100):
        x = _ar1(10_000, 0.8, 5.0, seed)
        se = np.sqrt(mean_variance(x))
        covered += abs(x.mean() - 5.0) <= t_975(VT_DF) * se
        ratios.append(se / np.sqrt(25.0 / 10_000))
    assert 90 <= covered <= 100
    assert np.median(ratios) == pytest.approx(1.0, abs=0.15)


def _jitter_walk(n, a, b, seed):
    """Seconds per update with a random walk's increments (variance b a point) and a bounded jitter's
    differences (J_i - J_{i-1}, J white with variance a): the variance of the sum of all n is n b + 2 a."""
    rng = np.random.default_rng(seed)
    j = rng.normal(0.0, np.sqrt(a), n + 1)
    return 1.0 + rng.normal(0.0, np.sqrt(b), n) + np.diff(j)


def test_mean_variance_keeps_the_jitters_end_term_batch_means_would_multiply():
    """A jitter-dominated series (as ``routed``'s: 2a = 20 n b): the mean's variance is (n b + 2a) / n^2.
    Batch means report about 20 times that (each of the 20 batches carries the whole 2a) and a lag-1 statistic
    near -0.5; the variance-time line recovers it."""
    n, b = 200, 1e-4
    a = 10 * n * b
    truth = (n * b + 2 * a) / n ** 2
    est, bm, lag1 = [], [], []
    for seed in range(200):
        x = _jitter_walk(n, a, b, seed)
        est.append(mean_variance(x))
        _, half, c = batch_means(x)
        bm.append((half / t_975(BATCHES - 1)) ** 2)
        lag1.append(c)
    assert np.median(est) == pytest.approx(truth, rel=0.3)
    assert np.median(bm) > 10 * truth and np.median(lag1) < -0.3
    # and a 95% interval from it covers the mean about 95% of the time
    covered = sum(abs(_jitter_walk(n, a, b, s).mean() - 1.0) <= t_975(VT_DF) * np.sqrt(mean_variance(
        _jitter_walk(n, a, b, s))) for s in range(200))
    assert 180 <= covered <= 200


def test_von_neumann_flags_correlated_batch_means_and_passes_independent_ones():
    rng = np.random.default_rng(3)
    assert independent(von_neumann(rng.normal(size=20)))
    assert not independent(von_neumann(np.cumsum(rng.normal(size=20))))
    # too-short batches of a strongly correlated series
    assert not independent(batch_means(_ar1(2_000, 0.995, 0.0, 4))[2])


def test_rate_interval_of_a_steady_stream_with_a_slow_start():
    # 1e6 updates at 1e9/s, the first 10% at half speed: the cut is near 1e5 updates, the rate 1e9
    total = 10**6
    marks = np.array(applied_marks(total), dtype=float)
    rng = np.random.default_rng(5)
    spu = np.where(marks <= 1e5, 2e-9, 1e-9) * rng.uniform(0.8, 1.2, len(marks))
    times = np.cumsum(spu * np.diff(np.concatenate(([0.0], marks))))
    ri = rate_interval(marks, times)
    # seconds per update vary by 0.4 / sqrt(12) of the mean, mark by mark, independently: over the ~870 marks
    # after the cut the mean's standard error is 0.39%, and the half-width t(VT_DF) times that
    assert ri.ok and ri.low <= 1e9 <= ri.high
    assert (ri.high - ri.low) / 2 / 1e9 == pytest.approx(t_975(VT_DF) * 0.4 / np.sqrt(12 * 870), rel=0.3)
    assert 1e5 <= ri.warmup_updates <= 2e5  # MSER cuts at, or a little past, the transient's end
    assert ri.warmup_s == pytest.approx(times[np.searchsorted(marks, ri.warmup_updates)], rel=1e-12)
    assert ri.steady


def test_too_short_a_series_is_insufficient():
    ri = rate_interval(applied_marks(150), np.arange(1, 151) * 1e-9)
    assert not ri.ok and not ri.steady and np.isnan(ri.low)



def test_marks_crossed_in_bursts_give_no_interval_rather_than_a_division_by_zero():
    """An algorithm that applies a whole round at one instant (alltoall) crosses many marks at equal times;
    the series then holds zero-length intervals, and where all of them are, there is no rate to bound."""
    marks = applied_marks(1000)
    bursts = np.repeat([1.0, 2.0], len(marks) // 2)  # two rounds, each applied at a single instant
    got = rate_interval(marks, bursts)
    assert not got.ok and not got.steady
    one_instant = rate_interval(marks, np.full(len(marks), 1.0))  # every mark at once: no time passes
    assert not one_instant.ok and one_instant.rate != one_instant.rate  # NaN, not a ZeroDivisionError


def test_the_stopping_floor_is_twice_hpccs_pending_limit():
    assert MIN_STOP_UPDATES == 2 * MAX_PENDING_UPDATES
    # 1,000 marks of a 4,096-update cap: the first judgement at 2,048 a process (mark 500) with buckets, at
    # 200 marks without; a cap of 2,048 or less is judged only at its end, or never
    assert first_check(4096, 1000, True) == 500 and first_check(4096, 1000, False) == 200
    assert first_check(2048, 1000, True) == 1000 and first_check(128, 1000, True) > 1000
