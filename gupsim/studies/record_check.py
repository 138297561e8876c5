"""Is a run record one run's own account: do its identity fields agree with each other and with its config?

A record (``gupsim run --json``, or a row of a results store) names its run twice: in its top-level fields
(``machine``, ``shape``, ``nodes``, ``processes``, ...), which titles, legends and comparisons print, and in the
``config`` it was made from.  A record whose ``shape`` is edited by hand would be plotted under a false title:
the numbers are another machine's.  Nothing can say whether a rate was edited, but a record whose
fields disagree with one another is certainly not what the run wrote, so it is refused in one line naming the
file and the field, before anything is drawn or compared from it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gupsim.base.errors import GupsimError
from gupsim.topology.base import parse_shape

#: Top-level fields that must equal the same field of the record's ``config``.
SAME_AS_CONFIG = ("shape", "algorithm", "updates_per_process", "seed")


def check_record(record: dict[str, Any], where: str) -> None:
    """Raise one line naming ``where`` and the first field of ``record`` that contradicts another; a field the
    record does not carry is not checked (records of older code carry fewer)."""
    config = _config(record, where)
    for name in SAME_AS_CONFIG:
        if name in record and name in config and record[name] != config[name]:
            _refuse(where, name, record[name], f"its config says {config[name]!r}")
    machine = config.get("machine") if isinstance(config.get("machine"), dict) else {}
    if "machine" in record and "name" in machine and record["machine"] != machine["name"]:
        _refuse(where, "machine", record["machine"], f"its config's machine is {machine['name']!r}")
    if "shape" not in record:
        return
    try:
        nodes = math.prod(parse_shape(record["shape"]))
    except GupsimError as exc:
        raise GupsimError(f"{where}: field shape: {exc}") from None
    if "nodes" in record and record["nodes"] != nodes:
        _refuse(where, "nodes", record["nodes"], f"its shape {record['shape']} has {nodes:,} nodes")
    ppn = (machine.get("cpu") or {}).get("processes_per_node") if isinstance(machine.get("cpu"), dict) else None
    if "processes" in record and isinstance(ppn, int) and record["processes"] != nodes * ppn:
        _refuse(where, "processes", record["processes"],
                f"its shape {record['shape']} at {ppn} process{'es' * (ppn != 1)} a node has {nodes * ppn:,}")
    _check_counts(record, where)
    _check_links(record, where, parse_shape(record["shape"]))


def _check_counts(record: dict[str, Any], where: str) -> None:
    """``updates_applied_per_process`` is ``updates_applied / processes`` (gupsim.engines.run): a process count
    edited together with the shape and the config still breaks it."""
    names = ("updates_applied", "processes", "updates_applied_per_process")
    values = [record.get(name) for name in names]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values) or not values[1]:
        return
    applied, processes, per_process = values
    if not math.isclose(applied / processes, per_process, rel_tol=1e-9):
        _refuse(where, "processes", processes, f"its {applied:,.0f} updates applied over that many processes are "
                f"{applied / processes:,.6g} a process, not the {per_process:,.6g} it records")


def _config(record: dict[str, Any], where: str) -> dict[str, Any]:
    """The record's config: ``config`` in a JSON record, ``config_json`` in a store row ({} if it has none)."""
    config = record.get("config")
    if config is None and isinstance(record.get("config_json"), str):
        try:
            config = json.loads(record["config_json"])
        except json.JSONDecodeError:
            _refuse(where, "config_json", "...", "it is not JSON")
    if config is None:
        return {}
    if not isinstance(config, dict):
        _refuse(where, "config", config, "a record's config is an object")
    return config


def _check_links(record: dict[str, Any], where: str, dims: tuple[int, ...]) -> None:
    """The link table's nodes lie inside the shape (a heat map of the shape is drawn from them)."""
    links = record.get("links")
    if not isinstance(links, dict):
        return  # absent or malformed: the link plot's own check says so, naming the section
    for column in ("src", "dst"):
        for coords in links.get(column) or ():
            if isinstance(coords, (list, tuple)) and len(coords) == 3 and \
                    any(isinstance(c, int) and not 0 <= c < d for c, d in zip(coords, dims)):
                _refuse(where, f"links.{column}", list(coords), f"that node is outside its shape {record['shape']}")


def _refuse(where: str, field: str, value: Any, reason: str) -> None:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise GupsimError(f"{where}: field {field} is {shown}, but {reason}: the record's fields disagree (edited "
                      "by hand, or damaged), so it is neither drawn nor compared")


def check_rows(table: Any, where: Any) -> None:
    """:func:`check_record` on each ok row of a store's table, naming the row by its key."""
    ok = table[table["status"].eq("ok")] if "status" in table else table
    for row in ok.to_dict("records"):
        check_record(row, f"{where} (key {row.get('key', '?')})")
