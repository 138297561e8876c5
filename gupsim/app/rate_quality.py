"""Whether a run's rate may be called a steady-state rate, and how summaries, tables and plots say so.

A record's ``gups`` is the rate between 25% and 75% of the updates applied (:mod:`gupsim.engines.run`), or, for
a run that stopped once precise (``--precision``, ``gupsim reproduce``, sweeps), the rate after the warm-up
cut.  Its
``steady_state`` comes from the run's own variation: the 95% interval of the rate after the warm-up
(``gups_ci_low``/``gups_ci_high``) is valid (``precision`` "ok") and at most 5% of the rate either side
(:attr:`gupsim.model.output_analysis.RateInterval.steady`, the one place the rule lives).  A short run's rate
can be far off (on 4x4x4, 256 updates per process gave routed 0.228 GUPS where 4,096 give 0.115), so nothing
may call it a steady-state rate.  Every place that labels a rate asks this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gupsim.algorithms.base import ALGORITHMS

#: The results table's column for it (``gupsim results``).
COLUMN = "steady"


def is_steady(row: Mapping[str, Any]) -> bool:
    """True when the record (or store row) says its rate is a steady-state one; unknown counts as not."""
    value = row.get("steady_state")
    try:
        return bool(value) and value == value  # NaN (a store row without the field) is truthy
    except (TypeError, ValueError):
        return False


def whole_run(row: Mapping[str, Any]) -> bool:
    """True when the record's ``gups`` is the whole run's rate (an algorithm that applies in bursts)."""
    name = row.get("algorithm")
    return name in ALGORITHMS and ALGORITHMS[name].rate_over_whole_run


def gups_label(row: Mapping[str, Any]) -> str:
    """The summary's label for ``gups``."""
    if whole_run(row):
        return "GUPS (whole run: applied round by round)"
    if is_steady(row):
        return "GUPS (steady state)"
    if row.get("precision_reached") is True:  # stopped when precise: gups is the interval's rate
        return "GUPS (after the warm-up cut, not steady)"
    return "GUPS (25-75% window, not steady)"


def axis_label(rows: Iterable[Mapping[str, Any]]) -> str:
    """A GUPS axis's label: "steady state" only when every point drawn is one."""
    rows = list(rows)
    if rows and all(is_steady(r) for r in rows):
        return "GUPS (10$^9$ updates/s, steady state)"
    return "GUPS (10$^9$ updates/s, 25-75% window, not steady state)"


def transient_legend(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """The legend's name for hollow markers, naming the run lengths of the points that are not steady; None
    when every point is."""
    transient = [r for r in rows if not is_steady(r)]
    if not transient:
        return None
    lengths = sorted({int(n) for r in transient if (n := r.get("updates_per_process")) == n and n is not None})
    length = f"{'/'.join(f'{n:,}' for n in lengths)} updates/process, " if lengths else ""
    return f"hollow: transient, {length}not steady state"


def face_colour(steady: bool, colour: Any) -> Any:
    """A marker's fill: its colour when steady, none (hollow) when not."""
    return colour if steady else "none"


def cell(row: Mapping[str, Any]) -> str:
    """The results table's cell for a row."""
    return "yes" if is_steady(row) else "no"
