"""What a finished run reports, the same for every engine: :class:`RunOutcome`, and the one interface that gives
it, :class:`ReportsOutcome`.

A run's record (:func:`gupsim.engines.run.make_record`) is built from the outcome alone, so it never reaches
into an engine's objects, and an engine is free to keep its state however it runs fastest: the SimPy engine
reads its environment, network and algorithm; the fast engine reads its kernel's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from gupsim.model.run_config import RunConfig


@dataclass(frozen=True)
class RunOutcome:
    """One finished run, as its engine measured it.

    ``window_times`` are the simulated seconds at which the steady-state window's marks
    (:data:`gupsim.model.run_config.WINDOW`) were crossed, and ``window_counters`` the algorithm's counters
    (:meth:`gupsim.algorithms.base.Algorithm.counters`) at those moments; ``totals`` are the same counters at
    the end of the run, and ``algorithm_metrics`` what :meth:`~gupsim.algorithms.base.Algorithm.metrics`
    made of the two.  ``links`` is :func:`gupsim.engines.links.link_stats`'s mapping of the links that exist.
    ``earlier_wall_s`` and ``earlier_peak_rss_mb`` cover the pieces of a run resumed from a checkpoint
    (0 for a run made in one piece).
    """

    run: RunConfig
    topology: Any
    processes: int
    total_updates: int
    sim_time_s: float
    events: int
    updates_applied: int
    updates_generated: int
    window_times: tuple[float, ...]
    window_counters: tuple[dict[str, float], ...]
    totals: dict[str, float]
    algorithm_metrics: dict[str, float]
    packets_injected: int
    packets_delivered: int
    wire_bytes_injected: int
    #: Hops taken by every packet, where the engine counts them (the fast engine); None where it does not.
    packet_hops: int | None
    links: dict[str, Any]
    #: The simulated seconds at which the updates applied crossed each of
    #: :func:`gupsim.model.output_analysis.applied_marks`'s marks (fewer if the run ended first).
    applied_times: tuple[float, ...] = ()
    #: The run was ended by its stopping rule (``RunConfig.precision``) before its cap.
    precision_reached: bool = False
    #: BG/P's DMA engines (a machine with a ``dma`` section), else None: per node the injection and reception
    #: engines' busy seconds (``tx_busy_s``, ``rx_busy_s``), and the throttle's back-offs (``throttle_waits``,
    #: ``throttled_s``), the polls they cost (``throttle_polls``) and how many were held behind another
    #: (``throttle_queued``), as :meth:`gupsim.engines.reference.dma.DmaNetwork.dma_stats` counts them.
    dma: dict[str, Any] | None = None
    earlier_wall_s: float = 0.0
    earlier_peak_rss_mb: float = 0.0

    @property
    def machine(self) -> Any:
        return self.run.machine


class ReportsOutcome(Protocol):
    """The contract between an engine and the record: a finished run says what it measured.

    An engine's simulation object implements :meth:`outcome`, called once the run has ended (every update
    applied, or every process returned).  It fills every field of :class:`RunOutcome` from its own state:

    * the algorithm's ``window_counters`` and ``totals`` carry the keys of the reference algorithm's
      :meth:`~gupsim.algorithms.base.Algorithm.counters`, and ``algorithm_metrics`` is the reference
      algorithm's ``metrics(window_counters, totals)``, so that an algorithm's record is computed by one
      piece of code whichever engine ran it (a fast kernel's ``counters(state)`` names its counters as the
      reference class does);
    * the network totals and ``links`` count the same things as the reference network's counters.

    :func:`gupsim.engines.run.make_record` then reads nothing else.  The bit-for-bit tests
    (``tests/test_fast*.py``) compare the records of the two engines, and the outcomes' totals.
    """

    def outcome(self) -> RunOutcome: ...
