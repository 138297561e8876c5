"""Which model validates a machine file: its ``kind`` (a torus machine, or a switched one), and validation
that turns every failure into one :class:`~gupsim.config.field_errors.FieldProblem`."""

from __future__ import annotations

from gupsim.config.switched import SwitchedMachineConfig
from gupsim.config.torus import MachineConfig

from typing import Any
from pydantic import BaseModel, ValidationError
from gupsim.base.errors import GupsimError
from gupsim.config.field_errors import FieldProblem, field_problem


def machine_kinds() -> dict[str, type[BaseModel]]:
    """Machine models by the YAML's ``kind`` (absent: a torus machine, so a file without a kind keeps meaning one)."""
    return {"torus": MachineConfig, "switched": SwitchedMachineConfig}


def validate_machine(data: dict[str, Any], where: str) -> Any:
    """A machine from already-read data (``where`` names its origin in the one-line error)."""
    try:
        return checked_machine(data)
    except FieldProblem as problem:
        raise GupsimError(f"{where}: {problem}") from None


def checked_machine(data: dict[str, Any]) -> Any:
    """Validate a machine and read its cycle table; a failure is a :class:`FieldProblem`."""
    kinds = machine_kinds()
    kind = data.get("kind", "torus")
    if not isinstance(kind, str) or kind not in kinds:
        raise FieldProblem("kind", f"kind: unknown machine kind {kind!r}; valid choices: {', '.join(kinds)}")
    model = kinds[kind]
    if kind == "torus":
        data = {k: v for k, v in data.items() if k != "kind"}
    try:
        machine = model.model_validate(data)
    except ValidationError as exc:
        raise field_problem(exc, model) from None
    if isinstance(machine, MachineConfig):
        machine.costs  # noqa: B018 - load the cycle table now, so a bad table fails at load time
    return machine
