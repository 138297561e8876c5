"""The engine contract: what every engine states about itself and how it runs one configuration.

gupsim has one model and two engines that agree bit for bit (seed 000 §5; docs/architecture.md): the SimPy
reference (:mod:`gupsim.engines.reference`) and the compiled one (:mod:`gupsim.engines.fast`).  Everything above
the engines (the runner :mod:`gupsim.engines.run`, the studies, the command line) talks to an engine only
through :class:`Engine`, found by name in the registry (:class:`EngineRegistry`; the runner holds the one
instance, :data:`gupsim.engines.run.ENGINES`), which also chooses the engine of a run.  A new engine (a
partitioned one, say) is one more registered implementation and nothing above it changes.  The docstring of
:class:`Engine` is the contract, as SimPy's ``BaseResource`` states its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, NamedTuple, Protocol

from gupsim.base.errors import GupsimError, UnknownNameError
from gupsim.model.run_config import RunConfig

#: ``progress(applied, total)``: told the updates applied so far (and the run's total) as a run goes.
Progress = Callable[[int, int], None]


class Simulated(NamedTuple):
    """A finished run: the simulation (its :meth:`~gupsim.engines.outcome.ReportsOutcome.outcome` says what it
    measured) and the wall seconds the engine spent compiling or loading compiled code, which the record keeps
    apart from the run's own (``compile_s``)."""

    simulation: Any  # a gupsim.engines.outcome.ReportsOutcome (imported by neither: they are siblings)
    compile_s: float
    #: The threads the run used (1 unless asked for more and the engine splits this run: ``threads``), and the
    #: share of those threads' wall time spent running events (1.0 on one thread; NaN where not measured).
    threads: int = 1
    parallel_efficiency: float = 1.0


class SavedProgress(NamedTuple):
    """How far a run kept on disk had got: updates applied, events processed, wall seconds spent."""

    updates_applied: int
    events: int
    wall_s: float


class Engine(Protocol):
    """An engine: it says which runs it can make and what they would cost, makes them, and reports them.

    What an engine states:

    * ``name``: its registry name, the value of ``RunConfig.engine`` (``gupsim run --engine``) and of the
      record's ``engine``; ``title``: how a one-line message names it ("the SimPy engine").
    * ``observes``: it takes an observer (:class:`gupsim.engines.reference.telemetry.Telemetry`: per-link data,
      histograms, samples), attaches it before the run and adds its ``results`` to the record.  An engine
      that does not is never chosen for a run that asks for one.
    * ``checkpoints``: it keeps a long run's state on disk as it goes and resumes from it
      (:meth:`checkpoint`, :meth:`saved_progress`).  One that does not ignores the checkpoint it is handed.
    * :meth:`unsupported`: why it cannot make a run, in one line naming what the user set (None when it
      can).  The choice between engines (:meth:`EngineRegistry.engine_for`) reads nothing else.
    * :meth:`memory_estimate`: the bytes the run would need on it, refusing in one line a run that would not
      fit (:func:`gupsim.base.memory.check_fits`), before anything of the run's size is built.

    How it runs: :meth:`compile` readies its compiled code, if it has any; :meth:`simulate` builds and runs the configuration to its end and returns the simulation,
    whose ``outcome()`` fills every field of :class:`gupsim.engines.outcome.RunOutcome` (the record is made
    from that alone: :class:`gupsim.engines.outcome.ReportsOutcome`), with the seconds it spent compiling.
    A run is a pure function of (config, seed): the observer, the checkpoint and ``progress`` see the run,
    they never change its record.  Bad input is one line of :class:`gupsim.base.errors.GupsimError`.
    """

    name: str
    title: str
    observes: bool
    checkpoints: bool

    def unsupported(self, run: RunConfig) -> str | None:
        """Why this engine cannot make ``run``, in one line; None when it can."""

    def memory_estimate(self, run: RunConfig, alternative: "Engine | None" = None) -> int:
        """Bytes ``run`` needs on this engine; a run that would not fit is refused in one line, which names
        ``alternative`` (another engine that can make the run) if it is given."""

    def simulate(self, run: RunConfig, observer: Any = None, checkpoint: Any = None,
                 progress: Progress | None = None, threads: int = 1) -> Simulated:
        """Build ``run``, attach ``observer`` (if this engine observes), run it to its end, resuming from
        ``checkpoint`` if this engine keeps one and it was saved, and telling ``progress`` how far it has got
        every few seconds of wall time and at the end.  ``threads`` is how many threads the run may use: an engine
        that cannot split this run uses one (:meth:`threads_for`), and the record is the same either way."""

    def threads_for(self, run: RunConfig, threads: int, checkpoint: Any = None) -> tuple[int, str | None]:
        """How many of ``threads`` this engine would run ``run`` on (kept in ``checkpoint``, if given), and why
        not all of them (None if all)."""

    def compile_estimate_s(self, run: RunConfig) -> float:
        """Seconds this engine expects to spend compiling before ``run`` starts (0 when its code is cached or it
        compiles nothing), so that a run's announced estimate includes them."""

    def compile(self, machine: Any) -> None:
        """Compile, or load from its cache, whatever compiled code this engine runs, on tiny runs of ``machine``
        (a torus machine with two processes per node), so that the first real run does not pay for it."""

    def checkpoint(self, path: Path, key: str, every_s: float | None = None) -> Any:
        """Where this engine keeps the state of the run named ``key`` (``path``), saved every ``every_s`` wall
        seconds (its own default if None), as its :meth:`simulate` takes it; None if it keeps none."""

    def saved_progress(self, path: Path) -> SavedProgress | None:
        """How far the run whose state this engine kept in ``path`` had got; None if the file is not one of
        its checkpoints (or cannot be read)."""


class EngineRegistry(dict):
    """Engines by name, in the order ``auto`` prefers them, and the choice between them; a name not registered
    is one line listing the registered ones.

    ``RunConfig.engine`` names an engine, or is ``auto``: the first registered engine that can make the run
    (:meth:`Engine.unsupported` is None).  A run that asks for an observer goes to an engine that observes.
    """

    def __init__(self, engines: tuple[Engine, ...] = ()):
        super().__init__()
        for engine in engines:
            self.register(engine)

    def __missing__(self, name: str) -> Engine:
        raise UnknownNameError("engine", name, list(self))

    def register(self, engine: Engine) -> Engine:
        """Add ``engine`` under its name (after those registered before it, which ``auto`` prefers)."""
        if engine.name in self:
            raise GupsimError(f"engine {engine.name!r} is registered twice")
        self[engine.name] = engine
        return engine

    def that(self, capability: str) -> list[Engine]:
        """The engines with ``capability`` (``observes`` or ``checkpoints``), in order of preference."""
        return [engine for engine in self.values() if getattr(engine, capability)]

    def engine_for(self, run: RunConfig, observed: bool = False) -> Engine:
        """The engine that makes ``run`` (``observed``: with an observer attached); an engine asked for by name
        that cannot make it is one line saying why and which to use instead."""
        name = getattr(run, "engine", "auto")
        if observed:
            return self._observing(run, name)
        if name != "auto":
            engine = self[name]
            reason = engine.unsupported(run)
            if reason:
                raise GupsimError(f"--engine {name}: {reason}; use --engine {names(self._able(run, engine))} or auto")
            return engine
        return self._able(run)[0]

    def _able(self, run: RunConfig, but: Engine | None = None) -> list[Engine]:
        """The engines (but ``but``) that can make ``run``, in order of preference."""
        return [e for e in self.values() if e is not but and e.unsupported(run) is None]

    def _observing(self, run: RunConfig, name: str) -> Engine:
        """The engine for a run with an observer: one that observes (named as both ``gupsim run``'s flags and a
        sweep's record keys, since either may have asked for it)."""
        observing = self.that("observes")
        if name != "auto" and not self[name].observes:
            raise GupsimError("telemetry (per-link data, histograms, samples: --links, --histograms, "
                              "--sample-interval-s, or a sweep's record keys) needs the "
                              f"{titles(observing)} engine: set the engine to {names(observing)} or auto")
        able = [e for e in observing if name in ("auto", e.name) and e.unsupported(run) is None]
        if not able:
            reasons = "; ".join(f"{e.name}: {e.unsupported(run)}" for e in observing)
            raise GupsimError(f"telemetry needs an engine that observes, and none can make this run ({reasons})")
        return able[0]

    def alternative(self, run: RunConfig, engine: Engine) -> Engine | None:
        """Another engine that can make ``run``, which a refusal of ``engine`` may offer; None if there is none."""
        return next(iter(self._able(run, engine)), None)

    def saved_progress(self, path: Path) -> SavedProgress | None:
        """How far the run kept in ``path`` had got, read by the engine that kept it; None if none did."""
        return next((p for e in self.that("checkpoints") if (p := e.saved_progress(path)) is not None), None)


def titles(engines: list[Engine]) -> str:
    """The engines as a message names them: "the SimPy engine" is ``f"the {titles(...)} engine"``."""
    return " or ".join(engine.title for engine in engines)


def names(engines: list[Engine]) -> str:
    """The engines' names as a message offers them for ``--engine``."""
    return " or ".join(engine.name for engine in engines)
