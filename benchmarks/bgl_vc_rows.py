"""Table rows for BG/L's VC router on the published rows where the router could matter (issue 44).

Reads the records of finished ``gupsim run --json`` runs (one file per run; Table 4's configuration: ``routed``,
4,096 updates per process, fixed length) and prints one markdown row per record, with the published values
read from the package's reference tables, never typed in here:

* GUPS with its 95% interval, and the error against the published row with the interval's error range.
  Co-processor rows are judged against seed 000 Table 4 (``bgl_table4_routed.csv``).  Virtual-node rows have
  no published GUPS; seed 000 §6.2 gives the gain over co-processor mode (``bgl_section62.csv``), so a VN row
  is shown against Table 4's CO row times that gain, and, given a CO record of the same router and size, as
  the simulated gain against the published one (in points).
* SBF beside §6.2's published SBF at that size and mode, if the text gives one.
* The busiest link's utilisation, peak memory and wall time, as the record has them.
* A CPU busy share, derived (the record has no busy counter): the modelled work per update, generate + update
  + software hops x (per-hop cost + modelled lookup misses per hop), times each process's update rate, over
  the clock.  It leaves out polling and waiting, which is the point: 1 is a CPU that never waits.

Run: ``python benchmarks/bgl_vc_rows.py RECORD.json [RECORD.json ...]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gupsim.studies.validation import reference_table


def router_label(rec: dict) -> str:
    net = rec["config"]["machine"]["network"]
    name = net["router"]["name"]
    return f"`{name}` {net['routing']}" + (f", {net['router']['escape_vcs']} escape VCs"
                                           if name == "bgl-vc" and net["router"]["escape_vcs"] != 1 else "")


def mode(rec: dict) -> str:
    return "VN" if rec["config"]["machine"]["cpu"]["processes_per_node"] == 2 else "CO"


def cpu_busy_share(rec: dict) -> float:
    """Modelled CPU work per update times each process's update rate, over the clock (see the module docstring)."""
    cpu = rec["config"]["machine"]["cpu"]
    hops = rec["alg_software_hops_per_update"]
    work = cpu["generate_cycles"] + cpu["update_cycles"] + hops * (
        cpu["route_hop_cycles"] + rec["alg_lookup_miss_cycles_per_hop"])
    return rec["gups"] * 1e9 / rec["processes"] * work / cpu["clock_hz"]


def published(nodes: int, run_mode: str) -> tuple[float | None, float | None, float | None]:
    """(published or derived GUPS, §6.2's VN/CO gain at ``nodes`` or None, §6.2's SBF or None)."""
    table4 = reference_table("bgl_table4_routed.csv").set_index("nodes")["gups"]
    text = reference_table("bgl_section62.csv")
    pick = text[(text["case"] == ("sbf_vn" if run_mode == "VN" else "sbf_co")) & (text["nodes"] == nodes)]
    sbf = float(pick["value"].iloc[0]) if len(pick) else None
    gain = text[(text["case"] == "vn_gain") & (text["nodes"] == nodes)]
    gain_v = float(gain["value"].iloc[0]) if len(gain) else None
    co = float(table4.loc[nodes]) if nodes in table4.index else None
    if run_mode == "CO":
        return co, gain_v, sbf
    return (co * gain_v if co is not None and gain_v is not None else None), gain_v, sbf


def row(rec: dict, co_of: dict) -> str:
    n, run_mode = rec["nodes"], mode(rec)
    pub, gain, sbf_pub = published(n, run_mode)
    lo, hi, g = rec["gups_ci_low"], rec["gups_ci_high"], rec["gups"]
    err = (f"{g / pub - 1:+.1%} [{lo / pub - 1:+.1%}, {hi / pub - 1:+.1%}]" if pub else "–")
    co = co_of.get((n, router_label(rec)))
    gain_cell = "–"
    if run_mode == "VN" and co is not None and gain is not None:
        sim_gain = g / co["gups"]
        gain_cell = f"{sim_gain - 1:+.1%} (pub. {gain - 1:+.0%}; {100 * (sim_gain - gain):+.1f} points)"
    pub_cell = "–" if pub is None else (f"{pub:.2f}" + (" (Table 4 CO x §6.2 gain)" if run_mode == "VN" else ""))
    sbf_cell = f"{rec['send_blocking_factor']:.3f}" + (f" (pub. {sbf_pub})" if sbf_pub is not None else "")
    return (f"| {n:,} {run_mode} ({rec['shape']}) | {router_label(rec)} | {g:.3f} [{lo:.3f}, {hi:.3f}] | {pub_cell} "
            f"| {err} | {gain_cell} | {sbf_cell} | {rec['link_utilisation_max']:.3f} | {cpu_busy_share(rec):.2f} "
            f"| {rec['wall_s'] / 60:.0f} min, {rec['peak_rss_mb'] / 1024:.1f} GB |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", help="files holding one gupsim run --json record each")
    args = ap.parse_args(argv)
    records = []
    for path in args.records:
        try:
            records.append(json.loads(Path(path).read_text()))
        except (OSError, ValueError) as exc:
            print(f"bgl_vc_rows.py: {path}: not a finished run's record ({exc})", file=sys.stderr)
            return 2
    co_of = {(r["nodes"], router_label(r)): r for r in records if mode(r) == "CO"}
    print("| row | router | GUPS [95%] | published | error [interval] | VN gain over CO | SBF | busiest link "
          "| CPU busy share | wall, peak memory |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rec in sorted(records, key=lambda r: (r["nodes"], mode(r), router_label(r))):
        print(row(rec, co_of))
    return 0


if __name__ == "__main__":
    sys.exit(main())
