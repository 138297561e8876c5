"""Seed 000 Table 3: the MPI baseline on Blue Gene/L.

* ``mean_bucket_size`` for every N (32 to 65,536) from the bucketing model
  (:func:`gupsim.model.bucketing.mean_bucket_size`), which is the paper's own
  "simple simulator": one process's real HPCC stream through the bucketing
  rule.  The full simulation agrees with it (tests/model/test_bucketing.py).
* ``gups``, ``cycles_per_update`` and ``send_blocking_factor`` from full
  simulations of the baseline with the compiled kernel (:mod:`gupsim.engines.fast.baseline`,
  bit for bit the SimPy reference; tests/engines/fast/test_fast_baseline.py) for N <= 16,384
  (N <= 256 with --quick).  The cost of a row grows as N x mean hops (about
  one message per update at large N, each a packet crossing the torus): at
  the 4,096 updates per process a steady state needs, 4,096 nodes took 322 CPU
  seconds here; the whole experiment, up to 16,384 nodes, 3,898 CPU seconds
  (108 minutes wall on the shared, loaded box; 1.07 GB peak).  65,536 nodes
  (another ~8x, about four hours of one core) is left empty, not extrapolated.
  A shorter run is no substitute: a process holds up to 1,024 pending updates
  (HPCC's limit), so a run of fewer never reaches the steady state;
  32x32x16 at 512 updates per process gave 2.93 GUPS and
  3,910 cycles per update against 2.10 and 5,459 at 4,096 (model code
  ``4400a24fd07fb9a2``, ``steady_state: false``).
* ``model_cycles_per_update`` and ``model_gups`` for every row: the baseline's
  CPU accounting (:meth:`Baseline.steady_cycles_per_update`), the sum of its
  steps' costs with the modelled bucket size.  It is not a simulation and is
  labelled as a model; where both exist it agrees with the simulation.

Calibration (:func:`fit_mpi_costs`): ``mpi.test_cycles`` and
``mpi.heap_cycles_per_level`` are fitted on the two 32-node figures of §6.1
-- 1,018 cycles per update as is, 435 (0.0515 GUPS) when the receive is
tested only every 60th iteration -- and on nothing else.  The other causes
§6.1 names are modelled, not fitted: MPI call latency from the §5.2 line
divided by the simulated bucket size, O(log N) heap levels, and cache misses
on the per-destination data (:mod:`gupsim.model.cpu_cache`, seed 000 §5.1's cache
sizes and latencies).  ``mpi.peer_state_bytes``, the size of MPI's per-peer
state, is fitted on the N = 4096 row only, by the accounting (:func:`fit_peer_state_bytes`).

Run: ``gupsim reproduce bgl-table3``.
"""

from __future__ import annotations

import math
import time

import pandas as pd

from gupsim.model.bucketing import mean_bucket_size
from gupsim.config.loading import load_machine
from gupsim.engines.run import make_run_config, simulate
from gupsim.studies.runpool import SERIAL, RunPool
from gupsim.studies.validation import Comparison, bgl_partition_shapes, compare, interval_cells, reference_table
from gupsim.algorithms.baseline import Baseline

FULL_MAX_NODES, QUICK_MAX_NODES = 16384, 256
UPDATES = 4096
FIT_NEWTON_STEPS, FIT_TOLERANCE = 6, 0.002  # the fit stops within 0.2% of both figures
FIT_SHAPE, FIT_CYCLES, FIT_CYCLES_TEST_EVERY_60 = "4x4x2", 1018.0, 435.0  # seed 000 §6.1 text, N = 32
PEER_STATE_FIT_NODES = 4096


def _cycles(machine, every: int) -> float:
    rec = simulate(make_run_config(machine=machine, shape=FIT_SHAPE, algorithm="baseline", updates_per_process=UPDATES,
                                   algorithm_options={"receive_test_every": every}))[1]
    return rec["cycles_per_update"]


def fit_mpi_costs() -> tuple[float, float]:
    """(test_cycles, heap_cycles_per_level) matching §6.1's two 32-node figures.

    Cycles per update are close to linear in both costs while the run is CPU bound,
    but not exactly: where a process tests for arrivals moves which events share an
    instant.  So a plane through three wide points gives the start, and Newton steps
    on local differences refine it until both figures are met within FIT_TOLERANCE.
    """
    import numpy as np

    targets = np.array([FIT_CYCLES, FIT_CYCLES_TEST_EVERY_60])

    def measured(t: float, h: float) -> np.ndarray:
        machine = load_machine("bgl", {"mpi.test_cycles": t, "mpi.heap_cycles_per_level": h})
        return np.array([_cycles(machine, every) for every in (1, 60)])

    point, steps = np.array([300.0, 20.0]), np.array([300.0, 20.0])  # the plane's wide differences first
    at = measured(*point)
    for _ in range(1 + FIT_NEWTON_STEPS):
        jacobian = np.column_stack([(measured(*(point + np.diag(steps)[k])) - at) / steps[k] for k in range(2)])
        point = point + np.linalg.solve(jacobian, targets - at)
        at = measured(*point)  # the runs at the new point serve both the test and the next step's differences
        if np.all(np.abs(at / targets - 1) <= FIT_TOLERANCE):
            break
        steps = np.array([10.0, 1.0])
    return float(point[0]), float(point[1])


def fit_peer_state_bytes() -> float:
    """``mpi.peer_state_bytes`` that gives Table 3's cycles per update at N = 4096.

    The fit uses the baseline's CPU accounting (:meth:`Baseline.steady_cycles_per_update`),
    which the simulation matches while nothing blocks (tests/model/test_cache.py), because the
    SimPy engine cannot run 4,096 nodes here.  The accounting grows monotonically with
    the state size, so bisection finds it.  N = 4096 is the middle (geometrically) of the
    rows where seed 000 §6.1 places the L1 effect (512 to 16,384).
    """
    ref = reference_table("bgl_table3_baseline.csv").set_index("nodes")
    n = PEER_STATE_FIT_NODES
    target = float(ref.loc[n, "cycles_per_update"])
    bucket = mean_bucket_size(n, updates=2**15)

    def accounted(state: float) -> float:
        return Baseline.steady_cycles_per_update(load_machine("bgl", {"mpi.peer_state_bytes": state}), n, bucket)

    lo, hi = 0.0, 65536.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if accounted(mid) < target else (lo, mid)
    return (lo + hi) / 2


def _model(machine, n: int, bucket: float) -> dict:
    cycles = Baseline.steady_cycles_per_update(machine, n, bucket)
    return {"model_cycles_per_update": cycles, "model_gups": n * machine.cpu.clock_hz / cycles / 1e9}


def _collapse_note(machine) -> str:
    """Seed 000 §6.1 suspects the L3 for the 65,536-node collapse; bound what the L3 can explain."""
    c = machine.cache
    worst = (16 + 1) * (c.memory_cycles - c.l1_hit_cycles) + 2 * math.ceil(machine.mpi.peer_state_bytes / c.line_bytes) * (
        c.memory_cycles - c.l1_hit_cycles)
    return (
        "Seed 000 §6.1 suspects the L3 (4 MB) for the collapse to 705,772 cycles per update. In the model the "
        "per-destination data and MPI's per-peer state do outgrow the L3 here, but even if every one of those "
        f"accesses (17 for the heap path and bucket, {2 * math.ceil(machine.mpi.peer_state_bytes / c.line_bytes)} "
        f"lines of peer state per message) went to memory it would add at most {worst:,.0f} cycles per update: "
        "L3 misses on this data cannot explain a factor of ~80. Something the seeds do not describe (the MPI "
        "library's behaviour at 65,536 peers, or the run itself) is at work; gupsim does not invent it."
    )


def _miss_note(row) -> str:
    """Why a simulated row misses, from the row alone: compare it with this model's own accounting."""
    return (
        f"The simulation agrees with this model's own cycle accounting ({row['model_cycles_per_update']:,.0f} "
        f"cycles; the simulation is {row['sim_vs_model_cycles_per_update']:+.1%} from it, blocking included at "
        f"an SBF of {row['sim_send_blocking_factor']:.2f}), so the miss is the accounting's: the causes §6.1 names "
        f"(MPI_Test per update, O(log N) heap, MPI call overheads over the bucket size, cache misses with the "
        f"seed's 32 KB L1 and 4 MB L3) give {row['model_rel_err_cycles_per_update']:+.1%} here. The published "
        f"cost grows faster than they do (see the note below); nothing is re-tuned to this row."
    )


def row_notes(frame: pd.DataFrame, targets: dict[str, float]) -> dict:
    """Notes for every simulated row that misses a target (the fit rows have their own)."""
    notes = {}
    for _, row in frame.iterrows():
        for column in ("gups", "cycles_per_update"):
            err = row.get(f"rel_err_{column}")
            if err is not None and not pd.isna(err) and abs(err) > targets[column]:
                notes[(int(row["nodes"]), column)] = _miss_note(row)
    return notes


def reproduce(quick: bool = False, inputs: dict | None = None, pool: RunPool = SERIAL) -> Comparison:
    t0 = time.perf_counter()
    ref = reference_table("bgl_table3_baseline.csv")
    shapes = bgl_partition_shapes()
    machine = load_machine("bgl")
    limit = QUICK_MAX_NODES if quick else FULL_MAX_NODES
    simulated = [n for n in ref["nodes"] if n <= limit and n in shapes]
    records = dict(zip(simulated, pool.records([
        make_run_config(machine=machine, shape=shapes[n], algorithm="baseline", updates_per_process=UPDATES)
        for n in simulated])))
    rows = []
    for n in ref["nodes"]:
        bucket = mean_bucket_size(int(n), updates=2**15 if quick else 2**17)
        row = {"nodes": n, "sim_mean_bucket_size": bucket} | _model(machine, int(n), bucket)
        if n in records:
            rec = records[n]
            row |= interval_cells(rec, ("gups", "cycles_per_update"))
            row |= {"sim_gups": rec["gups"], "sim_cycles_per_update": rec["cycles_per_update"],
                    "sim_send_blocking_factor": rec["send_blocking_factor"],
                    "sim_updates_per_message": rec["updates_per_message"], "shape": shapes[n]}
        rows.append(row)
    frame = compare(ref, pd.DataFrame(rows), "nodes",
                    ["gups", "cycles_per_update", "mean_bucket_size", "send_blocking_factor"])
    frame["model_rel_err_cycles_per_update"] = frame["model_cycles_per_update"] / frame["cycles_per_update"] - 1
    # Where both exist: how far the simulation is from the accounting (blocking, the stream's real bucket sizes).
    if "sim_cycles_per_update" in frame:
        frame["sim_vs_model_cycles_per_update"] = frame["sim_cycles_per_update"] / frame["model_cycles_per_update"] - 1
    return comparison(frame, machine, quick, time.perf_counter() - t0)


def comparison(frame: pd.DataFrame, machine, quick: bool, wall_s: float) -> Comparison:
    """The page section from the frame alone (so that a saved CSV regenerates it exactly)."""
    limit = QUICK_MAX_NODES if quick else FULL_MAX_NODES
    targets = {"gups": 0.15, "cycles_per_update": 0.15, "mean_bucket_size": 0.05}
    fit_note = "mpi.test_cycles and mpi.heap_cycles_per_level fitted on it (with §6.1's 1-in-60 figure)"
    state_note = f"mpi.peer_state_bytes = {machine.mpi.peer_state_bytes:.0f} fitted on it (by the accounting)"
    fitted = {(32, "gups"): fit_note, (32, "cycles_per_update"): fit_note,
              (PEER_STATE_FIT_NODES, "gups"): state_note, (PEER_STATE_FIT_NODES, "cycles_per_update"): state_note}
    notes = {(65536, "*"): _collapse_note(machine)}
    notes |= row_notes(frame, targets)
    model_misses = frame.loc[frame["model_rel_err_cycles_per_update"].abs() > 0.15, "nodes"].tolist()
    remarks = [f"N = 65,536: {_collapse_note(machine)}"]
    if model_misses:
        remarks.append(
            "The cycle accounting misses the 15% target at N = " + ", ".join(f"{n:,}" for n in model_misses)
            + ". The causes §6.1 names, with the seed's cache sizes and latencies, grow smoothly with N; the "
            "published jump from 5,310 cycles (8,192 nodes) to 9,002 (16,384) is steeper than uniformly random "
            "reuse of per-destination data in a 4 MB L3 gives. The constant is not re-tuned to close it.")
    return Comparison(
        name="bgl-table3",
        title="Seed 000 Table 3: MPI baseline (GUPS, cycles per update, bucket size, SBF)",
        key="nodes",
        frame=frame,
        targets=targets,
        notes=notes,
        fitted=fitted,
        method=(
            f"MPI_Test = {machine.mpi.test_cycles} and heap level = {machine.mpi.heap_cycles_per_level} cycles, "
            f"fitted on N = 32 only (§6.1: 1,018 cycles; 435 testing 1 in 60); MPI per-peer state = "
            f"{machine.mpi.peer_state_bytes:.0f} bytes, fitted on N = {PEER_STATE_FIT_NODES} only (by the accounting); every other row "
            "is a prediction. Cache misses on per-destination data use seed 000 §5.1's 32 KB L1, 4 MB L3 and "
            "latencies (gupsim.model.cpu_cache). "
            f"Bucket size: the bucketing model for every N (one rank's stream, "
            f"{2**15 if quick else 2**17} updates after warm-up). GUPS, cycles per update and SBF: full "
            f"simulations (compiled kernel, bit for bit the SimPy model), {UPDATES} updates per process, for "
            f"N <= {limit}; larger rows do not fit the run budget and are left empty. `model_cycles_per_update` is the baseline's CPU accounting with the modelled "
            f"bucket size, for every row: a model, not a simulation (model_rel_err_ is its error). The SBF is "
            f"shown beside the published one (published values are tiny, so no relative target)."
        ),
        wall_s=wall_s,
        shown=["send_blocking_factor", "sim_send_blocking_factor", "sim_updates_per_message",
               "model_cycles_per_update", "model_rel_err_cycles_per_update", "sim_vs_model_cycles_per_update"],
        remarks=remarks,
    )
