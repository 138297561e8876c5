"""Compiled ``baseline`` (HPCC MPIRandomAccess, seed 000 §2, §6.1): the loop of gupsim.algorithms.baseline.

Same algorithm, same costs, spent in the same order and with the same
floating-point sums; only the storage differs, and the SimPy events the
reference schedules are mirrored one for one wherever their order can
matter at equal times:

* **Buckets.**  Without ``verify`` an update's value matters only for its
  owner, so a rank keeps the *size* of each destination's bucket, in the
  indexed max-heap of :mod:`gupsim.engines.fast.bucket_heap` (the largest bucket,
  ties the lowest destination, exactly what
  :class:`gupsim.model.bucketing.Buckets` pops).  The rank's row keeps the heap's
  length (``CI_HN``) and the pending count (``CI_PENDING``).
* **Messages.**  A row of a message table: destination, updates, packets,
  packets injected, packets received.  ``MPI_Isend`` is the messaging
  co-processor's process in the reference (``env.process``): here an
  :data:`EV_ISEND` event at URGENT priority (SimPy's Initialize), which
  injects packets while the FIFO has room; a packet that must wait queues in
  the FIFO's credit pool with state :data:`W_ISEND`, so the pool's grant
  comes back as ``EV_RESUME`` at the same place in the event order as the
  reference's granted event.
* **The blocked send test** waits on ``any_of([outreq, inbox.wait()])``.
  SimPy resumes it two events after the trigger (the inbox event or the
  send process's end, then the condition), so the kernel schedules the same
  two: the inbox wake-up (:func:`gupsim.engines.fast.credits.wake`) or
  :data:`EV_SEND_DONE`, then the condition's own ``EV_CPU``.  A wake-up
  that the condition no longer needs is skipped, as SimPy's callback is.
* **Termination.**  ``counter``: the run ends when every update is applied.
  ``messages``: FINISHED to every other rank, receive until all ranks have
  finished, wait for the own sends; the run ends when the last rank does.

Checked bit for bit against SimPy in ``tests/engines/fast/test_fast_baseline.py``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from gupsim.engines.fast import bucket_heap as bh, core as c, credits as cr, events as ev, stream, tables as tb
from gupsim.engines.fast.contract import Kernel

# Event kinds of this kernel (core uses 0..4).
EV_ISEND = 5       # a = message: its send process starts (SimPy's Initialize of _isend)
EV_SEND_DONE = 6   # a = rank: its outstanding data send ended (the Process event the condition waits on)
W_ISEND = 8        # packet state: waits in its sender's injection FIFO for an MPI_Isend

(PH_TOP, PH_TESTED, PH_SENT, PH_BLOCKED, PH_DRAIN, PH_DRAIN_RECV,
 PH_FIN, PH_FIN_SENT, PH_FIN_CHECK, PH_FIN_RECV, PH_FIN_WAIT, PH_DONE, PH_FIN_REQ) = range(13)
# per-rank integer state
(CI_PHASE, CI_LEFT, CI_ITER, CI_PENDING, CI_ALIVE, CI_FINISHED, CI_OTHER, CI_SENDS,
 CI_COND, CI_SKIP, CI_DEST, CI_K, CI_HN, CI_DATA_TO, CI_DATA_IN) = range(15)
CI_COLS = 16  # 15 used: a rank's row is two whole cache lines (line_aligned)
CF_DEBT, CF_BLK = range(2)
# the blocked test's condition: not waiting, waiting for a trigger, triggered (its event scheduled)
COND_NONE, COND_WAIT, COND_SET = range(3)
# message table columns
MS_SRC, MS_DST, MS_K, MS_NPK, MS_SENT, MS_RECV, MS_FIN, MS_NEXT = range(8)
MS_COLS = 8
MSG_MARGIN = 1 << 10
# global counters
AC_UPDATES, AC_MESSAGES, AC_PACKETS, AC_TESTS, AC_BLOCKED, AC_RANKS_DONE, AC_MSG_FREE, AC_MSG_NFREE = range(8)
# integer parameters
A_LIMIT, A_EVERY, A_MESSAGES_MODE, A_HMASK, A_NRANKS, A_HSHIFT = range(6)
# per-k packet table (k updates in a message; k = 0 is a FINISHED message)
T_NPK, T_FULL_CHUNKS, T_FULL_WIRE, T_FULL_PAYLOAD, T_LAST_CHUNKS, T_LAST_WIRE, T_LAST_PAYLOAD = range(7)
T_COLS = 7
KT_SEND, KT_RECV = range(2)
# cost parameters
K_GEN, K_UPD, K_TEST, K_INSERT, K_SPIN_S = range(5)
COUNTER_NAMES = ("updates", "messages", "packets", "send_tests", "send_tests_blocked")


class State(NamedTuple):
    """The kernel's own arrays (its network and streams: :class:`gupsim.engines.fast.contract.Network`)."""

    #: [ci] int64 (ranks, ``CI_COLS``): phase, updates left, pending updates, the blocked test's condition, ...
    rank_ints: np.ndarray
    #: [cf] float64 (ranks, 2): cycle debt, when the blocked send test started.
    rank_floats: np.ndarray
    #: [cost] float64 (``K_*``,): cycles to generate, update, test, insert; seconds per spin of a blocked test.
    costs: np.ndarray
    #: [ktab] float64 (max_pending + 1, 2): per k updates in a message, its send and receive cycles.
    message_costs: np.ndarray
    #: [tabs] int64 (max_pending + 1, ``T_COLS``): per k updates, its packets and their sizes.
    message_packets: np.ndarray
    #: [ai] int64 (8,): pending limit, receive-test interval, termination, the bucket table's mask and shift.
    params: np.ndarray
    #: [ac] int64 (8,): the algorithm's counters and the message table's free list (``AC_*``).
    alg_counters: np.ndarray
    #: [wc] int64 (2, 5): the counters at the window's two marks.
    window_marks: np.ndarray
    #: [ms] int64 (messages, ``MS_COLS``): messages in flight (grows between batches).
    messages: np.ndarray
    #: [hk] int64 (ranks, heap capacity): each rank's max-heap of bucket sizes (:mod:`bucket_heap`).
    bucket_heap: np.ndarray
    #: [hkey] int32 (ranks, table size): the destination in each slot of the bucket table.
    bucket_dests: np.ndarray
    #: [hpos] int32 (ranks, table size): the heap position of each slot's bucket.
    bucket_positions: np.ndarray


# ================================================================== messages


@njit(cache=True, _nrt=False)
def _new_message(ms, ac, src, dst, k, npk, finished):
    m = ac[AC_MSG_FREE]
    ac[AC_MSG_FREE] = ms[m, MS_NEXT]
    ac[AC_MSG_NFREE] -= 1
    ms[m, MS_SRC], ms[m, MS_DST], ms[m, MS_K], ms[m, MS_NPK] = src, dst, k, npk
    ms[m, MS_SENT], ms[m, MS_RECV], ms[m, MS_FIN], ms[m, MS_NEXT] = 0, 0, finished, -1
    return m


@njit(cache=True, _nrt=False)
def _link_messages(ms, ac, first, last):
    for m in range(first, last - 1):
        ms[m, MS_NEXT] = m + 1
    ms[last - 1, MS_NEXT] = ac[AC_MSG_FREE]
    ac[AC_MSG_FREE] = first
    ac[AC_MSG_NFREE] += last - first


@njit(cache=True, _nrt=False)
def _apply(ip, ctr, wt, at, wc, ac, k, t, now, messages_mode):
    """:meth:`Simulation.apply` of ``k`` updates at ``t``: window marks, applied-times marks and the counter end."""
    before = ctr[tb.C_APPLIED]
    n = before + k
    ctr[tb.C_APPLIED] = n
    for w in range(2):
        mark = ip[tb.I_MARK0 + w]
        if before < mark <= n:
            wt[w] = t
            for j in range(5):
                wc[w, j] = ac[AC_UPDATES + j]
    if n >= ctr[tb.C_NEXT_MARK]:
        c.cross_marks(ip, ctr, at, n, now)
    if n == ip[tb.I_TOTAL] and not messages_mode:
        ctr[tb.C_DONE] = 1


@njit(cache=True, _nrt=False)
def _send_ended(r, now, ci, ac, ms, m, ai, ctr, hh):
    """The send process of message ``m`` has injected its last packet."""
    if ms[m, MS_FIN]:
        ci[r, CI_SENDS] -= 1
        if ci[r, CI_SENDS] == 0 and ci[r, CI_PHASE] == PH_FIN_WAIT:
            _rank_done(r, ci, ac, ai, ctr)
        return
    ci[r, CI_ALIVE] = 0
    if ci[r, CI_COND] == COND_WAIT or ci[r, CI_PHASE] == PH_FIN_REQ:
        ev.push(hh, ctr, now, ev.NORMAL, ev.event(EV_SEND_DONE, r))


@njit(cache=True, _nrt=False)
def _rank_done(r, ci, ac, ai, ctr):
    ci[r, CI_PHASE] = PH_DONE
    ac[AC_RANKS_DONE] += 1
    if ac[AC_RANKS_DONE] == ai[A_NRANKS]:
        ctr[tb.C_DONE] = 1


@njit(cache=True, _nrt=False)
def _isend(m, now, ci, ac, ms, tabs, ai, pk, pf, pq, dq, ip, hh, ctr):
    """``_isend``: inject the message's packets in order while the injection FIFO has room."""
    src, k, npk = ms[m, MS_SRC], ms[m, MS_K], ms[m, MS_NPK]
    inj = cr.inj_pool(ip, src, ms[m, MS_DST])
    while ms[m, MS_SENT] < npk:
        col = T_FULL_CHUNKS if ms[m, MS_SENT] < npk - 1 else T_LAST_CHUNKS
        p = c.alloc_packet(pk, ctr)
        pk[p, tb.PK_SRC], pk[p, tb.PK_DST], pk[p, tb.PK_CHUNKS] = src, ms[m, MS_DST], tabs[k, col]
        pk[p, tb.PK_WIRE], pk[p, tb.PK_PAYLOAD] = tabs[k, col + 1], tabs[k, col + 2]
        pk[p, tb.PK_MSG], pk[p, tb.PK_N] = m, k
        if not cr.take(pq, dq, ctr, inj, pk[p, tb.PK_CHUNKS], 0):
            pk[p, tb.PK_STATE] = W_ISEND
            pk[p, tb.PK_BUBBLE] = 0
            cr.enqueue(pk, pq, dq, hh, ctr, inj, p, 0)
            return
        c.launch(pk, pf, ip, hh, ctr, p, now)
        ms[m, MS_SENT] += 1
    _send_ended(src, now, ci, ac, ms, m, ai, ctr, hh)


@njit(cache=True, _nrt=False)
def _receive(r, now, ci, cf, cost, ktab, ac, ms, ai, pk, pq, dq, rk, ip, fp, hh, ctr, wt, at, wc):
    """``_receive``: copy every arrived packet out; apply completed messages; FINISHED ones counted."""
    cycle_s = fp[tb.F_CYCLE_S]
    finished = 0
    while rk[r, tb.RK_IN_HEAD] >= 0:
        p = c.inbox_pop(pk, rk, r)
        m = pk[p, tb.PK_MSG]
        ms[m, MS_RECV] += 1
        if ms[m, MS_RECV] == ms[m, MS_NPK]:
            k = ms[m, MS_K]
            cf[r, CF_DEBT] += ktab[k, KT_RECV]
            if ms[m, MS_FIN]:
                finished += 1
            else:
                ci[r, CI_DATA_IN] += 1
                cf[r, CF_DEBT] += cost[K_UPD] * k
                _apply(ip, ctr, wt, at, wc, ac, k, now + cf[r, CF_DEBT] * cycle_s, now, ai[A_MESSAGES_MODE])
            ms[m, MS_NEXT] = ac[AC_MSG_FREE]
            ac[AC_MSG_FREE] = m
            ac[AC_MSG_NFREE] += 1
        cr.give_later(pk, pq, dq, rk, ip, hh, ctr, cr.rec_pool(pk, ip, p), pk[p, tb.PK_CHUNKS], now,
                     cf[r, CF_DEBT] * cycle_s)
        c.free_packet(pk, ctr, p)
    return finished


_flush = c.flush_cpu  # the CPU turns its cycle debt into time (core.py)


@njit(cache=True, _nrt=False)
def _wait_inbox(r, now, ci, rk, hh, ctr, phase):
    """``yield inbox.wait()``: an event now if a packet is there, else a wake-up on delivery."""
    ci[r, CI_PHASE] = phase
    if rk[r, tb.RK_IN_HEAD] >= 0:
        ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))
    else:
        rk[r, tb.RK_WAIT] = tb.WAKE_INBOX


@njit(cache=True, _nrt=False)
def _cpu(r, now, s, net):
    ci, cf, cost, ktab, tabs, ai = s.rank_ints, s.rank_floats, s.costs, s.message_costs, s.message_packets, s.params
    ac, wc, ms, hk, hkey, hpos = s.alg_counters, s.window_marks, s.messages, s.bucket_heap, s.bucket_dests, \
        s.bucket_positions
    pk, pq, dq, rk, ip = net.packets, net.pools, net.deferred, net.ranks, net.int_params
    fp, hh, ctr, wt, ran, lay = net.float_params, net.queue, net.counters, net.window_times, net.streams, net.layout
    at = net.applied_times
    nr = ip[tb.I_NRANKS]
    mask, shift = ai[A_HMASK], ai[A_HSHIFT]
    mm = ai[A_MESSAGES_MODE]
    phase = ci[r, CI_PHASE]
    while True:
        if phase == PH_TOP:
            if ci[r, CI_LEFT] > 0:
                ci[r, CI_ITER] += 1
                if ci[r, CI_ITER] % ai[A_EVERY] == 0:
                    cf[r, CF_DEBT] += cost[K_TEST]
                    ci[r, CI_FINISHED] += _receive(r, now, ci, cf, cost, ktab, ac, ms, ai, pk, pq, dq, rk,
                                                   ip, fp, hh, ctr, wt, at, wc)
                if ci[r, CI_PENDING] < ai[A_LIMIT]:
                    value = stream.next_ran(ran[r])
                    ran[r] = value
                    ci[r, CI_LEFT] -= 1
                    dest = stream.owner_of(value, lay[0], lay[1], lay[2], lay[3])
                    cf[r, CF_DEBT] += cost[K_GEN]
                    if dest == r:
                        cf[r, CF_DEBT] += cost[K_UPD]
                        _apply(ip, ctr, wt, at, wc, ac, 1, now + cf[r, CF_DEBT] * fp[tb.F_CYCLE_S], now, mm)
                    else:
                        ci[r, CI_HN] = bh.add(hk, hkey, hpos, r, ci[r, CI_HN], dest, nr, mask, shift)
                        ci[r, CI_PENDING] += 1
                        cf[r, CF_DEBT] += cost[K_INSERT]
                    _flush(r, now, ci, cf, fp, hh, ctr, PH_TOP)
                    return
            elif ci[r, CI_PENDING] > 0:
                cf[r, CF_DEBT] += cost[K_TEST]
                ci[r, CI_FINISHED] += _receive(r, now, ci, cf, cost, ktab, ac, ms, ai, pk, pq, dq, rk,
                                               ip, fp, hh, ctr, wt, at, wc)
            elif mm:
                ci[r, CI_OTHER] = 0
                if ci[r, CI_ALIVE]:  # _finish's ``yield outreq``: FINISHED may not overtake the last data send
                    ci[r, CI_PHASE] = PH_FIN_REQ
                    return
                phase = PH_FIN
                continue
            else:
                _wait_inbox(r, now, ci, rk, hh, ctr, PH_DRAIN_RECV)
                return
            # _test_and_send: MPI_Test the outstanding send
            cf[r, CF_DEBT] += cost[K_TEST]
            _flush(r, now, ci, cf, fp, hh, ctr, PH_TESTED)
            return
        elif phase == PH_TESTED:
            ac[AC_TESTS] += 1
            if not ci[r, CI_ALIVE]:
                dest, k = bh.pop_largest(hk, hkey, hpos, r, ci[r, CI_HN], nr, mask, shift)
                ci[r, CI_HN] -= 1
                ci[r, CI_PENDING] -= k
                if mm:  # only _finish reads it: spare the destination's row otherwise
                    ci[dest, CI_DATA_TO] += 1
                ac[AC_MESSAGES] += 1
                ac[AC_UPDATES] += k
                ci[r, CI_DEST], ci[r, CI_K] = dest, k
                cf[r, CF_DEBT] += ktab[k, KT_SEND]
                _flush(r, now, ci, cf, fp, hh, ctr, PH_SENT)
                return
            # blocked: any_of([outreq, inbox.wait()])
            ac[AC_BLOCKED] += 1
            cf[r, CF_BLK] = now
            ci[r, CI_COND] = COND_WAIT
            ci[r, CI_SKIP] = 0
            _wait_inbox(r, now, ci, rk, hh, ctr, PH_BLOCKED)
            return
        elif phase == PH_SENT:
            k = ci[r, CI_K]
            m = _new_message(ms, ac, r, ci[r, CI_DEST], k, tabs[k, T_NPK], 0)
            ci[r, CI_ALIVE] = 1
            ev.push(hh, ctr, now, ev.URGENT, ev.event(EV_ISEND, m))
            phase = PH_TOP
        elif phase == PH_BLOCKED:
            if ci[r, CI_COND] == COND_WAIT:  # the inbox's event: the condition triggers
                ci[r, CI_COND] = COND_SET
                ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))
                return
            ci[r, CI_COND] = COND_NONE  # the condition's event: resume
            spin_s = cost[K_SPIN_S]
            if spin_s > 0:
                spins = np.int64(np.floor((now - cf[r, CF_BLK]) / spin_s))
                ac[AC_TESTS] += spins
                ac[AC_BLOCKED] += spins
            phase = PH_TOP
        elif phase == PH_DRAIN:
            _wait_inbox(r, now, ci, rk, hh, ctr, PH_DRAIN_RECV)
            return
        elif phase == PH_DRAIN_RECV:
            cf[r, CF_DEBT] += cost[K_TEST]
            if mm:
                ci[r, CI_FINISHED] += _receive(r, now, ci, cf, cost, ktab, ac, ms, ai, pk, pq, dq, rk,
                                               ip, fp, hh, ctr, wt, at, wc)
                _flush(r, now, ci, cf, fp, hh, ctr, PH_FIN_CHECK)
            else:
                _receive(r, now, ci, cf, cost, ktab, ac, ms, ai, pk, pq, dq, rk, ip, fp, hh, ctr, wt, at, wc)
                _flush(r, now, ci, cf, fp, hh, ctr, PH_DRAIN)
            return
        elif phase == PH_FIN:  # _finish: FINISHED to every other rank
            if ci[r, CI_OTHER] == r:
                ci[r, CI_OTHER] += 1
            if ci[r, CI_OTHER] < nr:
                cf[r, CF_DEBT] += ktab[0, KT_SEND]
                _flush(r, now, ci, cf, fp, hh, ctr, PH_FIN_SENT)
                return
            phase = PH_FIN_CHECK
        elif phase == PH_FIN_SENT:
            m = _new_message(ms, ac, r, ci[r, CI_OTHER], 0, tabs[0, T_NPK], 1)
            ci[r, CI_SENDS] += 1
            ev.push(hh, ctr, now, ev.URGENT, ev.event(EV_ISEND, m))
            ci[r, CI_OTHER] += 1
            phase = PH_FIN
        elif phase == PH_FIN_CHECK:
            if ci[r, CI_FINISHED] < nr - 1 or ci[r, CI_DATA_IN] < ci[r, CI_DATA_TO]:  # see Baseline._finish
                _wait_inbox(r, now, ci, rk, hh, ctr, PH_DRAIN_RECV)
                return
            if ci[r, CI_SENDS] == 0:
                _rank_done(r, ci, ac, ai, ctr)
            else:
                ci[r, CI_PHASE] = PH_FIN_WAIT
            return
        else:
            return


@njit(cache=True, _nrt=False)
def _send_done_event(r, now, ci, rk, hh, ctr):
    """The outstanding send's Process event: it triggers the blocked test's condition if still waiting."""
    if ci[r, CI_COND] != COND_WAIT:
        return
    ci[r, CI_COND] = COND_SET
    if rk[r, tb.RK_WAIT] & tb.WAKE_INBOX:
        rk[r, tb.RK_WAIT] = 0  # the inbox waiter is left behind; its later event does nothing
    else:
        ci[r, CI_SKIP] += 1  # the inbox event (an EV_WAKE) is already scheduled; the loop skips it when it pops
    ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))


@njit(cache=True, inline="always", _nrt=False)
def _prefetch_cpu(q, ctr, ci, cf, ran, hk):
    """When the next event resumes a CPU, start loading its rank's rows (core.prefetch_next asks only for
    ``rk``): its state (two cache lines), cycle debt, random stream and heap root."""
    r = c.next_cpu_rank(q, ctr)
    if r >= 0:
        row = ci[r]
        tb.prefetch_row(row, 0)
        tb.prefetch_row(row, 8)
        tb.prefetch_row(cf, r)
        tb.prefetch_row(ran, r)
        tb.prefetch_row(hk, r)


@njit(cache=True, nogil=True, _nrt=False)
def _loop(s, net, now):
    """Process events until done (True), or until the batch ends (a table must grow, or the driver pauses: False)."""
    ci, ac, ms, tabs, ai = s.rank_ints, s.alg_counters, s.messages, s.message_packets, s.params
    pk, pf, pq, dq, rk, ip = net.packets, net.packet_times, net.pools, net.deferred, net.ranks, net.int_params
    hh, ctr = net.queue, net.counters
    while ctr[tb.C_HEAP_N] > 0 and ctr[tb.C_DONE] == 0:
        if ev.needs_room(hh, ctr) or ac[AC_MSG_NFREE] < MSG_MARGIN:
            return now, False
        if ev.past_stop(hh, ctr):
            return now, True
        now, payload = ev.pop(hh, ctr)
        c.prefetch_next(net)
        _prefetch_cpu(hh, ctr, ci, s.rank_floats, net.streams, s.bucket_heap)
        ctr[tb.C_EVENTS] += 1
        kind = ev.event_kind(payload)
        a = ev.event_arg(payload)
        if kind == EV_ISEND:  # a message's send process runs as its sender
            ctr[tb.C_ACTIVE] = ms[a, MS_SRC]
        elif kind == EV_SEND_DONE:
            ctr[tb.C_ACTIVE] = a
        elif kind == tb.EV_RESUME and pk[a, tb.PK_STATE] == W_ISEND:  # the send process, granted FIFO room
            ctr[tb.C_ACTIVE] = pk[a, tb.PK_SRC]
        else:
            c.enter(net, kind, a)
        if kind == tb.EV_WAKE and ci[a, CI_SKIP] > 0:
            ci[a, CI_SKIP] -= 1  # an inbox event the triggered condition no longer needs (_send_done_event)
        elif kind == tb.EV_CPU or kind == tb.EV_WAKE:  # baseline never arms an any_of: a wake is its inbox event
            _cpu(a, now, s, net)
        elif kind == EV_ISEND:
            if not ms[a, MS_FIN]:
                ac[AC_PACKETS] += ms[a, MS_NPK]
            _isend(a, now, ci, ac, ms, tabs, ai, pk, pf, pq, dq, ip, hh, ctr)
        elif kind == EV_SEND_DONE:
            if ci[a, CI_PHASE] == PH_FIN_REQ:  # the Process event resumes _finish directly
                ci[a, CI_PHASE] = PH_FIN
                _cpu(a, now, s, net)
            else:
                _send_done_event(a, now, ci, rk, hh, ctr)
        elif kind == tb.EV_RESUME and pk[a, tb.PK_STATE] == W_ISEND:
            pk[a, tb.PK_STATE] = tb.W_NONE
            m = pk[a, tb.PK_MSG]
            c.launch(pk, pf, ip, hh, ctr, a, now)
            ms[m, MS_SENT] += 1
            _isend(m, now, ci, ac, ms, tabs, ai, pk, pf, pq, dq, ip, hh, ctr)
        else:
            c.network_event(kind, a, net, now)
        if ev.batch_over(ctr):
            return now, False
    return now, True


def grow_tables(a: dict) -> None:
    """Between batches (gupsim.engines.fast.driver): double the message table when fewer than MSG_MARGIN rows are free."""
    if a["alg_counters"][AC_MSG_NFREE] < MSG_MARGIN:
        old = a["messages"].shape[0]
        a["messages"] = tb.grow_on_lines(a["messages"], 2 * old)
        _link_messages(a["messages"], a["alg_counters"], old, 2 * old)


def prepare(sim, options) -> dict:
    """Per-rank state, buckets and cost tables: the kernel's arrays, by :class:`State` field."""
    alg, net, cm = sim.algorithm, sim.net_cfg, sim.cost
    R = sim.num_ranks
    limit = options.max_pending
    # per k updates in a message: its packets (sizes as _packet_payloads splits it) and its MPI costs
    tabs = np.zeros((limit + 1, T_COLS), dtype=np.int64)
    ktab = np.zeros((limit + 1, 2))
    for k in range(limit + 1):
        nbytes = alg._message_bytes(k)
        payloads = alg._packet_payloads(nbytes)
        row = [len(payloads)]
        for payload in (payloads[0], payloads[-1]):
            chunks = max(1, -(-payload // net.chunk_bytes))
            row += [chunks, chunks * net.chunk_bytes + net.wire_overhead_bytes, payload]
        tabs[k] = row
        # the reference's sums, in its order
        ktab[k, KT_SEND] = cm.mpi_send(nbytes) + alg.cache.per_message_side
        ktab[k, KT_RECV] = cm.mpi_recv(nbytes) + alg.cache.per_message_side + cm.mpi_test
    if int(tabs[:, [T_FULL_CHUNKS, T_LAST_CHUNKS]].max()) > 31:
        raise ValueError("baseline kernel: packets above 31 chunks")
    insert = cm.bucket_insert + cm.heap_update(R - 1) + alg.cache.per_remote_update
    spin_s = 2 * cm.mpi_test * (1.0 / sim.machine.cpu.clock_hz)
    buckets = bh.tables(R, limit)
    ai = np.zeros(8, dtype=np.int64)
    ai[A_LIMIT], ai[A_EVERY] = limit, options.receive_test_every
    ai[A_MESSAGES_MODE], ai[A_NRANKS] = int(options.termination == "messages"), R
    ai[A_HMASK], ai[A_HSHIFT] = buckets["mask"], buckets["shift"]
    ci = tb.line_aligned((R, CI_COLS), np.int64, 0)
    ci[:, CI_LEFT] = sim.run.updates_per_process
    nmsg = 2 * R + 2 * MSG_MARGIN
    ms = tb.line_aligned((nmsg, MS_COLS), np.int64, 0)  # a message is one 64-byte cache line
    ac = np.zeros(8, dtype=np.int64)
    ac[AC_MSG_FREE] = -1
    _link_messages(ms, ac, 0, nmsg)
    return {
        "rank_ints": ci, "rank_floats": np.zeros((R, 2)),
        "costs": np.array([cm.generate, cm.update, cm.mpi_test, insert, spin_s]),
        "message_costs": ktab, "message_packets": tabs, "params": ai, "alg_counters": ac,
        "window_marks": np.zeros((2, 5), dtype=np.int64), "messages": ms,
        "bucket_heap": buckets["heap"], "bucket_dests": buckets["dests"], "bucket_positions": buckets["positions"],
    }


def ended(state: dict) -> np.ndarray:
    """Ranks whose process has returned (``termination: messages``, all FINISHED in and its sends done)."""
    return state["rank_ints"][:, CI_PHASE] == PH_DONE


def updates_left(state: dict) -> np.ndarray:
    return state["rank_ints"][:, CI_LEFT]


def window_counters(state: dict) -> list[dict]:
    return [dict(zip(COUNTER_NAMES, (int(v) for v in w))) for w in state["window_marks"]]


def counters(state: dict) -> dict:
    """The reference class's counters (:meth:`gupsim.algorithms.baseline.Baseline.counters`) at the end."""
    ac = state["alg_counters"]
    return {"updates": int(ac[AC_UPDATES]), "messages": int(ac[AC_MESSAGES]), "packets": int(ac[AC_PACKETS]),
            "send_tests": int(ac[AC_TESTS]), "send_tests_blocked": int(ac[AC_BLOCKED]),
            "finished_ranks": int(ac[AC_RANKS_DONE])}


def error_message(code: int, state: dict) -> str:
    return f"baseline fast kernel: internal error {code}"


#: Arrays about 24.8 KB per rank (bucket heap and table, max_pending 1024); the 4,096-node run peaked at 432 MB RSS.
KERNEL = Kernel(name="baseline", state=State, loop=_loop, prepare=prepare, counters=counters,
                window_counters=window_counters, ended=ended, updates_left=updates_left, error_message=error_message,
                per_rank_bytes=32_000, options=frozenset({"termination", "max_pending", "receive_test_every"}),
                grow_tables=grow_tables, grown_arrays=("messages",))
