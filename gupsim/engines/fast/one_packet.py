"""Compiled ``one-packet`` (seed 001, UPC RandomAccess): the loop of :mod:`gupsim.algorithms.one_packet`.

Each rank's SimPy process becomes a small state machine (``PH_*``): the
point where the reference process would resume after a ``yield``.  Costs are
spent in the same order and with the same floating-point sums as the
reference (``debt += generate``, then ``debt += send + remote_overhead``,
...), so a CPU's time advances exactly as it does there.

1. read the inbox (raw receive + ``t_u`` per packet; reception room returns
   when the CPU reaches that read), generate, then either apply a local
   update or flush and write one packet;
2. a full injection FIFO is a *blocked send*: the packet queues for room
   while the CPU keeps draining its inbox, exactly as the reference does;
3. once its stretch is done, the CPU only drains its inbox.

The run ends when every update has been applied (docs/model.md §6).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from gupsim.engines.fast import core as c, credits as cr, events as ev, stream, tables as tb
from gupsim.engines.fast.contract import Kernel

PH_TOP, PH_SEND, PH_BLK_CHECK, PH_BLK_WOKE, PH_DRAIN, PH_DRAIN_RECV, PH_BLK_COND = range(7)
# per-rank integer and float state
CI_PHASE, CI_LEFT, CI_DEST, CI_BLK_PKT, CI_SENDS, CI_BLOCKED = range(6)
CI_COLS = 6
CF_DEBT, CF_BLK_START, CF_BLOCKED_S = range(3)
CF_COLS = 3
# cost parameters
K_GEN, K_UPD, K_SEND_REMOTE, K_RECV_UPD, K_UPD_LOCAL = range(5)
# algorithm integer parameters
A_CHUNKS, A_WIRE, A_PAYLOAD = range(3)


class State(NamedTuple):
    """The kernel's own arrays (its network and streams: :class:`gupsim.engines.fast.contract.Network`)."""

    #: [ci] int64 (ranks, ``CI_COLS``): phase, updates left, destination, blocked packet, sends, blocked sends.
    rank_ints: np.ndarray
    #: [cf] float64 (ranks, ``CF_COLS``): cycle debt, when the blocked send started, seconds blocked.
    rank_floats: np.ndarray
    #: float64 (``K_*``,): cycles to generate, update, send, receive and apply, update locally.
    costs: np.ndarray
    #: int64 (``A_*``,): a packet's chunks, wire bytes and payload bytes.
    packet_params: np.ndarray


@njit(cache=True, _nrt=False)
def _apply(ip, ctr, wt, at, t, now):
    ctr[tb.C_APPLIED] += 1
    n = ctr[tb.C_APPLIED]
    if n == ip[tb.I_MARK0]:
        wt[0] = t
    if n == ip[tb.I_MARK1]:
        wt[1] = t
    if n >= ctr[tb.C_NEXT_MARK]:
        c.cross_marks(ip, ctr, at, n, now)
    if n == ip[tb.I_TOTAL]:
        ctr[tb.C_DONE] = 1


@njit(cache=True, _nrt=False)
def _receive(r, now, ci, cf, cost, pk, pq, dq, rk, ip, fp, hh, ctr, wt, at):
    cycle_s = fp[tb.F_CYCLE_S]
    while rk[r, tb.RK_IN_HEAD] >= 0:
        p = c.inbox_pop(pk, rk, r)
        cf[r, CF_DEBT] += cost[K_RECV_UPD]
        debt_s = cf[r, CF_DEBT] * cycle_s
        cr.give_later(pk, pq, dq, rk, ip, hh, ctr, cr.rec_pool(pk, ip, p), pk[p, tb.PK_CHUNKS], now, debt_s)
        _apply(ip, ctr, wt, at, now + debt_s, now)
        c.free_packet(pk, ctr, p)


_flush = c.flush_cpu  # the CPU turns its cycle debt into time (core.py)


@njit(cache=True, _nrt=False)
def _cpu(r, now, s, net):
    ci, cf, cost, ai = s.rank_ints, s.rank_floats, s.costs, s.packet_params
    pk, pf, pq, dq, rk, ip = net.packets, net.packet_times, net.pools, net.deferred, net.ranks, net.int_params
    fp, hh, ctr, wt, ran, lay = net.float_params, net.queue, net.counters, net.window_times, net.streams, net.layout
    at = net.applied_times
    phase = ci[r, CI_PHASE]
    while True:
        if phase == PH_TOP:
            if ci[r, CI_LEFT] == 0:
                phase = PH_DRAIN
                continue
            _receive(r, now, ci, cf, cost, pk, pq, dq, rk, ip, fp, hh, ctr, wt, at)
            value = stream.next_ran(ran[r])
            ran[r] = value
            ci[r, CI_LEFT] -= 1
            dest = stream.owner_of(value, lay[0], lay[1], lay[2], lay[3])
            cf[r, CF_DEBT] += cost[K_GEN]
            if dest == r:
                cf[r, CF_DEBT] += cost[K_UPD_LOCAL]
                _apply(ip, ctr, wt, at, now + cf[r, CF_DEBT] * fp[tb.F_CYCLE_S], now)
                _flush(r, now, ci, cf, fp, hh, ctr, PH_TOP)
                return
            cf[r, CF_DEBT] += cost[K_SEND_REMOTE]
            ci[r, CI_DEST] = dest
            _flush(r, now, ci, cf, fp, hh, ctr, PH_SEND)
            return
        elif phase == PH_SEND:
            p = c.alloc_packet(pk, ctr)
            pk[p, tb.PK_SRC] = r
            pk[p, tb.PK_DST] = ci[r, CI_DEST]
            pk[p, tb.PK_CHUNKS] = ai[A_CHUNKS]
            pk[p, tb.PK_WIRE] = ai[A_WIRE]
            pk[p, tb.PK_PAYLOAD] = ai[A_PAYLOAD]
            pk[p, tb.PK_N] = 1
            ci[r, CI_SENDS] += 1
            inj = cr.inj_pool(ip, r, ci[r, CI_DEST])
            if cr.take(pq, dq, ctr, inj, ai[A_CHUNKS], 0):
                c.launch(pk, pf, ip, hh, ctr, p, now)
                phase = PH_TOP
                continue
            ci[r, CI_BLOCKED] += 1
            cf[r, CF_BLK_START] = now
            ci[r, CI_BLK_PKT] = p
            pk[p, tb.PK_STATE] = tb.W_INJ
            pk[p, tb.PK_BUBBLE] = 0
            rk[r, tb.RK_GRANTED] = 0
            cr.enqueue(pk, pq, dq, hh, ctr, inj, p, 0)
            phase = PH_BLK_CHECK
            continue
        elif phase == PH_BLK_CHECK:
            if rk[r, tb.RK_GRANTED]:
                c.launch(pk, pf, ip, hh, ctr, ci[r, CI_BLK_PKT], now)
                cf[r, CF_BLOCKED_S] += now - cf[r, CF_BLK_START]
                phase = PH_TOP
                continue
            ci[r, CI_PHASE] = PH_BLK_COND
            if rk[r, tb.RK_IN_HEAD] >= 0:
                ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))
            else:
                c.arm(rk, r, tb.WAKE_INBOX | tb.WAKE_GRANT)
            return
        elif phase == PH_BLK_COND:
            # SimPy's any_of([room, inbox]): the event that woke the CPU, then the condition's own event,
            # which resumes it; events scheduled for this instant in between run before it does
            ci[r, CI_PHASE] = PH_BLK_WOKE
            ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))
            return
        elif phase == PH_BLK_WOKE:
            _receive(r, now, ci, cf, cost, pk, pq, dq, rk, ip, fp, hh, ctr, wt, at)
            _flush(r, now, ci, cf, fp, hh, ctr, PH_BLK_CHECK)
            return
        elif phase == PH_DRAIN:
            ci[r, CI_PHASE] = PH_DRAIN_RECV
            if rk[r, tb.RK_IN_HEAD] >= 0:
                ev.push(hh, ctr, now, ev.NORMAL, ev.event(tb.EV_CPU, r))
            else:
                c.arm(rk, r, tb.WAKE_INBOX)
            return
        else:  # PH_DRAIN_RECV
            _receive(r, now, ci, cf, cost, pk, pq, dq, rk, ip, fp, hh, ctr, wt, at)
            _flush(r, now, ci, cf, fp, hh, ctr, PH_DRAIN)
            return


@njit(cache=True, nogil=True, _nrt=False)
def _loop(s, net, now):
    """Process events until done (True), or until the batch ends (a table must grow, or the driver pauses: False)."""
    hh, ctr = net.queue, net.counters
    while ctr[tb.C_HEAP_N] > 0 and ctr[tb.C_DONE] == 0:
        if ev.needs_room(hh, ctr):
            return now, False
        if ev.past_stop(hh, ctr):
            return now, True
        now, payload = ev.pop(hh, ctr)
        c.prefetch_next(net)
        ctr[tb.C_EVENTS] += 1
        kind = ev.event_kind(payload)
        a = ev.event_arg(payload)
        c.enter(net, kind, a)
        if kind == tb.EV_CPU or (kind == tb.EV_WAKE and c.woken(net, a)):
            _cpu(a, now, s, net)
        elif kind == tb.EV_WAKE:
            pass  # stale: the any_of it belonged to has fired
        else:
            c.network_event(kind, a, net, now)
        if ev.batch_over(ctr):
            return now, False
    return now, True


def prepare(sim, options) -> dict:
    """The kernel's arrays, by :class:`State` field."""
    cost_model, net = sim.cost, sim.net_cfg
    payload = sim.algorithm.packet_payload_bytes
    chunks = max(1, -(-payload // net.chunk_bytes))
    wire = options.wire_bytes if options.wire_bytes is not None else chunks * net.chunk_bytes + net.wire_overhead_bytes
    r = sim.num_ranks
    ci = np.zeros((r, CI_COLS), dtype=np.int64)
    ci[:, CI_PHASE] = PH_TOP
    ci[:, CI_LEFT] = sim.run.updates_per_process
    cost = np.array([
        cost_model.generate,
        cost_model.update,
        cost_model.raw_send(payload) + options.remote_overhead_cycles,
        cost_model.raw_recv(payload) + cost_model.update,
        cost_model.update + options.local_overhead_cycles,
    ])
    return {
        "rank_ints": ci, "rank_floats": np.zeros((r, CF_COLS)), "costs": cost,
        "packet_params": np.array([chunks, wire, payload], dtype=np.int64),
    }


def counters(state: dict) -> dict:
    """The reference class's counters (:meth:`gupsim.algorithms.one_packet.OnePacket.counters`) at the end."""
    ci, cf = state["rank_ints"], state["rank_floats"]
    return {"send_tests": int(ci[:, CI_SENDS].sum()), "send_tests_blocked": int(ci[:, CI_BLOCKED].sum()),
            "blocked_s": float(cf[:, CF_BLOCKED_S].sum())}


def ended(state: dict) -> np.ndarray:
    """Ranks whose process has returned: none (after its stream a process keeps reading, as the reference's)."""
    return np.zeros(len(state["rank_ints"]), dtype=bool)


def updates_left(state: dict) -> np.ndarray:
    return state["rank_ints"][:, CI_LEFT]


def window_counters(state: dict) -> list[dict]:
    return [{}, {}]


def error_message(code: int, state: dict) -> str:
    return f"one-packet fast kernel: internal error {code}"


#: Peak RSS above the fixed part, per process (docs/performance.md, "Memory"): 2.6-4.5 KB on short runs up to
#: 131,072 processes, 12.5 KB on a long 16x16x16 run whose buffers fill up.
KERNEL = Kernel(name="one-packet", state=State, loop=_loop, prepare=prepare, counters=counters,
                window_counters=window_counters, ended=ended, updates_left=updates_left, error_message=error_message,
                per_rank_bytes=16_000,
                options=frozenset({"payload_bytes", "wire_bytes", "local_overhead_cycles", "remote_overhead_cycles"}))
