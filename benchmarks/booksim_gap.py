"""Why gupsim's DOR torus with one VC per dateline class saturates 2.5x higher than BookSim2's: measured.

``benchmarks/booksim_compare.py --gupsim-only`` puts gupsim in BookSim's set-up (uniform random
``one-packet`` traffic on a k-ary 3-cube, one-chunk packets, 8-chunk VCs, links slowed until the torus is
the limit) and reads the accepted load past saturation as a fraction of the 8/k bisection bound.  With one
escape VC gupsim reaches 0.611 at k=8 where BookSim2 reaches 0.248.  This script runs the same
configuration (:func:`booksim_compare.gupsim_saturation`, so the two never drift apart) with one difference
from BookSim switched at a time, so that the page can say which differences matter and by how much:

* ``depth``: saturation against ``router.vc_depth_chunks`` (the VC depth, found in no BG/L source: issue 44
  item 1 asks for this sweep), with 1 and 4 escape VCs, at k=4 and k=8.
* ``whatif``: one structural difference at a time, 1 escape VC, 8-chunk VCs:
  head-of-line blocking off (``buffer_order: pool``), one injection FIFO per node (``fifos: shared``, as
  BookSim's one injection port), an 8-chunk injection FIFO (BookSim's injection VC), BookSim's router
  pipeline in packet times (its default routing, VC-allocation, switch-allocation and crossbar delays of one
  cycle each: ``router_delay_ns`` of 3 packet times, the crossbar's cycle being the link's; and its credit
  channel's cycle: ``token_return_ns`` of one packet time), half-ring ties by source parity (BookSim breaks
  them at random), no bubble (``flow_control: none``), and these combined.
* ``pipeline``: saturation against the router delay and token return delay (in packet times), 1 and 4 VCs.
* ``classes`` (no simulation): how BookSim2's dateline classes split each ring link's uniform random traffic.

Every figure is one fast-engine run past saturation (seed ``--seed``); the record's 95% interval is printed
beside it.  With ``--plot FILE`` the depth sweep (and the pipeline sweep, if run) is drawn to FILE; figures are
generated here, never edited by hand.

Run: ``nice python benchmarks/booksim_gap.py --part depth whatif pipeline [--k 4 8] [--updates 1024]
[--json > rows.json] [--plot FILE]``; ``--rows rows.json --plot FILE`` redraws from saved rows, running nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # booksim_compare, the harness this script extends

from booksim_compare import gupsim_saturation

DEPTHS = (2, 3, 4, 6, 8, 16, 32)
VCS = (1, 4)
#: BookSim2's default router pipeline (booksim_config.cpp): routing, VC allocation, switch allocation and the
#: crossbar (st_final_delay) take one cycle each; a credit crosses its channel in one cycle.  With one-flit
#: packets one cycle is one packet time on the link, so gupsim's router delay of 3 packet times plus the head's
#: own crossing stands for the four stages, and a token return of one packet time for the credit channel.
BOOKSIM_ROUTER_PACKETS, BOOKSIM_CREDIT_PACKETS = 3.0, 1.0
PIPELINE = ((0.0, 0.0), (1.0, 0.0), (3.0, 0.0), (0.0, 1.0), (3.0, 1.0), (6.0, 2.0))


def packet_s(link_bytes_per_s: float) -> float:
    """Seconds a one-chunk packet occupies a link in the BookSim set-up (bgl.yaml's chunk, header, trailer)."""
    from gupsim.config import load_machine

    net = load_machine("bgl").network
    return (net.chunk_bytes + net.packet_header_bytes + net.packet_trailer_bytes) / link_bytes_per_s


def pipeline_sets(router_packets: float, credit_packets: float, link_bytes_per_s: float) -> tuple[dict, float]:
    """Machine settings for a router delay of ``router_packets`` packet times, and the token return delay (ns)."""
    p_ns = packet_s(link_bytes_per_s) * 1e9
    return {"network.router_delay_ns": router_packets * p_ns}, credit_packets * p_ns


def whatifs(link_bytes_per_s: float) -> dict[str, tuple[dict, float]]:
    """Each difference from BookSim2, as (machine settings, token return ns), and all of them combined."""
    pipe, token = pipeline_sets(BOOKSIM_ROUTER_PACKETS, BOOKSIM_CREDIT_PACKETS, link_bytes_per_s)
    injection = {"network.fifos": "shared", "network.injection_fifo_chunks": 8}
    return {
        "as compared (bgl-vc, BookSim's sizes)": ({}, 0.0),
        "no head-of-line blocking (buffer_order: pool)": ({"network.buffer_order": "pool"}, 0.0),
        "one injection FIFO per node (fifos: shared)": ({"network.fifos": "shared"}, 0.0),
        "injection FIFO of 8 chunks": ({"network.injection_fifo_chunks": 8}, 0.0),
        "BookSim's injection: one FIFO of 8 chunks": (injection, 0.0),
        "BookSim's pipeline (router 3, credit 1 packet time)": (pipe, token),
        "half-ring ties by source parity": ({"network.half_ring_ties": "source-parity"}, 0.0),
        "no bubble (flow_control: none)": ({"network.flow_control": "none"}, 0.0),
        "BookSim's injection and pipeline": (injection | pipe, token),
    }


def _row(part: str, label: str, k: int, vcs: int, depth: int, args, sets: dict | None = None,
         token_ns: float = 0.0, **extra) -> dict:
    from gupsim.base.errors import GupsimError

    try:
        rec = gupsim_saturation(k, "dor", vcs, "bgl-vc", depth, args.link_bytes_per_s, None, args.updates,
                                args.seed, token_ns, "fast", sets)
    except GupsimError as exc:  # e.g. a what-if without the bubble that deadlocks: say so, go on
        rec = {"saturation": None, "saturation_ci": None, "error": str(exc)}
    row = {"part": part, "case": label, "k": k, "vcs_per_class": vcs, "vc_depth_chunks": depth, **extra,
           **{key: rec.get(key) for key in ("saturation", "saturation_ci", "steady_state", "send_blocking_factor",
                                             "link_utilisation_max", "error")}}
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def depth_part(args) -> list[dict]:
    return [_row("depth", f"depth {d}", k, v, d, args) for k in args.k for v in VCS for d in args.depths]


def whatif_part(args) -> list[dict]:
    return [_row("whatif", label, k, 1, 8, args, sets, token)
            for k in args.k for label, (sets, token) in whatifs(args.link_bytes_per_s).items()]


def pipeline_part(args) -> list[dict]:
    rows = []
    for k in args.k:
        for v in VCS:
            for router_p, credit_p in PIPELINE:
                sets, token = pipeline_sets(router_p, credit_p, args.link_bytes_per_s)
                rows.append(_row("pipeline", f"router {router_p:g}, credit {credit_p:g} packet times", k, v, 8,
                                 args, sets, token, router_packets=router_p, credit_packets=credit_p))
    return rows


def class_shares(k: int) -> list[float]:
    """Per link of a k-ring's + direction, the share of its uniform random traffic in the busier of BookSim2's two
    dateline classes.  BookSim's ``dor_next_torus`` (routefunc.cpp) picks a packet's class once, as it turns into a
    dimension: class 1 if its minimal route wraps past k-1 -> 0, class 0 if not, for the whole ring; a half-ring tie
    goes either way with probability 1/2.  (The - direction mirrors it.)"""
    shares = []
    for link in range(k):  # the link from node ``link`` to node ``link + 1``
        load = [0.0, 0.0]
        for src in range(k):
            for dst in range(k):
                hops = (dst - src) % k
                weight = 1.0 if 0 < 2 * hops < k else 0.5 if 2 * hops == k else 0.0
                if weight and any((src + h) % k == link for h in range(hops)):
                    load[int(src > dst)] += weight
        shares.append(max(load) / sum(load))
    return shares


def classes_part(args) -> list[dict]:
    rows = []
    for k in args.k:
        shares = class_shares(k)
        row = {"part": "classes", "case": "busier dateline class per link", "k": k, "shares": shares,
               "mean": sum(shares) / k}
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    return rows


PARTS = {"depth": depth_part, "whatif": whatif_part, "pipeline": pipeline_part, "classes": classes_part}


def _fmt(row: dict) -> str:
    sat, ci = row["saturation"], row["saturation_ci"]
    if sat is None:
        return f"– ({row['error']})"
    # a run that never passed the steady-state test has the whole run's interval: marked
    return f"{sat:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "") + ("" if row["steady_state"] else " *")


def print_tables(rows: list[dict]) -> None:
    for r in (r for r in rows if r["part"] == "classes"):
        print(f"\nk={r['k']}: share of a + link's traffic in its busier BookSim dateline class, links 0->1 .. "
              f"{r['k'] - 1}->0: {', '.join(f'{x:.2f}' for x in r['shares'])} (mean {r['mean']:.2f})")
    for part in ("depth", "whatif", "pipeline"):
        mine = [r for r in rows if r["part"] == part]
        if not mine:
            continue
        print(f"\n{part}\n\n| k | case | VCs per class | VC depth (chunks) | saturation [95%] | SBF | busiest link |")
        print("|---|---|---|---|---|---|---|")
        for r in mine:
            sbf = "–" if r["send_blocking_factor"] is None else f"{r['send_blocking_factor']:.2f}"
            util = "–" if r["link_utilisation_max"] is None else f"{r['link_utilisation_max']:.2f}"
            print(f"| {r['k']} | {r['case']} | {r['vcs_per_class']} | {r['vc_depth_chunks']} | {_fmt(r)} | {sbf} "
                  f"| {util} |")


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = [p for p in ("depth", "pipeline") if any(r["part"] == p for r in rows)]
    fig, axes = plt.subplots(1, len(parts), figsize=(5.5 * len(parts), 3.8), squeeze=False)
    for ax, part in zip(axes[0], parts):
        mine = [r for r in rows if r["part"] == part and r["saturation"] is not None]
        for k, v in sorted({(r["k"], r["vcs_per_class"]) for r in mine}):
            pts = sorted((r["vc_depth_chunks"] if part == "depth" else r["router_packets"] + r["credit_packets"],
                          r["saturation"]) for r in mine if r["k"] == k and r["vcs_per_class"] == v)
            ax.plot([x for x, _ in pts], [y for _, y in pts], "o-", label=f"k={k}, {v} VC{'s' if v > 1 else ''}")
        ax.set_xlabel("VC depth (chunks; one chunk is one packet here)" if part == "depth"
                      else "router delay + token return (packet times)")
        if part == "depth":
            depths = sorted({r["vc_depth_chunks"] for r in mine})
            ax.set_xscale("log", base=2)
            ax.set_xticks(depths, [str(d) for d in depths])
        ax.set_ylabel("accepted load / (8/k)")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("gupsim bgl-vc, DOR, uniform random traffic past saturation (fast engine)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", nargs="+", choices=list(PARTS), default=["depth", "whatif"])
    ap.add_argument("--k", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS))
    ap.add_argument("--updates", type=int, default=1024, help="updates per process of each run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--link-bytes-per-s", type=float, default=20e6, help="slowed links (booksim_compare's)")
    ap.add_argument("--json", action="store_true", help="print a JSON list instead of markdown tables")
    ap.add_argument("--plot", metavar="FILE", help="draw the depth (and pipeline) sweep to FILE")
    ap.add_argument("--rows", metavar="FILE", help="no runs: tables and plot from an earlier --json output")
    args = ap.parse_args(argv)
    if args.rows:
        rows = json.loads(Path(args.rows).read_text())
    else:
        rows = [row for part in args.part for row in PARTS[part](args)]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print_tables(rows)
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
