"""A known defect of the torus model's escape channels: the bubble rule counts chunks, and packets of mixed
sizes fragment a ring's free room until no buffer holds a full packet (docs/research/cray-x1-t3e.md, "A
deadlock in the X1 all-to-all").

The case: ``alltoall`` on ``cray-x1`` 7x2x1 (56 MSPs), 400,000 updates per MSP, seed 0.  At t = 0.0201 s the
X+ ring of the second row holds 422 of its 448 chunks: every buffer has a 16-chunk packet waiting to continue,
and the 26 free chunks are split 14 and 12 between two buffers (16-chunk packets beside the 2-chunk tails of
16 KB blocks).  The rule keeps a packet's worth of room in the ring as a whole, not in one buffer, so nothing
moves.  The test is a strict xfail: it fails the suite once the model is fixed, so that the marker goes.
"""

from __future__ import annotations

import pytest

from gupsim.base.errors import DeadlockError
from gupsim.engines.run import make_run_config, run


@pytest.mark.xfail(raises=DeadlockError, strict=True,
                   reason="bubble rule counted in chunks: free room fragments across a ring's buffers")
def test_the_x1_all_to_all_on_7x2x1_runs_to_its_end():
    record = run(make_run_config(machine="cray-x1", shape="7x2x1", algorithm="alltoall",
                                 updates_per_process=400_000, engine="fast"))
    assert record["updates_applied"] == 56 * 400_000
