"""How many updates per process each reproduced row needs for a 1% GUPS interval, against its table's fixed
length, and what stopping there saves in CPU time (issue 35; docs/performance-log.md).

For each row (seed 000 Tables 3 and 4, seed 001's UPC one-packet rows, at the sizes given), three runs on the
fast engine, one after another in this process:

* ``fixed``: the table's fixed length, as ``gupsim reproduce --fixed-length`` runs it;
* ``precise``: the same with ``--precision 0.01`` and the fixed length as the cap (``gupsim reproduce``);
* where that cap is not enough, ``longer``: the cap x4, to say how many updates 1% does need (marks, and
  so the stopping rule's granularity, are fractions of the cap: 2% of it, from 20% on).

It prints one Markdown row per table row: the updates per process applied, whether 1% was reached, the
half-width reached, the stopped run's GUPS against the fixed run's (its ``gups``: the 25-75% window), and the
CPU seconds of each run (compile time excluded).

    nice -n 10 .venv/bin/python benchmarks/precision_lengths.py --nodes 32 64 128 256 512 1024

With ``--warm-start`` it prints instead, for Table 4's rows (``routed``, the one algorithm with a warm start:
:mod:`gupsim.algorithms.routed_warm`), cold against warm: a cold fixed run of ``--long`` updates a process
(the long-run reference, its interval after the MSER cut), then cold and warm runs with ``--precision 0.01``
and each of ``--caps`` as the cap: the updates a process applied, whether 1% was reached, the rate and its
interval, whether that interval overlaps the long cold run's (issue 35's adoption rule), and CPU seconds.

    nice -n 10 .venv/bin/python benchmarks/precision_lengths.py --warm-start --nodes 32 128 512 1024 --upc
"""

from __future__ import annotations

import argparse
import time

from gupsim.config.loading import load_machine
from gupsim.engines.run import make_run_config, simulate
from gupsim.studies.experiments import bgl_upc
from gupsim.studies.validation import bgl_partition_shapes, reference_table

PRECISION = 0.01


def _cpu_run(**fields) -> tuple[dict, float]:
    """The record and the CPU seconds the run took, kernel compilation (or loading) left out: the box is
    shared, and wall time moved by 2x between two runs of the same row."""
    t0 = time.process_time()
    rec = simulate(make_run_config(engine="fast", **fields))[1]
    return rec, time.process_time() - t0 - rec["compile_s"]


def _row(label: str, **fields) -> str:
    fixed, fixed_s = _cpu_run(**fields)
    precise, precise_s = _cpu_run(precision=PRECISION, **fields)
    cells = [label, f"{fields['updates_per_process']:,}", _half(fixed), f"{fixed_s:.2f}",
             f"{precise['updates_applied_per_process']:,.0f}", "yes" if precise["precision_reached"] else "no",
             _half(precise), f"{precise['gups'] / fixed['gups'] - 1:+.2%}", f"{precise_s:.2f}",
             f"{precise_s / fixed_s:.2f}"]
    if not precise["precision_reached"]:
        longer, longer_s = _cpu_run(precision=PRECISION,
                                    **(fields | {"updates_per_process": 4 * fields["updates_per_process"]}))
        need = f"{longer['updates_applied_per_process']:,.0f}" if longer["precision_reached"] else "> 4x cap"
        cells.append(f"{need} ({_half(longer)}, {longer_s:.1f} CPU s)")
    else:
        cells.append("")
    return "| " + " | ".join(cells) + " |"


def _half(rec: dict) -> str:
    if rec["precision"] != "ok":
        return "none"
    return f"{(rec['gups_ci_high'] - rec['gups_ci_low']) / 2 / rec['gups_steady']:.2%}"


def _interval(rec: dict) -> str:
    if rec["precision"] != "ok":
        return f"{rec['gups_steady']:.4f} (none)"
    return f"{rec['gups_steady']:.4f} [{rec['gups_ci_low']:.4f}, {rec['gups_ci_high']:.4f}]"


def _overlaps(rec: dict, long: dict) -> str:
    if rec["precision"] != "ok" or long["precision"] != "ok":
        return "n/a"
    return "yes" if rec["gups_ci_low"] <= long["gups_ci_high"] and long["gups_ci_low"] <= rec["gups_ci_high"] else "NO"


def _warm_rows(nodes: list[int], caps: list[int], long_updates: int, long_precision: float) -> None:
    """Cold against warm on Table 4's rows (module docstring)."""
    print(f"| row | cold long ({long_precision:.2%}, cap {long_updates:,}): updates/process, GUPS [95%] | CPU s | start | cap | updates/process | 1% reached "
          "| half-width | GUPS [95%] | overlaps long | CPU s |")
    print("|" + "---|" * 11)
    shapes, bgl = bgl_partition_shapes(), load_machine("bgl")
    for n in nodes:
        fields = {"machine": bgl, "shape": shapes[n], "algorithm": "routed"}
        long, long_s = _cpu_run(updates_per_process=long_updates, precision=long_precision, **fields)
        for warm in (False, True):
            for cap in caps:
                rec, cpu_s = _cpu_run(updates_per_process=cap, precision=PRECISION, warm_start=warm, **fields)
                cells = [f"Table 4 N={n}", f"{long['updates_applied_per_process']:,.0f}, {_interval(long)}",
                         f"{long_s:.1f}", "warm" if warm else "cold", f"{cap:,}",
                         f"{rec['updates_applied_per_process']:,.0f}", "yes" if rec["precision_reached"] else "no",
                         _half(rec), _interval(rec), _overlaps(rec, long), f"{cpu_s:.2f}"]
                print("| " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[32, 64, 128, 256, 512])
    parser.add_argument("--upc", type=int, nargs="*", default=[64, 2048], help="UPC rows (processors)")
    parser.add_argument("--warm-start", action="store_true", help="Table 4's rows, cold against warm")
    parser.add_argument("--caps", type=int, nargs="+", default=[4096, 16384], help="with --warm-start")
    parser.add_argument("--long", type=int, default=65536, help="with --warm-start: the cold reference's cap")
    parser.add_argument("--long-precision", type=float, default=0.0025, help="with --warm-start: its target")
    args = parser.parse_args()
    if args.warm_start:
        _warm_rows(args.nodes, args.caps, args.long, args.long_precision)
        return
    print("| row | fixed updates/process | fixed half-width | fixed CPU s | precise updates/process | 1% reached "
          "| precise half-width | precise GUPS vs fixed | precise CPU s | CPU ratio | needed with a 4x cap |")
    print("|" + "---|" * 11)
    shapes = bgl_partition_shapes()
    bgl = load_machine("bgl")
    for table, algorithm in (("Table 3", "baseline"), ("Table 4", "routed")):
        for n in args.nodes:
            print(_row(f"{table} N={n}", machine=bgl, shape=shapes[n], algorithm=algorithm,
                       updates_per_process=4096), flush=True)
    ref = reference_table("bgl_upc_one_packet.csv")
    local, remote = bgl_upc.fit_overheads(ref, bgl)
    options = bgl_upc.PACKET | {"local_overhead_cycles": local, "remote_overhead_cycles": remote}
    vn = load_machine("bgl", {"cpu.processes_per_node": 2})
    sizes = dict(zip(ref["processors"], ref["log2_table_size"]))
    for p in args.upc:
        print(_row(f"UPC P={p}", machine=vn, shape=bgl_upc.SHAPES[p], algorithm="one-packet",
                   updates_per_process=bgl_upc._updates(p, False), log2_table_size=int(sizes[p]),
                   algorithm_options=options), flush=True)


if __name__ == "__main__":
    main()
