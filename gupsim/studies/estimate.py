"""What a sweep will cost before it runs: wall time and peak memory, per point and in all.

**Memory** is the estimate the memory refusal uses (:func:`gupsim.engines.run.memory_estimate` for the
engine that will run the point: :mod:`gupsim.base.memory`), which is pessimistic by
design.  The sweep's peak is that of the points that may run at once, one per
worker: the sum of the largest ``workers`` estimates.

**Wall time** of a sweep is :data:`STARTUP_S` and its points' shared out among
the workers.  That of a point is :data:`OVERHEAD_S` (sending it to a worker,
collecting its memory, storing its row) plus its run time.  The run time
comes, in order of preference, from

* a kept timing of the same point: a row of the results store with its key,
  made by any version of the model code (``wall_s`` of its record);
* the cost model below, scaled by kept timings of the same engine and
  algorithm (rows of the store, and the runs ``gupsim reproduce`` kept under
  ``results/runs``): the median of measured over modelled time;
* the cost model alone.

The cost model is updates x mean hops (a packet's route length, the shape's
dimensions over four) x seconds per update-hop, a constant per engine and
algorithm from docs/performance.md (:data:`US_PER_UPDATE_HOP`).  It is rough:
a run's events per update also depend on run length (``baseline``
aggregates more updates per packet in long runs) and the cost of an event on
the machine's size (cache misses), by a factor of up to about 3 either way.
The first run of a fast-engine kernel in an empty Numba cache also compiles
it, about 30 s, which no estimate includes.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable

from gupsim.base.errors import GupsimError
from gupsim.topology.base import parse_shape
from gupsim.engines.run import memory_estimate

#: Seconds per point beside its run: the task's round trip to a worker, the worker's collection and trim of the
#: last run's memory (:func:`gupsim.studies.runpool.reset_peak_rss`), and the durable write of its row.  Measured on the
#: example sweep (64 points whose runs took 13.8 s in all, finished over 33.6 s by two workers on a shared 2-core
#: box): about 0.8 s a point.
OVERHEAD_S = 0.8
#: Seconds before the first point starts: validating the points, starting a local cluster and its workers'
#: imports (the same measurement: 53 s in all, 18 s before the first point finished).
STARTUP_S = 15.0
#: Wall seconds per update-hop (an update carried one hop), by engine and algorithm, measured
#: (docs/performance.md): fast ``one-packet`` 1.3-1.9 us per packet-hop with one update a packet; fast ``routed``
#: the whole machine at 128 updates per process, 865 s; fast ``baseline`` seed 000 Table 3's rows (4.7 s at 512
#: nodes to 322 s at 4,096); SimPy 17-105 us per update-hop (the SimPy table: 64.2 s for 8x8x8 ``one-packet``
#: x256, 82.6 s for 16x16x16 x16).
US_PER_UPDATE_HOP = {("fast", "baseline"): 1.4, ("fast", "one-packet"): 1.8, ("fast", "routed"): 3.2,
                     ("fast", None): 3.2, ("simpy", None): 80.0}


@dataclass(frozen=True)
class PointEstimate:
    """One point's expected wall time (seconds, overhead included) and peak memory (bytes)."""

    wall_s: float
    memory_bytes: int
    basis: str  # "kept": its own kept timing; "calibrated": model x kept timings; "model": the cost model alone


def update_hops(shape: str, processes: int, updates_per_process: int) -> float:
    """Updates x mean hops (at least one) of a run: the cost model's measure of its work."""
    return processes * updates_per_process * max(1.0, sum(parse_shape(shape)) / 4)


def model_run_s(engine: str, algorithm: str, shape: str, processes: int, updates_per_process: int) -> float:
    """The cost model's run time, in wall seconds."""
    us = US_PER_UPDATE_HOP.get((engine, algorithm), US_PER_UPDATE_HOP.get((engine, None), US_PER_UPDATE_HOP[("simpy", None)]))
    return update_hops(shape, processes, updates_per_process) * us * 1e-6


@dataclass
class Timings:
    """Kept timings: run wall seconds by point key, and measured / modelled ratios by (engine, algorithm)."""

    by_key: dict[str, float]
    ratios: dict[tuple[str, str], list[float]]

    def ratio(self, engine: str, algorithm: str) -> float | None:
        ratios = self.ratios.get((engine, algorithm))
        return statistics.median(ratios) if ratios else None


def kept_timings(store: Any = None, kept: Iterable[dict[str, Any]] = ()) -> Timings:
    """The timings kept in a results store's rows (any model code's) and in ``gupsim reproduce``'s kept runs
    (``kept``: :func:`gupsim.studies.runpool.kept_rows`)."""
    timings = Timings({}, {})
    if store is not None:
        table = store.read()
        needed = {"status", "wall_s", "engine", "algorithm", "shape", "processes", "updates_per_process"}
        if needed <= set(table.columns):
            for row in table.loc[table["status"].eq("ok")].to_dict("records"):
                timings.by_key[row["key"]] = float(row["wall_s"])
                _add(timings, row["engine"], row)
    for row in kept:  # each kept record says which engine ran it
        _add(timings, row["engine"], row)
    return timings


def _add(timings: Timings, engine: Any, row: dict[str, Any]) -> None:
    try:
        modelled = model_run_s(str(engine), row["algorithm"], row["shape"], int(row["processes"]),
                               int(row["updates_per_process"]))
        measured = float(row["wall_s"])
    except (TypeError, ValueError, KeyError, GupsimError):  # a row of another layout is not a timing
        return
    if modelled > 0 and math.isfinite(measured) and measured > 0:
        timings.ratios.setdefault((str(engine), row["algorithm"]), []).append(measured / modelled)


def estimate_point(point: Any, timings: Timings) -> PointEstimate:
    """A sweep point's (:class:`gupsim.studies.sweep.Point`) estimate."""
    run, engine = point.run, point.engine
    processes = math.prod(parse_shape(run.shape)) * run.machine.cpu.processes_per_node
    memory = memory_estimate(run, engine)
    if point.key in timings.by_key:
        return PointEstimate(OVERHEAD_S + timings.by_key[point.key], memory, "kept")
    modelled = model_run_s(engine, run.algorithm, run.shape, processes, run.updates_per_process)
    ratio = timings.ratio(engine, run.algorithm)
    if ratio is None:
        return PointEstimate(OVERHEAD_S + modelled, memory, "model")
    return PointEstimate(OVERHEAD_S + modelled * ratio, memory, "calibrated")


def estimate_points(points: Iterable[Any], store: Any = None,
                    kept: Iterable[dict[str, Any]] = ()) -> list[PointEstimate]:
    timings = kept_timings(store, kept)
    return [estimate_point(p, timings) for p in points]


def total_wall_s(estimates: list[PointEstimate], workers: int) -> float:
    """The sweep's wall time on ``workers``: :data:`STARTUP_S`, then its work shared out, but never less than its
    longest point."""
    if not estimates:
        return 0.0
    return STARTUP_S + max(sum(e.wall_s for e in estimates) / max(1, workers), max(e.wall_s for e in estimates))


def peak_bytes(estimates: list[PointEstimate], workers: int) -> int:
    """The memory of the ``workers`` largest points, which may run at once."""
    return sum(sorted((e.memory_bytes for e in estimates), reverse=True)[:max(1, workers)])


def describe(estimates: list[PointEstimate], workers: int) -> str:
    """One line: the estimate, and what it is based on."""
    if not estimates:
        return "estimate: nothing to run"
    walls = [e.wall_s for e in estimates]
    mems = [e.memory_bytes for e in estimates]
    bases = {b: sum(e.basis == b for e in estimates) for b in ("kept", "calibrated", "model")}
    based = ", ".join(f"{n} {what}" for what, n in (("from their own kept timing", bases["kept"]),
                                                     ("by the cost model scaled by kept timings", bases["calibrated"]),
                                                     ("by the cost model alone", bases["model"])) if n)
    return (f"estimate for {len(estimates)} points (rough; {based}; memory by the memory refusal's model): "
            f"{_duration(min(walls))}-{_duration(max(walls))} per point, {_duration(sum(walls))} of work, "
            f"about {_duration(total_wall_s(estimates, workers))} on {workers} worker{'s' * (workers != 1)}; "
            f"peak memory {_mb(min(mems))}-{_mb(max(mems))} per point, {_mb(peak_bytes(estimates, workers))} "
            f"at once (first runs of a fast kernel also compile it, about 30 s)")


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB" if n < 10 * 2**30 else f"{n / 2**30:,.1f} GB"
