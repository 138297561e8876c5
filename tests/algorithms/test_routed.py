"""The software-routed algorithm: correctness, aggregation and the hop count it implies."""

from __future__ import annotations

import pytest

from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, simulate


def _run(machine, shape, updates, **kw):
    return simulate(make_run_config(machine=machine, shape=shape, algorithm="routed", updates_per_process=updates, **kw))


@pytest.fixture(scope="module")
def bgl_vn():
    return load_machine("bgl", {"cpu.processes_per_node": 2})


@pytest.mark.parametrize("shape", ["2x2x2", "3x2x2", "4x1x1"])
@pytest.mark.parametrize("mode", ["co", "vn"])
def test_routed_loses_nothing_and_verifies(bgl, bgl_vn, shape, mode):
    machine = bgl if mode == "co" else bgl_vn
    sim, rec = _run(machine, shape, 1200, verify=True)
    assert rec["updates_generated"] == rec["updates_applied"] == sim.num_ranks * 1200
    assert sim.verify().errors == 0


def test_bucket_capacity_is_1024_over_the_routers(bgl, bgl_vn):
    assert _run(bgl, "4x4x2", 200)[0].algorithm.capacity == 1024 // 10
    assert _run(bgl_vn, "4x4x2", 200)[0].algorithm.capacity == 1024 // 12  # the core is a fourth dimension


@pytest.mark.parametrize("shape", ["4x4x2", "4x2x2"])
def test_software_hops_match_the_dimension_order_expectation(bgl, shape):
    # Seed 000 §6.2: on 4x4x2 an update needs 3/4 + 3/4 + 1/2 = 2 software hops on average.
    sim, rec = _run(bgl, shape, 3000)
    expected = sum((length - 1) / length for length in sim.topology.shape)
    assert rec["alg_software_hops_per_update"] == pytest.approx(expected, rel=0.03)


def test_routing_packs_more_updates_per_packet_than_the_baseline(bgl):
    # Even at 64 nodes, where the baseline still aggregates 32 updates per message on average.
    sim, routed = _run(bgl, "4x4x4", 2048)
    base = simulate(make_run_config(machine=bgl, shape="4x4x4", algorithm="baseline", updates_per_process=2048))[1]
    assert routed["updates_per_packet"] > base["updates_per_packet"]
    assert routed["updates_per_packet"] > 0.75 * min(sim.algorithm.capacity, sim.algorithm.per_packet)


def test_routed_is_deterministic(bgl):
    a, b = (_run(bgl, "3x2x2", 800, seed=2)[1] for _ in range(2))
    volatile = {"wall_s", "peak_rss_mb", "events_per_s", "compile_s"}
    assert {k: v for k, v in a.items() if k not in volatile} == {k: v for k, v in b.items() if k not in volatile}


def test_pending_updates_stay_within_1024(bgl, monkeypatch):
    from gupsim.engines.reference.simulation import Simulation

    seen = []
    original = Simulation.check_pending
    monkeypatch.setattr(Simulation, "check_pending", lambda self, r, p: (seen.append(p), original(self, r, p)))
    _run(bgl, "4x4x2", 1500, engine="simpy")  # the reference's check (the fast kernel keeps its own count)
    assert seen and max(seen) <= 1024


def test_route_hop_cost_in_the_machine_is_the_fit_on_the_named_row(bgl):
    # cpu.route_hop_cycles was fitted so that 4x4x2 (Table 4, N = 32) costs 360 cycles per update.  The fit is
    # a line through a grid of per-hop costs, because one run jitters about that line (bgl_table4.
    # fit_route_hop_cycles; on its grid, 3.5 cycles rms and 6.9 at most), so the run at the fitted cost is held
    # to that jitter: 3% (the fitted 112.6 ran 364.9, +1.4%).
    rec = _run(bgl, "4x4x2", 4096)[1]
    assert rec["cycles_per_update"] == pytest.approx(360, rel=0.03)


def test_virtual_node_mode_gains_about_70_percent_on_a_cpu_bound_machine(bgl, bgl_vn):
    # Seed 000 §6.2: about +70% for N <= 8192, where the benchmark is CPU bound.
    co = _run(bgl, "4x4x2", 2048)[1]["gups"]
    vn = _run(bgl_vn, "4x4x2", 2048)[1]["gups"]
    assert 1.4 < vn / co < 2.0


def test_one_shared_receive_bucket_deadlocks_and_is_reported_naming_the_waiting_ranks(capsys):
    """Per-dimension receive buckets order the waits (an update only moves to a higher dimension);
    one shared bucket does not, and with one-packet FIFOs the machine locks up.  The same machine with
    per-dimension buckets finishes (the negative control that shows the deadlock is the shared bucket's).
    Both have FIFOs per dimension, so the shared FIFO's own deadlock (the test below) is not in play; 100
    updates per bucket locks up at any per-hop cost from 100 to 130 cycles, 60 only at some."""
    import pytest

    from gupsim.app.cli import main
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config, simulate

    tiny = {"network.injection_fifo_chunks": 8, "network.reception_fifo_chunks": 8,
            "network.link_buffer_chunks": 8, "network.topology": "mesh", "network.fifos": "per-dimension"}
    argv = ["run", "--shape", "4x4x1", "--algorithm", "routed", "--updates", "1024",
            "--option", "bucket_capacity=100", "--option", "receive_buckets=shared"]
    argv += [f"--set={k}={v}" for k, v in tiny.items()]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("gupsim: error: deadlock at t=") and "wait on each other (ranks 0, 1" in err
    _, record = simulate(make_run_config(machine=load_machine("bgl", tiny), shape="4x4x1", algorithm="routed",
                                         updates_per_process=1024, algorithm_options={"bucket_capacity": 100}))
    assert record["updates_applied"] == 16 * 1024


def test_a_bucket_capacity_that_breaks_the_1024_pending_rule_is_refused(bgl):
    import pytest

    from gupsim.base.errors import GupsimError
    from gupsim.engines.run import make_run_config, simulate

    with pytest.raises(GupsimError, match="exceeds the 1024 pending updates"):
        simulate(make_run_config(machine=bgl, shape="4x4x1", algorithm="routed", updates_per_process=64,
                                 algorithm_options={"bucket_capacity": 240}))


def test_shared_fifos_deadlock_routed_once_the_network_binds_and_fifos_per_dimension_do_not():
    """Seed 000 §4.3's deadlock argument (an update only moves to a higher dimension) needs the
    injection and reception FIFOs of the dimensions to be separate, as its pseudo-code's "can send a
    packet on dim" has them.  With one shared FIFO, x-packets a node cannot yet receive fill it and stop
    the z-packets that would drain the machine.  Slow links (1/16 of BG/L's) make the network bind."""
    import pytest

    from gupsim.config import load_machine
    from gupsim.base.errors import DeadlockError
    from gupsim.engines.run import make_run_config, simulate

    def run(fifos):
        machine = load_machine("bgl", {"network.link_bytes_per_s": 175e6 / 16, "network.fifos": fifos})
        return simulate(make_run_config(machine=machine, shape="16x2x2", algorithm="routed",
                                        updates_per_process=1024))[1]

    with pytest.raises(DeadlockError, match=r"deadlock.*--set network\.fifos=per-dimension"):
        run("shared")
    record = run("per-dimension")
    assert record["updates_applied"] == 64 * 1024
    assert record["send_blocking_factor"] > 0.5  # the network does bind


def test_machine_file_holds_the_fitted_route_hop_cycles(bgl):
    """bgl.yaml's cpu.route_hop_cycles is what the documented fit on Table 4's N = 32 row gives."""
    from gupsim.studies.validation import load_experiment

    table4 = load_experiment("bgl-table4")
    assert table4.fit_route_hop_cycles(360.0) == pytest.approx(bgl.cpu.route_hop_cycles, abs=0.1)


@pytest.mark.parametrize("engine", ["fast", "simpy"])
def test_spinning_passes_count_in_the_polled_sbf_and_change_no_timing(engine):
    """A waiting process sleeps in the model; the passes a real loop spins meanwhile count as blocked send
    tests in ``send_blocking_factor_polled`` only, in proportion to how cheap a pass is, and change nothing
    else.  Links at 1/16 of BG/L's make the 4x4x2 mesh network-bound, so processes do wait."""
    def record(poll_cycles):
        machine = load_machine("bgl", {"network.link_bytes_per_s": 175e6 / 16,
                                       "cpu.poll_cycles_per_dimension": poll_cycles})
        _, rec = simulate(make_run_config(machine=machine, shape="4x4x2", algorithm="routed",
                                          updates_per_process=256, engine=engine))
        return rec

    cheap, dear = record(40), record(400)
    polled = {"alg_send_blocking_factor_polled", "alg_blocked_polls", "config", "wall_s", "peak_rss_mb",
              "events_per_s", "compile_s"}  # the config differs in the poll cost itself
    assert {k: v for k, v in cheap.items() if k not in polled} == {k: v for k, v in dear.items() if k not in polled}
    assert cheap["alg_blocked_polls"] > 5 * dear["alg_blocked_polls"] > 0
    assert cheap["alg_send_blocking_factor_polled"] > dear["alg_send_blocking_factor_polled"]
    assert cheap["alg_send_blocking_factor_polled"] > cheap["send_blocking_factor"]
