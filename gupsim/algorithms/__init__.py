"""Update algorithms: how processes generate, send, receive, route and apply updates.

Each algorithm is a small class behind one protocol (:class:`Algorithm`),
registered by name with :func:`register_algorithm`.  The core simulator
never branches on an algorithm's name: it builds the class the run names,
starts :meth:`Algorithm.process` once per process (MPI rank) and reads
:meth:`Algorithm.metrics` at the end.  Algorithm-specific settings are a
validated pydantic model (``Options``); an unknown option is one clear line.

Registered here: ``baseline`` (HPCC's MPI reference code, seed 000 §2 and
§6.1), ``one-packet`` (one packet per remote update, the UPC run of seed
001), ``routed`` (software routing, seed 000 §4.2), ``routed-split``
(routing and updating on separate cores of a node, issue 5) and ``dv`` (the
Data Vortex code of seed 003).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Generator

from pydantic import BaseModel, ConfigDict, ValidationError

from gupsim.errors import GupsimError, UnknownNameError

if TYPE_CHECKING:
    from gupsim.simulation import Simulation

ALGORITHMS: dict[str, type["Algorithm"]] = {}


#: Every algorithm's ``Options`` model takes this config: frozen, no unknown keys, strict types (True is not 1,
#: "64" is not 64, as in a machine file), and no inf or NaN in
#: a float option (a cost of inf cycles ends a run with GUPS n/a and a record that is not valid JSON).
OPTIONS_CONFIG = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class NoOptions(BaseModel):
    model_config = OPTIONS_CONFIG


class Algorithm:
    """Protocol every update algorithm implements."""

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = NoOptions
    #: Peak memory per process in the SimPy engine, measured (see gupsim.memory).
    memory_per_rank_bytes: ClassVar[int] = 200_000
    #: Topologies whose network model this algorithm can drive.
    networks: ClassVar[tuple[str, ...]] = ("torus", "mesh")
    #: True if the algorithm calls MPI and so needs the machine's ``mpi`` costs.
    needs_mpi: ClassVar[bool] = False

    def __init__(self, sim: "Simulation", options: BaseModel):
        self.sim, self.options = sim, options

    def process(self, rank: int) -> Generator[Any, Any, None]:
        """The SimPy process of one rank."""
        raise NotImplementedError

    def deadlock_hint(self) -> str:
        """Appended to a deadlock report: what in this configuration is known to allow one ('' if nothing)."""
        return ""

    def counters(self) -> dict[str, float]:
        """Cumulative counters; the simulation snapshots them at the window's two marks."""
        return {}

    def metrics(self, window: tuple[dict[str, float], dict[str, float]]) -> dict[str, float]:
        """Algorithm-specific results merged into the run record.

        ``window`` holds :meth:`counters` at the start and the end of the
        steady-state window; ratios such as updates per message are taken from
        their differences, so nothing per message needs to be kept.
        """
        return {}


def register_algorithm(name: str):
    def deco(cls: type[Algorithm]) -> type[Algorithm]:
        cls.name = name
        ALGORITHMS[name] = cls
        return cls

    return deco


def algorithm_class(name: str) -> type[Algorithm]:
    _load_builtin()
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UnknownNameError("algorithm", name, list(ALGORITHMS)) from None


def validate_options(name: str, options: dict[str, Any]) -> BaseModel:
    cls = algorithm_class(name)
    try:
        return cls.Options.model_validate(options)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            valid = ", ".join(cls.Options.model_fields) or "none"
            raise GupsimError(f"algorithm {name}: unknown option '{loc}' (valid: {valid})") from None
        # a validator's own ValueError already says what is wrong in the user's terms
        msg = str(err["ctx"]["error"]) if err["type"] == "value_error" else err["msg"]
        raise GupsimError(f"algorithm {name}: option {loc}: {msg} (got {err.get('input')!r})") from None


def available_algorithms() -> list[str]:
    _load_builtin()
    return sorted(ALGORITHMS)


def _load_builtin() -> None:
    # Imported lazily so that the registry module has no import cycle with them.
    from gupsim.algorithms import baseline, dv, one_packet, routed, routed_split  # noqa: F401
