"""Speed and memory of the fast engine (gupsim.engines.fast), up to the whole 64x32x32 Blue Gene/L.

What it measures (the goals docs/performance.md reports against)
-----------------------------------------------------------------
Each case runs ``gupsim.engines.run.simulate`` with ``engine="fast"`` in its own
subprocess, so ``peak_rss_mb`` (its own ``VmHWM``) is that case's alone, and the
kernels are loaded from Numba's on-disk cache (compile time is measured
separately, ``--compile``, with an empty cache directory).  Per case:

* ``wall_s`` (inside ``simulate``: set-up, kernel, record) and ``cpu_s``
  (user + system CPU of the same interval).  The development machine has two
  cores shared by several engineers, so the CPU time is the better measure of
  the engine; both are reported;
* ``events`` and ``events_per_s``; ``packet_hops`` (counted exactly by the
  kernel) and ``packet_hops_per_s`` (per wall second and per CPU second);
* ``work = updates x mean hops`` (mean hops of the packets that travelled)
  for the slope of cost against work;
* ``peak_rss_mb``; the simulated ``gups``.

Series
------
``slope``: ``one-packet`` and ``routed`` on 8x8x8, 16x16x16, 32x32x16,
32x32x32 and 64x32x32 (512 to 65,536 nodes) at a fixed number of updates per
process; the log-log slope of CPU seconds against work is fitted and plotted
(docs/figures/fast_slope.png/.svg); its 64x32x32 ``routed`` case is the
whole-machine routed run.  ``slope-long``: ``routed`` alone on the same shapes at 1,024 updates per
process, 16 times the ``slope`` length (less of the run is filling and draining buckets).  ``full``: ``one-packet`` on 64x32x32 in
virtual-node mode (131,072 processes, seed 001's 64-byte packet).
``baseline`` (not in the default series): the ``baseline`` kernel on 8x8x8 and
16x8x8 at the 4,096 updates per process its steady state needs (seed 000
Table 3's run length in gupsim/studies/experiments/bgl_table3.py); it sends a message per
one to five updates, so it is far costlier per update than the slope cases.
``memory``: longer runs on 8x8x8 to 32x32x16 (both kernels, co-processor and
virtual-node mode), the peaks the memory estimate must cover.
``vn`` (not in the default series): ``routed`` in virtual-node mode on 8x8x8 to
32x32x16 (§6.2's 16,384-node row at two run lengths), its cost per event and per update.

Run::

    nice .venv/bin/python benchmarks/bench_fast.py --series slope full --out benchmarks/results/bench_fast.csv
    nice .venv/bin/python benchmarks/bench_fast.py --compile     # compile time with an empty cache

Rows join those already in ``--out`` (a case run again replaces its own row), so
``--shapes`` re-runs part of a series and its figure still shows every shape.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "bench_fast.csv"
FIGURES = ROOT / "docs" / "figures"
UPC_PACKET = {"payload_bytes": 64, "wire_bytes": 75}

SLOPE_SHAPES = ["8x8x8", "16x16x16", "32x32x16", "32x32x32", "64x32x32"]
SLOPE_UPDATES = {"one-packet": 16, "routed": 64}
#: ``slope-long``: ``routed`` 16 times longer than in ``slope``, on the same shapes (at 64 updates per process
#: the whole machine sends 2.5 packets per update, most of them partial buckets of one to three updates;
#: at 1,024 it sends 0.65, still short of the steady state there: docs/performance.md).
SLOPE_LONG_UPDATES = {"routed": 1024}
#: The slope series: updates per process of each algorithm, and the figure each draws.
SLOPE_SERIES = {"slope": (SLOPE_UPDATES, "fast_slope"), "slope-long": (SLOPE_LONG_UPDATES, "fast_slope_long")}
BASELINE = [("baseline", shape, "baseline", 4096, {}, {}) for shape in ("8x8x8", "16x8x8")]
FULL = [
    # (label, shape, algorithm, updates per process, machine overrides, options)
    ("full-upc-vn", "64x32x32", "one-packet", 16, {"cpu.processes_per_node": 2}, UPC_PACKET),
]
#: Longer runs at small and middle sizes, for the memory estimate (gupsim.base.memory): more packets in flight
#: per process than the short slope runs, and virtual-node mode.
MEMORY = [
    ("memory", "8x8x8", "one-packet", 2048, {}, {}),
    ("memory", "8x8x8", "routed", 4096, {}, {}),
    ("memory", "8x8x8", "routed", 1024, {"cpu.processes_per_node": 2}, {}),
    ("memory", "16x16x16", "one-packet", 256, {}, {}),
    ("memory", "16x16x16", "routed", 1024, {}, {}),
    ("memory", "32x32x16", "one-packet", 64, {"cpu.processes_per_node": 2}, UPC_PACKET),
]

#: §6.2's virtual-node row at 16,384 nodes (32,768 processes) against smaller VN partitions: does a run
#: there cost more per event than its size predicts (docs/performance-log.md)?  Two lengths of the big one
#: separate the start and drain from the steady cost per update.
VN = [("vn", shape, "routed", 4096, {"cpu.processes_per_node": 2}, {}) for shape in ("8x8x8", "16x8x8", "16x16x8")]
VN += [("vn", "32x32x16", "routed", updates, {"cpu.processes_per_node": 2}, {}) for updates in (256, 1024)]


def _cpu_s() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run_case(shape: str, algorithm: str, updates: int, sets: dict, options: dict) -> dict:
    """One case in this process (the subprocess side)."""
    from gupsim.config import load_machine
    from gupsim.engines.run import compile_all
    from gupsim.engines.run import make_run_config, simulate

    compile_all()  # load the cached kernels before timing
    cfg = make_run_config(machine=load_machine("bgl", sets), shape=shape, algorithm=algorithm,
                          updates_per_process=updates, algorithm_options=options, engine="fast")
    cpu0 = _cpu_s()
    sim, rec = simulate(cfg)
    cpu = _cpu_s() - cpu0
    hops = sim.outcome().packet_hops
    total = rec["updates_generated"]
    mean_hops = hops / rec["packets_injected"] if rec["packets_injected"] else 0.0
    qs = sim.queue_stats  # every case runs on the fast engine (engine="fast" above)
    return {
        "shape": shape, "algorithm": algorithm, "nodes": rec["nodes"], "processes": rec["processes"],
        "updates_per_process": updates, "updates": total, "events": rec["events"], "wall_s": rec["wall_s"],
        "cpu_s": cpu, "events_per_s": rec["events"] / rec["wall_s"], "events_per_cpu_s": rec["events"] / cpu,
        "packets": rec["packets_injected"], "packet_hops": hops, "mean_hops": mean_hops,
        "work": total * mean_hops, "packet_hops_per_s": hops / rec["wall_s"], "packet_hops_per_cpu_s": hops / cpu,
        "peak_rss_mb": rec["peak_rss_mb"], "gups": rec["gups"], "sim_time_s": rec["sim_time_s"],
        # credit returns applied beside their pool, never in the event heap (gupsim.engines.fast.credits, deferred returns)
        "deferred_returns": qs["deferred_applied"],
        # calendar buckets moved into the event heap (gupsim.engines.fast.events): heap pops per bucket
        "buckets_moved": qs["buckets_moved"],
        # entries walked when the calendar redistributed its overflow list (gupsim.engines.fast.events)
        "overflow_refiled": qs["overflow_refiled"],
        "estimate_mb": sim.memory_estimate_bytes / 2**20,
    }


def spawn(label: str, shape: str, algorithm: str, updates: int, sets: dict, options: dict) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child",
           json.dumps([shape, algorithm, updates, sets, options])]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["label"], row["process_s"] = label, time.perf_counter() - t0
    print(f"{label}: {shape} {algorithm} x{updates}: wall {row['wall_s']:.1f} s, cpu {row['cpu_s']:.1f} s, "
          f"{row['packet_hops_per_cpu_s']:.3g} pkt-hops/cpu-s, {row['peak_rss_mb']:.0f} MB", flush=True)
    return row


def compile_time() -> dict:
    """Seconds to compile every kernel with an empty cache, and to load them from a warm one."""
    code = "import time; t=time.perf_counter(); from gupsim.engines.fast import compile_all; compile_all(); print(time.perf_counter()-t)"
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold = float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                    text=True).stdout.split()[-1])
        warm = float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                    text=True).stdout.split()[-1])
    return {"compile_cold_s": cold, "compile_warm_s": warm}


def row_key(row: dict) -> tuple:
    """What makes a case: series, shape, algorithm, updates per process, processes per node."""
    return (row["label"], row["shape"], row["algorithm"], int(row["updates_per_process"]),
            int(row["processes"] // row["nodes"]))


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` with ``new`` added, a new row replacing the old row of its case."""
    replaced = {row_key(r) for r in new}
    return [r for r in old if row_key(r) not in replaced] + list(new)


def missing_shapes(rows: list[dict], label: str) -> list[str]:
    """The cases (``shape algorithm``) of the slope series ``label`` that ``rows`` lacks."""
    have = {(r["shape"], r["algorithm"]) for r in rows if r["label"] == label}
    updates, _ = SLOPE_SERIES[label]
    return [f"{shape} {algorithm}" for algorithm in updates for shape in SLOPE_SHAPES if (shape, algorithm) not in have]


def slope_plots(rows: list[dict]) -> dict:
    """Redraw the figure of every slope series whose every case is in ``rows``; its fitted slopes, by series.

    A series with cases missing leaves its committed figure alone and says so: a run of one shape into a
    fresh ``--out`` had redrawn docs/figures/fast_slope.png from that shape alone (empty axes).  Another
    series never redraws a slope figure."""
    fits = {}
    for label in SLOPE_SERIES:
        if not any(r["label"] == label for r in rows):
            continue
        missing = missing_shapes(rows, label)
        if missing:
            print(f"bench_fast.py: {label}: figure not redrawn, its CSV lacks {', '.join(missing)}", file=sys.stderr)
            continue
        fits[label] = slope_plot(rows, label)
    return fits


def slope_plot(rows: list[dict], label: str) -> dict:
    """Log-log CPU seconds against work (updates x mean hops), packet-hops and events; the fitted slopes
    of the slope series ``label`` (its figure: :data:`SLOPE_SERIES`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from gupsim.app.plots import save_figure

    fits = {}
    # routed's packets per update grow with the machine (its buckets shrink as 1024 / (X + Y + Z)), which
    # updates x mean packet hops does not count; the packet-hops simulated do
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, xkey, xlabel in ((axes[0], "work", "work = updates x mean packet hops"),
                             (axes[1], "packet_hops", "packet-hops simulated"),
                             (axes[2], "events", "events processed")):
        for algorithm, marker in (("one-packet", "o"), ("routed", "s")):
            pts = [r for r in rows if r["label"] == label and r["algorithm"] == algorithm]
            if len(pts) < 2:
                continue
            x = np.array([r[xkey] for r in pts], dtype=float)
            y = np.array([r["cpu_s"] for r in pts], dtype=float)
            slope, icpt = np.polyfit(np.log(x), np.log(y), 1)
            fits[f"{algorithm} vs {xkey}"] = float(slope)
            (line,) = ax.loglog(x, y, marker, label=f"{algorithm}: slope {slope:.2f}")
            ax.loglog(x, np.exp(icpt) * x**slope, "-", color=line.get_color(), alpha=0.5)
            for r in pts:
                ax.annotate(f"{r['nodes']:,}", (r[xkey], r["cpu_s"]), fontsize=7, xytext=(3, -9),
                            textcoords="offset points")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("CPU seconds (fast engine)")
        ax.legend()
    updates, figure = SLOPE_SERIES[label]
    lengths = ", ".join(f"{a} {u} updates per process" for a, u in updates.items())
    fig.suptitle(f"Fast engine: cost against work, 512 to 65,536 nodes ({lengths}; labels: nodes)")
    save_figure(fig, FIGURES, figure, dpi=130)
    return fits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--series", nargs="*", default=["slope", "full"], choices=[*SLOPE_SERIES, "full", "baseline", "memory", "vn"])
    ap.add_argument("--shapes", nargs="*", default=None,
                    help="run only the cases of these shapes (two processes can then share the slope series)")
    ap.add_argument("--compile", action="store_true", help="measure compile time only")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--resume", action="store_true", help="keep the rows already in --out, run the others")
    ap.add_argument("--plot-only", action="store_true", help="redraw the slope figure from --out")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_case(*json.loads(args.child))))
        return
    if args.compile:
        print(json.dumps(compile_time()))
        return
    import pandas as pd

    if args.plot_only:
        print(json.dumps(slope_plots(pd.read_csv(args.out).to_dict("records"))))
        return
    cases = []
    if "memory" in args.series:
        cases += MEMORY
    if "full" in args.series:
        cases += [(label, *rest) for label, *rest in FULL]
    if "baseline" in args.series:
        cases += BASELINE
    if "vn" in args.series:
        cases += VN
    for label, (updates_of, _) in SLOPE_SERIES.items():
        if label in args.series:
            cases += [(label, shape, algorithm, updates, {}, {})
                      for algorithm, updates in updates_of.items() for shape in SLOPE_SHAPES]
    if args.shapes is not None:
        unknown = sorted(set(args.shapes) - {case[1] for case in cases})
        if unknown:
            ap.error(f"--shapes: no case of the series {' '.join(args.series)} has the shape(s) {', '.join(unknown)}")
        cases = [case for case in cases if case[1] in args.shapes]
    # Each row is written as soon as its case ends, into the rows already in the CSV (a case run again
    # replaces its row), so a run of some shapes keeps the others and the figures still show every shape;
    # --resume skips the cases already there.
    rows = pd.read_csv(args.out).to_dict("records") if args.out.exists() else []
    done = {row_key(r) for r in rows} if args.resume else set()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for label, shape, algorithm, updates, sets, options in cases:
        if (label, shape, algorithm, updates, sets.get("cpu.processes_per_node", 1)) in done:
            continue
        rows = merge_rows(rows, [spawn(label, shape, algorithm, updates, sets, options)])
        pd.DataFrame(rows).to_csv(args.out, index=False)
    fits = slope_plots(rows)
    meta = {"load_average": os.getloadavg(), "slopes": fits, "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    args.out.with_suffix(".meta.json").write_text(json.dumps(meta, indent=1))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
