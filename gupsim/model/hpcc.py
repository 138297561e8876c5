"""The HPCC RandomAccess (GUPS) update stream, table layout and verification.

RandomAccess measures how fast a machine can apply random read-modify-write
updates to one large table spread over all processors.  Every update value
comes from a single global pseudo-random sequence of 64-bit integers: a
linear feedback shift register over GF(2).  Garg & Sabharwal (seed 000, §2)
describe it as "Each processor generates a random sequence of 64 bit integers
using the primitive polynomial x^63 + x^2 + x + 1 over GF(2) ... the most
significant bits are selected to index into the distributed table".  The UPC
reference code (seed 001) shows the whole update in two statements::

    ran = (ran << 1) ^ (((s64Int) ran < 0) ? POLY : 0);
    Table[ran & (TableSize-1)] ^= ran;

One step multiplies the register by ``x`` modulo ``x^64 + x^2 + x + 1``
(``POLY = 0x7`` replaces the bit shifted out at the top), so the n-th value
of the sequence started from 1 is ``x^n`` in that ring.  That is what lets
:func:`starts` jump to any position in O(log n) squarings, which is how each
processor finds the start of its own slice of the global stream, and how
:func:`stream` produces long runs quickly by stepping many slices at once.

The table layout follows HPCC's MPIRandomAccess ``tparams``: the first
``Remainder`` processors hold one entry more than the rest, and the owner of
an update is found from its global offset with the reference formula, so the
simulator routes every update to the same processor real HPCC would.

Verification follows HPCC too: XOR is self-inverse, so applying the same
values a second time must restore ``T[i] == i``; runs are accepted with up to
1% wrong entries, because HPCC tolerates races between concurrent updates.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import isqrt

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gupsim.base.errors import GupsimError

POLY: int = 0x7
PERIOD: int = 1317624576693539401

_MASK64 = (1 << 64) - 1
# Beyond ~1024 lanes the per-lane seeding cost outweighs the saved Python
# loop iterations, and rows already fill the cache well.
MAX_LANES: int = 1024


def next_ran(x: int) -> int:
    """One HPCC LFSR step: multiply by ``x`` modulo ``x^64 + x^2 + x + 1``."""
    return ((x << 1) & _MASK64) ^ (POLY if (x >> 63) & 1 else 0)


def starts(n: int) -> int:
    """HPCC's ``HPCC_starts(n)``: the register value after ``n`` steps from 1.

    Bit-exact port of the reference jump-ahead.  ``x^PERIOD == 1`` in this
    ring, so reducing ``n`` modulo ``PERIOD`` (also for negative ``n``) is the
    same as the reference's repeated add/subtract of ``PERIOD``.
    """
    n %= PERIOD
    if n == 0:
        return 0x1

    # m2[i] = x^(2i): squaring is GF(2)-linear, so squaring ``ran`` is the
    # XOR of m2[j] over the set bits j of ``ran``.
    m2: list[int] = []
    temp = 0x1
    for _ in range(64):
        m2.append(temp)
        temp = next_ran(next_ran(temp))

    # Left-to-right binary exponentiation of x, starting below the top bit of
    # n because ran = 0x2 = x already accounts for it.
    i = n.bit_length() - 1
    ran = 0x2
    while i > 0:
        temp = 0
        for j in range(64):
            if (ran >> j) & 1:
                temp ^= m2[j]
        ran = temp
        i -= 1
        if (n >> i) & 1:
            ran = next_ran(ran)
    return ran


def _mulmod(a: int, b: int) -> int:
    """Product of two ring elements; seeds lanes without a full ``starts``."""
    acc = 0
    while a:
        if a & 1:
            acc ^= b
        a >>= 1
        b = next_ran(b)
    return acc


def stream(first: int, count: int, lanes: int | None = None) -> NDArray[np.uint64]:
    """Values number ``first+1 .. first+count`` of the global HPCC stream.

    Identical to ``ran = starts(first)`` followed by ``count`` iterations of
    ``ran = next_ran(ran)``, each yielding ``ran``.  The run is cut into
    ``lanes`` contiguous chunks that numpy steps together, so the Python loop
    runs ``count / lanes`` times instead of ``count`` times.  ``lanes`` only
    affects speed, never the result; by default it grows with ``sqrt(count)``
    up to :data:`MAX_LANES`.
    """
    if count < 0:
        raise GupsimError(f"stream count must be >= 0, got {count}")
    if lanes is None:
        lanes = min(MAX_LANES, max(1, isqrt(count) // 2))
    if lanes < 1:
        raise GupsimError(f"stream lanes must be >= 1, got {lanes}")
    if count == 0:
        return np.empty(0, dtype=np.uint64)

    stride = -(-count // lanes)
    lanes = -(-count // stride)  # drop lanes that would be entirely unused
    # Lane l starts at x^(first + l*stride); chaining one multiplication by
    # x^stride is far cheaper than calling starts() per lane.
    jump = starts(stride)
    seed = starts(first)
    seeds = np.empty(lanes, dtype=np.uint64)
    for lane in range(lanes):
        seeds[lane] = seed
        seed = _mulmod(jump, seed)

    buf = np.empty((stride, lanes), dtype=np.uint64)
    carry = np.empty(lanes, dtype=np.uint64)
    one, top, poly = np.uint64(1), np.uint64(63), np.uint64(POLY)
    cur = seeds
    for k in range(stride):
        row = buf[k]
        np.right_shift(cur, top, out=carry)
        np.multiply(carry, poly, out=carry)
        np.left_shift(cur, one, out=row)
        np.bitwise_xor(row, carry, out=row)
        cur = row
    # Rows hold step k of every lane; the stream order is lane-major.
    out = np.ascontiguousarray(buf.T).reshape(-1)
    return out if out.size == count else out[:count].copy()


@dataclass(frozen=True)
class TableLayout:
    """How HPCC's MPIRandomAccess splits a ``2**log2_table_size`` table over processors."""

    log2_table_size: int
    num_procs: int

    def __post_init__(self) -> None:
        if not 1 <= self.log2_table_size <= 63:
            raise GupsimError(f"log2_table_size must be in 1..63, got {self.log2_table_size}")
        if self.num_procs < 1:
            raise GupsimError(f"num_procs must be >= 1, got {self.num_procs}")
        if self.table_size < self.num_procs:
            raise GupsimError(
                f"table of {self.table_size} entries is smaller than num_procs={self.num_procs}"
            )
        # owner_of runs once per update in the SimPy engine: its constants are computed once, not per call.
        object.__setattr__(self, "_owner_constants", (
            self.table_size - 1, self.top, self.min_local_table_size + 1, self.remainder, self.min_local_table_size))

    @property
    def table_size(self) -> int:
        return 1 << self.log2_table_size

    @property
    def min_local_table_size(self) -> int:
        return self.table_size // self.num_procs

    @property
    def remainder(self) -> int:
        """Number of processors holding ``min_local_table_size + 1`` entries."""
        return self.table_size % self.num_procs

    @property
    def top(self) -> int:
        """Global offsets below this belong to the larger, leading processors."""
        return (self.min_local_table_size + 1) * self.remainder

    def _check_proc(self, proc: int) -> None:
        if not 0 <= proc < self.num_procs:
            raise GupsimError(f"processor {proc} out of range 0..{self.num_procs - 1}")

    def local_size(self, proc: int) -> int:
        self._check_proc(proc)
        return self.min_local_table_size + (1 if proc < self.remainder else 0)

    def global_start(self, proc: int) -> int:
        self._check_proc(proc)
        if proc < self.remainder:
            return (self.min_local_table_size + 1) * proc
        return self.min_local_table_size * proc + self.remainder

    def global_offset(self, values: ArrayLike) -> NDArray[np.uint64]:
        """``ran & (TableSize-1)``: the low bits of each update pick its entry."""
        return np.asarray(values, dtype=np.uint64) & np.uint64(self.table_size - 1)

    def owner(self, values: ArrayLike) -> NDArray[np.int64]:
        """Processor owning each update's entry (HPCC's ``WhichPe``)."""
        # uint64 arithmetic because a 2**63-entry table on one processor does
        # not fit int64; np.where evaluates both branches, and unsigned
        # wrap-around in the unused one is harmless.
        g = self.global_offset(values)
        mlts = np.uint64(self.min_local_table_size)
        big = g // (mlts + np.uint64(1))
        small = (g - np.uint64(self.remainder)) // mlts
        return np.where(g < np.uint64(self.top), big, small).astype(np.int64)

    def owner_of(self, value: int) -> int:
        """Scalar :meth:`owner`, for the simulator's per-update path."""
        mask, top, big, remainder, small = self._owner_constants
        g = value & mask
        if g < top:
            return g // big
        return (g - remainder) // small

    def local_offset(self, values: ArrayLike, owner: ArrayLike) -> NDArray[np.int64]:
        """Offset of each update's entry within its owner's local table."""
        g = self.global_offset(values)
        p = np.asarray(owner, dtype=np.int64).astype(np.uint64)
        mlts = np.uint64(self.min_local_table_size)
        rem = np.uint64(self.remainder)
        start = np.where(p < rem, (mlts + np.uint64(1)) * p, mlts * p + rem)
        return (g - start).astype(np.int64)


@dataclass(frozen=True)
class VerifyResult:
    errors: int
    table_size: int
    passed: bool


def initial_table(layout: TableLayout) -> NDArray[np.uint64]:
    """HPCC's starting table ``T[i] = i``, which verification checks against."""
    return np.arange(layout.table_size, dtype=np.uint64)


def apply_updates(table: NDArray[np.uint64], values: ArrayLike, layout: TableLayout) -> None:
    """XOR every value into ``table[value & (table_size-1)]`` in place."""
    if table.shape != (layout.table_size,) or table.dtype != np.uint64:
        raise GupsimError(
            f"table must be uint64 of shape ({layout.table_size},), "
            f"got {table.dtype} of shape {table.shape}"
        )
    vals = np.asarray(values, dtype=np.uint64)
    # ufunc.at, not fancy-index assignment: repeated indices must all apply.
    np.bitwise_xor.at(table, layout.global_offset(vals).astype(np.intp), vals)


def verify(table: NDArray[np.uint64], values: ArrayLike, layout: TableLayout) -> VerifyResult:
    """Undo ``values`` on a copy of ``table`` and count entries that are not ``i``."""
    check = table.copy()
    apply_updates(check, values, layout)
    errors = int(np.count_nonzero(check != initial_table(layout)))
    return VerifyResult(errors, layout.table_size, errors <= 0.01 * layout.table_size)
