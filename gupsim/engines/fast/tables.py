"""The fast engine's state as arrays: the columns of its tables, its counters and parameters, and the
low-level helpers every kernel module uses.

Instead of SimPy processes, a packet is a row of an integer array (``PK_*``
columns) plus a float row (``PF_*``), and every timeout or wake-up is an
entry of one event queue in the canonical order (time, phase, entity, the entity's
sequence number: :mod:`gupsim.engines.fast.events`), so a run is deterministic.

The tables the kernels read on every event are laid out on cache lines (:func:`line_aligned`): a packet row
is one 64-byte line, a pool row or a rank's network row 32 bytes (docs/performance-log.md).  The
helpers here are bit casts between a time and the int64 bits the queue orders (:func:`f2i`, :func:`i2f`), a
prefetch of one row (:func:`prefetch_row`), growing a table between batches (:func:`grow_on_lines`), and the node of
a rank (:func:`node_of`).  Nothing here changes a result; the model's steps are in
:mod:`gupsim.engines.fast.events`, :mod:`gupsim.engines.fast.credits` and :mod:`gupsim.engines.fast.core`.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


# ------------------------------------------------------------------ event kinds (a payload's low bits: gupsim.engines.fast.events.event)
EV_CPU = 0      # a = rank: the CPU resumes
EV_HOP = 1      # a = packet: its head reached the next router (or it was just launched)
EV_RESUME = 2   # a = packet: it was granted the room it waited for
EV_TAIL = 3     # a = packet: its tail reached the destination
EV_GIVE = 4     # a = pool and chunks (gupsim.engines.fast.events.give_event): credits return to a pool
# 5 and 6 are the baseline kernel's own kinds; 9..15 are free (events.KIND_BITS)
EV_FRONT = 7    # a = packet: buffer_order fifo, it may head its buffer now (its state says which wait ended)
# a = rank: one of the events a waiting CPU's any_of waits on fired (credits.wake); the first to pop resumes it
EV_WAKE = 8

# ------------------------------------------------------------------ packet table columns
PK_SRC, PK_DST, PK_CHUNKS, PK_WIRE, PK_PAYLOAD, PK_MSG, PK_N, PK_NODE = 0, 1, 2, 3, 4, 5, 6, 7
PK_DIM, PK_HELD, PK_STATE, PK_NEXT, PK_LINK, PK_BUBBLE = 8, 9, 10, 11, 12, 13
# buffer_order fifo: the next packet in the order of the buffer this one holds room in
PK_ONEXT = 14
# BG/P's DMA engine (gupsim.engines.fast.dma): where the packet is on its way through the DMA (DMA_*)
PK_DMA = 15
#: 16 int32 columns: a row is one 64-byte cache line, and the table starts on a line
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
PQ_OHEAD, PQ_OTAIL = 6, 7  # the tail column must follow the head's (list_append)
PQ_COLS = 8
# packet states while waiting in a pool's queue
W_NONE, W_LINK, W_REC, W_INJ = 0, 1, 2, 3
# buffer_order fifo: waits to head its buffer (a departure wakes it), or for the departure time itself
W_FRONT, W_FRONT_TIME = 4, 5
# BG/P's DMA: an intra-node packet waits for room in its receiver's reception FIFO (gupsim.engines.fast.dma)
W_DMA_REC = 6

# ------------------------------------------------------------------ rank table columns (network side)
RK_IN_HEAD, RK_IN_TAIL, RK_IN_COUNT, RK_WAIT, RK_GRANTED = 0, 1, 2, 3, 4
# 1 while a CPU waits on an any_of that has not fired yet (an EV_WAKE popping after it fired is stale)
RK_ARMED = 5
RK_NET_COLS = 8  # 6 used; 32-byte rows, on cache lines (line_aligned)
# RK_WAIT bits: what wakes a CPU that waits without a pending event
# WAKE_ROOM << g: room in the injection FIFO of group g (see fifo_group)
WAKE_INBOX, WAKE_GRANT, WAKE_ROOM = 1, 4, 8

# ------------------------------------------------------------------ counters
C_HEAP_N, C_FREE_HEAD, C_NFREE, C_INJECTED, C_WIRE, C_DELIVERED, C_EVENTS = 0, 2, 3, 4, 5, 6, 7
C_APPLIED, C_DONE, C_ERROR, C_HOPS = 8, 9, 10, 11
# the latest (time bits, key) popped so far: a deferred return below it would already have been popped
C_SEEN_T, C_SEEN_K = 13, 14
# statistics of the deferred credit returns: applied beside their pool, pushed into the heap late
# (someone started waiting), pushed at once because the pool's slots were full
C_LAZY, C_RESCHEDULED, C_DEFER_FULL = 16, 17, 18
# the event queue's calendar (see "event queue"): the current bucket, 1 / bucket width (float bits), entries
# outside the heap, of them those in the calendar's slots (the rest overflow), the overflow's smallest bucket,
# the far table's free list and high-water mark; statistics: buckets moved into the heap
C_CUR, C_INV_W, C_FAR_N, C_CAL_N, C_OV_MIN, C_FAR_FREE, C_FAR_TOP, C_MOVED = 21, 22, 23, 24, 25, 26, 27, 28
# a batch of events ends once C_EVENTS reaches this (gupsim.engines.fast.driver: the points where a run can be saved)
C_PAUSE_AT = 29
# statistics: overflow entries redistributed when the calendar reached the overflow's first bucket
C_REFILED = 30
# the updates applied at which the next of the applied-times marks falls (int64 max past the last), and its index
C_NEXT_MARK, C_MARK_INDEX = 31, 32
# the stopping rule (--precision): the time after which no event is processed (float bits; int64 max while the
# rule has not held), and the marks crossed when the driver last evaluated it (gupsim.engines.fast.driver)
C_STOP_T, C_CHECKED = 33, 34
# the entity whose event runs (gupsim.engines.order): what it schedules is keyed by it
C_ACTIVE = 35
# BG/P's DMA (gupsim.engines.fast.dma): sends that found their first link held by other traffic (the seconds
# they backed off are kept per link, TQ_THROTTLED_S); index 41 is free
C_THROTTLE_WAITS = 40
# BG/P's DMA: the throttle's back-off polls (events that look at a held first link again)
C_THROTTLE_POLLS = 42
# BG/P's DMA: held-back packets that joined a queue behind another (no poll of their own until they head it)
C_THROTTLE_QUEUED = 43
# A partitioned run (gupsim.engines.fast.partitioned): the part whose events this loop runs (0 in a serial run),
# the events it scheduled for another part's entities (kept in the network's ``outbox``), the outbox rows it
# may fill before its batch ends, and its updates applied, logged in its ``applied_times`` (I_LOG_APPLIES)
C_PART, C_OUT_N, C_OUT_ROOM, C_LOG_N = 36, 37, 38, 39
N_COUNTERS = 50

# ------------------------------------------------------------------ integer parameters
I_PPN, I_X, I_Y, I_Z, I_WRAPS, I_BUBBLE, I_ADAPTIVE, I_NLINKS, I_NRANKS, I_MAXCH = range(10)
I_POOL_DYN, I_POOL_INJ, I_POOL_REC, I_TOTAL, I_MARK0, I_MARK1, I_FIFO_GROUPS, I_ORDERED = range(10, 18)
# how many applied-times marks (gupsim.model.output_analysis.applied_marks)
I_NMARKS = 18
# the half-ring tie rule's code (gupsim.topology.grid.HALF_RING_TIES)
I_TIES = 19
# the stopping rule's mark counts: every I_CHECK_EVERY marks from I_FIRST_CHECK on (0: no rule; gupsim.model.
# output_analysis.check_points)
I_CHECK_EVERY, I_FIRST_CHECK = 20, 21
# 1 if the machine has a DMA engine (gupsim.engines.fast.dma); the first row of its per-node DMA times in the
# link table (LF_*)
I_DMA, I_DMA_ROW = 24, 25
# BG/P's DMA: the first row of the throttle's queues in the link table, one per link (TQ_*)
I_THROTTLE_ROW = 26
# 1 in a part of a partitioned run: the kernel logs each update's apply time in ``applied_times`` (C_LOG_N) instead
# of keeping the marks, which only the whole run's count can place (gupsim.engines.fast.partitioned)
I_LOG_APPLIES = 27
# the router (gupsim.engines.fast.core.ROUTER_KERNELS): its code (which adaptive choice; ROUTER_*), and a link's
# escape VCs and dynamic VCs, each a pool of its own: escape VC v of link l is pool l * I_ESCAPE_VCS + v, dynamic
# VC v is I_POOL_DYN + l * I_DYNAMIC_VCS + v (bluegene-l: one of each, so a link's escape pool is the link's number)
I_ROUTER, I_ESCAPE_VCS, I_DYNAMIC_VCS = 28, 29, 30
# the slot an escape VC counts a packet's room in (network.bubble_accounting: packets), 0 for chunks
# (gupsim.engines.router_rules.held_room; gupsim.engines.fast.credits.pool_room)
I_ESCAPE_SLOT = 31
N_IPARAMS = 32
F_RATE, F_CHUNK_S, F_ROUTER_S, F_CYCLE_S = range(4)
# seconds from a packet's tail leaving a link's VC to its tokens being back at the sender (0 but for bgl-vc)
F_TOKEN_S = 4
# BG/P's DMA: engine rate (bytes/s), the receive path's overhead per torus packet and the throttle's back-off (s)
F_DMA_RATE, F_RX_OVERHEAD_S, F_BACKOFF_S = 8, 9, 10
N_FPARAMS = 12
# link table ``lf`` columns: a link's free-at time, busy and blocked seconds, and (DMA) the end of the last
# reservation its node's injection made on it; below the links, one row per node (DMA): its injection and
# reception engines' free-at times and busy seconds
LF_FREE, LF_BUSY, LF_BLOCKED, LF_LOCAL_END = 0, 1, 2, 3
LF_COLS = 4
LF_TX_FREE, LF_RX_FREE, LF_TX_BUSY, LF_RX_BUSY = 0, 1, 2, 3
# (DMA) below the nodes' rows, one row per link: the throttle's queue of the node's packets held back at it, its
# head and tail packets (as floats; -1 for none), linked through PK_NEXT, and the seconds its packets were held
# back.  Kept per link, not in one counter, so that a partitioned run adds each link's in the serial run's order
# (a link's events are its near end's part's); the run's total is their exact sum (links.throttled_total_s).
TQ_HEAD, TQ_TAIL, TQ_THROTTLED_S = 0, 1, 2
#: Free packet rows the kernels' outer loop keeps (:func:`gupsim.engines.fast.events.needs_room`).
PACKET_MARGIN = 1 << 12
#: Free rows a part's apply log keeps (gupsim.engines.fast.routed.log_apply): more than one event applies.
LOG_MARGIN = 1 << 13


# ================================================================== bit casts, prefetches, tables on cache lines


@intrinsic
def f2i(typingctx, x):
    """The bits of a float64 as an int64 (a bit cast, not a conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


@intrinsic
def i2f(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


@intrinsic
def prefetch_row(typingctx, arr, i):
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
    """A copy of ``a`` with ``n`` rows, in a :func:`line_aligned` array (rows beyond ``len(a)`` uninitialised)."""
    out = line_aligned((n,) + a.shape[1:], a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True, inline="always", _nrt=False)
def node_of(ip, rank):
    """The node of ``rank``: a division is dear on every hop, so none with one process per node."""
    return rank // ip[I_PPN] if ip[I_PPN] > 1 else rank
