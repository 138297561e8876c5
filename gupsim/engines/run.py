"""Run a simulation and reduce it to one tidy record.

The record is what every experiment, test and plot consumes: one flat
mapping per run (a row of a pandas frame), with the resolved configuration
and the seed beside the measurements.

**Precision.**  Both engines record when the updates applied crossed each of 1,000 evenly spaced marks
(:func:`gupsim.model.output_analysis.applied_marks`).  :func:`gupsim.model.output_analysis.rate_interval`
cuts the warm-up and the drain from that series (MSER-5) and gives the rate after them (``gups_steady``) with
a 95% interval from the variance-time line of overlapping sums (``gups_ci_low``/``gups_ci_high``; the
diagnostic ``gups_ci_batches`` and ``gups_ci_lag1``, the von Neumann statistic of 20 batch means;
``warmup_updates``, ``warmup_s``); ``precision`` is "ok" or "insufficient" (too short, never settled, or
positively correlated at the batches' scale).  ``cycles_per_update_ci_low``/``_high`` follow from the rate's
bounds.  ``steady_state`` is :attr:`gupsim.model.output_analysis.RateInterval.steady`: a valid interval at
most 5% wide either side.

**Stopping when precise.**  With ``RunConfig.precision`` (``--precision``) the run ends once the interval is
that precise (:func:`gupsim.model.output_analysis.precise`, evaluated by both engines at the same marks);
``updates_per_process`` is the cap.  The record says the target (``precision_target``, None without one),
whether it was reached (``precision_reached``) and the updates a process actually applied
(``updates_applied_per_process``).  A run that stopped reports the interval's rate as ``gups``
(``gups_steady``: it may not have reached the window's closing mark), and ``gups_total`` and
``bytes_per_update`` over the updates applied; one that ran to its cap is the fixed-length run, record for
record, but for ``precision_target``.

**Window.**  ``gups`` is the rate at which updates are applied
between the moments 25% and 75% of all updates have been applied.  This
excludes the warm-up (buckets filling, the first messages in flight) and
the drain (the last buckets, termination), which the HPCC total-time metric
(``gups_total``, also reported) includes.  With at least
:data:`MIN_STEADY_UPDATES` updates per process the window's rate changes by less than
2% when the run length doubles (``tests/engines/reference/test_simulation.py`` checks it).
An algorithm that applies a whole round's updates in one burst (``rate_over_whole_run``, e.g.
``alltoall``) has no such window: its ``gups`` is the whole run's rate, as ``gups_total``.
``updates_per_message`` and ``updates_per_packet`` are taken over the
messages sent inside the window; ``bytes_per_update`` (all wire bytes over
all updates, local ones included), the send-blocking factor and link
utilisation cover the whole run.

**One interface.**  The runner knows an engine only by the contract
(:class:`gupsim.engines.contract.Engine`), found in its registry (:data:`ENGINES`): it asks
the engine chosen for the run for its memory estimate and to make the run, and whichever engine ran, the
record is made from what the run reports (:class:`gupsim.engines.outcome.RunOutcome`, through
:class:`gupsim.engines.outcome.ReportsOutcome`), never from an engine's own objects.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd

from pydantic import ValidationError

from gupsim.algorithms.base import algorithm_class, validate_options
from gupsim.base.errors import GupsimError, SimulationError
from gupsim.base.memory import allocation_failures, peak_rss_mb
from gupsim.config.plausible import implausible, warn_implausible
from gupsim.model.output_analysis import RateInterval, applied_marks, rate_interval
from gupsim.model.run_config import WINDOW, RunConfig, stream_layout
from gupsim.engines.checks import check_algorithm, check_network
from gupsim.engines.contract import Engine, EngineRegistry, Progress
from gupsim.engines.fast.engine import ENGINE as FAST
from gupsim.engines.reference.simulation import ENGINE as SIMPY
from gupsim.engines.outcome import ReportsOutcome, RunOutcome
from gupsim.engines.reference.telemetry import Telemetry, check_available
from gupsim.config.loading import load_machine
from gupsim.model.bounds import network_bound_gups
from gupsim.topology.grid import Topology

#: The engines, in the order ``auto`` prefers them: the fast one where a kernel models the run, else SimPy, which
#: makes every run (:class:`gupsim.engines.contract.EngineRegistry`).
ENGINES = EngineRegistry((FAST, SIMPY))

#: Run length (updates per process) from which the window's rate is stable to 2% on the tested shapes.
MIN_STEADY_UPDATES = 4096

RECORD_KEYS = (
    "gups", "gups_total", "cycles_per_update", "bytes_per_update", "updates_per_packet",
    "updates_per_message", "send_blocking_factor", "link_utilisation_mean", "link_utilisation_max",
    "updates_generated", "updates_applied", "sim_time_s", "events", "wall_s", "peak_rss_mb",
    "gups_steady", "gups_ci_low", "gups_ci_high", "gups_ci_batches", "gups_ci_lag1", "warmup_updates", "warmup_s",
    "precision", "cycles_per_update_ci_low", "cycles_per_update_ci_high", "steady_state",
    "precision_target", "precision_reached", "updates_applied_per_process", "warm_start",
)


def simulate(run: RunConfig, observer: Any = None, checkpoint: Any = None,
             progress: Progress | None = None, threads: int = 1) -> tuple[ReportsOutcome, dict[str, Any]]:
    """Build and run one simulation; return it (for inspection: its ``outcome()``) and its record.

    ``observer`` (optional, :func:`telemetry`) is attached to the built simulation before it runs and adds
    its results to the record; only an engine that observes takes one.
    ``checkpoint`` (the chosen engine's :meth:`~gupsim.engines.contract.Engine.checkpoint`) keeps a run's state
    on disk as it goes and resumes from it; the record's ``wall_s`` then counts the earlier pieces too, and its
    ``peak_rss_mb`` is the largest peak of all the pieces.  An engine that keeps no checkpoint ignores it.
    ``wall_s`` leaves out the seconds the engine spent compiling (the fast engine's kernels, or loading them
    from Numba's cache), which the record gives as ``compile_s``.
    ``progress(applied, total)``, if given, is told the updates applied so far every few seconds of wall
    time and at the end (``gupsim run``'s progress bar); it sees the run, it does not change it.
    ``threads``: how many threads the run may use (the record says how many it did, ``threads``, and the share
    of their time spent running events, ``parallel_efficiency``); the record is the same on any number.
    """
    wall0 = time.perf_counter()
    _check_sample_interval(observer)
    engine = _preflight(run, telemetry=observer.kinds if observer is not None else ())
    with allocation_failures(f"{run.algorithm} on {run.shape}", lambda: _memory_estimate(run, engine)):
        return _simulate(run, engine, observer, checkpoint, progress, wall0, threads)


def choose_engine(run: RunConfig) -> str:
    """The name of the engine that makes ``run`` (:meth:`gupsim.engines.contract.EngineRegistry.engine_for`)."""
    return ENGINES.engine_for(run).name


def memory_estimate(run: RunConfig, engine: str) -> int:
    """The memory estimate, in bytes, of ``run`` on the engine named ``engine``; a run that would not fit is
    refused in one line."""
    return _memory_estimate(run, ENGINES[engine])


def _memory_estimate(run: RunConfig, engine: Engine) -> int:
    return engine.memory_estimate(run, ENGINES.alternative(run, engine))


def _simulate(run: RunConfig, engine: Engine, observer: Any, checkpoint: Any,
              progress: Progress | None, wall0: float, threads: int = 1) -> tuple[ReportsOutcome, dict[str, Any]]:
    done = engine.simulate(run, observer, checkpoint, progress, threads)
    sim, compile_s = done.simulation, done.compile_s
    outcome = sim.outcome()
    _check_counts(outcome)
    wall = time.perf_counter() - wall0 - compile_s + outcome.earlier_wall_s
    record = make_record(outcome, wall) | {"compile_s": compile_s, "engine": engine.name, "threads": done.threads,
                                           "parallel_efficiency": done.parallel_efficiency}
    if observer is not None:
        record.update(observer.results(outcome))
    return sim, record


def preflight(run: RunConfig, telemetry: Collection[str] = ()) -> str:
    """Everything checked before a run is built, each failure one line; the name of the engine that will run it.

    The HPCC slice every rank reads (updates and seed), the network the algorithm runs on, the record
    extras ``telemetry`` asks for (keys of :data:`gupsim.engines.reference.telemetry.OPTIONS`: they need an
    engine that observes, and a network that can give them), the engine, and that engine's memory estimate.
    :func:`simulate` calls it, and a sweep calls it on every point before anything runs
    (:mod:`gupsim.studies.sweep`), so a point that cannot run fails the sweep's validation with the line
    ``gupsim run`` would print.
    """
    return _preflight(run, telemetry).name


def _preflight(run: RunConfig, telemetry: Collection[str]) -> Engine:
    stream_layout(run)  # a run past its HPCC slices is one line, whichever engine would have run it
    check_network(run)
    check_available(run, telemetry)  # first: telemetry this network cannot give is refused on any engine
    engine = ENGINES.engine_for(run, observed=bool(telemetry))
    _memory_estimate(run, engine)
    check_algorithm(run)  # after the memory estimate: a shape too large is refused before its topology is made
    return engine


def _check_sample_interval(observer: Any) -> None:
    """Refuse a sampling interval that is not a finite number of seconds above 0.

    A NaN interval would schedule the sampler's timeouts at time NaN, which
    reorders SimPy's queue and silently changes the run's result; an infinite
    one would take a single sample.  The command line and a sweep's extras
    check the sign only, so the runner checks every observer that samples.
    """
    interval = getattr(observer, "sample_interval_s", None)
    if interval is not None and not (math.isfinite(interval) and interval > 0):
        raise GupsimError(f"sample_interval_s={interval!r}: must be a finite number of simulated seconds above 0")


def _check_counts(outcome: RunOutcome) -> None:
    """Every update generated was applied, and every one of the run's; a run its stopping rule ended has
    applied no more than it generated, and generated no more than its cap."""
    generated, applied, total = outcome.updates_generated, outcome.updates_applied, outcome.total_updates
    stopped = outcome.precision_reached and applied <= generated <= total
    if not stopped and (applied != generated or generated != total):
        raise SimulationError(f"updates lost: generated {generated}, applied {applied}, expected {total}")


def run(run_config: RunConfig, checkpoint: Any = None, threads: int = 1) -> dict[str, Any]:
    return simulate(run_config, checkpoint=checkpoint, threads=threads)[1]


def make_run_config(**fields: Any) -> RunConfig:
    """Validate run parameters; a bad one is one line of :class:`GupsimError`.

    ``machine`` is a loaded machine (:func:`gupsim.config.load_machine`, with overrides) or, as on the
    command line, a machine's name or YAML path."""
    if isinstance(fields.get("machine"), (str, os.PathLike)):
        fields["machine"] = load_machine(os.fspath(fields["machine"]))
    try:
        run = RunConfig(**fields)
    except ValidationError as exc:
        errors = exc.errors()
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])  # a misspelling first
        # pydantic names a validated model's wrapper in the location ("function-after[...]"); users never do
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        if err["type"] == "extra_forbidden":
            raise GupsimError(f"unknown run field '{loc}' (valid: {', '.join(RunConfig.model_fields)})") from None
        if err["type"] == "missing":
            raise GupsimError(f"missing run field '{loc}'") from None
        raise GupsimError(f"{loc}: {err['msg']} (got {err.get('input')!r})") from None
    validate_options(run.algorithm, run.algorithm_options)  # now, not when the run starts
    if run.precision is not None and run.verify:
        raise GupsimError("precision: a run stopped once precise applies only part of its updates, and HPCC's "
                          "verification needs all of them: drop --verify or --precision")
    return run


def make_record(outcome: RunOutcome, wall_s: float) -> dict[str, Any]:
    """The run's record, from what its engine reported; ``wall_s`` is the wall time it took."""
    o, m, run = outcome, outcome.machine, outcome.run
    t = o.sim_time_s
    ri = rate_interval(applied_marks(o.total_updates)[:len(o.applied_times)], o.applied_times)
    whole_run = o.updates_applied / t if t > 0 else float("nan")  # HPCC's own metric
    # a run stopped when precise may not have reached the window's closing mark: its rate is the interval's
    rate = ri.rate if o.precision_reached else \
        whole_run if algorithm_class(run.algorithm).rate_over_whole_run else _window_rate(o)
    util = o.links["busy_s"] / t if t > 0 else np.zeros(1)
    alg = dict(o.algorithm_metrics)
    record: dict[str, Any] = {
        "machine": m.name,
        "shape": run.shape,
        "topology": o.topology.kind,
        "algorithm": run.algorithm,
        "nodes": o.topology.num_nodes,
        "processes": o.processes,
        "updates_per_process": run.updates_per_process,
        "seed": run.seed,
        "gups": rate / 1e9,
        **_precision(ri, o.processes * m.cpu.clock_hz),
        "precision_target": run.precision,
        "precision_reached": o.precision_reached,
        "warm_start": run.warm_start,
        "updates_applied_per_process": o.updates_applied / o.processes,
        "gups_total": whole_run / 1e9,
        "cycles_per_update": o.processes * m.cpu.clock_hz / rate,
        "bytes_per_update": o.wire_bytes_injected / o.updates_applied,
        "updates_per_packet": alg.pop("updates_per_packet", float("nan")),
        "updates_per_message": alg.pop("updates_per_message", float("nan")),
        "send_blocking_factor": alg.pop("send_blocking_factor", float("nan")),
        "link_utilisation_mean": float(util.mean()) if len(util) else 0.0,
        "link_utilisation_max": float(util.max()) if len(util) else 0.0,
        "updates_generated": o.updates_generated,
        "updates_applied": o.updates_applied,
        "sim_time_s": t,
        "events": o.events,
        "wall_s": wall_s,
        "peak_rss_mb": max(peak_rss_mb(), o.earlier_peak_rss_mb),
        "packets_injected": o.packets_injected,
        "events_per_s": o.events / wall_s if wall_s > 0 else float("nan"),
    }
    record.update({f"alg_{k}": v for k, v in alg.items()})
    record.update(_dma_fields(o))
    record.update(_network_bound(o, record))
    record["config"] = resolved_config(run)
    _check_finite(record, run)
    warn_implausible(run.machine)  # after the run: a run refused above says so in its one line
    return record


def _window_rate(o: RunOutcome) -> float:
    """Updates per second between the window's marks (NaN if the run ended before both were crossed)."""
    if len(o.window_times) < 2 or not o.window_times[1] > o.window_times[0]:
        return float("nan")
    return (WINDOW[1] - WINDOW[0]) * o.total_updates / (o.window_times[1] - o.window_times[0])


def _dma_fields(o: RunOutcome) -> dict[str, Any]:
    """BG/P's DMA engines over the whole run (seed 002 §3.2, §3.4): the injection and reception engines' busy share
    per node (mean and max), and the sends the throttle held back and the seconds they waited.  None on machines
    without a DMA engine."""
    if o.dma is None:
        return {}
    t = o.sim_time_s
    tx, rx = (o.dma[k] / t if t > 0 else np.zeros(1) for k in ("tx_busy_s", "rx_busy_s"))
    return {"dma_tx_utilisation_mean": float(tx.mean()), "dma_tx_utilisation_max": float(tx.max()),
            "dma_rx_utilisation_mean": float(rx.mean()), "dma_rx_utilisation_max": float(rx.max()),
            "throttle_waits": int(o.dma["throttle_waits"]), "throttled_s": float(o.dma["throttled_s"]),
            "throttle_polls": int(o.dma["throttle_polls"])}


def _precision(ri: RateInterval, cycles: float) -> dict[str, Any]:
    """The rate after the warm-up, its 95% interval and diagnostics (:mod:`gupsim.model.output_analysis`);
    ``cycles`` is the machine's cycles per second, all processes together."""
    return {
        "steady_state": ri.steady, "precision": "ok" if ri.ok else "insufficient",
        "gups_steady": ri.rate / 1e9, "gups_ci_low": ri.low / 1e9, "gups_ci_high": ri.high / 1e9,
        "gups_ci_batches": ri.batches, "gups_ci_lag1": ri.lag1,
        "warmup_updates": ri.warmup_updates, "warmup_s": ri.warmup_s,
        "cycles_per_update_ci_low": cycles / ri.high, "cycles_per_update_ci_high": cycles / ri.low,
    }


def _check_finite(record: dict[str, Any], run: RunConfig) -> None:
    """Refuse, in one line, a run whose numbers overflowed a double: inputs past what can be computed."""
    infinite = [k for k, v in record.items() if isinstance(v, float) and math.isinf(v)]
    if infinite:
        causes = implausible(run.machine)
        raise GupsimError(f"the run's {', '.join(infinite)} overflowed a double (inf)"
                          + (f": {'; '.join(causes)}" if causes else "") + "; use smaller values")


def _network_bound(outcome: RunOutcome, record: dict[str, Any]) -> dict[str, float]:
    """Eq. (2) of seed 000 with this run's wire bytes, and the share of it the run reached.

    ``b`` is the wire bytes per update, or, where there are software hops
    (``routed``), the wire bytes per update per hop in the steady-state window:
    each hop's packet travels one dimension, so only one of them crosses a
    bisection cut (as Table 4's network column), and the window leaves out the
    partial buckets flushed at the end, which would inflate ``b``.  Where
    the network binds, ``network_bound_fraction`` says how close to the cut's
    capacity the modelled torus gets.  Torus and mesh partitions only.
    """
    hops = record.get("alg_software_hops_per_update", 1.0)
    topology = outcome.topology
    if not isinstance(topology, Topology) or not record["bytes_per_update"] > 0 or not hops > 0:
        return {}
    b = record.get("alg_window_bytes_per_hop", record["bytes_per_update"] / hops)
    bound = network_bound_gups(topology.num_nodes, float(topology.edge_expansion()),
                               outcome.machine.network.link_bytes_per_s, b)
    return {"network_bound_gups": bound, "network_bound_fraction": record["gups"] / bound}


def resolved_config(run_config: RunConfig) -> dict[str, Any]:
    data = run_config.model_dump(mode="json")
    data["machine"].pop("source_path", None)
    return data


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Tidy frame: one row per run, the nested config left out (it is in each record)."""
    return pd.DataFrame([{k: v for k, v in r.items() if k != "config"} for r in records])


def compile_all() -> float:
    """Compile (or load from their caches) every engine's compiled code; return the seconds it took.  Two
    processes per node: routed-split needs a worker and a router core, and the kernels' types do not depend on
    the count."""
    t0 = time.perf_counter()
    machine = load_machine("bgl", {"cpu.processes_per_node": 2})
    for engine in ENGINES.values():
        engine.compile(machine)
    return time.perf_counter() - t0


def telemetry(links: bool = False, histograms: bool = False, sample_interval_s: float | None = None) -> Telemetry:
    """An observer that adds the asked-for extras to a run's record (per-link counters, histograms, samples every
    ``sample_interval_s`` simulated seconds: :mod:`gupsim.engines.reference.telemetry`); its ``wanted`` says
    whether it asks for any, its ``kinds`` which."""
    return Telemetry(links=links, histograms=histograms, sample_interval_s=sample_interval_s)


def simulate_with_extras(run_config: "RunConfig", extras: Any, threads: int = 1) -> dict[str, Any]:
    """One run's record, with the extras ``extras`` (a RecordExtras) asks for, on up to ``threads`` threads where
    its engine can split it (:meth:`gupsim.engines.contract.Engine.threads_for`; one elsewhere)."""
    observer = Telemetry.from_extras(extras)
    if threads > 1:
        threads = ENGINES.engine_for(run_config, observed=observer.wanted).threads_for(run_config, threads)[0]
    return simulate(run_config, observer if observer.wanted else None, threads=threads)[1]
