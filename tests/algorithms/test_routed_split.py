"""``routed-split``: routing cores and generate/update cores on one node (the specialisation variant)."""

from __future__ import annotations

import pytest

from gupsim.studies import bgp
from gupsim.config import load_machine
from gupsim.base.errors import GupsimError
from gupsim.engines.run import make_run_config, simulate


def _run(machine, shape, updates, **kw):
    return simulate(make_run_config(machine=machine, shape=shape, algorithm="routed-split",
                                    updates_per_process=updates, **kw))


@pytest.mark.parametrize("machine, shape, routers", [
    (lambda: bgp.machine(4), "2x2x2", 1),
    (lambda: bgp.machine(4), "3x2x1", 2),
    (lambda: load_machine("bgl", {"cpu.processes_per_node": 2}), "4x2x1", 1),
])
def test_split_loses_nothing_and_verifies(machine, shape, routers):
    sim, rec = _run(machine(), shape, 400, verify=True, algorithm_options={"router_cores": routers})
    assert rec["updates_generated"] == rec["updates_applied"] == sim.num_ranks * 400
    assert sim.verify().errors == 0
    # Routers generate and apply nothing themselves: every remote update was handed to one.
    remote = 1 - 1 / sim.topology.num_nodes
    assert rec["alg_handoffs_per_update"] == pytest.approx(remote, abs=0.08)


def test_split_routes_on_node_coordinates_only():
    # No core hop (the hand-off replaces it): x, y, z hops only, (L-1)/L each on average.
    sim, rec = _run(bgp.machine(4), "2x2x2", 400)
    assert rec["alg_software_hops_per_update"] == pytest.approx(1.5, rel=0.05)
    assert sim.algorithm.capacity == 1024 // (2 + 2 + 2 + 1)  # X + Y + Z buckets and the hand-off queue


def test_one_router_core_is_the_busiest_core():
    sim, _ = _run(bgp.machine(4), "2x2x2", 400, engine="simpy")  # the SimPy engine's CPUs count busy cycles
    busy = [c.busy_cycles for c in sim.cpus[:4]]
    assert busy[3] > 1.3 * max(busy[:3])  # core 3 routes for the node's three workers


def test_split_needs_a_worker_core():
    with pytest.raises(GupsimError, match="router_cores=1 leaves no worker core"):
        _run(bgp.machine(1), "2x2x2", 10)
