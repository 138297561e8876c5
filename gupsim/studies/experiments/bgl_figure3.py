"""Seed 000 Figure 3: log-log GUPS against nodes -- CPU and network bounds, baseline and optimized.

The figure's data are Tables 2-4; this experiment draws them with the
simulated values beside the published points:

* published points: baseline (Table 3) and optimized (Table 4) GUPS, and
  Table 4's CPU and network bounds;
* simulated lines: the baseline and ``routed`` GUPS from the Table 3 and
  Table 4 experiments (only the rows they simulated), and their bounds.

Writes ``bgl-figure3.png`` and ``.svg`` beside the CSV.  The CSV holds the
GUPS comparisons for both algorithms (targets as in Tables 3 and 4).
Run: ``gupsim reproduce bgl-figure3``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from gupsim.studies.figures import save_figure
from gupsim.studies.validation import Comparison

NEEDS = ("bgl-table3", "bgl-table4")


def _plot(frame: pd.DataFrame, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    n = frame["nodes"]
    series = [
        ("cpu_bound_gups", "CPU bound (Table 4)", "tab:green", "^"),
        ("network_bound_gups", "network bound (Table 4)", "tab:red", "v"),
        ("baseline_gups", "baseline (Table 3)", "tab:blue", "o"),
        ("optimized_gups", "optimized (Table 4)", "tab:orange", "s"),
    ]
    hollow = False
    for column, label, colour, marker in series:
        ax.plot(n, frame[column], marker, color=colour, label=f"{label}, published", markersize=6, linestyle="none")
        sim = frame[f"sim_{column}"]
        ok = sim.notna()
        if ok.any():
            ax.plot(n[ok], sim[ok], "-", color=colour, label=f"{label.split(' (')[0]}, simulated")
        if f"sim_{column}_low" in frame:
            hollow |= _simulated_points(ax, n[ok], frame[ok], column, colour)
    if hollow:
        ax.plot([], [], "o", mfc="none", color="grey", label="hollow: run too short for a valid 95% interval")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("nodes")
    ax.set_ylabel("GUPS (10$^9$ updates/s); bars: 95% interval of the simulated rate")
    ax.set_title("Blue Gene/L RandomAccess: bounds and performance (seed 000 Fig. 3)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    return save_figure(fig, out_dir, "bgl-figure3", dpi=130)


def _simulated_points(ax, nodes: pd.Series, rows: pd.DataFrame, column: str, colour: str) -> bool:
    """The simulated rates as points: with their 95% interval as a bar where the run gave a valid one, hollow
    where it did not.  True when any point is hollow."""
    low, high = rows[f"sim_{column}_low"].astype(float), rows[f"sim_{column}_high"].astype(float)
    value = rows[f"sim_{column}"].astype(float)
    valid = low.notna() & high.notna()
    if valid.any():
        ax.errorbar(nodes[valid], value[valid], yerr=[value[valid] - low[valid], high[valid] - value[valid]],
                    fmt=".", color=colour, capsize=3, markersize=5)
    if (~valid).any():
        ax.plot(nodes[~valid], value[~valid], "o", mfc="none", color=colour, markersize=6)
    return bool((~valid).any())


def carried_notes(inputs: dict) -> dict:
    """Each table's explanation of a GUPS row that misses, under this figure's column for it: the figure
    shows the same numbers, so it misses on the same rows for the same reasons."""
    notes = {}
    for name, column in (("bgl-table3", "baseline_gups"), ("bgl-table4", "optimized_gups")):
        for (key, col), text in inputs[name].notes.items():
            if text and (col == "gups" or (col == "*" and (key, column) not in notes)):
                notes[(key, column)] = text
    return notes


def reproduce(quick: bool = False, inputs: dict | None = None) -> Comparison:
    t0 = time.perf_counter()
    t3 = inputs["bgl-table3"].frame.set_index("nodes")
    t4 = inputs["bgl-table4"].frame.set_index("nodes")
    nodes = sorted(set(t3.index) | set(t4.index))
    frame = pd.DataFrame({"nodes": nodes})
    frame["baseline_gups"] = frame["nodes"].map(t3["gups"])
    frame["sim_baseline_gups"] = frame["nodes"].map(t3["sim_gups"])
    frame["optimized_gups"] = frame["nodes"].map(t4["gups"])
    frame["sim_optimized_gups"] = frame["nodes"].map(t4["sim_gups"])
    for column, table in (("baseline_gups", t3), ("optimized_gups", t4)):
        for side in ("low", "high"):
            if f"sim_gups_{side}" in table:
                frame[f"sim_{column}_{side}"] = frame["nodes"].map(table[f"sim_gups_{side}"])
    for bound in ("cpu_bound_gups", "network_bound_gups"):
        frame[bound] = frame["nodes"].map(t4[bound])
        frame[f"sim_{bound}"] = frame["nodes"].map(t4[f"sim_{bound}"])
    for column in ("baseline_gups", "optimized_gups", "cpu_bound_gups", "network_bound_gups"):
        frame[f"rel_err_{column}"] = frame[f"sim_{column}"] / frame[column] - 1
    return Comparison(
        name="bgl-figure3",
        title="Seed 000 Figure 3: bounds and GUPS against machine size",
        key="nodes",
        frame=frame,
        targets={"baseline_gups": 0.15, "optimized_gups": 0.15},
        notes=carried_notes(inputs),
        method="The data of Tables 3 and 4 (see those sections); the figure is `bgl-figure3.png`/`.svg`.",
        wall_s=time.perf_counter() - t0,
        plot=lambda out_dir: _plot(frame, out_dir),
    )
