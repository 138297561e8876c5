"""A run's configuration and what follows from it alone, for both engines: the table size and every rank's
stretch of the HPCC stream.

In HPCC, rank ``r`` owns the slice of the one global stream that starts at
``starts(4 * GlobalStartMyProc)`` and is 4 x its local table long.  A run of
``U`` updates per process simulates ``U`` consecutive updates of each rank's
own slice, beginning ``floor(0.618 * slice) + s * U`` updates in, ``s`` being
the seed.  Why not at the slice's start: slices start at ``x^(r * 2^k)``, and
those LFSR states are sparse (squaring is linear in GF(2)), so the first few
thousand updates of power-of-two ranks carry almost no owner bits and all go
to rank 0.  A real run of 4 x 2^25 updates per process averages that
transient away; a short simulated stretch would not.  The golden-ratio point
of the slice has no such structure (checked in the simulation tests).
"""

from __future__ import annotations

import math
from typing import Any, Literal
from pydantic import BaseModel, ConfigDict, Field, field_validator
from gupsim.model import hpcc
from gupsim.config.torus import MachineConfig
from gupsim.config.switched import SwitchedMachineConfig
from gupsim.base.errors import GupsimError
from gupsim.topology.base import parse_shape
from gupsim.topology.base import run_shape


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
    precision: float | None = Field(
        default=None, gt=0, lt=1, allow_inf_nan=False,
        description="stop once the GUPS 95% interval's half-width is at most this fraction of the rate; "
        "updates_per_process is then the cap (--precision; gupsim.model.output_analysis.precise)")
    warm_start: bool = Field(
        default=False, description="start from buckets pre-filled from each process's own stream, as a long run "
        "holds them, for the algorithms that have a warm start (--warm-start; gupsim.algorithms.routed_warm)")
    #: 'auto': the compiled engine (gupsim.engines.fast) where it has a kernel for the run, else SimPy.
    engine: Literal["auto", "fast", "simpy"] = Field(
        default="auto", description="fast: compiled kernels (gupsim.engines.fast); simpy: the reference engine; auto: fast "
        "where a kernel models the run, else simpy (--engine)")

    @field_validator("shape")
    @classmethod
    def _canonical_shape(cls, shape: str) -> str:
        # ' 4x4x4 ' and 4X4X4 are the run 4x4x4: one text in records, keys and kept runs
        return run_shape(shape)


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

    Both engines take their layout from here, and :func:`gupsim.engines.run.simulate`
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
