"""Fit the cost model of :mod:`gupsim.studies.estimate` (events per update, seconds per event) from measured runs.

Runs :data:`FIT_CASES` on the fast engine (each after a 64-update warm-up, kernels loaded), adds the large runs
of docs/performance.md (:data:`NAMED_RUNS`, too long to rerun here), and prints the least-squares coefficients
to paste into ``EVENTS_PER_UPDATE``, ``SECONDS_PER_EVENT`` and ``RUN_SETUP_S``, with each run's ratio.  The
shapes 4x4x4 and 8x8x8 and the README's cases are left out: ``benchmarks/estimate_error.py`` judges the model
on them.

    python benchmarks/estimate_fit.py [--runs benchmarks/estimate_fit_runs.jsonl]   # --runs: the kept runs, not rerun

``estimate_fit_runs.jsonl`` holds the runs the constants were fitted on (2026-11-28, the shared 2-core box).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

from gupsim.engines.run import make_run_config, simulate
from gupsim.model.bucketing import MAX_PENDING
from gupsim.studies.estimate import EVENTS_PER_UPDATE, mean_hops

#: (shape, algorithm, updates a process), run to their end.
FIT_CASES = tuple((shape, algorithm, updates) for shape in ("2x2x2", "4x4x2", "8x4x4", "8x8x4")
                  for algorithm in ("baseline", "one-packet", "routed") for updates in (512, 4096)
                  if (shape, algorithm) != ("4x4x2", "one-packet")) + (
    ("8x8x16", "baseline", 512), ("8x8x16", "baseline", 4096), ("8x8x16", "one-packet", 512),
    ("8x8x16", "one-packet", 4096), ("8x8x16", "routed", 512), ("8x8x16", "routed", 4096),
    ("16x8x8", "baseline", 256), ("16x8x8", "routed", 1024), ("16x8x8", "one-packet", 256),
    ("16x8x8", "baseline", 2048), ("16x16x8", "baseline", 256), ("16x16x8", "routed", 512),
    ("16x16x8", "one-packet", 64), ("8x8x16", "routed", 8192))
#: Large fast-engine runs of docs/performance.md: the whole machine's ``routed`` and Table 3's 4,096 nodes.
NAMED_RUNS = (
    {"shape": "64x32x32", "algorithm": "routed", "applied": 1024, "processes": 65536, "events": 1.39e9, "cpu": 974},
    {"shape": "64x32x32", "algorithm": "routed", "applied": 4096, "processes": 65536, "events": 3568640333,
     "cpu": 1997},
    {"shape": "16x16x16", "algorithm": "baseline", "applied": 4096, "processes": 4096, "events": 477e6, "cpu": 322},
)


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def run(shape: str, algorithm: str, updates: int) -> dict:
    simulate(make_run_config(machine="bgl", shape=shape, algorithm=algorithm, updates_per_process=64, precision=None))
    cfg = make_run_config(machine="bgl", shape=shape, algorithm=algorithm, updates_per_process=updates, precision=None)
    c0 = _cpu_s()
    _, record = simulate(cfg)
    return {"shape": shape, "algorithm": algorithm, "applied": record["updates_applied_per_process"],
            "processes": record["processes"], "events": record["events"],
            "cpu": _cpu_s() - c0 - record["compile_s"]}


def _terms(r: dict) -> list[float]:
    form = EVENTS_PER_UPDATE[r["algorithm"]]
    hops = mean_hops(r["shape"])
    per_message = 1 + 2 * MAX_PENDING / r["processes"] if form.bucketed else 1.0
    terms = [1.0, hops / per_message]
    return terms + [hops ** form.warmup_power / r["applied"]] if form.warmup else terms


def fit(rows: list[dict]) -> None:
    for algorithm in EVENTS_PER_UPDATE:
        mine = [r for r in rows if r["algorithm"] == algorithm]
        x = np.array([_terms(r) for r in mine])
        per_update = np.array([r["events"] / (r["processes"] * r["applied"]) for r in mine])
        coef = np.linalg.lstsq(x / per_update[:, None], np.ones(len(mine)), rcond=None)[0]  # relative error
        ratios = x @ coef / per_update
        print(f"{algorithm}: {np.round(coef, 3).tolist()}, events model/run {ratios.min():.2f}-{ratios.max():.2f}")
    long = [r for r in rows if r["cpu"] >= 0.5]
    a = np.array([[1.0, math.log(r["processes"])] for r in long])
    (log_s0, exponent) = np.linalg.lstsq(a, [math.log(r["cpu"] / r["events"]) for r in long], rcond=None)[0]
    setup = float(np.median([r["cpu"] - math.exp(log_s0) * r["processes"] ** exponent * r["events"]
                             for r in rows if r["cpu"] < 0.5]))
    print(f"fast seconds per event: ({math.exp(log_s0):.3e}, {exponent:.4f}); run setup {setup:.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=None, help="a JSON-lines file of measured runs (this script's rows)")
    args = parser.parse_args(argv)
    if args.runs:
        with open(args.runs) as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
    else:
        rows = []
        for case in FIT_CASES:
            rows.append(run(*case))
            print(json.dumps(rows[-1]), flush=True)
    fit(rows + list(NAMED_RUNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
