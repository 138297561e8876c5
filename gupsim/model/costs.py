"""The node cost model: what each step of an update costs a CPU, in cycles.

Seed 000 §3.1 splits an update into *generate*, *send*, *receive* and
*update* steps (plus *route* for the software-routed algorithm, §4.2), and
§5.2 measures them on Blue Gene/L:

* generate + loop overhead ``t_g + t_o^s`` = 18 cycles, update ``t_u`` = 86
  cycles (main-memory latency), 104 in all for a local update;
* the raw torus device's send and receive calls (Table 1, read from CSV and
  interpolated by payload);
* MPI call latencies of 1,270 cycles (8 bytes) to 12,000 cycles (1,024
  bytes), interpolated linearly by message size.

A :class:`Cpu` is one application process's processor.  It runs one step at
a time: an algorithm *spends* cycles as it executes steps, and the spent
cycles turn into simulated time only when the process next interacts with
the outside world (:meth:`Cpu.flush`).  Batching saves one SimPy event per
step and does not change when private work ends.  Its one convention: a
process polls its reception FIFO at the start of a loop iteration (the
state at the time the previous iteration's cycles ran out), so a poll can
see the network up to one iteration early.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from gupsim.config.torus import MachineConfig


@dataclass(frozen=True)
class CostModel:
    """Cycle costs of the steps, derived once from a machine description."""

    generate: float
    update: float
    mpi_test: float
    bucket_insert: float
    heap_per_level: float
    _machine: "MachineConfig"

    @classmethod
    def from_machine(cls, m: "MachineConfig") -> "CostModel":
        mpi = m.mpi  # a Data Vortex machine runs no MPI: its MPI costs do not exist (NaN, never used)
        nan = float("nan")
        return cls(
            generate=m.cpu.generate_cycles,
            update=m.cpu.update_cycles,
            mpi_test=mpi.test_cycles if mpi else nan,
            bucket_insert=mpi.bucket_insert_cycles if mpi else nan,
            heap_per_level=mpi.heap_cycles_per_level if mpi else nan,
            _machine=m,
        )

    def raw_send(self, payload_bytes: float) -> float:
        return self._machine.costs.send(payload_bytes)

    def raw_recv(self, payload_bytes: float) -> float:
        return self._machine.costs.recv(payload_bytes)

    def mpi_latency(self, message_bytes: float) -> float:
        """MPI call latency for a message of this size (linear between the two measured points)."""
        mpi = self._machine.mpi
        slope = (mpi.latency_large_cycles - mpi.latency_small_cycles) / (
            mpi.latency_large_bytes - mpi.latency_small_bytes
        )
        return max(mpi.latency_small_cycles, mpi.latency_small_cycles + slope * (message_bytes - mpi.latency_small_bytes))

    def mpi_send(self, message_bytes: float) -> float:
        return self._machine.mpi.send_share * self.mpi_latency(message_bytes)

    def mpi_recv(self, message_bytes: float) -> float:
        return (1.0 - self._machine.mpi.send_share) * self.mpi_latency(message_bytes)

    def heap_update(self, entries: int) -> float:
        return self.heap_per_level * math.log2(max(2, entries))


