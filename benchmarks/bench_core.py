"""Speed and memory benchmark of gupsim's SimPy reference engine.

What it measures
----------------
Four cases: the ``baseline`` and ``one-packet`` algorithms on the ``bgl``
machine, on 8x8x8 (512 nodes) and 16x16x16 (4096 nodes) tori.  Each case
runs in its own Python subprocess, so ``peak_rss_mb`` (the subprocess's own
``VmHWM``, see :func:`gupsim.engines.run.peak_rss_mb`) belongs to that case alone.  Per case it reports:

* ``events``, ``wall_s`` (time inside :func:`gupsim.engines.run.simulate`: model
  construction plus the SimPy run), ``cpu_s`` (user + system CPU time of the
  same interval), ``process_s`` (the whole subprocess: interpreter start,
  imports, simulation, record);
* ``events_per_s`` and ``updates_per_s``: events and updates simulated per
  wall second of ``wall_s``;
* ``packets_injected`` and ``packet_hops_per_s``.  Packet-hops are estimated
  for free from the per-link byte counters:
  ``packets_injected * sum(link_bytes) / wire_bytes_injected`` (the mean
  route length weighted by wire bytes).  When every packet has the same size
  on the wire (``one-packet``) this is exact; for ``baseline``, whose last
  packet of a message is shorter, it is a byte-weighted estimate;
* ``peak_rss_mb`` (whole subprocess) and ``rss_after_import_mb`` (the same
  process after importing gupsim, before building the model), so the model's
  own footprint is the difference;
* the simulated result: ``gups`` (steady-state rate, 25%..75% of updates
  applied), ``gups_total`` and ``sim_time_s``.

Run lengths
-----------
The ``baseline`` holds updates in buckets until 1024 are pending, so it only
leaves its warm-up with more than 1024 updates per process; 8x8x8 uses 2048.
On 16x16x16 the full-length run would take too long for a benchmark, so the
16x16x16 cases use 16 updates per process: for the ``baseline`` that run is
all warm-up and drain (every update is flushed at the end, nearly one update
per message), not steady state.  Its GUPS is therefore not a result; it is
there to time the engine.  ``one-packet`` has no warm-up rule.

The defaults take roughly 4-6 minutes on one core of the 2-core AMD EPYC
development machine; the cases run one after another.

How to run
----------
::

    .venv/bin/python benchmarks/bench_core.py                 # full, ~5 min
    .venv/bin/python benchmarks/bench_core.py --quick         # smoke run, <1 min
    .venv/bin/python benchmarks/bench_core.py --markdown --out /tmp/b.csv

It writes one CSV row per case (default ``benchmarks/results/bench_core.csv``)
and a sidecar ``<out>.meta.json`` with the Python and SimPy versions, the CPU
model, the date, the git commit and the load average before and after (the
machine may be shared, and wall times are only as good as the idle core).
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "bench_core.csv"
MACHINE = "bgl"

#: (shape, algorithm, updates per process): full run, and --quick.
CASES = [
    ("8x8x8", "baseline", 2048),
    ("8x8x8", "one-packet", 256),
    ("16x16x16", "baseline", 16),
    ("16x16x16", "one-packet", 16),
]
QUICK_UPDATES = {
    ("8x8x8", "baseline"): 128,
    ("8x8x8", "one-packet"): 32,
    ("16x16x16", "baseline"): 2,
    ("16x16x16", "one-packet"): 2,
}

COLUMNS = [
    "machine", "shape", "algorithm", "nodes", "processes", "updates_per_process", "updates_total",
    "events", "events_per_update", "wall_s", "cpu_s", "process_s", "events_per_s", "updates_per_s",
    "packets_injected", "mean_hops", "packet_hops_per_s", "peak_rss_mb", "rss_after_import_mb",
    "gups", "gups_total", "sim_time_s",
]

# Markdown table: (column, header, format).
TABLE = [
    ("shape", "shape", "{}"),
    ("algorithm", "algorithm", "{}"),
    ("nodes", "nodes", "{:,}"),
    ("updates_per_process", "upd/proc", "{:,}"),
    ("updates_total", "updates", "{:,}"),
    ("events", "events", "{:,}"),
    ("events_per_update", "ev/upd", "{:.1f}"),
    ("wall_s", "wall s", "{:.1f}"),
    ("cpu_s", "CPU s", "{:.1f}"),
    ("events_per_s", "events/s", "{:,.0f}"),
    ("updates_per_s", "updates/s", "{:,.0f}"),
    ("packets_injected", "packets", "{:,}"),
    ("packet_hops_per_s", "pkt-hops/s", "{:,.0f}"),
    ("peak_rss_mb", "peak RSS MB", "{:.0f}"),
    ("gups", "GUPS", "{:.3f}"),
]


# ---------------------------------------------------------------------- child


def _cpu_s() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run_case(shape: str, algorithm: str, updates: int) -> dict:
    """Run one case in this process and return its row (called in the subprocess)."""
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config, peak_rss_mb, simulate

    rss_import = peak_rss_mb()
    cfg = make_run_config(machine=load_machine(MACHINE), shape=shape, algorithm=algorithm,
                          updates_per_process=updates, seed=0, engine="simpy")
    cpu0 = _cpu_s()
    sim, rec = simulate(cfg)
    cpu = _cpu_s() - cpu0
    outcome = sim.outcome()
    wall = rec["wall_s"]
    byte_hops = int(outcome.links["bytes"].sum())
    wire = outcome.wire_bytes_injected
    mean_hops = byte_hops / wire if wire else 0.0
    packet_hops = outcome.packets_injected * mean_hops
    total = rec["updates_generated"]
    return {
        "machine": rec["machine"],
        "shape": rec["shape"],
        "algorithm": rec["algorithm"],
        "nodes": rec["nodes"],
        "processes": rec["processes"],
        "updates_per_process": rec["updates_per_process"],
        "updates_total": total,
        "events": rec["events"],
        "events_per_update": rec["events"] / total,
        "wall_s": wall,
        "cpu_s": cpu,
        "events_per_s": rec["events"] / wall,
        "updates_per_s": total / wall,
        "packets_injected": rec["packets_injected"],
        "mean_hops": mean_hops,
        "packet_hops_per_s": packet_hops / wall,
        "peak_rss_mb": peak_rss_mb(),
        "rss_after_import_mb": rss_import,
        "gups": rec["gups"],
        "gups_total": rec["gups_total"],
        "sim_time_s": rec["sim_time_s"],
    }


# ---------------------------------------------------------------------- parent


def spawn_case(shape: str, algorithm: str, updates: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", shape, algorithm, str(updates)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_s"] = time.perf_counter() - t0
    return row


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def environment() -> dict:
    import importlib.metadata as md

    def version(pkg: str) -> str:
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return "not installed"

    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "simpy": version("simpy"),
        "numpy": version("numpy"),
        "gupsim": version("gupsim"),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "mem_total_gb": _mem_total_gb(),
        "platform": platform.platform(),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
    }


def markdown(rows: list[dict]) -> str:
    head = "| " + " | ".join(h for _, h, _ in TABLE) + " |"
    rule = "|" + "|".join("---" if c in ("shape", "algorithm") else "---:" for c, _, _ in TABLE) + "|"
    body = ["| " + " | ".join(f.format(r[c]) for c, _, f in TABLE) + " |" for r in rows]
    return "\n".join([head, rule, *body])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="much shorter runs (smoke test, under a minute)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"CSV path (default {DEFAULT_OUT.relative_to(ROOT)})")
    p.add_argument("--markdown", action="store_true", help="also print a markdown table")
    p.add_argument("--child", nargs=3, metavar=("SHAPE", "ALGORITHM", "UPDATES"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        shape, algorithm, updates = args.child
        print(json.dumps(run_case(shape, algorithm, int(updates))))
        return 0

    meta = environment()
    meta["mode"] = "quick" if args.quick else "full"
    meta["load_avg_before"] = os.getloadavg()
    cases = [(s, a, QUICK_UPDATES[(s, a)] if args.quick else u) for s, a, u in CASES]
    rows = []
    t0 = time.perf_counter()
    for shape, algorithm, updates in cases:
        print(f"{shape:>9} {algorithm:<10} {updates:>5} upd/proc ...", end=" ", file=sys.stderr, flush=True)
        row = spawn_case(shape, algorithm, updates)
        print(f"{row['wall_s']:7.1f} s  {row['events_per_s']:9,.0f} ev/s  {row['peak_rss_mb']:5.0f} MB",
              file=sys.stderr, flush=True)
        rows.append(row)
    meta["total_s"] = round(time.perf_counter() - t0, 1)
    meta["load_avg_after"] = os.getloadavg()

    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({c: r[c] for c in COLUMNS} for r in rows)
    meta_path = args.out.with_suffix(".meta.json")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")

    print(f"wrote {args.out} and {meta_path} ({meta['total_s']} s in all)", file=sys.stderr)
    if args.markdown:
        print(markdown(rows))
        print()
        print(f"Python {meta['python']}, SimPy {meta['simpy']}, {meta['cpu_model']} "
              f"({meta['cpu_count']} cores, {meta['mem_total_gb']} GB), {meta['date']}, "
              f"total {meta['total_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
