"""The fast engine's event heap and queue (gupsim.engines.fast.events): the canonical event order.

The heap orders events by (time, phase, entity, the entity's own sequence
number): :mod:`gupsim.engines.order`.  The bare heap must
pop in exactly that order against a sorted list, with several entities
scheduling at equal times, and the kernels' queue (a calendar of time buckets
in front of the heap) in exactly the bare heap's order, ties included.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.engines.fast import events as ev, tables as tb

#: A few distinct delays, as in the network (many events at equal times), and zero.
DELAYS = [0.0, 0.0, 1e-9, 1.5e-9, 2.5e-9]


ENTITIES = 4


def _drain(ops, delays=DELAYS):
    """Run ``ops`` (push with (delay index, phase, entity) or pop) against the bare heap; return what was popped."""
    hh, ctr = ev.new_heap(len(ops) + 8), np.zeros(tb.N_COUNTERS, dtype=np.int64)
    seqs = np.zeros(ENTITIES, dtype=np.int64)
    now, out, payload = 0.0, [], 0
    for op in ops:
        if op is None:
            if ctr[tb.C_HEAP_N]:
                now, p = ev.heap_pop(hh, ctr)
                out.append((now, p))
        else:
            ctr[tb.C_ACTIVE] = op[2]
            ev.heap_push(hh, ctr, seqs, now + delays[op[0]], op[1], payload)
            payload += 1
    while ctr[tb.C_HEAP_N]:
        out.append(ev.heap_pop(hh, ctr))
    return out


def _reference(ops):
    """The same operations on a sorted list keyed (time, phase, entity, the entity's sequence number)."""
    pending, out, now, seqs, payload = [], [], 0.0, [0] * ENTITIES, 0
    for op in ops:
        if op is None:
            if pending:
                pending.sort()
                now, _, _, _, p = pending.pop(0)
                out.append((now, p))
        else:
            pending.append((now + DELAYS[op[0]], op[1], op[2], seqs[op[2]], payload))
            seqs[op[2]] += 1
            payload += 1
    return out + [(t, p) for t, _, _, _, p in sorted(pending)]


def _ops(delays):
    push = st.tuples(st.integers(0, len(delays) - 1), st.integers(0, 1), st.integers(0, ENTITIES - 1))
    return st.lists(st.one_of(st.none(), push), max_size=300)


@settings(max_examples=60, deadline=None)
@given(_ops(DELAYS))
def test_the_heap_pops_in_the_canonical_order(ops):
    assert _drain(ops) == _reference(ops)


#: Delays for the calendar queue: equal times, a bucket's width apart, and beyond its slots (overflow).
QUEUE_DELAYS = [0.0, 0.0, 1e-9, 1.5e-9, 2.5e-9, 3e-9, 7e-9, 40e-9, 1e-6]
QUEUE_OPS = _ops(QUEUE_DELAYS)


def _drain_queue(ops, bucket_s, slots):
    """``ops`` against the kernels' queue (buckets ``bucket_s`` wide, ``slots`` calendar slots); return what was popped."""
    ctr = np.zeros(tb.N_COUNTERS, dtype=np.int64)
    q = ev.new_queue(len(ops) + 8, ctr, bucket_s, slots, entities=ENTITIES)
    now, out, payload = 0.0, [], 0
    for op in ops:
        if op is None:
            if ctr[tb.C_HEAP_N]:
                now, p = ev.pop(q, ctr)
                out.append((now, p))
        else:
            ctr[tb.C_ACTIVE] = op[2]
            ev.push(q, ctr, now + QUEUE_DELAYS[op[0]], op[1], payload)
            payload += 1
    while ctr[tb.C_HEAP_N]:
        out.append(ev.pop(q, ctr))
    assert ctr[tb.C_FAR_N] == 0  # the heap is empty only when the whole queue is
    return out


@settings(max_examples=80, deadline=None)
@given(QUEUE_OPS, st.sampled_from([1e-9, 0.7e-9, 2e-9, 1e-10]), st.sampled_from([2, 4, 64]))
def test_the_calendar_queue_pops_in_the_heaps_order(ops, bucket_s, slots):
    """Equal times, both phases, several entities, buckets skipped, events beyond the calendar's slots."""
    assert _drain_queue(ops, bucket_s, slots) == _drain(ops, QUEUE_DELAYS)


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
