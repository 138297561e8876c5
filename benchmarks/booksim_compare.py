"""Saturation throughput of a torus in BookSim2, for cross-checking gupsim's router.

What it does
------------
Writes BookSim2 configuration files for uniform random traffic on a k-ary
3-cube torus with dimension-order routing (``routing_function = dim_order``,
which BookSim runs as ``dim_order_torus``: one dateline per ring, the
virtual channels split into two dateline classes, half-ring ties broken at
random), single-flit packets, and sweeps the offered load.  For each point it
runs BookSim in ``sim_type = throughput`` mode and reads the overall
``Accepted flit rate average``.  It prints one row per run and a summary per
configuration:

* ``sat``: the largest accepted rate seen in the sweep (flits/node/cycle);
* ``knee``: the largest offered rate whose accepted rate is still within 5%
  of the offered rate;
* ``/cap``: ``sat`` as a fraction of the uniform-traffic bisection (channel
  load) bound of a k-ary n-cube torus with unit-bandwidth channels,
  ``8/k`` flits/node/cycle (Dally & Towles, *Principles and Practices of
  Interconnection Networks*, 2004, §3.3).  At k=4 that bound is 2, above the
  one flit per cycle a node can eject, so ``/cap`` cannot exceed 0.5 there.

BookSim is not part of gupsim and is not installed by it.  Build it yourself
from its public source (it needs bison, flex and a C++ compiler) and pass the
binary with ``--booksim PATH`` or the ``BOOKSIM`` environment variable.
Without one, the script says so in one line and exits 0.  It is never run by
the test suite.

Usage::

    BOOKSIM=/path/to/booksim python benchmarks/booksim_compare.py
    python benchmarks/booksim_compare.py --booksim /path/to/booksim \\
        --k 8 --vcs-per-class 1 4 --rates 0.1 0.2 0.3 0.5 0.8 --jobs 2
    # a what-if on BookSim's side: its router pipeline shortened to one cycle per packet
    python benchmarks/booksim_compare.py --booksim /path/to/booksim --k 8 --vcs-per-class 1 \\
        --rates 0.5 0.6 --booksim-set routing_delay=0 --booksim-set speculative=1

A run of the 8-ary 3-cube takes 30-90 s of one core at the default sample
lengths; the defaults (two radices, two VC counts, eight rates) take roughly
20-30 minutes on two cores.

gupsim's side (``--gupsim-only``)
---------------------------------
``--gupsim-only --json`` runs gupsim alone, without BookSim, and prints a JSON
list with one object per configuration: ``k``, ``routing`` (``dor`` or
``adaptive``), ``vcs_per_class``, ``router`` and ``saturation``, the accepted
load at saturation as a fraction of capacity, accepted / (8/k) as BookSim's
rows are read above.  Each configuration is one ``one-packet`` run on a k-ary
3-cube torus whose links are slowed to ``--link-bytes-per-s`` (20 MB/s), so
that every node offers more than the network accepts: the run sits past
saturation, and its GUPS over eq. (2)'s bound (``network_bound_fraction``;
eq. (2) is 2N alpha C / b, which for a k-ary 3-cube under uniform traffic is
the same 8/k bisection bound, counted in wire bytes) is its accepted load.
BookSim's saturation is the largest accepted rate of its sweep, which beyond
the knee can be above the rate the network settles to; so gupsim's figure is
the rate past saturation, not the peak of a sweep.

What is set to stand in for BookSim's configuration: one-chunk packets
(``max_chunks_per_packet: 1``, BookSim's ``packet_size = 1``; the bubble is
then one chunk), VCs of ``--vc-buf-size`` chunks (BookSim's ``vc_buf_size``
flits), ``router.escape_vcs`` = VCs per dateline class for ``bgl-vc``, DOR =
``routing: deterministic``; ``adaptive`` adds ``router.dynamic_vcs`` (2, BG/L's
D0 and D1) in front of the escape VCs.  ``bluegene-l`` has one escape buffer
(and one dynamic channel) per link whatever the VC count, so it is run with
one.  Everything else is ``bgl.yaml``'s (half-ring ties ``plus``, FIFO order
in every buffer, FIFOs per dimension).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

DEFAULT_RATES = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.6, 0.9)

_OVERALL = re.compile(r"^Accepted flit rate average = ([0-9.eE+-]+)", re.M)
_SAMPLE = re.compile(r"^Accepted flit rate average= ([0-9.eE+-]+)", re.M)


@dataclass(frozen=True)
class Case:
    k: int
    n: int
    vcs_per_class: int
    vc_buf_size: int
    rate: float
    seed: int
    #: further BookSim configuration lines ("key = value;"), e.g. a shorter router pipeline (what-ifs)
    extra: tuple[str, ...] = ()


def config_text(case: Case) -> str:
    """A BookSim2 configuration for one point of the sweep."""
    return "\n".join(
        [
            "topology = torus;",
            f"k = {case.k};",
            f"n = {case.n};",
            "routing_function = dim_order;",
            # dim_order_torus splits the VCs into two dateline classes
            f"num_vcs = {2 * case.vcs_per_class};",
            f"vc_buf_size = {case.vc_buf_size};",
            "traffic = uniform;",
            "packet_size = 1;",
            f"injection_rate = {case.rate};",
            "sim_type = throughput;",
            f"seed = {case.seed};",
            *case.extra,
            "",
        ]
    )


def run_case(booksim: str, case: Case, workdir: str) -> tuple[Case, float | None, str]:
    tag = re.sub(r"[^A-Za-z0-9]+", "_", "".join(case.extra))
    path = os.path.join(
        workdir, f"k{case.k}_n{case.n}_v{case.vcs_per_class}_b{case.vc_buf_size}_r{case.rate}{tag}.cfg"
    )
    with open(path, "w") as fh:
        fh.write(config_text(case))
    proc = subprocess.run([booksim, path], capture_output=True, text=True)
    out = proc.stdout
    m = _OVERALL.findall(out)
    if m:
        return case, float(m[-1]), "ok"
    m = _SAMPLE.findall(out)
    if m:
        return case, float(m[-1]), "last sample (did not converge)"
    return case, None, f"no result (exit {proc.returncode})"


def gupsim_saturation(k: int, routing: str, vcs_per_class: int, router: str, vc_buf_size: int,
                      link_bytes_per_s: float | None, clock_hz: float | None, updates: int, seed: int,
                      token_return_ns: float = 0.0, engine: str = "auto", sets: dict | None = None) -> dict:
    """One configuration's accepted load past saturation, from one ``one-packet`` run (the docstring says
    how it stands in for BookSim's); ``sets`` are further machine settings, applied last (what-ifs)."""
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config, simulate
    from gupsim.studies.headline import headline_record

    base = {"network.topology": "torus", **({"cpu.clock_hz": clock_hz} if clock_hz else {}),
            **({"network.link_bytes_per_s": link_bytes_per_s} if link_bytes_per_s else {}),
            "network.max_chunks_per_packet": 1, "network.link_buffer_chunks": vc_buf_size,
            "network.routing": "adaptive" if routing == "adaptive" else "deterministic",
            "network.router.name": router}
    if router == "bgl-vc":
        base |= {"network.router.escape_vcs": vcs_per_class, "network.router.vc_depth_chunks": vc_buf_size,
                 "network.router.token_return_ns": token_return_ns}
    machine = load_machine("bgl", base | dict(sets or {}))
    run = make_run_config(machine=machine, shape=f"{k}x{k}x{k}", algorithm="one-packet",
                          updates_per_process=updates, seed=seed, engine=engine)
    rec = headline_record(simulate(run)[1])  # the steady-state rate, the one its interval is of
    return {"k": k, "routing": routing, "vcs_per_class": vcs_per_class, "router": router,
            "saturation": rec["network_bound_fraction"], "saturation_ci": _bound_interval(rec),
            "send_blocking_factor": rec["send_blocking_factor"],
            "link_utilisation_max": rec["link_utilisation_max"], "steady_state": rec["steady_state"],
            "updates_per_process": updates, "link_bytes_per_s": machine.network.link_bytes_per_s,
            "clock_hz": machine.cpu.clock_hz, "vc_depth_chunks": vc_buf_size, "token_return_ns": token_return_ns,
            "engine": rec.get("engine")}


def _bound_interval(rec: dict) -> list[float] | None:
    """The saturation's 95% interval: the record's GUPS interval over the same eq. (2) bound (None without a
    steady state)."""
    low, high, gups = rec.get("gups_ci_low"), rec.get("gups_ci_high"), rec["gups"]
    if low is None or high is None or not gups or low != low:  # NaN: no interval
        return None
    scale = rec["network_bound_fraction"] / gups
    return [low * scale, high * scale]


def gupsim_only(args: argparse.Namespace) -> int:
    rows = []
    for k in args.k:
        for routing in args.routing:
            for router in args.routers:
                for v in (args.vcs_per_class if router == "bgl-vc" else [1]):
                    row = gupsim_saturation(k, routing, v, router, args.vc_buf_size, args.link_bytes_per_s,
                                            args.clock_hz, args.updates, args.seed, args.token_return_ns,
                                            args.engine)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'k':>3} {'routing':>8} {'VC/class':>8} {'router':>10} {'saturation':>10}")
        for r in rows:
            print(f"{r['k']:>3} {r['routing']:>8} {r['vcs_per_class']:>8} {r['router']:>10} {r['saturation']:10.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--booksim", default=os.environ.get("BOOKSIM"), help="path to the booksim binary")
    ap.add_argument("--k", type=int, nargs="+", default=[4, 8], help="radix of each ring")
    ap.add_argument("--n", type=int, default=3, help="dimensions")
    ap.add_argument("--vcs-per-class", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--vc-buf-size", type=int, default=8, help="flits per VC buffer (BookSim default 8)")
    ap.add_argument("--rates", type=float, nargs="+", default=list(DEFAULT_RATES),
                    help="offered loads, flits/node/cycle")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--booksim-set", action="append", default=[], metavar="KEY=VALUE",
                    help="BookSim: a further configuration line, e.g. routing_delay=0 or speculative=1 (repeatable)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--gupsim-only", action="store_true", help="run gupsim's side only, no BookSim")
    ap.add_argument("--json", action="store_true", help="with --gupsim-only: print a JSON list")
    ap.add_argument("--routing", nargs="+", choices=["dor", "adaptive"], default=["dor", "adaptive"])
    ap.add_argument("--routers", nargs="+", default=["bgl-vc", "bluegene-l"], help="gupsim routers to run")
    ap.add_argument("--link-bytes-per-s", type=float, default=20e6,
                    help="gupsim: slowed links, so the CPUs offer more than the torus takes (0: bgl.yaml's)")
    ap.add_argument("--token-return-ns", type=float, default=0.0, help="gupsim bgl-vc: router.token_return_ns")
    ap.add_argument("--clock-hz", type=float, default=0.0,
                    help="gupsim: a faster CPU instead (e.g. 7e9 with --link-bytes-per-s 0), keeping the ratio of "
                    "router delay to packet time bgl.yaml's (0: bgl.yaml's clock)")
    ap.add_argument("--updates", type=int, default=512, help="gupsim: updates per process")
    ap.add_argument("--engine", choices=["auto", "fast", "simpy"], default="auto",
                    help="gupsim: engine (auto: the fast engine, which runs both routers)")
    args = ap.parse_args(argv)
    if args.gupsim_only:
        return gupsim_only(args)

    booksim = args.booksim
    if booksim and not os.path.isabs(booksim):
        booksim = shutil.which(booksim) or booksim
    if not booksim or not os.path.isfile(booksim) or not os.access(booksim, os.X_OK):
        print("booksim_compare: no BookSim binary (set BOOKSIM or pass --booksim); nothing to do.")
        return 0

    extra = tuple(f"{key.strip()} = {value.strip()};" for key, _, value in
                  (item.partition("=") for item in args.booksim_set))
    cases = [
        Case(k, args.n, v, args.vc_buf_size, r, args.seed, extra)
        for k in args.k
        for v in args.vcs_per_class
        for r in args.rates
    ]
    with tempfile.TemporaryDirectory(prefix="booksim_compare_") as tmp:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda c: run_case(booksim, c, tmp), cases))

    print(f"{'k':>3} {'n':>2} {'VC/class':>8} {'buf':>4} {'offered':>8} {'accepted':>9} {'/cap':>6}  note")
    for case, acc, note in results:
        cap = 8.0 / case.k
        acc_s = f"{acc:9.4f}" if acc is not None else f"{'-':>9}"
        frac_s = f"{acc / cap:6.3f}" if acc is not None else f"{'-':>6}"
        print(f"{case.k:>3} {case.n:>2} {case.vcs_per_class:>8} {case.vc_buf_size:>4} "
              f"{case.rate:8.3f} {acc_s} {frac_s}  {note}")

    print()
    print(f"{'k':>3} {'VC/class':>8} {'sat':>7} {'/cap':>6} {'knee':>6}")
    groups: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for case, acc, _ in results:
        if acc is not None:
            groups.setdefault((case.k, case.vcs_per_class), []).append((case.rate, acc))
    for (k, v), pts in sorted(groups.items()):
        sat = max(a for _, a in pts)
        knee = max((r for r, a in pts if a >= 0.95 * r), default=float("nan"))
        print(f"{k:>3} {v:>8} {sat:7.4f} {sat / (8.0 / k):6.3f} {knee:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
