"""Two runs, or two groups of runs, side by side: each side's GUPS with its interval, the ratio and the
difference with theirs, and a verdict in words (``gupsim compare``).

A what-if is a comparison ("what if the links were twice as fast?"), and a rate alone cannot answer it: two
rates 0.5% apart are the same rate when each is known to ±1%.  Each side is one record or several (the seeds
of one configuration, pooled): its rate is the mean of its records' headline rates
(:mod:`gupsim.studies.headline`), its standard error from theirs.  A record's standard error is its 95%
interval's half-width over the interval's t point (:func:`gupsim.model.output_analysis.t_975` at
:data:`gupsim.model.output_analysis.VT_DF` degrees of freedom), the same t the engines' interval used; a
pooled side's is sqrt(sum se_i^2) / k, the seeds' runs being independent.

* **Difference** b - a: standard error sqrt(se_a^2 + se_b^2).
* **Ratio** b / a: the delta method (a first-order Taylor expansion of b / a about the two means: relative
  standard error sqrt((se_a / a)^2 + (se_b / b)^2)).  It is good while each side's relative error is small (a
  few percent, as the default 2% precision gives); Fieller's interval would be exact for normal sides but
  differs from it by less than the third digit there, and is undefined when a's interval reaches zero.
* Both intervals use the t point above, so a comparison is no more confident than its sides.
* **Verdict**: the ratio's interval containing 1 is "no detectable change at 95%"; otherwise faster or
  slower by the ratio.  The reference side's limiting resource (:mod:`gupsim.studies.limiting`) follows, so
  that "no change" after relieving a resource that did not bind reads as what it is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from gupsim.model.output_analysis import VT_DF, t_975
from gupsim.studies.figures import readable
from gupsim.studies.headline import Headline
from gupsim.studies.limiting import Limit

#: The t point of every interval here (the engines' interval's own).
T = t_975(VT_DF)


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its label, rate (GUPS), standard error and the rows it pools."""

    label: str
    rate: float
    se: float
    rows: tuple[Mapping[str, Any], ...]

    @classmethod
    def of(cls, label: str, rows: Iterable[Mapping[str, Any]]) -> "Side":
        rows = tuple(rows)
        heads = [Headline.of(r) for r in rows]
        ses = [(h.high - h.low) / 2 / T if h.valid else math.nan for h in heads]
        k = len(heads)
        rate = sum(h.rate for h in heads) / k if k else math.nan
        se = math.sqrt(sum(s * s for s in ses)) / k if k else math.nan
        return cls(label, rate, se, rows)

    @property
    def valid(self) -> bool:
        return self.se == self.se and self.rate == self.rate

    def text(self) -> str:
        """One record's own interval (:meth:`Headline.text`), or a pooled side's rate ± t x se."""
        if len(self.rows) == 1:
            return f"{self.label}: {Headline.of(self.rows[0]).text()}"
        runs = f" ({len(self.rows)} runs pooled)"
        if not self.valid:
            return f"{self.label}: {self.rate:.4g} GUPS, no valid interval{runs}"
        half = T * self.se
        return f"{self.label}: {self.rate:.4g} ± {half:.2g} GUPS [{self.rate - half:.4g}, {self.rate + half:.4g}]{runs}"


@dataclass(frozen=True)
class Comparison:
    """``b`` against the reference ``a``."""

    a: Side
    b: Side
    #: What differs between the sides, for the verdict ("link_bytes_per_s x2"); by default "B vs A".
    change: str = ""

    @property
    def ratio(self) -> float:
        return self.b.rate / self.a.rate if self.a.rate else math.nan

    @property
    def ratio_se(self) -> float:
        """The delta method's standard error of b / a."""
        return abs(self.ratio) * math.hypot(self.a.se / self.a.rate, self.b.se / self.b.rate)

    @property
    def difference(self) -> float:
        return self.b.rate - self.a.rate

    @property
    def difference_se(self) -> float:
        return math.hypot(self.a.se, self.b.se)

    def ratio_interval(self) -> tuple[float, float]:
        return self.ratio - T * self.ratio_se, self.ratio + T * self.ratio_se

    def difference_interval(self) -> tuple[float, float]:
        return self.difference - T * self.difference_se, self.difference + T * self.difference_se

    def detectable(self) -> bool | None:
        """Whether the ratio's 95% interval excludes 1 (None without valid intervals on both sides)."""
        if not (self.a.valid and self.b.valid):
            return None
        low, high = self.ratio_interval()
        return not low <= 1 <= high

    def verdict(self) -> str:
        """"links x2: x1.00 [0.99, 1.01], no detectable change at 95%; the run is CPU-bound (...)"."""
        seen = self.detectable()
        if seen is None:
            interval, words = "", "no verdict: a side has no valid interval (run it longer or with --precision)"
        else:
            low, high = self.ratio_interval()
            interval = f" [{low:.3f}, {high:.3f}]"
            words = "no detectable change at 95%" if not seen else \
                f"{'faster' if self.ratio > 1 else 'slower'} by {abs(self.ratio - 1):.1%} (95% interval excludes x1)"
        limit = Limit.of(self.a.rows[0]) if self.a.rows else None
        bound = f"; the reference run is {limit.text()}" if limit else ""
        return f"{self.change or f'{self.b.label} vs {self.a.label}'}: x{self.ratio:.3f}{interval}, {words}{bound}"

    def lines(self) -> list[str]:
        out = [self.a.text(), self.b.text()]
        if self.a.valid and self.b.valid:
            dlow, dhigh = self.difference_interval()
            rlow, rhigh = self.ratio_interval()
            out += [f"difference: {self.difference:+.4g} GUPS [{dlow:+.4g}, {dhigh:+.4g}]",
                    f"ratio: x{self.ratio:.4f} [{rlow:.4f}, {rhigh:.4f}] (95%, delta method)"]
        return out + [self.verdict()]


def flat_config(row: Mapping[str, Any]) -> dict[str, Any]:
    """A record's or store row's resolved configuration as dotted keys (``machine.network.link_bytes_per_s``)."""
    config = row.get("config")
    if config is None and isinstance(row.get("config_json"), str):
        config = json.loads(row["config_json"])
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out[prefix] = value
    walk("", config or {})
    return out


#: Configuration keys that differ between runs without making them different experiments.
NOT_A_CHANGE = frozenset({"seed", "machine.description", "machine.source_path"})


def what_changed(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]) -> str:
    """The configuration keys on which the two sides differ, as "link_bytes_per_s x2" or "a -> b"."""
    ca, cb = (_common(flat_config(r) for r in rows) for rows in (a, b))
    changes = []
    for key in sorted(set(ca) | set(cb)):
        if key in NOT_A_CHANGE or ca.get(key) == cb.get(key):
            continue
        va, vb, name = ca.get(key), cb.get(key), key.rsplit(".", 1)[-1]
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and va and not isinstance(va, bool):
            changes.append(f"{name} x{vb / va:.3g}")
        else:
            changes.append(f"{name} {va} -> {vb}")
    return ", ".join(changes) or "same configuration"


def _common(configs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The keys every config shares with one value."""
    configs = list(configs)
    if not configs:
        return {}
    first = configs[0]
    return {k: v for k, v in first.items() if all(c.get(k) == v for c in configs[1:])}


def grouped(table: pd.DataFrame, field: str) -> list[Comparison]:
    """A store's rows grouped by ``field``: every other level against the first (sorted), point by point (rows
    equal on every other varied field but the seed are one point), each side pooling its seeds."""
    if field not in table:
        varied = sorted(c for c in table.columns if c.startswith("var.") or c.startswith("cfg."))
        raise ValueError(f"no field {field!r} in the store (its fields: {', '.join(varied)})")
    others = [c for c in table.columns if c.startswith("var.") and c not in (field, "var.seed")
              and table[c].astype(str).nunique() > 1]
    name = field.rsplit(".", 1)[-1]
    table = table.assign(_level=[readable(name, v) for v in table[field]])
    levels = sorted(table["_level"].unique(), key=_sort_key)
    out = []
    for point, rows in (table.groupby(others, sort=True, dropna=False) if others else [((), table)]):
        point = point if isinstance(point, tuple) else (point,)
        where = ", ".join(f"{c.removeprefix('var.')}={v}" for c, v in zip(others, point))
        reference = rows[rows["_level"] == levels[0]]
        if reference.empty:
            continue
        a = Side.of(f"{name}={levels[0]}" + (f" ({where})" if where else ""), reference.to_dict("records"))
        for level in levels[1:]:
            mine = rows[rows["_level"] == level]
            if not mine.empty:
                out.append(Comparison(a, Side.of(f"{name}={level}", mine.to_dict("records"))))
    return out


def _sort_key(text: str) -> tuple[int, float, str]:
    """Numbers by value ("87.5 MB/s" before "175 MB/s"), then text."""
    try:
        return (0, float(text.split()[0]), text)
    except (ValueError, IndexError):
        return (1, 0.0, text)
