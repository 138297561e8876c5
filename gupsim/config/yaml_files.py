"""gupsim's YAML files, read strictly: one line for every way a file can be wrong.

Machine files (``gupsim/data/machines``) and sweep files (``configs/experiments``) are YAML.  PyYAML's safe
loader reads YAML 1.1, which keeps the last of two equal keys, reads ``350e6`` as text and ``no`` as false; a
research simulator must not take any of these silently, so :class:`StrictLoader` refuses the first and reads
the others as YAML 1.2 does, and its integers too (``032`` is 32, not octal 26).  :func:`read_yaml_mapping` turns an
unreadable file, bad YAML or a top level that is not a mapping into one :class:`gupsim.base.errors.GupsimError`
line naming the file (and the line, where YAML has one).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

from gupsim.base.errors import GupsimError
from gupsim.base.files import read_text


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping names the same key twice (YAML requires unique keys; PyYAML would keep the last)."""


class AliasBombError(yaml.composer.ComposerError):
    """A document whose aliases expand to more values than any machine or sweep file holds, or that holds
    itself (``&a [*a]``: an alias inside the node it names, which never finishes expanding)."""


#: The most values (scalars, lists and mappings) a document may hold with its aliases expanded.  A machine
#: file holds about a hundred and a sweep file fewer; a "billion laughs" of nine aliases to nine aliases
#: holds 10^9 and grows memory without end as it is validated or printed.
MAX_EXPANDED_NODES = 100_000
#: The largest YAML file read: a machine file is about 3 KB and a sweep file less.  Composing a YAML file
#: costs about 10 s per MB, so a bound in bytes keeps a huge one from running a minute before it is refused.
MAX_YAML_BYTES = 2**20
#: The most digits an integer in a YAML file (or a ``--set``/``--option`` value) may have: Python refuses to
#: read more than 4,300 (``sys.get_int_max_str_digits``) with a ValueError; below that each field's own range
#: names what it takes.
MAX_INT_DIGITS = 4000


class CycleError(AliasBombError):
    """A node that holds an alias of itself: expanding it never ends."""


def expanded_size(root: yaml.Node) -> int:
    """How many nodes ``root`` holds with every alias expanded, counted once per distinct node (a node an
    alias repeats is shared, not copied), without recursion.  A node reached again inside itself is a cycle
    (:class:`CycleError`): a depth-first walk meets a node twice on its own path only then."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        kids = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else \
            node.value if isinstance(node, yaml.SequenceNode) else []
        if children_done:
            on_path.discard(id(node))
            sizes[id(node)] = min(1 + sum(sizes.get(id(k), 1) for k in kids), 2**63)
        elif id(node) in on_path:
            raise CycleError(problem="an alias inside the value it names (a cycle: it never ends expanding)",
                             problem_mark=node.start_mark)
        else:
            on_path.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(root)]


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader with four YAML 1.2 rules that YAML 1.1 lacks.

    * A key may appear once per mapping: a repeated ``chunk_bytes`` is a mistake, not an override.
    * ``350e6`` and ``1.0e6`` are floats (YAML 1.1 wants a dot and a signed exponent, ``350.0e+6``,
      and reads the rest as strings, which strict number fields then refuse).
    * Integers are YAML 1.2's: ``032`` is 32, ``0o32`` is 26; ``1:30`` and ``0b101`` are text.
    * Only ``true`` and ``false`` are booleans.  ``fifos: no`` or ``flow_control: off`` is the text the user
      typed, so the error names it (YAML 1.1 would hand the field ``False``).

    Anchors and aliases stay (a merge key, ``<<: *defaults``, needs them), but a document whose aliases
    expand past :data:`MAX_EXPANDED_NODES` values is refused before it is built.
    """

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None and (size := expanded_size(node)) > MAX_EXPANDED_NODES:
            # a 300,000-key file has no alias: "aliases expand" would send its author looking for one
            what = "its aliases expand to" if getattr(self, "aliased", False) else "it holds"
            raise AliasBombError(problem=f"{what} {size:,} values, more than the {MAX_EXPANDED_NODES:,} a file may "
                                         "hold", problem_mark=node.start_mark)
        return node

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliased = True  # for the message of a file too large: its size came from aliases
        return super().compose_node(parent, index)

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


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """An integer as YAML 1.2 reads it: decimal, ``0o`` octal or ``0x`` hex.  YAML 1.1 would read ``032``
    as octal 26, ``1:30`` as 90 (base 60) and ``0b101`` as 5: silent surprises in a machine file."""
    text = loader.construct_scalar(node)
    if len(text) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            problem=f"an integer of {len(text):,} digits, more than the {MAX_INT_DIGITS:,} gupsim reads",
            problem_mark=node.start_mark)
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text.lstrip("+"))
    base = {"0o": 8, "0x": 16}.get(body[:2], 10)
    return sign * int(body[2:] if base != 10 else body, base)


_INT, _BOOL = "tag:yaml.org,2002:int", "tag:yaml.org,2002:bool"
# Only YAML 1.2's integers and booleans resolve as such; the rest (1:30, 0b101, 1_000, yes, off) are text,
# which the strict fields then refuse in one line.
StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT, _BOOL)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
StrictLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
StrictLoader.add_implicit_resolver(_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                                   list("-+0123456789"))
StrictLoader.add_constructor(_INT, _construct_int)
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def read_yaml_mapping(path: Path, what: str) -> dict[str, Any]:
    """A YAML file whose top level is a mapping; an unreadable file, bad YAML or another shape is one line."""
    try:
        text = read_text(path, limit=MAX_YAML_BYTES)
    except OSError as exc:
        raise GupsimError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.load(text, Loader=StrictLoader)
    except RecursionError:
        raise GupsimError(f"{path}: not valid YAML: nested more deeply than gupsim reads "
                          f"(Python's recursion limit, {sys.getrecursionlimit():,} levels)") from None
    except DuplicateKeyError as exc:
        raise GupsimError(f"{path}: line {exc.problem_mark.line + 1}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise GupsimError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise GupsimError(f"{path}: expected a mapping of {what} at the top level")
    return data
