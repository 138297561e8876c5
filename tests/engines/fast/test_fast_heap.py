"""The fast engine's event heap and queue (gupsim.engines.fast.events): SimPy's order, and renumbering that changes nothing.

The heap orders events by (time, priority, order of scheduling), as SimPy
does; its entries pack the priority, a 30-bit sequence number and the payload
into one key, and renumber the pending events in place before the sequence
number overflows.  These tests force that renumbering every few events.  The
kernels' queue (a calendar of time buckets in front of the heap) must pop in
exactly the bare heap's order, ties at equal times included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.config import load_machine
from gupsim.engines.fast import credits as cr, events as ev, tables as tb
from gupsim.engines.run import make_run_config, simulate

#: A few distinct delays, as in the network (many events at equal times), and zero.
DELAYS = [0.0, 0.0, 1e-9, 1.5e-9, 2.5e-9]


def _drain(ops, seq_limit, delays=DELAYS):
    """Run ``ops`` (push with (delay index, priority) or pop) against the bare heap; return what was popped."""
    hh, ctr = ev.new_heap(len(ops) + 8), np.zeros(tb.N_COUNTERS, dtype=np.int64)
    ctr[tb.C_SEQ_LIMIT] = seq_limit
    now, out, payload = 0.0, [], 0
    for op in ops:
        if op is None:
            if ctr[tb.C_HEAP_N]:
                now, p = ev.heap_pop(hh, ctr)
                out.append((now, p))
        else:
            ev.heap_push(hh, ctr, now + delays[op[0]], op[1], payload)
            payload += 1
    while ctr[tb.C_HEAP_N]:
        out.append(ev.heap_pop(hh, ctr))
    return out


def _reference(ops):
    """The same operations on a sorted list keyed (time, priority, sequence): SimPy's order."""
    pending, out, now, seq = [], [], 0.0, 0
    for op in ops:
        if op is None:
            if pending:
                pending.sort()
                now, _, _, p = pending.pop(0)
                out.append((now, p))
        else:
            pending.append((now + DELAYS[op[0]], op[1], seq, seq))
            seq += 1
    return out + [(t, p) for t, _, _, p in sorted(pending)]


OPS = st.lists(st.one_of(st.none(), st.tuples(st.integers(0, len(DELAYS) - 1), st.integers(0, 1))), max_size=300)


@settings(max_examples=60, deadline=None)
@given(OPS, st.integers(min_value=1, max_value=40))
def test_the_heap_pops_in_simpy_order_with_and_without_renumbering(ops, limit):
    expected = _reference(ops)
    assert _drain(ops, ev.SEQ_LIMIT) == expected
    assert _drain(ops, limit) == expected  # renumbered every few pushes


@pytest.mark.parametrize("algorithm", ["one-packet", "routed"])
def test_renumbering_the_heap_leaves_a_run_unchanged(algorithm, monkeypatch):
    def run():
        machine = load_machine("bgl", {"network.topology": "torus"})
        cfg = make_run_config(machine=machine, shape="4x4x2", algorithm=algorithm, updates_per_process=300,
                              engine="fast")
        return simulate(cfg)[1]

    plain = run()
    monkeypatch.setattr(ev, "SEQ_LIMIT", 1000)  # renumbered many times in the run
    renumbered = run()
    volatile = {"wall_s", "peak_rss_mb", "events_per_s", "compile_s"}
    assert plain["events"] > 10 * 1000
    assert {k: v for k, v in plain.items() if k not in volatile} == \
        {k: v for k, v in renumbered.items() if k not in volatile}


#: Delays for the calendar queue: equal times, a bucket's width apart, and beyond its slots (overflow).
QUEUE_DELAYS = [0.0, 0.0, 1e-9, 1.5e-9, 2.5e-9, 3e-9, 7e-9, 40e-9, 1e-6]
QUEUE_OPS = st.lists(st.one_of(st.none(), st.tuples(st.integers(0, len(QUEUE_DELAYS) - 1), st.integers(0, 1))),
                     max_size=400)


def _drain_queue(ops, bucket_s, slots, renumber_every=0):
    """``ops`` against the kernels' queue (buckets ``bucket_s`` wide, ``slots`` calendar slots), renumbering
    (:func:`renumber_all`, no pools) every ``renumber_every`` pops; return what was popped."""
    ctr = np.zeros(tb.N_COUNTERS, dtype=np.int64)
    q = ev.new_queue(len(ops) + 8, ctr, bucket_s, slots)
    pq = np.zeros((1, tb.PQ_COLS), dtype=np.int32)
    dq = np.empty((1, 1, 2), dtype=np.int64)
    now, out, payload = 0.0, [], 0

    def pop():
        nonlocal q
        t, p = ev.pop(q, ctr)
        out.append((t, p))
        if renumber_every and len(out) % renumber_every == 0:
            q = cr.renumber_all(q, ctr, pq, dq)
        return t

    for op in ops:
        if op is None:
            if ctr[tb.C_HEAP_N]:
                now = pop()
        else:
            ev.push(q, ctr, now + QUEUE_DELAYS[op[0]], op[1], payload)
            payload += 1
    while ctr[tb.C_HEAP_N]:
        pop()
    assert ctr[tb.C_FAR_N] == 0  # the heap is empty only when the whole queue is
    return out


@settings(max_examples=80, deadline=None)
@given(QUEUE_OPS, st.sampled_from([1e-9, 0.7e-9, 2e-9, 1e-10]), st.sampled_from([2, 4, 64]),
       st.sampled_from([0, 1, 7]))
def test_the_calendar_queue_pops_in_the_heaps_order(ops, bucket_s, slots, renumber_every):
    """Equal times, both priorities, buckets skipped, events beyond the calendar's slots, and renumbering."""
    expected = _drain(ops, ev.SEQ_LIMIT, QUEUE_DELAYS)
    assert _drain_queue(ops, bucket_s, slots, renumber_every) == expected


def test_the_overflow_is_walked_once_per_calendar_turn_not_once_per_bucket():
    """Events beyond the calendar's slots wait in one overflow list; the calendar redistributes it when it
    reaches its first bucket, so an event ``d`` buckets ahead is walked about ``d / slots`` times.  (Walking
    the list as soon as its first bucket came within reach walked it again at nearly every bucket while it
    was dense just beyond the slots: the 64-rack UPC run slowed from 0.43 to 0.12 M events per second.)"""
    slots, n = 16, 2000
    ctr = np.zeros(tb.N_COUNTERS, dtype=np.int64)
    q = ev.new_queue(n + 8, ctr, 1e-9, slots)
    ev.push(q, ctr, 0.0, ev.NORMAL, 0)
    for i in range(1, n):  # one event per bucket, all but the first beyond the slots
        ev.push(q, ctr, (i + 0.5) * 1e-9, ev.NORMAL, i)
    popped = [ev.pop(q, ctr)[1] for _ in range(n)]
    assert popped == list(range(n))
    assert ctr[tb.C_REFILED] <= n * (n // slots + 2) // 2  # an event i buckets ahead: at most i / slots + 1 walks
