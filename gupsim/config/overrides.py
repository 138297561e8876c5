"""Overrides of a machine's fields: ``--set KEY=VALUE`` on the command line, a sweep's ``set:`` and grid keys,
and ``load_machine(name, overrides)`` from Python.

A key is a field's dotted path (``network.link_bytes_per_s``) or, when only one field has it, its bare name
(``link_bytes_per_s``); a value is read as YAML 1.2 reads it (:mod:`gupsim.config.yaml_files`), so ``350e6`` is a
number and ``off`` is text.  One field given twice, under two spellings or by two flags, is refused: the last
would silently win.  The overridden machine is then validated by :mod:`gupsim.config` like a file.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

import yaml

from gupsim.base.errors import GupsimError, clip
from gupsim.config.field_errors import leaf_paths
from gupsim.config.yaml_files import StrictLoader
from gupsim.config.kinds import machine_kinds


def leaf_fields() -> list[str]:
    """Every machine field's dotted path, over all machine kinds."""
    paths: dict[str, Any] = {}
    for model in machine_kinds().values():
        paths.update({k: v for k, v in leaf_paths(model).items() if k not in paths})
    return [p for p in paths if p != "source_path"]


def resolve_override_key(key: str) -> str:
    """Map ``link_bytes_per_s`` or ``network.link_bytes_per_s`` to its dotted path."""
    paths = leaf_fields()
    if key in paths:
        return key
    matches = [p for p in paths if p.rsplit(".", 1)[-1] == key]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise GupsimError(f"--set {clip(key)}: ambiguous, use one of {', '.join(matches)}")
    close = difflib.get_close_matches(key, [p.rsplit(".", 1)[-1] for p in paths] + paths, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise GupsimError(f"--set {clip(key)}: no such machine field{hint}")


def parse_key_value(item: str, option: str) -> tuple[str, Any]:
    """``"link_bytes_per_s=350e6"`` -> ``("link_bytes_per_s", 350000000.0)``; values read as YAML."""
    if "=" not in item:
        example = {"--option": "max_pending=512"}.get(option, "link_bytes_per_s=350e6")
        raise GupsimError(f"{option} {clip(item)!r}: expected KEY=VALUE, e.g. {option} {example}")
    key, raw = item.split("=", 1)
    try:
        value = yaml.load(raw, Loader=StrictLoader) if raw.strip() else raw
    except RecursionError:
        raise GupsimError(f"{option} {clip(item)}: not a valid value (nested too deeply)") from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise GupsimError(f"{option} {clip(item)}: not a valid value ({problem}; quote it to pass text)") from None
    if isinstance(value, str):  # "inf", "1_000": numbers should be numbers
        try:
            value = float(value) if not value.lstrip("-").isdigit() else int(value)
        except ValueError:
            pass
    return key.strip(), value


def parse_set_options(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``["link_bytes_per_s=350e6"]`` -> ``{"network.link_bytes_per_s": 350000000.0}``."""
    out: dict[str, Any] = {}
    given: dict[str, str] = {}
    for item in items:
        key, value = parse_key_value(item, "--set")
        name = resolve_override_key(key)
        if name in given:  # the last would silently win
            raise GupsimError(f"--set {clip(given[name])} and --set {clip(item)} name the same field; give it once")
        given[name], out[name] = item, value
    return out


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any], where: str) -> dict[str, Any]:
    """A copy of a machine's data with each dotted path set to its value."""
    data = copy.deepcopy(data)
    for dotted, value in overrides.items():
        node = data
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise GupsimError(f"{where}: cannot override {dotted}: '{part}' is not a section")
        node[leaf] = value
    return data


def resolved_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """Overrides by dotted path: a bare field name (``clock_hz``) resolved as ``--set`` resolves it, so Python
    takes what the command line takes; a key that names no single field is left for validation to name."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        try:
            name = resolve_override_key(key)
        except GupsimError:
            name = key
        if name in out:
            raise GupsimError(f"overrides: two keys name {name}; give it once")
        out[name] = value
    return out
