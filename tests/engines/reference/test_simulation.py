"""Whole runs: nothing lost, bit-for-bit determinism, HPCC verification, steady state."""

from __future__ import annotations

import numpy as np
import pytest

from gupsim.model import hpcc
from gupsim.base.errors import GupsimError, SimulationError
from gupsim.app.reporting import MEASURED_KEYS, model_fields
from gupsim.engines.run import MIN_STEADY_UPDATES, make_run_config, simulate
from gupsim.model.run_config import SLICE_START_FRACTION
from gupsim.engines.reference.simulation import CountingEnvironment, Simulation

ALGORITHMS = ["baseline", "one-packet"]


def _run(bgl, algorithm, shape="2x2x2", updates=600, **kw):
    return simulate(make_run_config(machine=bgl, shape=shape, algorithm=algorithm, updates_per_process=updates, **kw))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_nothing_is_lost(bgl, algorithm):
    sim, rec = _run(bgl, algorithm, shape="4x2x2", updates=1500)
    assert rec["updates_generated"] == rec["updates_applied"] == 16 * 1500
    outcome = sim.outcome()
    assert outcome.packets_injected == outcome.packets_delivered


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_same_config_and_seed_give_the_same_numbers_bit_for_bit(bgl, algorithm):
    a = _run(bgl, algorithm, shape="4x2x2", updates=1200, seed=3)[1]
    b = _run(bgl, algorithm, shape="4x2x2", updates=1200, seed=3)[1]
    assert MEASURED_KEYS <= a.keys()  # the measured fields it leaves out are fields a record has
    assert model_fields(a) == model_fields(b)
    c = _run(bgl, algorithm, shape="4x2x2", updates=1200, seed=4)[1]
    assert c["sim_time_s"] != a["sim_time_s"]  # the seed does select different updates


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("shape", ["2x2x2", "3x2x1"])
def test_hpcc_verification_passes_on_a_small_machine(bgl, algorithm, shape):
    sim, rec = _run(bgl, algorithm, shape=shape, updates=1500, verify=True)
    result = sim.verify()
    assert result.passed and result.errors == 0
    # and it is a real check: corrupt one word and it counts the error
    sim.table[5] ^= np.uint64(1)
    assert sim.verify().errors == 1


def test_baseline_termination_messages_end_the_run_and_lose_nothing(bgl):
    # Long enough that the steady window (25-75% applied) ends before the buckets drain.
    sim, rec = _run(bgl, "baseline", shape="2x2x2", updates=8192, algorithm_options={"termination": "messages"})
    assert rec["updates_applied"] == 8 * 8192
    assert sim.outcome().totals["finished_ranks"] == 8
    counter = _run(bgl, "baseline", shape="2x2x2", updates=8192)[1]
    assert rec["gups"] == pytest.approx(counter["gups"], rel=0.02)
    assert rec["sim_time_s"] > counter["sim_time_s"]  # the FINISHED messages add a drain


@pytest.mark.parametrize("algorithm, shape", [("baseline", "4x4x2"), ("one-packet", "2x2x4")])
def test_steady_rate_changes_less_than_2_percent_when_run_length_doubles(bgl, algorithm, shape):
    short = _run(bgl, algorithm, shape=shape, updates=MIN_STEADY_UPDATES)[1]
    long = _run(bgl, algorithm, shape=shape, updates=2 * MIN_STEADY_UPDATES)[1]
    assert long["gups"] == pytest.approx(short["gups"], rel=0.02)


def test_more_than_1024_pending_updates_is_a_hard_error(bgl):
    sim = Simulation(make_run_config(machine=bgl, shape="2x2x2", algorithm="baseline", updates_per_process=10))
    sim.check_pending(0, 1024)
    with pytest.raises(SimulationError, match="at most 1024"):
        sim.check_pending(0, 1025)


def test_baseline_never_holds_more_than_1024(bgl, monkeypatch):
    seen = []
    original = Simulation.check_pending
    monkeypatch.setattr(Simulation, "check_pending", lambda self, r, p: (seen.append(p), original(self, r, p)))
    _run(bgl, "baseline", shape="2x2x2", updates=3000, engine="simpy")  # the hook is the SimPy reference's
    assert max(seen) == 1024


def test_run_past_the_hpcc_slice_is_refused(bgl):
    with pytest.raises(GupsimError, match="runs past rank"):
        _run(bgl, "baseline", updates=7000, verify=True)  # 2^12-word tables: slices of 16,384, stretch from 10,125


def test_bad_run_parameters_are_one_line(bgl):
    with pytest.raises(GupsimError, match="updates_per_process"):
        make_run_config(machine=bgl, shape="2x2x2", algorithm="baseline", updates_per_process=0)
    with pytest.raises(GupsimError, match="unknown option 'bucket'"):
        _run(bgl, "baseline", algorithm_options={"bucket": 3})


def test_the_python_api_takes_a_machine_by_name_and_names_bad_fields_plainly(bgl):
    """As the command line does: a name or a YAML path loads the machine.  A misspelt or missing run field
    is named without pydantic's wrapper names or a dump of the whole machine."""
    for machine in ("bgl", bgl.source_path):
        run = make_run_config(machine=machine, shape="2x2x2", algorithm="routed", updates_per_process=8)
        assert run.machine.source_path == bgl.source_path
    with pytest.raises(GupsimError, match=r"^unknown run field 'overrides' \(valid: machine, shape, "):
        make_run_config(machine="bgl", shape="2x2x2", overrides={})
    with pytest.raises(GupsimError, match=r"^missing run field 'algorithm'$"):
        make_run_config(machine="bgl", shape="2x2x2")
    with pytest.raises(GupsimError, match=r"^machine: Input should be .* \(got 3\)$"):
        make_run_config(machine=3, shape="2x2x2", algorithm="routed", updates_per_process=8)


@pytest.mark.parametrize("field, value", [("seed", True), ("updates_per_process", True), ("updates_per_process", "64"),
                                          ("verify", "yes"), ("log2_table_size", True)])
def test_run_fields_are_strict_as_machine_fields_are(field, value):
    """seed=True had run seed 1, verify='yes' had verified: a mistake taken silently."""
    with pytest.raises(GupsimError, match=rf"^{field}: Input should be a valid .* \(got {value!r}\)$"):
        make_run_config(**{"machine": "bgl", "shape": "2x2x2", "algorithm": "baseline", "updates_per_process": 8,
                            field: value})


@pytest.mark.parametrize("algorithm, option, value", [("baseline", "max_pending", True),
                                                      ("routed", "bucket_capacity", True),
                                                      ("one-packet", "local_overhead_cycles", True),
                                                      ("baseline", "max_pending", "x")])
def test_algorithm_options_are_strict_and_checked_when_the_run_is_made(algorithm, option, value):
    """--option max_pending=true had run with max_pending=1; a bad option had waited for the run to start."""
    with pytest.raises(GupsimError, match=rf"^algorithm {algorithm}: option {option}: Input should be a valid "):
        make_run_config(machine="bgl", shape="2x2x2", algorithm=algorithm, updates_per_process=8,
                        algorithm_options={option: value})


def test_simulated_stretch_avoids_the_sparse_slice_starts():
    # Why the stretch starts at the golden-ratio point: at slice starts, rank 0 gets a large excess.
    layout = hpcc.TableLayout(30, 32)

    def rank0_share(fraction):
        starts = [4 * layout.global_start(r) + int(fraction * 4 * layout.local_size(r)) for r in range(32)]
        owners = layout.owner(np.concatenate([hpcc.stream(s, 2000) for s in starts]))
        return np.bincount(owners, minlength=32).max() / (len(owners) / 32)

    assert rank0_share(0.0) > 3.0
    assert rank0_share(SLICE_START_FRACTION) < 1.15


def test_link_counters_add_up(bgl):
    sim, rec = _run(bgl, "one-packet", shape="4x2x2", updates=800)
    outcome = sim.outcome()
    stats = outcome.links
    per_packet = outcome.wire_bytes_injected / outcome.packets_injected
    mean_hops = stats["bytes"].sum() / outcome.wire_bytes_injected
    assert per_packet == 44
    assert 0 < mean_hops <= sim.topology.diameter
    assert 0 < rec["link_utilisation_mean"] <= rec["link_utilisation_max"] <= 1


@pytest.fixture
def ring_flood():
    """A test-only algorithm: every rank floods the rank half-way round a ring (all traffic one way)."""
    from gupsim.algorithms import ALGORITHMS, Algorithm, register_algorithm

    @register_algorithm("test-ring-flood")
    class RingFlood(Algorithm):
        def process(self, rank):
            sim, net = self.sim, self.sim.net
            n = sim.num_ranks
            inbox = net.inbox[rank]

            def drain():
                while True:
                    yield inbox.wait()
                    while inbox.items:
                        pkt = inbox.items.popleft()
                        net.consumed(pkt)
                        sim.apply(rank, [pkt.updates])

            sim.env.process(drain())
            while sim.streams[rank].remaining:
                value, _ = sim.streams[rank].take()
                yield from net.inject(net.make_packet(rank, (rank + n // 2) % n, 256, updates=value))

    yield "test-ring-flood"
    ALGORITHMS.pop("test-ring-flood")


def test_a_deadlocked_machine_is_reported_in_one_line_naming_the_waiting_ranks(capsys, ring_flood):
    # What if the torus had no deadlock avoidance? Traffic that all goes one way round a ring locks up.
    from gupsim.app.cli import main
    base = ["run", "--shape", "6x1x1", "--algorithm", "test-ring-flood", "--updates", "60",
            "--set", "network.topology=torus", "--set", "link_buffer_chunks=16", "--set", "injection_fifo_chunks=8", "--set", "reception_fifo_chunks=8"]
    with pytest.raises(SystemExit) as exc:
        main(base + ["--set", "flow_control=none"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.startswith("gupsim: error: deadlock at t=") and "ranks 0" in err and "packets stuck" in err
    assert len(err.strip().splitlines()) == 1
    main(base)  # the same run with the bubble rule completes, and reports its rate with an interval
    assert "95% CI" in capsys.readouterr().out


@pytest.mark.parametrize("algorithm", ["baseline", "one-packet", "routed"])
def test_adaptive_routing_loses_nothing_and_verifies(algorithm):
    from gupsim.config import load_machine

    machine = load_machine("bgl", {"network.routing": "adaptive", "network.topology": "torus"})
    sim, rec = _run(machine, algorithm, shape="4x4x2", updates=1200, verify=True)
    assert rec["updates_applied"] == 32 * 1200
    assert sim.verify().errors == 0
    assert sum(1 for c in sim.net._dynamic if c is not None) > 0  # the dynamic channels were used


def test_update_stream_matches_the_vectorised_hpcc_stream():
    from gupsim.model.run_config import UpdateStream

    for procs in (8, 12):
        layout = hpcc.TableLayout(20, procs)
        stream = UpdateStream(layout, 123_456, 500)
        taken = [stream.take() for _ in range(500)]
        values = hpcc.stream(123_456, 500)
        assert [v for v, _ in taken] == values.tolist()
        assert [o for _, o in taken] == layout.owner(values).tolist()
        assert stream.remaining == 0


def test_a_run_that_cannot_fit_in_memory_is_refused_before_it_starts(bgl, monkeypatch):
    from gupsim.topology import Topology

    def built(*_):  # refused from the estimate, before any per-node table is built
        raise AssertionError("a per-node table was built before the memory check")

    monkeypatch.setattr(Topology, "coords_array", built)
    monkeypatch.setattr(Topology, "_build_neighbor_table", built)
    with pytest.raises(GupsimError, match=r"^routed on 256x256x256 \(16,777,216 processes, 1 per node, SimPy engine\) "
                       r"needs about .* GB by gupsim's estimate, but only .* GB are available; .*\(or the fast engine"):
        simulate(make_run_config(machine=bgl, shape="256x256x256", algorithm="routed", updates_per_process=10,
                                 engine="simpy"))


def test_memory_estimate_refuses_when_little_is_available(bgl, monkeypatch):
    from gupsim.base import memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 200 * 2**20)
    with pytest.raises(GupsimError, match="needs about"):
        _run(bgl, "baseline", shape="4x4x4", updates=10)
    monkeypatch.setattr(memory, "available_bytes", lambda: 64 * 2**30)
    assert _run(bgl, "baseline", shape="4x4x4", updates=10)[0].memory_estimate_bytes < 64 * 2**30


def test_events_of_one_instant_pop_by_entity_then_in_the_entitys_own_order():
    """The canonical order (gupsim.engines.order): at equal times and phases the lower
    entity first, and an entity's own events in the order it scheduled them, whatever order the entities
    scheduled theirs in.  (SimPy's own order would give e5-first, e2, e5-second.)"""
    env = CountingEnvironment()
    popped = []

    def proc(name):
        yield env.timeout(1.0)
        popped.append(name)

    for entity, name in [(5, "e5-first"), (2, "e2"), (5, "e5-second")]:
        env.process(proc(name)).entity = entity
    env.run()
    assert popped == ["e2", "e5-first", "e5-second"]
    assert env.events_scheduled == 9  # three starts, three timeouts, three process ends


def test_a_timeout_handed_on_runs_as_the_entity_it_was_handed_to():
    """A credit return's timeout is scheduled by one entity and runs as its pool's owner: what it schedules
    is keyed by the owner."""
    env = CountingEnvironment()
    order = []
    done = env.timeout(1.0)  # made by entity 0 (setting up)
    done.entity = 7
    done.callbacks.append(lambda _e: env.timeout(0.0).callbacks.append(lambda _e: order.append(env.active_entity)))

    def other():
        yield env.timeout(1.0)
        yield env.timeout(0.0)
        order.append("entity 3")

    env.process(other()).entity = 3
    env.run()
    assert order == ["entity 3", 7]
