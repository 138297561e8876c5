"""Figure and tables of docs/bgp.md: what limits Blue Gene/P's RandomAccess, from the runs' own counters.

Reads the simulated rows cached by ``docs/figures/bgp_rows.py`` (``docs/research/data/bgp_rows.jsonl``, the
rows of ``gupsim reproduce bgp-gups`` with their whole records), the analytic bounds of every row of that
experiment (gupsim/studies/experiments/bgp_gups.py), seed 000 Table 4 (BG/L, published), the simulated BG/L
Table 4 rows cached by ``benchmarks/bgl_mechanisms.py`` (``docs/research/data/bgl_mechanisms.jsonl``, the
adopted round-robin working set) and the public BG/P point beyond the seeds
(``gupsim/data/reference/bgp_hpcc_public.csv``).  Nothing is fitted to the public point; it is only divided by
the bounds.

Draws ``docs/figures/bgp-limits.png``/``.svg`` and rewrites the page's tables between its
``<!-- bgp-NAME -->`` and ``<!-- /bgp-NAME -->`` markers.

The limiting resource of a simulated row is read from four shares of its record:

* **CPU**: the cycles each update must cost by the model's own accounting over the cycles it took (processes x clock
  / rate, the rate after the warm-up cut where the row's interval is valid, else the whole run's).  For ``routed``, ``one-packet`` and ``routed-split`` the cycles of the row's CPU
  bound; for ``baseline`` :meth:`gupsim.algorithms.baseline.Baseline.steady_cycles_per_update` at the run's
  own updates per message (its MPI calls, the per-message and per-iteration tests, which the bound leaves out);
* **DMA**: the busier of the injection and reception engines' utilisation, on the busiest node;
* **links**: the busiest link's utilisation;
* **throttling**: the share of packets that backed off at their first link, and the send blocking factor
  (the share of the cores' time blocked on a full injection FIFO).

The limit is the largest of the CPU, DMA and link shares when it is at least 0.5; throttling when at least
half the packets backed off and the SBF is at least 0.1; otherwise "none saturated" (a start-up or
latency-dominated run).

Run: ``.venv/bin/python docs/figures/make_bgp_figure.py`` (after ``bgp_rows.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from gupsim.algorithms.baseline import Baseline
from gupsim.studies import bgp
from gupsim.studies.experiments import bgp_gups
from gupsim.studies.estimate import config_run_s
from gupsim.studies.figures import pyplot, save_figure
from page_blocks import replace_block  # this folder's module: the scripts run from here
from gupsim.studies.validation import reference_table

ROOT = Path(__file__).resolve().parents[2]
BGP_DATA = ROOT / "docs/research/data/bgp_rows.jsonl"
BGL_DATA = ROOT / "docs/research/data/bgl_mechanisms.jsonl"
PAGE = ROOT / "docs/bgp.md"
RACK_NODES = 1024
SATURATED = 0.5
COLOURS = {"SMP": "tab:blue", "dual": "tab:orange", "VN": "tab:green"}
STYLES = {"baseline": "-.", "routed": "-", "one-packet": ":", "routed-split": "--"}
#: Modes drawn side by side at each size (x multiplied), so their points do not hide each other.
JITTER = {"SMP": 0.92, "dual": 1.0, "VN": 1.08}
MARKERS = {"baseline": "s", "routed": "o", "one-packet": "v", "routed-split": "^"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_gups(r: dict) -> float:
    """The whole run's rate, which obeys every bound by construction."""
    return r["updates_applied"] / r["sim_time_s"] / 1e9


def rate(r: dict) -> float:
    """The row's rate: after the warm-up cut where its 95% interval is valid (a run stopped once precise, whose
    whole-run average still carries its start-up), else the whole run's, which obeys every bound."""
    return r["gups_steady"] if r["precision"] == "ok" else run_gups(r)


def model_cycles(r: dict) -> float:
    """Cycles an update must cost by the model's accounting (see the module docstring)."""
    m = bgp_gups._machine(bgp_gups.MODES[r["mode"]])
    if r["algorithm"] == "baseline":
        return Baseline.steady_cycles_per_update(m, r["processes"], r["updates_per_message"])
    cpu = bgp_gups.cpu_bound(m, r["shape"], r["algorithm"])
    return r["processes"] * m.cpu.clock_hz / (cpu * 1e9)


def shares(r: dict) -> dict:
    m = bgp_gups._machine(bgp_gups.MODES[r["mode"]])
    took = r["processes"] * m.cpu.clock_hz / (rate(r) * 1e9)
    return {"cpu": model_cycles(r) / took,
            "dma": max(r["dma_tx_utilisation_max"], r["dma_rx_utilisation_max"]),
            "links": r["link_utilisation_max"],
            "backed_off": r["throttle_waits"] / r["packets_injected"] if r["packets_injected"] else 0.0,
            "sbf": r["send_blocking_factor"]}


def limit(s: dict) -> str:
    if s["backed_off"] >= SATURATED and s["sbf"] >= 0.1:
        return "throttling"
    name = max(("cpu", "dma", "links"), key=s.get)
    if s[name] >= SATURATED:
        return {"cpu": "CPU", "dma": "DMA engine", "links": "links"}[name]
    return f"none saturated (most: {name} {s[name]:.2f})"


def _rows() -> list[dict]:
    out = []
    for r in sorted(_jsonl(BGP_DATA), key=lambda r: (r["nodes"], list(bgp_gups.MODES).index(r["mode"]),
                                                      bgp_gups.ALGORITHMS.index(r["algorithm"]))):
        r = r | bgp_gups.row_bounds(r["shape"], r["mode"], r["algorithm"])
        r["shares"] = shares(r)
        r["limit"] = limit(r["shares"])
        out.append(r)
    return out


def _interval(r: dict) -> str:
    if r["precision"] != "ok":
        return "none"
    return f"{r['gups_steady']:.3f} [{r['gups_ci_low']:.3f}, {r['gups_ci_high']:.3f}]"


def limits_table(rows: list[dict]) -> str:
    lines = ["| nodes | mode | algorithm | updates/proc | GUPS window | GUPS run | 95% interval | steady | "
             "CPU bound | net. bound | rate / CPU bound | CPU share | DMA tx max / rx max | link mean / max | "
             "backed off / pkt | SBF | limit |", "|" + "---|" * 17]
    for r in rows:
        s = r["shares"]
        lines.append(
            f"| {r['nodes']:,} | {r['mode']} | {r['algorithm']} | {r['updates_per_process']:,} | {r['gups']:.3f} | "
            f"{run_gups(r):.3f} | {_interval(r)} | {'yes' if r['steady_state'] else 'no'} | "
            f"{r['cpu_bound_gups']:.3f} | {r['network_bound_gups']:.1f} | {rate(r) / r['cpu_bound_gups']:.2f} | "
            f"{s['cpu']:.2f} | {r['dma_tx_utilisation_max']:.3f} / {r['dma_rx_utilisation_max']:.3f} | "
            f"{r['link_utilisation_mean']:.3f} / {r['link_utilisation_max']:.3f} | {s['backed_off']:.3f} | "
            f"{s['sbf']:.3f} | {r['limit']} |")
    return "\n".join(lines)


def steady_note(rows: list[dict]) -> str:
    """Which rows their records call steady (a valid interval at most 5% wide either side), which not."""
    def names(rs):
        return ", ".join(f"{r['nodes']:,} {r['mode']} {r['algorithm']}" for r in rs) or "none"
    steady = [r for r in rows if r["steady_state"]]
    valid = [r for r in rows if r["precision"] == "ok" and not r["steady_state"]]
    other = [r for r in rows if r["precision"] != "ok"]
    over = [r for r in rows if r["gups"] > r["bound_gups"] * (1 + 1e-9)]
    return (f"- Windowed rate above the row's smaller bound (a start-up-dominated window; the whole-run rate is "
            f"under it): {names(over)}.\n"
            f"- At a steady state by its record ({len(steady)} of {len(rows)}): {names(steady)}.\n"
            f"- A valid interval, wider than 5%: {names(valid)}.\n"
            f"- **Not at a steady state, no valid interval** (`precision` \"insufficient\"; {len(other)} of "
            f"{len(rows)}): {names(other)}.")


def summary(rows: list[dict]) -> str:
    """Per algorithm: its limit in each simulated row, and the range of each share over its rows."""
    lines = []
    for alg in bgp_gups.ALGORITHMS:
        rs = [r for r in rows if r["algorithm"] == alg]
        if not rs:
            continue
        where = "; ".join(f"{r['nodes']:,} {r['mode']}: {r['limit']}" for r in rs)

        def span(key):
            values = [r["shares"][key] for r in rs]
            return f"{min(values):.2f}-{max(values):.2f}"
        frac = [rate(r) / r["bound_gups"] for r in rs]
        lines.append(f"- **{alg}**: {where}. CPU share {span('cpu')}, DMA {span('dma')}, busiest link "
                     f"{span('links')}, packets backed off {span('backed_off')}, SBF {span('sbf')}; rate "
                     f"(steady where its interval is valid, else whole-run) {min(frac):.2f}-{max(frac):.2f} of the smaller bound.")
    dma = max(r["shares"]["dma"] for r in rows)
    lines.append(f"- The DMA engine is the limit of no simulated row: its busiest engine on any node of any row "
                 f"was {dma:.2f} busy.")
    return "\n".join(lines)


def _all_bounds() -> list[dict]:
    return [{"nodes": n, "mode": mode, "algorithm": alg} | bgp_gups.row_bounds(bgp.PARTITIONS[n], mode, alg)
            for n in bgp_gups.NODES for mode, ppn in bgp_gups.MODES.items() for alg in bgp_gups.ALGORITHMS
            if bgp_gups.applies(alg, ppn)]


def _wall(r: dict) -> str:
    """A row's wall time and peak memory from its record, with the threads it ran on (one where not recorded)."""
    threads = r.get("threads") or 1
    return (f"{r['wall_s'] / 60:.1f} min on {threads} thread{'s' * (threads != 1)}, "
            f"{r['peak_rss_mb'] / 1024:.1f} GB")


def _estimated_wall(n: int, mode: str, alg: str) -> str:
    """The cost model's one-core time of a row not simulated, at its cap (a 1% stop may end it sooner)."""
    cfg = bgp_gups.row_config(bgp.PARTITIONS[n], mode, alg, bgp_gups.FAST_UPDATES)
    return f"not run; about {config_run_s('fast', cfg) / 3600:.1f} h on 1 thread by the cost model, at its cap"


def best_table(rows: list[dict]) -> str:
    """The best simulated row at each simulated size with its wall time; beyond, the largest bound among the
    algorithms whose bound the simulation came near (``baseline``'s leaves out its MPI calls: it ran at a few per
    cent of it), with the cost model's estimate of that row's run."""
    header = ["| nodes | what | best algorithm, mode | GUPS | its limit | smaller bound | largest simulated run / "
              "bound of this algorithm and mode | wall time |", "|---|---|---|---|---|---|---|---|"]
    lines = {}
    simulated = sorted({r["nodes"] for r in rows})
    for n in simulated:
        b = max((r for r in rows if r["nodes"] == n), key=rate)
        what = "steady rate, 95% interval " + _interval(b) if b["precision"] == "ok" else \
            f"whole-run rate, no valid interval (windowed {b['gups']:.3f})"
        lines[n] = (f"| {n:,} | simulated ({what}) | {b['algorithm']}, {b['mode']} | {rate(b):.3f} | {b['limit']} | "
                     f"{b['bottleneck']} {b['bound_gups']:.3f} | {rate(b) / b['bound_gups']:.2f} | {_wall(b)} |")
    reached = {}
    for r in rows:
        key = (r["algorithm"], r["mode"])
        reached[key] = max(reached.get(key, 0.0), rate(r) / r["bound_gups"])
    bounds = [b for b in _all_bounds() if b["algorithm"] != "baseline"]
    for n in bgp_gups.NODES:
        if n in simulated:
            continue
        b = max((x for x in bounds if x["nodes"] == n), key=lambda x: x["bound_gups"])
        got = reached.get((b["algorithm"], b["mode"]))
        lines[n] = (f"| {n:,} | bounds only (not simulated) | {b['algorithm']}, {b['mode']} | "
                     f"≤ {b['bound_gups']:.2f} | – | {b['bottleneck']} {b['bound_gups']:.2f} | "
                     f"{'–' if got is None else f'{got:.2f}'} | {_estimated_wall(n, b['mode'], b['algorithm'])} |")
    return "\n".join(header + [lines[n] for n in sorted(lines)])


def public_table(rows: list[dict]) -> str:
    pub = reference_table("bgp_hpcc_public.csv").iloc[0]
    nodes, value = int(pub["nodes"]), float(pub["value"])
    lines = [f"| mode | algorithm | CPU bound | network bound | smaller bound | {value:g} GUPS / smaller bound |",
             "|---|---|---|---|---|---|"]
    for b in _all_bounds():
        if b["nodes"] == nodes:
            lines.append(f"| {b['mode']} | {b['algorithm']} | {b['cpu_bound_gups']:.2f} | "
                         f"{b['network_bound_gups']:.2f} | {b['bound_gups']:.2f} ({b['bottleneck']}) | "
                         f"{value / b['bound_gups']:.1%} |")
    # What one router core per node would have to cost per software hop to route the public rate.
    m = bgp_gups._machine(4)
    shape = [int(v) for v in bgp.PARTITIONS[nodes].split("x")]
    hops = sum((n - 1) / n for n in shape)
    per_node = value * 1e9 / nodes
    budget = m.cpu.clock_hz / (per_node * (1 - 1 / nodes))
    per_hop = (budget - 2 * bgp_gups.HANDOFF_CYCLES) / hops
    lines += ["", f"- {value:g} GUPS on {nodes:,} nodes is {per_node / 1e6:.2f} M updates per second per node: one "
              f"router core at {m.cpu.clock_hz / 1e6:.0f} MHz would have {budget:.0f} cycles per remote update, "
              f"{per_hop:.0f} cycles per software hop over {hops:.2f} hops after the two hand-offs "
              f"({bgp_gups.HANDOFF_CYCLES:g} cycles each, assumed), against the model's assumed "
              f"route_hop_cycles {m.cpu.route_hop_cycles:g}."]
    for r in (r for r in rows if r["nodes"] == nodes):
        lines.append(f"- Simulated at this size: {r['algorithm']} in {r['mode']} mode, {rate(r):.2f} GUPS"
                     + (f" [{r['gups_ci_low']:.2f}, {r['gups_ci_high']:.2f}]" if r["precision"] == "ok" else "")
                     + f"; the public rate is {value / rate(r):.2f} of it.")
    return "\n".join(lines)


def _bgl_panel(ax) -> None:
    ref = reference_table("bgl_table4_routed.csv")
    ax.plot(ref["nodes"], ref["gups"], "ko-", label="published (seed 000 Table 4)")
    ax.plot(ref["nodes"], ref["cpu_bound_gups"], "k:", label="published CPU bound (§6.2)")
    ax.plot(ref["nodes"], ref["network_bound_gups"], "k--", label="published network bound, eq. (2)")
    sim = sorted((r["nodes"], r["gups"]) for r in _jsonl(BGL_DATA)
                 if r["part"] == "table4" and r["mechanism"] == "round-robin")
    ax.plot(*zip(*sim), "o", color="tab:green", mfc="none", ms=8,
            label="simulated, windowed (bgl_mechanisms.jsonl; no valid interval: hollow)")
    ax.set_title("Blue Gene/L, routed, co-processor mode")


def _bgp_panel(ax, rows: list[dict]) -> None:
    bounds = _all_bounds()
    for alg in ("routed", "routed-split", "one-packet", "baseline"):
        pts = [(b["nodes"], b["bound_gups"]) for b in bounds if b["mode"] == "VN" and b["algorithm"] == alg]
        ax.plot(*zip(*pts), STYLES[alg], color="0.35", lw=1.2, marker=MARKERS[alg], ms=3,
                label=f"VN {alg}: smaller analytic bound")
    hollow = False
    for r in rows:
        colour, marker = COLOURS[r["mode"]], MARKERS[r["algorithm"]]
        x = r["nodes"] * JITTER[r["mode"]]
        if r["precision"] == "ok":
            ax.errorbar([x], [r["gups_steady"]], fmt=marker, color=colour, capsize=3, ms=6,
                        yerr=[[r["gups_steady"] - r["gups_ci_low"]], [r["gups_ci_high"] - r["gups_steady"]]])
        else:
            ax.plot([x], [r["gups"]], marker, color=colour, mfc="none", ms=7)
            hollow = True
    for mode, colour in COLOURS.items():
        ax.plot([], [], "o", color=colour, label=f"simulated, {mode} mode")
    for alg, marker in MARKERS.items():
        ax.plot([], [], marker, color="k", mfc="none", ls="none", label=f"simulated {alg}")
    ax.errorbar([], [], yerr=[], fmt="o", color="grey", capsize=3, label="filled, with bar: rate after warm-up, 95% interval")
    if hollow:
        ax.plot([], [], "o", color="grey", mfc="none", ls="none",
                label="hollow: no valid 95% interval (windowed rate shown)")
    pub = reference_table("bgp_hpcc_public.csv").iloc[0]
    ax.plot([pub["nodes"]], [pub["value"]], "*", color="tab:red", ms=14,
            label=f"public: {pub['value']:g} GUPS, 32 racks, SC08 (not fitted)")
    ax.set_title(f"Blue Gene/P: simulated to {max(r['nodes'] for r in rows):,} nodes, bounds beyond")


def figure(rows: list[dict]) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.5), sharey=True)
    _bgl_panel(axes[0])
    _bgp_panel(axes[1], rows)
    for ax in axes:
        ax.set(xscale="log", yscale="log", xlabel="nodes")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].set_ylim(0.004, None)
    axes[0].legend(fontsize=7, loc="upper left")
    axes[1].legend(fontsize=6.5, loc="lower right", ncol=2)
    axes[0].set_ylabel("GUPS: updates applied per second / 1e9\n(simulated: 25-75% window of a run)")
    save_figure(fig, ROOT / "docs/figures", "bgp-limits", source="docs/figures/make_bgp_figure.py")


def main() -> None:
    rows = _rows()
    figure(rows)
    text = PAGE.read_text()
    text = replace_block(text, "bgp-steady", steady_note(rows), PAGE)
    text = replace_block(text, "bgp-limits", limits_table(rows), PAGE)
    text = replace_block(text, "bgp-summary", summary(rows), PAGE)
    text = replace_block(text, "bgp-best", best_table(rows), PAGE)
    text = replace_block(text, "bgp-public", public_table(rows), PAGE)
    PAGE.write_text(text)


if __name__ == "__main__":
    main()
