"""Compiled ``alltoall`` (HPCC 0.5b's MPIRandomAccess, seed 004 L98): the rounds of gupsim.algorithms.alltoall.

Each round of each process is the reference's, step for step, with the same costs spent in the same order and
the same floating-point sums: fill the buckets until one is full or the updates run out, a dissemination
barrier, one all-to-all of P - 1 blocks in schedule order (one in the injection FIFO at a time), then the
received blocks applied in the order they completed and the process's own block last.  Only the storage
differs, and every SimPy event whose place in the order can matter at equal times is mirrored:

* **Buckets and blocks.**  Without ``verify`` an update's value matters only for its owner, so a rank keeps
  each bucket's *size* (``bucket_sizes``) and a received block is its size (``block_sizes``, in the order the
  blocks completed, which is the order the reference applies them in).  A barrier message is counted in
  ``barrier_mail`` under its round's parity and its step: a process can be at most one round ahead of another
  (the dissemination barrier lets none out before all are in), so two rounds' mail is all there can be.
* **Messages.**  The message table of :mod:`gupsim.engines.fast.baseline` (its ``MS_FIN`` column holds the
  tag here: data or barrier, done flag, round parity, step), and its ``_isend``: an :data:`EV_ISEND` at URGENT
  priority (SimPy's Initialize of the send process), packets that wait for injection room queued as
  ``W_ISEND``.  The send process's own end event (:data:`EV_SEND_DONE`, keyed as its rank) is always
  scheduled, as SimPy schedules it, since the exchange builds its ``any_of`` without checking that the send
  is still alive, and a condition on a process that has ended but whose end has not popped waits for it.
* **any_of.**  ``any_of([sending, inbox.wait()])`` resumes two events after its trigger: the inbox event
  (a wake-up keyed by the router that delivered, or, if a packet was already there, :data:`EV_INBOX` keyed
  by the rank) or the send's end, then the condition's own ``EV_CPU``.  Events of the condition that fire after
  it has triggered do nothing: an inbox event already in the queue when the send's end triggered the
  condition is counted in ``CI_STALE_WAKE`` and skipped when it pops.
* **Round times.**  Each process's phase times are summed per round in ``round_times`` and ``round_counts`` in
  the order processes finish the round, as :class:`gupsim.algorithms.alltoall.RoundTimes` sums them, and
  :func:`gupsim.algorithms.alltoall.round_shares` makes the record's shares from them (reached through the
  algorithm registry, which keeps the engines' import chains short: tests/test_architecture.py).

The kernel runs on one thread (no ``summed_arrays``), as ``baseline``'s does: ``--threads`` above 1 is refused
in one line, and the default runs it serially (:meth:`gupsim.engines.fast.engine.FastEngine.threads_for`).  A run
in parts would have to rebuild the round tables' float sums in the order the processes finish each round
across the whole machine.

Checked bit for bit against SimPy in ``tests/engines/fast/test_fast_alltoall.py``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from gupsim.algorithms.base import algorithm_class
from gupsim.engines.fast import core as c, credits as cr, events as ev, stream, tables as tb
from gupsim.engines.fast.baseline import (AC_MSG_FREE, AC_MSG_NFREE, EV_ISEND, EV_SEND_DONE, KT_RECV, KT_SEND,
                                          MS_COLS, MS_DST, MS_FIN, MS_K, MS_NEXT, MS_NPK, MS_RECV, MS_SENT,
                                          MS_SRC, MSG_MARGIN, T_COLS, T_FULL_CHUNKS, T_LAST_CHUNKS, T_NPK,
                                          W_ISEND, _apply, _link_messages, _new_message, grow_tables)
from gupsim.engines.fast.contract import Kernel

#: a = rank: the inbox event of an any_of made while a packet was already in the inbox (keyed by the rank)
EV_INBOX = 9

# a rank's phases: where its process resumes (PH_FILL is where it starts)
(PH_FILL, PH_BAR, PH_BAR_SENT, PH_WAIT, PH_WAIT_CHECK, PH_X, PH_X_ANY, PH_X_SENT, PH_ROUND_END,
 PH_DONE) = range(10)
# per-rank integer state
(CI_PHASE, CI_LEFT, CI_ROUND, CI_STEP, CI_SEND_MSG, CI_SEND_ALIVE, CI_SEND_PENDING, CI_COND, CI_COND_SEND,
 CI_INBOX_EV, CI_STALE_WAKE, CI_WAIT_DATA, CI_GOT, CI_DONE_IN, CI_ROUND_UPDATES, CI_ROUND_DONE, CI_FINISHING,
 CI_TAG) = range(18)
CI_COLS = 24  # three 64-byte lines (line_aligned)
# per-rank float state: cycle debt (column 0, as core.flush_cpu reads it), then the round's times
CF_DEBT, CF_FILL, CF_START, CF_MID, CF_END = range(5)
CF_COLS = 8
# the any_of's condition: not waiting, waiting for a trigger, triggered (its EV_CPU scheduled)
COND_NONE, COND_WAIT, COND_SET = range(3)
# how the condition's inbox event stands: not fired (the mailbox's waiter), an EV_INBOX or an EV_WAKE queued
INBOX_WAITER, INBOX_NOW, INBOX_WOKEN = range(3)
# a message's tag (the baseline table's MS_FIN column): parity | step << 1 | data << 6 | done << 7
TAG_DATA, TAG_DONE = 1 << 6, 1 << 7
MAX_STEPS = 32  # barrier steps a round has at most (ceil(log2 P), P below 2^24 entities)
# global counters: the window's three first (baseline._apply copies AC_* 0..4 at the marks), the free list
# where baseline's message helpers keep it
AC_UPDATES, AC_DATA, AC_SLOTS, AC_MESSAGES, AC_PACKETS, AC_ROUNDS = range(6)
AF_BARRIER, AF_EXCHANGE = range(2)  # rank 0's barrier and exchange seconds
# integer parameters
A_SIZE, A_FIXED, A_PAIRWISE, A_STEPS, A_NRANKS = range(5)
# cost parameters: cycles per filled update (generate + bucket insert, summed as the reference sums them) and
# per applied update
K_FILL, K_UPD = range(2)
# round_times columns (RoundTimes' float sums) and round_counts columns
RT_FILL, RT_FILL_SQ, RT_FILL_MAX, RT_BARRIER, RT_EXCHANGE, RT_APPLY = range(6)
RC_PROCESSES, RC_UPDATES, RC_DONE = range(3)
COUNTER_NAMES = ("updates", "data_messages", "slots", "messages", "packets")
KERNEL_NAME = "alltoall"


class State(NamedTuple):
    """The kernel's own arrays (its network and streams: :class:`gupsim.engines.fast.contract.Network`)."""

    #: [ci] int64 (ranks, ``CI_COLS``): phase, updates left, round, barrier step or block, the send and any_of state.
    rank_ints: np.ndarray
    #: [cf] float64 (ranks, ``CF_COLS``): cycle debt, this round's fill seconds and its start, mid and end times.
    rank_floats: np.ndarray
    #: [cost] float64 (``K_*``,): cycles per filled update and per applied update.
    costs: np.ndarray
    #: [ktab] float64 (rows, 2): per message row (0: a barrier message, 1 + n: a block of n updates), its MPI
    #: send and receive cycles.
    message_costs: np.ndarray
    #: [tabs] int64 (rows, ``T_COLS``): per message row, its packets and their sizes.
    message_packets: np.ndarray
    #: [ai] int64 (8,): bucket size, exchange and schedule, barrier steps, processes.
    params: np.ndarray
    #: [ac] int64 (8,): the algorithm's counters and the message table's free list (``AC_*``).
    alg_counters: np.ndarray
    #: [af] float64 (2,): rank 0's barrier and exchange seconds.
    alg_times: np.ndarray
    #: [wc] int64 (2, 5): the counters at the window's two marks.
    window_marks: np.ndarray
    #: [ms] int64 (messages, ``MS_COLS``): messages in flight (grows between batches).
    messages: np.ndarray
    #: [bk] int32 (ranks, ranks): the size of each bucket of the round being filled.
    bucket_sizes: np.ndarray
    #: [blk] int32 (ranks, ranks): the sizes of the blocks received this round, in the order they completed.
    block_sizes: np.ndarray
    #: [bar] int32 (ranks, 2, ``MAX_STEPS``): barrier messages received, by round parity and step.
    barrier_mail: np.ndarray
    #: [rt] float64 (rounds, 6): per round, the phase times summed over the processes that finished it.
    round_times: np.ndarray
    #: [rc] int64 (rounds, 3): per round, the processes that finished it, their updates, whether any ran out.
    round_counts: np.ndarray


# ================================================================== messages


@njit(cache=True, inline="always", _nrt=False)
def _row(ai, tag, n):
    """The message-table row of a message: 0 for a barrier message, 1 (fixed) or 1 + n (counts) for a block."""
    if not tag & TAG_DATA:
        return 0
    return 1 if ai[A_FIXED] else 1 + n


@njit(cache=True, _nrt=False)
def _isend(m, now, ci, ms, tabs, ai, pk, pf, pq, dq, ip, hh, ctr):
    """``_isend``: inject the message's packets in order while the injection FIFO has room; once the last is in,
    the send process ends (its end event, keyed as its rank, which is active)."""
    src, n, npk = ms[m, MS_SRC], ms[m, MS_K], ms[m, MS_NPK]
    row = _row(ai, ms[m, MS_FIN], n)
    inj = cr.inj_pool(ip, src, ms[m, MS_DST])
    while ms[m, MS_SENT] < npk:
        col = T_FULL_CHUNKS if ms[m, MS_SENT] < npk - 1 else T_LAST_CHUNKS
        p = c.alloc_packet(pk, ctr)
        pk[p, tb.PK_SRC], pk[p, tb.PK_DST], pk[p, tb.PK_CHUNKS] = src, ms[m, MS_DST], tabs[row, col]
        pk[p, tb.PK_WIRE], pk[p, tb.PK_PAYLOAD] = tabs[row, col + 1], tabs[row, col + 2]
        pk[p, tb.PK_MSG], pk[p, tb.PK_N] = m, n
        if not cr.take(pq, dq, ctr, inj, pk[p, tb.PK_CHUNKS], 0):
            pk[p, tb.PK_STATE] = W_ISEND
            pk[p, tb.PK_BUBBLE] = 0
            cr.enqueue(pk, pq, dq, hh, ctr, inj, p, 0)
            return
        c.launch(pk, pf, ip, hh, ctr, p, now)
        ms[m, MS_SENT] += 1
    if ci[src, CI_SEND_MSG] == m:
        ci[src, CI_SEND_ALIVE] = 0
        ci[src, CI_SEND_PENDING] = 1
    ev.push(hh, ctr, now, ev.NORMAL, ev.event(EV_SEND_DONE, m))


@njit(cache=True, _nrt=False)
def _receive(r, now, ci, cf, ktab, ac, ms, ai, blk, bar, pk, pq, dq, rk, ip, fp, hh, ctr):
    """``_receive``: copy every arrived packet out; file each completed message under its tag (a block's size
    in completion order, a barrier message's count by parity and step)."""
    cycle_s = fp[tb.F_CYCLE_S]
    while rk[r, tb.RK_IN_HEAD] >= 0:
        p = c.inbox_pop(pk, rk, r)
        m = pk[p, tb.PK_MSG]
        ms[m, MS_RECV] += 1
        if ms[m, MS_RECV] == ms[m, MS_NPK]:
            tag, n = ms[m, MS_FIN], ms[m, MS_K]
            cf[r, CF_DEBT] += ktab[_row(ai, tag, n), KT_RECV]
            if tag & TAG_DATA:
                if (tag & 1) != (ci[r, CI_ROUND] & 1):  # a block of another round: the barrier should forbid it
                    ctr[tb.C_ERROR] = 1
                blk[r, ci[r, CI_GOT]] = n
                ci[r, CI_GOT] += 1
                if tag & TAG_DONE:
                    ci[r, CI_DONE_IN] += 1
            else:
                bar[r, tag & 1, (tag >> 1) & (MAX_STEPS - 1)] += 1
            ms[m, MS_NEXT] = ac[AC_MSG_FREE]
            ac[AC_MSG_FREE] = m
            ac[AC_MSG_NFREE] += 1
        cr.give_later(pk, pq, dq, rk, ip, hh, ctr, cr.rec_pool(pk, ip, p), pk[p, tb.PK_CHUNKS], now,
                      cf[r, CF_DEBT] * cycle_s)
        c.free_packet(pk, ctr, p)


_flush = c.flush_cpu  # the CPU turns its cycle debt into time (core.py)


# ================================================================== any_of


@njit(cache=True, _nrt=False)
def _any_of(r, now, ci, rk, hh, ctr, with_send, after):
    """``yield env.any_of([sending, inbox.wait()])`` (``with_send``) or ``any_of([inbox.wait()])``; the
    process resumes in phase ``after``.  The inbox event first: queued now if a packet is there, else the
    mailbox's waiter.  A send whose end has already popped meets the condition as it is made."""
    ci[r, CI_PHASE] = after
    ci[r, CI_COND_SEND] = with_send
    if rk[r, tb.RK_IN_HEAD] >= 0:
        ci[r, CI_INBOX_EV] = INBOX_NOW
        rk[r, tb.RK_WAIT] = 0  # an earlier waiter left behind would fire to no effect: it is dropped
        ev.push(hh, ctr, now, ev.NORMAL, ev.event(EV_INBOX, r))
    else:
        ci[r, CI_INBOX_EV] = INBOX_WAITER
    if with_send and not ci[r, CI_SEND_ALIVE] and not ci[r, CI_SEND_PENDING]:
        ci[r, CI_COND] = COND_SET  # the waiter made above is left behind: nothing need wake
        ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))
        return
    ci[r, CI_COND] = COND_WAIT
    if ci[r, CI_INBOX_EV] == INBOX_WAITER:
        rk[r, tb.RK_WAIT] = tb.WAKE_INBOX


@njit(cache=True, _nrt=False)
def _trigger(r, now, ci, hh, ctr):
    """One of the condition's events popped first: the condition's own event, keyed as the rank."""
    ci[r, CI_COND] = COND_SET
    ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))


@njit(cache=True, _nrt=False)
def _send_done_event(m, now, ci, ms, rk, hh, ctr):
    """The send process's end event: it meets the condition if one waits on that send."""
    r = ms[m, MS_SRC]
    if ci[r, CI_SEND_MSG] != m:
        return
    ci[r, CI_SEND_PENDING] = 0
    if ci[r, CI_COND] != COND_WAIT or not ci[r, CI_COND_SEND]:
        return
    _trigger(r, now, ci, hh, ctr)
    if ci[r, CI_INBOX_EV] == INBOX_WAITER:
        if rk[r, tb.RK_WAIT] & tb.WAKE_INBOX:
            rk[r, tb.RK_WAIT] = 0  # the waiter never fired: left behind, it would fire to no effect
        else:
            ci[r, CI_STALE_WAKE] += 1  # it fired: its EV_WAKE is queued and must do nothing when it pops


@njit(cache=True, _nrt=False)
def _inbox_event(r, now, ci, hh, ctr, woken):
    """The condition's inbox event pops (``woken``: the delivery's wake-up, else an :data:`EV_INBOX`)."""
    if woken and ci[r, CI_STALE_WAKE] > 0:
        ci[r, CI_STALE_WAKE] -= 1
        return
    if ci[r, CI_COND] == COND_WAIT:
        _trigger(r, now, ci, hh, ctr)
    elif woken:
        ctr[tb.C_ERROR] = 2  # a wake-up nobody waited for


# ================================================================== the process


@njit(cache=True, _nrt=False)
def _fill(r, now, s, net):
    """Generate updates into the buckets until one holds ``bucket_size`` or the updates run out."""
    ci, cf, bk, ai = s.rank_ints, s.rank_floats, s.bucket_sizes, s.params
    ran, lay = net.streams, net.layout
    nr, size, fill = ai[A_NRANKS], ai[A_SIZE], s.costs[K_FILL]
    for d in range(nr):
        bk[r, d] = 0
    before = ci[r, CI_LEFT]
    while ci[r, CI_LEFT] > 0:
        value = stream.next_ran(ran[r])
        ran[r] = value
        ci[r, CI_LEFT] -= 1
        dest = stream.owner_of(value, lay[0], lay[1], lay[2], lay[3])
        bk[r, dest] += 1
        cf[r, CF_DEBT] += fill
        if bk[r, dest] >= size:
            break
    ci[r, CI_ROUND_DONE] = ci[r, CI_LEFT] == 0
    ci[r, CI_ROUND_UPDATES] = before - ci[r, CI_LEFT]
    cf[r, CF_FILL] = cf[r, CF_DEBT] * net.float_params[tb.F_CYCLE_S]
    cf[r, CF_START] = now
    ci[r, CI_STEP] = 0


@njit(cache=True, _nrt=False)
def _send(r, now, s, net, n, tag, after):
    """``_send``: count the message, pay the sender's MPI share, and flush; the send starts in ``after``."""
    ci, cf, ac = s.rank_ints, s.rank_floats, s.alg_counters
    row = _row(s.params, tag, n)
    ac[AC_MESSAGES] += 1
    ac[AC_PACKETS] += s.message_packets[row, T_NPK]
    cf[r, CF_DEBT] += s.message_costs[row, KT_SEND]
    ci[r, CI_TAG] = tag
    _flush(r, now, ci, cf, net.float_params, net.queue, net.counters, after)


@njit(cache=True, _nrt=False)
def _start_send(r, now, s, net, dst, n):
    """After the send's flush: the message and its send process (SimPy's Initialize at URGENT)."""
    ci, ms, ac = s.rank_ints, s.messages, s.alg_counters
    tag = ci[r, CI_TAG]
    m = _new_message(ms, ac, r, dst, n, s.message_packets[_row(s.params, tag, n), T_NPK], tag)
    ci[r, CI_SEND_MSG], ci[r, CI_SEND_ALIVE], ci[r, CI_SEND_PENDING] = m, 1, 0
    ev.push(net.queue, net.counters, now, ev.URGENT, ev.event(EV_ISEND, m))


@njit(cache=True, inline="always", _nrt=False)
def _dst(r, i, ai):
    """The destination of a process's i-th block (0-based): pairwise rank + i + 1, linear the i-th other rank."""
    nr = ai[A_NRANKS]
    if ai[A_PAIRWISE]:
        return (r + i + 1) % nr
    return i if i < r else i + 1


@njit(cache=True, _nrt=False)
def _receive_of(r, now, s, net):
    _receive(r, now, s.rank_ints, s.rank_floats, s.message_costs, s.alg_counters, s.messages, s.params,
             s.block_sizes, s.barrier_mail, net.packets, net.pools, net.deferred, net.ranks, net.int_params,
             net.float_params, net.queue, net.counters)


@njit(cache=True, _nrt=False)
def _apply_round(r, now, s, net):
    """The received blocks in completion order, then the own one; the round's times; the flush."""
    ci, cf, ai, ac, af = s.rank_ints, s.rank_floats, s.params, s.alg_counters, s.alg_times
    ip, ctr, wt, at, wc = net.int_params, net.counters, net.window_times, net.applied_times, s.window_marks
    fp = net.float_params
    cycle_s, nr = fp[tb.F_CYCLE_S], ai[A_NRANKS]
    start, mid, end = cf[r, CF_START], cf[r, CF_MID], now
    if r == 0:
        ac[AC_ROUNDS] += 1
        af[AF_BARRIER] += mid - start
        af[AF_EXCHANGE] += end - mid
    got = ci[r, CI_GOT]
    for i in range(got + 1):
        n = s.block_sizes[r, i] if i < got else s.bucket_sizes[r, r]
        if n:
            cf[r, CF_DEBT] += s.costs[K_UPD] * n
            _apply(ip, ctr, wt, at, wc, ac, n, now + cf[r, CF_DEBT] * cycle_s, now, 0)
    ci[r, CI_FINISHING] = ci[r, CI_DONE_IN] == nr - 1 and ci[r, CI_ROUND_DONE]
    ci[r, CI_GOT] = 0
    ci[r, CI_DONE_IN] = 0
    # RoundTimes.add, in the order processes finish the round
    k = ci[r, CI_ROUND]
    rt, rc = s.round_times, s.round_counts
    if k >= rt.shape[0]:  # prepare() sized the tables for every round a run can have
        ctr[tb.C_ERROR] = 3
        return
    fill = cf[r, CF_FILL]
    rc[k, RC_PROCESSES] += 1
    rc[k, RC_UPDATES] += ci[r, CI_ROUND_UPDATES]
    rt[k, RT_FILL] += fill
    rt[k, RT_FILL_SQ] += fill * fill
    rt[k, RT_FILL_MAX] = max(rt[k, RT_FILL_MAX], fill)
    rt[k, RT_BARRIER] += mid - start - fill
    rt[k, RT_EXCHANGE] += end - mid
    rt[k, RT_APPLY] += cf[r, CF_DEBT] * cycle_s
    if ci[r, CI_ROUND_DONE]:
        rc[k, RC_DONE] = 1
    _flush(r, now, ci, cf, fp, net.queue, ctr, PH_ROUND_END)


@njit(cache=True, _nrt=False)
def _cpu(r, now, s, net):
    """Rank ``r``'s process, resumed at ``now`` in its phase (its flush or its condition has popped)."""
    ci, cf, ai, bar = s.rank_ints, s.rank_floats, s.params, s.barrier_mail
    fp, hh, ctr, rk = net.float_params, net.queue, net.counters, net.ranks
    nr = ai[A_NRANKS]
    ci[r, CI_COND] = COND_NONE
    phase = ci[r, CI_PHASE]
    while True:
        if phase == PH_FILL:
            _fill(r, now, s, net)
            phase = PH_BAR
        elif phase == PH_BAR:  # step CI_STEP of the dissemination barrier: send to rank + 2^step
            if ci[r, CI_STEP] < ai[A_STEPS]:
                _send(r, now, s, net, 0, (ci[r, CI_STEP] << 1) | (ci[r, CI_ROUND] & 1), PH_BAR_SENT)
                return
            cf[r, CF_MID] = now
            ci[r, CI_STEP] = 0  # the exchange's next block
            ci[r, CI_SEND_MSG] = -1  # ``sending = None``
            phase = PH_X
        elif phase == PH_BAR_SENT:
            _start_send(r, now, s, net, (r + (1 << ci[r, CI_STEP])) % nr, 0)
            ci[r, CI_WAIT_DATA] = 0
            phase = PH_WAIT
        elif phase == PH_WAIT:  # _wait_for: receive, flush, check
            _receive_of(r, now, s, net)
            _flush(r, now, ci, cf, fp, hh, ctr, PH_WAIT_CHECK)
            return
        elif phase == PH_WAIT_CHECK:
            busy = ci[r, CI_SEND_MSG] >= 0 and ci[r, CI_SEND_ALIVE]
            if ci[r, CI_WAIT_DATA]:
                if ci[r, CI_GOT] >= nr - 1 and not busy:
                    _apply_round(r, now, s, net)
                    return
            else:
                par, step = ci[r, CI_ROUND] & 1, ci[r, CI_STEP]
                if bar[r, par, step] >= 1 and not busy:
                    bar[r, par, step] = 0
                    ci[r, CI_STEP] += 1
                    phase = PH_BAR
                    continue
            _any_of(r, now, ci, rk, hh, ctr, busy, PH_WAIT)
            return
        elif phase == PH_X:  # the exchange: one block in the FIFO at a time
            i = ci[r, CI_STEP]
            if i >= nr - 1:
                ci[r, CI_WAIT_DATA] = 1
                phase = PH_WAIT
                continue
            if ci[r, CI_SEND_MSG] >= 0 and ci[r, CI_SEND_ALIVE]:
                _receive_of(r, now, s, net)
                _flush(r, now, ci, cf, fp, hh, ctr, PH_X_ANY)
                return
            _receive_of(r, now, s, net)
            n = s.bucket_sizes[r, _dst(r, i, ai)]
            ac = s.alg_counters
            ac[AC_UPDATES] += n
            ac[AC_DATA] += 1
            ac[AC_SLOTS] += ai[A_SIZE] if ai[A_FIXED] else n
            tag = TAG_DATA | (ci[r, CI_ROUND] & 1) | (TAG_DONE if ci[r, CI_ROUND_DONE] else 0)
            _send(r, now, s, net, n, tag, PH_X_SENT)
            return
        elif phase == PH_X_ANY:  # after the flush the send is not checked again: any_of with it, whatever it is
            _any_of(r, now, ci, rk, hh, ctr, 1, PH_X)
            return
        elif phase == PH_X_SENT:
            i = ci[r, CI_STEP]
            dst = _dst(r, i, ai)
            _start_send(r, now, s, net, dst, s.bucket_sizes[r, dst])
            ci[r, CI_STEP] = i + 1
            phase = PH_X
        elif phase == PH_ROUND_END:
            ci[r, CI_ROUND] += 1
            if ci[r, CI_FINISHING]:
                ci[r, CI_PHASE] = PH_DONE
                return
            phase = PH_FILL
        else:
            return


@njit(cache=True, nogil=True, _nrt=False)
def _loop(s, net, now):
    """Process events until done (True), or until the batch ends (a table must grow, or the driver pauses: False)."""
    ci, ac, ms, tabs, ai = s.rank_ints, s.alg_counters, s.messages, s.message_packets, s.params
    pk, pf, pq, dq, rk, ip = net.packets, net.packet_times, net.pools, net.deferred, net.ranks, net.int_params
    hh, ctr = net.queue, net.counters
    while ctr[tb.C_HEAP_N] > 0 and ctr[tb.C_DONE] == 0 and ctr[tb.C_ERROR] == 0:
        if ev.needs_room(hh, ctr) or ac[AC_MSG_NFREE] < MSG_MARGIN:
            return now, False
        if ev.past_stop(hh, ctr):
            return now, True
        now, payload = ev.pop(hh, ctr)
        c.prefetch_next(net)
        ctr[tb.C_EVENTS] += 1
        kind = ev.event_kind(payload)
        a = ev.event_arg(payload)
        if kind == EV_ISEND or kind == EV_SEND_DONE:  # a send process runs as its sender
            ctr[tb.C_ACTIVE] = ms[a, MS_SRC]
        elif kind == EV_INBOX:
            ctr[tb.C_ACTIVE] = a
        elif kind == tb.EV_RESUME and pk[a, tb.PK_STATE] == W_ISEND:  # the send process, granted FIFO room
            ctr[tb.C_ACTIVE] = pk[a, tb.PK_SRC]
        else:
            c.enter(net, kind, a)
        if kind == tb.EV_CPU:
            _cpu(a, now, s, net)
        elif kind == tb.EV_WAKE or kind == EV_INBOX:
            _inbox_event(a, now, ci, hh, ctr, kind == tb.EV_WAKE)
        elif kind == EV_ISEND:
            _isend(a, now, ci, ms, tabs, ai, pk, pf, pq, dq, ip, hh, ctr)
        elif kind == EV_SEND_DONE:
            _send_done_event(a, now, ci, ms, rk, hh, ctr)
        elif kind == tb.EV_RESUME and pk[a, tb.PK_STATE] == W_ISEND:
            pk[a, tb.PK_STATE] = tb.W_NONE
            m = pk[a, tb.PK_MSG]
            c.launch(pk, pf, ip, hh, ctr, a, now)
            ms[m, MS_SENT] += 1
            _isend(m, now, ci, ms, tabs, ai, pk, pf, pq, dq, ip, hh, ctr)
        else:
            c.network_event(kind, a, net, now)
        if ev.batch_over(ctr):
            return now, False
    return now, True


# ================================================================== set-up and results


def _message_rows(sim, options) -> tuple[np.ndarray, np.ndarray]:
    """Per message row (0: barrier, then the blocks: one row if fixed, one per size if not), its packets and
    their sizes as ``packet_payloads`` cuts them, and its MPI send and receive cycles."""
    alg, net, cm = sim.algorithm, sim.net_cfg, sim.cost
    size, header_words = options.bucket_size, alg.header_words
    words = [1] + ([header_words + size] if options.exchange == "fixed"
                   else [header_words + n for n in range(size + 1)])
    tabs = np.zeros((len(words), T_COLS), dtype=np.int64)
    ktab = np.zeros((len(words), 2))
    data_bytes, header = alg.sim.net.max_data_bytes, alg.sim.net.data_header_bytes
    for j, w in enumerate(words):
        nbytes = alg._message_bytes(w)
        full, rest = divmod(nbytes, data_bytes)  # packet_payloads, without its list
        first = data_bytes + header if full else rest + header
        last = rest + header if rest else data_bytes + header
        row = [full + (1 if rest else 0)]
        for payload in (first, last):
            chunks = max(1, -(-payload // net.chunk_bytes))
            row += [chunks, chunks * net.chunk_bytes + net.wire_overhead_bytes, payload]
        tabs[j] = row
        ktab[j] = cm.mpi_send(nbytes), cm.mpi_recv(nbytes)
    return tabs, ktab


def prepare(sim, options) -> dict:
    """Per-rank state, bucket and block sizes, round tables and message tables: the kernel's arrays."""
    R, cm = sim.num_ranks, sim.cost
    size = options.bucket_size
    tabs, ktab = _message_rows(sim, options)
    ai = np.zeros(8, dtype=np.int64)
    ai[A_SIZE], ai[A_FIXED] = size, int(options.exchange == "fixed")
    ai[A_PAIRWISE] = int(options.schedule == "pairwise")
    ai[A_STEPS], ai[A_NRANKS] = sim.algorithm.barrier_steps, R
    ci = tb.line_aligned((R, CI_COLS), np.int64, 0)
    ci[:, CI_LEFT] = sim.run.updates_per_process
    ci[:, CI_SEND_MSG] = -1
    nmsg = 2 * R + 2 * MSG_MARGIN
    ms = tb.line_aligned((nmsg, MS_COLS), np.int64, 0)
    ac = np.zeros(8, dtype=np.int64)
    ac[AC_MSG_FREE] = -1
    _link_messages(ms, ac, 0, nmsg)
    # every round but a process's last takes at least bucket_size of its updates
    rounds = -(-sim.run.updates_per_process // size) + 1
    return {
        "rank_ints": ci, "rank_floats": np.zeros((R, CF_COLS)),
        "costs": np.array([cm.generate + cm.bucket_insert, cm.update]),
        "message_costs": ktab, "message_packets": tabs, "params": ai, "alg_counters": ac,
        "alg_times": np.zeros(2), "window_marks": np.zeros((2, 5), dtype=np.int64), "messages": ms,
        "bucket_sizes": np.zeros((R, R), dtype=np.int32), "block_sizes": np.zeros((R, R), dtype=np.int32),
        "barrier_mail": np.zeros((R, 2, MAX_STEPS), dtype=np.int32),
        "round_times": np.zeros((rounds, 6)), "round_counts": np.zeros((rounds, 3), dtype=np.int64),
    }


def ended(state: dict) -> np.ndarray:
    return state["rank_ints"][:, CI_PHASE] == PH_DONE


def updates_left(state: dict) -> np.ndarray:
    return state["rank_ints"][:, CI_LEFT]


def window_counters(state: dict) -> list[dict]:
    return [dict(zip(COUNTER_NAMES, (int(v) for v in w))) for w in state["window_marks"]]


def _round_times(state: dict, algorithm) -> list:
    """The per-round sums as the reference's :class:`gupsim.algorithms.alltoall.RoundTimes`, for its shares."""
    out = []
    for times, counts in zip(state["round_times"], state["round_counts"]):
        if counts[RC_PROCESSES] == 0:
            break
        rt = algorithm.round_times_class()
        rt.processes, rt.updates, rt.done = int(counts[RC_PROCESSES]), int(counts[RC_UPDATES]), bool(counts[RC_DONE])
        rt.fill, rt.fill_sq, rt.fill_max, rt.barrier, rt.exchange, rt.apply = (float(v) for v in times)
        out.append(rt)
    return out


def counters(state: dict) -> dict:
    """The reference class's counters (:meth:`gupsim.algorithms.alltoall.AllToAll.counters`) at the end."""
    ac, af = state["alg_counters"], state["alg_times"]
    ranks = state["rank_ints"].shape[0]
    algorithm = algorithm_class(KERNEL_NAME)  # the reference class, through the registry (its round shares)
    return {"updates": int(ac[AC_UPDATES]), "messages": int(ac[AC_MESSAGES]), "packets": int(ac[AC_PACKETS]),
            "data_messages": int(ac[AC_DATA]), "slots": int(ac[AC_SLOTS]), "rounds": int(ac[AC_ROUNDS]),
            "barrier_s": float(af[AF_BARRIER]), "exchange_s": float(af[AF_EXCHANGE])} | algorithm.shares(
                _round_times(state, algorithm), ranks)


def error_message(code: int, state: dict) -> str:
    what = {1: "a block arrived from another round", 2: "an inbox wake-up nobody waited for",
            3: "more rounds than the round tables hold"}
    return f"alltoall fast kernel: internal error {code} ({what.get(int(code), 'unknown')})"


#: Arrays per process besides its two rows of P bucket and block sizes (4 bytes each: ``per_rank_pair_bytes``):
#: its state rows, barrier mail and the few messages it has in flight, and the network's tables beyond
#: FAST_NODE_BYTES (a 4,096-process torus holds 170 MB of arrays, 134 MB of them the two P x P tables).  The 128-
#: and 252-MSP rows peaked at 250 MB (docs/performance-log.md).
KERNEL = Kernel(name=KERNEL_NAME, state=State, loop=_loop, prepare=prepare, counters=counters,
                window_counters=window_counters, ended=ended, updates_left=updates_left, error_message=error_message,
                per_rank_bytes=16_000, per_rank_pair_bytes=8,
                options=frozenset({"bucket_size", "exchange", "schedule"}),
                grow_tables=grow_tables, grown_arrays=("messages",))
