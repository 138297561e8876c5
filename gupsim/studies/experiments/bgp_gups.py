"""Blue Gene/P RandomAccess (GUPS) scaling table: 512 to 40,960 nodes in SMP, dual and virtual-node mode.

For every partition (8x8x8 up to 40 racks), mode (SMP: 1 process per node,
dual: 2, virtual-node: 4) and algorithm (``baseline``, ``routed``,
``one-packet``, and with 2 or 4 processes per node ``routed-split``, in which
one core per node only routes and the others only generate and update) the
table gives three analytic upper bounds, each derived here for each algorithm:

* **network** (sparsest cut, seed 000 §3.2 eq. 2): ``(2N / b) alpha C`` with
  ``b`` the fewest wire bytes an update can cost: 32 + 12 = 44 for
  ``one-packet`` (one chunk per update); for the aggregating algorithms a full
  256-byte packet (268 bytes on the wire) carrying ``(256 - 16) / 8 = 30``
  updates (the 16 being the DMA header), so b = 8.93.  Any software header
  only lowers the rate, so this stays a bound;
* **CPU** (seed 000 §3.1): eq. (1) for ``one-packet`` (without ``t_o^p``,
  which the simulated algorithm does not charge); for the others the
  cycles every update must cost however well packets are amortised:
  ``baseline`` ``t_g + t_u + bucket insert``; ``routed`` ``t_g + t_u + E[hops]
  route_hop_cycles`` with ``E[hops] = sum (L - 1) / L`` over x, y, z and, with
  several processes per node, the core; ``routed-split`` the slower of the
  node's workers (``t_g + t_u + 2 f handoff`` each, ``f`` the remote fraction)
  and its router (``f (E[hops] route_hop_cycles + 2 handoff)``);
* **DMA** (seed 002 §3.2: one engine per node injects, and one receives, every
  packet of every core, intra-node ones too): ``N engine_bytes_per_s / (b h)``
  with ``h`` the times an update is sent (:func:`dma_injections_per_update`).
  With bgp.yaml's 2.55 GB/s it is 6 (``one-packet``, 44 bytes an update) to 52
  times the smaller of the other two on every row, so it never binds the table; it is there for the what-ifs
  that slow the engine or speed everything else up.

Per-core cycle costs (all assumed, seed 002 gives none for BG/P; see
gupsim/data/machines/bgp.yaml): ``t_g + t_o^s`` = 18 and ``t_u`` = 86 (BG/L, seed
000 §5.2), raw send/receive from seed 000 Table 1, ``t_o^p`` = 2.08 and
``route_hop_cycles`` (BG/L's fits on Tables 2 and 4, made with the pool buffer order
this DMA model uses), hand-off 10
(assumed, gupsim/algorithms/routed_split.py), all at 850 MHz.

There is no published BG/P GUPS table, so nothing here has a published
target and no column is "compared".  The ``simulated`` flag marks the rows
that were run (full run only).  Every algorithm has a fast kernel
(gupsim/engines/fast/, which models the DMA engine bit for bit), and every row of
the partitions of :data:`FAST_SIMULATED_NODES` runs on the fast engine at
:data:`FAST_UPDATES` updates per process at most (each row stops once its rate
is known to 1%, as ``gupsim reproduce`` runs it), and in virtual-node mode
the algorithms :data:`FAST_SIMULATED_VN` names for the larger ones; a row no kernel could run
would be bounds only.  ``sim_gups`` is the run record's rate: its interval's where the row
reached 1%, else the windowed rate (25-75 % of updates applied), which in a short run can exceed a bound; ``sim_gups_run`` is the
whole run's average, which cannot, and ``sim_fraction_of_bound`` is that over
the smallest bound (the "smaller bound" of the checks lines: the DMA's never binds with bgp.yaml);
``sim_engine`` says which engine ran the row.  The
checks lines say whether every simulated row stays at or under its bounds, by
its whole-run rate and by its windowed rate
(tests/studies/test_bgp_gups.py checks the same on small partitions in the default
suite).  Nothing is extrapolated.  Run: ``gupsim reproduce bgp-gups``.
"""

from __future__ import annotations

import functools
import time

import pandas as pd

from gupsim.studies import bgp
from gupsim.model.bounds import bounds, cpu_bound_gups, machine_topology, network_bound_gups
from gupsim.studies.figures import save_figure
from gupsim.engines.run import ENGINES, MIN_STEADY_UPDATES, make_run_config, run
from gupsim.studies.runpool import SERIAL, RunPool
from gupsim.studies.validation import Comparison

NODES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 40960)
MODES = {"SMP": 1, "dual": 2, "VN": 4}
ALGORITHMS = ("baseline", "routed", "one-packet", "routed-split")
#: The fast engine's rows (full run only): the partitions and the updates per process they run, the length from
#: which a window's rate is stable (at 1,024 the windowed rate of routed on 4x4x4 was 2-3% above its CPU bound,
#: the buckets still filling; at 4,096 and 8,192 both rates are under it, within 1% of each other).
FAST_SIMULATED_NODES = (512, 1024)
#: Larger partitions simulated in virtual-node mode only: nodes -> the algorithms run there.  ``routed`` and
#: ``one-packet`` to 8,192 nodes (the held-back packets' queue makes the throttle cost a few events per packet:
#: docs/performance-log.md); from 16,384 nodes ``routed`` alone, the best algorithm by every bound there and the
#: cheapest to run (about 4 events an update against one-packet's 24-38: docs/bgp.md, "Beyond 8,192 nodes", gives
#: each row's measured cost and the estimates of the rows not run).  The other rows are bounds.
FAST_SIMULATED_VN = {2048: ("routed", "one-packet"), 4096: ("routed", "one-packet"), 8192: ("routed", "one-packet"),
                     16384: ("routed",), 32768: ("routed",)}
#: Every row's cap; ``gupsim reproduce`` stops a row once its rate is known to 1% (one-packet on 16x16x16 in VN
#: mode stopped at 1,229 updates a process, 205 CPU s; on 8x8x8 VN it ran to the cap, 36 CPU s, without an interval).
FAST_UPDATES = MIN_STEADY_UPDATES
HANDOFF_CYCLES = 10.0  # routed-split's default (assumed; see gupsim/algorithms/routed_split.py)
UPDATE_BYTES = 8


def applies(alg: str, ppn: int) -> bool:
    return alg != "routed-split" or ppn > 1


def bytes_per_update(m, alg: str) -> float:
    """The fewest wire bytes one update can cost with this algorithm."""
    net = m.network
    if alg == "one-packet":
        return net.chunk_bytes + net.wire_overhead_bytes
    full = net.max_chunks_per_packet * net.chunk_bytes + net.wire_overhead_bytes
    return full / ((net.max_payload_bytes - m.dma.header_bytes) // UPDATE_BYTES)


def node_hops(topo) -> float:
    """Software hops over x, y and z an update takes on average, its destination uniform:
    ``sum (L - 1) / L`` (seed 000 §4.2); ``routed`` adds the core hop, ``(P - 1) / P``."""
    return sum((length - 1) / length for length in topo.shape)


def cpu_bound(m, shape: str, alg: str) -> float:
    """Upper bound on GUPS from the per-core cycles each update must cost (see the docstring)."""
    topo = machine_topology(m, shape)
    cpu, ppn, nodes = m.cpu, m.cpu.processes_per_node, topo.num_nodes
    if alg == "one-packet":
        # Eq. (1) without t_o^p: the simulated one-packet does not charge it, and a bound must hold for it.
        b = bounds(m, shape)
        return cpu_bound_gups(b.processes, cpu.clock_hz, b.t_local_cycles, b.t_send_cycles, b.t_recv_cycles)[0]
    local = cpu.generate_cycles + cpu.update_cycles
    hops = node_hops(topo)
    if alg == "baseline":
        cycles = local + m.mpi.bucket_insert_cycles
    elif alg == "routed":
        cycles = local + (hops + (ppn - 1) / ppn) * cpu.route_hop_cycles
    else:  # routed-split, one router core per node
        remote = 1 - 1 / nodes
        workers = ppn - 1
        worker_rate = workers / (local + 2 * remote * HANDOFF_CYCLES)
        router_rate = 1 / (remote * (hops * cpu.route_hop_cycles + 2 * HANDOFF_CYCLES))
        return nodes * cpu.clock_hz * min(worker_rate, router_rate) / 1e9
    return nodes * ppn * cpu.clock_hz / cycles / 1e9


@functools.lru_cache(maxsize=None)
def _machine(ppn: int):
    return bgp.machine(ppn)  # frozen config: safe to share; parsing the YAML 88 times cost 5 s


@functools.lru_cache(maxsize=None)
def _edge_expansion(shape: str) -> tuple[int, float]:
    """(nodes, alpha) of a partition; the same for every mode, so computed once per shape."""
    topo = machine_topology(_machine(1), shape)
    return topo.num_nodes, float(topo.edge_expansion())


def dma_injections_per_update(m, shape: str, alg: str) -> float:
    """How many times the DMA engines serve an update's bytes on its way (each side: injection and reception).

    Every packet a core launches passes its node's injection engine and its destination's reception engine,
    an intra-node one too (gupsim.engines.reference.dma).  ``routed`` sends an update once per software hop: the
    expected node hops ``sum (L - 1) / L`` plus, with several processes per node, the core hop ``(P - 1) / P``;
    ``routed-split`` hands the core hop over shared memory, so its node hops only, for the remote share; the
    others send an update once."""
    topo = machine_topology(m, shape)
    ppn = m.cpu.processes_per_node
    if alg == "routed":
        return node_hops(topo) + (ppn - 1) / ppn
    if alg == "routed-split":
        return node_hops(topo) * (1 - 1 / topo.num_nodes)
    return 1.0


def dma_bound(m, shape: str, alg: str) -> float:
    """Upper bound on GUPS from the DMA engines: each node's injection (and reception) engine moves at most
    ``dma.engine_bytes_per_s``, and an update costs at least :func:`bytes_per_update` each time it is served."""
    nodes = machine_topology(m, shape).num_nodes
    per_update = bytes_per_update(m, alg) * dma_injections_per_update(m, shape, alg)
    return nodes * m.dma.engine_bytes_per_s / per_update / 1e9


def machine_bounds(m, shape: str, alg: str) -> dict:
    """The three bounds of ``alg`` on ``shape`` of BG/P machine ``m`` (any overrides: the what-ifs), the
    smallest of them, and which resource it is."""
    b = bytes_per_update(m, alg)
    limits = {"cpu": cpu_bound(m, shape, alg),
              "network": network_bound_gups(*_edge_expansion(shape), m.network.link_bytes_per_s, b),
              "dma": dma_bound(m, shape, alg)}
    bottleneck = min(limits, key=limits.get)
    return {"cpu_bound_gups": limits["cpu"], "network_bound_gups": limits["network"],
            "dma_bound_gups": limits["dma"], "bytes_per_update": b, "bound_gups": limits[bottleneck],
            "bottleneck": bottleneck}


def row_bounds(shape: str, mode: str, alg: str) -> dict:
    return machine_bounds(_machine(MODES[mode]), shape, alg)


def simulated_updates(nodes: int, mode: str, alg: str) -> int | None:
    """Updates per process of a full run's simulated row, or None for a bounds-only row (a size beyond
    :data:`FAST_SIMULATED_NODES` and :data:`FAST_SIMULATED_VN`, or a row the fast engine cannot run)."""
    vn_only = mode == "VN" and alg in FAST_SIMULATED_VN.get(nodes, ())
    if not (nodes in FAST_SIMULATED_NODES or vn_only) or \
            ENGINES["fast"].unsupported(row_config(bgp.PARTITIONS[nodes], mode, alg, 1)) is not None:
        return None
    return FAST_UPDATES


def row_config(shape: str, mode: str, alg: str, updates: int):
    return make_run_config(machine=bgp.machine(MODES[mode]), shape=shape, algorithm=alg, updates_per_process=updates)


def simulate_row(shape: str, mode: str, alg: str, updates: int) -> dict:
    return row_columns(run(row_config(shape, mode, alg, updates)), updates)


def row_columns(rec: dict, updates: int) -> dict:
    # The whole run's average rate obeys both bounds by construction (every update's cycles and bytes
    # are spent inside the run); the record's windowed rate of a short, start-up dominated run need not.
    return {"simulated": True, "sim_gups": rec["gups"], "sim_gups_run": rec["updates_applied"] / rec["sim_time_s"] / 1e9,
            "sim_updates_per_process": updates, "sim_engine": rec["engine"],
            "sim_wall_s": rec["wall_s"], "sim_steady_state": rec["steady_state"]}


def reproduce(quick: bool = False, inputs: dict | None = None, pool: RunPool = SERIAL) -> Comparison:
    t0 = time.perf_counter()
    rows, runs = [], []
    for nodes in NODES:
        for mode, ppn in MODES.items():
            for alg in ALGORITHMS:
                if not applies(alg, ppn):
                    continue
                row = {"row": f"{nodes} {mode} {alg}", "nodes": nodes, "shape": bgp.PARTITIONS[nodes],
                       "mode": mode, "algorithm": alg, "processes": nodes * ppn} | row_bounds(bgp.PARTITIONS[nodes], mode, alg)
                row["simulated"] = False
                updates = None if quick else simulated_updates(nodes, mode, alg)
                if updates is not None:
                    runs.append((len(rows), row_config(row["shape"], mode, alg, updates)))
                rows.append(row)
    for (i, config), rec in zip(runs, pool.records([config for _, config in runs])):
        rows[i] |= row_columns(rec, config.updates_per_process)
    frame = pd.DataFrame(rows)
    for column in ("sim_gups", "sim_gups_run", "sim_updates_per_process", "sim_engine", "sim_wall_s",
                   "sim_steady_state"):
        if column not in frame:
            frame[column] = float("nan")
    frame["sim_fraction_of_bound"] = frame["sim_gups_run"] / frame["bound_gups"]
    sim = frame[frame["simulated"]]
    over = sim[sim["sim_gups_run"] > sim["bound_gups"] * (1 + 1e-9)]
    over_window = sim[sim["sim_gups"] > sim["bound_gups"] * (1 + 1e-9)]
    checks = [f"{len(sim)} simulated rows ({(sim['sim_engine'] == 'fast').sum()} on the fast engine), "
              f"{len(frame) - len(sim)} bounds-only rows"]
    if len(sim):
        checks.append(f"simulated rows above their smaller bound: {len(over)}"
                      + (f" ({', '.join(over['row'])})" if len(over) else "") + " (whole-run rate)"
                      + f"; fraction of bound {sim['sim_fraction_of_bound'].min():.1%}"
                      f" to {sim['sim_fraction_of_bound'].max():.1%}")
        checks.append(f"simulated rows whose windowed rate is above their smaller bound: {len(over_window)}"
                      + (f" ({', '.join(over_window['row'])})" if len(over_window) else ""))

    def plot(out_dir):
        fig, axes = bgp.axes(len(MODES))
        for a, mode in zip(axes, MODES):
            for alg, marker in zip(ALGORITHMS, "osv^"):
                sub = frame[(frame["mode"] == mode) & (frame["algorithm"] == alg)]
                if sub.empty:
                    continue
                line, = a.plot(sub["nodes"], sub["bound_gups"], marker + "-", label=f"{alg} bound")
                s = sub[sub["simulated"]]
                a.plot(s["nodes"], s["sim_gups_run"], marker, color=line.get_color(), mfc="none", ms=10,
                       label=f"{alg} simulated" if len(s) else None)
            a.set(xscale="log", yscale="log", xlabel="nodes", ylabel="GUPS", title=f"BG/P {mode} mode")
            a.legend(fontsize=6)
            a.grid(alpha=0.3, which="both")
        return save_figure(fig, out_dir, "bgp-gups")

    return Comparison(
        name="bgp-gups", title="Blue Gene/P GUPS: analytic bounds for every size and mode, simulated where feasible",
        key="row", frame=frame, targets={},
        method=("No published BG/P GUPS table exists, so no column has a target. Bounds per algorithm from seed "
                "000 eq. (1) and (2) with BG/P's clock, link rate and cores and the assumed BG/L cycle costs "
                "(see gupsim/experiments/bgp_gups.py). `simulated` marks the rows that were run (full run): "
                f"every algorithm on the fast engine, to 1% or {FAST_UPDATES} updates per process, on "
                f"{', '.join(map(str, FAST_SIMULATED_NODES))} nodes, and in VN mode "
                + "; ".join(f"{' and '.join(algs)} on {nodes}" for nodes, algs in FAST_SIMULATED_VN.items())
                + "; the others are bounds only."),
        wall_s=time.perf_counter() - t0, checks=checks,
        # sim_wall_s stays in the CSV only: it changes with the box on every regeneration (diff noise on the page)
        shown=["cpu_bound_gups", "network_bound_gups", "bottleneck", "simulated", "sim_gups", "sim_gups_run",
               "sim_fraction_of_bound", "sim_updates_per_process", "sim_steady_state", "sim_engine"], plot=plot)
