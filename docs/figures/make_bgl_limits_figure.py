"""Figure and tables of docs/research/bgl-large-machine-limits.md, from measured runs.

Reads ``docs/research/data/bgl_mechanisms.jsonl`` (written by ``benchmarks/bgl_mechanisms.py``) and seed 000
Table 4 (``gupsim/data/reference/bgl_table4_routed.csv``).  Draws ``docs/figures/bgl-limits.png``/``.svg``:
published GUPS against nodes, the simulated rows of today's model and of the model with each mechanism, each
model's CPU bound (calibrated on the N = 32 row, as ``cpu.route_hop_cycles`` is), and the published bounds
(the paper's CPU projection and eq. (2)).  Rewrites the measured tables of the page between its
``<!-- bgl-mechanisms-rows -->`` and ``<!-- bgl-mechanisms-vn -->`` markers.

Run: ``.venv/bin/python docs/figures/make_bgl_limits_figure.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from gupsim.config import load_machine
from gupsim.model.routed_cache import ROUTED_CACHE_MODELS
from gupsim.studies.figures import pyplot, save_figure
from page_blocks import replace_block  # this folder's module: the scripts run from here
from gupsim.studies.validation import bgl_partition_shapes, reference_table

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs/research/data/bgl_mechanisms.jsonl"
PAGE = ROOT / "docs/research/bgl-large-machine-limits.md"
LABELS = {"today": "before: lookup-only working set", "round-robin": "adopted: round-robin working set"}
NAMES = {"today": "lookup (before)", "round-robin": "round-robin (adopted)"}
MODELS = {"today": "lookup", "round-robin": "round-robin"}


def _records() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def _hops(lengths) -> float:
    return sum((n - 1) / n for n in lengths)


def _miss_per_update(cache, shape, model: str) -> float:
    lengths = list(shape)
    ranks = math.prod(shape)
    return ROUTED_CACHE_MODELS[model](cache, lengths, ranks, 1024 // sum(lengths), 29, 1) * _hops(lengths)


def cpu_bound_gups(nodes: int, model: str, published_32: float) -> float:
    """N clock / (t_g + t_u + hops (h + misses)), h calibrated so that N = 32 costs its published cycles."""
    machine = load_machine("bgl")
    shapes = {n: tuple(int(v) for v in s.split("x")) for n, s in bgl_partition_shapes().items()}
    local = machine.cpu.generate_cycles + machine.cpu.update_cycles
    h32 = _hops(shapes[32])
    per_hop = (published_32 - local - _miss_per_update(machine.cache, shapes[32], model)) / h32
    shape = shapes[nodes]
    cycles = local + _hops(shape) * per_hop + _miss_per_update(machine.cache, shape, model)
    return nodes * machine.cpu.clock_hz / cycles / 1e9


def _err(sim: float, pub: float) -> str:
    return f"{(sim - pub) / pub:+.1%}"


def rows_table(recs: list[dict]) -> str:
    ref = reference_table("bgl_table4_routed.csv").set_index("nodes")
    lines = ["| nodes | mechanism | GUPS (pub.) | err | cycles/update (pub.) | err | SBF | SBF polled | "
             "miss cycles/update | link util. mean / max |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted((r for r in recs if r["part"] == "table4"), key=lambda r: (r["nodes"], r["mechanism"])):
        n = r["nodes"]
        pub_g, pub_c = float(ref.loc[n, "gups"]), float(ref.loc[n, "cycles_per_update"])
        hops = r.get("alg_software_hops_per_update") or _hops([int(v) for v in r["shape"].split("x")])
        polled = r.get("alg_send_blocking_factor_polled")
        lines.append(
            f"| {n:,} | {NAMES[r['mechanism']]} | {r['gups']:.3f} ({pub_g}) | {_err(r['gups'], pub_g)} | "
            f"{r['cycles_per_update']:.1f} ({pub_c:.0f}) | {_err(r['cycles_per_update'], pub_c)} | "
            f"{r['send_blocking_factor']:.3f} | {'–' if polled is None else f'{polled:.3f}'} | "
            f"{hops * r['alg_lookup_miss_cycles_per_hop']:.1f} | "
            f"{r['link_utilisation_mean']:.3f} / {r['link_utilisation_max']:.3f} |")
    by_mech: dict[str, list[float]] = {}
    for r in recs:
        if r["part"] == "table4":
            by_mech.setdefault(r["mechanism"], []).append(
                abs(r["gups"] - float(ref.loc[r["nodes"], "gups"])) / float(ref.loc[r["nodes"], "gups"]))
    common = sorted({r["nodes"] for r in recs if r["part"] == "table4" and r["mechanism"] == "today"}
                    & {r["nodes"] for r in recs if r["part"] == "table4" and r["mechanism"] == "round-robin"})
    lines.append("")
    for mech in sorted(by_mech):
        errs = [abs(r["gups"] - float(ref.loc[r["nodes"], "gups"])) / float(ref.loc[r["nodes"], "gups"])
                for r in recs if r["part"] == "table4" and r["mechanism"] == mech and r["nodes"] in common]
        if errs:
            lines.append(f"- {NAMES[mech]}: mean abs. GUPS error over the rows both mechanisms were run on "
                         f"({', '.join(f'{n:,}' for n in common)}; N = 32 is the calibration row): "
                         f"{sum(errs) / len(errs):.2%}, "
                         f"worst {max(errs):.1%}")
    return "\n".join(lines)


def vn_table(recs: list[dict]) -> str:
    co = {(r["mechanism"], r["nodes"]): r for r in recs if r["part"] == "table4"}
    lines = ["| nodes | mechanism | GUPS CO | GUPS VN | VN / CO (pub. ~1.7; 1.1 at 16,384) | SBF CO | SBF VN "
             "(pub. 0.01 / 0.42 at 16,384) | SBF VN polled | link util. VN mean / max |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted((r for r in recs if r["part"] == "vn"), key=lambda r: (r["nodes"], r["mechanism"])):
        c = co.get((r["mechanism"], r["nodes"]))
        if c is None:
            continue
        polled = r.get("alg_send_blocking_factor_polled")
        lines.append(
            f"| {r['nodes']:,} | {NAMES[r['mechanism']]} | {c['gups']:.3f} | {r['gups']:.3f} | {r['gups'] / c['gups']:.3f} | "
            f"{c['send_blocking_factor']:.3f} | {r['send_blocking_factor']:.3f} | "
            f"{'–' if polled is None else f'{polled:.3f}'} | "
            f"{r['link_utilisation_mean']:.3f} / {r['link_utilisation_max']:.3f} |")
    return "\n".join(lines)


def figure(recs: list[dict]) -> None:
    ref = reference_table("bgl_table4_routed.csv")
    plt = pyplot()
    fig, (ax, rel) = plt.subplots(1, 2, figsize=(13, 5.0))
    nodes = ref["nodes"].tolist()
    published = dict(zip(nodes, ref["gups"]))
    ax.plot(nodes, ref["gups"], "ko-", label="published (seed 000 Table 4)", zorder=5)
    ax.plot(nodes, ref["cpu_bound_gups"], "k:", label="published CPU bound (§6.2 projection)")
    ax.plot(nodes, ref["network_bound_gups"], "k--", label="published network bound, eq. (2)")
    rel.axhline(1.0, color="k", lw=1)
    rel.plot(nodes, ref["network_bound_gups"] / ref["gups"], "k--", label="published network bound, eq. (2)")
    rel.axhspan(0.85, 1.15, color="0.9", label="within 15%")
    pub32 = float(ref.set_index("nodes").loc[32, "cycles_per_update"])
    for mech, colour, marker in (("today", "tab:blue", "o"), ("round-robin", "tab:orange", "s")):
        bound = [cpu_bound_gups(n, MODELS[mech], pub32) for n in nodes]
        for axis, values in ((ax, bound), (rel, [b / published[n] for b, n in zip(bound, nodes)])):
            axis.plot(nodes, values, color=colour, lw=1, alpha=0.7,
                      label=f"{LABELS[mech]}: CPU bound (fit on N = 32)")
        pts = sorted((r["nodes"], r["gups"]) for r in recs if r["part"] == "table4" and r["mechanism"] == mech)
        if pts:
            ax.plot(*zip(*pts), marker, color=colour, ls="none", ms=7, mfc="none", label=f"{LABELS[mech]}: simulated")
            rel.plot([n for n, _ in pts], [g / published[n] for n, g in pts], marker, color=colour, ls="none",
                     ms=7, mfc="none", label=f"{LABELS[mech]}: simulated")
    for axis in (ax, rel):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("nodes (co-processor mode)")
        axis.grid(True, which="both", alpha=0.3)
    ax.set_yscale("log")
    ax.set_ylabel("GUPS")
    ax.set_title("routed on Blue Gene/L: GUPS")
    ax.legend(fontsize=8, loc="upper left")
    rel.set_ylim(0.5, 3.0)
    rel.set_ylabel("GUPS / published GUPS")
    rel.set_title("relative to the published rate")
    rel.legend(fontsize=8, loc="center left")
    save_figure(fig, ROOT / "docs/figures", "bgl-limits", source="docs/figures/make_bgl_limits_figure.py")


def main() -> None:
    recs = _records()
    figure(recs)
    text = PAGE.read_text()
    text = replace_block(text, "bgl-mechanisms-rows", rows_table(recs), PAGE)
    text = replace_block(text, "bgl-mechanisms-vn", vn_table(recs), PAGE)
    PAGE.write_text(text)


if __name__ == "__main__":
    main()
