"""The partitioned fast engine's speedup, measured side by side (issue 45; docs/performance.md, "Threads").

Runs one configuration serially and in ``--parts`` parts, alternately, ``--reps`` times each (this VM's speed
drifts 10-30% between hours, so only ratios from one run of this script are quoted), and checks that every
partitioned record equals the serial one.  Prints, per run: wall and CPU seconds, the windows run in parallel
and serially, and the parallel efficiency the record reports; then the median speedup.

    python benchmarks/partition_speedup.py --shape 16x16x16 --updates 256 --parts 2 --reps 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from gupsim.app.reporting import model_fields
from gupsim.config import load_machine
from gupsim.engines.fast import FastSimulation
from gupsim.engines.run import make_record, make_run_config


def one(config, parts: int) -> dict:
    sim = FastSimulation(config)
    wall, cpu = time.perf_counter(), time.process_time()
    sim.execute(parts=parts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = getattr(sim, "window_stats", None)
    return {"parts": sim.parts_used, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "efficiency": round(sim.parallel_efficiency, 3),
            "parallel_windows": stats.parallel_windows if stats else 0,
            "serial_windows": stats.serial_windows if stats else 0,
            "record": model_fields(make_record(sim.outcome(), 0.0))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", default="bgl")
    parser.add_argument("--shape", default="16x16x16")
    parser.add_argument("--updates", type=int, default=256)
    parser.add_argument("--parts", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--precision", type=float, default=None)
    args = parser.parse_args()
    config = make_run_config(machine=load_machine(args.machine), shape=args.shape, algorithm="routed",
                             updates_per_process=args.updates, engine="fast", precision=args.precision)
    one(config, 1)  # compile, or load the kernels from Numba's cache
    serial, parted = [], []
    for _ in range(args.reps):
        serial.append(one(config, 1))
        parted.append(one(config, args.parts))
        if parted[-1]["record"] != serial[-1]["record"]:
            raise SystemExit("the partitioned record differs from the serial one")
    for run in serial + parted:
        print(json.dumps({k: v for k, v in run.items() if k != "record"}))
    ratios = [s["wall_s"] / p["wall_s"] for s, p in zip(serial, parted)]
    print(json.dumps({"shape": args.shape, "updates": args.updates, "parts": args.parts,
                      "speedup_median": round(statistics.median(ratios), 3), "speedups": [round(r, 3) for r in ratios],
                      "gups": serial[0]["record"]["gups"]}))


if __name__ == "__main__":
    main()
