"""Loading a machine by name (a file of ``MACHINES_DIR``) or path, with ``--set`` overrides; every failure is
one line that blames the file or the override that caused it."""

from __future__ import annotations

from gupsim.config.kinds import checked_machine
from gupsim.config.torus import MachineConfig

import os
from pathlib import Path
from typing import Any
from gupsim.data import MACHINES_DIR
from gupsim.base.errors import GupsimError, UnknownNameError, clip
from gupsim.config.field_errors import FieldProblem
from gupsim.config.overrides import apply_overrides, resolved_overrides
from gupsim.config.yaml_files import read_yaml_mapping


def available_machines() -> list[str]:
    return sorted(p.stem for p in MACHINES_DIR.glob("*.yaml"))


def machine_path(name_or_path: str) -> Path:
    """A registered machine name (``bgl``) or a path to a YAML file."""
    if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path).strip():
        raise GupsimError(f"machine: expected a machine name ({', '.join(available_machines())}) or a YAML "
                          f"path, got {name_or_path!r}")
    name_or_path = os.fspath(name_or_path)
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        if not candidate.exists():
            raise GupsimError(f"machine file not found: {candidate}")
        return candidate
    path = MACHINES_DIR / f"{name_or_path}.yaml"
    if path.exists():
        return path
    if candidate.exists() or "/" in name_or_path:
        # Meant as a file, not a name: say why it is neither, not only "unknown machine".
        found = "the file exists, but" if candidate.exists() else f"no file {name_or_path} either;"
        raise GupsimError(f"no machine named {name_or_path!r}, and {found} a machine file's name ends in "
                          f".yaml or .yml (machines: {', '.join(available_machines())})")
    raise UnknownNameError("machine", name_or_path, available_machines())


def load_machine(name_or_path: str, overrides: dict[str, Any] | None = None) -> MachineConfig:
    """Load, override and validate a machine; every failure is one line, blaming the file or the --set."""
    path = machine_path(name_or_path)
    if overrides is not None and not isinstance(overrides, dict):
        raise GupsimError(f"overrides: expected a mapping of machine fields to values, e.g. "
                          f"{{'network.link_bytes_per_s': 350e6}}, got {type(overrides).__name__}")
    overrides = resolved_overrides(overrides or {})
    base = read_yaml_mapping(path, "machine fields")
    data = apply_overrides(base, overrides, str(path))
    try:
        return checked_machine(data | {"source_path": str(path)})
    except FieldProblem as problem:
        raise GupsimError(_blame(problem, base, overrides, path)) from None


def _blame(problem: FieldProblem, base: dict[str, Any], overrides: dict[str, Any], path: Path) -> str:
    """The one line for a machine that failed: led by the ``--set`` options that broke it, else by the file."""
    culprits = [key for key in overrides if key == problem.path]
    if not culprits and overrides and _loads(base, path):
        # The file alone is fine, so the overrides broke it: those in the failing section, else all.
        inside = [key for key in overrides if not problem.path or key.startswith(problem.path + ".")]
        culprits = inside or list(overrides)
    if not culprits:
        return f"{path}: {problem}"
    message = str(problem).removeprefix(f"{culprits[0]}: ") if len(culprits) == 1 else str(problem)
    section = problem.path.split(".", 1)[0]
    if problem.kind == "missing" and "." in problem.path and section not in base:
        message += f" ({path.name} has no {section} section; --set all of its fields to add one)"
    return f"{' '.join(f'--set {key}={clip(overrides[key])}' for key in culprits)}: {message}"


def _loads(data: dict[str, Any], path: Path) -> bool:
    try:
        checked_machine(data | {"source_path": str(path)})
    except FieldProblem:
        return False
    return True
