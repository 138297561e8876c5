"""How far the cost model behind ``gupsim run``'s estimate (:mod:`gupsim.studies.estimate`) is from the CPU time
a run then takes: each case's ratio, and exit 1 when any is outside :data:`TOLERANCE` either way.

The cases (:data:`CASES`) are the README's ``gupsim run`` lines that finish in minutes, points of the example
sweep, and a SimPy run.  None of them is among the runs the model was fitted on
(``benchmarks/estimate_fit.py``: other shapes), so this judges the model, not its fit.

Each case runs twice in this process and the second run is measured, so that its kernels are loaded
(compiling is the estimate's other term, the engine's ``compile_estimate_s``, added only on a cold cache).  It is judged on CPU seconds: on a shared box the wall time also counts the other jobs, and the model
is of an idle box.  A run to a precision stops before its cap; it is compared with the model's time for the
updates it applied (the estimate printed before it is that of its cap, an upper bound).

    python benchmarks/estimate_error.py [--out results/estimate_error.csv]

Results on the project's shared 2-core box are logged in docs/performance-log.md.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time

from gupsim.app.first_run import RUN_PRECISION
from gupsim.engines.run import choose_engine, make_run_config, simulate
from gupsim.studies.estimate import model_run_s

#: (shape, algorithm, updates a process (the cap of a run to a precision), precision, engine).
CASES = (
    ("4x4x4", "baseline", 4096, RUN_PRECISION, "auto"),  # README: gupsim run
    ("8x8x8", "baseline", 2000, None, "auto"),  # README: --shape 8x8x8 --updates 2000
    ("4x4x2", "one-packet", 4096, RUN_PRECISION, "auto"),  # README: --algorithm one-packet --updates 4096
    ("8x8x8", "routed", 16384, 0.01, "auto"),  # README: routed --updates 16384 --precision 0.01
    ("4x2x2", "routed", 16384, 0.02, "auto"),  # example sweep points
    ("4x4x4", "routed", 16384, 0.02, "auto"),
    ("8x8x8", "one-packet", 1024, None, "auto"),
    ("4x4x4", "routed", 256, None, "simpy"),  # the reference engine
)
#: The largest ratio, either way, between the CPU seconds and the model's seconds that passes.
TOLERANCE = 2.0


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (user and system)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _config(shape: str, algorithm: str, updates: int, precision: float | None, engine: str):
    return make_run_config(machine="bgl", shape=shape, algorithm=algorithm, updates_per_process=updates,
                           precision=precision, engine=engine)


def measure(shape: str, algorithm: str, updates: int, precision: float | None, engine: str) -> dict:
    cfg = _config(shape, algorithm, updates, precision, engine)
    # the same run first, so that every kernel specialisation it reaches is compiled or loaded (a shorter
    # warm-up did not reach all of them: its measured run still spent seconds loading kernels)
    simulate(cfg)
    chosen = choose_engine(cfg)
    t0, c0 = time.perf_counter(), _cpu_s()
    _, record = simulate(cfg)
    wall = time.perf_counter() - t0 - record["compile_s"]
    cpu = _cpu_s() - c0
    applied = record["updates_applied_per_process"]
    expected = model_run_s(chosen, algorithm, shape, record["processes"], applied)
    ratio = cpu / expected if expected > 0 else math.nan
    return {"shape": shape, "algorithm": algorithm, "engine": chosen, "updates": updates, "precision": precision,
            "applied": round(applied), "cap_estimate_s": round(model_run_s(chosen, algorithm, shape,
                                                                          record["processes"], updates), 3),
            "estimate_s": round(expected, 3), "cpu_s": round(cpu, 3), "wall_s": round(wall, 2),
            "cpu_ratio": round(ratio, 2), "compile_s": round(record["compile_s"], 2),
            "within": 1 / TOLERANCE <= ratio <= TOLERANCE}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the rows as CSV")
    args = parser.parse_args(argv)
    rows = []
    print(f"band: CPU s / model s within [{1 / TOLERANCE:g}, {TOLERANCE:g}]", flush=True)
    for case in CASES:
        r = measure(*case)
        rows.append(r)
        print(f"{'pass' if r['within'] else 'FAIL'}  {r['shape']:>6} {r['algorithm']:<10} {r['engine']:<5} "
              f"cap {r['updates']:>5} ran {r['applied']:>5}: model {r['estimate_s']:.3g} s, CPU {r['cpu_s']:.3g} s "
              f"(wall {r['wall_s']:.3g} s), x{r['cpu_ratio']:g}", flush=True)
    if args.out:
        with open(args.out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    off = [r for r in rows if not r["within"]]
    print(f"{len(rows) - len(off)} of {len(rows)} within x{TOLERANCE:g}", file=sys.stderr if off else sys.stdout)
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
