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
