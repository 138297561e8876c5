"""Seed 002 Fig. 7: fan-in and fan-out to 1-6 torus neighbours.

§3.7: one process sends to (fan-out) or receives from (fan-in) its k nearest
neighbours.  Fan-out peaks near the DMA engine's capability, about 18,000
Mb/s; fan-in saturates at only 13,000 Mb/s, because the receive path has more
overhead.  Calibration: ``dma.rx_packet_overhead_ns`` is fitted on the fan-in
plateau (k = 6) by :func:`gupsim.studies.bgp.fit_rx_overhead` (the full run refits it);
fan-out and the smaller k are judged.  The message a receiver is taking when
the window closes counts for its landed bytes
(:class:`gupsim.engines.reference.microbench.Bandwidth`); counting whole messages made fan-out
to two neighbours 5,638 Mb/s, less than twice one stream's 3,006, because the
second stream's last message had landed 0.1 us before the first stream
finished but its receive call ended 1.3 us later, so it was dropped whole.  The fit was redone after that change
(28.9 ns became 41.15 ns).  Run: ``gupsim reproduce bgp-fig7``.
"""

from __future__ import annotations

import time

from gupsim.studies import bgp
from gupsim.studies.figures import save_figure

REFERENCE = {  # transcribed from seed 002's text
    "fan-out, 6 neighbours": {"value": 18000.0, "unit": "Mb/s", "source": "§3.7, Fig. 7b: 'about 18,000 Mb/s'"},
    "fan-in, 6 neighbours": {"value": 13000.0, "unit": "Mb/s", "source": "§3.7, Fig. 7a: 'saturates at only 13,000'",
                             "role": "calibration"},
}


def reproduce(quick: bool = False, inputs: dict | None = None):
    t0 = time.perf_counter()
    m = bgp.machine()
    ks = (1, 6) if quick else (1, 2, 3, 4, 5, 6)
    window = 4
    size = 65536
    out = {k: bgp.mbps(bgp.fan_bits_per_s(m, k, False, size, window)) for k in ks}
    into = {k: bgp.mbps(bgp.fan_bits_per_s(m, k, True, size, window)) for k in ks}
    sim = {"fan-out, 6 neighbours": out[6], "fan-in, 6 neighbours": into[6]}
    refit = "" if quick else f" Refit now: rx_packet_overhead_ns = {bgp.fit_rx_overhead():.2f} (the YAML holds the fit)."

    def plot(out_dir):
        fig, a = bgp.axes(1)
        a.plot(list(out), list(out.values()), "o-", label="fan-out, simulated")
        a.plot(list(into), list(into.values()), "s-", label="fan-in, simulated")
        a.plot([6, 6], [18000, 13000], "k*", label="seed 002 peaks")
        a.set(xlabel="neighbours", ylabel="aggregate bandwidth [Mb/s]", title="Fig. 7")
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
        return save_figure(fig, out_dir, "bgp-fig7")

    return bgp.comparison(
        "bgp-fig7", "Seed 002 Fig. 7: BG/P fan-in and fan-out", REFERENCE, sim, 0.15,
        f"Core 0 of the centre node of an 8x8x8 torus and its first k neighbours (+x, -x, +y, ...), "
        f"{size // 1024} KB windowed bandwidth streams. Fan-out Mb/s by k: "
        + ", ".join(f"{k}: {v:.0f}" for k, v in out.items()) + "; fan-in: "
        + ", ".join(f"{k}: {v:.0f}" for k, v in into.items()) + "." + refit, t0, plot=plot)
