"""Seed 002 Fig. 3: intra-node against inter-node latency and bandwidth.

§3.2: intra-node messages also go through the DMA engine, so the small-message
latency is the same as between nodes (about 2.8 µs) whichever two cores talk,
and the bandwidth is about six times the inter-node one, because the DMA
engine can drive six links.  Nothing is fitted here: the DMA rate is 6 x
425 MB/s (§3.2) and the latency constants come from Figs. 2a and 4.
Run: ``gupsim reproduce bgp-fig3``.
"""

from __future__ import annotations

import time

from gupsim.studies import bgp
from gupsim.studies.figures import save_figure

REFERENCE = {  # transcribed from seed 002's text
    "intra-node latency 0 B": {"value": 2.8, "unit": "us", "source": "§3.2, Fig. 3a (same as Fig. 2a)"},
    "intra / inter latency 0 B": {"value": 1.0, "unit": "ratio", "source": "§3.2: 'identical'"},
    "intra / inter bandwidth 64 KB": {"value": 6.0, "unit": "ratio", "source": "§3.2, Fig. 3b: 'about six-fold'"},
    "core 0-3 / core 0-1 bandwidth": {"value": 1.0, "unit": "ratio", "source": "§3.2: no difference by core"},
}


def reproduce(quick: bool = False, inputs: dict | None = None):
    t0 = time.perf_counter()
    smp, vn = bgp.machine(), bgp.machine(4)
    window = 4 if quick else 8
    inter_lat = bgp.latency(smp, "2x1x1", 0)
    intra_lat = bgp.latency(vn, "2x1x1", 0, src=0, dst=1)
    inter_bw = bgp.bandwidth(smp, "2x1x1", [(0, 1)], 65536, window=window)["bits_per_s"][0]
    intra = {c: bgp.bandwidth(vn, "2x1x1", [(0, c)], 65536, window=window)["bits_per_s"][0] for c in (1, 2, 3)}
    sim = {"intra-node latency 0 B": intra_lat * 1e6, "intra / inter latency 0 B": intra_lat / inter_lat,
           "intra / inter bandwidth 64 KB": intra[1] / inter_bw, "core 0-3 / core 0-1 bandwidth": intra[3] / intra[1]}

    def plot(out_dir):
        fig, (a, b) = bgp.axes()
        a.bar(["inter-node", "core 0-1", "core 0-2", "core 0-3"],
              [inter_lat * 1e6] + [bgp.latency(vn, "2x1x1", 0, src=0, dst=c) * 1e6 for c in (1, 2, 3)])
        a.axhline(2.8, color="k", ls=":", label="seed 002: about 2.8 µs")
        a.set(ylabel="0-byte one-way latency [µs]", title="Fig. 3a")
        b.bar(["inter-node"] + [f"core 0-{c}" for c in intra], [bgp.mbps(inter_bw)] + [bgp.mbps(v) for v in intra.values()])
        b.axhline(6 * bgp.mbps(inter_bw), color="k", ls=":", label="6 x inter-node (seed 002)")
        b.set(ylabel="64 KB bandwidth [Mb/s]", title="Fig. 3b")
        for ax in (a, b):
            ax.legend(fontsize=8)
        return save_figure(fig, out_dir, "bgp-fig3")

    return bgp.comparison(
        "bgp-fig3", "Seed 002 Fig. 3: BG/P intra-node against inter-node", REFERENCE, sim, 0.10,
        f"Virtual-node mode (4 cores) on one node against SMP between neighbours. Inter-node 64 KB bandwidth "
        f"{bgp.mbps(inter_bw):.0f} Mb/s, intra-node {bgp.mbps(intra[1]):.0f} Mb/s. Intra-node latency skips "
        f"the link and router, so it comes out slightly below inter-node.", t0, plot=plot)
