"""How far ``gupsim run``'s estimate (:mod:`gupsim.app.first_run`) is from the wall time it then takes, on the
README's ``gupsim run`` examples that finish in minutes: exit 1 when any is off by more than 2x either way.

Each case runs in this process after a 64-update warm-up run of the same shape and algorithm, so that its
kernels are loaded (compiling is the estimate's other term, :data:`gupsim.app.first_run.COMPILE_S`, added only
on a cold cache).  It is judged on CPU seconds: on a shared box the wall time also counts the other jobs.  The estimate is
that of the run's cap; a run that stops once precise is compared with the estimate scaled by the share of its
cap it ran (the estimate of what it did), which is what the cost model can know.

    python benchmarks/estimate_error.py [--out results/estimate_error.csv]

Results on the project's shared 2-core box are logged in docs/performance-log.md.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

from gupsim.app.first_run import RUN_PRECISION, estimate_s
from gupsim.engines.run import make_run_config, simulate

#: The README's ``gupsim run`` lines that run in minutes, as (shape, algorithm, updates, precision, extra fields).
CASES = (
    ("4x4x4", "baseline", 4096, RUN_PRECISION),
    ("8x8x8", "baseline", 2000, None),
    ("4x4x2", "one-packet", 4096, RUN_PRECISION),
    ("8x8x8", "routed", 16384, 0.01),
)
#: The largest ratio, either way, between the wall time and the estimate that passes.
TOLERANCE = 2.0


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (user and system)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(shape: str, algorithm: str, updates: int, precision: float | None) -> dict:
    cfg = make_run_config(machine="bgl", shape=shape, algorithm=algorithm, updates_per_process=updates,
                          precision=precision)
    run_s, _ = estimate_s(cfg)
    t0, c0 = time.perf_counter(), _cpu_s()
    _, record = simulate(cfg)
    wall = time.perf_counter() - t0 - record["compile_s"]
    cpu = _cpu_s() - c0  # on a shared box wall time also counts the others' load
    share = record["updates_applied_per_process"] / updates
    expected = run_s * share
    return {"shape": shape, "algorithm": algorithm, "updates": updates, "precision": precision,
            "ran_share": round(share, 3), "estimate_s": round(expected, 2), "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "ratio": round(wall / expected, 2) if expected > 0 else float("nan"),
            "cpu_ratio": round(cpu / expected, 2) if expected > 0 else float("nan")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the rows as CSV")
    args = parser.parse_args(argv)
    rows = []
    for shape, algorithm, updates, precision in CASES:
        # the kernels of this case's argument types (a mesh's read-only neighbour table is another type than a
        # torus's), compiled or loaded, so that the case itself spends nothing on them
        simulate(make_run_config(machine="bgl", shape=shape, algorithm=algorithm, updates_per_process=64,
                                 precision=precision))
        rows.append(measure(shape, algorithm, updates, precision))
        print(rows[-1], flush=True)
    if args.out:
        with open(args.out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    # judged on CPU time: the estimate is of the run's own work, and a shared box's wall time adds the others'
    off = [r for r in rows if not 1 / TOLERANCE <= r["cpu_ratio"] <= TOLERANCE]
    for r in off:
        print(f"estimate_error.py: {r['shape']} {r['algorithm']}: took {r['cpu_s']} CPU s ({r['wall_s']} s wall) "
              f"against an estimate of {r['estimate_s']} s (x{r['cpu_ratio']}), outside x{TOLERANCE:g}",
              file=sys.stderr)
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
