"""The fast engine's event queue, which keeps the canonical event order (:mod:`gupsim.engines.order`).

**The event queue** is a 4-ary heap behind a calendar of time buckets (see
"event queue" below): the heap holds only the events of the buckets up to the
current one, a few hundred, and later events wait unordered in their bucket's
four lists until the heap runs empty.  Every event in the heap is earlier than every
event outside it, so the queue pops exactly the heap-only order
(``tests/engines/fast/test_fast_heap.py`` compares the two); the heap's pop no longer sifts
through a heap as long as every pending event.  While an event runs, the rows
the next one will read first are prefetched (:func:`gupsim.engines.fast.core.prefetch_next`).

An event is a payload (its kind and its argument: see "payload" below, :func:`event`) with a key that packs
phase, entity and sequence number (:func:`key_for`); :func:`push` keys it as the active entity
(``C_ACTIVE``, which each kernel's loop sets from the event it pops: :func:`gupsim.engines.fast.core.enter`),
:func:`pop` returns (time, payload).  Each entity's next sequence number is the queue's ``seqs`` array; 37
bits of it last any run, so nothing is ever renumbered.

Every array that grows with load (the queue's heap and far table, the packet
table) is grown by the kernel's outer loop between batches of events, never
inside these helpers: callers keep :data:`HEAP_MARGIN` queue slots and
:data:`PACKET_MARGIN` packets free.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# The phases are part of push's signature, so the kernels take them from here with it.
from gupsim.engines.order import MAX_ENTITIES, NORMAL, URGENT, order_key  # noqa: F401
from gupsim.engines.fast.tables import EV_GIVE, C_ACTIVE, C_CAL_N, C_CUR, C_EVENTS, C_FAR_FREE, C_FAR_N, C_FAR_TOP, C_HEAP_N, C_INV_W, C_MOVED, C_NFREE, C_OUT_N, C_OUT_ROOM, C_OV_MIN, C_PAUSE_AT, C_REFILED, C_SEEN_K, C_SEEN_T, C_STOP_T, PACKET_MARGIN, f2i, grow_on_lines, i2f


#: A payload has a column of its own in the queue; below 2^PAYLOAD_BITS.
PAYLOAD_BITS = 48
PAYLOAD_MASK = (1 << PAYLOAD_BITS) - 1

#: Free queue slots the kernels' outer loop keeps (:func:`needs_room`), so no helper grows an array.
HEAP_MARGIN = 1 << 16


# ================================================================== payload
#
# A payload is ``arg << KIND_BITS | kind``: the kind (:data:`gupsim.engines.fast.tables.EV_CPU` and the others,
# 8 codes taken) in the low bits, its argument (a rank, a packet, a message, or a credit return's pool and
# chunks) above.  The widths are named here and nowhere else, and each leaves room: 16 kinds for what a
# router and a partitioned engine will add, 63 chunks to a credit return (BG/L's packets have at most 8).
# A credit return's argument is ``pool << CHUNK_BITS | chunks``; :data:`MAX_POOLS` is what fits in
# :data:`PAYLOAD_BITS` (the engine refuses a machine with more pools in one line).

KIND_BITS = 4
KIND_MASK = (1 << KIND_BITS) - 1
CHUNK_BITS = 6
CHUNK_MASK = (1 << CHUNK_BITS) - 1
MAX_POOLS = 1 << (PAYLOAD_BITS - KIND_BITS - CHUNK_BITS)


@njit(cache=True, inline="always", _nrt=False)
def event(kind, arg):
    """The payload of an event of ``kind`` about ``arg`` (a rank, a packet or a message)."""
    return (arg << KIND_BITS) | kind


@njit(cache=True, inline="always", _nrt=False)
def event_kind(payload):
    return payload & KIND_MASK


@njit(cache=True, inline="always", _nrt=False)
def event_arg(payload):
    return payload >> KIND_BITS


@njit(cache=True, inline="always", _nrt=False)
def give_event(pool, chunks):
    """The payload of a credit return of ``chunks`` to ``pool``."""
    return (((pool << CHUNK_BITS) | chunks) << KIND_BITS) | EV_GIVE


@njit(cache=True, inline="always", _nrt=False)
def give_pool(arg):
    """The pool of a credit return whose argument (:func:`event_arg`) is ``arg``."""
    return arg >> CHUNK_BITS


@njit(cache=True, inline="always", _nrt=False)
def give_chunks(arg):
    return arg & CHUNK_MASK


# ================================================================== heap
#
# An entry is 24 bytes: the time's IEEE-754 bits as an int64 (for times >= 0 the bits order as the
# floats do, so no float compare or float<->int conversion is needed), the key (:func:`key_for`: phase,
# entity, the entity's sequence number) and the payload.  Keys are unique, so comparing (time bits, key)
# compares the canonical order and the payload never decides.


def new_heap(n):
    """An empty event heap with room for ``n`` events."""
    return np.empty((n, 3), dtype=np.int64)


@njit(cache=True, inline="always", _nrt=False)
def key_for(ctr, seqs, phase):
    """The key of an event the active entity (``C_ACTIVE``) schedules now in ``phase``: its sequence number is
    the entity's next (``seqs``)."""
    entity = ctr[C_ACTIVE]
    seq = seqs[entity]
    seqs[entity] = seq + 1
    return order_key(phase, entity, seq)


@njit(cache=True, _nrt=False)
def _sift_down(hh, i, n, lt, lk, lp):
    """Put the entry (lt, lk, lp) at hole ``i`` of the heap's first ``n`` rows, moving smaller children up."""
    while True:
        first = 4 * i + 1
        if first >= n:
            break
        best = first
        bt, bk = hh[first, 0], hh[first, 1]
        for k in range(first + 1, min(first + 4, n)):
            kt = hh[k, 0]
            if kt < bt or (kt == bt and hh[k, 1] < bk):
                best, bt, bk = k, kt, hh[k, 1]
        if lt < bt or (lt == bt and lk < bk):
            break
        hh[i, 0], hh[i, 1], hh[i, 2] = bt, bk, hh[best, 2]
        i = best
    hh[i, 0], hh[i, 1], hh[i, 2] = lt, lk, lp


@njit(cache=True, _nrt=False)
def heap_push(hh, ctr, seqs, t, prio, payload):
    """Schedule ``payload`` (>= 0, below 2^PAYLOAD_BITS) at time ``t`` (>= 0) in phase ``prio``, as the active
    entity, in the bare heap ``hh``."""
    heap_insert(hh, ctr, f2i(t), key_for(ctr, seqs, prio), payload)


@njit(cache=True, _nrt=False)
def heap_insert(hh, ctr, tb, key, payload):
    """Put the entry (time bits ``tb``, ``key``, ``payload``) into the heap; its key is given."""
    n = ctr[C_HEAP_N]
    i = n
    while i > 0:
        parent = (i - 1) >> 2
        pt = hh[parent, 0]
        if pt < tb or (pt == tb and hh[parent, 1] < key):
            break
        hh[i, 0], hh[i, 1], hh[i, 2] = pt, hh[parent, 1], hh[parent, 2]
        i = parent
    hh[i, 0], hh[i, 1], hh[i, 2] = tb, key, payload
    ctr[C_HEAP_N] = n + 1


@njit(cache=True, _nrt=False)
def heap_pop(hh, ctr):
    """Remove the earliest event of the bare heap ``hh``; return (time, payload).  Keeps the latest key popped (``C_SEEN_*``).

    Not simply the current one: an event scheduled for the current instant with a smaller key (an URGENT
    one, or one of an entity numbered lower) pops after the events of that instant already gone."""
    n = ctr[C_HEAP_N] - 1
    tb, key, payload = hh[0, 0], hh[0, 1], hh[0, 2]
    if tb > ctr[C_SEEN_T]:
        ctr[C_SEEN_T], ctr[C_SEEN_K] = tb, key
    elif key > ctr[C_SEEN_K]:
        ctr[C_SEEN_K] = key
    ctr[C_HEAP_N] = n
    if n > 0:
        _sift_down(hh, 0, n, hh[n, 0], hh[n, 1], hh[n, 2])
    return i2f(tb), payload


# ================================================================== event queue
#
# The heap's cost grows with its length: a pop sifts through log4(n) levels, the bottom ones out of cache
# once the machine has tens of thousands of processes (docs/performance-log.md).  So the queue the kernels use
# is a calendar in front of the heap: time is cut into buckets of a fixed width, numbered from t = 0
# (``floor(t / width)``, a non-decreasing function of t, so equal times share a bucket); the heap holds the
# events of buckets up to the current one (``C_CUR``) and only those; later events wait unordered in their
# bucket's lists (a slot of the calendar ``cal``, one per bucket of the next ``len(cal) - 1``, whose last row
# holds the overflow lists for events beyond them; :data:`CAL_LISTS` lists a slot).  Every event in the heap
# is earlier than every event outside it, so the heap's minimum is the queue's minimum, ties included: exactly the heap-only order.  When the heap
# runs empty, the next non-empty bucket's events move into it.  The heap stays a bucket or so long.
#
# The queue is the tuple ``(heap, cal, far, seqs)``: ``far`` holds the entries outside the heap, rows
# (time bits, key, payload, next in its list); ``seqs`` each entity's next sequence number.  Invariant: the
# heap is empty only when the whole queue is, so ``ctr[C_HEAP_N] > 0`` still says "something is pending" and
# nothing else in the kernels changes.  The heap is kept long enough for every pending event (rows are only
# touched when used), so moving a bucket in never needs to grow it inside the loop.

#: Calendar slots (a power of two): buckets ahead of the current one kept in slots; later ones overflow.
CAL_SLOTS = 1 << 15
#: A bucket is this many processes' share of one hop's time (:func:`bucket_seconds`).
BUCKET_RANKS = 32
#: Lists per calendar slot (4, as :func:`_advance` walks them).  An event is filed in the list its sequence
#: number picks; moving a bucket into the heap walks the four lists side by side, so four of the far table's
#: cache misses are outstanding at once instead of one (the walk was 9-11% of a whole-machine run's time:
#: docs/performance-log.md).  The order of insertion into the heap changes no pop: keys are unique.
CAL_LISTS = 4
assert CAL_LISTS == 4, "_advance walks exactly four lists a slot (e0..e3)"


def bucket_seconds(hop_s, ranks):
    """The calendar's bucket width: pending events grow with the processes and spread over a few hop times
    (a head's chunk plus the router delay), so ``hop_s * BUCKET_RANKS / ranks`` keeps a bucket, and the
    heap, at a few hundred events at any machine size."""
    return hop_s * BUCKET_RANKS / max(ranks, BUCKET_RANKS)
#: ``C_OV_MIN`` while nothing overflows the calendar.
NO_BUCKET = (1 << 62) - 1


def new_queue(n, ctr, bucket_s=1e-9, slots=CAL_SLOTS, entities=1):
    """An empty event queue with room for ``n`` events, buckets ``bucket_s`` seconds wide and ``entities``
    entities' sequence numbers (counters in ``ctr``)."""
    assert slots & (slots - 1) == 0 and bucket_s > 0 and entities <= MAX_ENTITIES
    cal = np.full((slots + 1, CAL_LISTS), -1, dtype=np.int64)
    far = np.empty((n, 4), dtype=np.int64)
    ctr[C_CUR], ctr[C_FAR_N], ctr[C_CAL_N], ctr[C_FAR_TOP], ctr[C_MOVED] = 0, 0, 0, 0, 0
    ctr[C_INV_W] = np.float64(1.0 / bucket_s).view(np.int64)
    ctr[C_OV_MIN], ctr[C_FAR_FREE] = NO_BUCKET, -1
    return new_heap(n), cal, far, np.zeros(entities, dtype=np.int64)


@njit(cache=True, inline="always", _nrt=False)
def _bucket(ctr, tb):
    return np.int64(i2f(tb) * i2f(ctr[C_INV_W]))


@njit(cache=True, _nrt=False)
def _file(q, ctr, e, b):
    """Put far entry ``e`` (bucket ``b``, after the current one) into one of its slot's lists or the overflow's."""
    cal, far = q[1], q[2]
    slots = cal.shape[0] - 1
    if b < ctr[C_CUR] + slots:
        s = b & (slots - 1)
        ctr[C_CAL_N] += 1
    else:
        s = slots
        if b < ctr[C_OV_MIN]:
            ctr[C_OV_MIN] = b
    k = far[e, 1] & (CAL_LISTS - 1)  # the low bits of the entity's sequence number
    far[e, 3] = cal[s, k]
    cal[s, k] = e


@njit(cache=True, _nrt=False)
def push_keyed(q, ctr, tb, key, payload):
    """Queue the entry (time bits ``tb``, ``key``, ``payload``); its key is given."""
    hh, far = q[0], q[2]
    b = _bucket(ctr, tb)
    if ctr[C_HEAP_N] == 0:  # nothing pending: this event's bucket becomes the current one
        if b > ctr[C_CUR]:
            ctr[C_CUR] = b
        heap_insert(hh, ctr, tb, key, payload)
        return
    if b <= ctr[C_CUR]:
        heap_insert(hh, ctr, tb, key, payload)
        return
    e = ctr[C_FAR_FREE]
    if e >= 0:
        ctr[C_FAR_FREE] = far[e, 3]
    else:
        e = ctr[C_FAR_TOP]
        ctr[C_FAR_TOP] = e + 1
    far[e, 0], far[e, 1], far[e, 2] = tb, key, payload
    ctr[C_FAR_N] += 1
    _file(q, ctr, e, b)


@njit(cache=True, _nrt=False)
def push(q, ctr, t, prio, payload):
    """Schedule ``payload`` (>= 0, below 2^PAYLOAD_BITS) at time ``t`` (>= 0) in phase ``prio``, as the active
    entity (``C_ACTIVE``)."""
    push_keyed(q, ctr, f2i(t), key_for(ctr, q[3], prio), payload)


@njit(cache=True, _nrt=False)
def _advance(q, ctr):
    """The heap ran empty with events still outside it: move the next non-empty bucket's events in."""
    hh, cal, far = q[0], q[1], q[2]
    slots = cal.shape[0] - 1
    cur = ctr[C_CUR]
    while True:
        if ctr[C_CAL_N] == 0:  # the slots are empty: jump to the overflow's first bucket
            cur = ctr[C_OV_MIN] - 1
        cur += 1
        ctr[C_CUR] = cur
        # The overflow is redistributed when the calendar reaches its first bucket, not as soon as that bucket
        # comes within the slots' reach: then every entry due in the next ``slots`` buckets goes into the
        # slots in one walk, and an entry left over waits at least ``slots`` buckets for the next walk.
        # (Redistributed at the earliest moment, the walk would come again each time the calendar moved one
        # bucket on while the overflow was dense just beyond the slots, each walk covering the whole list:
        # the 64-rack UPC run, whose CPU steps of about 3 us outreach the slots' 2.3 us, then slows from
        # 0.43 to 0.12 M events per second as it goes; docs/performance-log.md.)
        if ctr[C_OV_MIN] <= cur:
            ctr[C_OV_MIN] = NO_BUCKET
            for k in range(CAL_LISTS):
                e = cal[slots, k]
                cal[slots, k] = -1
                while e >= 0:
                    nxt = far[e, 3]
                    _file(q, ctr, e, _bucket(ctr, far[e, 0]))
                    ctr[C_REFILED] += 1
                    e = nxt
        s = cur & (slots - 1)
        if cal[s, 0] >= 0 or cal[s, 1] >= 0 or cal[s, 2] >= 0 or cal[s, 3] >= 0:
            break
    e0, e1, e2, e3 = cal[s, 0], cal[s, 1], cal[s, 2], cal[s, 3]
    cal[s, 0], cal[s, 1], cal[s, 2], cal[s, 3] = -1, -1, -1, -1
    ctr[C_MOVED] += 1
    # four independent chains: each step's four loads do not wait on one another
    while e0 >= 0 or e1 >= 0 or e2 >= 0 or e3 >= 0:
        if e0 >= 0:
            e0 = _move_in(hh, ctr, far, e0)
        if e1 >= 0:
            e1 = _move_in(hh, ctr, far, e1)
        if e2 >= 0:
            e2 = _move_in(hh, ctr, far, e2)
        if e3 >= 0:
            e3 = _move_in(hh, ctr, far, e3)


@njit(cache=True, inline="always", _nrt=False)
def _move_in(hh, ctr, far, e):
    """Far entry ``e`` into the heap, its row onto the free list; the next entry of its list."""
    nxt = far[e, 3]
    heap_insert(hh, ctr, far[e, 0], far[e, 1], far[e, 2])
    far[e, 3] = ctr[C_FAR_FREE]
    ctr[C_FAR_FREE] = e
    ctr[C_FAR_N] -= 1
    ctr[C_CAL_N] -= 1
    return nxt


@njit(cache=True, _nrt=False)
def pop(q, ctr):
    """Remove the earliest event; return (time, payload) (:func:`heap_pop`, which keeps ``C_SEEN_*``)."""
    out = heap_pop(q[0], ctr)
    if ctr[C_HEAP_N] == 0 and ctr[C_FAR_N] > 0:
        _advance(q, ctr)
    return out


@njit(cache=True, inline="always", _nrt=False)
def needs_room(q, ctr):
    """True when the queue or the packet table is short of its margin: the kernel's loop must return to grow them.

    The heap must have room for every pending event (a bucket moving in), the far table for
    every one outside the heap."""
    pending = ctr[C_HEAP_N] + ctr[C_FAR_N] + HEAP_MARGIN
    return pending > q[0].shape[0] or pending > q[2].shape[0] or ctr[C_NFREE] < PACKET_MARGIN or \
        ctr[C_OUT_N] > ctr[C_OUT_ROOM]


@njit(cache=True, inline="always", _nrt=False)
def past_stop(q, ctr):
    """True when the earliest pending event comes after the stopping rule's time (``C_STOP_T``): the run ends
    with the end of that instant.  Compared as float bits (non-negative times order as their bits); the heap's
    first row is the queue's minimum (see "event queue")."""
    return q[0][0, 0] > ctr[C_STOP_T]


@njit(cache=True, inline="always", _nrt=False)
def batch_over(ctr):
    """True when the batch of events ends: the event count reached the driver's pause point (checked after
    each event, so that a loop always makes progress even when a test's limit is below the number of
    pending events)."""
    return ctr[C_EVENTS] >= ctr[C_PAUSE_AT]


def grow_queue(queue: tuple, ctr: np.ndarray, extra: int = 0) -> tuple:
    """The event queue with its heap and far table grown (doubled, or more) to hold every pending event, ``extra``
    more and :data:`HEAP_MARGIN` free slots, the margin ``needs_room`` checks.

    In NumPy here: a few calls a run, while compiling them (with ``np.empty``'s error formatting, Numba's string
    code) took 8.5 of a cold first run's 65 CPU seconds of compiling (docs/performance-log.md)."""
    heap, calendar, far, seqs = queue
    need = int(ctr[C_HEAP_N] + ctr[C_FAR_N]) + extra + HEAP_MARGIN
    if need > heap.shape[0]:
        heap = grow_on_lines(heap, max(2 * heap.shape[0], need))
    if need > far.shape[0]:
        far = grow_on_lines(far, max(2 * far.shape[0], need))
    return heap, calendar, far, seqs
