"""The compiled network shared by the fast kernels: event heap, credit pools, packet transit.

This is :mod:`gupsim.network` (seed 000 §5.1; docs/model.md §3) rewritten as
Numba-compiled functions over preallocated NumPy arrays, so that a whole
64x32x32 Blue Gene/L fits in one process and runs at millions of events per
second.  The model is the same, step for step:

* serialization at ``link_bytes_per_s`` with a per-link ``free_at`` time;
  cut-through: the head reaches the next router one chunk time plus the router
  delay after it starts; the tail arrives one serialization plus one router
  delay after the start on the last link;
* credit pools counted in chunks (link input buffers, the dynamic channels of
  adaptive routing, injection and reception FIFOs) with the two waiter classes
  of :class:`gupsim.network.Credits` (continuing packets first, entering
  packets must leave a bubble of ``max_chunks_per_packet``);
* the room a packet held upstream returns ``start + serial`` after it starts
  on the next link; reception room returns when the receiving CPU reads it;
* with ``fifos: per-dimension`` a rank has one injection and one reception
  FIFO per dimension plus a node-local one (:func:`fifo_group`,
  :func:`rec_pool`), as :class:`gupsim.network.Network`.

**Deferred credit returns.**  A credit return is an event of its own at a
later time, and those events were 37-46% of all events (docs/performance.md).
Almost always nobody waits on the pool when its room comes back, and then the
return's only effect is ``free += chunks``, which commutes with everything
except a read of that pool.  So :func:`give_later` keeps the return *beside
the pool* (:data:`DEFER_SLOTS` slots per pool, in ``dq``) with the key the
heap would have given it, and takes the same sequence number from the
counter, so every later event keeps its key.  Whoever reads the pool (a
request, the bubble check, adaptive routing's choice, a CPU checking its FIFO)
first *settles* it (:func:`settle`): every kept return whose (time, key) is
below the latest key popped so far is applied and counted as an event: exactly
the returns the heap would already have popped.  (The latest key, not the
current event's: an URGENT event scheduled for the current instant pops after
NORMAL events of that instant that are already gone, with a smaller key.)
When a packet starts waiting on the pool (:func:`enqueue`) or a CPU starts
watching it (:func:`watch_room`), a return must again be an event at its own
place in the order (it grants the waiter), so the kept returns still due are
pushed into the heap with their original keys (:func:`reschedule`).
Invariant: a pool with waiters or a watcher keeps no returns.  The kernels
renumber sequence numbers between batches of events, kept keys and heap keys
together (:func:`renumber_all`), and apply the returns due at the end
(:func:`settle_all`).  The order of events, and so every record (``events``
included), is the same as with every return in the heap
(``tests/test_fast_credit.py`` compares the two; ``DEFER_SLOTS = 0`` is the
latter).

Instead of SimPy processes, a packet is a row of an integer array (``PK_*``
columns) plus a float row (``PF_*``), and every timeout or wake-up is an
entry of one event queue ordered by (time, priority, sequence number).  The
sequence number is the order of scheduling, as SimPy's event id, so a run is
deterministic.

**The event queue** is a 4-ary heap behind a calendar of time buckets (see
"event queue" below): the heap holds only the events of the buckets up to the
current one, a few hundred, and later events wait unordered in their bucket's
four lists until the heap runs empty.  Every event in the heap is earlier than every
event outside it, so the queue pops exactly the heap-only order
(``tests/test_fast_heap.py`` compares the two); the heap's pop no longer sifts
through a heap as long as every pending event.  While an event runs, the rows
the next one will read first are prefetched (:func:`prefetch_next`).

SimPy also schedules bookkeeping events (process
initialisation, condition events) that the fast engine does not.  Those
could in principle reorder model events that fall at the same instant; in
every configuration tested the records are equal to SimPy's bit for bit
(``tests/test_fast.py``), and that test is where a divergence would show.

Every array that grows with load (the queue's heap and far table, the packet
table) is grown by the kernel's outer loop between batches of events, never
inside these helpers: callers keep :data:`HEAP_MARGIN` queue slots and
:data:`PACKET_MARGIN` packets free.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from gupsim.fast import cache  # noqa: F401  (stamps the kernels' cache with every fast source file)

# ------------------------------------------------------------------ event kinds (low 3 bits of a payload)
EV_CPU = 0      # a = rank: the CPU resumes
EV_HOP = 1      # a = packet: its head reached the next router (or it was just launched)
EV_RESUME = 2   # a = packet: it was granted the room it waited for
EV_TAIL = 3     # a = packet: its tail reached the destination
EV_GIVE = 4     # a = pool, chunks in bits 3..7: credits return to a pool
# 5 and 6 are the baseline kernel's own kinds
EV_FRONT = 7    # a = packet: buffer_order fifo, it may head its buffer now (its state says which wait ended)

URGENT, NORMAL = 0, 1  # SimPy's priorities: process initialisation before ordinary events
# heap keys: priority in bit 62, the sequence number above the payload
PAYLOAD_BITS = 32
_PRIO_BIT = 62
#: Sequence numbers are renumbered (in order) before they reach this (they must stay below 2^30): the bare heap
#: in :func:`heap_push` at ``C_SEQ_LIMIT``, the kernels' queue between batches (:func:`renumber_all`).
#: The kernels renumber at ``min(SEQ_LIMIT, SEQ_CAP - HEAP_MARGIN)`` (tests lower it to force renumbering).
SEQ_LIMIT = 1 << (_PRIO_BIT - PAYLOAD_BITS)
SEQ_CAP = SEQ_LIMIT
_PAYLOAD_MASK = (1 << PAYLOAD_BITS) - 1
_SEQ_FIELD = ((1 << _PRIO_BIT) - 1) ^ _PAYLOAD_MASK

# ------------------------------------------------------------------ packet table columns
PK_SRC, PK_DST, PK_CHUNKS, PK_WIRE, PK_PAYLOAD, PK_MSG, PK_N, PK_NODE = 0, 1, 2, 3, 4, 5, 6, 7
PK_DIM, PK_HELD, PK_STATE, PK_NEXT, PK_LINK, PK_BUBBLE = 8, 9, 10, 11, 12, 13
# buffer_order fifo: the next packet in the order of the buffer this one holds room in
PK_ONEXT = 14
#: 16 int32 columns (the last unused): a row is one 64-byte cache line, and the table starts on a line
#: (:func:`line_aligned`), so the one prefetch of a packet's row loads all of it.  (With 15 columns, 14 rows
#: in 16 straddled two lines, and the second line was a miss of its own.)
PK_COLS = 16
CACHE_LINE = 64
PF_START, PF_ASKED = 0, 1
PF_COLS = 2
# pool table ``pq``, one 32-byte row per credit pool (what a request reads, in one cache line): heads and
# tails of the continuing (0, 1) and entering (2, 3) waiters, how many credit returns are kept beside the
# pool (deferred, in ``dq``), and its free chunks
PQ_DEFERRED, PQ_FREE = 4, 5
# buffer_order fifo: the packets holding room in the pool, oldest first (a list through PK_ONEXT); the time
# its oldest packet may leave, the last departure, is kept as float bits in the pool's last ``dq`` slot
PQ_OHEAD, PQ_OTAIL = 6, 7  # the tail column must follow the head's (_append)
PQ_COLS = 8
#: Deferred returns kept per pool (``dq[pool, :, :]``, its second axis); a return that finds them full goes
#: into the heap.  0 defers nothing: every return is a heap event, as before deferring (tests compare the two).
#: 8 measured a little faster than 4 (2-10% of returns found the slots full, against 10-17%) for 64 MB more
#: address space on the whole machine, most of it never touched (docs/performance.md).
DEFER_SLOTS = 8
# packet states while waiting in a pool's queue
W_NONE, W_LINK, W_REC, W_INJ = 0, 1, 2, 3
# buffer_order fifo: waits to head its buffer (a departure wakes it), or for the departure time itself
W_FRONT, W_FRONT_TIME = 4, 5

# ------------------------------------------------------------------ rank table columns (network side)
RK_IN_HEAD, RK_IN_TAIL, RK_IN_COUNT, RK_WAIT, RK_GRANTED = 0, 1, 2, 3, 4
RK_NET_COLS = 8  # 5 used; 32-byte rows, on cache lines (line_aligned)
# RK_WAIT bits: what wakes a CPU that waits without a pending event
# WAKE_ROOM << g: room in the injection FIFO of group g (see fifo_group)
WAKE_INBOX, WAKE_GRANT, WAKE_ROOM = 1, 4, 8

# ------------------------------------------------------------------ counters
C_HEAP_N, C_SEQ, C_FREE_HEAD, C_NFREE, C_INJECTED, C_WIRE, C_DELIVERED, C_EVENTS = 0, 1, 2, 3, 4, 5, 6, 7
C_APPLIED, C_DONE, C_ERROR, C_HOPS, C_SEQ_LIMIT = 8, 9, 10, 11, 12
# the latest (time bits, key) popped so far: a deferred return below it would already have been popped
C_SEEN_T, C_SEEN_K = 13, 14
# the kernels renumber (heap and deferred returns together) between batches once C_SEQ reaches this
C_RENUMBER_AT = 15
# statistics of the deferred credit returns: applied beside their pool, pushed into the heap late
# (someone started waiting), pushed at once because the pool's slots were full; renumberings, and the
# deferred returns they found pending
C_LAZY, C_RESCHEDULED, C_DEFER_FULL, C_RENUMBERED, C_RENUMBER_KEPT = 16, 17, 18, 19, 20
# the event queue's calendar (see "event queue"): the current bucket, 1 / bucket width (float bits), entries
# outside the heap, of them those in the calendar's slots (the rest overflow), the overflow's smallest bucket,
# the far table's free list and high-water mark; statistics: buckets moved into the heap
C_CUR, C_INV_W, C_FAR_N, C_CAL_N, C_OV_MIN, C_FAR_FREE, C_FAR_TOP, C_MOVED = 21, 22, 23, 24, 25, 26, 27, 28
# a batch of events ends once C_EVENTS reaches this (gupsim.fast.driver: the points where a run can be saved)
C_PAUSE_AT = 29
# statistics: overflow entries redistributed when the calendar reached the overflow's first bucket
C_REFILED = 30
N_COUNTERS = 32

# ------------------------------------------------------------------ integer parameters
I_PPN, I_X, I_Y, I_Z, I_WRAPS, I_BUBBLE, I_ADAPTIVE, I_NLINKS, I_NRANKS, I_MAXCH = range(10)
I_POOL_DYN, I_POOL_INJ, I_POOL_REC, I_TOTAL, I_MARK0, I_MARK1, I_FIFO_GROUPS, I_ORDERED = range(10, 18)
N_IPARAMS = 18
F_RATE, F_CHUNK_S, F_ROUTER_S, F_CYCLE_S = range(4)
N_FPARAMS = 4

HEAP_MARGIN = 1 << 16
PACKET_MARGIN = 1 << 12


# ================================================================== heap
#
# An entry is 16 bytes: the time's IEEE-754 bits as an int64 (for times >= 0 the bits order as the
# floats do, so no float compare or float<->int conversion is needed) and one int64 key
# ``prio << 62 | seq << PAYLOAD_BITS | payload``.  Sequence numbers are unique, so comparing keys
# compares (priority, order of scheduling) and the payload never decides.  Four children are 64 bytes,
# a cache line, where the float64 rows of (time, seq, payload) took 96 (docs/performance.md).


@intrinsic
def _f2i(typingctx, x):
    """The bits of a float64 as an int64 (a bit cast, not a conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


@intrinsic
def _i2f(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


@intrinsic
def _prefetch_row(typingctx, arr, i):
    """Ask the CPU to start loading row ``i`` of a C-contiguous array into the cache (LLVM's prefetch; a
    hint, with no effect on any value)."""
    def codegen(context, builder, signature, args):
        arrty = signature.args[0]
        ary = context.make_array(arrty)(context, builder, args[0])
        index = [args[1]] + [context.get_constant(types.intp, 0)] * (arrty.ndim - 1)
        ptr = cgutils.get_item_pointer(context, builder, arrty, ary, index, wraparound=False)
        byte_ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [byte_ptr, i32(0), i32(3), i32(1)])  # read, keep in all levels, data cache
        return context.get_dummy_value()
    return types.void(arr, types.intp), codegen


def line_aligned(shape, dtype, fill=None):
    """A C-contiguous array whose data starts on a cache line (NumPy's large arrays start 16 bytes past one),
    filled with ``fill`` unless None.  For the tables whose rows are read together: rows of 32 or 64 bytes
    then never straddle two lines."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = np.empty(nbytes + CACHE_LINE, dtype=np.uint8)
    off = -buf.ctypes.data % CACHE_LINE
    out = buf[off:off + nbytes].view(dtype).reshape(shape)
    if fill is not None:
        out[...] = fill
    return out


def grow_on_lines(a, n):
    """:func:`grow` into a :func:`line_aligned` array."""
    out = line_aligned((n,) + a.shape[1:], a.dtype)
    out[: a.shape[0]] = a
    return out


def new_heap(n):
    """An empty event heap with room for ``n`` events."""
    return np.empty((n, 2), dtype=np.int64)


@njit(cache=True, _nrt=False)
def _sift_down(hh, i, n, lt, lk):
    """Put the entry (lt, lk) at hole ``i`` of the heap's first ``n`` rows, moving smaller children up."""
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
        hh[i, 0], hh[i, 1] = bt, bk
        i = best
    hh[i, 0], hh[i, 1] = lt, lk


@njit(cache=True, _nrt=False)
def _renumber(hh, ctr):
    """Give the pending events sequence numbers 0..n-1 in their order, in place (no allocation).

    Heapsort leaves the rows in descending order; reversed, they are ascending, which is a valid heap.
    Only the order of keys between events at equal times matters, and ranking keeps it; later events
    get larger numbers, as they would have."""
    n = ctr[C_HEAP_N]
    for last in range(n - 1, 0, -1):
        lt, lk = hh[last, 0], hh[last, 1]
        hh[last, 0], hh[last, 1] = hh[0, 0], hh[0, 1]
        _sift_down(hh, 0, last, lt, lk)
    for i in range(n // 2):
        j = n - 1 - i
        hh[i, 0], hh[j, 0] = hh[j, 0], hh[i, 0]
        hh[i, 1], hh[j, 1] = hh[j, 1], hh[i, 1]
    for i in range(n):
        k = hh[i, 1]
        hh[i, 1] = (k & ~_SEQ_FIELD) | (i << PAYLOAD_BITS)
    ctr[C_SEQ] = n


@njit(cache=True, _nrt=False)
def heap_push(hh, ctr, t, prio, payload):
    """Schedule ``payload`` (>= 0, below 2^PAYLOAD_BITS) at time ``t`` (>= 0) with SimPy priority ``prio``
    in the bare heap ``hh`` (renumbering it in place when the sequence reaches ``C_SEQ_LIMIT``)."""
    if ctr[C_SEQ] >= ctr[C_SEQ_LIMIT]:
        _renumber(hh, ctr)
    key = (prio << _PRIO_BIT) | (ctr[C_SEQ] << PAYLOAD_BITS) | payload
    ctr[C_SEQ] += 1
    _insert(hh, ctr, _f2i(t), key)


@njit(cache=True, _nrt=False)
def _insert(hh, ctr, tb, key):
    """Put the entry (time bits ``tb``, ``key``) into the heap; its key, sequence number included, is given."""
    n = ctr[C_HEAP_N]
    i = n
    while i > 0:
        parent = (i - 1) >> 2
        pt = hh[parent, 0]
        if pt < tb or (pt == tb and hh[parent, 1] < key):
            break
        hh[i, 0], hh[i, 1] = pt, hh[parent, 1]
        i = parent
    hh[i, 0], hh[i, 1] = tb, key
    ctr[C_HEAP_N] = n + 1


@njit(cache=True, _nrt=False)
def heap_pop(hh, ctr):
    """Remove the earliest event of the bare heap ``hh``; return (time, payload).  Keeps the latest key popped (``C_SEEN_*``).

    Not simply the current one: an URGENT event scheduled for the current instant pops after NORMAL events
    of that instant although its key is smaller, and those NORMAL ones are gone by then."""
    n = ctr[C_HEAP_N] - 1
    tb, key = hh[0, 0], hh[0, 1]
    if tb > ctr[C_SEEN_T]:
        ctr[C_SEEN_T], ctr[C_SEEN_K] = tb, key
    elif key > ctr[C_SEEN_K]:
        ctr[C_SEEN_K] = key
    t, payload = _i2f(tb), key & _PAYLOAD_MASK
    ctr[C_HEAP_N] = n
    if n > 0:
        _sift_down(hh, 0, n, hh[n, 0], hh[n, 1])
    return t, payload


# ================================================================== event queue
#
# The heap's cost grows with its length: a pop sifts through log4(n) levels, the bottom ones out of cache
# once the machine has tens of thousands of processes (docs/performance.md).  So the queue the kernels use
# is a calendar in front of the heap: time is cut into buckets of a fixed width, numbered from t = 0
# (``floor(t / width)``, a non-decreasing function of t, so equal times share a bucket); the heap holds the
# events of buckets up to the current one (``C_CUR``) and only those; later events wait unordered in their
# bucket's lists (a slot of the calendar ``cal``, one per bucket of the next ``len(cal) - 1``, whose last row
# holds the overflow lists for events beyond them; :data:`CAL_LISTS` lists a slot).  Every event in the heap
# is earlier than every event outside it, so the heap's minimum is the queue's minimum, ties included: exactly the heap-only order.  When the heap
# runs empty, the next non-empty bucket's events move into it.  The heap stays a bucket or so long.
#
# The queue is the tuple ``(heap, cal, far)``: ``far`` holds the entries outside the heap, rows
# (time bits, key, next in its list).  Invariant: the heap is empty only when the whole queue is, so
# ``ctr[C_HEAP_N] > 0`` still says "something is pending" and nothing else in the kernels changes.
# The heap is kept long enough for every pending event (rows are only touched when used), so moving a
# bucket in, or renumbering, never needs to grow it inside the loop.

#: Calendar slots (a power of two): buckets ahead of the current one kept in slots; later ones overflow.
CAL_SLOTS = 1 << 15
#: A bucket is this many processes' share of one hop's time (:func:`bucket_seconds`).
BUCKET_RANKS = 32
#: Lists per calendar slot (4, as :func:`_advance` walks them).  An event is filed in the list its sequence
#: number picks; moving a bucket into the heap walks the four lists side by side, so four of the far table's
#: cache misses are outstanding at once instead of one (the walk was 9-11% of a whole-machine run's time:
#: docs/performance.md, sixth pass).  The order of insertion into the heap changes no pop: keys are unique.
CAL_LISTS = 4
assert CAL_LISTS == 4, "_advance walks exactly four lists a slot (e0..e3)"


def bucket_seconds(hop_s, ranks):
    """The calendar's bucket width: pending events grow with the processes and spread over a few hop times
    (a head's chunk plus the router delay), so ``hop_s * BUCKET_RANKS / ranks`` keeps a bucket, and the
    heap, at a few hundred events at any machine size."""
    return hop_s * BUCKET_RANKS / max(ranks, BUCKET_RANKS)
_NO_BUCKET = (1 << 62) - 1


def new_queue(n, ctr, bucket_s=1e-9, slots=CAL_SLOTS):
    """An empty event queue with room for ``n`` events and buckets ``bucket_s`` seconds wide (counters in ``ctr``)."""
    assert slots & (slots - 1) == 0 and bucket_s > 0
    cal = np.full((slots + 1, CAL_LISTS), -1, dtype=np.int64)
    far = np.empty((n, 3), dtype=np.int64)
    ctr[C_CUR], ctr[C_FAR_N], ctr[C_CAL_N], ctr[C_FAR_TOP], ctr[C_MOVED] = 0, 0, 0, 0, 0
    ctr[C_INV_W] = np.float64(1.0 / bucket_s).view(np.int64)
    ctr[C_OV_MIN], ctr[C_FAR_FREE] = _NO_BUCKET, -1
    return new_heap(n), cal, far


@njit(cache=True, inline="always", _nrt=False)
def _bucket(ctr, tb):
    return np.int64(_i2f(tb) * _i2f(ctr[C_INV_W]))


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
    k = (far[e, 1] >> PAYLOAD_BITS) & (CAL_LISTS - 1)
    far[e, 2] = cal[s, k]
    cal[s, k] = e


@njit(cache=True, _nrt=False)
def _enqueue(q, ctr, tb, key):
    """Queue the entry (time bits ``tb``, ``key``); its key, sequence number included, is given."""
    hh, far = q[0], q[2]
    b = _bucket(ctr, tb)
    if ctr[C_HEAP_N] == 0:  # nothing pending: this event's bucket becomes the current one
        if b > ctr[C_CUR]:
            ctr[C_CUR] = b
        _insert(hh, ctr, tb, key)
        return
    if b <= ctr[C_CUR]:
        _insert(hh, ctr, tb, key)
        return
    e = ctr[C_FAR_FREE]
    if e >= 0:
        ctr[C_FAR_FREE] = far[e, 2]
    else:
        e = ctr[C_FAR_TOP]
        ctr[C_FAR_TOP] = e + 1
    far[e, 0], far[e, 1] = tb, key
    ctr[C_FAR_N] += 1
    _file(q, ctr, e, b)


@njit(cache=True, _nrt=False)
def push(q, ctr, t, prio, payload):
    """Schedule ``payload`` (>= 0, below 2^PAYLOAD_BITS) at time ``t`` (>= 0) with SimPy priority ``prio``.

    The kernels renumber the sequence between batches (:func:`renumber_all`) before it can overflow."""
    key = (prio << _PRIO_BIT) | (ctr[C_SEQ] << PAYLOAD_BITS) | payload
    ctr[C_SEQ] += 1
    _enqueue(q, ctr, _f2i(t), key)


@njit(cache=True, _nrt=False)
def _advance(q, ctr):
    """The heap ran empty with events still outside it: move the next non-empty bucket's events in."""
    hh, cal, far = q
    slots = cal.shape[0] - 1
    cur = ctr[C_CUR]
    while True:
        if ctr[C_CAL_N] == 0:  # the slots are empty: jump to the overflow's first bucket
            cur = ctr[C_OV_MIN] - 1
        cur += 1
        ctr[C_CUR] = cur
        # The overflow is redistributed when the calendar reaches its first bucket, not as soon as that bucket
        # comes within the slots' reach: then every entry due in the next ``slots`` buckets goes into the
        # slots in one pass, and an entry left over waits at least ``slots`` buckets for the next pass.
        # (At the earliest moment, the pass came again as soon as the calendar moved one bucket on while
        # the overflow was dense just beyond the slots, each pass walking the whole list: the 64-rack UPC
        # run, whose CPU steps of about 3 us outreach the slots' 2.3 us, slowed from 0.43 to 0.12 M events
        # per second as it went; docs/performance.md, fifth pass.)
        if ctr[C_OV_MIN] <= cur:
            ctr[C_OV_MIN] = _NO_BUCKET
            for k in range(CAL_LISTS):
                e = cal[slots, k]
                cal[slots, k] = -1
                while e >= 0:
                    nxt = far[e, 2]
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
    nxt = far[e, 2]
    _insert(hh, ctr, far[e, 0], far[e, 1])
    far[e, 2] = ctr[C_FAR_FREE]
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
def _prefetch_first(payload, pk, pf, pq, rk):
    """Prefetch the first row an event reads: its packet's, its pool's (a credit return) or its rank's."""
    kind, a = payload & 7, payload >> 3
    if kind == EV_CPU:
        _prefetch_row(rk, a)
    elif kind == EV_GIVE:
        _prefetch_row(pq, a >> 5)
    elif kind <= EV_TAIL or kind == EV_FRONT:  # a packet's event (a kernel's own kinds are left alone)
        _prefetch_row(pk, a)
        _prefetch_row(pf, a)


@njit(cache=True, inline="always", _nrt=False)
def next_cpu_rank(q, ctr):
    """The rank the next event resumes if it is a CPU's event, else -1 (for a kernel's own prefetches)."""
    if ctr[C_HEAP_N] == 0:
        return -1
    payload = q[0][0, 1] & _PAYLOAD_MASK
    return payload >> 3 if payload & 7 == EV_CPU else -1


@njit(cache=True, inline="always", _nrt=False)
def prefetch_next(q, ctr, pk, pf, pq, dq, lf, lb, nbr, coords, ip, rk):
    """Start loading what the next events will read while the current one runs: at 16,384 nodes and more
    those rows are rarely in the cache.  A pipeline two events deep: the event after next (the least of the
    root's children, nearly always) gets its first row; the next one, whose first row was asked for one event
    ago, gets the rows that row leads to when it is a head about to go on, reaching a router or woken at the
    front of its buffer (its node's links, their buffers, byte counts and far ends, the coordinates of its
    node and destination, the pool its credit returns to, and the packet behind it in that buffer)."""
    n = ctr[C_HEAP_N]
    if n == 0:
        return
    hh = q[0]
    payload = hh[0, 1] & _PAYLOAD_MASK
    _prefetch_first(payload, pk, pf, pq, rk)
    if payload & 7 == EV_HOP or payload & 7 == EV_FRONT:  # a head about to go on (hop_on)
        p = payload >> 3
        link, held = pk[p, PK_NODE] * 6, pk[p, PK_HELD]
        for k in range(6):
            _prefetch_row(lf, link + k)
        for k in range(0, 6, 2):  # 32-byte rows: two to a cache line
            _prefetch_row(pq, link + k)
        _prefetch_row(pq, held)
        _prefetch_row(dq, held)
        # what hop_on and _go read next: the route's coordinates, and the chosen link's byte count and far end
        _prefetch_row(coords, pk[p, PK_NODE])
        _prefetch_row(coords, node_of(ip, pk[p, PK_DST]))
        _prefetch_row(lb, link)
        _prefetch_row(nbr, link)
        if ip[I_ORDERED]:
            nxt = pk[p, PK_ONEXT]  # leave() reads the state of the packet behind it in its buffer
            if 0 <= nxt < pk.shape[0]:  # (stale in a packet just launched: a hint, harmless)
                _prefetch_row(pk, nxt)
    if n > 1:
        best = 1
        for k in range(2, min(5, n)):
            if hh[k, 0] < hh[best, 0] or (hh[k, 0] == hh[best, 0] and hh[k, 1] < hh[best, 1]):
                best = k
        _prefetch_first(hh[best, 1] & _PAYLOAD_MASK, pk, pf, pq, rk)


@njit(cache=True, _nrt=False)
def _gather(q, ctr):
    """Move every entry outside the heap into it (the heap has room: see :func:`needs_room`)."""
    hh, cal, far = q
    for s in range(cal.shape[0]):
        for k in range(CAL_LISTS):
            e = cal[s, k]
            cal[s, k] = -1
            while e >= 0:
                _insert(hh, ctr, far[e, 0], far[e, 1])
                e = far[e, 2]
    ctr[C_FAR_N], ctr[C_CAL_N], ctr[C_FAR_TOP], ctr[C_FAR_FREE], ctr[C_OV_MIN] = 0, 0, 0, -1, _NO_BUCKET


@njit(cache=True, _nrt=False)
def _scatter(q, ctr):
    """After renumbering (the heap sorted ascending): the events after the current bucket leave the heap again.

    They are a suffix of the sorted rows, and a sorted prefix is a valid heap."""
    hh = q[0]
    n = ctr[C_HEAP_N]
    keep = 0
    while keep < n and _bucket(ctr, hh[keep, 0]) <= ctr[C_CUR]:
        keep += 1
    if keep == 0:
        return
    ctr[C_HEAP_N] = keep
    for i in range(keep, n):
        _enqueue(q, ctr, hh[i, 0], hh[i, 1])


def grow(a, n):
    """A copy of ``a`` with ``n`` rows (numba-compiled below; rows beyond ``len(a)`` uninitialised)."""
    out = np.empty((n,) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


grow = njit(cache=True)(grow)


@njit(cache=True, inline="always", _nrt=False)
def needs_room(q, ctr):
    """True when the queue or the packet table is short of its margin: the kernel's loop must return to grow them.

    The heap must have room for every pending event (a bucket moving in, renumbering), the far table for
    every one outside the heap."""
    pending = ctr[C_HEAP_N] + ctr[C_FAR_N] + HEAP_MARGIN
    return pending > q[0].shape[0] or pending > q[2].shape[0] or ctr[C_NFREE] < PACKET_MARGIN


@njit(cache=True, inline="always", _nrt=False)
def batch_over(ctr):
    """True when the batch of events ends: the sequence number reached the kernels' renumbering point, or
    the event count the driver's pause point (checked after each event).

    Checked after an event, not before, so that a loop always makes progress even when a test's limit is
    below the number of pending events."""
    return ctr[C_SEQ] >= ctr[C_RENUMBER_AT] or ctr[C_EVENTS] >= ctr[C_PAUSE_AT]


@njit(cache=True)
def grow_queue(q, ctr, extra=0):
    """The queue, its heap and far table grown (doubled, or more) to hold every pending event, ``extra`` more,
    and :data:`HEAP_MARGIN` free slots."""
    hh, cal, far = q
    need = ctr[C_HEAP_N] + ctr[C_FAR_N] + extra + HEAP_MARGIN
    if need > hh.shape[0]:
        hh = grow(hh, max(2 * hh.shape[0], need))
    if need > far.shape[0]:
        far = grow(far, max(2 * far.shape[0], need))
    return hh, cal, far


@njit(cache=True, _nrt=False)
def link_free_list(pk, first, last, ctr):
    """Chain packet rows ``first..last-1`` onto the free list."""
    for p in range(first, last - 1):
        pk[p, PK_NEXT] = p + 1
    pk[last - 1, PK_NEXT] = ctr[C_FREE_HEAD]
    ctr[C_FREE_HEAD] = first
    ctr[C_NFREE] += last - first


@njit(cache=True, _nrt=False)
def alloc_packet(pk, ctr):
    p = ctr[C_FREE_HEAD]
    ctr[C_FREE_HEAD] = pk[p, PK_NEXT]
    ctr[C_NFREE] -= 1
    pk[p, PK_NEXT] = -1
    pk[p, PK_STATE] = W_NONE
    return p


@njit(cache=True, _nrt=False)
def free_packet(pk, ctr, p):
    pk[p, PK_NEXT] = ctr[C_FREE_HEAD]
    ctr[C_FREE_HEAD] = p
    ctr[C_NFREE] += 1


@njit(cache=True, _nrt=False)
def flush_cpu(r, now, ci, cf, fp, hh, ctr, phase):
    """:meth:`Cpu.flush`: rank ``r`` resumes in ``phase`` after its cycle debt.

    Every kernel keeps a rank's phase in column 0 of its integer rank table ``ci`` and its
    cycle debt in column 0 of its float table ``cf``.
    """
    cycles = cf[r, 0]
    cf[r, 0] = 0.0
    ci[r, 0] = phase
    push(hh, ctr, now + cycles * fp[F_CYCLE_S], NORMAL, r << 3 | EV_CPU)


# ================================================================== credit pools


@njit(cache=True, _nrt=False)
def settle(pq, dq, ctr, pool):
    """Apply the returns kept beside ``pool`` that the heap would already have delivered.

    Those are the ones whose (time, key) is below the latest key popped so far (``C_SEEN_*``): a return
    is scheduled after the event scheduling it (later, or at the same instant with a larger sequence
    number), so it was in the heap when that key was popped, and being smaller it was popped first.
    Each is one event, counted as if popped.  Nobody waited on the pool when they came due (see the
    invariant in the module docstring), so their only effect is the room.  Call before reading the
    pool's room."""
    n = pq[pool, PQ_DEFERRED]
    if n == 0:
        return
    nt, nk = ctr[C_SEEN_T], ctr[C_SEEN_K]
    i = 0
    while i < n:
        et, ek = dq[pool, i, 0], dq[pool, i, 1]
        if et < nt or (et == nt and ek < nk):
            pq[pool, PQ_FREE] += (ek >> 3) & 31
            ctr[C_EVENTS] += 1
            ctr[C_LAZY] += 1
            n -= 1  # the slots are unordered: move the last one into this one
            dq[pool, i, 0], dq[pool, i, 1] = dq[pool, n, 0], dq[pool, n, 1]
        else:
            i += 1
    pq[pool, PQ_DEFERRED] = n


@njit(cache=True, _nrt=False)
def reschedule(pq, dq, hh, ctr, pool):
    """Someone is about to wait on ``pool``: its kept returns become heap events again, at their own keys.

    A return that would grant a waiter must happen at its place in the event order; the heap keeps it
    there because the key (sequence number included) is the one it got when it was scheduled."""
    settle(pq, dq, ctr, pool)
    n = pq[pool, PQ_DEFERRED]
    for i in range(n):
        _enqueue(hh, ctr, dq[pool, i, 0], dq[pool, i, 1])
    ctr[C_RESCHEDULED] += n
    pq[pool, PQ_DEFERRED] = 0


@njit(cache=True, _nrt=False)
def room(pq, dq, ctr, pool):
    """The pool's free chunks now (its due returns applied)."""
    settle(pq, dq, ctr, pool)
    return pq[pool, PQ_FREE]


@njit(cache=True, _nrt=False)
def take(pq, dq, ctr, pool, chunks, bubble):
    """:meth:`Credits.take`: room now, without overtaking a waiter."""
    settle(pq, dq, ctr, pool)
    if bubble:
        if pq[pool, 0] >= 0 or pq[pool, 2] >= 0 or pq[pool, PQ_FREE] < chunks + bubble:
            return False
    elif pq[pool, 0] >= 0 or pq[pool, PQ_FREE] < chunks:
        return False
    pq[pool, PQ_FREE] -= chunks
    return True


@njit(cache=True, _nrt=False)
def enqueue(pk, pq, dq, hh, ctr, pool, p, cls):
    """Append packet ``p`` to the pool's continuing (0) or entering (1) queue."""
    reschedule(pq, dq, hh, ctr, pool)
    _append(pk, pq, pool, p, 2 * cls, PK_NEXT)


@njit(cache=True, inline="always", _nrt=False)
def _append(pk, pq, pool, p, head, link):
    """Append ``p`` to the pool's list whose head and tail are columns ``head`` and ``head + 1`` of its row,
    linked through packet column ``link``."""
    pk[p, link] = -1
    if pq[pool, head] < 0:
        pq[pool, head] = p
    else:
        pk[pq[pool, head + 1], link] = p
    pq[pool, head + 1] = p


@njit(cache=True, _nrt=False)
def watch_room(pq, dq, rk, hh, ctr, ip, r, g):
    """Rank ``r``'s CPU waits for room in its injection FIFO of group ``g`` (:data:`WAKE_ROOM` << g);
    that FIFO's returns must wake it."""
    rk[r, RK_WAIT] |= WAKE_ROOM << g
    reschedule(pq, dq, hh, ctr, ip[I_POOL_INJ] + r * ip[I_FIFO_GROUPS] + g)


@njit(cache=True, _nrt=False)
def wake(rk, hh, ctr, rank, now):
    rk[rank, RK_WAIT] = 0
    push(hh, ctr, now, NORMAL, rank << 3 | EV_CPU)


@njit(cache=True, _nrt=False)
def give(pk, pq, rk, ip, hh, ctr, pool, chunks, now):
    """:meth:`Credits.give`: return room, grant waiters in order, fire watchers.

    Returns kept beside the pool need not be settled first: with a waiter or a watcher there are none,
    and without, this only adds room, as they do."""
    pq[pool, PQ_FREE] += chunks
    for cls in range(2):
        h = 2 * cls
        while pq[pool, h] >= 0:
            p = pq[pool, h]
            if pq[pool, PQ_FREE] < pk[p, PK_CHUNKS] + pk[p, PK_BUBBLE]:
                return
            pq[pool, h] = pk[p, PK_NEXT]
            pq[pool, PQ_FREE] -= pk[p, PK_CHUNKS]
            if pk[p, PK_STATE] == W_INJ:
                src = pk[p, PK_SRC]
                rk[src, RK_GRANTED] = 1
                if rk[src, RK_WAIT] & WAKE_GRANT:
                    wake(rk, hh, ctr, src, now)
            else:
                push(hh, ctr, now, NORMAL, p << 3 | EV_RESUME)
    r, bit = _room_watch(ip, pool)
    if r >= 0 and rk[r, RK_WAIT] & bit and pq[pool, PQ_FREE] >= ip[I_MAXCH]:
        wake(rk, hh, ctr, r, now)


@njit(cache=True, inline="always", _nrt=False)
def _watched(pq, rk, ip, pool):
    """A packet waits on the pool, or (an injection FIFO) its CPU waits for room: a return is an event."""
    if pq[pool, 0] >= 0 or pq[pool, 2] >= 0:
        return True
    r, bit = _room_watch(ip, pool)
    return r >= 0 and rk[r, RK_WAIT] & bit != 0


@njit(cache=True, inline="always", _nrt=False)
def _room_watch(ip, pool):
    """(rank, its RK_WAIT bit) of an injection FIFO pool, or (-1, 0) for any other pool."""
    inj, groups = ip[I_POOL_INJ], ip[I_FIFO_GROUPS]
    if not inj <= pool < inj + ip[I_NRANKS] * groups:
        return -1, 0
    r = (pool - inj) // groups
    return r, WAKE_ROOM << (pool - inj - r * groups)


@njit(cache=True, _nrt=False)
def give_later(pk, pq, dq, rk, ip, hh, ctr, pool, chunks, now, delay):
    """:meth:`Network.release_later`: kept beside the pool (deferred) unless someone waits on it."""
    if delay <= 0.0:
        give(pk, pq, rk, ip, hh, ctr, pool, chunks, now)
        return
    payload = (pool << 8) | (chunks << 3) | EV_GIVE
    if _watched(pq, rk, ip, pool):
        push(hh, ctr, now + delay, NORMAL, payload)
        return
    n = pq[pool, PQ_DEFERRED]
    if n == dq.shape[1] - 1:  # the last slot is the pool's front time (PQ_OHEAD)
        settle(pq, dq, ctr, pool)
        n = pq[pool, PQ_DEFERRED]
        if n == dq.shape[1] - 1:  # still full: this one goes into the heap, which is exact too
            ctr[C_DEFER_FULL] += 1
            push(hh, ctr, now + delay, NORMAL, payload)
            return
    # the key push would have given it, and the sequence number taken as push takes it
    dq[pool, n, 0] = _f2i(now + delay)
    dq[pool, n, 1] = (NORMAL << _PRIO_BIT) | (ctr[C_SEQ] << PAYLOAD_BITS) | payload
    ctr[C_SEQ] += 1
    pq[pool, PQ_DEFERRED] = n + 1


@njit(cache=True)
def renumber_all(hh, ctr, pq, dq):
    """Renumber the sequence between batches of events: the queue's keys and the deferred ones together.

    The deferred returns still due go back into the queue, and every event outside the heap into the heap
    (grown for them), so one in-place renumbering (:func:`_renumber`) ranks every pending key; then the
    events after the current bucket leave the heap again, and deferring resumes."""
    kept = 0
    for pool in range(pq.shape[0]):
        kept += pq[pool, PQ_DEFERRED]
    hh = grow_queue(hh, ctr, kept)
    for pool in range(pq.shape[0]):
        if pq[pool, PQ_DEFERRED]:
            reschedule(pq, dq, hh, ctr, pool)
    _gather(hh, ctr)
    _renumber(hh[0], ctr)
    _scatter(hh, ctr)
    ctr[C_RENUMBER_KEPT] += kept
    # the latest key popped was numbered the old way; every return deferred from now on is later anyway
    ctr[C_SEEN_K] = -1
    ctr[C_RENUMBERED] += 1
    return hh


@njit(cache=True)
def between_batches(hh, ctr, pq, dq):
    """The kernels' outer loop: renumber when due, and keep :data:`HEAP_MARGIN` free queue slots."""
    if ctr[C_SEQ] >= ctr[C_RENUMBER_AT]:
        hh = renumber_all(hh, ctr, pq, dq)
    return grow_queue(hh, ctr)


@njit(cache=True, _nrt=False)
def settle_all(hh, ctr, pq, dq, now):
    """At the end of a run: apply the returns the heap would have popped; return the final time.

    The run stopped after an event (done, or an error): the returns before it.  The heap ran empty
    (deadlock): all of them, the last one's time being the final time, as the heap would have had it."""
    drained = ctr[C_HEAP_N] == 0 and ctr[C_DONE] == 0 and ctr[C_ERROR] == 0
    if drained:
        for pool in range(pq.shape[0]):
            for i in range(pq[pool, PQ_DEFERRED]):
                et, ek = dq[pool, i, 0], dq[pool, i, 1]
                if et > ctr[C_SEEN_T] or (et == ctr[C_SEEN_T] and ek > ctr[C_SEEN_K]):
                    ctr[C_SEEN_T], ctr[C_SEEN_K] = et, ek
        now = _i2f(ctr[C_SEEN_T])
        ctr[C_SEEN_K] += 1  # settle everything up to and including the last key
    for pool in range(pq.shape[0]):
        settle(pq, dq, ctr, pool)
    return now


# ================================================================== FIFOs per dimension


@njit(cache=True, inline="always", _nrt=False)
def fifo_group(ip, src, dst):
    """The injection FIFO group of a packet from rank ``src`` to ``dst``: the first dimension in which
    their nodes differ (the first of its dimension-order route), 3 for a node-local packet, 0 if shared."""
    if ip[I_FIFO_GROUPS] == 1:
        return 0
    a, b = node_of(ip, src), node_of(ip, dst)
    for d in range(3):
        length = ip[I_X + d]
        if a % length != b % length:
            return d
        a //= length
        b //= length
    return 3


@njit(cache=True, inline="always", _nrt=False)
def dim_group(ip, d):
    """:meth:`Network.dimension_fifos`: the injection FIFO group of a packet leaving along dimension ``d``."""
    return d if ip[I_FIFO_GROUPS] > 1 else 0


@njit(cache=True, inline="always", _nrt=False)
def inj_pool(ip, src, dst):
    """:meth:`Network.injection_fifo`."""
    return ip[I_POOL_INJ] + src * ip[I_FIFO_GROUPS] + fifo_group(ip, src, dst)


@njit(cache=True, inline="always", _nrt=False)
def rec_pool(pk, ip, p):
    """The reception FIFO of an arrived packet: the dimension of its last link (``PK_LINK``), 3 if it used none."""
    groups = ip[I_FIFO_GROUPS]
    link = pk[p, PK_LINK]
    g = 0 if groups == 1 else (3 if link < 0 else (link % 6) >> 1)
    return ip[I_POOL_REC] + pk[p, PK_DST] * groups + g


# ================================================================== transit


@njit(cache=True, _nrt=False)
def launch(pk, pf, ip, hh, ctr, p, now):
    """:meth:`Network.launch`: ``p`` holds its injection room; start its transit now."""
    ctr[C_INJECTED] += 1
    ctr[C_WIRE] += pk[p, PK_WIRE]
    src = pk[p, PK_SRC]
    pk[p, PK_NODE] = node_of(ip, src)
    pk[p, PK_DIM] = -1
    pk[p, PK_HELD] = inj_pool(ip, src, pk[p, PK_DST])
    pk[p, PK_LINK] = -1
    pf[p, PF_START] = now
    push(hh, ctr, now, URGENT, p << 3 | EV_HOP)


@njit(cache=True, inline="always", _nrt=False)
def node_of(ip, rank):
    """The node of ``rank``: a division is dear on every hop, so none with one process per node."""
    return rank // ip[I_PPN] if ip[I_PPN] > 1 else rank


@njit(cache=True, inline="always", _nrt=False)
def _offset(a, b, length, wraps):
    if wraps:
        delta = b - a  # (b - a) % length, as both are in [0, length), without the division
        if delta < 0:
            delta += length
        return delta if 2 * delta <= length else delta - length
    return b - a


@njit(cache=True, _nrt=False)
def _dynamic_choice(pk, pq, dq, ctr, lf, ip, coords, node, dst, chunks):
    """Least busy minimal link whose dynamic channel has room now, or -1."""
    best = -1
    base = ip[I_POOL_DYN]
    for d in range(3):
        length = ip[I_X + d]
        off = _offset(coords[node, d], coords[dst, d], length, ip[I_WRAPS])
        if off == 0:
            continue
        both = ip[I_WRAPS] and 2 * abs(off) == length
        for k in range(2 if both else 1):
            port = 2 * d + k if both else (2 * d if off > 0 else 2 * d + 1)
            link = node * 6 + port
            if room(pq, dq, ctr, base + link) >= chunks and (best < 0 or lf[link, 0] < lf[best, 0]):
                best = link
    if best >= 0:
        pq[base + best, PQ_FREE] -= chunks
    return best


@njit(cache=True, _nrt=False)
def _go(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, hh, ctr, p, link, pool, now):
    """The packet holds room in ``pool`` behind ``link``: start on the link."""
    serial = pk[p, PK_WIRE] / fp[F_RATE]
    ctr[C_HOPS] += 1
    pk[p, PK_NODE] = nbr[link]
    start = max(now, lf[link, 0])
    lf[link, 0] = start + serial
    lf[link, 1] += serial
    lb[link] += pk[p, PK_WIRE]
    give_later(pk, pq, dq, rk, ip, hh, ctr, pk[p, PK_HELD], pk[p, PK_CHUNKS], now, start + serial - now)
    if ip[I_ORDERED]:
        leave(pk, pq, dq, hh, ctr, pk[p, PK_HELD], start, now)
        order_append(pk, pq, pool, p)
    pk[p, PK_HELD] = pool
    pk[p, PK_LINK] = link  # the last link, once it has arrived: its reception FIFO group
    pf[p, PF_START] = start
    head = min(serial, fp[F_CHUNK_S]) + fp[F_ROUTER_S]
    push(hh, ctr, now + (start + head - now), NORMAL, p << 3 | EV_HOP)


@njit(cache=True, _nrt=False)
def _arrive(pk, pf, pq, dq, rk, ip, fp, hh, ctr, p, now):
    """Room taken in the reception FIFO: wait for the tail."""
    if ip[I_ORDERED]:
        leave(pk, pq, dq, hh, ctr, pk[p, PK_HELD], now, now)
    serial = pk[p, PK_WIRE] / fp[F_RATE]
    tail = pf[p, PF_START] + serial + fp[F_ROUTER_S] - now
    if tail > 0:
        push(hh, ctr, now + tail, NORMAL, p << 3 | EV_TAIL)
    else:
        deliver(pk, pq, rk, ip, hh, ctr, p, now)


@njit(cache=True, _nrt=False)
def deliver(pk, pq, rk, ip, hh, ctr, p, now):
    """Tail in: free the last buffer, put the packet in the receiver's inbox, wake its CPU."""
    give(pk, pq, rk, ip, hh, ctr, pk[p, PK_HELD], pk[p, PK_CHUNKS], now)
    ctr[C_DELIVERED] += 1
    r = pk[p, PK_DST]
    pk[p, PK_NEXT] = -1
    if rk[r, RK_IN_HEAD] < 0:
        rk[r, RK_IN_HEAD] = p
    else:
        pk[rk[r, RK_IN_TAIL], PK_NEXT] = p
    rk[r, RK_IN_TAIL] = p
    rk[r, RK_IN_COUNT] += 1
    if rk[r, RK_WAIT] & WAKE_INBOX:
        wake(rk, hh, ctr, r, now)


@njit(cache=True, _nrt=False)
def inbox_pop(pk, rk, r):
    p = rk[r, RK_IN_HEAD]
    rk[r, RK_IN_HEAD] = pk[p, PK_NEXT]
    rk[r, RK_IN_COUNT] -= 1
    return p


@njit(cache=True, _nrt=False)
def hop(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, coords, hh, ctr, p, now):
    """One step of :meth:`Network._transit`: the head is at ``PK_NODE``."""
    if ip[I_ORDERED]:
        # Still holding injection room means just launched (later hops hold link pools, and a packet that
        # waits goes on in hop_on): it enters its injection FIFO's order, as Network._transit starts.
        if pk[p, PK_HELD] >= ip[I_POOL_INJ]:
            order_append(pk, pq, pk[p, PK_HELD], p)
        if not front_ready(pk, pq, dq, hh, ctr, p, now):
            return
    hop_on(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, coords, hh, ctr, p, now)


@njit(cache=True, _nrt=False)
def hop_on(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, coords, hh, ctr, p, now):
    """:func:`hop` once the packet may leave its buffer."""
    node = pk[p, PK_NODE]
    dst = node_of(ip, pk[p, PK_DST])
    chunks = pk[p, PK_CHUNKS]
    if node != dst:
        if ip[I_ADAPTIVE]:
            link = _dynamic_choice(pk, pq, dq, ctr, lf, ip, coords, node, dst, chunks)
            if link >= 0:
                pk[p, PK_DIM] = -1  # re-entering the escape ring needs the bubble again
                _go(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, hh, ctr, p, link, ip[I_POOL_DYN] + link, now)
                return
        port = -1
        for d in range(3):
            off = _offset(coords[node, d], coords[dst, d], ip[I_X + d], ip[I_WRAPS])
            if off != 0:
                port = 2 * d if off > 0 else 2 * d + 1
                break
        link = node * 6 + port
        d = port >> 1
        bubble = ip[I_BUBBLE] if d != pk[p, PK_DIM] else 0
        pk[p, PK_DIM] = d
        if take(pq, dq, ctr, link, chunks, bubble):
            _go(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, hh, ctr, p, link, link, now)
        else:
            pk[p, PK_STATE] = W_LINK
            pk[p, PK_LINK] = link
            pk[p, PK_BUBBLE] = bubble
            pf[p, PF_ASKED] = now
            enqueue(pk, pq, dq, hh, ctr, link, p, 1 if bubble else 0)
        return
    rec = rec_pool(pk, ip, p)
    if take(pq, dq, ctr, rec, chunks, 0):
        _arrive(pk, pf, pq, dq, rk, ip, fp, hh, ctr, p, now)
    else:
        pk[p, PK_STATE] = W_REC
        pk[p, PK_BUBBLE] = 0
        enqueue(pk, pq, dq, hh, ctr, rec, p, 0)


# ------------------------------------------------------------------ buffer_order fifo
# Network._wait_front and Network._leave: a packet may ask for its next room only once it heads the buffer
# it holds room in (the injection FIFO first, then each link's buffer) and the packet before it has left.


@njit(cache=True, inline="always", _nrt=False)
def order_append(pk, pq, pool, p):
    _append(pk, pq, pool, p, PQ_OHEAD, PK_ONEXT)


@njit(cache=True, _nrt=False)
def leave(pk, pq, dq, hh, ctr, pool, at, now):
    """The oldest packet of ``pool`` has its next room and leaves at ``at``; wake the next if it waits."""
    nxt = pk[pq[pool, PQ_OHEAD], PK_ONEXT]
    pq[pool, PQ_OHEAD] = nxt
    dq[pool, dq.shape[1] - 1, 0] = _f2i(at)
    if nxt >= 0 and pk[nxt, PK_STATE] == W_FRONT:
        push(hh, ctr, now, NORMAL, nxt << 3 | EV_FRONT)


@njit(cache=True, _nrt=False)
def _front_time(pk, dq, hh, ctr, p, now):
    """At the head of its buffer: go on now, or (False) wait for the departure of the packet before it."""
    wait = _i2f(dq[pk[p, PK_HELD], dq.shape[1] - 1, 0]) - now
    if wait > 0:
        pk[p, PK_STATE] = W_FRONT_TIME
        push(hh, ctr, now + wait, NORMAL, p << 3 | EV_FRONT)
        return False
    pk[p, PK_STATE] = W_NONE
    return True


@njit(cache=True, _nrt=False)
def front_ready(pk, pq, dq, hh, ctr, p, now):
    if pq[pk[p, PK_HELD], PQ_OHEAD] != p:
        pk[p, PK_STATE] = W_FRONT
        return False
    return _front_time(pk, dq, hh, ctr, p, now)


@njit(cache=True, _nrt=False)
def front_event(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, coords, hh, ctr, p, now):
    """EV_FRONT: the packet before it left (check when), or that departure time has come (go on)."""
    if pk[p, PK_STATE] == W_FRONT and not _front_time(pk, dq, hh, ctr, p, now):
        return
    pk[p, PK_STATE] = W_NONE
    hop_on(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, coords, hh, ctr, p, now)


@njit(cache=True, _nrt=False)
def resume(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, hh, ctr, p, now):
    """A waiting packet was granted its room (already taken from the pool)."""
    state = pk[p, PK_STATE]
    pk[p, PK_STATE] = W_NONE
    if state == W_LINK:
        link = pk[p, PK_LINK]
        lf[link, 2] += now - pf[p, PF_ASKED]
        _go(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, hh, ctr, p, link, link, now)
    else:
        _arrive(pk, pf, pq, dq, rk, ip, fp, hh, ctr, p, now)


@njit(cache=True, _nrt=False)
def network_event(kind, a, pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, coords, hh, ctr, now):
    """Handle every event kind except :data:`EV_CPU`."""
    if kind == EV_HOP:
        hop(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, coords, hh, ctr, a, now)
    elif kind == EV_RESUME:
        resume(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, hh, ctr, a, now)
    elif kind == EV_TAIL:
        deliver(pk, pq, rk, ip, hh, ctr, a, now)
    elif kind == EV_FRONT:
        front_event(pk, pf, pq, dq, rk, lf, lb, ip, fp, nbr, coords, hh, ctr, a, now)
    else:
        give(pk, pq, rk, ip, hh, ctr, a >> 5, (a & 31), now)


# ================================================================== HPCC stream (hpcc.py, bit for bit)

_POLY = np.uint64(7)
_PERIOD = 1317624576693539401


@njit(cache=True, inline="always", _nrt=False)
def next_ran(x):
    return (x << np.uint64(1)) ^ ((x >> np.uint64(63)) * np.uint64(7))


@njit(cache=True)
def starts(n):
    """:func:`gupsim.hpcc.starts` (HPCC_starts), for ``0 <= n``."""
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


@njit(cache=True, _nrt=False)
def start_cpus(hh, ctr, nranks):
    """Every rank's process starts at t = 0, in rank order (SimPy's Initialize events)."""
    for r in range(nranks):
        push(hh, ctr, 0.0, URGENT, r << 3 | EV_CPU)
