"""Run a simulation and reduce it to one tidy record.

The record is what every experiment, test and plot consumes: one flat
mapping per run (a row of a pandas frame), with the resolved configuration
and the seed beside the measurements.

**Steady-state rule.**  ``gups`` is the rate at which updates are applied
between the moments 25% and 75% of all updates have been applied.  This
excludes the warm-up (buckets filling, the first messages in flight) and
the drain (the last buckets, termination), which the HPCC total-time metric
(``gups_total``, also reported) includes.  With at least
:data:`MIN_STEADY_UPDATES` updates per process the rate changes by less than
2% when the run length doubles (``tests/test_simulation.py`` checks it).
``updates_per_message`` and ``updates_per_packet`` are taken over the
messages sent inside the window; ``bytes_per_update`` (all wire bytes over
all updates, local ones included), the send-blocking factor and link
utilisation cover the whole run.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Collection
from typing import Any, Callable

import numpy as np
import pandas as pd

from pydantic import ValidationError
from simpy.core import EmptySchedule, StopSimulation

from gupsim.algorithms.base import validate_options
from gupsim.base.errors import DeadlockError, GupsimError, SimulationError
from gupsim.base.memory import allocation_failures, peak_rss_mb
from gupsim.config.plausible import implausible, warn_implausible
from gupsim.model.run_config import WINDOW, RunConfig, stream_layout
from gupsim.engines.checks import check_algorithm, check_network
from gupsim.engines.choose import choose_engine
from gupsim.engines.fast.engine import KERNELS, simulate_fast
from gupsim.engines.fast.engine import check_memory as check_fast_memory
from gupsim.engines.reference.simulation import Simulation
from gupsim.engines.reference.simulation import check_memory as check_simpy_memory
from gupsim.engines.reference.telemetry import Telemetry, check_available
from gupsim.engines.fast.compiling import compile_time
from gupsim.config.loading import load_machine
from gupsim.model.bounds import network_bound_gups
from gupsim.topology.grid import Topology

#: SimPy events between two progress reports (a fraction of a second of the reference engine).
PROGRESS_EVERY_EVENTS = 1 << 16
#: Documented minimum run length (updates per process) for a steady-state rate.
MIN_STEADY_UPDATES = 4096

RECORD_KEYS = (
    "gups", "gups_total", "cycles_per_update", "bytes_per_update", "updates_per_packet",
    "updates_per_message", "send_blocking_factor", "link_utilisation_mean", "link_utilisation_max",
    "updates_generated", "updates_applied", "sim_time_s", "events", "wall_s", "peak_rss_mb",
)


def simulate(run: RunConfig, observer: Any = None, checkpoint: Any = None,
             progress: Callable[[int, int], None] | None = None) -> tuple[Simulation, dict[str, Any]]:
    """Build and run one simulation; return it (for inspection) and its record.

    ``observer`` (optional, e.g. :class:`gupsim.engines.reference.telemetry.Telemetry`) is attached
    to the built simulation before it runs and adds its results to the record.
    ``checkpoint`` (a :class:`gupsim.engines.fast.driver.Checkpoint`) keeps a fast run's state on disk as it goes
    and resumes from it; the record's ``wall_s`` then counts the earlier pieces too, and its ``peak_rss_mb``
    is the largest peak of all the pieces.  SimPy runs ignore it.
    ``wall_s`` leaves out the seconds the fast engine spent compiling its kernels or loading them from
    Numba's cache, which the record gives as ``compile_s`` (0 on SimPy).
    ``progress(applied, total)``, if given, is told the updates applied so far every few seconds of wall
    time and at the end (``gupsim run``'s progress bar); it sees the run, it does not change it.
    """
    wall0 = time.perf_counter()
    _check_sample_interval(observer)
    engine = preflight(run, telemetry=observer.kinds if observer is not None else ())
    with allocation_failures(f"{run.algorithm} on {run.shape}", lambda: memory_estimate(run, engine)):
        return _simulate(run, engine, observer, checkpoint, progress, wall0)


def memory_estimate(run: RunConfig, engine: str) -> int:
    """The memory estimate, in bytes, of ``run`` on ``engine`` ('fast' or 'simpy'); a run that would not fit is
    refused in one line."""
    if engine == "fast":
        return check_fast_memory(run)
    return check_simpy_memory(run, has_kernel=run.algorithm in KERNELS)


def _simulate(run: RunConfig, engine: str, observer: Any, checkpoint: Any,
              progress: Callable[[int, int], None] | None, wall0: float) -> tuple[Simulation, dict[str, Any]]:
    if engine == "fast":
        with compile_time() as compile_s:
            fast = simulate_fast(run, checkpoint, progress)
        _check_counts(fast)
        wall = time.perf_counter() - wall0 - compile_s[0] + fast.earlier_wall_s
        return fast, make_record(fast, wall) | {"compile_s": compile_s[0], "engine": "fast"}
    sim = Simulation(run)
    if observer is not None:
        observer.attach(sim)
    procs = [sim.env.process(sim.algorithm.process(r)) for r in range(sim.num_ranks)]
    finish = sim.env.all_of(procs) if _runs_to_completion(sim) else sim.all_applied
    try:
        _run_until(sim, finish, progress)
    except EmptySchedule:
        raise _deadlock(sim, procs) from None
    wall = time.perf_counter() - wall0
    _check_counts(sim)
    record = make_record(sim, wall) | {"compile_s": 0.0, "engine": "simpy"}
    if observer is not None:
        record.update(observer.results(sim))
    return sim, record


def preflight(run: RunConfig, telemetry: Collection[str] = ()) -> str:
    """Everything checked before a run is built, each failure one line; the engine that will run it.

    The HPCC slice every rank reads (updates and seed), the network the algorithm runs on, the record
    extras ``telemetry`` asks for (keys of :data:`gupsim.engines.reference.telemetry.OPTIONS`: they need SimPy, and a network
    that can give them), the engine, and that engine's memory estimate.  :func:`simulate` calls it,
    and a sweep calls it on every point before anything runs (:mod:`gupsim.studies.sweep`), so a point that cannot run
    fails the sweep's validation with the line ``gupsim run`` would print.
    """
    stream_layout(run)  # a run past its HPCC slices is one line, whichever engine would have run it
    check_network(run)
    check_available(run, telemetry)  # first: telemetry this network cannot give is refused on any engine
    if telemetry and run.engine == "fast":
        # Named as both gupsim run's flags and a sweep's record keys, since either may have asked for it.
        raise GupsimError("telemetry (per-link data, histograms, samples: --links, --histograms, "
                          "--sample-interval-s, or a sweep's record keys) needs the SimPy engine: "
                          "set the engine to simpy or auto")
    engine = "simpy" if telemetry else choose_engine(run)
    memory_estimate(run, engine)
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


def _run_until(sim: Simulation, finish: Any, progress: Callable[[int, int], None] | None) -> None:
    """SimPy's ``env.run(until=finish)``, telling ``progress`` (if any) the updates applied every
    :data:`PROGRESS_EVERY_EVENTS` events.  It is ``run``'s own loop (a callback on ``finish`` stops it; an
    empty queue raises :class:`EmptySchedule`, a deadlock), so it steps the same events in the same order,
    and a report cannot change the record."""
    def tell() -> None:
        if progress is not None:
            progress(sim.applied, sim.total_updates)

    step = sim.env.step
    finish.callbacks.append(StopSimulation.callback)
    tell()
    try:
        while True:
            for _ in range(PROGRESS_EVERY_EVENTS):
                step()
            tell()
    except StopSimulation:
        tell()


def _check_counts(sim) -> None:
    if sim.applied != sim.generated or sim.generated != sim.total_updates:
        raise SimulationError(
            f"updates lost: generated {sim.generated}, applied {sim.applied}, expected {sim.total_updates}"
        )


def run(run_config: RunConfig, checkpoint: Any = None) -> dict[str, Any]:
    return simulate(run_config, checkpoint=checkpoint)[1]


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
    return run


def _deadlock(sim: Simulation, procs: list) -> DeadlockError:
    """Describe a run whose event queue emptied before it finished."""
    stuck = [r for r in range(sim.num_ranks) if sim.streams[r].remaining or sim.net.inbox[r].items]
    waiting = stuck or [r for r, p in enumerate(procs) if p.is_alive]
    return DeadlockError.report(sim.env.now, waiting, sim.net.packets_injected - sim.net.packets_delivered,
                                sim.applied, sim.total_updates, sim.algorithm.deadlock_hint())


def _runs_to_completion(sim: Simulation) -> bool:
    return getattr(sim.algorithm.options, "termination", "counter") == "messages"


def make_record(sim: Simulation, wall_s: float) -> dict[str, Any]:
    m, net = sim.machine, sim.net
    t = sim.env.now
    (t_lo, t_hi) = sim.window_times[:2]
    window_updates = (WINDOW[1] - WINDOW[0]) * sim.total_updates
    rate = window_updates / (t_hi - t_lo) if t_hi > t_lo else float("nan")
    links = net.link_stats()
    util = links["busy_s"] / t if t > 0 else np.zeros(1)
    alg = sim.algorithm.metrics((sim.window_counters[0], sim.window_counters[1]))
    record: dict[str, Any] = {
        "machine": m.name,
        "shape": sim.run.shape,
        "topology": sim.topology.kind,
        "algorithm": sim.run.algorithm,
        "nodes": sim.topology.num_nodes,
        "processes": sim.num_ranks,
        "updates_per_process": sim.run.updates_per_process,
        "seed": sim.run.seed,
        "gups": rate / 1e9,
        "steady_state": sim.run.updates_per_process >= MIN_STEADY_UPDATES,
        "gups_total": sim.total_updates / t / 1e9 if t > 0 else float("nan"),
        "cycles_per_update": sim.num_ranks * m.cpu.clock_hz / rate,
        "bytes_per_update": net.wire_bytes_injected / sim.total_updates,
        "updates_per_packet": alg.pop("updates_per_packet", float("nan")),
        "updates_per_message": alg.pop("updates_per_message", float("nan")),
        "send_blocking_factor": alg.pop("send_blocking_factor", float("nan")),
        "link_utilisation_mean": float(util.mean()) if len(util) else 0.0,
        "link_utilisation_max": float(util.max()) if len(util) else 0.0,
        "updates_generated": sim.generated,
        "updates_applied": sim.applied,
        "sim_time_s": t,
        "events": sim.env.events_scheduled,
        "wall_s": wall_s,
        "peak_rss_mb": max(peak_rss_mb(), getattr(sim, "earlier_peak_rss_mb", 0.0)),
        "packets_injected": net.packets_injected,
        "events_per_s": sim.env.events_scheduled / wall_s if wall_s > 0 else float("nan"),
    }
    record.update({f"alg_{k}": v for k, v in alg.items()})
    record.update(_network_bound(sim, record))
    record["config"] = resolved_config(sim.run)
    _check_finite(record, sim.run)
    warn_implausible(sim.run.machine)  # after the run: a run refused above says so in its one line
    return record


def _check_finite(record: dict[str, Any], run: RunConfig) -> None:
    """Refuse, in one line, a run whose numbers overflowed a double: inputs past what can be computed."""
    infinite = [k for k, v in record.items() if isinstance(v, float) and math.isinf(v)]
    if infinite:
        causes = implausible(run.machine)
        raise GupsimError(f"the run's {', '.join(infinite)} overflowed a double (inf)"
                          + (f": {'; '.join(causes)}" if causes else "") + "; use smaller values")


def _network_bound(sim: Simulation, record: dict[str, Any]) -> dict[str, float]:
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
    if not isinstance(sim.topology, Topology) or not record["bytes_per_update"] > 0 or not hops > 0:
        return {}
    b = record.get("alg_window_bytes_per_hop", record["bytes_per_update"] / hops)
    bound = network_bound_gups(sim.topology.num_nodes, float(sim.topology.edge_expansion()),
                               sim.machine.network.link_bytes_per_s, b)
    return {"network_bound_gups": bound, "network_bound_fraction": record["gups"] / bound}


def resolved_config(run_config: RunConfig) -> dict[str, Any]:
    data = run_config.model_dump(mode="json")
    data["machine"].pop("source_path", None)
    return data


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Tidy frame: one row per run, the nested config left out (it is in each record)."""
    return pd.DataFrame([{k: v for k, v in r.items() if k != "config"} for r in records])


def compile_all() -> float:
    """Compile (or load from the cache) every kernel on a tiny run; return the seconds it took."""
    t0 = time.perf_counter()
    for name in KERNELS:
        simulate_fast(make_run_config(machine=load_machine("bgl"), shape="2x2x1", algorithm=name,
                                      updates_per_process=64))
    return time.perf_counter() - t0


def simulate_with_extras(run_config: "RunConfig", extras: Any) -> dict[str, Any]:
    """One run's record, with the extras ``extras`` (a RecordExtras) asks for."""
    telemetry = Telemetry.from_extras(extras)
    return simulate(run_config, telemetry if telemetry.wanted else None)[1]
