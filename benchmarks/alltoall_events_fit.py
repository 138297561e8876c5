"""Fit ``alltoall``'s events per packet (:data:`gupsim.studies.estimate.ALLTOALL_EVENTS_PER_PACKET`) and judge it.

HPCC 0.5b's exchange sends every block whole each round, so a run's events are its packets times the events a
packet costs, and that cost is what the cost model needs.  A packet has events of its own, a share of its
message's, and events at each hop, more of them when it follows the other packets of its own block along the
same path (it is held behind them and woken again): ``a + m / n + hops * (b + d * (1 - exp(-n / n0)))`` for
blocks of ``n`` packets.  For each ``n0`` of a grid it is linear in (a, m, b, d), fitted by least squares on
relative error; the ``n0`` with the least error is kept.  The fit is on :data:`FIT_CASES`, the T3E's small tori
with blocks of 1 to 257 packets, one round or a few each.  It is judged on what it was not fitted on: the Cray X1's reproduce shapes with their 65-packet
blocks of 256-byte packets (:data:`JUDGED_CASES`, one round each) and the named full-torus T3E runs of
docs/performance-log.md (:data:`NAMED_RUNS`, too long to rerun here).

    python benchmarks/alltoall_events_fit.py [--runs benchmarks/alltoall_events_runs.jsonl]   # --runs: kept runs

``alltoall_events_runs.jsonl`` holds the runs the constants were fitted and judged on (2026-11-29, the shared
2-core box; events do not depend on the box).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from gupsim.config.loading import load_machine
from gupsim.engines.run import make_run_config, simulate
from gupsim.studies.estimate import (ALLTOALL_EVENTS_PER_PACKET, alltoall_events_per_packet,
                                    alltoall_packets_per_block, mean_hops, processes_of)

#: Escape channels counted in whole packets, as the reproduce target runs mixed block tails (crayx1_hpcc).
SLOTS = {"network.bubble_accounting": "packets"}
#: (machine, shape, bucket_size): the fit.  Buckets of 4, 12, 20, 64, 510 and 2,046 words are blocks of 1, 2, 3,
#: 9, 65 and 257 of the T3E's 64-byte packets.
FIT_CASES = tuple(("cray-t3e", shape, bucket) for bucket in (4, 12, 20, 64, 510, 2046)
                  for shape in ("2x2x2", "4x2x2", "4x4x2", "4x4x4", "8x4x4"))
#: The X1 rows' shapes, 2,048-word buckets (65 packets of 256 bytes): judged, not fitted.
JUDGED_CASES = tuple(("cray-x1", shape, 2048) for shape in ("4x2x1", "5x3x1", "8x4x1", "9x7x1"))
#: Full-torus T3E runs (docs/performance-log.md): judged, not fitted.
NAMED_RUNS = (
    {"machine": "cray-t3e", "shape": "16x8x8", "bucket": 64, "packets_per_block": 9, "packets": 9.44e6,
     "events": 233.9e6, "judged": True},
)


def run(machine: str, shape: str, bucket: int) -> dict:
    """One round or so: 85% of a round's updates (the fullest bucket may fill first and start a second)."""
    mach = load_machine(machine, SLOTS)
    cfg = make_run_config(machine=mach, shape=shape, algorithm="alltoall", precision=None,
                          updates_per_process=1, algorithm_options={"bucket_size": bucket})
    cfg = cfg.model_copy(update={"updates_per_process": processes_of(cfg) * bucket * 85 // 100})
    _, record = simulate(cfg)
    return {"machine": machine, "shape": shape, "bucket": bucket,
            "packets_per_block": alltoall_packets_per_block(cfg), "packets": record["packets_injected"],
            "events": record["events"], "judged": (machine, shape, bucket) in JUDGED_CASES}


def _columns(rows: list[dict], n0: float) -> np.ndarray:
    hops = np.array([mean_hops(r["shape"]) for r in rows])
    n = np.array([r["packets_per_block"] for r in rows], dtype=float)
    return np.column_stack([np.ones_like(hops), 1.0 / n, hops, hops * (1.0 - np.exp(-n / n0))])


def fit(rows: list[dict]) -> tuple[float, ...]:
    """(a, m, b, d, n0) of the docstring: least squares on relative error, for the best ``n0`` of a grid."""
    measured = np.array([r["events"] / r["packets"] for r in rows])
    best = None
    for n0 in np.arange(1.0, 200.0, 1.0):
        x = _columns(rows, n0) / measured[:, None]
        coefficients = np.linalg.lstsq(x, np.ones_like(measured), rcond=None)[0]
        error = float(np.sum((x @ coefficients - 1.0) ** 2))
        if best is None or error < best[0]:
            best = (error, tuple(float(v) for v in coefficients) + (float(n0),))
    return best[1]


def modelled(row: dict) -> float:
    return alltoall_events_per_packet(row["packets_per_block"], mean_hops(row["shape"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", help="kept runs (JSON lines) instead of running the cases")
    args = parser.parse_args(argv)
    if args.runs:
        rows = [json.loads(line) for line in open(args.runs, encoding="utf-8") if line.strip()]
    else:
        rows = [run(*case) for case in FIT_CASES + JUDGED_CASES]
        for row in rows:
            print(json.dumps(row), flush=True)
    rows = [r for r in rows if "events" in r] + list(NAMED_RUNS)
    coefficients = fit([r for r in rows if not r["judged"]])
    print("ALLTOALL_EVENTS_PER_PACKET = (%.2f, %.2f, %.2f, %.2f, %.1f)   # shipped: %s" % (
        *coefficients, ALLTOALL_EVENTS_PER_PACKET))
    for row in rows:
        measured = row["events"] / row["packets"]
        print(f"{'judged' if row['judged'] else 'fitted':6s} {row['machine']:8s} {row['shape']:7s} "
              f"{row['packets_per_block']:4d} packets a block, hops {mean_hops(row['shape']):.2f}: "
              f"{measured:6.2f} events a packet, shipped model {modelled(row):6.2f} ({modelled(row) / measured:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
