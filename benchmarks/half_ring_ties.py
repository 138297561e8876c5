"""Measure network.half_ring_ties: each tie rule side by side, network-bound and on the published rows.

(a) ``one-packet`` on 8x8x8 and 4x4x4 tori with ``link_bytes_per_s=20e6`` (network-bound): the fraction of
eq. (2) each rule reaches; (b) seed 000 Table 4's routed rows (512 to 8,192 nodes, 4,096 updates per process,
or ``--big`` for 16,384) and seed 001's UPC one-packet row at 2,048 processes (virtual-node mode), against the
published values.  Prints markdown tables; one JSON line per run goes to ``--out``.

Run: ``python benchmarks/half_ring_ties.py [--part a|b|upc|big] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, simulate
from gupsim.studies.experiments import bgl_upc
from gupsim.studies.validation import bgl_partition_shapes, reference_table
from gupsim.topology.grid import HALF_RING_TIES

KEYS = ("gups", "cycles_per_update", "send_blocking_factor", "link_utilisation_mean", "link_utilisation_max",
        "network_bound_gups", "network_bound_fraction", "steady_state", "wall_s")


def _run(sets: dict, shape: str, algorithm: str, updates: int, options: dict | None = None, **kw) -> dict:
    machine = load_machine("bgl", sets)
    rec = simulate(make_run_config(machine=machine, shape=shape, algorithm=algorithm, updates_per_process=updates,
                                   algorithm_options=options or {}, engine="fast", **kw))[1]
    return {k: rec[k] for k in KEYS}


def _emit(out, row: dict) -> None:
    print(json.dumps(row), file=out, flush=True)
    print(json.dumps(row), file=sys.stderr, flush=True)


def part_a(out, updates: int) -> None:
    for shape in ("4x4x4", "8x8x8"):
        for ties in HALF_RING_TIES:
            sets = {"network.link_bytes_per_s": 20e6, "network.topology": "torus", "network.half_ring_ties": ties}
            _emit(out, {"part": "a", "shape": shape, "ties": ties, "updates": updates,
                        **_run(sets, shape, "one-packet", updates)})


def part_b(out, nodes: list[int], rules: list[str]) -> None:
    ref = reference_table("bgl_table4_routed.csv").set_index("nodes")
    shapes = bgl_partition_shapes()
    for n in nodes:
        for ties in rules:
            rec = _run({"network.half_ring_ties": ties}, shapes[n], "routed", 4096)
            _emit(out, {"part": "table4", "nodes": n, "shape": shapes[n], "ties": ties,
                        "published_gups": float(ref.loc[n, "gups"]),
                        "published_cycles": float(ref.loc[n, "cycles_per_update"]), **rec})


def part_upc(out) -> None:
    ref = reference_table("bgl_upc_one_packet.csv").set_index("processors")
    local, remote = bgl_upc.fit_overheads(ref.reset_index(), load_machine("bgl"))
    options = bgl_upc.PACKET | {"local_overhead_cycles": local, "remote_overhead_cycles": remote}
    for p in (2048,):
        for ties in HALF_RING_TIES:
            sets = {"cpu.processes_per_node": 2, "network.half_ring_ties": ties}
            rec = _run(sets, bgl_upc.SHAPES[p], "one-packet", bgl_upc.UPDATES, options,
                       log2_table_size=int(ref.loc[p, "log2_table_size"]))
            _emit(out, {"part": "upc", "processors": p, "shape": bgl_upc.SHAPES[p], "ties": ties,
                        "published_gups": float(ref.loc[p, "gups"]), **rec})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["a", "b", "upc", "big"], required=True)
    parser.add_argument("--updates", type=int, default=2048, help="per process, part a")
    parser.add_argument("--out", default="-")
    parser.add_argument("--ties", choices=sorted(HALF_RING_TIES), action="append",
                        help="only this rule (repeatable), parts b and big; default: every rule")
    args = parser.parse_args()
    out = sys.stdout if args.out == "-" else open(args.out, "a")
    t0 = time.perf_counter()
    if args.part == "a":
        part_a(out, args.updates)
    elif args.part == "b":
        part_b(out, [512, 1024, 2048, 4096, 8192], args.ties or list(HALF_RING_TIES))
    elif args.part == "big":
        part_b(out, [16384], args.ties or list(HALF_RING_TIES))
    else:
        part_upc(out)
    print(f"# {time.perf_counter() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
