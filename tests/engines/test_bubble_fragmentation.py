"""The bubble rule with packets of mixed sizes (docs/model.md, "Mixed packet sizes").

Counted in chunks (``network.bubble_accounting: chunks``), a ring's free room can split between buffers into
pieces no waiting packet fits.  The case: ``alltoall`` on ``cray-x1`` 7x2x1 (56 MSPs), 400,000 updates per
MSP, seed 0.  At t = 0.0201 s the X+ ring of the second row holds 422 of its 448 chunks: every buffer has a
16-chunk packet waiting to continue, and the 26 free chunks are split 14 and 12 between two buffers
(16-chunk packets beside the 2-chunk tails of 16 KB blocks), so nothing moves.  Counted in full-packet slots
(``packets``, as the reproduce target runs the X1's MPI rows), free room comes in whole packets and the same run ends.
"""

from __future__ import annotations

import pytest

from gupsim.base.errors import DeadlockError
from gupsim.config import load_machine
from gupsim.engines import router_rules
from gupsim.engines.run import make_run_config, run

PROCESSES, UPDATES = 56, 400_000


def _x1_all_to_all(accounting: str) -> dict:
    machine = load_machine("cray-x1", {"network.bubble_accounting": accounting})
    return run(make_run_config(machine=machine, shape="7x2x1", algorithm="alltoall",
                               updates_per_process=UPDATES, engine="fast"))


def test_counted_in_packet_slots_the_x1_all_to_all_on_7x2x1_runs_to_its_end():
    from gupsim.studies.experiments.crayx1_hpcc import MIXED_SIZES

    assert MIXED_SIZES == {"network.bubble_accounting": "packets"}  # the reproduce target's MPI rows run so
    record = _x1_all_to_all("packets")
    assert record["updates_applied"] == PROCESSES * UPDATES


def test_counted_in_chunks_the_same_run_deadlocks_and_says_what_avoids_it():
    with pytest.raises(DeadlockError, match="bubble_accounting=packets"):
        _x1_all_to_all("chunks")


@pytest.mark.parametrize("chunks, slot, held", [(2, 16, 16), (16, 16, 16), (3, 0, 3), (8, 4, 8), (1, 1, 1)])
def test_a_packet_holds_a_full_slot_or_its_own_chunks(chunks, slot, held):
    assert router_rules.held_room(chunks, slot) == held
    assert router_rules.held_room(router_rules.held_room(chunks, slot), slot) == held  # idempotent


def test_both_engines_count_the_slots():
    """Slots change a congested small torus's run on each engine (the engines' agreement on it is
    tests/engines/fast/test_fast.py's): 1-chunk packets hold 8 chunks of a 32-chunk escape buffer."""
    for engine in ("simpy", "fast"):
        records = [run(make_run_config(
            machine=load_machine("bgl", {"network.topology": "torus", "network.link_bytes_per_s": 1e7,
                                         "network.bubble_accounting": accounting}),
            shape="4x4x2", algorithm="one-packet", updates_per_process=300, engine=engine))
            for accounting in ("chunks", "packets")]
        assert records[0]["sim_time_s"] != records[1]["sim_time_s"], engine
