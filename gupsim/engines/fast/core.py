"""The compiled network shared by the fast kernels: packet transit over the torus.

This is :mod:`gupsim.engines.reference.torus_network` (seed 000 §5.1; docs/model.md §3) rewritten as
Numba-compiled functions over preallocated NumPy arrays, so that a whole
64x32x32 Blue Gene/L fits in one process and runs at millions of events per
second.  The model is the same, step for step:

* serialization at ``link_bytes_per_s`` with a per-link ``free_at`` time;
  cut-through: the head reaches the next router one chunk time plus the router
  delay after it starts; the tail arrives one serialization plus one router
  delay after the start on the last link;
* credit pools counted in chunks (link input buffers, the dynamic channels of
  adaptive routing, injection and reception FIFOs) with the two waiter classes
  of :class:`gupsim.engines.reference.torus_network.Credits` (continuing packets first, entering
  packets must leave a bubble of ``max_chunks_per_packet``);
* the room a packet held upstream returns ``start + serial`` after it starts
  on the next link; reception room returns when the receiving CPU reads it;
* with ``fifos: per-dimension`` a rank has one injection and one reception
  FIFO per dimension plus a node-local one (:func:`gupsim.engines.fast.credits.fifo_group`,
  :func:`gupsim.engines.fast.credits.rec_pool`), as :class:`gupsim.engines.reference.torus_network.Network`.

The pieces it stands on have modules of their own: the tables' layout (:mod:`gupsim.engines.fast.tables`), the event
queue in the canonical event order (:mod:`gupsim.engines.fast.events`), the credit pools and their deferred returns
(:mod:`gupsim.engines.fast.credits`), and the HPCC stream (:mod:`gupsim.engines.fast.stream`).  Here: a packet's rows are
taken and freed, it is launched, its head reaches each router (:func:`hop`), takes the link or waits for room
(adaptive routing's dynamic channels first), keeps its buffer's order (``buffer_order: fifo``), and its tail
is delivered to the receiver's inbox; :func:`network_event` handles every event kind but a CPU's, and
:func:`prefetch_next` asks for the rows the next events will read.

SimPy also schedules bookkeeping events (process ends, condition events) that the fast engine does not.
Each takes a sequence number of the entity that schedules it, which moves none of that entity's other
events in the order; the records are equal to SimPy's bit for bit (``tests/engines/fast/test_fast.py``),
and that test is where a divergence would show.
"""

from __future__ import annotations

from numba import njit

from gupsim.base.errors import UnknownNameError

from gupsim.engines.fast.credits import enqueue, give, give_later, inj_pool, link_of_pool, list_append, pool_room, rec_pool, room, take, waiters, wake
from gupsim.engines.order import router_entity
from gupsim.engines.fast.events import NORMAL, URGENT, event, event_arg, event_kind, give_chunks, give_event, give_pool, key_for, push
from gupsim.engines.fast import dma
from gupsim.engines.fast.router import RouterKernel, dimension_order_port, escape_bubble, fewer_waiters, less_busy, minimal_ports, more_tokens, output_port, ring_offset, trace, transit_of
from gupsim.engines.router_rules import DECISION_DYNAMIC, DECISION_EJECT, DECISION_EJECT_WAIT, DECISION_ESCAPE, DECISION_GRANT, DECISION_WAIT
from gupsim.engines.fast.tables import C_ACTIVE, EV_WAKE, RK_ARMED, I_FIFO_GROUPS, I_NRANKS, I_POOL_REC, C_CHECKED, C_DELIVERED, C_MARK_INDEX, C_NEXT_MARK, C_PAUSE_AT, I_CHECK_EVERY, I_FIRST_CHECK, I_NMARKS, I_TOTAL, C_FREE_HEAD, C_HEAP_N, C_HOPS, C_INJECTED, C_NFREE, C_WIRE, EV_CPU, EV_FRONT, EV_GIVE, EV_HOP, EV_RESUME, EV_TAIL, F_CHUNK_S, F_CYCLE_S, F_RATE, F_ROUTER_S, F_TOKEN_S, I_ADAPTIVE, I_DYNAMIC_VCS, I_ESCAPE_VCS, I_ROUTER, I_ORDERED, I_POOL_DYN, I_TIES, I_POOL_INJ, I_WRAPS, I_X, PF_ASKED, PF_START, PK_BUBBLE, PK_CHUNKS, PK_DIM, PK_DST, PK_HELD, PK_LINK, PK_NEXT, PK_NODE, PK_ONEXT, PK_SRC, PK_STATE, PK_WIRE, PQ_FREE, PQ_OHEAD, RK_IN_COUNT, RK_IN_HEAD, RK_IN_TAIL, RK_WAIT, W_FRONT, W_FRONT_TIME, W_LINK, W_NONE, W_REC, WAKE_INBOX, f2i, i2f, node_of, prefetch_row, I_DMA, LF_BLOCKED, LF_BUSY, LF_FREE, PK_DMA, W_DMA_REC, C_OUT_N, C_PART


#: C_NEXT_MARK past the last mark: no count of updates reaches it.
NO_MARK = (1 << 63) - 1


@njit(cache=True, _nrt=False)
def mark_at(ip, i):
    """The updates applied at mark ``i`` (from 0): :func:`gupsim.model.output_analysis.applied_marks`, in
    int64 (total = qM + r, so ceil(k x total / M) = kq + ceil(kr / M), and kr < M^2 cannot overflow)."""
    m, total = ip[I_NMARKS], ip[I_TOTAL]
    k = i + 1
    return k * (total // m) + (k * (total % m) + m - 1) // m


@njit(cache=True, _nrt=False)
def cross_marks(ip, ctr, at, n, t):
    """``n`` updates applied at ``t`` reached the next mark: record ``t`` at every mark up to ``n`` (a message
    may apply many updates at once) and set the next one.  Not inlined: the kernels' ``_apply`` calls it once
    per mark, after one compare against C_NEXT_MARK.  Where a stopping rule's mark count was crossed
    (``I_CHECK_EVERY``), the batch ends after this event: the driver evaluates the rule."""
    i = ctr[C_MARK_INDEX]
    m = ip[I_NMARKS]
    while i < m and mark_at(ip, i) <= n:
        at[i] = t
        i += 1
    ctr[C_MARK_INDEX] = i
    ctr[C_NEXT_MARK] = mark_at(ip, i) if i < m else NO_MARK
    every = ip[I_CHECK_EVERY]
    if every > 0 and i >= ip[I_FIRST_CHECK] and i // every > ctr[C_CHECKED] // every:
        ctr[C_PAUSE_AT] = 0


@njit(cache=True, inline="always", _nrt=False)
def _prefetch_first(payload, pk, pf, pq, rk):
    """Prefetch the first row an event reads: its packet's, its pool's (a credit return) or its rank's."""
    kind, a = event_kind(payload), event_arg(payload)
    if kind == EV_CPU or kind == EV_WAKE:
        prefetch_row(rk, a)
    elif kind == EV_GIVE:
        prefetch_row(pq, give_pool(a))
    elif kind <= EV_TAIL or kind == EV_FRONT:  # a packet's event (a kernel's own kinds are left alone)
        prefetch_row(pk, a)
        prefetch_row(pf, a)


@njit(cache=True, inline="always", _nrt=False)
def next_cpu_rank(q, ctr):
    """The rank the next event resumes if it is a CPU's event, else -1 (for a kernel's own prefetches)."""
    if ctr[C_HEAP_N] == 0:
        return -1
    payload = q[0][0, 2]
    return event_arg(payload) if event_kind(payload) == EV_CPU or event_kind(payload) == EV_WAKE else -1


@njit(cache=True, inline="always", _nrt=False)
def prefetch_next(net):
    """Start loading what the next events will read while the current one runs: at 16,384 nodes and more
    those rows are rarely in the cache.  A pipeline two events deep: the event after next (the least of the
    root's children, nearly always) gets its first row; the next one, whose first row was asked for one event
    ago, gets the rows that row leads to when it is a head about to go on, reaching a router or woken at the
    front of its buffer (its node's links, their buffers, byte counts and far ends, the coordinates of its
    node and destination, the pool its credit returns to, and the packet behind it in that buffer)."""
    pk, pf, pq, dq, rk, ip = net.packets, net.packet_times, net.pools, net.deferred, net.ranks, net.int_params
    lf, lb, nbr, coords, ctr = net.link_times, net.link_bytes, net.neighbors, net.coords, net.counters
    n = ctr[C_HEAP_N]
    if n == 0:
        return
    hh = net.queue[0]
    payload = hh[0, 2]
    _prefetch_first(payload, pk, pf, pq, rk)
    if event_kind(payload) == EV_HOP or event_kind(payload) == EV_FRONT:  # a head about to go on (hop_on)
        p = event_arg(payload)
        link, held = pk[p, PK_NODE] * 6, pk[p, PK_HELD]
        for k in range(6):
            prefetch_row(lf, link + k)
        per_link = ip[I_ESCAPE_VCS]  # the links' first escape VCs (bluegene-l: two 32-byte rows to a cache line)
        for k in range(0, 6, 2 if per_link == 1 else 1):
            prefetch_row(pq, (link + k) * per_link)
        prefetch_row(pq, held)
        prefetch_row(dq, held)
        # what hop_on and _go read next: the route's coordinates, and the chosen link's byte count and far end
        prefetch_row(coords, pk[p, PK_NODE])
        prefetch_row(coords, node_of(ip, pk[p, PK_DST]))
        prefetch_row(lb, link)
        prefetch_row(nbr, link)
        if ip[I_ORDERED]:
            nxt = pk[p, PK_ONEXT]  # leave() reads the state of the packet behind it in its buffer
            if 0 <= nxt < pk.shape[0]:  # (stale in a packet just launched: a hint, harmless)
                prefetch_row(pk, nxt)
    if n > 1:
        best = 1
        for k in range(2, min(5, n)):
            if hh[k, 0] < hh[best, 0] or (hh[k, 0] == hh[best, 0] and hh[k, 1] < hh[best, 1]):
                best = k
        _prefetch_first(hh[best, 2], pk, pf, pq, rk)


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
    push(hh, ctr, now + cycles * fp[F_CYCLE_S], NORMAL, event(EV_CPU, r))


# ================================================================== the router kernels
# The routers (gupsim.engines.fast.router declares the interface and holds the pure decisions); their decisions
# that take or read a pool's room live here, beside the credit pools, so that the router module stays below
# gupsim.engines.fast.credits in the import graph.  One compiled transit serves both (router.py says why).

#: ``I_ROUTER``: which router's adaptive choice the transit makes.
ROUTER_BLUEGENE_L, ROUTER_BGL_VC = 0, 1


@njit(cache=True, _nrt=False)
def least_busy_dynamic(t, node, dst, chunks):
    """bluegene-l's adaptive choice: take room on the dynamic channel of the minimal link that frees soonest
    among those with room now, and return that link, or -1 (the packet goes to the escape channel)."""
    pq, ip, lf, coords = t.pools, t.int_params, t.link_times, t.coords
    best = -1
    base = ip[I_POOL_DYN]
    for d in range(3):
        length = ip[I_X + d]
        off = ring_offset(coords[node, d], coords[dst, d], length, ip[I_WRAPS], ip[I_TIES])
        first, second = minimal_ports(d, off, length, ip[I_WRAPS])
        for port in (first, second):
            if port < 0:
                continue
            link = node * 6 + port
            if room(pq, t.deferred, t.counters, base + link) >= chunks and \
                    less_busy(lf[link, LF_FREE], lf[best, LF_FREE], best >= 0):
                best = link
    if best >= 0:
        pq[base + best, PQ_FREE] -= chunks
    return best


@njit(cache=True, _nrt=False)
def most_tokens_dynamic(t, node, dst, chunks):
    """bgl-vc's adaptive choice (:meth:`gupsim.engines.reference.router.BglVcRouter.adaptive`): in the hint-bit
    direction of each dimension still to go, the dynamic VC with room now, nobody waiting and the most free tokens
    (ties keep the earlier port, then the earlier VC); its room taken.  Returns (link, pool), or (-1, -1)."""
    pk, pq, ip, coords = t.packets, t.pools, t.int_params, t.coords
    per_link, base = ip[I_DYNAMIC_VCS], ip[I_POOL_DYN]
    best, best_link, best_free = -1, -1, 0
    for d in range(3):
        off = ring_offset(coords[node, d], coords[dst, d], ip[I_X + d], ip[I_WRAPS], ip[I_TIES])
        if off == 0:
            continue
        link = node * 6 + output_port(d, off)
        for v in range(per_link):
            pool = base + link * per_link + v
            free = room(pq, t.deferred, t.counters, pool)
            if free >= chunks and waiters(pk, pq, pool) == 0 and more_tokens(free, best_free, best >= 0):
                best, best_link, best_free = pool, link, free
    if best >= 0:
        pq[best, PQ_FREE] -= chunks
    return best_link, best


@njit(cache=True, inline="always", _nrt=False)
def dynamic_if_adaptive(t, node, dst, chunks):
    """The adaptive choice of the router ``I_ROUTER`` names when the network routes adaptively: (link, pool) of
    the dynamic VC taken, or (-1, -1) (the packet goes to an escape VC)."""
    ip = t.int_params
    if not ip[I_ADAPTIVE]:
        return -1, -1
    if ip[I_ROUTER] == ROUTER_BGL_VC:
        return most_tokens_dynamic(t, node, dst, chunks)
    link = least_busy_dynamic(t, node, dst, chunks)
    return link, (ip[I_POOL_DYN] + link if link >= 0 else -1)


@njit(cache=True, _nrt=False)
def fewest_waiters_escape(t, link):
    """Which of ``link``'s escape VCs a packet asks for (:meth:`gupsim.engines.reference.router.BglVcRouter.
    escape_channel`): the one with fewest waiters, then most free tokens (ties keep the earlier VC)."""
    pk, pq = t.packets, t.pools
    per_link = t.int_params[I_ESCAPE_VCS]
    best, best_wait, best_free = link * per_link, 0, 0
    for v in range(per_link):
        pool = link * per_link + v
        free = room(pq, t.deferred, t.counters, pool)
        waiting = waiters(pk, pq, pool)
        if fewer_waiters(waiting, free, best_wait, best_free, v > 0):
            best, best_wait, best_free = pool, waiting, free
    return best


@njit(cache=True, inline="always", _nrt=False)
def escape_channel(t, link, bubble):
    """The escape VC (pool) a packet leaving by ``link`` asks for: the link's one (its number) unless it has
    several (:func:`fewest_waiters_escape`).  The bubble is the rule's on every escape VC alike."""
    if t.int_params[I_ESCAPE_VCS] == 1:
        return link
    return fewest_waiters_escape(t, link)


@njit(cache=True, inline="always", _nrt=False)
def admit(t, pool, chunks, bubble):
    """Allocation: take ``chunks`` of ``pool`` now unless that overtakes a waiter or breaks the bubble
    (:func:`gupsim.engines.router_rules.admits`); the waiters are granted in order by
    :func:`gupsim.engines.fast.credits.give`."""
    return take(t.pools, t.deferred, t.counters, pool, pool_room(t.int_params, pool, chunks), bubble)


def _bluegene_l_channels(net):
    """bluegene-l: one escape buffer and one dynamic channel per link, of ``link_buffer_chunks``, tokens back with
    the tail (the reference Network's ``escape_buffer`` and ``dynamic_channel``)."""
    return 1, 1, net.link_buffer_chunks, 0.0


def _bgl_vc_channels(net):
    """bgl-vc: ``router.escape_vcs`` escape VCs and (routing adaptively) ``router.dynamic_vcs`` dynamic VCs per
    link, each of ``router.vc_depth_chunks`` tokens, back ``router.token_return_ns`` after the tail (the reference
    ``BglVcRouter``'s pools and ``token_return_s``, computed alike)."""
    vc = net.router
    return (vc.escape_vcs, vc.dynamic_vcs if net.routing == "adaptive" else 0, vc.vc_depth_chunks,
            vc.token_return_ns * 1e-9)


#: Seed 000 §5.1's Blue Gene/L torus router, as gupsim first built it.
BLUEGENE_L = RouterKernel("bluegene-l", ROUTER_BLUEGENE_L, _bluegene_l_channels, dimension_order_port,
                          dynamic_if_adaptive, escape_bubble, escape_channel, admit, trace)
#: Blue Gene/L's torus router with its VCs and tokens (docs/research/bgl-router-facts.md rows 2-7, 12).
BGL_VC = RouterKernel("bgl-vc", ROUTER_BGL_VC, _bgl_vc_channels, dimension_order_port, dynamic_if_adaptive,
                      escape_bubble, escape_channel, admit, trace)

#: The router kernels by name.
ROUTER_KERNELS = {r.name: r for r in (BLUEGENE_L, BGL_VC)}


def router_kernel(name: str) -> RouterKernel:
    """The router kernel registered as ``name``; an unknown name is refused listing the registered ones."""
    if name not in ROUTER_KERNELS:
        raise UnknownNameError("router", name, list(ROUTER_KERNELS))
    return ROUTER_KERNELS[name]


# The names the transit calls: both routers' (they differ in data and in dynamic_if_adaptive's branch).
route, adaptive, vc, escape_vc = BLUEGENE_L.route, BLUEGENE_L.adaptive, BLUEGENE_L.vc, BLUEGENE_L.escape_channel


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
    pk[p, PK_DMA] = dma.DMA_NEW
    pf[p, PF_START] = now
    push(hh, ctr, now, URGENT, event(EV_HOP, p))


@njit(cache=True, inline="always", _nrt=False)
def hop_s(fp, serial):
    """A head's hop: the seconds from starting on a link until the next router has it (one chunk, or the
    cut-through bytes, or the whole packet if shorter, plus the router delay)."""
    return min(serial, fp[F_CHUNK_S]) + fp[F_ROUTER_S]


@njit(cache=True, inline="always", _nrt=False)
def token_s(ip, fp, held):
    """Seconds the tokens of pool ``held`` come back after the tail has left it: the router's delay for a link's
    VC, none for an injection FIFO.  (bluegene-l's is 0.0, and x + 0.0 is x: its times keep every bit.)"""
    return fp[F_TOKEN_S] if held < ip[I_POOL_INJ] else 0.0


@njit(cache=True, _nrt=False)
def _go(t, p, link, pool, now):
    """The packet holds room in ``pool`` behind ``link``: start on the link; the room it held comes back when
    its tail has left (the router's token return: plus ``F_TOKEN_S`` for a link's VC)."""
    pk, pf, lf, fp, hh, ctr = t.packets, t.packet_times, t.link_times, t.float_params, t.queue, t.counters
    serial = pk[p, PK_WIRE] / fp[F_RATE]
    ctr[C_HOPS] += 1
    pk[p, PK_NODE] = t.neighbors[link]
    start = max(now, lf[link, LF_FREE])
    lf[link, LF_FREE] = start + serial
    lf[link, LF_BUSY] += serial
    t.link_bytes[link] += pk[p, PK_WIRE]
    held = pk[p, PK_HELD]
    return_held(t, p, now, start + serial + token_s(t.int_params, fp, held) - now)
    if t.int_params[I_ORDERED]:
        leave(pk, t.pools, t.deferred, hh, ctr, held, start, now)
    pk[p, PK_HELD] = pool
    pk[p, PK_LINK] = link  # the last link, once it has arrived: its reception FIFO group
    pf[p, PF_START] = start
    when = now + (start + hop_s(fp, serial) - now)
    if t.node_part[pk[p, PK_NODE]] == ctr[C_PART]:
        push(hh, ctr, when, NORMAL, event(EV_HOP, p))
    else:
        post(t, pk[p, PK_NODE], when, event(EV_HOP, p))


@njit(cache=True, _nrt=False)
def post(t, node, when, payload):
    """Schedule ``payload`` for an entity of ``node``, which another part of a partitioned run owns: keyed now, as
    the active entity (as :func:`gupsim.engines.fast.events.push` keys it), and kept in the outbox until the
    window's end (gupsim.engines.fast.partitioned).  ``when`` is at least the lookahead away, past that end."""
    ob, ctr = t.outbox, t.counters
    n = ctr[C_OUT_N]
    ob[n, 0], ob[n, 1], ob[n, 2], ob[n, 3] = f2i(when), key_for(ctr, t.queue[3], NORMAL), payload, t.node_part[node]
    ctr[C_OUT_N] = n + 1


@njit(cache=True, _nrt=False)
def return_held(t, p, now, delay):
    """The room packet ``p`` holds (``PK_HELD``) comes back ``delay`` from now: :func:`give_later` by the pool's
    owner, or, if another part owns it (a link's pool belongs to its near end), posted to that part."""
    pk, ip = t.packets, t.int_params
    pool = pk[p, PK_HELD]
    node = pool_node(ip, pool)
    if t.node_part[node] == t.counters[C_PART]:
        give_later(pk, t.pools, t.deferred, t.ranks, ip, t.queue, t.counters, pool, pk[p, PK_CHUNKS], now, delay)
    else:
        post(t, node, now + delay, give_event(pool, pk[p, PK_CHUNKS]))


@njit(cache=True, _nrt=False)
def _arrive(t, p, now):
    """Room taken in the reception FIFO: wait for the tail."""
    pk, fp = t.packets, t.float_params
    if t.int_params[I_ORDERED]:
        leave(pk, t.pools, t.deferred, t.queue, t.counters, pk[p, PK_HELD], now, now)
    serial = pk[p, PK_WIRE] / fp[F_RATE]
    tail = t.packet_times[p, PF_START] + serial + fp[F_ROUTER_S] - now
    # its buffer's room comes back with the tail, and no sooner than a hop (or its serialisation) from now
    return_held(t, p, now, max(tail, min(serial, hop_s(fp, serial))) + token_s(t.int_params, fp, pk[p, PK_HELD]))
    if tail > 0:
        push(t.queue, t.counters, now + tail, NORMAL, event(EV_TAIL, p))
    else:
        deliver(t, p, now)


@njit(cache=True, _nrt=False)
def deliver(t, p, now):
    """Tail in: put the packet in the receiver's inbox (after its node's reception DMA, if it has one), wake its
    CPU.  (Its last buffer's room was given back when it started into the reception FIFO, :func:`_arrive`.)"""
    pk, rk, ip, hh, ctr = t.packets, t.ranks, t.int_params, t.queue, t.counters
    ctr[C_DELIVERED] += 1
    if ip[I_DMA]:
        dma.receive(pk, t.link_times, ip, t.float_params, hh, ctr, p, now)
    else:
        to_inbox(pk, rk, hh, ctr, p, now)


@njit(cache=True, _nrt=False)
def to_inbox(pk, rk, hh, ctr, p, now):
    """The packet is in the receiver's inbox: wake its CPU if it waits for one."""
    r = pk[p, PK_DST]
    pk[p, PK_NEXT] = -1
    if rk[r, RK_IN_HEAD] < 0:
        rk[r, RK_IN_HEAD] = p
    else:
        pk[rk[r, RK_IN_TAIL], PK_NEXT] = p
    rk[r, RK_IN_TAIL] = p
    rk[r, RK_IN_COUNT] += 1
    if rk[r, RK_WAIT] & WAKE_INBOX:
        wake(rk, hh, ctr, r, now, WAKE_INBOX)


@njit(cache=True, _nrt=False)
def inbox_pop(pk, rk, r):
    p = rk[r, RK_IN_HEAD]
    rk[r, RK_IN_HEAD] = pk[p, PK_NEXT]
    rk[r, RK_IN_COUNT] -= 1
    return p


@njit(cache=True, _nrt=False)
def hop(t, log, p, now):
    """One step of :meth:`Network._transit`: the head is at ``PK_NODE``."""
    pk, ip = t.packets, t.int_params
    if ip[I_DMA] and pk[p, PK_DMA] != dma.DMA_NET and not _through_dma(t, p, now):
        return
    if ip[I_ORDERED]:
        # It enters the order of the buffer it holds room in: its injection FIFO when just launched (as
        # Network._transit starts), else the buffer of the link it came by, now that its head has arrived.  The
        # reference appends when the packet starts on the link; arrivals on a link come in the order the packets
        # started (a later start also arrives later), so the order is the same, and it is kept where it is
        # read: at the link's far end, in the part of a partitioned run that owns that node.
        order_append(pk, t.pools, pk[p, PK_HELD], p)
        if not front_ready(pk, t.pools, t.deferred, t.queue, t.counters, p, now):
            return
    hop_on(t, log, p, now)


@njit(cache=True, _nrt=False)
def _through_dma(t, p, now):
    """A step of ``DmaNetwork._dma_transit`` (:mod:`gupsim.engines.fast.dma`): True once the packet enters the
    torus, now."""
    pk, pf, lf, ip, fp, hh, ctr = t.packets, t.packet_times, t.link_times, t.int_params, t.float_params, t.queue, \
        t.counters
    if pk[p, PK_DMA] == dma.DMA_NEW:
        dma.transmit(pk, lf, ip, fp, hh, ctr, p, now)
        return False
    node = pk[p, PK_NODE]
    dst = node_of(ip, pk[p, PK_DST])
    if node == dst:
        _dma_local(t, p, now)
        return False
    if not ip[I_ADAPTIVE]:  # the reference throttles at the dimension-order route's first link only
        if dma.throttled(pk, pf, lf, ip, fp, hh, ctr, p, node * 6 + route(t, node, dst), now):
            return False
    pk[p, PK_DMA] = dma.DMA_NET
    return True


@njit(cache=True, _nrt=False)
def _dma_local(t, p, now):
    """An intra-node packet out of the injection DMA: room in its receiver's reception FIFO, now or queued
    (``DmaNetwork._dma_transit``: down to the DMA and back up, no link)."""
    pk, pq = t.packets, t.pools
    rec = rec_pool(pk, t.int_params, p)
    if take(pq, t.deferred, t.counters, rec, pk[p, PK_CHUNKS], 0):
        _dma_local_arrived(t, p, now)
    else:
        pk[p, PK_STATE] = W_DMA_REC
        pk[p, PK_BUBBLE] = 0
        enqueue(pk, pq, t.deferred, t.queue, t.counters, rec, p, 0)


@njit(cache=True, _nrt=False)
def _dma_local_arrived(t, p, now):
    """The intra-node packet holds its reception room: its injection room comes back, and the reception DMA
    serves it."""
    pk, ip, hh, ctr = t.packets, t.int_params, t.queue, t.counters
    give(pk, t.pools, t.ranks, ip, hh, ctr, pk[p, PK_HELD], pk[p, PK_CHUNKS], now)
    ctr[C_DELIVERED] += 1
    dma.receive(pk, t.link_times, ip, t.float_params, hh, ctr, p, now)


@njit(cache=True, _nrt=False)
def hop_on(t, log, p, now):
    """:func:`hop` once the packet may leave its buffer: the router ``rt`` decides where it goes."""
    pk, ip = t.packets, t.int_params
    node = pk[p, PK_NODE]
    dst = node_of(ip, pk[p, PK_DST])
    chunks = pk[p, PK_CHUNKS]
    if node != dst:
        link, pool = adaptive(t, node, dst, chunks)
        if link >= 0:
            trace(log, now, node, p, DECISION_DYNAMIC, link - node * 6, 0)
            pk[p, PK_DIM] = -1  # re-entering the escape ring needs the bubble again
            _go(t, p, link, pool, now)
            return
        port = route(t, node, dst)
        link = node * 6 + port
        d, bubble = vc(t, port, pk[p, PK_DIM])
        pk[p, PK_DIM] = d
        pool = escape_vc(t, link, bubble)
        if admit(t, pool, chunks, bubble):
            trace(log, now, node, p, DECISION_ESCAPE, port, bubble)
            _go(t, p, link, pool, now)
        else:
            trace(log, now, node, p, DECISION_WAIT, port, bubble)
            pk[p, PK_STATE] = W_LINK
            pk[p, PK_LINK] = pool  # while it waits, the escape VC it waits in (its link: link_of_pool)
            pk[p, PK_BUBBLE] = bubble
            t.packet_times[p, PF_ASKED] = now
            enqueue(pk, t.pools, t.deferred, t.queue, t.counters, pool, p, 1 if bubble else 0)
        return
    rec = rec_pool(pk, ip, p)
    if admit(t, rec, chunks, 0):
        trace(log, now, node, p, DECISION_EJECT, -1, 0)
        _arrive(t, p, now)
    else:
        trace(log, now, node, p, DECISION_EJECT_WAIT, -1, 0)
        pk[p, PK_STATE] = W_REC
        pk[p, PK_BUBBLE] = 0
        enqueue(pk, t.pools, t.deferred, t.queue, t.counters, rec, p, 0)


# ------------------------------------------------------------------ buffer_order fifo
# Network._wait_front and Network._leave: a packet may ask for its next room only once it heads the buffer
# it holds room in (the injection FIFO first, then each link's buffer) and the packet before it has left.


@njit(cache=True, inline="always", _nrt=False)
def order_append(pk, pq, pool, p):
    list_append(pk, pq, pool, p, PQ_OHEAD, PK_ONEXT)


@njit(cache=True, _nrt=False)
def leave(pk, pq, dq, hh, ctr, pool, at, now):
    """The oldest packet of ``pool`` has its next room and leaves at ``at``; wake the next if it waits."""
    nxt = pk[pq[pool, PQ_OHEAD], PK_ONEXT]
    pq[pool, PQ_OHEAD] = nxt
    dq[pool, dq.shape[1] - 1, 0] = f2i(at)
    if nxt >= 0 and pk[nxt, PK_STATE] == W_FRONT:
        push(hh, ctr, now, NORMAL, event(EV_FRONT, nxt))


@njit(cache=True, _nrt=False)
def _front_time(pk, dq, hh, ctr, p, now):
    """At the head of its buffer: go on now, or (False) wait for the departure of the packet before it."""
    wait = i2f(dq[pk[p, PK_HELD], dq.shape[1] - 1, 0]) - now
    if wait > 0:
        pk[p, PK_STATE] = W_FRONT_TIME
        push(hh, ctr, now + wait, NORMAL, event(EV_FRONT, p))
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
def front_event(t, log, p, now):
    """EV_FRONT: the packet before it left (check when), or that departure time has come (go on)."""
    pk = t.packets
    if pk[p, PK_STATE] == W_FRONT and not _front_time(pk, t.deferred, t.queue, t.counters, p, now):
        return
    pk[p, PK_STATE] = W_NONE
    hop_on(t, log, p, now)


@njit(cache=True, _nrt=False)
def resume(t, log, p, now):
    """A waiting packet was granted its room (already taken from the pool by the allocator)."""
    pk = t.packets
    state = pk[p, PK_STATE]
    pk[p, PK_STATE] = W_NONE
    if state == W_LINK:
        pool = pk[p, PK_LINK]
        link = link_of_pool(t.int_params, pool)
        trace(log, now, pk[p, PK_NODE], p, DECISION_GRANT, link % 6, pk[p, PK_BUBBLE])
        t.link_times[link, LF_BLOCKED] += now - t.packet_times[p, PF_ASKED]
        _go(t, p, link, pool, now)
    elif state == W_DMA_REC:
        _dma_local_arrived(t, p, now)
    else:
        trace(log, now, pk[p, PK_NODE], p, DECISION_GRANT, -1, 0)
        _arrive(t, p, now)


@njit(cache=True, inline="always", _nrt=False)
def pool_node(ip, pool):
    """The node whose part owns ``pool``: a link's near end, a FIFO's rank's node."""
    if pool < ip[I_POOL_INJ]:
        return link_of_pool(ip, pool) // 6
    base = ip[I_POOL_INJ] if pool < ip[I_POOL_REC] else ip[I_POOL_REC]
    return node_of(ip, (pool - base) // ip[I_FIFO_GROUPS])


@njit(cache=True, inline="always", _nrt=False)
def pool_owner(ip, pool):
    """The entity a credit return to ``pool`` runs as: a link's buffers belong to the router at its near end,
    which holds the tokens, a rank's FIFOs to the rank (gupsim.engines.order)."""
    if pool < ip[I_POOL_INJ]:
        return router_entity(ip[I_NRANKS], link_of_pool(ip, pool) // 6)
    base = ip[I_POOL_INJ] if pool < ip[I_POOL_REC] else ip[I_POOL_REC]
    return (pool - base) // ip[I_FIFO_GROUPS]


@njit(cache=True, inline="always", _nrt=False)
def enter(net, kind, a):
    """Make the entity an event of ``kind`` about ``a`` runs as the active one (``C_ACTIVE``): a CPU's event runs
    as its rank, a credit return as its pool's owner, a packet's event as the router its head is at."""
    ip = net.int_params
    if kind == EV_CPU or kind == EV_WAKE:
        entity = a
    elif kind == EV_GIVE:
        entity = pool_owner(ip, give_pool(a))
    else:
        entity = router_entity(ip[I_NRANKS], net.packets[a, PK_NODE])
    net.counters[C_ACTIVE] = entity


@njit(cache=True, inline="always", _nrt=False)
def woken(net, r):
    """An :data:`EV_WAKE` of rank ``r`` pops: True if it is the first of its any_of's events to pop (the CPU
    resumes, and no other wakes it: SimPy's condition removes its callbacks), False if stale."""
    rk = net.ranks
    if rk[r, RK_ARMED] == 0:
        return False
    rk[r, RK_ARMED] = 0
    rk[r, RK_WAIT] = 0
    return True


@njit(cache=True, inline="always", _nrt=False)
def arm(rk, r, bits):
    """Rank ``r``'s CPU waits on an any_of of the events ``bits`` (``WAKE_*``), none fired yet."""
    rk[r, RK_WAIT] = bits
    rk[r, RK_ARMED] = 1


@njit(cache=True, _nrt=False)
def network_event(kind, a, net, now):
    """Handle every event kind except :data:`EV_CPU` (``a``: the packet, or for a credit return its pool and
    chunks) with the run's router (``I_ROUTER``)."""
    routed_event(kind, a, net, now, None)


@njit(cache=True, inline="always", _nrt=False)
def routed_event(kind, a, net, now, log):
    """:func:`network_event` with the router kernel ``rt`` (:class:`gupsim.engines.fast.router.RouterKernel`).

    The transit takes the network's tables as one :class:`gupsim.engines.fast.router.Transit` (the tables it
    reads, by name), not the whole :class:`gupsim.engines.fast.contract.Network`: a helper Numba does not
    inline copies every argument it is given at each call, and the whole network at every credit return and
    hop made the kernels 7-23% slower (docs/performance-log.md)."""
    t = transit_of(net)
    if kind == EV_HOP:
        hop(t, log, a, now)
    elif kind == EV_RESUME:
        resume(t, log, a, now)
    elif kind == EV_TAIL:
        if t.int_params[I_DMA] and t.packets[a, PK_DMA] == dma.DMA_RX:
            to_inbox(t.packets, t.ranks, t.queue, t.counters, a, now)
        else:
            deliver(t, a, now)
    elif kind == EV_FRONT:
        front_event(t, log, a, now)
    else:
        give(t.packets, t.pools, t.ranks, t.int_params, t.queue, t.counters, give_pool(a), give_chunks(a), now)


@njit(cache=True, _nrt=False)
def start_cpus(hh, ctr, nranks):
    """Every rank's process starts at t = 0, in rank order (SimPy's Initialize events)."""
    for r in range(nranks):
        push(hh, ctr, 0.0, URGENT, event(EV_CPU, r))
