"""The one rate a record is reported by ("GUPS"): the steady-state estimate with its 95% interval.

A run's record (:func:`gupsim.engines.run.make_record`) holds three rates: the rate after the warm-up and
drain cuts (``gups_steady``, with ``gups_ci_low``/``gups_ci_high`` from the same series,
:func:`gupsim.model.output_analysis.rate_interval`), the rate between 25% and 75% of the updates applied
(historically ``gups``) and the whole run's (``gups_total``, HPCC's own metric).  Shown side by side under
the one name they disagreed: a short ``routed`` run on 2x2x2 printed 0.0163 (window), 0.0062 (whole run) and
0.0233 ± 0.0095 (after the warm-up), and a results row showed the window's 0.0332 beside the other
estimator's interval [0.0160, 0.0309].  The window and the MSER cut measure different stretches of a run
still settling (the window starts at 25% whatever the warm-up; MSER cuts where the series settles), so on a
short run they differ by tens of percent, and only one of them has an interval.

So what every summary, results column, plot and validation row calls GUPS is the rate of the estimator that
has the interval, and the interval is that estimator's.  The other two keep names that say what they are:
``gups_window`` (25-75% of the updates applied) and ``gups_total`` (the whole run).  ``cycles_per_update``
and ``network_bound_fraction`` follow the headline rate, so a row's columns agree with each other.
``precision`` means one thing: the interval's half-width against the target asked (``--precision``), or the
steady-state rule's 5% (:data:`gupsim.model.output_analysis.STEADY_HALF_WIDTH`) where none was, printed as
"±0.8% (target 1%)".

This lives above the engines, deriving from what a record already holds, so that records kept by earlier
code read the same way; it is idempotent (a record already read carries ``gups_window``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from gupsim.algorithms.base import ALGORITHMS
from gupsim.model.output_analysis import STEADY_HALF_WIDTH

#: The column that keeps the rate between 25% and 75% of the updates applied, once ``gups`` is the headline.
WINDOW_COLUMN = "gups_window"


def as_float(value: Any) -> float:
    """A record's or store row's field as a float; NaN where it is missing or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


@dataclass(frozen=True)
class Headline:
    """A record's GUPS, its 95% interval (NaN where the run gave no valid one) and the precision asked."""

    rate: float
    low: float
    high: float
    target: float
    asked: bool

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "Headline":
        """The headline of a record or store row (raw, or already read by :func:`headline_record`)."""
        valid = row.get("precision") == "ok"
        target = as_float(row.get("precision_target"))
        asked = target == target
        return cls(rate=as_float(row.get("gups_steady")),
                   low=as_float(row.get("gups_ci_low")) if valid else math.nan,
                   high=as_float(row.get("gups_ci_high")) if valid else math.nan,
                   target=target if asked else STEADY_HALF_WIDTH, asked=asked)

    @property
    def valid(self) -> bool:
        """An interval was found (the warm-up and drain cuts settled, the batch means pass as independent)."""
        return self.low == self.low and self.high == self.high and self.rate == self.rate

    @property
    def half_width(self) -> float:
        """The interval's half-width as a fraction of the rate (NaN without a valid interval)."""
        return (self.high - self.low) / 2 / self.rate if self.valid and self.rate > 0 else math.nan

    @property
    def met(self) -> bool:
        """The interval is valid and within the target."""
        return self.valid and self.half_width <= self.target

    def precision_text(self) -> str:
        """"±0.8% (target 1%)", or "no valid interval (target 1%)"."""
        target = f"target {_pct(self.target)}"
        if not self.valid:
            return f"no valid interval ({target})"
        return f"±{_pct(self.half_width)} ({target})"

    def text(self, unit: str = " GUPS") -> str:
        """"0.04113 ± 0.00021 GUPS [0.04092, 0.04134]", or the rate alone without a valid interval."""
        if self.rate != self.rate:
            return "n/a"
        if not self.valid:
            return f"{self.rate:.4g}{unit}"
        digits = _digits(self.rate, (self.high - self.low) / 2)
        return (f"{self.rate:.{digits}f} ± {(self.high - self.low) / 2:.{digits}f}{unit} "
                f"[{self.low:.{digits}f}, {self.high:.{digits}f}]")


def _pct(fraction: float) -> str:
    """A fraction as a percentage with two significant figures at most (0.008 -> 0.8%, 0.05 -> 5%)."""
    return f"{100 * fraction:.2g}%"


def _digits(rate: float, half: float) -> int:
    """Decimals that show the interval's half-width to two significant figures (at least four)."""
    scale = half if half > 0 else abs(rate)
    return max(4, 1 - math.floor(math.log10(scale))) if scale > 0 else 4


def headline_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with ``gups`` the headline rate, the window's rate kept as ``gups_window``, and
    ``cycles_per_update`` and ``network_bound_fraction`` following ``gups`` (idempotent)."""
    out = dict(record)
    if WINDOW_COLUMN in out or "gups_steady" not in out:
        return out
    old, new = as_float(out.get("gups")), Headline.of(out).rate
    out[WINDOW_COLUMN] = old if not out.get("precision_reached") and not _whole_run(out) else math.nan
    out["gups"] = new
    out["cycles_per_update"] = as_float(out.get("cycles_per_update")) * old / new if new > 0 else math.nan
    bound = as_float(out.get("network_bound_gups"))
    if bound > 0:
        out["network_bound_fraction"] = new / bound
    return out


def _whole_run(row: Mapping[str, Any]) -> bool:
    """Whether the record's ``gups`` was the whole run's rate (an algorithm that applies round by round)."""
    name = row.get("algorithm")
    return name in ALGORITHMS and ALGORITHMS[name].rate_over_whole_run


def headline_table(table: pd.DataFrame) -> pd.DataFrame:
    """A store's rows read by :func:`headline_record` (the column order kept, ``gups_window`` after ``gups``)."""
    if table.empty or "gups_steady" not in table or WINDOW_COLUMN in table:
        return table
    rows = [headline_record({k: v for k, v in row.items()}) for row in table.to_dict("records")]
    columns = list(table.columns)
    columns.insert(columns.index("gups") + 1 if "gups" in columns else len(columns), WINDOW_COLUMN)
    return pd.DataFrame(rows, index=table.index, columns=columns)


def readable_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`headline_table`, with ``precision`` as text ("±0.8% (target 1%)") and whether the interval is
    valid as ``interval_valid`` beside it: ``gupsim results`` and its exports."""
    table = headline_table(table)
    if table.empty or "precision" not in table:
        return table
    heads = [Headline.of(row) for row in table.to_dict("records")]
    table = table.assign(precision=[h.precision_text() for h in heads])
    table.insert(table.columns.get_loc("precision") + 1, "interval_valid", [h.valid for h in heads])
    return table
