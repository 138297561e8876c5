"""The fast engine's credit pools: link buffers (escape VCs), dynamic channels, injection and reception FIFOs.

The pools of :class:`gupsim.engines.reference.torus_network.Credits` (seed 000 §5.1; seed 002 §3 for the FIFOs per dimension;
docs/model.md §3), compiled: each pool is one row of the pool table ``pq`` (its free chunks and the heads and
tails of its two waiter queues, continuing packets first, entering packets leaving a bubble of
``max_chunks_per_packet``), and :func:`take`, :func:`enqueue` and :func:`give` are ``Credits.take``, a wait
in its queue and ``Credits.give``.  An escape VC counts a packet's room in full-packet slots with
``network.bubble_accounting: packets`` (:func:`pool_room`, as the reference's ``Credits.slot``).  A link has as many escape and dynamic pools as its router declares
(bluegene-l one of each, bgl-vc its ``router.escape_vcs`` and ``router.dynamic_vcs``): the table's first rows
are every link's escape VCs, then every link's dynamic VCs, then the FIFOs (:func:`link_of_pool`).  With ``fifos: per-dimension`` a rank has one injection and one reception
FIFO per dimension plus a node-local one (:func:`fifo_group`, :func:`rec_pool`), as
:class:`gupsim.engines.reference.torus_network.Network`.

**Deferred credit returns.**  A credit return is an event of its own at a
later time, and those events were 37-46% of all events on the whole machine (docs/performance-log.md).
Almost always nobody waits on the pool when its room comes back, and then the
return's only effect is ``free += chunks``, which commutes with everything
except a read of that pool.  So :func:`give_later` keeps the return *beside
the pool* (:data:`DEFER_SLOTS` slots per pool, in ``dq``) with the key the
heap would have given it, and takes the same sequence number from the
entity's counter, so every later event keeps its key (``dq`` rows: time bits, key, chunks).  Whoever reads the pool (a
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
apply the returns due at the end (:func:`settle_all`).  The order of events, and so every record (``events``
included), is the same as with every return in the heap
(``tests/engines/fast/test_fast_credit.py`` compares the two; ``DEFER_SLOTS = 0`` is the
latter).
"""

from __future__ import annotations

from numba import njit

from gupsim.engines import router_rules
from gupsim.engines.fast.events import NORMAL, event, give_event, key_for, push, push_keyed
from gupsim.engines.fast.tables import C_DEFER_FULL, C_DONE, C_ERROR, C_EVENTS, C_HEAP_N, C_LAZY, C_RESCHEDULED, C_SEEN_K, C_SEEN_T, EV_RESUME, EV_WAKE, I_DYNAMIC_VCS, I_ESCAPE_SLOT, I_ESCAPE_VCS, I_FIFO_GROUPS, I_MAXCH, I_NRANKS, I_POOL_DYN, I_POOL_INJ, I_POOL_REC, I_X, PK_BUBBLE, PK_CHUNKS, PK_DST, PK_LINK, PK_NEXT, PK_SRC, PK_STATE, PQ_DEFERRED, PQ_FREE, RK_GRANTED, RK_WAIT, W_INJ, WAKE_GRANT, WAKE_ROOM, f2i, i2f, node_of


# The allocator's rules (router_rules): who may take room now, and whether the head waiter's room has come.
admits = njit(cache=True, inline="always", _nrt=False)(router_rules.admits)
grants = njit(cache=True, inline="always", _nrt=False)(router_rules.grants)
held_room = njit(cache=True, inline="always", _nrt=False)(router_rules.held_room)

#: Deferred returns kept per pool (``dq[pool, :, :]``, its second axis); a return that finds them full goes
#: into the heap.  0 defers nothing: every return is a heap event (tests compare the two).  8 measured a
#: little faster than 4 (2-10% of returns found the slots full, against 10-17%) for 64 MB more address space
#: on the whole machine, most of it never touched (docs/performance-log.md).
DEFER_SLOTS = 8


# ================================================================== credit pools


@njit(cache=True, inline="always", _nrt=False)
def pool_room(ip, pool, chunks):
    """The room a packet of ``chunks`` holds in ``pool``: a full packet's on an escape VC counted in slots
    (``I_ESCAPE_SLOT``, the reference's ``Credits.slot``), else its chunks.  Idempotent, so a return that
    passes through :func:`file_return` and then :func:`give` is counted once."""
    if pool < ip[I_POOL_DYN]:
        return held_room(chunks, ip[I_ESCAPE_SLOT])
    return chunks


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
            pq[pool, PQ_FREE] += dq[pool, i, 2]
            ctr[C_EVENTS] += 1
            ctr[C_LAZY] += 1
            n -= 1  # the slots are unordered: move the last one into this one
            dq[pool, i, 0], dq[pool, i, 1], dq[pool, i, 2] = dq[pool, n, 0], dq[pool, n, 1], dq[pool, n, 2]
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
        push_keyed(hh, ctr, dq[pool, i, 0], dq[pool, i, 1], give_event(pool, dq[pool, i, 2]))
    ctr[C_RESCHEDULED] += n
    pq[pool, PQ_DEFERRED] = 0


@njit(cache=True, _nrt=False)
def room(pq, dq, ctr, pool):
    """The pool's free chunks now (its due returns applied)."""
    settle(pq, dq, ctr, pool)
    return pq[pool, PQ_FREE]


@njit(cache=True, _nrt=False)
def take(pq, dq, ctr, pool, chunks, bubble):
    """:meth:`Credits.take`: room now, without overtaking a waiter (:func:`gupsim.engines.router_rules.admits`)."""
    settle(pq, dq, ctr, pool)
    if not admits(pq[pool, PQ_FREE], chunks, bubble, pq[pool, 0] >= 0, pq[pool, 2] >= 0):
        return False
    pq[pool, PQ_FREE] -= chunks
    return True


@njit(cache=True, _nrt=False)
def enqueue(pk, pq, dq, hh, ctr, pool, p, cls):
    """Append packet ``p`` to the pool's continuing (0) or entering (1) queue."""
    reschedule(pq, dq, hh, ctr, pool)
    list_append(pk, pq, pool, p, 2 * cls, PK_NEXT)


@njit(cache=True, inline="always", _nrt=False)
def list_append(pk, pq, pool, p, head, link):
    """Append ``p`` to the pool's list whose head and tail are columns ``head`` and ``head + 1`` of its row,
    linked through packet column ``link``."""
    pk[p, link] = -1
    if pq[pool, head] < 0:
        pq[pool, head] = p
    else:
        pk[pq[pool, head + 1], link] = p
    pq[pool, head + 1] = p


@njit(cache=True, _nrt=False)
def waiters(pk, pq, pool):
    """:attr:`Credits.waiting`: the packets in the pool's two queues (a link's VC: a few at most)."""
    n = 0
    for head in (0, 2):
        p = pq[pool, head]
        while p >= 0:
            n += 1
            p = pk[p, PK_NEXT]
    return n


@njit(cache=True, inline="always", _nrt=False)
def link_of_pool(ip, pool):
    """The link whose VC ``pool`` is (a pool below ``I_POOL_INJ``): escape VC v of link l is pool
    l x escape VCs + v, dynamic VC v is ``I_POOL_DYN`` + l x dynamic VCs + v (:mod:`gupsim.engines.fast.tables`).
    With one VC of each (bluegene-l) no division: this runs at every credit return."""
    dyn = ip[I_POOL_DYN]
    if pool < dyn:
        per_link = ip[I_ESCAPE_VCS]
        return pool if per_link == 1 else pool // per_link
    per_link = ip[I_DYNAMIC_VCS]
    return pool - dyn if per_link == 1 else (pool - dyn) // per_link


@njit(cache=True, _nrt=False)
def watch_room(pq, dq, rk, hh, ctr, ip, r, g):
    """Rank ``r``'s CPU waits for room in its injection FIFO of group ``g`` (:data:`WAKE_ROOM` << g);
    that FIFO's returns must wake it."""
    rk[r, RK_WAIT] |= WAKE_ROOM << g
    reschedule(pq, dq, hh, ctr, ip[I_POOL_INJ] + r * ip[I_FIFO_GROUPS] + g)


@njit(cache=True, _nrt=False)
def wake(rk, hh, ctr, rank, now, bit):
    """The event ``bit`` of ``rank``'s any_of fires (once): an :data:`EV_WAKE`, keyed as whoever fires it.

    Each event the any_of waits on is an event of its own in the order, as in SimPy: the first of them to
    pop resumes the CPU (:func:`gupsim.engines.fast.core.woken`), the others then do nothing."""
    rk[rank, RK_WAIT] &= ~bit
    push(hh, ctr, now, NORMAL, event(EV_WAKE, rank))


@njit(cache=True, _nrt=False)
def give(pk, pq, rk, ip, hh, ctr, pool, chunks, now):
    """:meth:`Credits.give`: return room, grant waiters in order (continuing, then entering; each while
    :func:`gupsim.engines.router_rules.grants` lets it in), fire watchers.

    Returns kept beside the pool need not be settled first: with a waiter or a watcher there are none,
    and without, this only adds room, as they do."""
    pq[pool, PQ_FREE] += pool_room(ip, pool, chunks)
    for cls in range(2):
        h = 2 * cls
        while pq[pool, h] >= 0:
            p = pq[pool, h]
            need = pool_room(ip, pool, pk[p, PK_CHUNKS])
            if not grants(pq[pool, PQ_FREE], need, pk[p, PK_BUBBLE]):
                return
            pq[pool, h] = pk[p, PK_NEXT]
            pq[pool, PQ_FREE] -= need
            if pk[p, PK_STATE] == W_INJ:
                src = pk[p, PK_SRC]
                rk[src, RK_GRANTED] = 1
                if rk[src, RK_WAIT] & WAKE_GRANT:
                    wake(rk, hh, ctr, src, now, WAKE_GRANT)
            else:
                push(hh, ctr, now, NORMAL, event(EV_RESUME, p))
    r, bit = _room_watch(ip, pool)
    if r >= 0 and rk[r, RK_WAIT] & bit and pq[pool, PQ_FREE] >= ip[I_MAXCH]:
        wake(rk, hh, ctr, r, now, bit)


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
    # the key push would have given it, the sequence number taken as push takes it
    file_return(pk, pq, dq, rk, ip, hh, ctr, pool, chunks, f2i(now + delay), key_for(ctr, hh[3], NORMAL))


@njit(cache=True, _nrt=False)
def file_return(pk, pq, dq, rk, ip, hh, ctr, pool, chunks, tbits, key):
    """A credit return of ``chunks`` to ``pool`` at time bits ``tbits``, keyed ``key``: an event in the queue
    ``hh`` if someone waits on the pool, else kept beside it.  Run by the pool's owner (in a partitioned run, by
    its part when the return comes from another: gupsim.engines.fast.partitioned)."""
    chunks = pool_room(ip, pool, chunks)  # settle adds the kept returns' room as it is
    payload = give_event(pool, chunks)
    if _watched(pq, rk, ip, pool):
        push_keyed(hh, ctr, tbits, key, payload)
        return
    n = pq[pool, PQ_DEFERRED]
    if n == dq.shape[1] - 1:  # the last slot is the pool's front time (PQ_OHEAD)
        settle(pq, dq, ctr, pool)
        n = pq[pool, PQ_DEFERRED]
        if n == dq.shape[1] - 1:  # still full: this one goes into the heap, which is exact too
            ctr[C_DEFER_FULL] += 1
            push_keyed(hh, ctr, tbits, key, payload)
            return
    dq[pool, n, 0] = tbits
    dq[pool, n, 1] = key
    dq[pool, n, 2] = chunks
    pq[pool, PQ_DEFERRED] = n + 1


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
        now = i2f(ctr[C_SEEN_T])
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
