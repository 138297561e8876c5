"""What a partitioned fast engine would see: lookahead, events per window per part, events crossing parts.

Issue 45 asks for a fast engine split into parts (slabs of the torus, one per thread) that run in
conservative windows no wider than the model's lookahead and exchange the events that cross parts at
window ends.  Whether that pays depends on numbers the serial engine already has but never reports; this
script measures them from an ordinary serial run of ``routed``, without touching the engine's hot path:

1. it runs the fast kernel through its own copy of ``gupsim.engines.fast.routed.event_loop`` that, per event
   popped, records its time, its key (the canonical order's ``(phase, entity, seq)``:
   :mod:`gupsim.engines.fast.events`), its kind, the entity it runs as (``C_ACTIVE`` after ``enter``) and the
   range of sequence numbers that entity handed out while it ran.  The loop is the kernel's own but for
   the prefetches (hints that change nothing) and the recording;
2. offline, each event's *cause* is found: the event during which its scheduling entity handed out the
   event's sequence number.  An edge cause -> event crosses nodes when they run on different nodes; its
   delay is the event's time minus the cause's.  The smallest delay of a cross-node edge is the lookahead
   the model really has (by event kind: a hop, a credit return, a grant);
3. for slab partitions into P parts (along the longest dimension) and windows of width W, it counts the
   events each part runs in each window and the edges whose cause and event are in different parts;
4. it times the serial engine's cost per event (a plain ``simulate``) and a window's synchronisation
   (a barrier of P tasks on ``concurrent.futures`` threads, and a Numba ``prange`` over P parts), and feeds
   all of it to the speedup model of docs/design/partitioned-engine.md.

Memory: every popped event is kept (48 bytes, and the record doubles as it grows), so a run of 10^8 events
needs more than 10 GB; BG/P 16x16x32 in virtual-node mode at 64 updates per process passed 13.7 GB and was
stopped.

Credit returns kept beside their pool (:mod:`gupsim.engines.fast.credits`, "Deferred credit returns") are
settled without being popped, so they are not among the recorded events; their delay is at least one
serialisation (``start + serial - now``), which the report states from the run's parameters.

Run::

    nice .venv/bin/python benchmarks/partition_profile.py --case bgl-16 --updates 256
    nice .venv/bin/python benchmarks/partition_profile.py --case bgp-vn-8 --updates 256 --json /tmp/p.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange

from gupsim.config.loading import load_machine
from gupsim.engines.fast import core as c, credits as cr, driver, events as ev, routed, tables as tb
from gupsim.engines.fast.contract import QUEUE
from gupsim.engines.fast.engine import FastSimulation
from gupsim.engines.order import MAX_ENTITIES, SEQ_BITS, SEQ_MASK
from gupsim.engines.run import simulate
from gupsim.model.run_config import RunConfig
from gupsim.topology.base import parse_shape

#: The cases of issue 45's measurement: name -> (machine, shape, machine overrides).
CASES = {
    "bgl-16": ("bgl", "16x16x16", {}),
    "bgl-32": ("bgl", "32x32x16", {}),
    "bgp-vn-8": ("bgp", "8x8x8", {"cpu.processes_per_node": 4}),
    "bgp-vn-16": ("bgp", "16x16x32", {"cpu.processes_per_node": 4}),
}
PARTS = (2, 4, 16)
#: Recorded columns per event: time bits, key, kind, entity run as, first and one-past-last seq it handed out.
R_T, R_KEY, R_KIND, R_EXE, R_LO, R_HI = range(6)


@njit(cache=True, nogil=True, _nrt=False)
def _recording_loop(s, net, now, rec, n):
    """``routed.event_loop`` with ``routed._cpu``, recording each event in ``rec`` from row ``n``; returns
    (now, finished, rows).  Returns unfinished when ``rec`` is full too (the caller grows it)."""
    hh, ctr = net.queue, net.counters
    seqs = hh[3]
    while ctr[tb.C_HEAP_N] > 0 and ctr[tb.C_DONE] == 0 and ctr[tb.C_ERROR] == 0:
        if ev.needs_room(hh, ctr) or n >= rec.shape[0]:
            return now, False, n
        if ev.past_stop(hh, ctr):
            return now, True, n
        key = hh[0][0, 1]
        now, payload = ev.pop(hh, ctr)
        ctr[tb.C_EVENTS] += 1
        kind = ev.event_kind(payload)
        a = ev.event_arg(payload)
        c.enter(net, kind, a)
        exe = ctr[tb.C_ACTIVE]
        rec[n, R_T], rec[n, R_KEY], rec[n, R_KIND], rec[n, R_EXE], rec[n, R_LO] = \
            tb.f2i(now), key, kind, exe, seqs[exe]
        if kind == tb.EV_CPU or (kind == tb.EV_WAKE and c.woken(net, a)):
            routed._cpu(a, now, s, net)
        elif kind == tb.EV_WAKE:
            pass
        else:
            c.network_event(kind, a, net, now)
        rec[n, R_HI] = seqs[exe]
        n += 1
        if ev.batch_over(ctr):
            return now, False, n
    return now, True, n


def record_run(run: RunConfig) -> tuple[np.ndarray, FastSimulation, dict, float]:
    """Run ``run`` (``routed``) through the recording loop: the records, the simulation, its arrays, the end time."""
    sim = FastSimulation(run)
    a = sim._arrays() | sim._kernel_arrays()
    kernel, now, n = sim.kernel, 0.0, 0
    rec = np.zeros((1 << 22, 6), dtype=np.int64)
    while True:
        ctr = a["counters"]
        ctr[tb.C_PAUSE_AT] = ctr[tb.C_EVENTS] + driver.BATCH_EVENTS
        now, finished, n = _recording_loop(kernel.state_of(a), driver.network_of(a), now, rec, n)
        if finished:
            now = cr.settle_all(a[QUEUE], ctr, a["pools"], a["deferred"], now)  # as the driver ends a run
            break
        if n >= rec.shape[0]:
            rec = np.concatenate([rec, np.zeros_like(rec)])
        driver.between_batches(kernel, a)
    if not a["counters"][tb.C_DONE]:
        raise SystemExit(f"{run.shape}: the recorded run did not finish (error {a['counters'][tb.C_ERROR]})")
    return rec[:n], sim, a, now


def causes(rec: np.ndarray) -> np.ndarray:
    """For each event, the row of the event during which its key's sequence number was handed out (-1: before
    the first event, e.g. the processes' start)."""
    ent = (rec[:, R_KEY] >> SEQ_BITS) & (MAX_ENTITIES - 1)
    seq = rec[:, R_KEY] & SEQ_MASK
    handed = rec[:, R_HI] > rec[:, R_LO]
    rows = np.flatnonzero(handed)
    order = rows[np.lexsort((rec[rows, R_LO], rec[rows, R_EXE]))]
    starts = (rec[order, R_EXE] << SEQ_BITS) | rec[order, R_LO]
    at = np.searchsorted(starts, (ent << SEQ_BITS) | seq, side="right") - 1
    ok = at >= 0
    cause = np.where(ok, order[np.clip(at, 0, None)], -1)
    good = ok & (rec[cause, R_EXE] == ent) & (seq < rec[cause, R_HI])
    return np.where(good, cause, -1)


def node_of_entity(entity: np.ndarray, ranks: int, ppn: int) -> np.ndarray:
    """The node an entity is on: rank r on r // ppn, router ``ranks + n`` on n."""
    return np.where(entity < ranks, entity // ppn, entity - ranks)


KIND_NAMES = {tb.EV_CPU: "cpu", tb.EV_HOP: "hop", tb.EV_RESUME: "resume", tb.EV_TAIL: "tail", tb.EV_GIVE: "give",
              tb.EV_FRONT: "front", tb.EV_WAKE: "wake"}


def analyse(rec: np.ndarray, sim: FastSimulation, a: dict, end_s: float) -> dict:
    """The lookahead, and per slab partition the events per window per part and the events crossing parts."""
    times = rec[:, R_T].view(np.float64)
    ranks, ppn = sim.num_ranks, sim.ppn
    node = node_of_entity(rec[:, R_EXE], ranks, ppn)
    cause = causes(rec)
    has = cause >= 0
    src = np.where(has, node[np.clip(cause, 0, None)], -1)
    delay = np.where(has, times - times[np.clip(cause, 0, None)], np.nan)
    fp = a["float_params"]
    chunk_s, router_s = float(fp[tb.F_CHUNK_S]), float(fp[tb.F_ROUTER_S])
    cross_node = has & (src != node)
    by_kind = {}
    for kind, name in KIND_NAMES.items():
        m = cross_node & (rec[:, R_KIND] == kind)
        if m.any():
            by_kind[name] = {"edges": int(m.sum()), "min_delay_ns": float(np.min(delay[m]) * 1e9),
                             "zero_delay": int(np.sum(delay[m] <= 0))}
    positive = cross_node & (delay > 0)
    lookahead_s = float(np.min(delay[positive])) if positive.any() else math.nan
    out = {
        "shape": sim.run.shape, "ranks": ranks, "events": int(len(rec)), "sim_time_s": end_s,
        "chunk_ns": chunk_s * 1e9, "router_ns": router_s * 1e9, "hop_lookahead_ns": (chunk_s + router_s) * 1e9,
        # a credit return comes back one serialisation after its packet starts on the next link, at the least
        "min_serial_ns": float(a["packet_costs"][1:, 1].min() / fp[tb.F_RATE] * 1e9),
        "cross_node_edges": int(cross_node.sum()), "cross_node_by_kind": by_kind,
        "min_positive_cross_node_delay_ns": lookahead_s * 1e9,
        "events_per_sim_s": len(rec) / end_s, "partitions": {},
    }
    shape = parse_shape(sim.run.shape)
    axis = int(np.argmax(shape))
    coord = sim.topology.coords_array()[:, axis]
    # the window: the hop's lookahead (a chunk and the router delay), the figure the design uses
    width = chunk_s + router_s
    window = np.floor(times / width).astype(np.int64)
    nwin = int(window.max()) + 1
    for parts in PARTS:
        if parts > shape[axis]:
            continue
        part_of_node = coord * parts // shape[axis]
        part = part_of_node[node]
        per = np.zeros((nwin, parts), dtype=np.int64)
        np.add.at(per, (window, part), 1)
        crossing = has & (part_of_node[np.clip(src, 0, None)] != part)
        crossing_zero = crossing & (delay <= 0)
        cross_w = np.bincount(window[crossing], minlength=nwin)
        busy = per.sum(axis=1) > 0
        mean_part = per[busy].mean(axis=1)
        out["partitions"][parts] = {
            "windows": nwin, "busy_windows": int(busy.sum()),
            "events_per_window_per_part": float(per[busy].mean()),
            "max_part_over_mean": float(np.sum(per[busy].max(axis=1)) / np.sum(mean_part)),
            "crossing_per_window": float(cross_w[busy].mean()),
            "crossing_share": float(crossing.sum() / len(rec)),
            "crossing_zero_delay": int(crossing_zero.sum()),
            "crossing_zero_delay_kinds": {KIND_NAMES[k]: int(np.sum(crossing_zero & (rec[:, R_KIND] == k)))
                                          for k in KIND_NAMES if np.any(crossing_zero & (rec[:, R_KIND] == k))},
            "sum_max_part_events": int(per.max(axis=1).sum()),
        }
    out["window_ns"] = width * 1e9
    out["windows_per_sim_s"] = 1.0 / width
    return out


@njit(nogil=True, cache=True)
def _spin(n):
    x = 0.0
    for i in range(n):
        x += i * 1e-9
    return x


@njit(parallel=True, cache=True)
def _prange_window(parts, n):
    out = np.zeros(parts)
    for p in prange(parts):
        out[p] = _spin(n)
    return out


def sync_cost_us(parts: int, windows: int = 500, repeats: int = 5) -> dict:
    """Wall microseconds per window of an empty window (P tasks that do nothing, then a barrier) on
    ``concurrent.futures`` threads and on Numba's parallel layer (its ``prange``): the median of ``repeats``
    batches of ``windows``, after a warm-up batch (the first starts the threads)."""
    _spin(1)

    def per_window(step) -> float:
        step()
        batches = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(windows):
                step()
            batches.append((time.perf_counter() - t0) / windows * 1e6)
        return float(np.median(batches))

    with ThreadPoolExecutor(max_workers=parts) as pool:
        futures_us = per_window(lambda: list(pool.map(_spin, [1] * parts)))
    prange_us = per_window(lambda: _prange_window(parts, 1))
    return {"futures_us": futures_us, "prange_us": prange_us}


def serial_cost(run: RunConfig) -> dict:
    """The serial fast engine's wall and CPU per event on the same run (after a warm-up that loads the kernels)."""
    simulate(run.model_copy(update={"updates_per_process": 8}))
    cpu0, t0 = time.process_time(), time.perf_counter()
    _, record = simulate(run)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"wall_s": wall, "cpu_s": cpu, "events": int(record["events"]), "ns_per_event_cpu": cpu / record["events"] * 1e9,
            "peak_rss_mb": record["peak_rss_mb"], "sim_time_s": record["sim_time_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=list(CASES), default="bgl-16")
    ap.add_argument("--updates", type=int, default=256)
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args()
    machine, shape, overrides = CASES[args.case]
    run = RunConfig(machine=load_machine(machine, overrides), shape=shape, algorithm="routed",
                    updates_per_process=args.updates, engine="fast")
    serial = serial_cost(run)
    t0 = time.perf_counter()
    rec, sim, a, end = record_run(run)
    record_s = time.perf_counter() - t0
    events = int(a["counters"][tb.C_EVENTS])  # popped, and credit returns settled beside their pool
    if events != serial["events"] or end != serial["sim_time_s"]:
        raise SystemExit(f"the recording loop ran {events} events to {end} s, the engine {serial['events']} to "
                         f"{serial['sim_time_s']} s: not the same run")
    out = {"case": args.case, "updates": args.updates, "serial": serial, "record_s": record_s,
           "settled_returns": events - len(rec)}
    out |= analyse(rec, sim, a, end)
    out["sync"] = {p: sync_cost_us(p) for p in (2, 4, 16)}
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
