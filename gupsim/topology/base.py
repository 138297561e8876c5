"""The topology registry: topologies by kind, and the shape text (``XxYxZ``) every topology is built from."""

from __future__ import annotations

from typing import Any

import operator
import re
from collections.abc import Callable, Sequence
from typing import TypeVar
from gupsim.base.errors import clip, GupsimError, UnknownNameError


Shape = tuple[int, int, int]


T = TypeVar("T", bound=type)


TOPOLOGIES: dict[str, type] = {}


_EXAMPLE = "(e.g. 8x8x16)"


_DIM_NAMES = "xyz"


def register_topology(kind: str) -> Callable[[T], T]:
    """Class decorator: make a topology constructible by name via :func:`make_topology`."""

    def decorate(cls: T) -> T:
        cls.kind = kind
        TOPOLOGIES[kind] = cls
        return cls

    return decorate


#: The most digits a shape's dimension is read with (see parse_shape).
MAX_DIMENSION_DIGITS = 100


def parse_shape(text: str) -> Shape:
    """Parse ``"XxYxZ"`` (e.g. ``"8x8x16"``) into ``(8, 8, 16)``.

    Exactly three dimensions are required: a 2D machine is written ``8x8x1`` so
    that every config names the same three axes Blue Gene/L has.
    """
    parts = str(text).strip().lower().split("x")
    if len(parts) != 3:
        raise GupsimError(
            f"invalid shape {text!r}: expected three dimensions XxYxZ {_EXAMPLE}"
        )
    # Python refuses to read an integer of more than 4,300 digits (a ValueError); a dimension of 100 is far
    # past any shape a run takes (MAX_RUN_NODES), so a longer one is refused before it is read
    if any(len(p.strip()) > MAX_DIMENSION_DIGITS and p.strip().isdigit() for p in parts):
        raise GupsimError(f"invalid shape {clip(text)!r}: a dimension of more than {MAX_DIMENSION_DIGITS} digits, "
                          f"more than the {MAX_RUN_NODES:,} nodes a run can address")
    if not all(re.fullmatch(r"[0-9]+", p.strip()) and int(p) > 0 for p in parts):
        raise GupsimError(
            f"invalid shape {text!r}: each dimension must be a positive integer {_EXAMPLE}"
        )
    return _validated(tuple(int(p) for p in parts), text)


def _validated(dims: Sequence[object], shown: object) -> Shape:
    """Check a shape given as a sequence; ``shown`` is what the user wrote, for the message."""
    if isinstance(dims, (str, bytes)) or len(dims) != 3:
        raise GupsimError(
            f"invalid shape {shown!r}: expected three dimensions XxYxZ {_EXAMPLE}"
        )
    try:
        # operator.index rejects floats like 8.0 instead of silently truncating them.
        ints = tuple(operator.index(d) for d in dims if not isinstance(d, bool))
    except TypeError:
        ints = ()
    if len(ints) != 3 or min(ints) < 1:
        raise GupsimError(
            f"invalid shape {shown!r}: each dimension must be a positive integer {_EXAMPLE}"
        )
    if ints[0] * ints[1] * ints[2] < 2:
        raise GupsimError(f"invalid shape {shown!r}: a network needs at least 2 nodes")
    return (ints[0], ints[1], ints[2])


def make_topology(kind: str, shape: str | Sequence[int], network: object = None) -> Any:
    """Build the topology registered as ``kind`` (``"torus"``, ``"mesh"``, or a switched fabric).

    ``network`` is the machine's network section; switched fabrics take their
    switch radix from it, the torus and mesh need nothing but the shape.
    """
    if kind not in TOPOLOGIES:
        raise UnknownNameError("topology", kind, list(TOPOLOGIES))
    return TOPOLOGIES[kind].from_config(shape, network)


#: The most nodes a run's shape may have (``gupsim bounds`` takes the same shapes): the fast engine keeps node and
#: process numbers in 32 bits, and a run this large would need terabytes before its first event anyway.
MAX_RUN_NODES = 2**31 - 1


def run_shape(text: str) -> str:
    """A run's shape as records and keys keep it, ``"XxYxZ"`` (``' 4X4x4 '`` is 4x4x4); a shape with more
    nodes than :data:`MAX_RUN_NODES` is a shape error."""
    dims = parse_shape(text)
    nodes = dims[0] * dims[1] * dims[2]
    if nodes > MAX_RUN_NODES:
        raise GupsimError(f"invalid shape {text!r}: {nodes:,} nodes, more than the {MAX_RUN_NODES:,} a run can "
                          "address")
    return "x".join(map(str, dims))
