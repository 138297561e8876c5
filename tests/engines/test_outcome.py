"""Each engine reports its run through one interface (``outcome()``), and the record is made from it alone.

An algorithm's record comes from its counters (``metrics(window, totals)``), which a fast kernel reports
under the reference class's names; these tests check both halves of that contract.
"""

from __future__ import annotations

import dataclasses

import pytest

from gupsim.algorithms.base import algorithm_class
from gupsim.app.reporting import model_fields
from gupsim.base.errors import SimulationError
from gupsim.config import load_machine
from gupsim.engines.fast.engine import KERNELS, FastSimulation
from gupsim.engines.outcome import RunOutcome
from gupsim.engines.run import make_record, make_run_config, simulate
from tests.engines.fast.conftest import KERNEL_SETS

#: One small run of every algorithm on a machine it runs on: (algorithm, machine, overrides, shape, updates).
EVERY_ALGORITHM = [
    ("one-packet", "bgl", {}, "4x2x2", 300),
    ("baseline", "bgl", {}, "4x2x2", 400),
    ("routed", "bgl", {}, "4x2x2", 400),
    ("routed-split", "bgl", {"cpu.processes_per_node": 2}, "4x2x1", 400),
    ("dv", "hypatia-dv", {}, "8x1x1", 512),
]


def _config(algorithm, machine="bgl", sets=None, shape="4x2x2", updates=300, engine="simpy", **kw):
    return make_run_config(machine=load_machine(machine, sets or {}), shape=shape, algorithm=algorithm,
                           updates_per_process=updates, engine=engine, **kw)


@pytest.mark.parametrize("algorithm", sorted(KERNELS))
def test_a_kernel_reports_the_reference_algorithms_counters_under_their_names(algorithm):
    """The fast engine's totals and window counters are the SimPy run's, key for key and value for value:
    the algorithm's one ``metrics`` then makes both engines' records."""
    sets = {**KERNEL_SETS.get(algorithm, {}), **({"network.fifos": "per-dimension"} if algorithm == "routed" else {})}
    fast, ref = (simulate(_config(algorithm, sets=sets, updates=600, engine=e))[0].outcome()
                 for e in ("fast", "simpy"))
    assert _agree(fast.totals, ref.totals)
    assert fast.window_times == ref.window_times
    for f, r in zip(fast.window_counters, ref.window_counters, strict=True):
        assert f == {k: r[k] for k in f}  # the fast engine snapshots what the window's ratios read
    assert _agree(fast.algorithm_metrics, ref.algorithm_metrics)


def _agree(a: dict, b: dict) -> bool:
    """Equal keys; equal counts; floats equal to 1e-9 (a sum of seconds over ranks is added in another order
    by each engine, as tests/test_fast.py's ROUNDED keys); NaN where the other has NaN."""
    def same(x, y):
        if isinstance(x, float) or isinstance(y, float):
            return (x != x and y != y) or x == pytest.approx(y, rel=1e-9)
        return x == y
    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


@pytest.mark.parametrize("algorithm, machine, sets, shape, updates", EVERY_ALGORITHM)
def test_an_algorithms_metrics_read_only_the_counters_they_are_given(algorithm, machine, sets, shape, updates):
    """A fresh algorithm object of the same run, which has counted nothing, makes the same metrics from the
    finished run's counters: nothing counted as the run went is read from the object."""
    sim, record = simulate(_config(algorithm, machine, sets, shape, updates))
    outcome = sim.outcome()
    fresh = algorithm_class(algorithm)(sim, sim.algorithm.options)
    assert _agree(fresh.metrics(outcome.window_counters, outcome.totals), outcome.algorithm_metrics)
    assert record["updates_applied"] == outcome.updates_applied == outcome.total_updates


def test_the_record_is_made_from_the_outcome_alone():
    """Change one reported number and the record follows it: make_record reads the outcome, not the engine."""
    sim, record = simulate(_config("routed", updates=400))
    outcome = sim.outcome()
    remade = model_fields(make_record(outcome, record["wall_s"]))
    assert remade == {k: v for k, v in model_fields(record).items() if k in remade}
    doubled = dataclasses.replace(outcome, wire_bytes_injected=2 * outcome.wire_bytes_injected,
                                  sim_time_s=2 * outcome.sim_time_s)
    other = make_record(doubled, record["wall_s"])
    assert other["bytes_per_update"] == 2 * record["bytes_per_update"]
    assert other["gups_total"] == pytest.approx(record["gups_total"] / 2, rel=1e-12)
    assert other["link_utilisation_max"] == pytest.approx(record["link_utilisation_max"] / 2, rel=1e-12)


def test_a_fast_run_keeps_its_own_fields_and_reports_only_when_finished():
    sim = FastSimulation(_config("one-packet", updates=64, engine="fast"))
    with pytest.raises(SimulationError, match="before it has run"):
        sim.outcome()
    sim.execute()
    outcome = sim.outcome()
    assert isinstance(outcome, RunOutcome)
    assert not hasattr(sim, "env") and not hasattr(sim, "net")  # it does not pose as the SimPy Simulation
    assert outcome.packet_hops > outcome.packets_injected > 0  # the kernel counts hops; SimPy does not
    # every one-packet packet has the same wire bytes and crosses packet_hops / packets links in all
    per_packet = outcome.wire_bytes_injected // outcome.packets_injected
    assert outcome.links["bytes"].sum() == per_packet * outcome.packet_hops
