"""Measure the large-machine mechanisms of docs/research/bgl-large-machine-limits.md on the published rows.

Each mechanism is a machine option, off in bgl.yaml.  For ``cache.routed_working_set: round-robin`` the
per-hop cost ``cpu.route_hop_cycles`` is refitted on Table 4's N = 32 row with the mechanism on, as
bgl.yaml's value is fitted with it off (the calibration rule: fitted on N = 32, judged on the rest).

Parts (one JSON line per run to ``--out``, fast engine, seed 0):

* ``fit``: the refit of ``cpu.route_hop_cycles`` per mechanism;
* ``table4``: seed 000 Table 4's routed rows (co-processor mode) for ``--nodes``;
* ``vn``: the same rows in virtual-node mode (§6.2).

Run: ``python benchmarks/bgl_mechanisms.py --part table4 --nodes 512 1024 --mechanism round-robin``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, simulate
from gupsim.studies.experiments.bgl_table4 import FIT_ROW, fit_route_hop_cycles
from gupsim.studies.validation import bgl_partition_shapes, reference_table

KEYS = ("gups", "cycles_per_update", "send_blocking_factor",
        "link_utilisation_mean", "link_utilisation_max", "network_bound_gups", "network_bound_fraction",
        "alg_lookup_miss_cycles_per_hop", "alg_software_hops_per_update", "alg_send_blocking_factor_polled",
        "steady_state", "wall_s")

#: Each mechanism's machine overrides.  ``today`` is the model before the research page: routed's L1 misses on
#: its lookup table only, with the per-hop cost fitted on N = 32 under that model (116.6).
MECHANISMS: dict[str, dict] = {
    "today": {"cache.routed_working_set": "lookup", "cpu.route_hop_cycles": 116.6},
    "round-robin": {"cache.routed_working_set": "round-robin"},
}
#: Refitted ``cpu.route_hop_cycles`` (the ``fit`` part's output, recorded here so a table run is reproducible).
REFIT: dict[str, float] = {"round-robin": 112.7}


def _sets(mechanism: str) -> dict:
    sets = dict(MECHANISMS[mechanism])
    if mechanism in REFIT:
        sets["cpu.route_hop_cycles"] = REFIT[mechanism]
    return sets


def _run(sets: dict, shape: str, updates: int) -> dict:
    machine = load_machine("bgl", sets)
    rec = simulate(make_run_config(machine=machine, shape=shape, algorithm="routed", updates_per_process=updates,
                                   engine="fast"))[1]
    return {k: rec.get(k) for k in KEYS}


def _emit(out, row: dict) -> None:
    print(json.dumps(row), file=out, flush=True)
    print(json.dumps(row), file=sys.stderr, flush=True)


def part_fit(out, mechanism: str) -> None:
    ref = reference_table("bgl_table4_routed.csv").set_index("nodes")
    sets = {k: v for k, v in MECHANISMS[mechanism].items() if k != "cpu.route_hop_cycles"}
    hop = fit_route_hop_cycles(float(ref.loc[FIT_ROW, "cycles_per_update"]), overrides=sets)
    _emit(out, {"part": "fit", "mechanism": mechanism, "route_hop_cycles": hop})


def part_rows(out, part: str, mechanism: str, nodes: list[int], updates: int) -> None:
    ref = reference_table("bgl_table4_routed.csv").set_index("nodes")
    shapes = bgl_partition_shapes()
    ppn = 2 if part == "vn" else 1
    for n in nodes:
        sets = _sets(mechanism) | {"cpu.processes_per_node": ppn}
        rec = _run(sets, shapes[n], updates)
        _emit(out, {"part": part, "mechanism": mechanism, "nodes": n, "shape": shapes[n], "updates": updates,
                    "route_hop_cycles": sets.get("cpu.route_hop_cycles", load_machine("bgl").cpu.route_hop_cycles),
                    "published_gups": float(ref.loc[n, "gups"]),
                    "published_cycles": float(ref.loc[n, "cycles_per_update"]), **rec})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["fit", "table4", "vn"], required=True)
    parser.add_argument("--mechanism", choices=sorted(MECHANISMS), default="today")
    parser.add_argument("--nodes", type=int, nargs="*", default=[512, 1024, 2048, 4096, 8192])
    parser.add_argument("--updates", type=int, default=4096, help="per process")
    parser.add_argument("--out", default="-")
    args = parser.parse_args()
    out = sys.stdout if args.out == "-" else open(args.out, "a")
    t0 = time.perf_counter()
    if args.part == "fit":
        part_fit(out, args.mechanism)
    else:
        part_rows(out, args.part, args.mechanism, args.nodes, args.updates)
    print(f"# {time.perf_counter() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
