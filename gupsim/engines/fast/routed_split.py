"""Compiled ``routed-split``: the model of :mod:`gupsim.algorithms.routed_split` (a node's cores split into
routers and workers, after seed 000 §4.2-4.3 and §6.2), on the fast engine.

Same model, same costs, spent in the same order as the SimPy class.  A node's last ``router_cores`` ranks are
routers: they run :mod:`gupsim.engines.fast.routed`'s Figure-1 loop (its send, receive, wait and finish steps,
called here, not copied) on node coordinates only, with two differences, both the reference's:

* an update that reaches its owner's node is handed to worker ``owner_core mod W`` (``handoff_cycles``)
  instead of applied, and that worker is poked;
* the "form" step drains the hand-off queue (``handoff_cycles`` per update) while no bucket is full, then
  pokes every worker of the node (there is room in the queue again); the last partial buckets are flushed
  only once the queue is empty and the node's streams are done.  A waiting router counts no spun polls.

The first ``W`` ranks of a node are workers.  A worker applies what the routers handed it, then takes the
next update of the node's ``P`` streams in turn (a pointer per node), applies it if the node owns it, else
writes it into its router's queue while the queue has room.  The updates handed to a worker are only
counted: the fast engine keeps no table, and each costs the same (``handoff_cycles + t_u``).

Waking.  The reference's workers sleep on an event a poke succeeds: one event, then the worker runs.  Its
routers wait on ``any_of`` (inbox, a poke, room in a full bucket's FIFO): a poke's event, then the
condition's, as :func:`gupsim.engines.fast.routed.run_cpu`'s two steps.  Both wait with ``RK_WAIT`` set, so
a poke wakes a rank exactly when the reference's would have an effect; a poke to a rank that is not
waiting is a no-op in both engines.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from gupsim.engines.fast import core as c, credits as cr, events as ev, routed as rt, stream, tables as tb
from gupsim.engines.fast.contract import Kernel

# per rank
SI_INQ_HEAD, SI_INQ_LEN, SI_BOX = range(3)
SI_COLS = 3
# integer parameters after routed's (rt.A_*: 0-12)
A_WORKERS, A_ROUTER_CORES = 13, 14
# cost parameters after routed's (rt.K_*: 0-3)
K_HANDOFF, K_HANDOFF_UPDATE = 4, 5
# algorithm counter after routed's (rt.AC_*: 0-5)
AC_HANDOFFS = 6

#: routed's arrays, then the hand-off queues, the worker's boxes and the node's stream pointer.
State = NamedTuple("State", [(name, np.ndarray) for name in rt.State._fields] + [
    ("inq_values", np.ndarray),    # uint64 (ranks, capacity): each router's hand-off queue, a ring
    ("split_ints", np.ndarray),    # int64 (ranks, SI_COLS): queue head and length; updates handed to a worker
    ("next_stream", np.ndarray),   # int64 (nodes,): the core whose stream a node's workers take from next
])


@njit(cache=True, inline="always", _nrt=False)
def _poke(x, now, net):
    """The reference's ``_poke``: wake rank ``x`` if it waits (a worker's sleep, a router's any_of)."""
    if net.ranks[x, tb.RK_WAIT] != 0:  # the sleep's event (modelled as every event of the any_of at once)
        cr.wake(net.ranks, net.queue, net.counters, x, now, net.ranks[x, tb.RK_WAIT])


@njit(cache=True, inline="always", _nrt=False)
def _route_one(r, value, now, s, net):
    """The router's routeUpdates for one update: to a worker of this node, or into its next router's
    bucket; False if that bucket's dimension has a full bucket."""
    lay, ai, ppn = net.layout, s.params, net.int_params[tb.I_PPN]
    owner = stream.owner_of(value, lay[0], lay[1], lay[2], lay[3])
    node = r // ppn
    if owner // ppn == node:
        worker = node * ppn + (owner % ppn) % ai[A_WORKERS]
        s.rank_debt[r] += s.costs[K_HANDOFF]
        s.split_ints[worker, SI_BOX] += 1
        _poke(worker, now, net)
        return True
    d = rt.first_dim(r, owner, s.rank_coords)
    if s.dims[r, d, rt.RD_FULL] >= 0:
        return False
    rt.bucket_update(r, d, owner, value, s)
    return True


@njit(cache=True, inline="always", _nrt=False)
def _node_generating(node, s, net):
    ppn = net.int_params[tb.I_PPN]
    for x in range(node * ppn, (node + 1) * ppn):
        if s.rank_ints[x, rt.CI_LEFT] > 0:
            return True
    return False


@njit(cache=True, inline="always", _nrt=False)
def _router_work(r, now, s, net, progressed):
    """The router's own step: drain the hand-off queue while no bucket is full, else finish."""
    si, iv, ci = s.split_ints, s.inq_values, s.rank_ints
    ppn = net.int_params[tb.I_PPN]
    node = r // ppn
    if si[r, SI_INQ_LEN] > 0 and rt.no_full_bucket(r, s):
        # one wake-up serves every waiting update
        while si[r, SI_INQ_LEN] > 0 and rt.no_full_bucket(r, s):
            s.rank_debt[r] += s.costs[K_HANDOFF]
            value = iv[r, si[r, SI_INQ_HEAD]]
            si[r, SI_INQ_HEAD] = (si[r, SI_INQ_HEAD] + 1) % iv.shape[1]
            si[r, SI_INQ_LEN] -= 1
            ci[r, rt.CI_PENDING] -= 1
            _route_one(r, value, now, s, net)
        for w in range(node * ppn, node * ppn + s.params[A_WORKERS]):
            _poke(w, now, net)  # room in the queue again
        return True
    if (not progressed and si[r, SI_INQ_LEN] == 0 and not _node_generating(node, s, net)
            and rt.nothing_received(r, s)):
        return rt.flush_partial(r, now, s, net)
    return progressed


@njit(cache=True, _nrt=False)
def _take(node, s, net):
    """The rank whose stream gives the node's next update, in turn; -1 when all are done."""
    ppn, ns = net.int_params[tb.I_PPN], s.next_stream
    for _ in range(ppn):
        x = node * ppn + ns[node]
        ns[node] = (ns[node] + 1) % ppn
        if s.rank_ints[x, rt.CI_LEFT] > 0:
            return x
    return -1


@njit(cache=True, _nrt=False)
def _worker_pass(w, now, s, net):
    """One pass of the worker's loop (apply what was handed over, take one update); True if it progressed."""
    ci, cf, si, ai, ppn = s.rank_ints, s.rank_debt, s.split_ints, s.params, net.int_params[tb.I_PPN]
    node, core = w // ppn, w % ppn
    router = node * ppn + ai[A_WORKERS] + core % ai[A_ROUTER_CORES]
    progressed = si[w, SI_BOX] > 0
    for _ in range(si[w, SI_BOX]):
        cf[w] += s.costs[K_HANDOFF_UPDATE]
        rt.apply_update(w, now, s, net)
    si[w, SI_BOX] = 0
    if si[router, SI_INQ_LEN] < ai[rt.A_CAP]:
        x = _take(node, s, net)
        if x >= 0:
            value = stream.next_ran(net.streams[x])
            net.streams[x] = value
            ci[x, rt.CI_LEFT] -= 1
            cf[w] += s.costs[rt.K_GEN]
            lay = net.layout
            if stream.owner_of(value, lay[0], lay[1], lay[2], lay[3]) // ppn == node:
                cf[w] += s.costs[rt.K_UPD]
                rt.apply_update(w, now, s, net)
            else:
                cf[w] += s.costs[K_HANDOFF]
                iv = s.inq_values
                iv[router, (si[router, SI_INQ_HEAD] + si[router, SI_INQ_LEN]) % iv.shape[1]] = value
                si[router, SI_INQ_LEN] += 1
                ci[router, rt.CI_PENDING] += 1
                s.alg_counters[AC_HANDOFFS] += 1
                _poke(router, now, net)
            progressed = True
    return progressed


@njit(cache=True, _nrt=False)
def _worker_cpu(w, now, s, net):
    ci, cf = s.rank_ints, s.rank_debt
    resumed = ci[w, rt.CI_PHASE] == rt.PH_AFTER_FLUSH
    ci[w, rt.CI_PHASE] = rt.PH_LOOP
    while True:
        if resumed:
            resumed = False
            progressed = ci[w, rt.CI_PROGRESSED] == 1
        else:
            progressed = _worker_pass(w, now, s, net)
            if cf[w] != 0.0:
                cycles = cf[w]
                cf[w] = 0.0
                ci[w, rt.CI_PHASE] = rt.PH_AFTER_FLUSH
                ci[w, rt.CI_PROGRESSED] = 1 if progressed else 0
                ev.push(net.queue, net.counters, now + cycles * net.float_params[tb.F_CYCLE_S], ev.NORMAL, ev.event(tb.EV_CPU, w))
                return
        if not progressed:
            ppn = net.int_params[tb.I_PPN]
            node = w // ppn
            if not _node_generating(node, s, net):
                # the router may now flush its partial buckets
                _poke(node * ppn + s.params[A_WORKERS] + (w % ppn) % s.params[A_ROUTER_CORES], now, net)
            # asleep until poked (nothing arrives in a worker's inbox: the inbox bit marks the sleep)
            c.arm(net.ranks, w, tb.WAKE_INBOX)
            return


@njit(cache=True, _nrt=False)
def _cpu(r, now, s, net):
    if r % net.int_params[tb.I_PPN] < s.params[A_WORKERS]:
        _worker_cpu(r, now, s, net)
    else:
        rt.run_cpu(r, now, s, net, _route_one, _router_work, False)


@njit(cache=True, nogil=True, _nrt=False)
def _loop(s, net, now):
    return rt.event_loop(s, net, now, _cpu)


def prepare(sim, options) -> dict:
    """routed's arrays on node coordinates (the algorithm's lengths), then the hand-off state."""
    alg, cm = sim.algorithm, sim.cost
    a = rt.prepare(sim, options)
    a["params"][A_WORKERS], a["params"][A_ROUTER_CORES] = alg.workers, options.router_cores
    a["costs"] = np.concatenate([a["costs"], [options.handoff_cycles, options.handoff_cycles + cm.update]])
    R = sim.num_ranks
    a["inq_values"] = np.zeros((R, alg.capacity), dtype=np.uint64)
    a["split_ints"] = np.zeros((R, SI_COLS), dtype=np.int64)
    a["next_stream"] = np.zeros(sim.topology.num_nodes, dtype=np.int64)
    return a


def counters(state: dict) -> dict:
    """The reference class's counters (:meth:`gupsim.algorithms.routed_split.RoutedSplit.counters`) at the end."""
    return rt.counters(state) | {"handoffs": int(state["alg_counters"][AC_HANDOFFS])}


def error_message(code: int, state: dict) -> str:
    return f"routed-split: a router holds more than {rt.MAX_PENDING} pending updates (HPCC's limit)"


#: routed's figure per process, and the hand-off queue and counters (a few hundred bytes).
KERNEL = Kernel(name="routed-split", state=State, loop=_loop, prepare=prepare, counters=counters,
                window_counters=rt.window_counters, ended=rt.ended, updates_left=rt.updates_left,
                error_message=error_message, per_rank_bytes=49_000,
                options=frozenset({"software_header_bytes", "bucket_capacity", "router_cores", "handoff_cycles"}),
                packet_arrays=("packet_updates",))
