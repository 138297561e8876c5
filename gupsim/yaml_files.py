"""gupsim's YAML files, read strictly: one line for every way a file can be wrong.

Machine files (``configs/machines``) and sweep files (``configs/experiments``) are YAML.  PyYAML's safe
loader reads YAML 1.1, which keeps the last of two equal keys and reads ``350e6`` as text; a research
simulator must not take either silently, so :class:`StrictLoader` refuses the first and reads the second as
YAML 1.2 does.  :func:`read_yaml_mapping` turns an unreadable file, bad YAML or a top level that is not a
mapping into one :class:`gupsim.errors.GupsimError` line naming the file (and the line, where YAML has one).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gupsim.errors import GupsimError


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping names the same key twice (YAML requires unique keys; PyYAML would keep the last)."""


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader with two YAML 1.2 rules that YAML 1.1 lacks.

    * A key may appear once per mapping: a repeated ``chunk_bytes`` is a mistake, not an override.
    * ``350e6`` and ``1.0e6`` are floats (YAML 1.1 wants a dot and a signed exponent, ``350.0e+6``,
      and reads the rest as strings, which strict number fields then refuse).
    """

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, yaml.Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # '<<' brings in defaults that the mapping's own keys may override
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.setdefault(key, key_node)
                except TypeError:
                    continue  # an unhashable key: SafeLoader reports it below
                if seen is not key_node:
                    raise DuplicateKeyError(
                        problem=f"duplicate key {key!r} (first given on line {seen.start_mark.line + 1})",
                        problem_mark=key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def read_yaml_mapping(path: Path, what: str) -> dict[str, Any]:
    """A YAML file whose top level is a mapping; an unreadable file, bad YAML or another shape is one line."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise GupsimError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})") from None
    except OSError as exc:
        raise GupsimError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.load(text, Loader=StrictLoader)
    except DuplicateKeyError as exc:
        raise GupsimError(f"{path}: line {exc.problem_mark.line + 1}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise GupsimError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise GupsimError(f"{path}: expected a mapping of {what} at the top level")
    return data
