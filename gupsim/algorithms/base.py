"""The algorithm contract and registry: :class:`Algorithm`, its options, and lookup by name.

Each algorithm is a small class behind one protocol (:class:`Algorithm`),
registered by name with :func:`register_algorithm`.  The engine never branches
on an algorithm's name: it builds the class the run names, starts
:meth:`Algorithm.process` once per process (MPI rank) and reads
:meth:`Algorithm.metrics` at the end.  What an algorithm may read of its run
is :class:`SimulationView`.  Algorithm-specific settings are a validated
pydantic model (``Options``); an unknown option is one clear line.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generator, Protocol
from pydantic import BaseModel, ConfigDict, ValidationError
from gupsim.base.errors import GupsimError, UnknownNameError


ALGORITHMS: dict[str, type["Algorithm"]] = {}


#: Every algorithm's ``Options`` model takes this config: frozen, no unknown keys, strict types (True is not 1,
#: "64" is not 64, as in a machine file), and no inf or NaN in
#: a float option (a cost of inf cycles ends a run with GUPS n/a and a record that is not valid JSON).
OPTIONS_CONFIG = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class SimulationView(Protocol):
    """What an algorithm reads of the run it is part of: the reference engine's contract with an algorithm.

    :class:`gupsim.engines.reference.simulation.Simulation` provides it; an algorithm never imports an engine.
    ``env`` is the SimPy environment, ``net`` the network the engine built on ``topology`` (it moves the
    algorithm's packets), ``cpus[r]`` and ``streams[r]`` rank ``r``'s processor and HPCC update stream, and
    ``cost`` the machine's per-step cycle costs (:class:`gupsim.model.costs.CostModel`).  ``apply`` XORs
    updates into the owner's table and times the measurement window; ``check_pending`` enforces HPCC's
    limit on the updates a process may hold.
    """

    run: Any
    machine: Any
    topology: Any
    ppn: int
    num_ranks: int
    total_updates: int
    env: Any
    net: Any
    cost: Any
    cpus: list[Any]
    streams: list[Any]

    def apply(self, rank: int, values: list[int], delay_s: float = 0.0) -> None: ...

    def check_pending(self, rank: int, pending: int) -> None: ...


class NoOptions(BaseModel):
    model_config = OPTIONS_CONFIG


class Algorithm:
    """Protocol every update algorithm implements."""

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = NoOptions
    #: Peak memory per process in the SimPy engine, measured (see gupsim.base.memory).
    memory_per_rank_bytes: ClassVar[int] = 200_000
    #: Topologies whose network model this algorithm can drive.
    networks: ClassVar[tuple[str, ...]] = ("torus", "mesh")
    #: True if the algorithm calls MPI and so needs the machine's ``mpi`` costs.
    needs_mpi: ClassVar[bool] = False
    #: True if the algorithm applies its updates in bursts, a whole round at a time: the moments a quarter and
    #: three quarters of the updates are applied then fall inside bursts, so the record's ``gups`` is the
    #: whole run's rate (HPCC's own measure) instead of the steady-state window's.
    rate_over_whole_run: ClassVar[bool] = False
    #: True if a process holds generated updates back (in buckets, or a window of them) up to HPCC's pending
    #: limit: a run then stops when precise only after twice that limit a process
    #: (:func:`gupsim.model.output_analysis.first_check`).
    holds_pending: ClassVar[bool] = False
    #: True if the algorithm can start warm (``RunConfig.warm_start``): it has :meth:`warm_state`, and its
    #: process and fast kernel start from it (gupsim.algorithms.routed_warm).
    warm_start: ClassVar[bool] = False

    def __init__(self, sim: "SimulationView", options: BaseModel):
        self.sim, self.options = sim, options

    def process(self, rank: int) -> Generator[Any, Any, None]:
        """The SimPy process of one rank."""
        raise NotImplementedError

    #: True if :meth:`stated_costs` states this algorithm's costs for ``gupsim bounds --algorithm``.
    states_costs: ClassVar[bool] = False

    @classmethod
    def stated_costs(cls, machine: Any, dims: tuple[int, ...], options: BaseModel) -> Any:
        """This algorithm's own cycles and wire bytes per update on ``machine`` partitioned as ``dims``
        (:class:`gupsim.model.bounds.StatedCosts`), for ``gupsim bounds --algorithm``; only where
        :attr:`states_costs`."""
        raise NotImplementedError

    def warm_state(self, registers: Any) -> Any:
        """The state a warm-started run begins in, from every stream's register before its first update
        (only where :attr:`warm_start`)."""
        raise NotImplementedError

    def deadlock_hint(self) -> str:
        """Appended to a deadlock report: what in this configuration is known to allow one ('' if nothing)."""
        return ""

    def counters(self) -> dict[str, float]:
        """Cumulative counters, everything :meth:`metrics` reads of the run as it went; the simulation
        snapshots them at the window's two marks and once more at the end.  A fast kernel reports the same
        keys from its arrays (``counters(state)``), so that :meth:`metrics` serves both engines."""
        return {}

    def metrics(self, window: tuple[dict[str, float], ...], totals: dict[str, float]) -> dict[str, float]:
        """Algorithm-specific results merged into the run record.

        ``window`` holds :meth:`counters` at the start and the end of the
        steady-state window; ratios such as updates per message are taken from
        their differences, so nothing per message needs to be kept.  ``totals``
        holds :meth:`counters` at the end of the run.  Only these counters and
        what the algorithm fixed when it was made are read: the engine that ran
        may not have driven this object at all (the fast engine runs a kernel).
        """
        return {}


def window_counts(window: tuple[dict[str, float], ...], totals: dict[str, float],
                  keys: tuple[str, ...], present: tuple[str, ...]) -> dict[str, float]:
    """The counters ``keys`` across the measured window (their values at its closing mark minus those at its
    opening one), or the whole run's when the window counted none of ``present``: a run too short for one
    message or packet to fall inside it still reports ratios, over everything it did.  So does a run its
    stopping rule ended before the window closed (``window`` then holds fewer than its two ends)."""
    if len(window) == 2:
        lo, hi = window
        counts = {k: hi[k] - lo[k] for k in keys}
        if sum(counts[k] for k in present):
            return counts
    return {k: totals[k] for k in keys}


def register_algorithm(name: str):
    def deco(cls: type[Algorithm]) -> type[Algorithm]:
        cls.name = name
        ALGORITHMS[name] = cls
        return cls

    return deco


def algorithm_class(name: str) -> type[Algorithm]:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UnknownNameError("algorithm", name, list(ALGORITHMS)) from None


#: The largest value of any integer option (a count of updates, bytes, threads): the fast engine keeps counts
#: in 32 bits, and ``bucket_size=2**70`` had been an OverflowError traceback, 2**31 a hang.  An option may
#: bound itself lower (``Field(le=...)``).
MAX_OPTION_INT = 2**31 - 1


def validate_options(name: str, options: dict[str, Any]) -> BaseModel:
    cls = algorithm_class(name)
    try:
        validated = cls.Options.model_validate(options)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            valid = ", ".join(cls.Options.model_fields) or "none"
            raise GupsimError(f"algorithm {name}: unknown option '{loc}' (valid: {valid})") from None
        # a validator's own ValueError already says what is wrong in the user's terms
        msg = str(err["ctx"]["error"]) if err["type"] == "value_error" else err["msg"]
        raise GupsimError(f"algorithm {name}: option {loc}: {msg} (got {err.get('input')!r})") from None
    for key, value in validated.model_dump().items():
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_OPTION_INT:
            raise GupsimError(f"algorithm {name}: option {key}: {value:,} is more than the {MAX_OPTION_INT:,} any "
                              "count option takes (the fast engine's tables hold 32-bit counts)")
    return validated


def available_algorithms() -> list[str]:
    return sorted(ALGORITHMS)


