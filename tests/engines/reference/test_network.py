"""The link model: timing against closed forms, back-pressure, deadlock freedom, conservation."""

from __future__ import annotations

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.config import load_machine
from gupsim.engines.reference.torus_network import Network
from gupsim.topology import make_topology


def _net(kind="mesh", shape=(4, 1, 1), **sets):
    machine = load_machine("bgl", {f"network.{k}": v for k, v in sets.items()})
    env = simpy.Environment()
    return env, Network(env, make_topology(kind, shape), machine.network), machine.network


def _consumer(env, net, rank, log):
    """A receiver that reads every packet the moment it arrives."""
    while True:
        yield net.inbox[rank].wait()
        while net.inbox[rank].items:
            pkt = net.inbox[rank].items.popleft()
            net.consumed(pkt)
            log.append((env.now, pkt))


def _sender(env, net, pkts):
    for pkt in pkts:
        yield from net.inject(pkt)


def test_single_packet_latency_is_cut_through_closed_form():
    env, net, cfg = _net()
    log = []
    env.process(_consumer(env, net, 3, log))
    net.try_inject(net.make_packet(0, 3, 8))
    env.run(until=1e-3)
    chunk_s = cfg.chunk_bytes / cfg.link_bytes_per_s
    router_s = cfg.router_delay_ns * 1e-9
    serial = (32 + 12) / cfg.link_bytes_per_s
    head = chunk_s + router_s
    assert log[0][0] == pytest.approx(2 * head + serial + router_s, rel=1e-12)
    assert net.link_bytes[net.topology.link_id(0, 0)] == 44  # one chunk + 8 B header + 4 B trailer


def test_wire_bytes_round_payload_up_to_chunks():
    _, net, _ = _net()
    assert net.make_packet(0, 1, 8).wire_bytes == 44
    assert net.make_packet(0, 1, 33).wire_bytes == 64 + 12
    assert net.make_packet(0, 1, 256).wire_bytes == 256 + 12
    with pytest.raises(ValueError):
        net.make_packet(0, 1, 257)


def test_a_saturated_link_moves_exactly_its_bandwidth():
    env, net, cfg = _net()
    log = []
    env.process(_consumer(env, net, 1, log))
    k = 200
    env.process(_sender(env, net, [net.make_packet(0, 1, 256) for _ in range(k)]))
    env.run(until=1.0)
    serial = 268 / cfg.link_bytes_per_s
    link = net.topology.link_id(0, 0)
    assert len(log) == k
    assert net.link_busy_s[link] == pytest.approx(k * serial)
    # back to back: the last tail arrives k serializations (plus one router delay) after the first head left
    assert log[-1][0] == pytest.approx(k * serial + cfg.router_delay_ns * 1e-9, rel=1e-9)


@pytest.mark.parametrize("order", ["pool", "fifo"])
def test_a_receiver_that_stops_reading_backs_traffic_up_to_the_sender(order):
    env, net, cfg = _net(buffer_order=order)
    pkts = [net.make_packet(0, 1, 256) for _ in range(50)]
    env.process(_sender(env, net, pkts))
    env.run(until=1e-3)
    # reception FIFO (32 chunks) holds 4 packets, the link buffer 4, the injection FIFO 4
    assert net.packets_delivered == cfg.reception_fifo_chunks // 8
    assert net.packets_injected == (cfg.reception_fifo_chunks + cfg.link_buffer_chunks + cfg.injection_fifo_chunks) // 8
    log = []
    env.process(_consumer(env, net, 1, log))
    env.run(until=1e-2)
    assert net.packets_delivered == 50 and len(log) == 50
    # packets waited for room in the full link buffer (counted once they got it); in fifo order only the oldest
    # packet in the injection FIFO asks, the others wait behind it
    assert net.link_blocked_s[net.topology.link_id(0, 0)] > 0


def _ring_traffic(bubble: bool):
    env, net, _ = _net("torus", (6, 1, 1), link_buffer_chunks=16, injection_fifo_chunks=8,
                       reception_fifo_chunks=8)
    if not bubble:
        net.router.bubble = 0
    logs = []
    for r in range(6):
        logs.append([])
        env.process(_consumer(env, net, r, logs[-1]))
        # distance 3 on a ring of 6 is a tie, broken towards +: every packet goes the same way round
        env.process(_sender(env, net, [net.make_packet(r, (r + 3) % 6, (32, 256, 64)[i % 3]) for i in range(50)]))
    env.run(until=1.0)
    return net


def test_bubble_flow_control_keeps_a_loaded_torus_ring_deadlock_free():
    assert _ring_traffic(bubble=True).packets_delivered == 300


def test_without_the_bubble_the_same_ring_deadlocks():
    # The negative control: proves the test above exercises a real deadlock.
    assert _ring_traffic(bubble=False).packets_delivered < 300


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["torus", "mesh"]),
    routing=st.sampled_from(["deterministic", "adaptive"]),
    shape=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3)).filter(lambda s: s[0] * s[1] * s[2] >= 2),
    buffers=st.integers(16, 40),
    traffic=st.lists(st.tuples(st.integers(0, 47), st.integers(0, 47), st.integers(1, 256)), min_size=1, max_size=60),
)
def test_nothing_is_lost_and_every_credit_comes_back(kind, routing, shape, buffers, traffic):
    env, net, _ = _net(kind, shape, link_buffer_chunks=buffers, injection_fifo_chunks=buffers,
                       reception_fifo_chunks=buffers, routing=routing)
    n = net.num_ranks
    logs = {r: [] for r in range(n)}
    for r in range(n):
        env.process(_consumer(env, net, r, logs[r]))
    per_sender: dict[int, list] = {}
    for src, dst, size in traffic:
        per_sender.setdefault(src % n, []).append(net.make_packet(src % n, dst % n, size))
    for pkts in per_sender.values():
        env.process(_sender(env, net, pkts))
    env.run(until=1.0)
    assert net.packets_delivered == len(traffic)
    assert all(pkt.dst == r for r, log in logs.items() for _, pkt in log)
    assert all(c.free == c.capacity for c in net.injection + net.reception)
    assert all(b is None or b.free == b.capacity for b in net._buffers + net._dynamic)
    hops = sum(net.topology.hops(p.src, p.dst) for log in logs.values() for _, p in log)
    assert sum(net.link_bytes) == sum(p.wire_bytes * net.topology.hops(p.src, p.dst)
                                      for log in logs.values() for _, p in log)
    assert hops <= len(traffic) * net.topology.diameter


def _diagonal_flood(routing: str, packets: int = 60):
    """Every node of a 4x4 torus sends to (x+2, y+2): a tie in both dimensions."""
    env, net, _ = _net("torus", (4, 4, 1), routing=routing)
    topo = net.topology
    logs = {r: [] for r in range(16)}
    for r in range(16):
        x, y, _z = topo.coords(r)
        env.process(_consumer(env, net, r, logs[r]))
        dst = topo.node_id(((x + 2) % 4, (y + 2) % 4, 0))
        env.process(_sender(env, net, [net.make_packet(r, dst, 256) for _ in range(packets)]))
    env.run(until=1.0)
    assert net.packets_delivered == 16 * packets
    return max(t for log in logs.values() for t, _ in log), net


def test_adaptive_routing_spreads_tied_traffic_over_both_directions():
    det_time, det = _diagonal_flood("deterministic")
    ada_time, ada = _diagonal_flood("adaptive")
    used = lambda net: sum(1 for b in net.link_bytes if b)  # noqa: E731
    assert used(det) == 32 and used(ada) == 64  # dimension order uses only the + links
    assert ada_time < 0.7 * det_time


def test_adaptive_routing_on_the_one_way_ring_that_deadlocks_without_the_bubble():
    env, net, _ = _net("torus", (6, 1, 1), routing="adaptive", link_buffer_chunks=16, injection_fifo_chunks=8,
                       reception_fifo_chunks=8)
    for r in range(6):
        env.process(_consumer(env, net, r, []))
        env.process(_sender(env, net, [net.make_packet(r, (r + 3) % 6, 256) for _ in range(80)]))
    env.run(until=1.0)
    assert net.packets_delivered == 480


@pytest.mark.parametrize("order", ["pool", "fifo"])
def test_in_fifo_order_a_packet_waits_behind_one_bound_for_a_busy_link(order):
    """Head-of-line blocking: B (+y, a free link) is behind A (+x, busy with a long packet) in one FIFO."""
    env, net, cfg = _net("mesh", (3, 2, 1), buffer_order=order, fifos="shared")  # one injection FIFO
    log = []
    for rank in (2, 3):
        env.process(_consumer(env, net, rank, log))
    long_ = net.make_packet(0, 2, 256)   # 8 chunks along +x
    a = net.make_packet(0, 2, 8)         # +x: waits for the link until the long packet has left
    b = net.make_packet(0, 3, 8)         # +y: its link is free
    for pkt in (long_, a, b):
        assert net.try_inject(pkt)
    env.run(until=1e-3)
    rate, router_s = cfg.link_bytes_per_s, cfg.router_delay_ns * 1e-9
    arrived = {pkt: t for t, pkt in log}
    one_hop = 44 / rate + router_s  # zero-load: the whole packet on one link, then the router
    held_up = (256 + 12) / rate if order == "fifo" else 0.0  # A starts only once the long packet is through
    assert arrived[b] == pytest.approx(held_up + one_hop, rel=1e-12)
    assert arrived[a] > arrived[long_]
