"""Seed 002 Fig. 2: inter-node (one hop) ping-pong latency and unidirectional bandwidth.

§3.1: about 2.8 µs small-message latency, in cache or not (zero-copy DMA),
and about 3 Gb/s for large messages.  Calibration: ``mpi.latency_small_cycles``
(the per-message MPI call cost, split half and half between sender and
receiver) is fitted jointly with ``network.router_delay_ns`` on the 2.8 µs
here and Fig. 4's +100% (:func:`gupsim.studies.bgp.fit_latency_constants`); the
large-message bandwidth is not fitted: it follows from 425 MB/s links and
240 data bytes in a 268-byte packet on the wire.
Run: ``gupsim reproduce bgp-fig2``.
"""

from __future__ import annotations

import time

from gupsim.studies import bgp
from gupsim.studies.figures import save_figure

REFERENCE = {  # transcribed from seed 002's text
    "latency 0 B, 1 hop": {"value": 2.8, "unit": "us", "source": "§3.1, Fig. 2a", "role": "calibration"},
    "bandwidth 64 KB, 1 hop": {"value": 3000.0, "unit": "Mb/s", "source": "§3.1, Fig. 2b ('about 3 Gb/s')"},
}
LAT_SIZES = (0, 8, 64, 512, 1024, 4096)
BW_SIZES = (256, 1024, 4096, 16384, 65536)


def reproduce(quick: bool = False, inputs: dict | None = None):
    t0 = time.perf_counter()
    m = bgp.machine()
    lat = {s: bgp.latency(m, "2x1x1", s) * 1e6 for s in (LAT_SIZES[:3] if quick else LAT_SIZES)}
    bw = {s: bgp.mbps(bgp.bandwidth(m, "2x1x1", [(0, 1)], s, window=4 if quick else 8)["bits_per_s"][0])
          for s in ((1024, 65536) if quick else BW_SIZES)}
    fit_note = ""
    if not quick:
        c, r = bgp.fit_latency_constants()
        fit_note = f" Refit now: latency_small_cycles = {c:.1f}, router_delay_ns = {r:.2f} (the YAML holds the fit)."
    sim = {"latency 0 B, 1 hop": lat[0], "bandwidth 64 KB, 1 hop": bw[65536]}

    def plot(out_dir):
        fig, (a, b) = bgp.axes()
        a.plot(list(lat), list(lat.values()), "o-", label="simulated")
        a.axhline(2.8, color="k", ls=":", label="seed 002: about 2.8 µs")
        a.set(xscale="symlog", xlabel="message bytes", ylabel="one-way latency [µs]", title="Fig. 2a")
        b.plot(list(bw), list(bw.values()), "o-", label="simulated")
        b.axhline(3000, color="k", ls=":", label="seed 002: about 3 Gb/s")
        b.set(xscale="log", xlabel="message bytes", ylabel="bandwidth [Mb/s]", title="Fig. 2b")
        for ax in (a, b):
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        return save_figure(fig, out_dir, "bgp-fig2")

    return bgp.comparison(
        "bgp-fig2", "Seed 002 Fig. 2: BG/P inter-node latency and bandwidth (one hop)", REFERENCE, sim, 0.10,
        "Ping-pong (half the round trip) and windowed unidirectional bandwidth between neighbouring nodes, "
        "SMP mode. Targets are transcribed from the seed's text. Latency by size (µs): "
        + ", ".join(f"{k} B {v:.2f}" for k, v in lat.items()) + ". Bandwidth by size (Mb/s): "
        + ", ".join(f"{k} B {v:.0f}" for k, v in bw.items()) + "." + fit_note, t0, plot=plot)
