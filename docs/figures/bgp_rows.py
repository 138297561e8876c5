"""Run and cache the simulated Blue Gene/P GUPS rows that docs/bgp.md reads.

The rows are exactly those of ``gupsim reproduce bgp-gups`` (gupsim/studies/experiments/bgp_gups.py): every
partition of :data:`~gupsim.studies.experiments.bgp_gups.FAST_SIMULATED_NODES` in SMP, dual and virtual-node
mode with every algorithm, and in virtual-node mode the algorithms ``FAST_SIMULATED_VN`` names for larger ones,
on the fast engine, each with the length that module gives it as its cap and stopped once its rate is known to
1%, as ``gupsim reproduce`` runs it (``REPRODUCE_PRECISION``; a row cached with another target is run again).
Each run's whole record (DMA and link utilisation, throttle back-offs, send blocking factor, interval,
steady-state flag) is appended as one JSON line to ``docs/research/data/bgp_rows.jsonl`` as soon as it
finishes; rows already there are not run again.

Run (long: minutes per row on a shared box): ``nice -n 10 .venv/bin/python docs/figures/bgp_rows.py``.
``--add RECORD.json ...`` caches records made elsewhere (``gupsim run --json``, say with ``--threads`` or
``--checkpoint``): each is taken only if its configuration is a planned row's exactly, as this script would run it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gupsim.engines.run import run
from gupsim.studies import bgp
from gupsim.studies.experiments import bgp_gups
from gupsim.studies.runpool import config_json, with_precision
from gupsim.studies.validation import REPRODUCE_PRECISION

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs/research/data/bgp_rows.jsonl"
#: Cheapest first, so an interrupted run still leaves the most rows.
ORDER = ("routed", "baseline", "one-packet", "routed-split")


def planned() -> list[tuple[int, str, str, int]]:
    rows = []
    for alg in ORDER:
        for nodes in bgp_gups.NODES:
            for mode, ppn in bgp_gups.MODES.items():
                if not bgp_gups.applies(alg, ppn):
                    continue
                updates = bgp_gups.simulated_updates(nodes, mode, alg)
                if updates is not None:
                    rows.append((nodes, mode, alg, updates))
    return rows


def cached() -> list[dict]:
    if not DATA.exists():
        return []
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def key(r: dict) -> tuple[int, str, str, int, float | None]:
    return r["nodes"], r["mode"], r["algorithm"], r["updates_per_process"], r.get("precision_target")


def planned_configs() -> dict[str, tuple[int, str, str, int]]:
    """The planned rows by their configuration's JSON, as this script runs them."""
    return {config_json(with_precision(bgp_gups.row_config(bgp.PARTITIONS[n], mode, alg, u), REPRODUCE_PRECISION)):
            (n, mode, alg, u) for n, mode, alg, u in planned()}


def add(paths: list[str]) -> int:
    """Cache the records in ``paths`` whose configuration is a planned row's; say which are not, and why."""
    rows, done = planned_configs(), {key(r) for r in cached()}
    for path in paths:
        try:
            rec = json.loads(Path(path).read_text())
            cfg = json.dumps(rec["config"], sort_keys=True)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            print(f"{path}: not a finished run's record ({exc!r}): not added", file=sys.stderr)
            return 2
        if cfg not in rows:
            print(f"{path}: not a planned row's configuration (bgp_gups.row_config at 1%): not added", file=sys.stderr)
            return 2
        nodes, mode, alg, updates = rows[cfg]
        if (nodes, mode, alg, updates, REPRODUCE_PRECISION) in done:
            print(f"{path}: {nodes} {mode} {alg} is cached already", flush=True)
            continue
        _append(nodes, mode, alg, updates, rec)
    return 0


def _append(nodes: int, mode: str, alg: str, updates: int, rec: dict) -> None:
    row = {"nodes": nodes, "shape": bgp.PARTITIONS[nodes], "mode": mode, "algorithm": alg,
           "updates_per_process": updates} | rec
    with DATA.open("a") as f:
        f.write(json.dumps(row, default=float) + "\n")
    print(f"{nodes} {mode} {alg}: {rec['gups']:.3f} GUPS, {rec['wall_s']:.0f} s", flush=True)


def main() -> int:
    if sys.argv[1:2] == ["--add"]:
        return add(sys.argv[2:])
    done = {key(r) for r in cached()}
    only = set(sys.argv[1:])  # optional algorithm names
    for nodes, mode, alg, updates in planned():
        if (nodes, mode, alg, updates, REPRODUCE_PRECISION) in done or (only and alg not in only):
            continue
        rec = run(with_precision(bgp_gups.row_config(bgp.PARTITIONS[nodes], mode, alg, updates), REPRODUCE_PRECISION))
        _append(nodes, mode, alg, updates, rec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
