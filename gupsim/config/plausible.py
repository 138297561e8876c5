"""Physically plausible ranges of machine fields: outside one a value is a what-if, said in one line.

A field's validation bounds (``ge``, ``le``) say what can be computed at all; its plausible range, kept in the
field's schema (``json_schema_extra={"plausible": [lo, hi]}``) and written in its description (and so in the
generated reference), says what any built machine has had.  A run with a value outside it still runs, with
one line on stderr naming the field, the value and the range (:func:`warn_implausible`); ``clock_hz=1e300``
is a question a user may ask, but rarely on purpose.
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel, Field

_warned: set[str] = set()

#: The most nodes of any machine of a kind that was built, by machine name, and the source.  A larger
#: partition is a legitimate what-if; the text summary says it is one (:func:`larger_than_built`).
LARGEST_BUILT_NODES: dict[str, tuple[int, str]] = {
    "bgl": (65_536, "seed 000 §5: the 64K-node Blue Gene/L, 64x32x32"),
    "bgp": (40_960, "seed 002 §1: its 32 racks (32,768 nodes) were 80% of the largest Blue Gene/P"),
}


def plausible_field(description: str, lo: float, hi: float, unit: str, **bounds: Any) -> Any:
    """A pydantic ``Field`` whose description ends with its plausible range ``lo``..``hi`` (in ``unit``)."""
    return Field(description=f"{description} (plausible {lo:g} to {hi:g} {unit})",
                 json_schema_extra={"plausible": [lo, hi], "plausible_unit": unit}, **bounds)


def implausible(model: BaseModel, prefix: str = "") -> list[str]:
    """One phrase per field of ``model`` (and its sections) outside its plausible range."""
    found = []
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found += implausible(value, f"{prefix}{name}.")
            continue
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if "plausible" not in extra or value is None or isinstance(value, bool):
            continue
        lo, hi = extra["plausible"]
        if not lo <= value <= hi:
            found.append(f"{prefix}{name}={value:g} is outside its plausible range {lo:g} to {hi:g} "
                         f"{extra['plausible_unit']}")
    return found


def warn_implausible(machine: BaseModel) -> list[str]:
    """Say on stderr, one line each and once per process, which of ``machine``'s values are implausible;
    return them all."""
    found = implausible(machine)
    for phrase in found:
        if phrase not in _warned:
            _warned.add(phrase)
            print(f"gupsim: warning: {phrase}; running it as a what-if", file=sys.stderr, flush=True)
    return found


def larger_than_built(machine: str, nodes: int) -> str | None:
    """A note when ``nodes`` is more than any ``machine`` that was built (None when not, or not known)."""
    largest, source = LARGEST_BUILT_NODES.get(machine, (None, ""))
    if largest is None or nodes <= largest:
        return None
    return f"{nodes:,} nodes is more than the largest {machine} built ({largest:,}, {source}): a what-if"
