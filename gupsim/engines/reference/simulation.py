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
  structure (checked in ``tests/test_simulation.py``);
* the distributed table layout that maps an update's bits to its owner rank
  and index, as HPCC's MPIRandomAccess does;
* bookkeeping of updates generated and applied, which also times the
  steady-state window the runner measures.

With ``verify`` a real table is kept: every applied update is XORed into it
after checking that it reached the rank that owns it.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import simpy
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gupsim import hpcc
from gupsim.algorithms import algorithm_class, validate_options
from gupsim.config import MachineConfig
from gupsim.fabric_config import SwitchedMachineConfig
from gupsim.errors import GupsimError, SimulationError
from gupsim.memory import BASE_BYTES, ROUTE_CACHE_BYTES, check_fits
from gupsim.node import CostModel, Cpu
from gupsim.topology import make_topology, parse_shape, run_shape

#: HPCC lets a process hold at most this many updates before applying them (seed 000 §2).
MAX_PENDING_UPDATES = 1024
#: Peak bytes per table word with --verify: the table, then verification's copy, HPCC's initial table and
#: their element-wise comparison (hpcc.verify).
VERIFY_BYTES_PER_WORD = 3 * 8 + 1
#: The steady-state window: between these fractions of all updates applied.
WINDOW = (0.25, 0.75)
#: Table words per node when not verifying: half of a BG/L node's 512 MB (seed 000 §5.1).
DEFAULT_LOG2_WORDS_PER_NODE = 25
VERIFY_LOG2_WORDS_PER_PROCESS = 12
#: Where in its HPCC slice a rank's simulated stretch begins (see the module docstring).
SLICE_START_FRACTION = 0.6180339887498949


class RunConfig(BaseModel):
    """Everything a run depends on; a run is a pure function of it."""

    # strict, as a machine's fields are: seed=True or updates_per_process="64" is a mistake, not 1 or 64
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    machine: MachineConfig | SwitchedMachineConfig
    shape: str = Field(description="partition XxYxZ in nodes, e.g. 8x8x16 (--shape)")
    algorithm: str = Field(description="registered algorithm name (--algorithm; gupsim list)")
    updates_per_process: int = Field(ge=1, description="updates each process generates (--updates)")
    seed: int = Field(default=0, ge=0, description="selects a disjoint stretch of every rank's HPCC stream (--seed)")
    verify: bool = Field(default=False, description="carry real table values and run HPCC's verification (--verify)")
    log2_table_size: int | None = Field(default=None, ge=1, le=63, description="global table size, log2 words "
                                        "(--log2-table-size; default 2^25 words per node, 2^12 per process with verify)")
    algorithm_options: dict[str, Any] = Field(default_factory=dict, description="validated by the algorithm's "
                                              "Options model (--option KEY=VALUE)")
    #: 'auto': the compiled engine (gupsim.fast) where it has a kernel for the run, else SimPy.
    engine: Literal["auto", "fast", "simpy"] = Field(
        default="auto", description="fast: compiled kernels (gupsim.fast); simpy: the reference engine; auto: fast "
        "where a kernel models the run, else simpy (--engine)")

    @field_validator("shape")
    @classmethod
    def _canonical_shape(cls, shape: str) -> str:
        # ' 4x4x4 ' and 4X4X4 are the run 4x4x4: one text in records, keys and kept runs
        return run_shape(shape)


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that reports how many events it has scheduled (the speed metric).

    SimPy numbers every scheduled event from one counter; reading it costs
    nothing per event, unlike overriding ``step``.
    """

    @property
    def events_scheduled(self) -> int:
        # itertools.count's repr is "count(N)": the next id, i.e. the number scheduled so far.
        return int(repr(self._eid)[6:-1])


class UpdateStream:
    """One process's slice of the global HPCC stream, with each update's owner.

    Holds only the LFSR register: a few hundred bytes per process whatever the
    run length, which is what lets a whole machine's streams fit in memory.
    """

    __slots__ = ("layout", "first", "count", "taken", "_ran")

    def __init__(self, layout: hpcc.TableLayout, first: int, count: int):
        self.layout, self.first, self.count = layout, first, count
        self.taken = 0
        self._ran: int | None = None  # jump ahead lazily: starts() costs ~0.4 ms

    def take(self) -> tuple[int, int]:
        if self.taken >= self.count:
            raise StopIteration("stream exhausted")
        ran = hpcc.starts(self.first) if self._ran is None else self._ran
        ran = self._ran = hpcc.next_ran(ran)
        self.taken += 1
        return ran, self.layout.owner_of(ran)

    @property
    def remaining(self) -> int:
        return self.count - self.taken


def check_memory(run: RunConfig) -> int:
    """The SimPy engine's memory estimate for ``run`` in bytes; a run that would not fit is refused in one line
    (:func:`gupsim.memory.check_fits`)."""
    nodes = math.prod(parse_shape(run.shape))
    ranks = nodes * run.machine.cpu.processes_per_node
    from gupsim.fast import KERNELS  # the SimPy engine was asked for (--engine simpy, --verify or telemetry)

    detail, table_bytes = f"{run.machine.cpu.processes_per_node} per node, SimPy engine", 0
    if run.verify:  # the table, and verification's copy, the initial table and their comparison beside it
        words = 2 ** log2_table_size(run, nodes, ranks)
        table_bytes = VERIFY_BYTES_PER_WORD * words
        detail += f", --verify's table of {words:,} words"
    hint = " (or the fast engine: --engine fast, without telemetry)" if run.algorithm in KERNELS and not run.verify \
        else ", or a smaller --log2-table-size" if run.verify else ""
    return check_fits(ranks, algorithm_class(run.algorithm).memory_per_rank_bytes, f"{run.algorithm} on {run.shape}",
                      base_bytes=BASE_BYTES + ROUTE_CACHE_BYTES + table_bytes, detail=detail, hint=hint)


def check_algorithm(run: RunConfig) -> None:
    """Build the run's algorithm on a stand-in of its machine, so that the algorithm's own checks (a bucket
    capacity above HPCC's limit, a payload no packet holds, no worker core, more threads than cores) fail
    before the run, and in a sweep's validation, with the line the run would give.  The stand-in holds what
    an algorithm reads when it is made: the machine, the topology (its per-node tables are built only when
    asked), the process counts and the network's packet limits."""
    from types import SimpleNamespace

    m = run.machine
    shape = parse_shape(run.shape)
    topology = make_topology(m.network.topology_kind(math.prod(shape)), shape, m.network)
    ppn = m.cpu.processes_per_node
    standin = SimpleNamespace(run=run, machine=m, topology=topology, ppn=ppn, num_ranks=topology.num_nodes * ppn,
                              net=network_standin(m, topology))
    algorithm_class(run.algorithm)(standin, validate_options(run.algorithm, run.algorithm_options))


def network_standin(machine: Any, topology: Any) -> Any:
    """What an algorithm reads of its network when it is made, without building one: the network's section,
    the topology, and the bytes a packet carries after the network's own header (BG/P's DMA header)."""
    from types import SimpleNamespace

    from gupsim.dma import data_header_bytes

    header = data_header_bytes(machine)
    return SimpleNamespace(cfg=machine.network, topology=topology, data_header_bytes=header,
                           max_data_bytes=machine.network.max_payload_bytes - header)


def check_network(run: RunConfig) -> None:
    """Refuse an algorithm on a network it does not run on, or without the MPI costs it needs, in one line."""
    m, cls = run.machine, algorithm_class(run.algorithm)
    kind = m.network.topology_kind(math.prod(parse_shape(run.shape)))
    if kind not in cls.networks:
        raise GupsimError(f"algorithm {run.algorithm} does not run on a {kind} network "
                          f"(machine {m.name}); it runs on: {', '.join(cls.networks)}")
    if cls.needs_mpi and getattr(m, "mpi", None) is None:
        raise GupsimError(f"algorithm {run.algorithm} needs MPI costs; machine {m.name} has no mpi section")


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
        self.net = self.topology.make_network(self.env, m, self.ppn)
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
        self.all_applied = self.env.event()
        self.table = hpcc.initial_table(self.layout) if run.verify else None
        options = validate_options(run.algorithm, run.algorithm_options)
        self.algorithm = algorithm_class(run.algorithm)(self, options)

    def stream_start(self, rank: int) -> int:
        """Where ``rank``'s simulated stretch starts: its first update is value number start + 1.

        (:func:`gupsim.hpcc.stream` returns values ``first+1 .. first+count``, as HPCC
        steps the generator before each use.)
        """
        return stream_start(self.run, self.layout, rank)

    # ------------------------------------------------------------------ bookkeeping

    def apply(self, rank: int, values: list[int], delay_s: float = 0.0) -> None:
        """``rank`` XORs ``values`` into its part of the table, ``delay_s`` from now.

        The delay is the CPU work the process has spent but not yet turned into
        time (see :class:`gupsim.node.Cpu`); it only matters for the window marks.
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
        if self.applied == self.total_updates:
            self.all_applied.succeed()
        elif self.applied > self.total_updates:
            raise SimulationError("more updates applied than generated")

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


def log2_table_size(run: RunConfig, num_nodes: int, num_ranks: int) -> int:
    """The run's global table size (log2 words): as given, else the default for its machine size."""
    if run.log2_table_size is not None:
        size = run.log2_table_size
    elif run.verify:
        size = int(math.log2(num_ranks)) + VERIFY_LOG2_WORDS_PER_PROCESS
    else:
        size = int(math.log2(num_nodes)) + DEFAULT_LOG2_WORDS_PER_NODE
    if 2**size < num_ranks:
        raise GupsimError(f"log2_table_size={size} gives fewer table words than {num_ranks} processes")
    return size


def stream_start(run: RunConfig, layout: hpcc.TableLayout, rank: int) -> int:
    """Where ``rank``'s simulated stretch of its HPCC slice starts (see the module docstring).

    A stretch that would run past the slice is one line of :class:`GupsimError`: the
    updates would belong to the next rank's slice.
    """
    u, seed = run.updates_per_process, run.seed
    slice_len = 4 * layout.local_size(rank)
    skip = int(SLICE_START_FRACTION * slice_len)
    if skip + (seed + 1) * u > slice_len:
        raise GupsimError(
            f"updates_per_process={u} with seed={seed} runs past rank {rank}'s HPCC slice "
            f"of {slice_len} updates (4 x its table); use fewer updates, a lower seed or a larger table"
        )
    return 4 * layout.global_start(rank) + skip + seed * u


def stream_layout(run: RunConfig) -> hpcc.TableLayout:
    """The run's table layout, once every rank's stretch is known to lie inside its HPCC slice.

    Both engines take their layout from here, and :func:`gupsim.runner.simulate`
    calls it before choosing one, so a run too long for its table, or a seed too
    far along the slice, is the same one line on either engine, and the fast
    engine (whose stream positions and counters are int64) never sees
    ``updates_per_process`` or ``seed`` beyond a slice, however large.

    Ranks below ``layout.remainder`` hold one word more than the rest, so there
    are two slice lengths, and a longer slice has at least as much room after its
    starting point.  Checking rank 0 and the first rank of the shorter slices
    therefore checks every rank, and raises for the same rank as building the
    streams in rank order would.
    """
    num_nodes = math.prod(parse_shape(run.shape))
    num_ranks = num_nodes * run.machine.cpu.processes_per_node
    layout = hpcc.TableLayout(log2_table_size(run, num_nodes, num_ranks), num_ranks)
    for rank in sorted({0, layout.remainder}):
        stream_start(run, layout, rank)
    return layout
