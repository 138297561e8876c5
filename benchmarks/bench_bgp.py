"""Blue Gene/P on the fast engine (gupsim.engines.fast.dma): its speed against Blue Gene/L's, and a large run.

Goals (issue 36; they live here, not in timed tests)
----------------------------------------------------
* ``ratio``: events per second on BG/P within 30% of BG/L's, on the same shape, algorithm, mode and run length.
  The cases run side by side in one invocation, alternating machines (BG/L, BG/P, BG/L, BG/P ...), each in its
  own subprocess with the kernels loaded from Numba's cache, so both see the same load of the shared box.
  Both events per wall second and per CPU second are reported; the CPU figure is the better one on a box whose
  two cores are shared.  A BG/P run has more events per update than the BG/L one (the two DMA services and the
  throttle's polls: gupsim.engines.reference.dma), so updates per CPU second are reported as well.
* ``throttle``: what sender-driven throttling costs (gupsim.engines.reference.dma: a node's packets held back at
  one first link queue, and only the queue's head polls): virtual-node ``one-packet`` and ``routed`` on 8x8x8 and
  16x16x16, events per update split into the throttle's polls, the hops, the DMA's steps and the rest, polls per
  held-back packet and packets held per link.  The model is the checkout's own: for a before/after, run the
  series in a worktree of each commit (``PYTHONPATH=<worktree>``) and compare the CSVs.
* ``large``: ``routed`` in virtual-node mode (four processes per node) at a steady-state run length, its wall
  time, CPU time and peak RSS, at the sizes the box affords; the goal is 32x32x32 (131,072 processes) in at most
  20 minutes and 8 GB, extrapolated from these by CPU seconds per update (the cost per event grows slowly with
  the size: docs/performance.md).

Run::

    nice -n 10 .venv/bin/python benchmarks/bench_bgp.py --series ratio large --out benchmarks/results/bench_bgp.csv
    nice -n 10 .venv/bin/python benchmarks/bench_bgp.py --series throttle --out /tmp/throttle.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "bench_bgp.csv"
VN = {"cpu.processes_per_node": 4}
#: (label, machine, shape, algorithm, updates per process, machine overrides); the BG/L and BG/P cases alternate.
RATIO = [(f"ratio-{alg}", machine, "16x16x16", alg, updates, sets)
         for alg, updates, sets in (("routed", 1024, {}), ("one-packet", 256, {}), ("routed", 512, VN))
         for machine in ("bgl", "bgp")]
#: Virtual-node routed at the steady-state length (gupsim.engines.run.MIN_STEADY_UPDATES) on 8x8x8, then longer
#: partitions; the last is what the box affords beside the other engineers' runs.
LARGE = [("large", "bgp", shape, "routed", updates, VN)
         for shape, updates in (("8x8x8", 4096), ("16x16x8", 4096), ("16x16x16", 4096))]
#: The throttle's cost (issue 36): virtual-node one-packet and routed on 8x8x8 and 16x16x16, events per update
#: split into the throttle's polls, the hops, the DMA's steps and the rest; run once per throttle model (the
#: model in the checkout that runs it: compare two checkouts' CSVs).
THROTTLE = [("throttle", "bgp", shape, alg, updates, VN)
            for shape, op_updates, routed_updates in (("8x8x8", 128, 512), ("16x16x16", 64, 256))
            for alg, updates in (("one-packet", op_updates), ("routed", routed_updates))]
SERIES = {"ratio": RATIO, "large": LARGE, "throttle": THROTTLE}


def _cpu_s() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run_case(machine: str, shape: str, algorithm: str, updates: int, sets: dict) -> dict:
    """One case in this process (the subprocess side)."""
    from gupsim.config import load_machine
    from gupsim.engines.run import compile_all, make_run_config, simulate

    compile_all()  # load the cached kernels before timing
    cfg = make_run_config(machine=load_machine(machine, sets), shape=shape, algorithm=algorithm,
                          updates_per_process=updates, engine="fast")
    cpu0 = _cpu_s()
    sim, rec = simulate(cfg)
    cpu = _cpu_s() - cpu0
    total = rec["updates_generated"]
    return {
        "machine": machine, "shape": shape, "algorithm": algorithm, "nodes": rec["nodes"],
        "processes": rec["processes"], "updates_per_process": updates, "updates": total, "events": rec["events"],
        "wall_s": rec["wall_s"], "cpu_s": cpu, "events_per_s": rec["events"] / rec["wall_s"],
        "events_per_cpu_s": rec["events"] / cpu, "events_per_update": rec["events"] / total,
        "updates_per_cpu_s": total / cpu, "packet_hops": sim.outcome().packet_hops,
        "peak_rss_mb": rec["peak_rss_mb"], "estimate_mb": sim.memory_estimate_bytes / 2**20,
        "gups": rec["gups"], "gups_steady": rec["gups_steady"], "steady_state": rec["steady_state"],
        "throttle_waits": rec.get("throttle_waits", 0),
        "dma_tx_utilisation_mean": rec.get("dma_tx_utilisation_mean", float("nan")),
        "link_utilisation_mean": rec["link_utilisation_mean"],
        **_throttle_split(sim.outcome(), rec),
    }


def _throttle_split(o, rec: dict) -> dict:
    """Events per update by kind: the throttle's polls, the packets' hops, the DMA's steps (launch, end of the
    injection service and of the reception service: three per packet) and the rest (CPU, credits, tails); the
    throttled packets' polls each and, by Little's law, the mean number of packets backing off per link."""
    if o.dma is None:
        return {}
    total, packets = rec["updates_generated"], o.packets_injected
    polls, hops = o.dma.get("throttle_polls", 0), o.packet_hops or 0
    dma_steps = 3 * packets
    links = len(o.links["busy_s"])
    return {"throttle_polls": polls, "throttled_s": o.dma["throttled_s"], "packets": packets,
            "polls_per_update": polls / total, "hops_per_update": hops / total,
            "dma_per_update": dma_steps / total,
            "other_per_update": (rec["events"] - polls - hops - dma_steps) / total,
            "polls_per_throttled": polls / o.dma["throttle_waits"] if o.dma["throttle_waits"] else 0.0,
            "backed_off_per_packet": o.dma["throttle_waits"] / packets if packets else 0.0,
            "waiting_per_link": o.dma["throttled_s"] / (o.sim_time_s * links) if o.sim_time_s > 0 else 0.0,
            "gups_run": rec["gups"], "sim_time_s": o.sim_time_s}


def spawn(label: str, machine: str, shape: str, algorithm: str, updates: int, sets: dict) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child",
           json.dumps([machine, shape, algorithm, updates, sets])]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["label"], row["process_s"], row["ppn"] = label, time.perf_counter() - t0, sets.get("cpu.processes_per_node", 1)
    print(f"{label}: {machine} {shape} {algorithm} x{updates} ppn {row['ppn']}: wall {row['wall_s']:.1f} s, "
          f"cpu {row['cpu_s']:.1f} s, {row['events_per_cpu_s']:.3g} events/cpu-s, "
          f"{row['updates_per_cpu_s']:.3g} updates/cpu-s, {row['peak_rss_mb']:.0f} MB "
          f"(estimate {row['estimate_mb']:.0f})", flush=True)
    if "polls_per_update" in row:
        print(f"  events/update {row['events_per_update']:.2f} = polls {row['polls_per_update']:.2f} + hops "
              f"{row['hops_per_update']:.2f} + DMA {row['dma_per_update']:.2f} + other {row['other_per_update']:.2f};"
              f" backed off {row['backed_off_per_packet']:.3f}/pkt, {row['polls_per_throttled']:.2f} polls each,"
              f" {row['waiting_per_link']:.3f} waiting/link; GUPS {row['gups_run']:.4f}", flush=True)
    return row


def ratios(rows: list[dict]) -> list[str]:
    """BG/P over BG/L per case pair: events per CPU second and per wall second, updates per CPU second."""
    lines = []
    pairs: dict[tuple, dict] = {}
    for r in rows:
        if r["label"].startswith("ratio"):
            pairs.setdefault((r["label"], r["shape"], r["ppn"], r["updates_per_process"]), {})[r["machine"]] = r
    for key, p in pairs.items():
        if {"bgl", "bgp"} <= set(p):
            l, b = p["bgl"], p["bgp"]
            lines.append(f"{key}: BG/P / BG/L events per cpu-s {b['events_per_cpu_s'] / l['events_per_cpu_s']:.3f}, "
                         f"per wall-s {b['events_per_s'] / l['events_per_s']:.3f}; updates per cpu-s "
                         f"{b['updates_per_cpu_s'] / l['updates_per_cpu_s']:.3f}; events per update "
                         f"{b['events_per_update']:.2f} vs {l['events_per_update']:.2f}")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", nargs="+", choices=sorted(SERIES), default=["ratio"])
    ap.add_argument("--shapes", nargs="+", help="only these shapes")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(run_case(*json.loads(args.child))))
        return
    rows = []
    for series in args.series:
        for label, machine, shape, algorithm, updates, sets in SERIES[series]:
            if args.shapes and shape not in args.shapes:
                continue
            rows.append(spawn(label, machine, shape, algorithm, updates, sets))
    for line in ratios(rows):
        print(line)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = list(csv.DictReader(args.out.open())) if args.out.exists() else []
    fields = list(rows[0]) if rows else []
    with args.out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(old + rows)


if __name__ == "__main__":
    main()
