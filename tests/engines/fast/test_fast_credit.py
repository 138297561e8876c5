"""Deferred credit returns in the fast engine (gupsim.engines.fast.credits): kept beside the pool, the same events.

A credit return that nobody waits for is kept beside its pool and applied when
the pool is next read; it goes back into the heap, at its own key, when a
packet starts waiting on the pool or a CPU watches its FIFO.  With
``DEFER_SLOTS = 0`` nothing is deferred and every return is a heap event, as
before the change, so these tests compare whole records, ``events`` included
(``tests/test_fast.py`` cannot: SimPy counts its bookkeeping events too), and
every link counter.  The cases are contended on purpose (slow links, small
FIFOs, adaptive routing, virtual-node mode) so that packets wait on pools
whose returns were deferred; each test checks that the path it is about ran.
"""

from __future__ import annotations

import numpy as np
import pytest

from gupsim.config import load_machine
from gupsim.engines.fast import credits as cr, events as ev, tables as tb
from gupsim.app.reporting import model_fields
from gupsim.engines.run import make_run_config, simulate
from tests.engines.fast.conftest import assert_engines_agree

SLOW = {"network.link_bytes_per_s": 2e7}
CONTENDED = [
    # (algorithm, shape, updates per process, machine overrides, options)
    ("one-packet", "4x2x2", 300, {**SLOW, "network.topology": "torus", "network.routing": "adaptive",
                                  "cpu.processes_per_node": 2}, {}),
    ("one-packet", "4x4x2", 300, {**SLOW, "network.topology": "torus", "network.injection_fifo_chunks": 8,
                                  "network.reception_fifo_chunks": 8}, {}),
    ("routed", "4x2x2", 600, {**SLOW, "network.topology": "torus", "network.routing": "adaptive",
                              "cpu.processes_per_node": 2}, {}),
    ("routed", "4x4x2", 600, {**SLOW, "network.topology": "torus", "network.injection_fifo_chunks": 16}, {}),
    # pool order: with fifo (bgl.yaml) this case's packets queue behind one another, never on a pool with returns kept
    ("baseline", "4x2x2", 400, {**SLOW, "network.topology": "torus", "network.routing": "adaptive",
                                "cpu.processes_per_node": 2, "network.buffer_order": "pool"}, {}),
    # FIFOs per dimension: a routed CPU watches several injection FIFOs at once
    ("routed", "4x4x2", 600, {**SLOW, "network.topology": "torus", "network.fifos": "per-dimension",
                              "cpu.processes_per_node": 2}, {}),
]
IDS = [f"{a}-{s}-{'-'.join(k.split('.')[-1] for k in m)}" for a, s, _, m, _ in CONTENDED]


def _run(monkeypatch, case, slots=None):
    algorithm, shape, updates, sets, options = case
    with monkeypatch.context() as m:
        if slots is not None:
            m.setattr(cr, "DEFER_SLOTS", slots)
        return simulate(make_run_config(machine=load_machine("bgl", sets), shape=shape, algorithm=algorithm,
                                        updates_per_process=updates, algorithm_options=options, engine="fast"))


def _assert_same(a, b):
    (sim_a, rec_a), (sim_b, rec_b) = a, b
    assert model_fields(rec_a) == model_fields(rec_b)
    fa, fb = sim_a.outcome().links, sim_b.outcome().links
    for column in ("bytes", "busy_s", "blocked_s"):
        np.testing.assert_array_equal(fa[column], fb[column])


@pytest.mark.parametrize("case", CONTENDED, ids=IDS)
def test_deferring_returns_leaves_every_event_in_place(case, monkeypatch):
    heap_only = _run(monkeypatch, case, slots=0)
    deferred = _run(monkeypatch, case)
    _assert_same(heap_only, deferred)
    q0, q = heap_only[0].queue_stats, deferred[0].queue_stats
    assert q0["deferred_applied"] == q0["deferred_rescheduled"] == 0
    assert q["deferred_applied"] > 0  # returns were applied beside their pools ...
    assert q["deferred_rescheduled"] > 0  # ... and packets did start waiting on pools with returns kept


@pytest.mark.parametrize("case", CONTENDED[:3], ids=IDS[:3])
def test_full_slots_send_returns_to_the_heap_and_change_nothing(case, monkeypatch):
    one_slot = _run(monkeypatch, case, slots=1)
    assert one_slot[0].queue_stats["deferred_full"] > 0
    _assert_same(_run(monkeypatch, case, slots=0), one_slot)


def test_contended_adaptive_virtual_node_run_is_simpys_bit_for_bit():
    """The deferred path under contention against the reference itself (not only against heap-only)."""
    algorithm, shape, updates, sets, options = CONTENDED[0]
    fast_sim, fast = simulate(make_run_config(machine=load_machine("bgl", sets), shape=shape, algorithm=algorithm,
                                              updates_per_process=updates, engine="fast"))
    ref_sim, ref = simulate(make_run_config(machine=load_machine("bgl", sets), shape=shape, algorithm=algorithm,
                                            updates_per_process=updates, engine="simpy"))
    assert fast_sim.queue_stats["deferred_rescheduled"] > 0
    assert_engines_agree(fast_sim, fast, ref_sim, ref)


def test_settling_orders_returns_by_the_latest_key_popped():
    """An URGENT event scheduled for the current instant pops after NORMAL events of that instant: a return
    kept with a key between the two was popped already, although its key is above the current event's.
    (Every event here is scheduled by entity 0, so keys order as the sequence numbers.)"""
    npools = 1
    ctr = np.zeros(tb.N_COUNTERS, dtype=np.int64)
    hh = ev.new_queue(64, ctr)
    pq = np.full((npools, tb.PQ_COLS), -1, dtype=np.int32)
    pq[:, tb.PQ_DEFERRED] = pq[:, tb.PQ_FREE] = 0
    dq = np.empty((npools, 2, 3), dtype=np.int64)
    rk = np.zeros((1, tb.RK_NET_COLS), dtype=np.int32)
    ip = np.zeros(tb.N_IPARAMS, dtype=np.int64)
    ip[tb.I_POOL_INJ], ip[tb.I_NRANKS] = 10, 1  # pool 0 is not an injection FIFO
    pk = np.zeros((1, tb.PK_COLS), dtype=np.int32)
    ev.push(hh, ctr, 1.0, ev.NORMAL, ev.event(tb.EV_CPU, 0))  # seq 0: a NORMAL event at t=1
    cr.give_later(pk, pq, dq, rk, ip, hh, ctr, 0, 3, 0.0, 1.0)  # seq 1: 3 chunks return at t=1
    ev.push(hh, ctr, 1.0, ev.NORMAL, ev.event(tb.EV_CPU, 1))  # seq 2: another NORMAL event at t=1
    assert pq[0, tb.PQ_DEFERRED] == 1 and ctr[tb.C_HEAP_N] == 2
    ev.pop(hh, ctr)  # seq 0
    cr.settle(pq, dq, ctr, 0)
    assert pq[0, tb.PQ_FREE] == 0  # the return (seq 1) is still due
    ev.pop(hh, ctr)  # seq 2: the return was popped before it in the heap-only order
    ev.push(hh, ctr, 1.0, ev.URGENT, ev.event(tb.EV_CPU, 2))  # seq 3, URGENT at t=1: its key is below the return's
    t, payload = ev.pop(hh, ctr)
    assert (t, ev.event_arg(payload)) == (1.0, 2)
    cr.settle(pq, dq, ctr, 0)
    assert pq[0, tb.PQ_FREE] == 3 and pq[0, tb.PQ_DEFERRED] == 0  # applied: it was popped before seq 2 and seq 3
