"""``alltoall`` beside ``baseline`` and ``routed`` on BG/L at 512 and 8,192 nodes: the runs, a table, one figure.

It shows what a BG/L user would see running HPCC 0.5b's bulk-synchronous RandomAccess (a bucket sort,
a barrier and one all-to-all per round, :mod:`gupsim.algorithms.alltoall`) beside HPCC's later MPI code
(``baseline``, seed 000 §6.1) and seed 000's software routing (``routed``, §4.2).  The runs are ``gupsim run``
records, one JSON file each, in a folder; this module names them (:data:`RUNS`), runs the missing ones
(``--run``), and writes ``bgl-alltoall.csv`` and ``bgl-alltoall.png``/``.svg``:

    python -m gupsim.studies.alltoall_bgl RECORDS_DIR OUT_DIR [--run]

``alltoall``'s runs here were made on SimPy (its fast kernel came later, with equal records), at a batch
size (``bucket_size``) far below 0.5b's 2,048 so that a run of several rounds takes minutes: one round sends P - 1 blocks from every process, P(P - 1)
messages, and at P = 8,192 that is 67 million messages per round.  Its 8,192-node run is therefore not made;
the table gives its cost per round from the 512-node run's measured wall time per message instead.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from gupsim.engines.run import make_run_config, run
from gupsim.studies.figures import pyplot, save_figure

MACHINE = "bgl"
SHAPES = {512: "8x8x8", 8192: "16x32x16"}  # gupsim.studies.validation.bgl_partition_shapes()
FAST_UPDATES = 4096  # seed 000's steady-state run length for baseline and routed (bgl-table3, bgl-table4)
#: alltoall's batch: 16 slots per bucket, so that a round at 512 nodes holds a few thousand updates per process.
BUCKET_SIZE, ALLTOALL_UPDATES = 16, 8192
#: (algorithm, nodes, updates per process, options): the runs, each one ``gupsim run``.
RUNS = [("baseline", n, FAST_UPDATES, {}) for n in SHAPES] + [("routed", n, FAST_UPDATES, {}) for n in SHAPES] + [
    ("alltoall", 512, ALLTOALL_UPDATES, {"bucket_size": BUCKET_SIZE})]
NOT_RUN = [("alltoall", 8192)]
COLUMNS = ["algorithm", "nodes", "shape", "updates_per_process", "engine", "gups", "gups_steady", "steady_state",
           "precision", "cycles_per_update", "link_utilisation_max", "sim_time_s", "wall_s", "alg_rounds",
           "alg_messages_sent", "alg_slot_fill", "alg_rank0_barrier_s",
           "alg_rank0_exchange_s", "updates_per_message", "send_blocking_factor"]


def record_name(algorithm: str, nodes: int, updates: int, options: dict) -> str:
    extra = "".join(f"_{k}{v}" for k, v in sorted(options.items()))
    return f"{MACHINE}_{algorithm}_{SHAPES[nodes]}_u{updates}{extra}.json"


def _config(algorithm: str, nodes: int, updates: int, options: dict):
    return make_run_config(machine=MACHINE, shape=SHAPES[nodes], algorithm=algorithm,
                           updates_per_process=updates, algorithm_options=options)


def load_records(records_dir: Path, run_missing: bool = False) -> list[dict]:
    """The records of :data:`RUNS` from ``records_dir``; with ``run_missing``, make the missing ones first."""
    records = []
    for algorithm, nodes, updates, options in RUNS:
        path = records_dir / record_name(algorithm, nodes, updates, options)
        if not path.exists():
            if not run_missing:
                raise SystemExit(f"{path}: no such record (run with --run to make it)")
            path.write_text(json.dumps(run(_config(algorithm, nodes, updates, options))))
        records.append(json.loads(path.read_text()))
    return records


def round_cost(records: list[dict], nodes: int) -> dict:
    """What one ``alltoall`` round would cost on SimPy at ``nodes`` processes, from the measured run's wall
    time per message: P - 1 blocks and ceil(log2 P) barrier messages from each of P processes."""
    measured = next(r for r in records if r["algorithm"] == "alltoall")
    per_message_s = measured["wall_s"] / measured["alg_messages_sent"]
    messages = nodes * (nodes - 1 + (nodes - 1).bit_length())
    return {"algorithm": "alltoall", "nodes": nodes, "shape": SHAPES[nodes], "engine": "not run",
            "messages_per_round": messages, "wall_s_per_round_estimate": messages * per_message_s,
            "wall_s_per_message_measured": per_message_s}


def table(records: list[dict]) -> pd.DataFrame:
    rows = [{c: r.get(c) for c in COLUMNS} | {"nodes": r["processes"]} for r in records]
    rows += [round_cost(records, n) for _, n in NOT_RUN]
    return pd.DataFrame(rows)


def figure(frame: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Left: GUPS against nodes, one line per algorithm.  Right: where a round of ``alltoall`` goes at 512
    nodes, from rank 0's counters (barrier, exchange, and the rest: filling buckets and applying)."""
    plt = pyplot()
    fig, (ax, anatomy) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    styles = {"baseline": ("tab:blue", "o"), "routed": ("tab:green", "s"), "alltoall": ("tab:red", "D")}
    ran = frame[frame["engine"] != "not run"]
    for algorithm, (color, marker) in styles.items():
        rows = ran[ran["algorithm"] == algorithm].sort_values("nodes")
        what = (f"alltoall (HPCC 0.5b, {BUCKET_SIZE}-slot buckets, SimPy)" if algorithm == "alltoall"
                else f"{algorithm} (fast engine)")
        ax.plot(rows["nodes"], rows["gups"], marker=marker, color=color, linestyle="-", label=what)
    for _, row in frame[frame["engine"] == "not run"].iterrows():
        ax.annotate(f"alltoall at {row['nodes']:,}: not run\n({row['messages_per_round'] / 1e6:.0f} M messages "
                    f"per round,\n~{row['wall_s_per_round_estimate'] / 3600:.0f} h of SimPy each)",
                    (row["nodes"], ran["gups"].min()), fontsize=8, color="tab:red", ha="right", va="bottom")
    ax.set(xscale="log", yscale="log", xlabel="BG/L nodes (1 process each)",
           ylabel="GUPS (alltoall: whole run; others: window)",
           title="RandomAccess on BG/L: three MPI algorithms")
    ax.minorticks_off()
    ax.set_xticks(sorted(SHAPES))
    ax.set_xticklabels([f"{n:,}" for n in sorted(SHAPES)])
    ax.legend(fontsize=8, loc="center left")
    a2a = ran[ran["algorithm"] == "alltoall"].iloc[0]
    rounds = a2a["alg_rounds"]
    barrier, exchange = a2a["alg_rank0_barrier_s"] / rounds, a2a["alg_rank0_exchange_s"] / rounds
    rest = a2a["sim_time_s"] / rounds - barrier - exchange
    parts = {"barrier": barrier, "all-to-all exchange": exchange, "fill buckets + apply": rest}
    anatomy.bar(list(parts), [v * 1e3 for v in parts.values()], color=["tab:gray", "tab:red", "tab:orange"])
    anatomy.set(ylabel="ms per round (rank 0, mean)",
                title=f"alltoall at 512 nodes: one round of {rounds:.0f}\n"
                      f"({a2a['updates_per_message']:.1f} updates per block, "
                      f"{a2a['alg_slot_fill']:.0%} of its slots)")
    anatomy.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    return save_figure(fig, out_dir, "bgl-alltoall")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path, help="folder of the runs' JSON records")
    parser.add_argument("out", type=Path, help="folder for bgl-alltoall.csv/.png/.svg")
    parser.add_argument("--run", action="store_true", help="make the missing records (alltoall: SimPy, slow)")
    args = parser.parse_args(argv)
    frame = table(load_records(args.records, args.run))
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "bgl-alltoall.csv", index=False)
    figure(frame, args.out)
    print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
