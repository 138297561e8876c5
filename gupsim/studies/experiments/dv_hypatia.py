"""Seed 003: Data Vortex against FDR InfiniBand on Hypatia, and the newer 8-node v3 system.

Two simulated systems on the same processors and memory:

* ``hypatia-ib``: HPCC's MPI ``baseline`` over FDR InfiniBand, one MPI rank
  per core, 8 ranks per server sharing its FDR connection, one 36-port switch;
* ``hypatia-dv``: the ``dv`` algorithm (seed 003 Fig. 4), one process per
  processor with 1 send thread and 3 update threads, on the Data Vortex.

Rows:

1. the published figures (``dv_hypatia.csv``): 64 processors over IB
   (0.048 GUPS) and over DV (10.0 GUPS), and the 8-node v3 system (1.72);
2. the DV/IB ratio at 16 ... 256 cores (2 ... 32 servers), each side
   simulated, judged against seed 003 Fig. 6's band of 250-400x (text: "Data
   Vortex is 250 to 400 times faster"); the error is the distance outside the
   band relative to its nearest edge (0 inside);
3. update threads per processor (16 processors): the diminishing returns;
4. a DV sweep to 2,048 endpoints (two switch levels from 65 on), beside the
   analytic limits of memory, send thread, VIC bus and lanes;
5. a what-if with faster memory (DRAM latency / k) showing where the network
   side (the VIC's PCIe bus) takes over from memory as the limit.

Calibration, on named rows only:

* ``memory.outstanding_misses_per_processor`` of Hypatia: closed form
  (Little's law) from the DV 64-processor row; of the v3 system: from the v3
  row (seed 003 gives no v3 processor numbers, so that row is a fit too);
* ``mpi.test_cycles`` of Hypatia's IB stack (the effective cost of one
  MPI progress poll): from the IB 64-processor row, by two full-size runs
  (cycles per update are linear in it).  Quick runs use the YAML value.

Judged, not fitted: the ratio at every core count, the thread curve's shape
and the sweep's linearity.  Run: ``gupsim reproduce dv-hypatia``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gupsim.config.loading import load_machine
from gupsim.model.dram import fit_outstanding_misses, update_rate
from gupsim.studies.figures import save_figure
from gupsim.engines.run import make_run_config
from gupsim.studies.runpool import SERIAL, RunPool
from gupsim.studies.validation import Comparison, compare, reference_table

FIG6_RATIO_BAND = (250.0, 400.0)  # seed 003 text on Fig. 6: "Data Vortex is 250 to 400 times faster" (a target only)
CORES = {False: (16, 32, 64, 256), True: (16, 32)}
SWEEP = {False: (64, 256, 1024, 2048), True: (64,)}
SPEEDUPS = {False: (1, 2, 3, 4), True: (1, 3)}  # what-if: DRAM latency divided by k
SMALL = {False: 16, True: 8}  # processors of the thread and what-if rows
IB_UPDATES, DV_UPDATES = 4096, {False: 8192, True: 8192}
SWEEP_UPDATES = {256: 2048, 1024: 1024, 2048: 1024}  # per endpoint, to keep the largest runs to minutes
DV_OPTIONS = {"send_threads": 1, "update_threads": 3}
V3_OPTIONS = {"send_threads": 2, "update_threads": 6}
IB_FIT_POINTS = (8000.0, 16000.0)
DV_BUFFER = 512  # the dv algorithm's default send buffer (two of them: the 1024 look-ahead)


def _table(machine, processors: int) -> int:
    """log2 words of HPCC's table: half of all memory (seed 003: "half of our system memory")."""
    return int(math.log2(machine.cpu.memory_bytes_per_processor / 2 / 8 * processors))


def _dv_config(machine, endpoints: int, updates: int, options=None):
    return make_run_config(machine=machine, shape=f"{endpoints}x1x1", algorithm="dv", updates_per_process=updates,
                           log2_table_size=_table(machine, endpoints), algorithm_options=options or DV_OPTIONS)


def _ib_config(machine, servers: int):
    procs = servers * machine.cpu.processors_per_endpoint
    return make_run_config(machine=machine, shape=f"{servers}x1x1", algorithm="baseline",
                           updates_per_process=IB_UPDATES, log2_table_size=_table(machine, procs))


def _run_all(pool: RunPool, configs: list) -> dict:
    """Records by configuration (its JSON): every distinct run once, all of them on the pool together."""
    unique = {c.model_dump_json(): c for c in configs}
    return dict(zip(unique, pool.records(list(unique.values()))))


def fit_test_cycles(target_gups: float, servers: int, pool: RunPool = SERIAL) -> float:
    """``mpi.test_cycles`` that makes the IB baseline reach ``target_gups`` (two runs, linear in cycles)."""
    recs = pool.records([_ib_config(load_machine("hypatia-ib", {"mpi.test_cycles": t}), servers)
                         for t in IB_FIT_POINTS])
    cycles = [rec["cycles_per_update"] for rec in recs]
    m = load_machine("hypatia-ib")
    target = servers * m.cpu.processes_per_node * m.cpu.clock_hz / (target_gups * 1e9)
    slope = (cycles[1] - cycles[0]) / (IB_FIT_POINTS[1] - IB_FIT_POINTS[0])
    return IB_FIT_POINTS[0] + (target - cycles[0]) / slope


def _limits(machine, endpoints: int, options: dict) -> dict:
    """Analytic per-system limits in GUPS: memory, send pipeline, VIC bus, lanes.

    The send pipeline: a buffer of B updates takes g to generate, then its DMA
    takes the set-up time plus B bus slots; with two buffers, buffer k+2 waits
    for buffer k's DMA, so two buffers take max(2g, g + set-up + B * slot).
    """
    net, cpu = machine.network, machine.cpu
    pcie = net.pcie_bytes_per_s * net.pcie_efficiency
    b = DV_BUFFER
    g = b * (cpu.generate_cycles + cpu.header_cycles) / cpu.clock_hz / options["send_threads"]
    dma = (net.dma_setup_ns + net.group_counter_ns) * 1e-9 + b * net.wire_bytes / pcie
    per_endpoint = {
        "memory": update_rate(machine.memory, options["update_threads"], cpu.clock_hz, cpu.update_issue_cycles),
        "send_pipeline": 2 * b / max(2 * g, g + dma),
        "vic_bus": pcie / net.wire_bytes,
        "lanes": net.lanes_per_vic / net.lane_packet_s,
    }
    out = {f"limit_{k}_gups": v * endpoints / 1e9 for k, v in per_endpoint.items()}
    out["limiter"] = min(per_endpoint, key=per_endpoint.get)
    return out


def _band_error(ratio: float) -> float:
    lo, hi = FIG6_RATIO_BAND
    return ratio / lo - 1 if ratio < lo else (ratio / hi - 1 if ratio > hi else 0.0)


def reproduce(quick: bool = False, inputs: dict | None = None, pool: RunPool = SERIAL) -> Comparison:
    t0 = time.perf_counter()
    ref = reference_table("dv_hypatia.csv")
    ref.insert(0, "row", ref["system"] + " / " + ref["network"])
    rows_ref = ref.set_index("network")
    dv_ref = rows_ref.loc["Data Vortex"]
    hyp_dv_row = dv_ref[dv_ref["system"] == "Hypatia"].iloc[0]
    v3_row = dv_ref[dv_ref["system"] != "Hypatia"].iloc[0]
    ib_row = ref[ref["network"].str.contains("InfiniBand")].iloc[0]

    # --- calibration -------------------------------------------------------------------------
    dv0 = load_machine("hypatia-dv")
    hyp_procs = int(hyp_dv_row["processors"])
    cap = fit_outstanding_misses(float(hyp_dv_row["gups"]) * 1e9 / hyp_procs, dv0.memory)
    dv = load_machine("hypatia-dv", {"memory.outstanding_misses_per_processor": cap})
    v3_nodes = int(str(v3_row["processors"]).split()[0])
    v30 = load_machine("dv-v3")
    cap_v3 = fit_outstanding_misses(float(v3_row["gups"]) * 1e9 / v3_nodes, v30.memory)
    v3 = load_machine("dv-v3", {"memory.outstanding_misses_per_processor": cap_v3})
    ib_servers = int(ib_row["processors"]) // load_machine("hypatia-ib").cpu.processors_per_endpoint
    ib_yaml = load_machine("hypatia-ib").mpi.test_cycles
    test_cycles = ib_yaml if quick else fit_test_cycles(float(ib_row["gups"]), ib_servers, pool)
    ib = load_machine("hypatia-ib", {"mpi.test_cycles": float(test_cycles)})
    updates = DV_UPDATES[quick]

    # --- every run of the table, then the rows from their records ------------------------------
    small = SMALL[quick]
    ib_servers_at = {cores: cores // (ib.cpu.cores_per_processor * ib.cpu.processors_per_endpoint)
                     for cores in CORES[quick]}
    fast_opts = {"send_threads": 2, "update_threads": 2}
    what_if = {k: load_machine("hypatia-dv", {"memory.outstanding_misses_per_processor": cap,
                                              "memory.dram_latency_ns": dv.memory.dram_latency_ns / k})
               for k in SPEEDUPS[quick]}
    cfg = {
        "hyp": _dv_config(dv, hyp_procs, updates), "v3": _dv_config(v3, v3_nodes, updates, V3_OPTIONS),
        **{("ib", cores): _ib_config(ib, servers) for cores, servers in ib_servers_at.items()},
        **{("fig6", cores): _dv_config(dv, cores // dv.cpu.cores_per_processor, updates) for cores in CORES[quick]},
        **{("threads", t): _dv_config(dv, small, updates, {"send_threads": 1, "update_threads": t}) for t in (1, 2, 3)},
        **{("sweep", e): _dv_config(dv, e, SWEEP_UPDATES.get(e, updates)) for e in SWEEP[quick]},
        **{("what-if", k): _dv_config(m, small, updates, fast_opts) for k, m in what_if.items()},
    }
    by_json = _run_all(pool, list(cfg.values()))
    recs = {name: by_json[c.model_dump_json()] for name, c in cfg.items()}

    # --- the published rows ------------------------------------------------------------------
    sims = {}
    rec = recs["hyp"]
    sims[hyp_dv_row["row"]] = {"sim_gups": rec["gups"], **_limits(dv, hyp_procs, DV_OPTIONS),
                               "sim_deflections_per_packet": rec["alg_deflections_per_packet"]}
    rec = recs["v3"]
    sims[v3_row["row"]] = {"sim_gups": rec["gups"], **_limits(v3, v3_nodes, V3_OPTIONS),
                           "sim_deflections_per_packet": rec["alg_deflections_per_packet"]}
    ib_sims = {cores: recs[("ib", cores)]["gups"] for cores in CORES[quick]}
    if not quick or ib_servers * 8 in ib_sims:
        full_cores = ib_servers * ib.cpu.cores_per_processor * ib.cpu.processors_per_endpoint
        sims[ib_row["row"]] = {"sim_gups": ib_sims[full_cores]}
    frame = compare(ref, pd.DataFrame([{"row": k, **v} for k, v in sims.items()]), "row", ["gups"])

    # --- Fig. 6: the ratio of the two simulated systems across core counts ---------------------
    extra = []
    for cores, ib_gups in ib_sims.items():
        procs = cores // dv.cpu.cores_per_processor
        dv_gups = recs[("fig6", cores)]["gups"]
        extra.append({"row": f"Fig. 6 ratio, {cores} cores", "cores": cores, "processors": procs,
                      "dv_over_ib": "250-400", "sim_dv_gups": dv_gups, "sim_ib_gups": ib_gups,
                      "sim_dv_over_ib": dv_gups / ib_gups, "rel_err_dv_over_ib": _band_error(dv_gups / ib_gups)})
    # --- threads, sweep, what-if ---------------------------------------------------------------
    for threads in (1, 2, 3):
        opts = {"send_threads": 1, "update_threads": threads}
        rec = recs[("threads", threads)]
        extra.append({"row": f"DV, {threads} update thread(s), {small} processors", "processors": small,
                      "sim_gups": rec["gups"], **_limits(dv, small, opts)})
    for endpoints in SWEEP[quick]:
        rec = recs[("sweep", endpoints)]
        extra.append({"row": f"DV sweep, {endpoints} endpoints", "processors": endpoints, "sim_gups": rec["gups"],
                      "sim_deflections_per_packet": rec["alg_deflections_per_packet"],
                      **_limits(dv, endpoints, DV_OPTIONS)})
    for k, m in what_if.items():
        rec = recs[("what-if", k)]
        extra.append({"row": f"what-if: DRAM latency / {k}, {small} processors", "processors": small,
                      "sim_gups": rec["gups"], **_limits(m, small, fast_opts)})
    frame = pd.concat([frame, pd.DataFrame(extra)], ignore_index=True)
    if "sim_dv_over_ib" not in frame:
        frame["sim_dv_over_ib"] = np.nan
    cols = [c for c in frame.columns if c not in ("dv_over_ib", "sim_dv_over_ib", "rel_err_dv_over_ib")]
    i = cols.index("rel_err_gups") + 1
    frame = frame[cols[:i] + ["dv_over_ib", "sim_dv_over_ib", "rel_err_dv_over_ib"] + cols[i:]]

    fit_note = " (the fit is closed form; the simulation adds the VIC, lanes and batching)"
    fitted = {
        (hyp_dv_row["row"], "gups"): "memory.outstanding_misses_per_processor fitted on it" + fit_note,
        (v3_row["row"], "gups"): "the v3 processor's outstanding misses fitted on it" + fit_note,
        (ib_row["row"], "gups"): "mpi.test_cycles fitted on it (full run; the quick run keeps the YAML value)",
    }
    notes = {
        ("*", "dv_over_ib"): (
            f"Seed 003's own 64-processor figures give 10.0 / 0.048 = {10.0 / 0.048:.0f}x, below the 250-400x it "
            "states for Fig. 6; the model is calibrated on those figures, so it inherits the gap. Fewer cores give "
            "the MPI code bigger buckets (fewer messages per update), so the ratio falls further as cores shrink."),
    }
    method = (
        f"Hypatia's processor-wide cap on misses in flight fitted on the DV row: {cap:.2f} "
        f"(YAML {dv0.memory.outstanding_misses_per_processor}); v3: {cap_v3:.2f} (YAML "
        f"{v30.memory.outstanding_misses_per_processor}), fitted on the v3 row. IB MPI progress poll "
        f"(mpi.test_cycles): {test_cycles:.0f} cycles = {test_cycles / ib.cpu.clock_hz * 1e6:.2f} us "
        f"({'YAML value, quick run' if quick else f'fitted on the IB row; YAML {ib_yaml}'}). DV runs: "
        f"{updates} updates per processor (sweep: {SWEEP_UPDATES} above 64), 1 send + 3 update threads; IB runs: "
        f"{IB_UPDATES} per rank, 8 ranks per server. Ratio rows: both systems simulated at each core count "
        f"(IB rows up to {max(CORES[quick])} cores); error = distance outside the 250-400x band. Limits are "
        f"analytic per-system rates (memory: Little's law; send pipeline: two {DV_BUFFER}-update buffers "
        f"alternating with their DMAs to the VIC; VIC bus: PCIe Gen3 x8 at the assumed efficiency; lanes: "
        f"16 x 8 Gb/s); the sweep shows DV tracking the memory limit up to 2,048 endpoints, the what-if rows "
        f"where the endpoint's send pipeline and VIC take over from memory. Figure: dv-hypatia.png/.svg."
    )
    return Comparison(
        name="dv-hypatia",
        title="Seed 003: Data Vortex vs FDR InfiniBand on Hypatia, and the v3 system",
        key="row",
        frame=frame,
        targets={"gups": 0.20, "dv_over_ib": 0.20},
        notes=notes,
        fitted=fitted,
        method=method,
        wall_s=time.perf_counter() - t0,
        shown=["sim_dv_gups", "sim_ib_gups", "limit_memory_gups", "limit_vic_bus_gups", "limit_send_pipeline_gups", "limiter",
               "sim_deflections_per_packet"],
        plot=lambda out_dir: _plot(frame, out_dir),
    )


def _plot(frame: pd.DataFrame, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4.5))
    ratio = frame[frame["row"].str.startswith("Fig. 6")]
    a.plot(ratio["cores"], ratio["sim_dv_gups"], "o-", color="tab:orange", label="Data Vortex, simulated")
    a.plot(ratio["cores"], ratio["sim_ib_gups"], "s-", color="tab:blue", label="FDR IB (HPCC MPI), simulated")
    pub = frame[frame["cores"].notna() & frame["gups"].notna()]
    a.plot(pub["cores"], pub["gups"], "k*", markersize=11, label="published (seed 003)")
    a.set(xscale="log", yscale="log", xlabel="cores", ylabel="GUPS", title="Hypatia: GUPS against cores")
    b.axhspan(*FIG6_RATIO_BAND, color="tab:green", alpha=0.2, label="seed 003 Fig. 6: 250-400x")
    b.plot(ratio["cores"], ratio["sim_dv_over_ib"], "o-", color="tab:purple", label="simulated DV / IB")
    b.set(xscale="log", xlabel="cores", ylabel="DV / IB", title="Ratio of the two simulated systems")
    b.set_ylim(0, 1.15 * max(FIG6_RATIO_BAND[1], ratio["sim_dv_over_ib"].max()))
    sweep = frame[frame["row"].str.startswith("DV sweep")]
    n = pd.to_numeric(sweep["processors"])  # the reference column also holds "8 nodes"
    c.plot(n, sweep["sim_gups"], "o-", color="tab:orange", label="Data Vortex, simulated")
    for col, label, style in (("limit_memory_gups", "memory limit", "--"), ("limit_send_pipeline_gups", "send pipeline", ":"),
                              ("limit_vic_bus_gups", "VIC PCIe bus", "-."), ("limit_lanes_gups", "16 lanes", "-")):
        c.plot(n, sweep[col], style, color="grey" if col != "limit_memory_gups" else "tab:red", label=label)
    c.set(xscale="log", yscale="log", xlabel="endpoints (processors with a VIC)", ylabel="GUPS",
          title="DV scaling: memory, not the network, limits")
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    for ax in (a, b, c):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return save_figure(fig, out_dir, "dv-hypatia")
