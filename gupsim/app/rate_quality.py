"""Whether a run's rate may be called a steady-state rate, and how tables and plots say so.

A record's GUPS is the rate after the warm-up cut, with its own 95% interval (:mod:`gupsim.studies.headline`).
Its ``steady_state`` comes from the run's own variation: the interval is valid (``precision`` "ok") and at
most 5% of the rate either side (:attr:`gupsim.model.output_analysis.RateInterval.steady`, the one place the
rule lives).  A short run's rate can be far off (on 4x4x4, 256 updates per process gave routed 0.228 GUPS
where 4,096 give 0.115), so nothing may call it a steady-state rate.  Every table and plot that labels a
rate asks this module; summaries say the interval itself (:func:`gupsim.app.reporting.headline_lines`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


#: The results table's column for it (``gupsim results``).
COLUMN = "steady"


def is_steady(row: Mapping[str, Any]) -> bool:
    """True when the record (or store row) says its rate is a steady-state one; unknown counts as not."""
    value = row.get("steady_state")
    try:
        return bool(value) and value == value  # NaN (a store row without the field) is truthy
    except (TypeError, ValueError):
        return False


def axis_label(rows: Iterable[Mapping[str, Any]]) -> str:
    """A GUPS axis's label: "steady state" only when every point drawn is one."""
    rows = list(rows)
    if rows and all(is_steady(r) for r in rows):
        return "GUPS (10$^9$ updates/s, steady state)"
    return "GUPS (10$^9$ updates/s, after the warm-up; hollow: not steady state)"


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
