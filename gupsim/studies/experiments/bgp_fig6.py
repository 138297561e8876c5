"""Seed 002 Fig. 6: multistream bandwidth (1-4 cores per node) and hot-spot latency.

§3.5 (Fig. 6a): N cores of one node each stream to their peer on a
neighbouring node.  The peak aggregate bandwidth is the same for any N (the
link limits it), but for medium messages several cores get up to nearly
twice one core's bandwidth, because each core pays its own per-message MPI
cost.  §3.6 (Fig. 6b): every worker ping-pongs one master; the latency each
worker sees grows quickly with the system size.  The seed gives no hot-spot
numbers; the simulated latencies are shown and the tests require growth.
Nothing is fitted.  Run: ``gupsim reproduce bgp-fig6``.
"""

from __future__ import annotations

import time

import pandas as pd

from gupsim.studies import bgp
from gupsim.studies.figures import save_figure

REFERENCE = {  # transcribed from seed 002's text
    "4 cores / 1 core, 64 KB": {"value": 1.0, "unit": "ratio", "source": "§3.5, Fig. 6a: 'peak bandwidth ... the same'"},
    "4 cores / 1 core, 256 B": {"value": 2.0, "unit": "ratio", "source": "§3.5: 'nearly twofold in some cases' (medium sizes)"},
}
SIZES = (64, 256, 1024, 4096, 65536)


def reproduce(quick: bool = False, inputs: dict | None = None):
    t0 = time.perf_counter()
    vn = bgp.machine(4)
    sizes = (256, 65536) if quick else SIZES
    multi = {}
    for cores in (1, 2, 4) if quick else (1, 2, 3, 4):
        pairs = [(c, 4 + c) for c in range(cores)]
        multi[cores] = {s: bgp.bandwidth(vn, "2x1x1", pairs, s, window=8,
                                         iters=2)["aggregate_bits_per_s"] for s in sizes}
    sim = {"4 cores / 1 core, 64 KB": multi[4][65536] / multi[1][65536],
           "4 cores / 1 core, 256 B": multi[4][256] / multi[1][256]}
    smp = bgp.machine()
    hot_nodes = (2, 8, 64) if quick else (2, 8, 64, 128, 256)
    hot = {n: bgp.microbenchmark("hot-spot").run(smp, bgp.PARTITIONS[n], nbytes=1024, iters=2)["latency_s"]
           for n in hot_nodes}
    extra = pd.DataFrame([{"observation": f"hot-spot 1 KB latency, {n} nodes", "sim_value": v * 1e6, "unit": "us",
                           "role": "shown", "source": "§3.6, Fig. 6b: grows with system size (no number)"}
                          for n, v in hot.items()])

    def plot(out_dir):
        fig, (a, b) = bgp.axes()
        for cores, curve in multi.items():
            a.plot(list(curve), [bgp.mbps(v) for v in curve.values()], "o-", label=f"{cores} core(s)")
        a.set(xscale="log", xlabel="message bytes", ylabel="aggregate bandwidth [Mb/s]", title="Fig. 6a (simulated)")
        b.plot(list(hot), [v * 1e6 for v in hot.values()], "o-", label="1 KB, simulated")
        b.set(xscale="log", yscale="log", xlabel="nodes", ylabel="mean worker latency [µs]", title="Fig. 6b (simulated)")
        for ax in (a, b):
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        return save_figure(fig, out_dir, "bgp-fig6")

    return bgp.comparison(
        "bgp-fig6", "Seed 002 Fig. 6: BG/P multistream bandwidth and hot-spot latency", REFERENCE, sim, 0.25,
        "Multistream: virtual-node mode, cores 0..N-1 of node 0 each stream to the same core of node 1. "
        "Aggregate Mb/s by size: " + "; ".join(f"{c} core(s): " + ", ".join(f"{s} B {bgp.mbps(v):.0f}"
                                                                          for s, v in cur.items())
                                               for c, cur in multi.items())
        + ". Hot-spot: SMP mode, core 0 of every other node ping-pongs node 0 with 1 KB messages.",
        t0, extra=extra, plot=plot)
