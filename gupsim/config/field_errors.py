"""pydantic's validation errors as the one line a user needs, and the field it is about.

A machine is a tree of frozen pydantic models (:mod:`gupsim.config`, :mod:`gupsim.config.switched`), some of
whose sections hold one of several models (a switched machine's ``network``).  pydantic reports every error
with its location, union tags included (``network.data-vortex.lane_bits_per_s``), and a misspelt key twice
(unknown, and its right spelling missing).  :func:`field_problem` picks the error to show (the misspelling
first), strips the tags users never write, and returns a :class:`FieldProblem`: the dotted path of the field
and one line, so that the loader can blame whoever set that field, the file or a ``--set``.
"""

from __future__ import annotations

import difflib
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from gupsim.base.errors import GupsimError, clip


class FieldProblem(GupsimError):
    """What is wrong with one machine field: ``path`` (dotted, without pydantic's union tags) and the message.

    Raised while a machine is checked, so that the loader can blame whoever set that field: the
    machine file, or the ``--set`` that changed it.  Its text is the message alone, one line.
    """

    def __init__(self, path: str, message: str, kind: str = "invalid"):
        self.path, self.kind = path, kind
        super().__init__(message)


def field_problem(exc: ValidationError, model: type[BaseModel]) -> FieldProblem:
    """pydantic's first error as one line, with the path a user writes (no union tags, no variant dump)."""
    errors = exc.errors()
    # A misspelt key is reported twice (unknown, and its right spelling missing): name the misspelling.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    path, owner, variant = _locate(err["loc"], model)
    if err["type"] == "extra_forbidden":
        context = f" in a {variant} {path.split('.', 1)[0]}" if variant else ""
        return FieldProblem(path, f"unknown key '{path}'{context}{suggest_field(path.rsplit('.', 1)[-1], owner)}",
                            "unknown")
    ctx = err.get("ctx") or {}
    tag_field = f"{path}.{str(ctx.get('discriminator', '')).strip(QUOTE)}"  # the key that picks a variant
    if err["type"] == "union_tag_not_found":  # that key is absent
        path = tag_field
        return FieldProblem(path, f"missing required key '{path}'", "missing")
    if err["type"] == "missing":
        return FieldProblem(path, f"missing required key '{path}'", "missing")
    more = f" [+{len(errors) - 1} more]" if len(errors) > 1 else ""
    if err["type"] == "union_tag_invalid":
        path = tag_field
        return FieldProblem(path, f"{path}: Input should be one of {ctx['expected_tags']} (got {clip(repr(ctx['tag']))}){more}")
    msg = err["msg"].removeprefix("Value error, ")
    got = err.get("input")
    shown = "" if isinstance(got, dict) or got is None else f" (got {clip(repr(got))})"
    return FieldProblem(path, f"{path}: {msg}{shown}{more}" if path else f"{msg}{more}")


QUOTE = "'"


def _locate(loc: tuple, model: type[BaseModel]) -> tuple[str, type[BaseModel] | None, str | None]:
    """A pydantic error location as (dotted path without union tags, model owning its last part, variant tag).

    A section that may hold one of several models (``network`` of a switched machine) puts the
    variant's tag (``data-vortex``) into pydantic's location; users never write it, so it goes.
    """
    parts = [str(p) for p in loc]
    path: list[str] = []
    owner: type[BaseModel] | None = model
    variant = None
    while parts and owner is not None:
        name = parts.pop(0)
        path.append(name)
        field = owner.model_fields.get(name)
        if field is None or not parts:
            break
        variants = model_variants(field.annotation)
        if not variants:
            break
        if len(variants) > 1:
            variant = parts.pop(0)
            owner = next((v for v in variants if variant in _tags(v, field.discriminator)), None)
        else:
            owner = variants[0]
    return ".".join(path + parts), owner, variant


def model_variants(annotation: Any) -> list[type[BaseModel]]:
    """The models a field may hold (one for a section, ``CacheConfig | None`` too; several for a union)."""
    return [a for a in (typing.get_args(annotation) or (annotation,)) if isinstance(a, type) and issubclass(a, BaseModel)]


def _tags(variant: type[BaseModel], discriminator: Any) -> tuple[str, ...]:
    """The tags pydantic puts in an error location for this variant of a union."""
    field = variant.model_fields.get(discriminator) if isinstance(discriminator, str) else None
    return typing.get_args(field.annotation) if field is not None else (variant.__name__,)


def leaf_paths(model: type[BaseModel], prefix: str = "") -> dict[str, type[BaseModel]]:
    """Dotted path of every field, mapped to the model that owns it."""
    out: dict[str, type[BaseModel]] = {}
    for name, field in model.model_fields.items():
        # A section may be one of several models (a union, or optional): every variant's fields count.
        variants = model_variants(field.annotation)
        if variants:
            for variant in variants:
                out.update({k: v for k, v in leaf_paths(variant, f"{prefix}{name}.").items() if k not in out})
        else:
            out[f"{prefix}{name}"] = model
    return out


def suggest_field(name: str, owner: type[BaseModel] | None) -> str:
    if owner is None:
        return ""
    fields = [f for f in owner.model_fields if f != "source_path"]
    close = difflib.get_close_matches(name, fields, n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" (valid: {', '.join(fields)})"
