"""Events per CPU second of two source trees, side by side: the way to measure an engine change on a noisy box.

This VM drifts 10-30% between hours, so a number measured this hour and compared with one measured last hour
says little.  This script runs each case in a fresh subprocess per tree, alternating which tree goes first on
every repetition, and keeps each tree's best events per CPU second (the least disturbed run); the ratio
``head / base`` is the figure to quote (docs/performance-log.md).  It also checks that both trees give the same
GUPS and event count for a case, so a speed change that moved a record is seen at once.

    python benchmarks/side_by_side.py --base /path/to/old/checkout --head . --reps 3

Each tree is imported through ``PYTHONPATH`` with this interpreter, so both must be importable by it (same
dependencies).  Kernels are compiled before the timed run, in the child, and not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

#: (machine, shape, algorithm, updates per process, machine overrides): whole-network cases of each kernel.
CASES = [("bgl", "16x16x16", "routed", 64, {}), ("bgl", "16x16x16", "one-packet", 16, {}),
         ("bgl", "16x16x16", "baseline", 32, {}), ("bgp", "8x8x8", "routed", 512, {"cpu.processes_per_node": 4})]


def child(machine: str, shape: str, algorithm: str, updates: int, sets: dict) -> None:
    """One timed run in this process; prints its events, wall and CPU seconds, and GUPS as JSON."""
    from gupsim.config import load_machine
    from gupsim.engines.run import compile_all, make_run_config, simulate

    compile_all()
    config = make_run_config(machine=load_machine(machine, sets), shape=shape, algorithm=algorithm,
                             updates_per_process=updates, engine="fast")
    before = resource.getrusage(resource.RUSAGE_SELF)
    record = simulate(config)[1]
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(json.dumps({"events": record["events"], "wall_s": record["wall_s"], "cpu_s": cpu_s, "gups": record["gups"]}))


def _one(tree: Path, case: tuple) -> dict | None:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(case)], env=env, cwd=tree,
                         capture_output=True, text=True)
    if out.returncode:
        print(f"{tree}: {case[:3]} failed: {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(trees: dict[str, Path], reps: int) -> None:
    for case in CASES:
        runs: dict[str, list[dict]] = {label: [] for label in trees}
        for rep in range(reps):
            for label in (list(trees) if rep % 2 == 0 else list(trees)[::-1]):
                row = _one(trees[label], case)
                if row is not None:
                    runs[label].append(row)
        best = {label: max(r["events"] / r["cpu_s"] for r in rows) for label, rows in runs.items() if rows}
        same = len({(r["gups"], r["events"]) for rows in runs.values() for r in rows}) == 1
        ratio = best["head"] / best["base"] if len(best) == 2 else float("nan")
        print(f"{case[0]} {case[1]} {case[2]}: events per CPU s base {best.get('base', 0):,.0f} "
              f"head {best.get('head', 0):,.0f}  head/base {ratio:.3f}  records {'equal' if same else 'DIFFER'}")


def main(argv: list[str] | None = None) -> None:
    if argv is None and sys.argv[1:2] == ["--child"]:
        child(*json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the checkout to compare against")
    parser.add_argument("--head", type=Path, default=Path("."), help="the checkout measured (default: here)")
    parser.add_argument("--reps", type=int, default=2, help="runs per tree and case, alternating (default 2)")
    args = parser.parse_args(argv)
    for label in ("base", "head"):
        if not (getattr(args, label) / "gupsim" / "__init__.py").is_file():
            parser.error(f"--{label} {getattr(args, label)} is not a gupsim checkout (no gupsim/__init__.py)")
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    compare({"base": args.base.resolve(), "head": args.head.resolve()}, args.reps)


if __name__ == "__main__":
    main()
