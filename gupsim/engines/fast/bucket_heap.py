"""Compiled buckets for ``baseline``: each rank's indexed max-heap of bucket sizes (seed 000 §2, §6.1).

HPCC MPIRandomAccess keeps one bucket of pending updates per destination and
sends the largest bucket first; :class:`gupsim.model.bucketing.Buckets` is the
readable reference (a lazy max-heap of ``(size, destination)``).  Without
``verify`` an update's value matters only to its owner, so the compiled
``baseline`` kernel keeps only each bucket's *size*, in three tables per rank:

* ``hk``: a binary max-heap of keys ``size * R + (R - 1 - dest)``, so the
  largest bucket comes first and ties go to the lowest destination, exactly
  what the lazy heap pops.  Each key carries, in its low ``shift`` bits, the
  slot of its destination in the hash table: moving an entry during a sift
  updates the table without searching it, one cache miss per level instead of
  two (those misses were most of a pop's cost at 4,096 ranks; docs/performance-log.md).
* ``hkey`` / ``hpos``: an open-addressing table (linear probing, Knuth's
  multiplicative hash) from destination to heap position, emptied by
  backward-shift deletion, so there are no tombstones and a shifted entry's
  heap key learns its new slot.

Both are bounded by ``max_pending`` per rank.  The caller keeps the heap's
length and the pending count in its own rank row; :func:`add` and
:func:`pop_largest` take the length and say how it changes.  Checked against
:class:`gupsim.model.bucketing.Buckets` by a property test in
``tests/engines/fast/test_fast_baseline.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always", _nrt=False)
def _hslot(hkey, r, dest, mask):
    """The hash slot holding ``dest``, or the empty slot where it would go (linear probing)."""
    i = (dest * 2654435761) & mask
    while hkey[r, i] != -1 and hkey[r, i] != dest:
        i = (i + 1) & mask
    return i


@njit(cache=True, _nrt=False)
def _hdelete(hk, hkey, hpos, r, i, mask):
    """Empty slot ``i``, shifting later entries of its probe run back (no tombstones); a shifted entry's
    heap key learns its new slot."""
    j = i
    while True:
        j = (j + 1) & mask
        if hkey[r, j] == -1:
            break
        home = (hkey[r, j] * 2654435761) & mask
        if (i <= j and i < home <= j) or (i > j and (home > i or home <= j)):
            continue
        hkey[r, i] = hkey[r, j]
        pos = hpos[r, j]
        hpos[r, i] = pos
        hk[r, pos] = (hk[r, pos] & ~mask) | i
        i = j
    hkey[r, i] = -1


@njit(cache=True, inline="always", _nrt=False)
def _place(hk, hpos, r, pos, entry, mask):
    hk[r, pos] = entry
    hpos[r, entry & mask] = pos


@njit(cache=True, _nrt=False)
def _sift_up(hk, hpos, r, pos, mask):
    entry = hk[r, pos]
    while pos > 0:
        parent = (pos - 1) >> 1
        if hk[r, parent] > entry:
            break
        _place(hk, hpos, r, pos, hk[r, parent], mask)
        pos = parent
    _place(hk, hpos, r, pos, entry, mask)


@njit(cache=True, _nrt=False)
def add(hk, hkey, hpos, r, n, dest, nr, mask, shift):
    """:meth:`Buckets.add`: one more update for ``dest`` in rank ``r``'s heap of ``n`` buckets; returns the
    heap's new length (``n + 1`` when ``dest`` had no bucket)."""
    i = _hslot(hkey, r, dest, mask)
    if hkey[r, i] == -1:
        pos = n
        n += 1
        hkey[r, i] = dest
        hk[r, pos] = (nr + (nr - 1 - dest)) << shift | i
    else:
        pos = hpos[r, i]
        hk[r, pos] += nr << shift
    _sift_up(hk, hpos, r, pos, mask)
    return n


@njit(cache=True, _nrt=False)
def pop_largest(hk, hkey, hpos, r, n, nr, mask, shift):
    """:meth:`Buckets.pop_largest` from rank ``r``'s heap of ``n > 0`` buckets: (destination, size) of the
    largest, ties the lowest destination.  The heap's length is then ``n - 1``."""
    top = hk[r, 0]
    key = top >> shift
    dest, size = nr - 1 - key % nr, key // nr
    n -= 1
    if n > 0:
        entry = hk[r, n]
        hk[r, 0] = entry  # the last entry moves up first, so that _hdelete's shifts find it where it is
        hpos[r, entry & mask] = 0
    _hdelete(hk, hkey, hpos, r, top & mask, mask)
    if n > 0:
        entry = hk[r, 0]
        pos = 0
        while True:
            child = 2 * pos + 1
            if child >= n:
                break
            if child + 1 < n and hk[r, child + 1] > hk[r, child]:
                child += 1
            if hk[r, child] < entry:
                break
            _place(hk, hpos, r, pos, hk[r, child], mask)
            pos = child
        _place(hk, hpos, r, pos, entry, mask)
    return dest, size


def tables(R: int, limit: int) -> dict:
    """Every rank's empty heap (``heap``: ``hk`` in the functions above) and table (``dests``, ``positions``:
    ``hkey``, ``hpos``), sized for ``limit`` pending updates, and the table's ``mask`` and the ``shift`` that
    puts a heap key above its slot."""
    heap_cap = max(1, min(limit, R))
    hcap = 1 << max(1, (2 * heap_cap - 1).bit_length())
    shift = hcap.bit_length() - 1
    if (((limit + 1) * 2 * R) << shift) >= 1 << 62:
        raise ValueError("baseline kernel: max_pending x processes too large for the heap's keys")
    return {"heap": np.zeros((R, heap_cap), dtype=np.int64), "dests": np.full((R, hcap), -1, dtype=np.int32),
            "positions": np.zeros((R, hcap), dtype=np.int32), "mask": hcap - 1, "shift": shift}
