"""Compiled ``routed`` (seed 000 §4.2-4.3, Figures 1 and 2): the loop of :mod:`gupsim.algorithms.routed`.

Same algorithm, same costs, spent in the same order; only the storage
differs.  A rank's buckets are one row each of a preallocated array, indexed
by (dimension, the router's coordinate in that dimension): ``X + Y + Z``
rows (plus ``cores`` in virtual-node mode, the fourth software dimension).
The row of the process's own coordinate is never used, as in the
reference, where no update is bucketed for the process itself.

Per rank and dimension the kernel keeps what :class:`_Rank` keeps: the one
full bucket (``full``), how much of it is already written (the reference's
``sending`` list), the receive bucket (the packet being routed and the
position in it) and the packets that arrived from that dimension but were
not yet received (``waiting``).  The number of updates a process holds is
kept as a running count and checked against HPCC's 1024 on every receive,
where the reference checks it.

The loop's pieces (send, receive, wait, finish, the event loop) take the
route step and the process's own step as arguments, so that
:mod:`gupsim.engines.fast.routed_split`'s routers run them with their own.
They are inlined at Numba's level: called as functions they would pass the
two state tuples' arrays as arguments once per update and hop
(docs/performance-log.md).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from gupsim.engines.fast import core as c, credits as cr, events as ev, stream, tables as tb
from gupsim.engines.fast.contract import Kernel

# PH_WARM: a warm start's first step, which first applies the pre-filled updates the process owns
PH_LOOP, PH_AFTER_FLUSH, PH_COND, PH_POLLED, PH_WARM = 0, 1, 2, 3, 4
CI_PHASE, CI_LEFT, CI_PROGRESSED, CI_PENDING = range(4)
CI_COLS = 4
# per rank and dimension
RD_FULL, RD_SENDOFF, RD_RBP, RD_RBPOS, RD_WHEAD, RD_WTAIL = range(6)
RD_COLS = 6
# global algorithm counters
AC_PACKETS, AC_UPDATES, AC_SENDS, AC_BLOCKED, AC_HOPS, AC_POLLS = range(6)
# integer parameters
A_NDIMS, A_CAP, A_PER_PACKET, A_HDR = range(4)
A_LEN = 4     # 4 lengths, then 4 slot offsets, then the slot count
A_OFF = 8
A_NSLOTS = 12
# cost parameters
K_GEN, K_UPD, K_HOP, K_POLL_S = range(4)
ERR_PENDING = 1
MAX_PENDING = 1024
ERR_LOG_FULL = 2


class State(NamedTuple):
    """The kernel's own arrays (its network and streams: :class:`gupsim.engines.fast.contract.Network`)."""

    #: [ci] int64 (ranks, ``CI_COLS``): phase, updates left, whether the last pass progressed, updates held.
    rank_ints: np.ndarray
    #: [cf] float64 (ranks,): cycle debt.
    rank_debt: np.ndarray
    #: [rd] int64 (ranks, dimensions, ``RD_COLS``): full bucket, its send offset, the packet being routed and
    #: where in it, the arrived packets not yet received (head, tail).
    dims: np.ndarray
    #: [bv] uint64 (ranks x bucket slots, capacity): the updates in each bucket.
    bucket_values: np.ndarray
    #: [bl] int64 (ranks x bucket slots,): each bucket's length.
    bucket_lengths: np.ndarray
    #: [pv] uint64 (packet rows, updates per packet): the updates each packet carries (grows with the packets).
    packet_updates: np.ndarray
    #: [rc] int64 (ranks, 4): each rank's router coordinates (x, y, z, core).
    rank_coords: np.ndarray
    #: [ai] int64 (16,): dimensions, bucket capacity, updates per packet, header bytes, lengths, offsets (``A_*``).
    params: np.ndarray
    #: [cost] float64 (``K_*``,): cycles to generate, update, route one hop; seconds per poll pass.
    costs: np.ndarray
    #: [tabs] float64 (updates per packet + 1, 4): per k updates, chunks, wire bytes, send and receive cycles.
    packet_costs: np.ndarray
    #: [ac] int64 (8,): the algorithm's counters (``AC_*``).
    alg_counters: np.ndarray
    #: [wc] int64 (2, 6): the counters at the window's two marks.
    window_marks: np.ndarray
    #: [ws] float64 (ranks,): when each waiting process started to wait.
    wait_start: np.ndarray
    #: [wl] int64 (ranks,): a warm start's updates each process owns and applies at its first step (phase
    #: ``PH_WARM``), at no CPU cost (gupsim.algorithms.routed_warm); 0 on a cold start.
    warm_locals: np.ndarray


@njit(cache=True, _nrt=False)
def _apply(ip, ctr, wt, at, wc, ac, t, now):
    if ip[tb.I_LOG_APPLIES]:
        log_apply(ctr, at, now)
        return
    ctr[tb.C_APPLIED] += 1
    n = ctr[tb.C_APPLIED]
    for k in range(2):
        if n == ip[tb.I_MARK0 + k]:
            wt[k] = t
            wc[k, 0], wc[k, 1], wc[k, 2] = ac[AC_PACKETS], ac[AC_UPDATES], ctr[tb.C_WIRE]
            wc[k, 3], wc[k, 4], wc[k, 5] = ac[AC_SENDS], ac[AC_BLOCKED], ac[AC_POLLS]
    if n >= ctr[tb.C_NEXT_MARK]:
        c.cross_marks(ip, ctr, at, n, now)
    if n == ip[tb.I_TOTAL]:
        ctr[tb.C_DONE] = 1


@njit(cache=True, inline="always", _nrt=False)
def log_apply(ctr, log, now):
    """In a part of a partitioned run: log the time of an update applied (the whole run's marks are placed from
    every part's log: gupsim.engines.fast.partitioned); the batch ends once the log is within
    :data:`gupsim.engines.fast.tables.LOG_MARGIN` of full, so the driver can empty it, and a log that fills
    within one event is an error, never a lost update."""
    n = ctr[tb.C_LOG_N]
    if n >= log.shape[0]:
        ctr[tb.C_ERROR] = ERR_LOG_FULL
        return
    log[n] = now
    ctr[tb.C_LOG_N] = n + 1
    ctr[tb.C_APPLIED] += 1
    if n + tb.LOG_MARGIN >= log.shape[0]:
        ctr[tb.C_PAUSE_AT] = 0


@njit(cache=True, inline="always", _nrt=False)
def bucket_update(r, d, owner, value, s):
    """One software hop: append the update to the bucket of its next router (dimension ``d``)."""
    ci, cf, rd, bv, bl, rc, ai, ac = s.rank_ints, s.rank_debt, s.dims, s.bucket_values, s.bucket_lengths, \
        s.rank_coords, s.params, s.alg_counters
    slot = ai[A_OFF + d] + rc[owner, d]
    row = r * ai[A_NSLOTS] + slot
    bv[row, bl[row]] = value
    bl[row] += 1
    ci[r, CI_PENDING] += 1
    cf[r] += s.costs[K_HOP]
    ac[AC_HOPS] += 1
    if bl[row] >= ai[A_CAP]:
        rd[r, d, RD_FULL] = slot


@njit(cache=True, inline="always", _nrt=False)
def first_dim(r, owner, rc):
    """The first software dimension in which ``owner``'s router coordinates differ from ``r``'s."""
    d = 0
    while rc[r, d] == rc[owner, d]:
        d += 1
    return d


@njit(cache=True, inline="always", _nrt=False)
def _route_one(r, value, now, s, net):
    """routeUpdates for one update: apply it or bucket it; False if its dimension's bucket is full."""
    lay = net.layout
    owner = stream.owner_of(value, lay[0], lay[1], lay[2], lay[3])
    if owner == r:
        s.rank_debt[r] += s.costs[K_UPD]
        apply_update(r, now, s, net)
        return True
    d = first_dim(r, owner, s.rank_coords)
    if s.dims[r, d, RD_FULL] >= 0:
        return False
    bucket_update(r, d, owner, value, s)
    return True


@njit(cache=True, inline="always", _nrt=False)
def apply_update(r, now, s, net):
    """Rank ``r`` applies one update, its CPU's debt from now (:meth:`Simulation.apply`'s ``delay_s``)."""
    _apply(net.int_params, net.counters, net.window_times, net.applied_times, s.window_marks, s.alg_counters,
           now + s.rank_debt[r] * net.float_params[tb.F_CYCLE_S], now)


@njit(cache=True, _nrt=False)
def _router(r, d, slot, rc, ai, ip):
    """Rank of the software router of bucket ``slot`` (my coordinates, dimension ``d`` replaced)."""
    x, y, z, core = rc[r, 0], rc[r, 1], rc[r, 2], rc[r, 3]
    v = slot - ai[A_OFF + d]
    if d == 0:
        x = v
    elif d == 1:
        y = v
    elif d == 2:
        z = v
    else:
        core = v
    return (x + ip[tb.I_X] * (y + ip[tb.I_Y] * z)) * ip[tb.I_PPN] + core


@njit(cache=True, _nrt=False)
def _write_packets(r, d, now, ci, cf, rd, bv, bl, pv, rc, ai, tabs, ac, pk, pf, pq, dq, ip, hh, ctr):
    """Write as many packets of dimension ``d``'s full bucket as the FIFO takes; True when done."""
    slot = rd[r, d, RD_FULL]
    row = r * ai[A_NSLOTS] + slot
    router = _router(r, d, slot, rc, ai, ip)
    if rd[r, d, RD_SENDOFF] < 0:
        rd[r, d, RD_SENDOFF] = 0
    inj = cr.inj_pool(ip, r, router)
    while rd[r, d, RD_SENDOFF] < bl[row]:
        off = rd[r, d, RD_SENDOFF]
        k = min(ai[A_PER_PACKET], bl[row] - off)
        chunks = np.int64(tabs[k, 0])
        if not cr.take(pq, dq, ctr, inj, chunks, 0):
            return False
        p = c.alloc_packet(pk, ctr)
        pk[p, tb.PK_SRC], pk[p, tb.PK_DST], pk[p, tb.PK_CHUNKS] = r, router, chunks
        pk[p, tb.PK_WIRE], pk[p, tb.PK_PAYLOAD] = np.int64(tabs[k, 1]), ai[A_HDR] + 8 * k
        pk[p, tb.PK_MSG], pk[p, tb.PK_N] = d, k
        for i in range(k):
            pv[p, i] = bv[row, off + i]
        c.launch(pk, pf, ip, hh, ctr, p, now)
        rd[r, d, RD_SENDOFF] = off + k
        ci[r, CI_PENDING] -= k
        cf[r] += tabs[k, 2]
        ac[AC_PACKETS] += 1
        ac[AC_UPDATES] += k
    bl[row] = 0
    rd[r, d, RD_SENDOFF] = -1
    rd[r, d, RD_FULL] = -1
    return True


@njit(cache=True, inline="always", _nrt=False)
def send_logic(r, now, s, net):
    """Figure 1's send step: write every full bucket whose FIFO has room; True if one was written."""
    rd, ac = s.dims, s.alg_counters
    progressed = False
    for d in range(s.params[A_NDIMS]):
        if rd[r, d, RD_FULL] < 0:
            continue
        ac[AC_SENDS] += 1
        if _write_packets(r, d, now, s.rank_ints, s.rank_debt, rd, s.bucket_values, s.bucket_lengths,
                          s.packet_updates, s.rank_coords, s.params, s.packet_costs, ac, net.packets,
                          net.packet_times, net.pools, net.deferred, net.int_params, net.queue, net.counters):
            progressed = True
        else:
            ac[AC_BLOCKED] += 1
    return progressed


@njit(cache=True, inline="always", _nrt=False)
def _sort_arrivals(r, s, net):
    """Move the inbox's packets to the waiting list of the dimension they came from."""
    pk, rk, rd = net.packets, net.ranks, s.dims
    while rk[r, tb.RK_IN_HEAD] >= 0:
        p = c.inbox_pop(pk, rk, r)
        d = pk[p, tb.PK_MSG]
        pk[p, tb.PK_NEXT] = -1
        if rd[r, d, RD_WHEAD] < 0:
            rd[r, d, RD_WHEAD] = p
        else:
            pk[rd[r, d, RD_WTAIL], tb.PK_NEXT] = p
        rd[r, d, RD_WTAIL] = p


@njit(cache=True, inline="always", _nrt=False)
def _take_waiting(r, d, now, s, net):
    """Receive dimension ``d``'s next waiting packet into its receive bucket: the packet, -1 if none waits,
    -2 if the process now holds more than HPCC's 1024 updates (``C_ERROR`` set)."""
    ci, cf, rd, pk, ctr = s.rank_ints, s.rank_debt, s.dims, net.packets, net.counters
    p = rd[r, d, RD_WHEAD]
    if p < 0:
        return -1
    rd[r, d, RD_WHEAD] = pk[p, tb.PK_NEXT]
    cf[r] += s.packet_costs[pk[p, tb.PK_N], 3]
    cr.give_later(pk, net.pools, net.deferred, net.ranks, net.int_params, net.queue, ctr,
                  cr.rec_pool(pk, net.int_params, p), pk[p, tb.PK_CHUNKS], now, cf[r] * net.float_params[tb.F_CYCLE_S])
    rd[r, d, RD_RBP], rd[r, d, RD_RBPOS] = p, 0
    ci[r, CI_PENDING] += pk[p, tb.PK_N]
    if ci[r, CI_PENDING] > MAX_PENDING:
        ctr[tb.C_ERROR] = ERR_PENDING
        return -2
    return p


@njit(cache=True, inline="always", _nrt=False)
def receive_logic(r, now, s, net, route_one):
    """Figure 1's receive step, each update routed by ``route_one(r, value, now, s, net)`` (False: its
    bucket is full, it stays); 1 if anything moved, 0 if not, -1 on an error."""
    ci, rd, pv, pk, rc, lay = s.rank_ints, s.dims, s.packet_updates, net.packets, s.rank_coords, net.layout
    _sort_arrivals(r, s, net)
    progressed = 0
    for d in range(s.params[A_NDIMS]):
        while True:
            p = rd[r, d, RD_RBP]
            if p < 0:
                p = _take_waiting(r, d, now, s, net)
                if p == -1:
                    break
                if p == -2:
                    return -1
                progressed = 1
            pos, n = rd[r, d, RD_RBPOS], pk[p, tb.PK_N]
            start = pos
            for i in range(pos, n):  # each update reads its owner's coordinates: ask for them all now
                tb.prefetch_row(rc, stream.owner_of(pv[p, i], lay[0], lay[1], lay[2], lay[3]))
            while pos < n and route_one(r, pv[p, pos], now, s, net):
                pos += 1
                ci[r, CI_PENDING] -= 1
            if pos > start:
                progressed = 1
            rd[r, d, RD_RBPOS] = pos
            if pos < n:
                break
            rd[r, d, RD_RBP] = -1
            c.free_packet(pk, net.counters, p)
    return progressed


@njit(cache=True, inline="always", _nrt=False)
def no_full_bucket(r, s):
    rd = s.dims
    for d in range(s.params[A_NDIMS]):
        if rd[r, d, RD_FULL] >= 0:
            return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def nothing_received(r, s):
    """No packet waits to be received and no receive bucket holds updates."""
    rd = s.dims
    for d in range(s.params[A_NDIMS]):
        if rd[r, d, RD_WHEAD] >= 0 or rd[r, d, RD_RBP] >= 0:
            return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def _wait(r, now, s, net):
    """Nothing to do until a packet arrives or (with a full bucket) the injection FIFO drains: SimPy's
    ``any_of`` on the inbox and the FIFOs of the dimensions whose bucket is full ("can send a packet on dim")."""
    rd, pq, dq, rk, ip, hh, ctr = s.dims, net.pools, net.deferred, net.ranks, net.int_params, net.queue, net.counters
    nd = s.params[A_NDIMS]
    s.rank_ints[r, CI_PHASE] = PH_COND
    s.wait_start[r] = now
    room = False
    groups = ip[tb.I_FIFO_GROUPS]
    for d in range(nd):
        if rd[r, d, RD_FULL] >= 0:
            if cr.room(pq, dq, ctr, ip[tb.I_POOL_INJ] + r * groups + cr.dim_group(ip, d)) >= ip[tb.I_MAXCH]:
                room = True
    if rk[r, tb.RK_IN_HEAD] >= 0 or room:
        ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))
    else:
        c.arm(rk, r, tb.WAKE_INBOX)
        # the FIFOs' returns must now wake this CPU: they become events again
        for d in range(nd):
            if rd[r, d, RD_FULL] >= 0:
                cr.watch_room(pq, dq, rk, hh, ctr, ip, r, cr.dim_group(ip, d))


@njit(cache=True, inline="always", _nrt=False)
def run_cpu(r, now, s, net, route_one, own_work, count_polls):
    """Figure 1's loop for rank ``r``, woken at ``now``: send, receive (updates routed by ``route_one``), then
    the process's own step, ``own_work(r, now, s, net, progressed) -> progressed`` (routed's form and finish;
    routed-split's router drains its hand-off queue), until it spends cycles or waits.  ``count_polls``: count
    the passes a real loop spins while it waits (routed's ``send_blocking_factor_polled``)."""
    ci, cf, rd, ac, hh, ctr = s.rank_ints, s.rank_debt, s.dims, s.alg_counters, net.queue, net.counters
    if ci[r, CI_PHASE] == PH_COND:
        # SimPy's any_of([inbox, room...]): the event that woke the CPU, then the condition's own event, which
        # resumes it; events scheduled for this instant in between run before it does
        ci[r, CI_PHASE] = PH_POLLED
        ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))
        return
    if ci[r, CI_PHASE] == PH_POLLED:
        # Resumed: count the passes a real loop spun meanwhile, as the reference does after its yield, so
        # that a window mark crossed by another rank in between sees the same count
        ci[r, CI_PHASE] = PH_LOOP
        if count_polls:
            full = 0
            for d in range(s.params[A_NDIMS]):
                if rd[r, d, RD_FULL] >= 0:
                    full += 1
            ac[AC_POLLS] += int((now - s.wait_start[r]) / s.costs[K_POLL_S]) * full
    resumed = ci[r, CI_PHASE] == PH_AFTER_FLUSH
    while True:
        if resumed:
            resumed = False
            progressed = ci[r, CI_PROGRESSED] == 1
        else:
            progressed = send_logic(r, now, s, net)
            received = receive_logic(r, now, s, net, route_one)
            if received < 0:
                return
            progressed = own_work(r, now, s, net, progressed or received == 1)
            if cf[r] != 0.0:
                cycles = cf[r]
                cf[r] = 0.0
                ci[r, CI_PHASE] = PH_AFTER_FLUSH
                ci[r, CI_PROGRESSED] = 1 if progressed else 0
                ev.push(hh, ctr, now + cycles * net.float_params[tb.F_CYCLE_S], ev.NORMAL, ev.event(tb.EV_CPU, r))
                return
        if not progressed:
            _wait(r, now, s, net)
            return


@njit(cache=True, inline="always", _nrt=False)
def _form(r, now, s, net, progressed):
    """Figure 1's form step (one update generated and routed while no bucket is full), and FinishLogic once
    the stream is done and nothing else moved."""
    ci = s.rank_ints
    if ci[r, CI_LEFT] > 0:
        if no_full_bucket(r, s):
            value = stream.next_ran(net.streams[r])
            net.streams[r] = value
            ci[r, CI_LEFT] -= 1
            s.rank_debt[r] += s.costs[K_GEN]
            _route_one(r, value, now, s, net)
            return True
        return progressed
    if not progressed and nothing_received(r, s):
        return flush_partial(r, now, s, net)
    return progressed


@njit(cache=True, _nrt=False)
def _cpu(r, now, s, net):
    if s.rank_ints[r, CI_PHASE] == PH_WARM:
        # the pre-filled updates this process owns, applied first, as the reference's _warm_up; a phase, not a
        # test of warm_locals on every step, which would read one more row per step
        s.rank_ints[r, CI_PHASE] = PH_LOOP
        for _ in range(s.warm_locals[r]):
            _apply(net.int_params, net.counters, net.window_times, net.applied_times, s.window_marks,
                   s.alg_counters, now, now)
    run_cpu(r, now, s, net, _route_one, _form, True)


@njit(cache=True, _nrt=False)
def flush_partial(r, now, s, net):
    """FinishLogic: send the largest partial bucket (ties: the highest router rank)."""
    rd, bl, rc, ai, ip = s.dims, s.bucket_lengths, s.rank_coords, s.params, net.int_params
    best_len, best_router, best_slot, best_d = 0, -1, -1, -1
    base = r * ai[A_NSLOTS]
    for d in range(ai[A_NDIMS]):
        for slot in range(ai[A_OFF + d], ai[A_OFF + d] + ai[A_LEN + d]):
            n = bl[base + slot]
            if n == 0 or rd[r, d, RD_FULL] == slot:
                continue
            router = _router(r, d, slot, rc, ai, ip)
            if n > best_len or (n == best_len and router > best_router):
                best_len, best_router, best_slot, best_d = n, router, slot, d
    if best_slot < 0 or rd[r, best_d, RD_FULL] >= 0:
        return False
    rd[r, best_d, RD_FULL] = best_slot
    _write_packets(r, best_d, now, s.rank_ints, s.rank_debt, rd, s.bucket_values, bl, s.packet_updates, rc, ai,
                   s.packet_costs, s.alg_counters, net.packets, net.packet_times, net.pools, net.deferred, ip,
                   net.queue, net.counters)
    return True


@njit(cache=True, inline="always", _nrt=False)
def _prefetch_cpu(q, ctr, ci, cf, rd, ran, ws):
    """When the next event resumes a CPU, start loading its rank's rows (core.prefetch_next asks for the
    first, ``rk``; a CPU step reads several more tables)."""
    r = c.next_cpu_rank(q, ctr)
    if r >= 0:
        tb.prefetch_row(ci, r)
        tb.prefetch_row(cf, r)
        rows = rd[r]
        for d in range(rows.shape[0]):
            tb.prefetch_row(rows, d)
        tb.prefetch_row(ran, r)
        tb.prefetch_row(ws, r)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def event_loop(s, net, now, cpu):
    """Process events, a CPU's by ``cpu(rank, now, s, net)``, until done (True), or until the batch ends (a
    table must grow, or the driver pauses: False)."""
    hh, ctr = net.queue, net.counters
    while ctr[tb.C_HEAP_N] > 0 and ctr[tb.C_DONE] == 0 and ctr[tb.C_ERROR] == 0:
        if ev.needs_room(hh, ctr):
            return now, False
        if ev.past_stop(hh, ctr):
            return now, True
        now, payload = ev.pop(hh, ctr)
        c.prefetch_next(net)
        _prefetch_cpu(hh, ctr, s.rank_ints, s.rank_debt, s.dims, net.streams, s.wait_start)
        ctr[tb.C_EVENTS] += 1
        kind = ev.event_kind(payload)
        a = ev.event_arg(payload)
        c.enter(net, kind, a)
        if kind == tb.EV_CPU or (kind == tb.EV_WAKE and c.woken(net, a)):
            cpu(a, now, s, net)
        elif kind == tb.EV_WAKE:
            pass  # stale: the any_of it belonged to has fired
        else:
            c.network_event(kind, a, net, now)
        if ev.batch_over(ctr):
            return now, False
    return now, True


@njit(cache=True, nogil=True, _nrt=False)
def _loop(s, net, now):
    return event_loop(s, net, now, _cpu)


def prepare(sim, options) -> dict:
    """Buckets, receive state and parameters: the kernel's arrays, by :class:`State` field."""
    alg, net, cm = sim.algorithm, sim.net_cfg, sim.cost
    lengths = alg.lengths
    nd, R = len(lengths), sim.num_ranks
    nslots = sum(lengths)
    # a BG/P packet's chunks hold the DMA header before the software header, as the reference's _write_packets
    cap, pp, hdr = alg.capacity, alg.per_packet, alg.sim.net.data_header_bytes + options.software_header_bytes
    ai = np.zeros(16, dtype=np.int64)
    ai[A_NDIMS], ai[A_CAP], ai[A_PER_PACKET], ai[A_HDR] = nd, cap, pp, hdr
    ai[A_LEN:A_LEN + nd] = lengths
    ai[A_OFF:A_OFF + nd] = np.cumsum([0] + lengths[:-1])
    ai[A_NSLOTS] = nslots
    # per number of updates k in a packet: chunks, wire bytes, send and receive cycles
    tabs = np.zeros((pp + 1, 4))
    for k in range(1, pp + 1):
        payload = hdr + 8 * k
        chunks = max(1, -(-payload // net.chunk_bytes))
        tabs[k] = (chunks, chunks * net.chunk_bytes + net.wire_overhead_bytes, cm.raw_send(payload), cm.raw_recv(payload))
    coords = sim.topology.coords_array()
    rank = np.arange(R)
    rc = np.zeros((R, 4), dtype=np.int64)
    rc[:, :3] = coords[rank // sim.ppn]
    rc[:, 3] = rank % sim.ppn  # the core: a fourth software dimension, or (nd = 3) the core routers keep
    ci = tb.line_aligned((R, CI_COLS), np.int64, 0)  # 32-byte rows, two to a cache line
    ci[:, CI_LEFT] = sim.run.updates_per_process
    rd = np.full((R, nd, RD_COLS), -1, dtype=np.int64)
    bv, bl = np.zeros((R * nslots, cap), dtype=np.uint64), np.zeros(R * nslots, dtype=np.int64)
    warm_locals = np.zeros(R, dtype=np.int64)
    warm = sim.warm
    if warm is not None:  # the same state as the reference's Routed._warm_up (gupsim.algorithms.routed_warm)
        bv[:], bl[:] = warm.bucket_values, warm.bucket_lengths
        ci[:, CI_LEFT] -= warm.taken
        ci[:, CI_PENDING] = bl.reshape(R, nslots).sum(axis=1)
        warm_locals[:] = warm.local_counts
        ci[warm.local_counts > 0, CI_PHASE] = PH_WARM
    return {
        "rank_ints": ci, "rank_debt": np.zeros(R), "dims": rd,
        "bucket_values": bv, "bucket_lengths": bl,
        "packet_updates": np.zeros((4 * R + 2 * tb.PACKET_MARGIN, pp), dtype=np.uint64), "rank_coords": rc,
        "params": ai, "costs": np.array([cm.generate, cm.update, sim.algorithm.hop_cycles, sim.algorithm.poll_pass_s]),
        "packet_costs": tabs, "alg_counters": np.zeros(8, dtype=np.int64),
        "window_marks": np.zeros((2, 6), dtype=np.int64), "wait_start": np.zeros(R), "warm_locals": warm_locals,
    }


def ended(state: dict) -> np.ndarray:
    """Ranks whose process has returned: none (after its stream a process keeps routing, as the reference's)."""
    return np.zeros(len(state["rank_ints"]), dtype=bool)


def updates_left(state: dict) -> np.ndarray:
    return state["rank_ints"][:, CI_LEFT]


def window_counters(state: dict) -> list[dict]:
    return [{"packets": int(w[0]), "updates": int(w[1]), "wire": int(w[2]), "send_tests": int(w[3]),
             "send_tests_blocked": int(w[4]), "polls": int(w[5])} for w in state["window_marks"]]


def counters(state: dict) -> dict:
    """The reference class's counters (:meth:`gupsim.algorithms.routed.Routed.counters`) at the end."""
    ac = state["alg_counters"]
    return {"packets": int(ac[AC_PACKETS]), "updates": int(ac[AC_UPDATES]), "wire": int(state["counters"][tb.C_WIRE]),
            "send_tests": int(ac[AC_SENDS]), "send_tests_blocked": int(ac[AC_BLOCKED]), "polls": int(ac[AC_POLLS]),
            "hops": int(ac[AC_HOPS])}


def error_message(code: int, state: dict) -> str:
    if code == ERR_LOG_FULL:
        return "routed: one event applied more updates than a part's log holds (gupsim.engines.fast.partitioned)"
    return f"routed: a process holds more than {MAX_PENDING} pending updates (HPCC's limit)"


#: Peak RSS above the fixed part, per process (docs/performance.md, "Memory"): 10-23 KB up to 32x32x32 and
#: 34 KB on the whole 64x32x32 (its drain keeps the most packets).
KERNEL = Kernel(name="routed", state=State, loop=_loop, prepare=prepare, counters=counters,
                window_counters=window_counters, ended=ended, updates_left=updates_left, error_message=error_message,
                per_rank_bytes=48_000, options=frozenset({"software_header_bytes", "bucket_capacity"}),
                packet_arrays=("packet_updates",), summed_arrays=("alg_counters",))
