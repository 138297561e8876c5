"""How precise a run's rate is: the warm-up cut (MSER-5) and a 95% confidence interval from batch means.

Both engines record the simulated time at which the updates applied cross each of :func:`applied_marks`'s
evenly spaced marks.  :func:`rate_interval` turns that series into the rate after the warm-up and its interval:

* **The series analysed is seconds per update**, interval by interval (an interval's duration over the updates
  it holds), not updates per second.  The long-run rate is total updates over total time, the reciprocal of the
  mean seconds per update; a mean of per-interval rates is a harmonic-mean mistake biased high by the noise
  (Jensen), and an interval crossed in no time (one message applying many updates) has an infinite rate but a
  finite duration.  The rate's interval is the reciprocal of seconds per update's, so ``cycles_per_update``
  (processes x clock x seconds per update) gets its interval the same way.
* **Warm-up: MSER-5** (White 1997, "An effective truncation heuristic for bias reduction in simulation output",
  Simulation 69(6):323-334; White, Cobb & Spratt 2000, "A comparison of five steady-state truncation
  heuristics", Proc. Winter Simulation Conference 755-760).  The series is batched in fives and the cut d is
  the one that minimises the squared standard error of the mean of what remains,
  sum((Z_j - mean)^2) / (m - d)^2.  It is the usual choice for a long, noisy queueing output: it needs no
  parameter, and Hoad, Robinson & Davies (2010, "Automating warm-up length estimation", JORS 61(9):1389-1403)
  found it the most reliable of the methods they compared.  MSER is searched over the first half of the series; a minimum at its end,
  or cuts that leave less than half the series, mean the run never settled within it (Franklin & White 2008,
  Proc. WSC 541-546): precision insufficient.
* **The drain** at the end (processes out of updates, the last buckets flushed) is a transient too: MSER-5
  cuts it from the series reversed, before the warm-up is cut from what is left.
* **Interval: non-overlapping batch means** (Law & Kelton, Simulation Modeling and Analysis, 3rd ed., 2000,
  §9.5.3; Alexopoulos & Seila 1998, "Output data analysis", Handbook of Simulation ch. 7).  What is left after
  the cut forms :data:`BATCHES` equal batches (Schmeiser 1982, "Batch size effects in the analysis of
  simulation output", Oper. Res. 30:556-568, advises 10 to 30); the interval is the Student t interval on their
  means.  It is valid when the batch means are nearly independent, which the von Neumann ratio tests (Fishman
  1978, "Grouping observations in digital simulation", Management Science 24:510-521): its statistic C, an
  estimate of the batch means' lag-1 autocorrelation, is about normal with variance (k-2)/(k^2-1) for k
  independent means, and a C above the one-sided 1% point says the batches are too short: precision
  insufficient.  So does a cut that leaves fewer than :data:`MIN_POINTS` MSER points (5 per batch).

Why written here and not a library: the one maintained MSER package on PyPI, ``pymser`` (IBM), is built for
Monte Carlo adsorption output and brings SciPy and statsmodels for what is some thirty lines of NumPy; no
maintained package does batch means with this diagnostic.  The tests (``tests/model/test_output_analysis.py``)
check both against series whose answers are known: an AR(1) process, and one with an initial transient.
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
    (Abramowitz & Stegun 1964, 26.7.5; good to 1e-4 from 5 degrees of freedom)."""
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
    mean, half, lag1 = batch_means(rest)
    rate = (ends[n - e] - ends[d]) / span
    low = 1.0 / (mean + half) if mean + half > 0 else nan
    high = 1.0 / (mean - half) if mean > half else nan
    ok = settled and independent(lag1) and high == high and low == low
    return RateInterval(float(rate), low, high, BATCHES, lag1, warm_u, warm_s, ok)
