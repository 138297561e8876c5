"""The HPCC RandomAccess stream, compiled: :mod:`gupsim.model.hpcc` bit for bit inside the fast kernels.

Each rank steps its share of HPCC's 64-bit LFSR stream (seed 000 §2; HPCC's ``HPCC_starts`` jump-ahead, and
``WhichPe``, the owner of an update), so the fast engine applies exactly the updates the SimPy model applies.
The property tests in ``tests/engines/fast/test_fast.py`` compare :func:`starts_many` and :func:`owner_of` with
:mod:`gupsim.model.hpcc`.
"""

from __future__ import annotations

import numpy as np
from numba import njit


# ================================================================== HPCC stream (hpcc.py, bit for bit)

_POLY = np.uint64(7)
_PERIOD = 1317624576693539401


@njit(cache=True, inline="always", _nrt=False)
def next_ran(x):
    return (x << np.uint64(1)) ^ ((x >> np.uint64(63)) * np.uint64(7))


@njit(cache=True)
def starts(n):
    """:func:`gupsim.model.hpcc.starts` (HPCC_starts), for ``0 <= n``."""
    n = n % _PERIOD
    if n == 0:
        return np.uint64(1)
    m2 = np.empty(64, dtype=np.uint64)
    temp = np.uint64(1)
    for i in range(64):
        m2[i] = temp
        temp = next_ran(next_ran(temp))
    i = 62
    while i >= 0 and not (n >> i) & 1:
        i -= 1
    ran = np.uint64(2)
    while i > 0:
        temp = np.uint64(0)
        for j in range(64):
            if (ran >> np.uint64(j)) & np.uint64(1):
                temp ^= m2[j]
        ran = temp
        i -= 1
        if (n >> i) & 1:
            ran = next_ran(ran)
    return ran


@njit(cache=True)
def starts_many(firsts):
    out = np.empty(firsts.shape[0], dtype=np.uint64)
    for r in range(firsts.shape[0]):
        out[r] = starts(firsts[r])
    return out


@njit(cache=True, inline="always", _nrt=False)
def owner_of(value, mask, top, mlts, rem):
    """:meth:`TableLayout.owner_of` (HPCC's WhichPe) in unsigned arithmetic."""
    g = value & mask
    if g < top:
        return np.int64(g // (mlts + np.uint64(1)))
    return np.int64((g - rem) // mlts)
