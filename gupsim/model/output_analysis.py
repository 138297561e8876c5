"""How precise a run's rate is: the warm-up cut (MSER-5) and a 95% confidence interval from the variance-time line.

Both engines record the simulated time at which the updates applied cross each of :func:`applied_marks`'s
evenly spaced marks.  :func:`rate_interval` turns that series into the rate after the warm-up and its interval:

* **The series analysed is seconds per update**, interval by interval (an interval's duration over the updates
  it holds), not updates per second.  The long-run rate is total updates over total time, the reciprocal of the
  mean seconds per update; a mean of per-interval rates is a harmonic-mean mistake biased high by the noise
  (Jensen), and an interval crossed in no time (one message applying many updates) has an infinite rate but a
  finite duration.  The rate's interval is the reciprocal of seconds per update's, so ``cycles_per_update``
  (processes x clock x seconds per update) gets its interval the same way.
* **Warm-up: MSER-5.**  MSER (White & Minnox 1994, "Minimizing initialization bias in simulation output using
  a simple heuristic", Proc. 1994 IEEE Int. Conf. on Systems, Man, and Cybernetics 1:215; White 1997, "An effective truncation heuristic for bias reduction
  in simulation output", Simulation 69(6):323-334) on batches of five, Spratt's (1998) MSER-5, which White, Cobb
  & Spratt (2000, "A comparison of five steady-state truncation heuristics for simulation", Proc. Winter
  Simulation Conference 755-760) found the most effective and robust of the five rules they compared.  The cut
  d is the one that minimises the squared standard error of the mean of what remains,
  sum((Z_j - mean)^2) / (m - d)^2.  It is the usual choice for a long, noisy queueing output: it needs no
  parameter, and Hoad, Robinson & Davies (2010, "Automating warm-up length estimation", J. Operational
  Research Society 61(9):1389-1403), after short-listing the methods in the literature, retained it alone for
  automation and tested it at length.  MSER is searched over the first half of the series; a minimum at its end,
  or cuts that leave less than half the series, mean the run never settled within it (Franklin & White 2008,
  Proc. WSC 541-546): precision insufficient.
* **The drain** at the end (processes out of updates, the last buckets flushed) is a transient too: MSER-5
  cuts it from the series reversed, before the warm-up is cut from what is left.
* **Interval: the variance of the mean from the variance-time curve of overlapping sums.**  For a stationary
  series the variance of the mean of n points has two terms, n Var(mean) = sigma^2 - gamma_1 / n + o(1/n), where
  sigma^2 is the spectral density at zero and gamma_1 = sum_h |h| gamma_h (Song & Schmeiser 1995, "Optimal
  mean-squared-error batch sizes", Management Science 41(1):110-123).  So the variance
  of a sum of L consecutive points is V(L) = L sigma^2 - gamma_1, a line.  The textbook batch-means interval
  (Law & Kelton, Simulation Modeling and Analysis, 3rd ed., 2000, section 9.5.3) keeps only the first term.
  That is wrong for this output: the time at which u updates have been applied is the time they were
  generated plus a bounded delay (at most 1,024 pending updates a process), so the series of seconds per update
  carries a differenced, bounded jitter.  Its gamma_1 is negative and, on a short run of ``routed``, larger than
  n sigma^2: batch means of 20 batches then read lag-1 correlations near -0.4 and intervals some 6 times too
  wide at any batch size a run of a few thousand updates a process allows.  The interval here keeps both terms: V(L) is estimated at
  :data:`VT_FRACTIONS` of the series from overlapping sums (the overlapping-batch-means statistic, Meketon &
  Schmeiser 1984, "Overlapping batch means: something for nothing?", Proc. 1984 Winter Simulation Conference), the line
  A + B L is fitted to them by least squares (each statistic's expectation, deviations about the series' own
  mean included, is linear in A and B), and Var(mean) = V(n) / n^2 with V(n) = A + B n.  Combining
  estimators at several batch sizes to cancel the 1/m bias term is Song & Schmeiser's idea too.  The t point has OBM's
  degrees of freedom at its longest window, 1.5 (n/m - 1) with n/m = 4, rounded up (:data:`VT_DF`).
  Where the series has no jitter (A near 0) this is overlapping batch means; with it, it is what a batch
  means interval would be with batches as long as the whole run.
* **Validity.**  :data:`BATCHES` non-overlapping batch means remain as the diagnostic: the von Neumann ratio
  (Fishman 1978, "Grouping observations in digital simulation", Management Science 24(5):510-521; von Neumann
  1941) estimates their lag-1 autocorrelation, about normal with variance (k-2)/(k^2-1) for k independent
  means.  A statistic above the one-sided 1% point says the series remembers for longer than a twentieth of
  it, beyond what the fit's windows see: precision insufficient.  A negative one is the jitter above, which
  the fit accounts for.  So does a cut that leaves fewer than :data:`MIN_POINTS` MSER points (5 per batch).

Why written here and not a library: the one maintained MSER package on PyPI, ``pymser`` (IBM), is built for
Monte Carlo adsorption output and brings SciPy and statsmodels for what is some thirty lines of NumPy; no
maintained package fits the variance-time line.  The tests (``tests/model/test_output_analysis.py``) check them
against series whose answers are known: an AR(1) process, a differenced jitter plus a random walk, and a series
with an initial transient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: The most marks a run records (fewer when the run has fewer updates).
MARKS = 1000
#: MSER's batch size (the "5" of MSER-5).
MSER_BATCH = 5
#: Batch means after the cut.
BATCHES = 20
#: Fewest MSER points left after the cut for an interval (one MSER batch per interval batch).
MIN_POINTS = BATCHES
#: One-sided normal point of the von Neumann test of the batch means' independence (1%).
INDEPENDENCE_Z = 2.3263
#: A rate is a steady-state rate when its interval is valid and its half-width at most this fraction of it.
STEADY_HALF_WIDTH = 0.05
#: Window lengths of the variance-time fit, as fractions of the series after the cuts.
VT_FRACTIONS = (0.05, 0.10, 0.15, 0.20, 0.25)
#: Degrees of freedom of the interval's t point (OBM's at its longest window, 1.5 x (4 - 1), rounded up).
VT_DF = 5
#: The stopping rule (``--precision``) is evaluated each time the updates applied cross a multiple of this many
#: marks (2% of the cap), so that both engines evaluate it at the same instants (:func:`check_points`).
CHECK_EVERY = 20
#: The fewest marks that can give an interval (2 x MIN_POINTS MSER points): the rule is evaluated from there on.
FIRST_CHECK = 2 * MIN_POINTS * MSER_BATCH
#: ... and, for an algorithm that holds updates back in buckets (``Algorithm.holds_pending``), not before this
#: many updates a process have been applied: twice HPCC's pending limit (1,024:
#: ``gupsim.model.run_config.MAX_PENDING_UPDATES``, not imported: this module sits below the run's
#: configuration, and a test checks the two agree).  The updates applied trail those
#: generated by up to that limit, and a run's start fills it: until every process has cycled its pending
#: updates a couple of times, the rate can still be drifting more slowly than MSER can see on the stretch
#: observed (``baseline`` on 128 nodes read 2.8% low, its 1% interval excluding the long-run rate, when
#: stopped at 819 updates a process).
MIN_STOP_UPDATES = 2048
#: The interval's two-sided normal point (95%).
Z_95 = 1.959964


def applied_marks(total: int) -> list[int]:
    """The update counts at which a run of ``total`` updates records the time: ceil(k x total / M) for
    k = 1..M, M = min(:data:`MARKS`, total); exact integers (total = qM + r, so the mark is kq + ceil(kr/M))."""
    m = min(MARKS, total)
    q, r = divmod(total, m) if m else (0, 0)
    return [k * q - (-(k * r) // m) for k in range(1, m + 1)]


def mser_cut(z: Sequence[float]) -> int:
    """MSER's cut: how many leading points of ``z`` to drop, the d minimising sum((z_j - mean)^2) / (n - d)^2
    over the points d..n-1, searched over the first half (d <= n // 2): past it the statistic rests on too few
    points and falls towards zero whatever the data.  A cut at n // 2 says the minimum may lie further."""
    z = np.asarray(z, dtype=float)
    n = len(z)
    if n < 3:
        return 0
    # sums over the tails z[d:], from the end
    s1 = np.cumsum(z[::-1])[::-1]
    s2 = np.cumsum((z * z)[::-1])[::-1]
    count = n - np.arange(n)
    sse = s2 - s1 * s1 / count
    half = n // 2 + 1
    return int(np.argmin(sse[:half] / count[:half] ** 2))


def t_975(df: int) -> float:
    """Student's t 97.5% point with ``df`` degrees of freedom, by the Cornish-Fisher expansion
    (Abramowitz & Stegun 1964, 26.7.5; good to 1e-4 from 5 degrees of freedom), exact in closed form at 1 and 2
    degrees of freedom, where the expansion is far off (11.3 for 12.71 at 1)."""
    if df == 1:
        return math.tan(math.pi * 0.475)  # the Cauchy distribution's quantile
    if df == 2:
        return 0.95 * math.sqrt(2 / (1 - 0.95 ** 2))
    z, v = Z_95, float(df)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / v + g2 / v ** 2 + g3 / v ** 3 + g4 / v ** 4


def von_neumann(means: Sequence[float]) -> float:
    """The von Neumann ratio's C statistic, 1 - sum of squared successive differences / (2 x sum of squared
    deviations): an estimate of the lag-1 autocorrelation, about N(0, (k-2)/(k^2-1)) for k independent means."""
    x = np.asarray(means, dtype=float)
    dev = float(((x - x.mean()) ** 2).sum())
    return 1.0 - float((np.diff(x) ** 2).sum()) / (2.0 * dev) if dev > 0 else 0.0


def batch_means(x: Sequence[float], batches: int = BATCHES) -> tuple[float, float, float]:
    """``x``'s mean, the half-width of its 95% interval from ``batches`` non-overlapping batch means (the
    first len(x) mod batches points dropped), and the batch means' lag-1 statistic (:func:`von_neumann`)."""
    x = np.asarray(x, dtype=float)
    size = len(x) // batches
    means = x[len(x) - size * batches:].reshape(batches, size).mean(axis=1)
    half = t_975(batches - 1) * float(means.std(ddof=1)) / math.sqrt(batches)
    return float(means.mean()), half, von_neumann(means)


def window_sum_spread(x: Sequence[float], length: int) -> float:
    """The mean of (S - L x mean)^2 over the n - L + 1 overlapping windows of ``length`` = L points of ``x``
    (S a window's sum, mean the whole series'): the overlapping-batch-means statistic without its bias factor."""
    x = np.asarray(x, dtype=float)
    c = np.concatenate(([0.0], np.cumsum(x - x.mean())))
    dev = c[length:] - c[:-length]
    return float((dev * dev).mean())


def expected_spread(length: int, n: int, intercept: float, slope: float) -> float:
    """What :func:`window_sum_spread` expects of a series whose sums of d consecutive points have variance
    v(d) = A + B d (v(0) = 0): v(L) - 2 (L/n) mean_i Cov(S_i, S_n) + (L/n)^2 v(n), the covariances of sums
    over [i, i+L) and [0, n) from v, as for any process with stationary increments."""
    def v(d: np.ndarray) -> np.ndarray:
        return np.where(d > 0, intercept + slope * d, 0.0)
    i = np.arange(n - length + 1)
    cov = 0.5 * (v(n - i) + v(i + length) - v(n - i - length) - v(i))
    share = length / n
    return float(v(np.array(length)) - 2 * share * cov.mean() + share * share * v(np.array(n)))


def mean_variance(x: Sequence[float]) -> float:
    """Var(mean of ``x``): the variance-time line v(d) = A + B d fitted by least squares to
    :func:`window_sum_spread` at :data:`VT_FRACTIONS` of the series (through :func:`expected_spread`, linear in
    A and B), then v(n) / n^2 (module docstring).  A slope below zero is noise about a flat line: taken as 0."""
    n = len(x)
    lengths = sorted({max(1, int(f * n)) for f in VT_FRACTIONS})
    observed = np.array([window_sum_spread(x, length) for length in lengths])
    design = np.array([[expected_spread(length, n, 1.0, 0.0), expected_spread(length, n, 0.0, 1.0)]
                       for length in lengths])
    (intercept, slope), *_ = np.linalg.lstsq(design, observed, rcond=None)
    return max(float(intercept + max(float(slope), 0.0) * n), 0.0) / (n * n)


def independent(lag1: float, batches: int = BATCHES) -> bool:
    """Whether batch means with von Neumann statistic ``lag1`` pass as independent (Fishman 1978, 1% level)."""
    return lag1 <= INDEPENDENCE_Z * math.sqrt((batches - 2) / (batches * batches - 1))


@dataclass(frozen=True)
class RateInterval:
    """A run's rate after the warm-up (updates per simulated second), its 95% interval and diagnostics."""

    rate: float
    low: float
    high: float
    batches: int
    lag1: float
    warmup_updates: int
    warmup_s: float
    ok: bool

    @property
    def steady(self) -> bool:
        """The steady-state rule, the only one: a valid interval (``ok``: the warm-up and drain cuts leave at
        least half the series, the batch means pass as independent) whose half-width is at most
        :data:`STEADY_HALF_WIDTH` of the rate."""
        return self.ok and (self.high - self.low) / 2 <= STEADY_HALF_WIDTH * self.rate


def first_check(updates_per_process: int, marks: int, holds_pending: bool) -> int:
    """The first mark count at which the stopping rule is evaluated, for a run of ``updates_per_process``
    (the cap) with ``marks`` marks: the first multiple of :data:`CHECK_EVERY` at or past :data:`FIRST_CHECK`
    and, if the algorithm ``holds_pending``, past :data:`MIN_STOP_UPDATES` a process (past ``marks``: never,
    the run is too short)."""
    need = -(-MIN_STOP_UPDATES * marks // updates_per_process) if holds_pending else 0
    return -(-max(FIRST_CHECK, need) // CHECK_EVERY) * CHECK_EVERY


def check_points(before: int, after: int, first: int) -> range:
    """The mark counts in (``before``, ``after``] at which the stopping rule is evaluated: the multiples of
    :data:`CHECK_EVERY` from ``first`` (:func:`first_check`) on."""
    start = max(before + 1, first)
    return range(-(-start // CHECK_EVERY) * CHECK_EVERY, after + 1, CHECK_EVERY)


def precise(marks: Sequence[int], times: Sequence[float], precision: float) -> bool:
    """The stopping rule: the rate's interval from these marks is valid and its half-width is at most
    ``precision`` of the rate (the run then ends with the instant it is evaluated at)."""
    ri = rate_interval(marks, times)
    return ri.ok and (ri.high - ri.low) / 2 <= precision * ri.rate


def rate_interval(marks: Sequence[int], times: Sequence[float]) -> RateInterval:
    """The rate's interval from the times at which ``marks`` updates had been applied (from time 0)."""
    nan = float("nan")
    marks_a = np.asarray(marks, dtype=float)
    times_a = np.asarray(times, dtype=float)
    n = len(marks_a) // MSER_BATCH
    if n < 2 * MIN_POINTS or len(times_a) != len(marks_a) or not np.isfinite(times_a).all():
        return RateInterval(nan, nan, nan, 0, nan, 0, 0.0, False)
    # MSER-5 points: seconds per update over five intervals each, the first len mod 5 intervals left out
    idx = len(marks_a) % MSER_BATCH - 1 + MSER_BATCH * np.arange(n + 1)
    ends = np.where(idx < 0, 0.0, marks_a[np.maximum(idx, 0)])
    at = np.where(idx < 0, 0.0, times_a[np.maximum(idx, 0)])
    z = np.diff(at) / np.diff(ends)
    e = mser_cut(z[::-1])  # the drain: processes out of updates, the last buckets flushed
    d = mser_cut(z[:n - e])
    settled = e < n // 2 and d < (n - e) // 2 and d + e <= n // 2
    rest = z[d:n - e]
    warm_u, warm_s = int(ends[d]), float(at[d])
    if len(rest) < MIN_POINTS:
        return RateInterval(nan, nan, nan, 0, nan, warm_u, warm_s, False)
    span = at[n - e] - at[d]
    if not span > 0:  # the marks were all crossed at one instant (a whole round applied at once): no series
        return RateInterval(nan, nan, nan, 0, nan, warm_u, warm_s, False)
    mean = float(rest.mean())
    half = t_975(VT_DF) * math.sqrt(mean_variance(rest))
    if not half > 0:  # no spread at all: nothing to build an interval from
        return RateInterval(nan, nan, nan, 0, nan, warm_u, warm_s, False)
    lag1 = batch_means(rest)[2]
    rate = (ends[n - e] - ends[d]) / span
    low = 1.0 / (mean + half) if mean + half > 0 else nan
    high = 1.0 / (mean - half) if mean > half else nan
    ok = settled and independent(lag1) and high == high and low == low
    return RateInterval(float(rate), low, high, BATCHES, lag1, warm_u, warm_s, ok)
