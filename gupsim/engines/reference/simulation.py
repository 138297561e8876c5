"""One simulated machine running one algorithm: the objects a run is made of.

A :class:`Simulation` wires together, for one :class:`RunConfig`:

* a SimPy environment that counts the events it processes;
* the topology (mesh or torus, seed 000 §5.1) and the :class:`Network` on it;
* one :class:`Cpu` and one HPCC update stream per process (MPI rank): rank
  ``r`` runs on node ``r // processes_per_node``.  In HPCC, rank ``r`` owns
  the slice of the one global stream that starts at
  ``starts(4 * GlobalStartMyProc)`` and is 4 x its local table long.  A run
  of ``U`` updates per process simulates ``U`` consecutive updates of each
  rank's own slice, beginning ``floor(0.618 * slice) + s * U`` updates in,
  ``s`` being the seed.  Why not at the slice's start: slices start at
  ``x^(r * 2^k)``, and those LFSR states are sparse (squaring is linear in
  GF(2)), so the first few thousand updates of power-of-two ranks carry
  almost no owner bits and all go to rank 0.  A real run of 4 x 2^25
  updates per process averages that transient away; a short simulated
  stretch would not.  The golden-ratio point of the slice has no such
  structure (checked in ``tests/engines/reference/test_simulation.py``);
* the distributed table layout that maps an update's bits to its owner rank
  and index, as HPCC's MPIRandomAccess does;
* bookkeeping of updates generated and applied, which also times the
  steady-state window the runner measures.

:meth:`Simulation.execute` runs it to the end (or reports a deadlock), and
:meth:`Simulation.outcome` says what it measured
(:class:`gupsim.engines.outcome.ReportsOutcome`).  :data:`ENGINE` is the engine as the contract
(:class:`gupsim.engines.contract.Engine`) states it.

With a ``precision`` (``--precision``) the run ends early: each time the updates applied cross one of the
stopping rule's mark counts (:func:`gupsim.model.output_analysis.check_points`), the rule is evaluated on the
marks so far, and once it holds the run ends with the end of that simulated instant (every event of it is
processed, as the fast engine does: :data:`END_OF_INSTANT`).

With ``verify`` a real table is kept: every applied update is XORed into it
after checking that it reached the rank that owns it.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush
from pathlib import Path
from typing import Any, Callable

import numpy as np
import simpy
from simpy.core import EmptySchedule, StopSimulation

from gupsim.model import hpcc
from gupsim.algorithms.base import algorithm_class, validate_options
from gupsim.base.errors import DeadlockError, GupsimError, SimulationError
from gupsim.base.memory import BASE_BYTES, ROUTE_CACHE_BYTES, check_fits
from gupsim.model.costs import CostModel
from gupsim.model.output_analysis import applied_marks, check_points, first_check, precise
from gupsim.engines.checks import check_network
from gupsim.engines.contract import Engine, Progress, SavedProgress, Simulated
from gupsim.engines.order import END_OF_INSTANT
from gupsim.engines.outcome import RunOutcome
from gupsim.engines.reference.cpu import Cpu
from gupsim.engines.reference.networks import make_network
from gupsim.model.run_config import (MAX_PENDING_UPDATES, VERIFY_BYTES_PER_WORD, WINDOW, RunConfig, UpdateStream,
                                     log2_table_size, stream_layout, stream_start)
from gupsim.topology.base import make_topology, parse_shape


#: SimPy events between two progress reports (a fraction of a second of the reference engine).
PROGRESS_EVERY_EVENTS = 1 << 16


class CountingEnvironment(simpy.Environment):
    """A SimPy environment in the canonical event order (:mod:`gupsim.engines.order`),
    which reports how many events it has scheduled (the speed metric).

    SimPy's own ``schedule`` keys an event by (time, priority, event id), one counter for the whole run.
    Here the id is replaced by (entity, that entity's own sequence number): the entity is the one whose code
    schedules the event: the process running (``process.entity``: a rank's, or a packet's at the router its
    head is at), or else the entity the event being processed runs as (``event.entity``: the one that made
    it, which waits on it, unless it was handed on, as a credit return is to its pool's owner), else the one
    that scheduled it.  The id counter still
    counts every event, but no longer orders any.
    """

    def __init__(self, initial_time: float = 0) -> None:
        super().__init__(initial_time)
        self._entity = 0  # the entity whose code runs when no process does (setting up: the first rank)
        self._seqs: dict[int, int] = {}

    @property
    def active_entity(self) -> int:
        proc = self._active_proc
        return proc.entity if proc is not None else self._entity

    def schedule(self, event: simpy.Event, priority: int = 1, delay: float = 0) -> None:
        entity = self.active_entity
        seq = self._seqs.get(entity, 0)
        self._seqs[entity] = seq + 1
        next(self._eid)
        heappush(self._queue, (self._now + delay, priority, entity, seq, event))

    def step(self) -> None:
        try:
            self._now, _, entity, _, event = heappop(self._queue)
        except IndexError:
            raise EmptySchedule from None
        handed = getattr(event, "entity", None)
        self._entity = entity if handed is None else handed
        callbacks, event.callbacks = event.callbacks, None
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            event.callbacks = callbacks[callbacks.index(callback) + 1:]
            self.schedule(event, -1)
            raise
        if not event._ok and not hasattr(event, "_defused"):
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc

    def event(self) -> simpy.Event:
        """An event, run (once it fires) as the entity that made it: the one that waits on it."""
        event = simpy.Event(self)
        event.entity = self.active_entity
        return event

    def timeout(self, delay: float = 0, value: Any = None) -> simpy.Timeout:
        """A timeout, run as the entity that made it (unless handed on: ``timeout.entity``)."""
        entity = self.active_entity
        timeout = simpy.Timeout(self, delay, value)
        timeout.entity = entity
        return timeout

    def process(self, generator: Any) -> simpy.Process:
        """A process, run by the entity that starts it until it says otherwise (``process.entity``)."""
        entity = self.active_entity
        proc = simpy.Process(self, generator)
        proc.entity = entity
        return proc

    @property
    def events_scheduled(self) -> int:
        # itertools.count's repr is "count(N)": the next id, i.e. the number scheduled so far.
        return int(repr(self._eid)[6:-1])


def check_memory(run: RunConfig, alternative: Engine | None = None) -> int:
    """The SimPy engine's memory estimate for ``run`` in bytes; a run that would not fit is refused in one line
    (:func:`gupsim.base.memory.check_fits`).  ``alternative``: another engine that could make the run, which
    the refusal offers."""
    nodes = math.prod(parse_shape(run.shape))
    ranks = nodes * run.machine.cpu.processes_per_node
    without_telemetry = "" if alternative is None or alternative.observes else ", without telemetry"
    detail, table_bytes = f"{run.machine.cpu.processes_per_node} per node, SimPy engine", 0
    if run.verify:  # the table, and verification's copy, the initial table and their comparison beside it
        words = 2 ** log2_table_size(run, nodes, ranks)
        table_bytes = VERIFY_BYTES_PER_WORD * words
        detail += f", --verify's table of {words:,} words"
    hint = f" (or the {alternative.title} engine: --engine {alternative.name}{without_telemetry})" \
        if alternative is not None else ", or a smaller --log2-table-size" if run.verify else ""
    return check_fits(ranks, algorithm_class(run.algorithm).memory_per_rank_bytes, f"{run.algorithm} on {run.shape}",
                      base_bytes=BASE_BYTES + ROUTE_CACHE_BYTES + table_bytes, detail=detail, hint=hint)


class Simulation:
    """The assembled model of one run."""

    def __init__(self, run: RunConfig):
        self.run = run
        m = self.machine = run.machine
        self.env = CountingEnvironment()
        shape = parse_shape(run.shape)
        self.ppn = m.cpu.processes_per_node
        # Refuse a run that cannot fit before building anything of its size.
        self.memory_estimate_bytes = check_memory(run)
        check_network(run)
        self.topology = make_topology(m.network.topology_kind(math.prod(shape)), shape, m.network)
        self.num_ranks = self.topology.num_nodes * self.ppn
        self.net = make_network(self.env, self.topology, m, self.ppn)
        self.cost = CostModel.from_machine(m)
        self.layout = stream_layout(run)
        self.streams = [UpdateStream(self.layout, self.stream_start(r), run.updates_per_process)
                        for r in range(self.num_ranks)]
        self.cpus = [Cpu(self.env, r, m.cpu.clock_hz) for r in range(self.num_ranks)]
        self.total_updates = self.num_ranks * run.updates_per_process
        self.applied = 0
        self._marks = [math.ceil(f * self.total_updates) for f in WINDOW]
        self.window_times: list[float] = []
        self.window_counters: list[dict[str, float]] = []
        self._applied_marks = applied_marks(self.total_updates)
        self.applied_times: list[float] = []
        self.precision_reached = False
        self.all_applied = self.env.event()
        self.table = hpcc.initial_table(self.layout) if run.verify else None
        options = validate_options(run.algorithm, run.algorithm_options)
        self.algorithm = algorithm_class(run.algorithm)(self, options)

    def stream_start(self, rank: int) -> int:
        """Where ``rank``'s simulated stretch starts: its first update is value number start + 1.

        (:func:`gupsim.model.hpcc.stream` returns values ``first+1 .. first+count``, as HPCC
        steps the generator before each use.)
        """
        return stream_start(self.run, self.layout, rank)

    # ------------------------------------------------------------------ run

    def execute(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Start every rank's process and run until every update is applied (or, with HPCC's FINISHED
        messages, until every process has returned); a queue that empties first is a deadlock, reported in
        one line.  ``progress(applied, total)``, if given, hears how far the run has got."""
        procs = [self.env.process(self.algorithm.process(r)) for r in range(self.num_ranks)]
        for r, proc in enumerate(procs):
            proc.entity = r
        runs_to_completion = getattr(self.algorithm.options, "termination", "counter") == "messages"
        finish = self.env.all_of(procs) if runs_to_completion else self.all_applied
        try:
            self._run_until(finish, progress)
        except EmptySchedule:
            raise self.deadlock(procs) from None

    def _run_until(self, finish: Any, progress: Callable[[int, int], None] | None) -> None:
        """SimPy's ``env.run(until=finish)``, telling ``progress`` (if any) the updates applied every
        :data:`PROGRESS_EVERY_EVENTS` events.  It is ``run``'s own loop (a callback on ``finish`` stops it; an
        empty queue raises :class:`EmptySchedule`, a deadlock), so it steps the same events in the same order,
        and a report cannot change the record."""
        def tell() -> None:
            if progress is not None:
                progress(self.applied, self.total_updates)

        step = self.env.step
        finish.callbacks.append(StopSimulation.callback)
        tell()
        try:
            while True:
                for _ in range(PROGRESS_EVERY_EVENTS):
                    step()
                tell()
        except StopSimulation:
            tell()

    def deadlock(self, procs: list) -> DeadlockError:
        """Describe a run whose event queue emptied before it finished: the ranks with updates still to
        generate or packets still to read (else those whose process is alive) and the packets in the network."""
        net = self.net
        stuck = [r for r in range(self.num_ranks) if self.streams[r].remaining or net.inbox[r].items]
        waiting = stuck or [r for r, p in enumerate(procs) if p.is_alive]
        return DeadlockError.report(self.env.now, waiting, net.packets_injected - net.packets_delivered,
                                    self.applied, self.total_updates,
                                    self.algorithm.deadlock_hint() + self.machine.network.deadlock_hint())

    def outcome(self) -> RunOutcome:
        """What the finished run measured (:class:`gupsim.engines.outcome.ReportsOutcome`)."""
        net = self.net
        # a run its stopping rule ended before the window closed has no window (window_counts)
        window = tuple(self.window_counters) if len(self.window_counters) == 2 else ()
        totals = self.algorithm.counters()
        return RunOutcome(
            run=self.run, topology=self.topology, processes=self.num_ranks, total_updates=self.total_updates,
            sim_time_s=self.env.now, events=self.env.events_scheduled, updates_applied=self.applied,
            updates_generated=self.generated, window_times=tuple(self.window_times), window_counters=window,
            totals=totals, algorithm_metrics=self.algorithm.metrics(window, totals),
            packets_injected=net.packets_injected, packets_delivered=net.packets_delivered,
            wire_bytes_injected=net.wire_bytes_injected, packet_hops=None, links=net.link_stats(),
            applied_times=tuple(self.applied_times), precision_reached=self.precision_reached,
            dma=net.dma_stats() if hasattr(net, "dma_stats") else None)

    # ------------------------------------------------------------------ bookkeeping

    def apply(self, rank: int, values: list[int], delay_s: float = 0.0) -> None:
        """``rank`` XORs ``values`` into its part of the table, ``delay_s`` from now.

        The delay is the CPU work the process has spent but not yet turned into
        time (see :class:`gupsim.model.costs.Cpu`); it only matters for the window marks.  The applied-times
        series records ``now`` itself, so that it never runs backwards (one rank's debt is not another's).
        """
        if self.table is not None:
            arr = np.asarray(values, dtype=np.uint64)
            owners = self.layout.owner(arr)
            if (owners != rank).any():
                raise SimulationError(f"rank {rank} applied an update owned by rank {int(owners[owners != rank][0])}")
            hpcc.apply_updates(self.table, arr, self.layout)
        before = self.applied
        self.applied += len(values)
        for mark in self._marks[len(self.window_times):]:
            if before < mark <= self.applied:
                self.window_times.append(self.env.now + delay_s)
                self.window_counters.append(self.algorithm.counters())
        marks, times = self._applied_marks, self.applied_times
        crossed = len(times)
        while len(times) < len(marks) and marks[len(times)] <= self.applied:
            times.append(self.env.now)
        if self.run.precision is not None and not self.precision_reached and len(times) > crossed:
            self._check_precision(crossed)
        if self.applied == self.total_updates:
            self.all_applied.succeed()
        elif self.applied > self.total_updates:
            raise SimulationError("more updates applied than generated")

    def _check_precision(self, crossed: int) -> None:
        """Evaluate the stopping rule at each of its mark counts just crossed; once it holds, end the run with
        the end of this instant."""
        marks, times = self._applied_marks, self.applied_times
        first = first_check(self.run.updates_per_process, len(marks), type(self.algorithm).holds_pending)
        if any(precise(marks[:c], times[:c], self.run.precision) for c in check_points(crossed, len(times), first)):
            self.precision_reached = True
            stop = simpy.Event(self.env)
            stop._ok, stop._value = True, None  # a triggered event, as succeed() makes, at the lowest priority
            stop.callbacks.append(StopSimulation.callback)
            self.env.schedule(stop, END_OF_INSTANT)

    @property
    def generated(self) -> int:
        return sum(s.taken for s in self.streams)

    def check_pending(self, rank: int, pending: int) -> None:
        if pending > MAX_PENDING_UPDATES:
            raise SimulationError(
                f"rank {rank} holds {pending} pending updates; HPCC allows at most {MAX_PENDING_UPDATES}"
            )

    def verify(self) -> hpcc.VerifyResult:
        """HPCC's check: re-apply every generated update; at most 1% of words may differ."""
        if self.table is None:
            raise GupsimError("verification needs a run made with verify=True")
        u = self.run.updates_per_process
        values = np.concatenate([hpcc.stream(self.stream_start(r), u) for r in range(self.num_ranks)])
        return hpcc.verify(self.table, values, self.layout)


class SimPyEngine:
    """The reference engine (:class:`gupsim.engines.contract.Engine`): it makes every run the model defines,
    takes an observer (:class:`gupsim.engines.reference.telemetry.Telemetry`), and keeps no checkpoint (a run
    is restarted from its beginning)."""

    name = "simpy"
    title = "SimPy"
    observes = True
    checkpoints = False

    def unsupported(self, run: RunConfig) -> str | None:
        return None

    def memory_estimate(self, run: RunConfig, alternative: Engine | None = None) -> int:
        return check_memory(run, alternative)

    def simulate(self, run: RunConfig, observer: Any = None, checkpoint: Any = None,
                 progress: Progress | None = None, threads: int = 1) -> Simulated:
        sim = Simulation(run)
        if observer is not None:
            observer.attach(sim)
        sim.execute(progress)
        return Simulated(sim, 0.0)

    def threads_for(self, run: RunConfig, threads: int, checkpoint: Any = None) -> tuple[int, str | None]:
        return 1, None if threads == 1 else "the SimPy engine runs on one thread"

    def compile_estimate_s(self, run: RunConfig) -> float:
        return 0.0  # nothing is compiled

    def compile(self, machine: Any) -> None:
        """Nothing: the reference engine is plain Python."""

    def checkpoint(self, path: Path, key: str, every_s: float | None = None) -> None:
        return None

    def saved_progress(self, path: Path) -> SavedProgress | None:
        return None


#: The SimPy engine, as the registry (:data:`gupsim.engines.run.ENGINES`) holds it.
ENGINE = SimPyEngine()
