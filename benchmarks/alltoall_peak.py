"""Blue Gene/L's all-to-all as a router-level check: the share of the torus's peak that uniform traffic reaches.

What is compared
----------------
Kumar, Sabharwal, Garg and Heidelberger (ICPP 2008) report that BG/L's default MPI all-to-all reached 64% of
peak on the 64x32x32 machine, and Kumar and Heidelberger (IBM RC24327, 2007) about 70% on 40x32x16; their
optimised all-to-all reached over 99% (docs/research/bgl-router-facts.md, row 24; only the abstracts were read,
so what "peak" means is inferred: the all-to-all bound that the longest dimension's bisection sets).

gupsim's side: uniform random traffic, which is what an all-to-all of many destinations in random order offers
the network. Each configuration is one ``one-packet`` run (every update one packet to a random node) on the
shape with links slowed to ``--link-bytes-per-s`` (20 MB/s), so that every node offers more than the torus
accepts, run to a fixed length (``--fixed-length``: every packet injected is delivered, so the record's wire
bytes per update are exact). Its GUPS over eq. (2)'s bound (``network_bound_fraction``: 2N alpha C / b, alpha
the torus's edge expansion, which for these shapes is the longest dimension's bisection) is its share of peak.

What differs from the papers, and is said where the numbers are used:

* **Scale.** ``--scale 4`` runs each machine shrunk four-fold in every dimension (16x8x8 for 64x32x32, 10x8x4
  for 40x32x16): the same proportions, so the same dimension binds. The whole machines are 64 times the nodes.
* **Packets.** One update a packet (44 wire bytes here), not an all-to-all's 256-byte packets of large messages.
* **Use.** A check of the router, not a fitting target: nothing is fitted on these rows.

Usage::

    python benchmarks/alltoall_peak.py [--scale 4] [--updates 1024] [--json OUT]

The defaults run eight configurations (two shapes, two routers, two routings) in about five CPU minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

#: The machines of the published all-to-all rows (their shapes, XxYxZ).
MACHINES = ("64x32x32", "40x32x16")
#: (router, routing): gupsim's torus router as before issue 44, and Blue Gene/L's VC router.
ROUTERS = (("bluegene-l", "deterministic"), ("bluegene-l", "adaptive"),
           ("bgl-vc", "deterministic"), ("bgl-vc", "adaptive"))


def scaled(shape: str, scale: int) -> str | None:
    """``shape`` with every dimension divided by ``scale``; None unless each divides."""
    dims = [int(d) for d in shape.split("x")]
    return None if any(d % scale for d in dims) else "x".join(str(d // scale) for d in dims)


def share_of_peak(shape: str, router: str, routing: str, updates: int, link_bytes_per_s: float, seed: int) -> dict:
    """One configuration's row: its share of eq. (2)'s bound with the 95% interval of its GUPS."""
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config, simulate
    from gupsim.studies.headline import headline_record

    machine = load_machine("bgl", {"network.topology": "torus", "network.link_bytes_per_s": link_bytes_per_s,
                                   "network.router.name": router, "network.routing": routing})
    run = make_run_config(machine=machine, shape=shape, algorithm="one-packet", updates_per_process=updates,
                          seed=seed, precision=None)
    started = time.process_time()
    rec = headline_record(simulate(run)[1])  # the steady-state rate, the one its interval is of
    per_gups = rec["network_bound_fraction"] / rec["gups"]
    low, high = rec.get("gups_ci_low"), rec.get("gups_ci_high")
    interval = [low * per_gups, high * per_gups] if low == low and low is not None else None  # NaN: none
    return {"shape": shape, "router": router, "routing": routing, "share_of_peak": rec["network_bound_fraction"],
            "share_ci": interval, "steady_state": rec["steady_state"], "bytes_per_update": rec["bytes_per_update"],
            "link_utilisation_max": rec["link_utilisation_max"], "send_blocking_factor": rec["send_blocking_factor"],
            "updates_per_process": updates, "link_bytes_per_s": link_bytes_per_s, "seed": seed,
            "cpu_s": time.process_time() - started}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=4, help="shrink each machine this many times in every dimension")
    ap.add_argument("--updates", type=int, default=1024, help="updates per process")
    ap.add_argument("--link-bytes-per-s", type=float, default=20e6, help="slowed links (bytes/s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="OUT", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    if args.scale < 1 or args.updates < 1 or args.link_bytes_per_s <= 0:
        print("alltoall_peak: --scale and --updates must be at least 1, --link-bytes-per-s above 0", file=sys.stderr)
        return 2
    if any(scaled(shape, args.scale) is None for shape in MACHINES):
        print(f"alltoall_peak: --scale {args.scale} does not divide every dimension of {', '.join(MACHINES)}",
              file=sys.stderr)
        return 2
    rows = []
    for machine_shape in MACHINES:
        shape = scaled(machine_shape, args.scale)
        for router, routing in ROUTERS:
            row = {"machine": machine_shape} | share_of_peak(shape, router, routing, args.updates,
                                                            args.link_bytes_per_s, args.seed)
            rows.append(row)
            ci = row["share_ci"]
            print(f"{machine_shape:>9} as {shape:<7} {router:>10} {routing:>13}: {row['share_of_peak']:.3f} "
                  + (f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[no interval]")
                  + ("" if row["steady_state"] else " (no steady state)"), flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
