"""One process's processor in the reference engine: the cycles its steps cost (:mod:`gupsim.model.costs`)
accumulate as debt and turn into simulated time when the process flushes them."""

from __future__ import annotations

import simpy


class Cpu:
    """One process's processor: accumulates spent cycles, turns them into time on flush."""

    __slots__ = ("env", "rank", "cycle_s", "debt", "busy_cycles")

    def __init__(self, env: simpy.Environment, rank: int, clock_hz: float):
        self.env, self.rank, self.cycle_s = env, rank, 1.0 / clock_hz
        self.debt = 0.0
        self.busy_cycles = 0.0

    def spend(self, cycles: float) -> None:
        self.debt += cycles

    def flush(self) -> simpy.Event:
        """An event that fires when the spent cycles have elapsed (now, if none)."""
        cycles, self.debt = self.debt, 0.0
        self.busy_cycles += cycles
        return self.env.timeout(cycles * self.cycle_s)

    @property
    def debt_s(self) -> float:
        return self.debt * self.cycle_s
