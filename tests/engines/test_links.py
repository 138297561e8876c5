"""Per-link statistics: a link's busy seconds stop at the run's end, also for a run stopped once precise."""

from __future__ import annotations

import numpy as np

from gupsim.engines.links import link_stats
from gupsim.engines.run import make_run_config, simulate
from gupsim.studies import bgp


class _TwoLinks:
    @staticmethod
    def links():
        return np.array([0, 1])


def test_a_reservation_past_the_end_counts_only_up_to_the_end():
    # link 0 was reserved until 12 s by reservations made by the end (10 s), with 11 s counted; link 1 was idle
    stats = link_stats(_TwoLinks(), [100, 0], [11.0, 0.0], [0.0, 0.0], [12.0, 3.0], 10.0)
    assert stats["busy_s"].tolist() == [9.0, 0.0]


def test_a_run_stopped_once_precise_has_no_link_busier_than_its_run():
    """One-packet in dual mode on 8x8x8 BG/P stops at 1% with its busiest link saturated and packets still
    queued for it: it read 1.009 busy before the tail past the end was taken off."""
    rec = simulate(make_run_config(machine=bgp.machine(2), shape="8x8x8", algorithm="one-packet",
                                   updates_per_process=4096, precision=0.01))[1]
    assert rec["precision_reached"]
    assert 0.95 < rec["link_utilisation_max"] <= 1.0
