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

The cost model is a run's events times the seconds an event costs.

* **Events per update** of an algorithm, ``base + per_message_hop * hops / updates_per_message
  + warmup * hops**warmup_power / updates_per_process`` (:class:`EventsPerUpdate`): every update is generated
  and applied (``base``); a message's packets take events at each hop and carry ``updates_per_message``
  updates (the baseline's bucket, about ``1 + 2 * 1024 / N`` on N processes, within 15% of
  :func:`gupsim.model.bucketing.mean_bucket_size` from 128 to 65,536 processes; one for ``one-packet`` and
  ``routed``); a run's start and drain add a share that shrinks with its length.  Events are counted by the
  run (``events`` of its record) and are the same on every box, so they are fitted alone, by least squares on
  relative error.  (SimPy counts other events: its cost per event below is per the fast engine's events.)
* **Seconds per event** of an engine, ``s0 * N**size_exponent`` (:data:`SECONDS_PER_EVENT`): a larger machine's
  state misses the caches more often (0.32 us an event at 512 nodes, 0.56-0.67 us at 4,096-65,536).

The fit (``benchmarks/estimate_fit.py`` on ``benchmarks/estimate_fit_runs.jsonl``) used 36 fast-engine runs of 2x2x2 to 16x16x8 at 256-4,096 updates a
process measured on the shared 2-core box, and three large ones of docs/performance.md (the whole machine's
``routed`` at 1,024 and 4,096 updates a process, Table 3's 16x16x16 ``baseline``).  It left out the cases
``benchmarks/estimate_error.py`` judges it on (the README's ``gupsim run`` lines and shapes 4x4x4 and 8x8x8),
so that benchmark is a test of the model, not of the fit.  On its own points the model is within 0.8-1.6x of
the CPU seconds of every run of 0.1 s or more.  An algorithm with no fitted events (``alltoall``, ``dv``,
``upc``, ``routed-split``) is costed as ``one-packet``: one packet per update, the most events per update, but
``alltoall``, whose packets do not follow its updates (:func:`alltoall_events`).
The first run of a fast-engine kernel in an empty Numba cache also compiles it; :mod:`gupsim.app.first_run`
adds the engine's own ``compile_estimate_s``.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable

from gupsim.algorithms.alltoall import BUCKET_HEADER_WORDS, message_bytes
from gupsim.algorithms.base import validate_options
from gupsim.base.errors import GupsimError
from gupsim.model.bucketing import MAX_PENDING
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


@dataclass(frozen=True)
class EventsPerUpdate:
    """An algorithm's events per update (the module's docstring): fitted coefficients, no unit but events."""

    base: float
    per_message_hop: float
    warmup: float = 0.0
    warmup_power: float = 1.0
    #: True where a message carries a bucket of updates whose mean size falls with the process count (baseline)
    bucketed: bool = False

    def at(self, processes: int, hops: float, updates_per_process: float) -> float:
        per_message = 1 + 2 * MAX_PENDING / processes if self.bucketed else 1.0
        return (self.base + self.per_message_hop * hops / per_message
                + self.warmup * hops ** self.warmup_power / max(1.0, updates_per_process))


#: The fitted events per update (``benchmarks/estimate_fit.py`` refits them from its runs and prints these).
EVENTS_PER_UPDATE = {
    "baseline": EventsPerUpdate(1.079, 3.551, 117.8, 1.5, bucketed=True),
    "routed": EventsPerUpdate(0.991, 0.220, 10.48, 2.0),
    "one-packet": EventsPerUpdate(2.248, 3.940),
}
#: Seconds per event by engine: (seconds at one process, exponent of the process count).  Fast: fitted with the
#: events above on the runs of 0.5 CPU s or more.  SimPy: the geometric mean over the five SimPy timings of
#: docs/performance.md (its engine table's four rows, 8x8x8 and 16x16x16, and the 8x8x8 ``baseline`` run timed
#: beside the fast engine) of their CPU seconds per modelled event, with the fast engine's exponent (they range
#: 0.87-1.25 of it).
SECONDS_PER_EVENT = {"fast": (0.328e-6, 0.0703), "simpy": (11.2e-6, 0.0703)}
#: CPU seconds of a run beside its events (building the tables and the network); the median of the runs of less
#: than 0.5 s in the fit.
RUN_SETUP_S = 0.01


@dataclass(frozen=True)
class PointEstimate:
    """One point's expected wall time (seconds, overhead included) and peak memory (bytes)."""

    wall_s: float
    memory_bytes: int
    basis: str  # "kept": its own kept timing; "calibrated": model x kept timings; "model": the cost model alone


def mean_hops(shape: str) -> float:
    """A packet's mean route length (at least one): the shape's dimensions over four, a torus's mean distance."""
    return max(1.0, sum(parse_shape(shape)) / 4)


def model_events(algorithm: str, shape: str, processes: int, updates_per_process: float) -> float:
    """The events the cost model expects of a run (an unfitted algorithm's as ``one-packet``'s), at most those of
    sending every update as its own packet: the warm-up term, fitted on runs of 256 updates a process or more,
    would otherwise grow without bound in a run of a few (16x16x16 ``baseline`` x16 counted 33 events an update)."""
    hops = mean_hops(shape)
    alone = EVENTS_PER_UPDATE["one-packet"].at(processes, hops, updates_per_process)
    per_update = EVENTS_PER_UPDATE.get(algorithm, EVENTS_PER_UPDATE["one-packet"])
    return processes * updates_per_process * min(alone, per_update.at(processes, hops, updates_per_process))


def model_run_s(engine: str, algorithm: str, shape: str, processes: int, updates_per_process: float,
                events: float | None = None) -> float:
    """The cost model's run time, in CPU seconds (an idle box's wall seconds); an engine it has no figure for is
    costed as SimPy, the slower.  ``events`` replaces the model's events where the caller knows them better."""
    s0, exponent = SECONDS_PER_EVENT.get(engine, SECONDS_PER_EVENT["simpy"])
    if events is None:
        events = model_events(algorithm, shape, processes, updates_per_process)
    return RUN_SETUP_S + events * s0 * processes ** exponent


#: ``alltoall``'s events per packet, ``a + m / n + hops * (b + d * (1 - exp(-n / n0)))`` for blocks of ``n``
#: packets (``hops``: :func:`mean_hops`): a packet's own events (``a``), its message's shared out over its
#: packets (``m``), and events at each hop, more when it follows the other packets of its own block along the
#: same path, held behind them and woken again (``d``, growing over about ``n0`` packets).  Fitted by
#: ``benchmarks/alltoall_events_fit.py`` on the T3E's small tori (2x2x2 to 8x4x4) with blocks of 1 to 257
#: packets (within 3% of each of its 30 runs), and judged there on what it was not fitted on: the X1
#: reproduce shapes' 65-packet blocks of 256-byte packets and the full 16x8x8 T3E torus.
ALLTOALL_EVENTS_PER_PACKET = (4.97, 5.88, 1.39, 2.40, 45.0)


def _bucket_size(cfg: Any) -> int:
    return validate_options(cfg.algorithm, cfg.algorithm_options or {}).bucket_size


def _block_packets(machine: Any, bucket: int) -> int:
    block = message_bytes(machine, BUCKET_HEADER_WORDS + bucket)
    return math.ceil(block / machine.network.max_payload_bytes)


def alltoall_packets_per_block(cfg: Any) -> int:
    """The network packets of one ``alltoall`` block: 2 + bucket_size words and the MPI header."""
    return _block_packets(cfg.machine, _bucket_size(cfg))


def _largest_of_reach(processes: int) -> float:
    """``sqrt(2 ln P)``: how many standard deviations the largest of P near-normal counts lies above their mean."""
    return math.sqrt(2.0 * math.log(processes)) if processes > 1 else 0.0


def alltoall_round_updates(processes: int, bucket: int) -> float:
    """A process's mean updates in a full round: its fill ends when the fullest of its ``processes`` buckets is
    full, so the mean bucket then holds ``m`` with ``m + z sqrt(m) = bucket``, ``z = sqrt(2 ln P)`` the usual
    reach of the largest of P near-Poisson counts above their mean (0.92 of a 2,048-slot bucket at 1,024
    processes, 0.72 of a 64-slot one at 32; measured 0.93 and 0.75)."""
    z = _largest_of_reach(processes)
    root = (-z + math.sqrt(z * z + 4.0 * bucket)) / 2.0
    return processes * root * root


def alltoall_rounds(updates_per_process: float, processes: int, bucket: int) -> int:
    """The rounds of a run: it ends in the round its slowest process runs out of updates.  A process's updates in
    a round vary about their mean (:func:`alltoall_round_updates`) with a coefficient of variation of about
    ``1 / sqrt(bucket)`` (HPCC's stream fills buckets in bursts: measured 0.12-0.14, 0.05-0.06 and 0.02 at 64,
    512 and 2,048 slots), so after ``k`` rounds the slowest of P has taken about ``k - z cv sqrt(k)`` rounds'
    worth, ``z = sqrt(2 ln P)``; the rounds are the least ``k`` at which that covers the run."""
    share = updates_per_process / max(1.0, alltoall_round_updates(processes, bucket))
    spread = _largest_of_reach(processes) / math.sqrt(bucket)
    root = (spread + math.sqrt(spread * spread + 4.0 * share)) / 2.0
    return max(1, math.ceil(root * root - 1e-9))


def alltoall_events_per_packet(packets_per_block: int, hops: float) -> float:
    """:data:`ALLTOALL_EVENTS_PER_PACKET`'s model at a block of ``packets_per_block`` packets, ``hops`` apart."""
    a, m, b, d, n0 = ALLTOALL_EVENTS_PER_PACKET
    n = packets_per_block
    return a + m / n + hops * (b + d * (1.0 - math.exp(-n / n0)))


def alltoall_events(cfg: Any) -> float:
    """The events of an ``alltoall`` run: a round sends every process's P - 1 blocks whole (0.5b's fixed
    exchange) whatever they hold, and its barrier's ceil(log2 P) one-packet messages a process, so its packets
    follow the rounds (:func:`alltoall_rounds`; the last, partly empty ones are whole exchanges), not the updates.
    The fill and the apply add no event."""
    bucket = _bucket_size(cfg)
    processes = processes_of(cfg)
    rounds = alltoall_rounds(cfg.updates_per_process, processes, bucket)
    packets = _block_packets(cfg.machine, bucket)
    hops = mean_hops(cfg.shape)
    steps = (processes - 1).bit_length()
    blocks = processes * (processes - 1) * packets * alltoall_events_per_packet(packets, hops)
    barrier = processes * steps * alltoall_events_per_packet(1, hops)
    return rounds * (blocks + barrier)


#: Algorithms whose events the model counts from the whole configuration, not from (shape, processes, updates).
EVENTS_OF_CONFIG = {"alltoall": alltoall_events}


def processes_of(cfg: Any) -> int:
    """A run configuration's processes: its nodes times the machine's processes a node."""
    return math.prod(parse_shape(cfg.shape)) * cfg.machine.cpu.processes_per_node


def config_run_s(engine: str, cfg: Any) -> float:
    """:func:`model_run_s` of a run configuration, with :data:`EVENTS_OF_CONFIG`'s events where it has them, on
    either engine: both run the same model event for event, and SimPy is costed per fast-engine event."""
    counter = EVENTS_OF_CONFIG.get(cfg.algorithm)
    events = counter(cfg) if counter is not None else None
    return model_run_s(engine, cfg.algorithm, cfg.shape, processes_of(cfg), cfg.updates_per_process, events)


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
    if row.get("algorithm") in EVENTS_OF_CONFIG:  # a row holds no configuration to count its events from
        return
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
    memory = memory_estimate(run, engine)
    if point.key in timings.by_key:
        return PointEstimate(OVERHEAD_S + timings.by_key[point.key], memory, "kept")
    modelled = config_run_s(engine, run)
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
            f"at once (the first run of each fast kernel on a cold cache also compiles it: 35-60 s)")


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB" if n < 10 * 2**30 else f"{n / 2**30:,.1f} GB"
