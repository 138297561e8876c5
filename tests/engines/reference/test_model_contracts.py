"""Behaviour the rest of the suite did not pin (found by hand-made mutation testing).

Every expectation here is derived by hand from the model's documented rules
(docs in the module docstrings) on a tiny machine: closed-form timings,
conservation, definitions of the reported metrics.  None is a number copied
from a run or from the published tables.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import simpy

from gupsim.model import hpcc
from gupsim.engines.reference.networks import make_network
from gupsim.config import load_machine
from gupsim.base.errors import GupsimError, SimulationError
from gupsim.engines.reference.torus_network import Credits, Network
from gupsim.engines.run import make_run_config, simulate
from gupsim.engines.reference.simulation import Simulation
from gupsim.topology import make_topology


def _net(kind="mesh", shape=(4, 1, 1), ppn=1, **sets):
    machine = load_machine("bgl", {f"network.{k}": v for k, v in sets.items()})
    env = simpy.Environment()
    return env, Network(env, make_topology(kind, shape), machine.network, ppn), machine.network


def _sim(machine, shape, algorithm, updates, **kw):
    return Simulation(make_run_config(machine=machine, shape=shape, algorithm=algorithm,
                                      updates_per_process=updates, **kw))


# ------------------------------------------------------------------ network.py: credits and flow control


def test_a_packet_may_not_take_room_ahead_of_a_waiter():
    """Credits are granted in order: room freed while a packet waits is its, not a newcomer's."""
    env = simpy.Environment()
    buf = Credits(env, 8)
    assert buf.take(8)
    first = buf.wait(4)                 # continues along the ring, waits for 4 chunks
    buf.give(2)                         # 2 free: not enough for the waiter ...
    assert not buf.take(2)              # ... and a later packet may not overtake it
    assert buf.free == 2 and not first.triggered
    buf.give(2)                         # 4 free: the waiter gets them
    assert first.triggered and buf.free == 0


def test_injection_fifo_room_comes_back_when_the_tail_has_left_not_when_the_head_starts():
    """A one-packet injection FIFO: the second inject returns when the first packet's last byte has left."""
    env, net, cfg = _net(injection_fifo_chunks=8)
    returned = []

    def sender():
        for _ in range(2):
            yield from net.inject(net.make_packet(0, 1, 256))
            returned.append(env.now)

    def consumer():
        while True:
            yield net.inbox[1].wait()
            while net.inbox[1].items:
                net.consumed(net.inbox[1].items.popleft())

    env.process(consumer())
    env.process(sender())
    env.run(until=1e-3)
    serial = (256 + cfg.packet_header_bytes + cfg.packet_trailer_bytes) / cfg.link_bytes_per_s
    assert returned == [0.0, pytest.approx(serial, rel=1e-12)]


def test_adaptive_packet_reentering_the_escape_ring_from_a_dynamic_channel_needs_the_bubble():
    """Network docstring: a packet on a dynamic channel that falls back to the escape ring *enters* it, so it
    must leave a full packet's room free behind it (the bubble), even in the dimension it was in before.

    8-node ring, one 1-chunk packet 0 -> 3 (only + is minimal).  Hop 0->1: the dynamic channel is full, the
    packet enters the escape ring (bubble).  Hop 1->2: dynamic channel.  Hop 2->3: dynamic channel full, escape
    buffer has room for the packet (1 chunk) but not for it plus the bubble (8 chunks): it must wait."""
    env, net, cfg = _net("torus", (8, 1, 1), routing="adaptive")
    topo = net.topology
    plus = [topo.link_id(n, 0) for n in range(3)]  # +x links 0->1, 1->2, 2->3
    assert [net._link_dst[link] for link in plus] == [1, 2, 3]
    for link in (plus[0], plus[2]):
        full = net._dynamic[link] = Credits(env, cfg.link_buffer_chunks)
        full.free = 0
    escape = net.escape_buffer(plus[2])
    assert escape.take(cfg.link_buffer_chunks - 1)  # one chunk left free
    pkt = net.make_packet(0, 3, 8)
    assert pkt.chunks == 1 and net.router.bubble == cfg.max_chunks_per_packet
    assert net.try_inject(pkt)
    env.run(until=1e-3)  # a 3-hop packet needs under a microsecond: it is held by the bubble rule
    assert net.packets_delivered == 0
    assert net._dynamic[plus[1]] is not None and net._dynamic[plus[1]].free < cfg.link_buffer_chunks
    escape.give(cfg.link_buffer_chunks - 1)  # room for the packet and the bubble
    env.run(until=2e-3)
    assert net.packets_delivered == 1
    assert net.inbox[3].items[0] is pkt


# ------------------------------------------------------------------ network.py: FIFOs per dimension


def test_fifos_per_dimension_inject_and_receive_by_the_dimension_of_the_route():
    """Seed 000 §4.3: a packet enters the injection FIFO of its route's first dimension and the reception FIFO
    of the dimension it arrives along; a packet between two cores of one node uses the node-local FIFOs."""
    env, net, _ = _net("mesh", (2, 2, 1), ppn=2, fifos="per-dimension")
    g = net.fifo_groups
    assert g == 4  # x, y, z and node-local
    topo = net.topology
    y_nbr = topo.node_id((0, 1, 0))
    x_pkt = net.make_packet(0, 2 * topo.node_id((1, 0, 0)), 8)     # rank 0 (node 0) -> a rank on +x
    y_pkt = net.make_packet(0, 2 * y_nbr + 1, 8)                   # rank 0 -> core 1 of the +y node
    local = net.make_packet(0, 1, 8)                               # core 0 -> core 1 of node 0
    assert net.injection_fifo(x_pkt) is net.injection[0 * g + 0]
    assert net.injection_fifo(y_pkt) is net.injection[0 * g + 1]
    assert net.injection_fifo(local) is net.injection[0 * g + g - 1]
    for pkt in (x_pkt, y_pkt, local):
        assert net.try_inject(pkt)
    env.run(until=1e-3)
    assert net.packets_delivered == 3
    assert x_pkt.rx_fifo is net.reception[x_pkt.dst * g + 0]
    assert y_pkt.rx_fifo is net.reception[y_pkt.dst * g + 1]
    assert local.rx_fifo is net.reception[1 * g + g - 1]


# ------------------------------------------------------------------ simulation.py: bookkeeping and checks


def test_window_marks_fall_on_the_update_that_crosses_25_and_75_percent_at_the_cpus_time(bgl):
    """The window opens when ceil(25%) of all updates have been applied, at the time the applying CPU's spent
    cycles run out (now + its debt), and closes likewise at ceil(75%)."""
    sim = _sim(bgl, "2x1x1", "one-packet", 4)  # 8 updates: marks at 2 and 6
    sim.apply(0, [1])
    assert sim.window_times == []
    sim.apply(0, [1], delay_s=1e-6)  # the 2nd update: the window opens 1 us from now
    assert sim.window_times == [1e-6]
    sim.apply(1, [1, 1, 1])          # 5 applied
    assert len(sim.window_times) == 1
    sim.apply(1, [1, 1], delay_s=2e-6)  # 5 -> 7 crosses 6
    assert sim.window_times == [1e-6, 2e-6]
    assert len(sim.window_counters) == 2


def test_an_update_applied_past_the_total_is_an_error(bgl):
    sim = _sim(bgl, "2x1x1", "one-packet", 1)
    sim.apply(0, [1])
    sim.apply(1, [1])
    assert sim.all_applied.triggered
    with pytest.raises(SimulationError, match="more updates applied than generated"):
        sim.apply(0, [1])


def test_with_verify_an_update_applied_by_a_rank_that_does_not_own_it_is_an_error(bgl):
    sim = _sim(bgl, "2x1x1", "one-packet", 4, verify=True)
    value = next(int(v) for v in hpcc.stream(0, 1000) if sim.layout.owner_of(int(v)) == 1)
    with pytest.raises(SimulationError, match="rank 0 applied an update owned by rank 1"):
        sim.apply(0, [value])
    sim.apply(1, [value])  # its owner may


def test_a_stretch_that_ends_exactly_at_its_slice_end_runs_and_one_more_update_is_refused(bgl):
    """2^5 words over 6 processes: ranks 0-1 hold 6 words, ranks 2-5 hold 5.  A rank's slice is 4 x its words
    and its stretch starts int(0.618... x slice) in: ranks 2-5 have 20 - int(12.36) = 8 updates of room,
    ranks 0-1 have 24 - int(14.83) = 10.  8 updates fit exactly; 9 run past rank 2 first, which the runner
    (and so a sweep's validation) refuses before choosing an engine, naming rank 2 on either engine."""
    from gupsim.engines.run import preflight

    def cfg(updates, engine="auto"):
        return make_run_config(machine=bgl, shape="6x1x1", algorithm="one-packet", updates_per_process=updates,
                               log2_table_size=5, engine=engine)

    layout = hpcc.TableLayout(5, 6)
    assert (layout.remainder, layout.local_size(0), layout.local_size(2)) == (2, 6, 5)
    _, rec = simulate(cfg(8))
    assert rec["updates_applied"] == 6 * 8
    with pytest.raises(GupsimError, match="runs past rank 2's HPCC slice"):
        preflight(cfg(9))
    for engine in ("fast", "simpy"):
        with pytest.raises(GupsimError, match="runs past rank 2's HPCC slice"):
            simulate(cfg(9, engine))


def test_one_table_word_per_process_is_a_valid_table(bgl):
    """HPCC needs at least one word per process: 2^3 words on 8 processes is allowed (and verifies)."""
    # slice 4 words x 4 = 4, stretch from int(0.618 x 4) = 2: room for 2 updates
    sim, rec = simulate(make_run_config(machine=bgl, shape="2x2x2", algorithm="one-packet", updates_per_process=2,
                                       log2_table_size=3, verify=True))
    assert rec["updates_applied"] == 16 and sim.verify().errors == 0


# ------------------------------------------------------------------ runner.py: the record's metrics


@pytest.fixture(scope="module")
def vn_one_packet():
    machine = load_machine("bgl", {"cpu.processes_per_node": 2})
    return simulate(make_run_config(machine=machine, shape="2x2x2", algorithm="one-packet",
                                    updates_per_process=600))


def test_cycles_per_update_counts_every_process_in_virtual_node_mode(vn_one_packet):
    sim, rec = vn_one_packet
    assert sim.num_ranks == 16
    rate = rec["gups"] * 1e9
    assert rec["cycles_per_update"] == pytest.approx(16 * sim.machine.cpu.clock_hz / rate, rel=1e-12)


def test_gups_total_is_all_updates_over_the_whole_run(vn_one_packet):
    _, rec = vn_one_packet
    assert rec["gups_total"] == pytest.approx(16 * 600 / rec["sim_time_s"] / 1e9, rel=1e-12)
    assert rec["gups_total"] < rec["gups"]  # the whole run includes warm-up and drain


@pytest.mark.parametrize("engine", ["fast", "simpy"])
def test_bytes_per_update_is_wire_bytes_over_all_updates_local_ones_included(bgl, engine):
    """One-packet: one 44-byte packet (32 B chunk + 8 B header + 4 B trailer) per remote update, none per local."""
    sim, rec = simulate(make_run_config(machine=bgl, shape="2x2x2", algorithm="one-packet", updates_per_process=400,
                                        engine=engine))
    outcome = sim.outcome()
    remote = outcome.packets_injected
    assert 0 < remote < 8 * 400  # some updates were local
    assert outcome.wire_bytes_injected == 44 * remote
    assert rec["bytes_per_update"] == pytest.approx(44 * remote / (8 * 400), rel=1e-12)


def test_link_utilisation_mean_is_over_the_partitions_links_only(bgl):
    """A 2x2x2 mesh has 3 dimensions x 4 node pairs x 2 directions = 24 directed links.  A link is busy for
    its wire bytes over the link rate, so the mean utilisation is total link bytes / rate / (24 x run time)."""
    sim, rec = simulate(make_run_config(machine=bgl, shape="2x2x2", algorithm="one-packet", updates_per_process=400))
    assert sim.topology.kind == "mesh"
    busy = float(sum(int(b) for b in sim.outcome().links["bytes"])) / bgl.network.link_bytes_per_s
    t = rec["sim_time_s"]
    assert rec["link_utilisation_mean"] == pytest.approx(busy / (24 * t), rel=1e-9)
    assert rec["link_utilisation_mean"] < rec["link_utilisation_max"] <= 1


def test_the_record_refuses_a_run_that_lost_updates():
    from gupsim.engines.run import _check_counts

    _check_counts(SimpleNamespace(updates_applied=10, updates_generated=10, total_updates=10, precision_reached=False))
    for applied, generated in ((9, 10), (10, 9)):
        with pytest.raises(SimulationError, match="updates lost"):
            _check_counts(SimpleNamespace(updates_applied=applied, updates_generated=generated, total_updates=10,
                                          precision_reached=False))
    # a run its stopping rule ended has updates in flight, but never more applied than generated
    _check_counts(SimpleNamespace(updates_applied=6, updates_generated=8, total_updates=10, precision_reached=True))
    with pytest.raises(SimulationError, match="updates lost"):
        _check_counts(SimpleNamespace(updates_applied=9, updates_generated=8, total_updates=10, precision_reached=True))


def test_deadlock_report_counts_only_the_packets_still_in_the_network():
    """Three 8-chunk packets to a rank that never reads, with an 8-chunk reception FIFO: one is delivered into
    the FIFO, two are stuck in the network."""
    machine = load_machine("bgl", {"network.reception_fifo_chunks": 8})
    sim = _sim(machine, "2x1x1", "one-packet", 4)
    net = sim.net
    for _ in range(3):
        assert net.try_inject(net.make_packet(0, 1, 256))
    sim.env.run()
    assert (net.packets_injected, net.packets_delivered) == (3, 1)
    assert "2 packets stuck in the network" in str(sim.deadlock([]))
    assert "2 processes wait on each other (ranks 0, 1);" in str(sim.deadlock([]))
    while sim.streams[0].remaining:
        sim.streams[0].take()
    assert "1 process waits on the others (rank 1);" in str(sim.deadlock([]))


def test_termination_messages_on_the_reference_engine_wait_for_every_finished_message(bgl):
    sim, rec = simulate(make_run_config(machine=bgl, shape="2x2x2", algorithm="baseline", updates_per_process=300,
                                        algorithm_options={"termination": "messages"}, engine="simpy"))
    assert rec["engine"] == "simpy" and rec["updates_applied"] == 8 * 300
    assert sim.algorithm.finished_ranks == 8  # every rank got the 7 others' FINISHED


# ------------------------------------------------------------------ algorithms: baseline


def test_baseline_splits_a_message_into_full_packets_and_one_partial(bgl):
    """A message is 8 B per update + the MPI header (16 B); a packet carries at most 8 x 32 = 256 B."""
    sim = _sim(bgl, "2x1x1", "baseline", 4)
    alg = sim.algorithm
    assert alg._message_bytes(30) == 256 and alg._packet_payloads(256) == [256]  # exactly one full packet
    assert alg._message_bytes(31) == 264 and alg._packet_payloads(264) == [256, 8]
    assert alg._packet_payloads(512) == [256, 256]
    # HPCC's FINISHED message carries one 8-byte word (its last random number)
    assert alg._message_bytes(0) == 8 + bgl.mpi.header_bytes


@pytest.mark.parametrize("algorithm, updates", [
    ("baseline", 300),    # seed 000 §6.1: blocked send tests over all
    ("one-packet", 200),  # blocked sends over all sends
])
def test_send_blocking_factor_is_blocked_over_all(algorithm, updates):
    """The SBF's definition, on runs whose slow links fill the FIFOs so that many sends block."""
    machine = load_machine("bgl", {"network.link_bytes_per_s": 2e6})
    sim, rec = simulate(make_run_config(machine=machine, shape="2x2x2", algorithm=algorithm,
                                        updates_per_process=updates))
    totals = sim.outcome().totals
    n_blocked, n_tried = totals["send_tests_blocked"], totals["send_tests"]
    assert 0 < n_blocked < n_tried
    assert rec["send_blocking_factor"] == pytest.approx(n_blocked / n_tried, rel=1e-12)


def test_baseline_blocked_send_test_counts_the_spins_that_fit_in_the_wait(bgl):
    """While its one send is outstanding the real loop spins (a receive test and a send test per spin); the
    model waits instead and counts floor(wait / (2 t_test)) more blocked send tests, as seed 000 §6.1 counts."""
    from gupsim.model.bucketing import Buckets

    sim = _sim(bgl, "2x1x1", "baseline", 4)
    env, alg, cpu = sim.env, sim.algorithm, sim.cpus[0]
    send_done = 1e-4

    def outstanding_isend():
        yield env.timeout(send_done)

    state = {"outreq": env.process(outstanding_isend()), "finished": 0}
    buckets = Buckets()
    buckets.add(1, 5)
    env.process(alg._test_and_send(0, cpu, buckets, state))
    env.run(until=2 * send_done)
    test_s = sim.cost.mpi_test * cpu.cycle_s  # the send test itself, then the wait
    spins = math.floor((send_done - test_s) / (2 * sim.cost.mpi_test * cpu.cycle_s))
    assert spins > 10
    assert (alg.send_tests, alg.send_tests_blocked) == (1 + spins, 1 + spins)
    assert alg.messages_sent == 0  # nothing was sent: the test found the send still running


# ------------------------------------------------------------------ algorithms: reception FIFO room


def _one_arrived_packet(sim, payload, **pkt_fields):
    """A packet from rank 1 that has arrived in rank 0's reception FIFO (holding its room there)."""
    net = sim.net
    pkt = net.make_packet(1, 0, payload, **pkt_fields)
    rec = pkt.rx_fifo = net.reception[0 * net.fifo_groups + 0]
    assert rec.take(pkt.chunks)
    net.inbox[0].items.append(pkt)
    return pkt, rec


@pytest.mark.parametrize("algorithm", ["baseline", "one-packet", "routed"])
def test_reception_fifo_room_is_freed_only_once_the_cpu_has_read_the_packet(bgl, algorithm):
    """Every algorithm's receive step: the packet's room in the reception FIFO comes back when the receiving
    CPU's cycles for it have run out, not when it starts reading."""
    sim = _sim(bgl, "2x1x1", algorithm, 4)
    alg, cpu = sim.algorithm, sim.cpus[0]
    owned = next(int(v) for v in hpcc.stream(0, 1000) if sim.layout.owner_of(int(v)) == 0)
    if algorithm == "baseline":
        from gupsim.algorithms.baseline import Message

        pkt, rec = _one_arrived_packet(sim, 24, message=Message([owned], 24, 1))
        alg._receive(0, cpu)
    elif algorithm == "one-packet":
        pkt, rec = _one_arrived_packet(sim, 8, updates=owned)
        alg._receive(0, cpu)
    else:
        from gupsim.algorithms.routed import _Rank

        pkt, rec = _one_arrived_packet(sim, 24, updates=[(owned, 0)], message=0)
        alg._receive_logic(0, _Rank(alg.ndims, alg._rank_coords(0)), cpu)
    assert sim.applied == 1
    # baseline and one-packet copy the packet out as part of handling it; routed copies it into its receive
    # bucket (the raw receive) and then routes the updates out of that bucket
    copied_s = cpu.debt_s if algorithm != "routed" else sim.cost.raw_recv(pkt.payload) * cpu.cycle_s
    assert copied_s > 0
    assert rec.free == rec.capacity - pkt.chunks  # still held while the CPU reads it
    sim.env.run(until=copied_s * (1 - 1e-9))
    assert rec.free == rec.capacity - pkt.chunks
    sim.env.run(until=copied_s * (1 + 1e-9))
    assert rec.free == rec.capacity


# ------------------------------------------------------------------ algorithms: one-packet


def test_one_packet_cpu_cycles_add_up_to_the_cost_of_every_step(bgl):
    """Seed 001's UPC costs on the reference engine: every update costs t_g; a local one t_u + the local
    overhead; a remote one the raw send + the remote overhead at its sender and the raw receive + t_u at its
    owner.  The CPUs' busy cycles are exactly that sum."""
    opts = {"payload_bytes": 64, "wire_bytes": 75, "local_overhead_cycles": 40.0, "remote_overhead_cycles": 60.0}
    sim, rec = simulate(make_run_config(machine=bgl, shape="2x2x1", algorithm="one-packet", updates_per_process=300,
                                        algorithm_options=opts, engine="simpy"))
    cost, total = sim.cost, 4 * 300
    remote = sim.algorithm.sends
    local = total - remote
    assert 0 < remote < total and sim.net.wire_bytes_injected == 75 * remote
    expected = (total * cost.generate + local * (cost.update + 40.0)
                + remote * (cost.raw_send(64) + 60.0 + cost.raw_recv(64) + cost.update))
    assert sum(c.busy_cycles for c in sim.cpus) == pytest.approx(expected, rel=1e-12)


def test_one_packet_takes_a_payload_of_a_whole_packet(bgl):
    """8 chunks of 32 B is the largest packet: a 256-byte payload fits (268 B on the wire)."""
    sim, rec = simulate(make_run_config(machine=bgl, shape="2x1x1", algorithm="one-packet", updates_per_process=50,
                                        algorithm_options={"payload_bytes": 256}))
    outcome = sim.outcome()
    assert outcome.wire_bytes_injected == 268 * outcome.packets_injected > 0
    with pytest.raises(GupsimError, match="does not fit one packet"):
        simulate(make_run_config(machine=bgl, shape="2x1x1", algorithm="one-packet", updates_per_process=50,
                                 algorithm_options={"payload_bytes": 257}))


# ------------------------------------------------------------------ algorithms: routed and routed-split


def test_routed_routes_x_first_then_y_then_z(bgl):
    """Seed 000 §4.2: <x_i,y_i,z_i> -> <x_j,y_j,z_j> goes through <x_j,y_i,z_i>, then <x_j,y_j,z_i>."""
    from gupsim.algorithms.routed import _Rank

    sim = _sim(bgl, "2x2x2", "routed", 4)
    alg, topo = sim.algorithm, sim.topology
    node = lambda x, y, z: topo.node_id((x, y, z))  # noqa: E731  (co-processor mode: rank = node)
    st = _Rank(alg.ndims, alg._rank_coords(0))
    assert alg._next_hop(st, node(1, 1, 1)) == (0, node(1, 0, 0))
    st = _Rank(alg.ndims, alg._rank_coords(node(1, 0, 0)))
    assert alg._next_hop(st, node(1, 1, 1)) == (1, node(1, 1, 0))
    st = _Rank(alg.ndims, alg._rank_coords(node(1, 1, 0)))
    assert alg._next_hop(st, node(1, 1, 1)) == (2, node(1, 1, 1))


@pytest.mark.parametrize("engine", ["fast", "simpy"])
def test_routed_sbfs_are_their_definitions(engine):
    """send_blocking_factor: blocked sends / sends over the run; the polled SBF: (blocked tests + spinning
    polls) / (tests + spinning polls) between the window's marks, at most 1.  Links at 1/16 of BG/L's make
    the network bind, so sends do block."""
    machine = load_machine("bgl", {"network.link_bytes_per_s": 175e6 / 16})
    sim, rec = simulate(make_run_config(machine=machine, shape="4x4x2", algorithm="routed", updates_per_process=256,
                                        engine=engine))
    outcome = sim.outcome()
    sends, blocked = outcome.totals["send_tests"], outcome.totals["send_tests_blocked"]
    assert 0 < blocked < sends
    assert rec["send_blocking_factor"] == pytest.approx(blocked / sends, rel=1e-12)
    lo, hi = outcome.window_counters
    d = {k: hi[k] - lo[k] for k in ("send_tests", "send_tests_blocked", "polls")}
    assert d["polls"] > 0 and d["send_tests_blocked"] > 0
    expected = (d["send_tests_blocked"] + d["polls"]) / (d["send_tests"] + d["polls"])
    assert rec["alg_send_blocking_factor_polled"] == pytest.approx(expected, rel=1e-12)
    assert 0 < rec["alg_send_blocking_factor_polled"] <= 1


def test_routed_split_router_hands_an_update_for_its_node_to_worker_owner_core_mod_w():
    from gupsim.studies import bgp

    sim = _sim(bgp.machine(4), "2x1x1", "routed-split", 4)  # 4 cores: workers 0-2, router 3
    alg = sim.algorithm
    assert alg.workers == 3 and alg.is_router(3)
    router, st = 3, alg._routers[3]
    assert alg._route(router, st, sim.cpus[router], [(11, 2), (12, 3), (13, 1)], 0) == 3
    assert list(alg._deliveries[2]) == [(11, 2)]
    assert list(alg._deliveries[0]) == [(12, 3)]  # a router core's slice: worker 3 mod 3 = 0
    assert list(alg._deliveries[1]) == [(13, 1)]


def test_routed_split_worker_cycles_add_up_to_the_cost_of_every_step():
    """Workers generate every update (t_g), apply local ones (t_u), write remote ones into a hand-off queue
    (h) and later read them back from a router and apply them (h + t_u): U (t_g + t_u) + 2 H h in all."""
    from gupsim.studies import bgp

    sim, rec = simulate(make_run_config(machine=bgp.machine(4), shape="2x2x1", algorithm="routed-split",
                                        updates_per_process=200, engine="simpy"))  # SimPy's CPUs count cycles
    alg, cost, total = sim.algorithm, sim.cost, 16 * 200
    h = alg.options.handoff_cycles
    assert h > 0 and 0 < alg.handoffs < total
    workers = [c.busy_cycles for r, c in enumerate(sim.cpus) if not alg.is_router(r)]
    assert sum(workers) == pytest.approx(total * (cost.generate + cost.update) + 2 * alg.handoffs * h, rel=1e-12)


# ------------------------------------------------------------------ algorithms: dv


def _dv(updates=2048, endpoints=4, sets=None, **options):
    machine = load_machine("hypatia-dv", sets or {})
    return simulate(make_run_config(machine=machine, shape=f"{endpoints}x1x1", algorithm="dv",
                                    updates_per_process=updates, log2_table_size=36, algorithm_options=options))


def test_dv_holds_both_buffers_while_the_first_is_still_being_dmad():
    """Seed 003's double buffering: the second buffer is full (n updates generated) while the first buffer's
    DMA (set-up + n packets over PCIe) is still running, so 2n updates are held, the HPCC maximum."""
    machine = load_machine("hypatia-dv")
    net, cpu, n = machine.network, machine.cpu, 512
    generate_s = n * (cpu.generate_cycles + cpu.header_cycles) / cpu.clock_hz
    dma_s = ((net.dma_setup_ns + net.group_counter_ns) * 1e-9
             + n * net.wire_bytes / (net.pcie_bytes_per_s * net.pcie_efficiency))
    assert dma_s > generate_s  # so the first DMA has not finished when the second buffer is full
    _, rec = _dv(buffer_updates=n)
    assert rec["alg_max_pending"] == 2 * n


def test_dv_sbf_counts_batches_that_wait_for_the_vic_window():
    """A window of one batch: the second batch must wait until the first has been read out at its
    destinations, so at least one batch blocks, and the SBF is blocked batches over batches."""
    sim, rec = _dv(sets={"network.vic_window_packets": 512}, buffer_updates=512)
    alg = sim.algorithm
    assert alg.batches == 4 * 4 and alg.batches_blocked >= 4  # 4 endpoints x 2048 updates in 512-update batches
    assert rec["send_blocking_factor"] == pytest.approx(alg.batches_blocked / alg.batches)


def test_dv_wire_bytes_are_header_and_payload_of_every_update():
    """One 16-byte packet (64-bit header word + 64-bit payload) per update, local ones included."""
    sim, rec = _dv(updates=512)
    net = load_machine("hypatia-dv").network
    assert net.packet_payload_bytes + net.packet_header_bytes == 16
    assert sim.net.packets_injected == 4 * 512
    assert rec["bytes_per_update"] == 16


# ------------------------------------------------------------------ fabric_network.py: InfiniBand packets


def test_infiniband_packet_credits_count_headers_and_payload():
    """An MTU packet occupies ceil((2048 + 26) / 64) = 33 credit blocks and 2,074 bytes on the wire."""
    machine = load_machine("hypatia-ib")
    env = simpy.Environment()
    topo = make_topology("fat-tree", (2, 1, 1), machine.network)
    net = make_network(env, topo, machine, 1)
    pkt = net.make_packet(0, 1, 2048)
    assert (pkt.chunks, pkt.wire_bytes) == (33, 2074)
    small = net.make_packet(0, 1, 38)  # 38 + 26 = 64: one block exactly
    assert small.chunks == 1 and net.make_packet(0, 1, 39).chunks == 2


# ------------------------------------------------------------------ dma.py: BG/P sender-driven throttling


def _dma_net(shape=(2, 1, 1)):
    from gupsim.studies import bgp

    machine = bgp.machine()
    env = simpy.Environment()
    topo = make_topology("mesh", shape)
    from gupsim.engines.reference.networks import make_network

    return env, make_network(env, topo, machine, 1), machine


def test_dma_sender_backs_off_from_a_link_held_by_other_traffic_but_not_from_its_own_packets():
    """Seed 002 §3.4.  A packet whose first link is reserved by other traffic until T waits, then backs off
    throttle_backoff_ns more; it then crosses one hop and the destination's DMA receives it."""
    env, net, m = _dma_net()
    assert net.max_data_bytes == m.network.max_payload_bytes - m.dma.header_bytes
    link = net.topology.link_id(0, 0)
    held_until = 1e-6
    net.link_free_at[link] = held_until  # in-transit traffic reserved the link (not this node's injection)
    pkt = net.make_packet(0, 1, 256)
    assert net.try_inject(pkt)
    env.run(until=1e-4)
    rate, dma_rate = m.network.link_bytes_per_s, m.dma.engine_bytes_per_s
    backoff = m.dma.throttle_backoff_ns * 1e-9
    assert held_until > pkt.wire_bytes / dma_rate  # the DMA is done before the link frees
    assert net.throttle_waits == 1
    assert net.dma_stats()["throttled_s"] == pytest.approx(held_until + backoff - pkt.wire_bytes / dma_rate, rel=1e-12)
    assert net.packets_delivered == 1 and net.inbox[1].items[0] is pkt

    # The node's own packets queue behind each other on the link without backing off.
    env, net, m = _dma_net()
    pkts = [net.make_packet(0, 1, 256) for _ in range(3)]
    assert all(net.try_inject(p) for p in pkts)
    env.run(until=1e-4)
    assert net.throttle_waits == 0 and net.packets_delivered == 3
    serial = pkts[0].wire_bytes / rate
    assert net.link_free_at[link] == pytest.approx(pkts[0].wire_bytes / dma_rate + 3 * serial, rel=1e-12)


def test_dma_packets_held_back_at_one_link_queue_in_order_and_only_the_head_polls():
    """Three packets of one node find their first link held by other traffic until T: all three are held back,
    they enter the link in the order they left the DMA, each a back-off past the reservation before it, and the
    queue costs one poll per packet (the head's), not one per packet held per back-off."""
    env, net, m = _dma_net()
    link = net.topology.link_id(0, 0)
    held_until = 1e-6
    net.link_free_at[link] = held_until
    pkts = [net.make_packet(0, 1, 256) for _ in range(3)]
    assert all(net.try_inject(p) for p in pkts)
    env.run(until=1e-4)
    serial = pkts[0].wire_bytes / m.network.link_bytes_per_s
    backoff = m.dma.throttle_backoff_ns * 1e-9
    assert 3 * pkts[0].wire_bytes / m.dma.engine_bytes_per_s < held_until  # all three are held at once
    assert (net.throttle_waits, net.throttle_queued, net.throttle_polls, net.packets_delivered) == (3, 2, 3, 3)
    assert list(net.inbox[1].items) == pkts
    assert net.link_free_at[link] == pytest.approx(held_until + 3 * (backoff + serial), rel=1e-12)


# ------------------------------------------------------------------ telemetry.py


def test_baseline_per_packet_histogram_spreads_each_message_over_its_packets():
    from gupsim.engines.reference.telemetry import Telemetry

    cfg = make_run_config(machine=load_machine("bgl"), shape="4x2x2", algorithm="baseline", updates_per_process=512)
    sim, record = simulate(cfg, Telemetry(histograms=True))
    per_packet = {float(k): v for k, v in record["histograms"]["updates_per_packet"].items()}
    alg = sim.algorithm
    assert sum(per_packet.values()) == alg.packets_sent > alg.messages_sent  # some messages span packets
    assert sum(k * v for k, v in per_packet.items()) == pytest.approx(alg.updates_sent, abs=1e-3 * alg.packets_sent)
    assert max(per_packet) <= 30  # a 256-byte packet holds at most (256 - 16) / 8 = 30 updates' worth


def test_time_series_interval_sbf_is_the_intervals_own_ratio(bgl):
    """Scripted counters: 10 send tests per second, all blocked for 2 s, then none blocked."""
    from gupsim.engines.reference.telemetry import Telemetry

    sim = _sim(bgl, "2x1x1", "one-packet", 4)
    env = sim.env
    sim.algorithm.counters = lambda: {"send_tests": 10 * round(env.now),
                                      "send_tests_blocked": 10 * min(round(env.now), 2)}

    def ticking():  # other events, so the sampler does not think the machine is stuck
        for _ in range(10):
            yield env.timeout(0.5)

    tel = Telemetry(sample_interval_s=1.0)
    tel.attach(sim)
    env.process(ticking())
    env.run(until=4.5)
    s = tel.samples
    assert s["t_s"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert s["sbf_cumulative"] == pytest.approx([0.0, 1.0, 1.0, 20 / 30, 20 / 40])
    assert s["sbf_interval"] == pytest.approx([0.0, 1.0, 1.0, 0.0, 0.0])


def test_routed_sends_a_bucket_the_moment_it_holds_bucket_capacity_updates(bgl):
    """Figure 1: a bucket is full at bucket_capacity updates and is sent whole, so with a capacity below a
    packet's 30 updates no packet carries more than the capacity (drained partial buckets carry fewer)."""
    from gupsim.engines.reference.telemetry import Telemetry

    sim, record = simulate(make_run_config(machine=bgl, shape="2x2x2", algorithm="routed", updates_per_process=300,
                                           algorithm_options={"bucket_capacity": 5}), Telemetry(histograms=True))
    sizes = {int(float(k)): v for k, v in record["histograms"]["updates_per_packet"].items()}
    assert sim.algorithm.capacity == 5 < sim.algorithm.per_packet
    assert max(sizes) == 5 and sizes[5] > sum(v for k, v in sizes.items() if k < 5)
