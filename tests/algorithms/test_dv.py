"""Data Vortex and InfiniBand (seed 003): configs, topologies, memory model, and reduced-size orderings."""

from __future__ import annotations

import yaml
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.engines.reference.networks import make_network
from gupsim.config import MACHINES_DIR, load_machine
from gupsim.model.dram import ProcessorMemory, update_rate
from gupsim.base.errors import GupsimError
from gupsim.config.overrides import parse_set_options
from gupsim.engines.run import make_run_config, simulate
from gupsim.topology import make_topology

from tests.conftest import reference

SWITCHED = ("hypatia-dv", "hypatia-ib", "dv-v3")


@pytest.fixture(scope="module")
def dv():
    return load_machine("hypatia-dv")


@pytest.fixture(scope="module")
def ib():
    return load_machine("hypatia-ib")


def _dv_run(machine, endpoints, updates=8192, **options):
    return simulate(make_run_config(machine=machine, shape=f"{endpoints}x1x1", algorithm="dv",
                                    updates_per_process=updates, log2_table_size=36, algorithm_options=options))


# ------------------------------------------------------------------ configs


@pytest.mark.parametrize("name", SWITCHED)
def test_switched_machines_load_and_every_number_has_a_source(name):
    load_machine(name)
    for line in (MACHINES_DIR / f"{name}.yaml").read_text().splitlines():
        key, _, rest = line.partition(":")
        value = rest.split("#")[0].strip()
        if value and value.replace(".", "").replace("e+", "").replace("-", "").isdigit():
            assert "#" in rest, f"{name}: no source comment on: {line.strip()}"


def test_hypatia_ib_and_dv_describe_the_same_processors_and_memory():
    a, b = (yaml.safe_load((MACHINES_DIR / f"{n}.yaml").read_text()) for n in ("hypatia-dv", "hypatia-ib"))
    assert a["memory"] == b["memory"]
    same = {k: v for k, v in a["cpu"].items() if k not in ("processors_per_endpoint", "processes_per_node")}
    assert same == {k: b["cpu"][k] for k in same}
    assert a["cpu"]["update_cycles"] == pytest.approx(a["memory"]["dram_latency_ns"] * a["cpu"]["clock_hz"] / 1e9, abs=1)


def test_bad_switched_input_is_one_line(tmp_path, dv):
    data = yaml.safe_load((MACHINES_DIR / "hypatia-dv.yaml").read_text())
    data["network"]["lanes_per_vic"] = 0
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(GupsimError, match="lanes_per_vic.*greater than or equal to 1"):
        load_machine(str(path))
    data["kind"] = "ring"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(GupsimError, match="unknown machine kind 'ring'; valid choices: torus, switched"):
        load_machine(str(path))
    # --set reaches the new sections; the torus keys keep their bare names unambiguous
    assert parse_set_options(["lanes_per_vic=8", "link_bytes_per_s=1e9"]) == {
        "network.lanes_per_vic": 8, "network.link_bytes_per_s": 1e9}
    assert load_machine("hypatia-dv", {"network.lanes_per_vic": 8}).network.lanes_per_vic == 8


@pytest.mark.parametrize("override", [{"network.deflection_delay_ns": 1e-9},
                                      {"network.lane_coding_efficiency": 1e-9}])
def test_a_deflection_round_vanishing_against_a_packet_time_is_refused(override):
    """Such a run had hung: a waiting packet came round again every 1e-9 ns, millions of rounds per packet."""
    with pytest.raises(GupsimError, match=r"deflection_delay_ns=.* is under 1/1,000 of a packet's time"):
        load_machine("hypatia-dv", override)


def test_the_shortest_deflection_round_allowed_still_runs():
    packet_ns = load_machine("hypatia-dv").network.lane_packet_s * 1e9
    at_limit = load_machine("hypatia-dv", {"network.deflection_delay_ns": packet_ns / 1000})
    assert _dv_run(at_limit, 4, updates=256)[1]["updates_applied"] == 4 * 256


def test_algorithms_refuse_networks_they_cannot_drive(dv, bgl):
    with pytest.raises(GupsimError, match="algorithm one-packet does not run on a data-vortex network"):
        simulate(make_run_config(machine=dv, shape="4x1x1", algorithm="one-packet", updates_per_process=64))
    with pytest.raises(GupsimError, match="algorithm baseline needs MPI costs"):
        simulate(make_run_config(machine=load_machine("hypatia-ib", {"mpi": None}),
                                 shape="4x1x1", algorithm="baseline", updates_per_process=64))
    with pytest.raises(GupsimError, match="algorithm dv does not run on a mesh network"):
        simulate(make_run_config(machine=bgl, shape="2x2x1", algorithm="dv", updates_per_process=64))
    with pytest.raises(GupsimError, match="do not fit the 4 cores"):
        _dv_run(dv, 4, 64, send_threads=2, update_threads=3)


# ------------------------------------------------------------------ topologies


def test_data_vortex_levels_and_routes(dv):
    one = make_topology("data-vortex", "64x1x1", dv.network)
    assert one.levels == 1 and one.route(3, 9) == [3, 64 + 9] and one.mean_hops == 1
    two = make_topology("data-vortex", "2048x1x1", dv.network)
    assert two.levels == 2 and two.groups == 64 and two.uplinks == 32
    route = two.route(0, 2047)
    assert len(route) == 4 and len(set(route)) == 4 and max(route) < two.num_link_slots
    assert two.route(0, 31) == [0, 2048 + 31]  # same first-level chip
    with pytest.raises(GupsimError, match="at most 2048"):
        make_topology("data-vortex", "4096x1x1", dv.network)


def test_fat_tree_one_switch_up_to_36_ports(ib):
    assert make_topology("fat-tree", "32x1x1", ib.network).levels == 1
    big = make_topology("fat-tree", "100x1x1", ib.network)
    assert big.levels == 2 and big.group_size == 18 and big.diameter == 3


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 2048), a=st.integers(0, 10**6), b=st.integers(0, 10**6))
def test_switched_routes_start_and_end_at_the_endpoints(dv, n, a, b):
    topo = make_topology("data-vortex", f"{n}x1x1", dv.network)
    src, dst = a % n, b % n
    route = topo.route(src, dst)
    assert route[0] == src and route[-1] == n + dst
    assert len(route) == 1 + topo.hops(src, dst)
    assert all(0 <= link < topo.num_link_slots for link in route)


# ------------------------------------------------------------------ memory model


@settings(max_examples=50, deadline=None)
@given(threads=st.integers(1, 8), count=st.integers(1, 3000), cap=st.floats(1, 80))
def test_memory_never_beats_littles_law(dv, threads, count, cap):
    mem_cfg = dv.memory.model_copy(update={"outstanding_misses_per_processor": cap})
    mem = ProcessorMemory(mem_cfg, threads, dv.cpu.clock_hz, dv.cpu.update_issue_cycles)
    issued, done = mem.batch(0.0, count)
    rate = update_rate(mem_cfg, threads, dv.cpu.clock_hz, dv.cpu.update_issue_cycles)
    assert done >= (count - 1) / rate + mem.latency_s * 0.999
    assert issued <= done


def test_more_update_threads_give_strongly_diminishing_returns(dv):
    rates = [_dv_run(dv, 8, 8192, update_threads=t)[1]["gups"] for t in (1, 2, 3)]
    assert rates[0] < rates[1]
    assert rates[2] == pytest.approx(rates[1], rel=0.03)  # the processor's cap, not the cores
    assert rates[1] / rates[0] < 1.5  # far from the 2x a second core would give


# ------------------------------------------------------------------ reduced-size orderings and ratios


def test_dv_scales_linearly_and_tracks_the_memory_limit(dv):
    small, big = (_dv_run(dv, n)[1] for n in (8, 32))
    per = update_rate(dv.memory, 3, dv.cpu.clock_hz, dv.cpu.update_issue_cycles)
    for rec, n in ((small, 8), (big, 32)):
        assert rec["gups"] == pytest.approx(n * per / 1e9, rel=0.05)
        assert rec["link_utilisation_max"] < 0.5  # lanes far from full: memory limits
    assert big["gups"] / small["gups"] == pytest.approx(4, rel=0.05)


def test_data_vortex_beats_infiniband_by_two_orders_at_equal_cores(dv, ib):
    cores = 16
    ib_rec = simulate(make_run_config(machine=ib, shape="2x1x1", algorithm="baseline", updates_per_process=4096,
                                      log2_table_size=36))[1]
    dv_rec = _dv_run(dv, cores // dv.cpu.cores_per_processor)[1]
    ratio = dv_rec["gups"] / ib_rec["gups"]
    assert 100 < ratio < 600
    assert ib_rec["updates_per_message"] > 10  # HPCC's buckets aggregate; DV sends one packet per update
    assert dv_rec["updates_per_packet"] == 1


def test_dv_respects_the_look_ahead_rule_and_applies_every_update(dv):
    sim, rec = _dv_run(dv, 4, 4096, buffer_updates=512)
    assert rec["updates_applied"] == 4 * 4096
    assert 0 < rec["alg_max_pending"] <= 1024
    with pytest.raises(GupsimError, match="buffer_updates"):
        _dv_run(dv, 4, 64, buffer_updates=513)


def test_dv_verifies_and_is_deterministic(dv):
    cfg = make_run_config(machine=dv, shape="4x1x1", algorithm="dv", updates_per_process=1500, verify=True)
    sim, rec = simulate(cfg)
    assert sim.verify().passed
    again = simulate(cfg)[1]
    assert (rec["gups"], rec["sim_time_s"], rec["events"]) == (again["gups"], again["sim_time_s"], again["events"])


def test_reference_table_is_read_not_retyped():
    ref = reference("dv_hypatia.csv")
    assert {"system", "network", "gups"} <= set(ref.columns) and len(ref) == 3


# ------------------------------------------------------------------ the switch itself


def _vortex(machine, endpoints):
    import simpy

    topo = make_topology("data-vortex", f"{endpoints}x1x1", machine.network)
    return simpy.Environment(), topo


@pytest.mark.parametrize("endpoints", [16, 256])
def test_hot_spot_deflects_but_the_port_never_idles_or_overlaps(dv, endpoints):
    """Everyone sends to endpoint 0: the ports serialise, deflection adds latency, throughput does not collapse."""
    env, topo = _vortex(dv, endpoints)
    net = make_network(env, topo, dv, 1)
    per_sender = 64
    for src in range(1, endpoints):
        net.send(src, [0] * per_sender, list(range(per_sender)), 0.0, 0.0)
    arrivals = sorted(a for a, *_ in net._arrivals[0])
    n = per_sender * (endpoints - 1)
    lanes, pkt_s = dv.network.lanes_per_vic, dv.network.lane_packet_s
    assert len(arrivals) == n and net.deflections > 0
    # the destination's 16 ports deliver at most one packet per packet time each ...
    assert arrivals[-1] - arrivals[0] >= (n / lanes - 1) * pkt_s * 0.999
    # ... and stay busy: the last arrives within a few percent of that bound plus the path latency
    assert arrivals[-1] <= n / lanes * pkt_s * 1.05 + 4 * (pkt_s + dv.network.switch_level_delay_ns * 1e-9)
    for cal in net._calendar.values():
        assert all(b - a >= pkt_s * (1 - 1e-9) for a, b in zip(cal, cal[1:]))


def test_uniform_traffic_at_half_load_is_deflected_rarely_and_keeps_latency_low(dv):
    env, topo = _vortex(dv, 64)
    net = make_network(env, topo, dv, 1)
    import random

    rng = random.Random(1)
    pkt_s, lanes = dv.network.lane_packet_s, dv.network.lanes_per_vic
    for src in range(64):
        dests = [rng.randrange(64) for _ in range(256)]
        net.send(src, dests, dests, 0.0, 2 * pkt_s / lanes)  # every port half loaded
    assert net.deflections / net.packets_injected < 1
    assert net.latency_sum_s / net.packets_injected < 2 * pkt_s + dv.network.switch_level_delay_ns * 1e-9 + 5 * pkt_s


@pytest.mark.slow
def test_yaml_mpi_test_cycles_is_the_fit_on_the_ib_row():
    from gupsim.studies.validation import load_experiment

    ref = reference("dv_hypatia.csv")
    row = ref[ref["network"].str.contains("InfiniBand")].iloc[0]
    fitted = load_experiment("dv-hypatia").fit_test_cycles(float(row["gups"]), int(row["processors"]) // 2)
    assert load_machine("hypatia-ib").mpi.test_cycles == pytest.approx(fitted, rel=0.02)
