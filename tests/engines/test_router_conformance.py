"""The router seam: both engines make the same decisions, one by one, on scripted packet traces.

A few packets with chosen sources, destinations and injection times meet at one router or on one ring; each
engine runs them through its transit with its router's decision trace on
(:class:`gupsim.engines.reference.router.Router`'s ``trace``, the fast transit's ``log``: :mod:`gupsim.engines.fast.router`) and the two
traces (time, node, packet, decision, port, bubble) must be equal row for row.  The record-level tests
(``tests/engines/fast/test_fast*.py``) stay; these show *where* two engines would part.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from numba import njit

from gupsim.base.errors import UnknownNameError
from gupsim.config import load_machine
from gupsim.engines import router_rules as rules
from gupsim.engines.fast import FastSimulation, core as c, credits as cr, events as ev, tables as tb
from gupsim.engines.fast.driver import network_of
from gupsim.engines.fast.core import router_kernel
from gupsim.engines.fast.router import new_trace_log
from gupsim.engines.reference.router import ROUTERS, router_class
from gupsim.engines.reference.simulation import CountingEnvironment
from gupsim.engines.reference.torus_network import Network
from gupsim.engines.run import make_run_config
from gupsim.topology.base import make_topology
from gupsim.topology.grid import HALF_RING_TIES

SLOW = {"network.topology": "torus", "network.link_bytes_per_s": 1e7, "network.injection_fifo_chunks": 64,
        "network.reception_fifo_chunks": 64}
#: One packet's worth of buffer beyond a whole packet: an entering packet needs the buffer empty (the bubble).
TIGHT = {**SLOW, "network.link_buffer_chunks": 16}


def _machine(sets):
    return load_machine("bgl", sets)


def _full_chunks(machine):
    return machine.network.max_chunks_per_packet


# ------------------------------------------------------------------ the two engines, scripted


def reference_trace(machine, shape, script):
    """Run ``script`` ((src rank, dst rank, chunks, injection time), ...) through the reference network."""
    env = CountingEnvironment()
    topo = make_topology(machine.network.topology_kind(int(np.prod([int(v) for v in shape.split("x")]))), shape,
                         machine.network)
    net = Network(env, topo, machine.network, machine.cpu.processes_per_node)
    index, trace = {}, []
    net.router.trace = lambda t, node, pkt, kind, port, bubble: trace.append(
        (t, node, index[id(pkt)], kind, port, bubble))

    def inject(pkt, at):
        yield env.timeout(at)
        assert net.try_inject(pkt)

    for i, (src, dst, chunks, at) in enumerate(script):
        pkt = net.make_packet(src, dst, chunks * machine.network.chunk_bytes)
        index[id(pkt)] = i
        env.process(inject(pkt, at)).entity = src  # its sender's CPU launches it (the event order's entity)
    env.run()
    return trace


@njit(cache=True, _nrt=False)
def _run_script(net, log, src, dst, chunks, wire, times):
    """Launch every scripted packet at its time, then process network events until none is left (the CPUs'
    start-up events are skipped: nobody computes)."""
    pk, pf, ip, hh, ctr = net.packets, net.packet_times, net.int_params, net.queue, net.counters
    for i in range(src.shape[0]):
        p = c.alloc_packet(pk, ctr)
        pk[p, tb.PK_SRC], pk[p, tb.PK_DST], pk[p, tb.PK_CHUNKS], pk[p, tb.PK_WIRE] = src[i], dst[i], chunks[i], wire[i]
        cr.take(net.pools, net.deferred, ctr, cr.inj_pool(ip, src[i], dst[i]), chunks[i], 0)
        ctr[tb.C_ACTIVE] = src[i]  # launched by its sender's CPU, as the reference's script process is
        c.launch(pk, pf, ip, hh, ctr, p, times[i])
    while ctr[tb.C_HEAP_N] > 0:
        now, payload = ev.pop(hh, ctr)
        kind, a = ev.event_kind(payload), ev.event_arg(payload)
        if kind != tb.EV_CPU:
            c.enter(net, kind, a)
            c.routed_event(kind, a, net, now, log)


def fast_trace(machine, shape, script):
    """Run ``script`` through the fast engine's transit with a traced router kernel."""
    run = make_run_config(machine=machine, shape=shape, algorithm="one-packet", updates_per_process=1,
                          engine="fast")
    net = network_of(FastSimulation(run)._arrays())
    src, dst, chunks, times = (np.array(col) for col in zip(*script))
    wire = chunks * machine.network.chunk_bytes + machine.network.wire_overhead_bytes
    log = new_trace_log(64 * len(script))
    _run_script(net, log, src.astype(np.int64), dst.astype(np.int64), chunks.astype(np.int64), wire.astype(np.int64),
                times.astype(np.float64))
    n = int(log[0, 0])
    assert n < log.shape[0], "trace log too short"
    return [(row[0], int(row[1]), int(row[2]), int(row[3]), int(row[4]), int(row[5])) for row in log[1:n + 1]]


def both(sets, shape, script):
    machine = _machine(sets)
    ref, fast = reference_trace(machine, shape, script), fast_trace(machine, shape, script)
    assert fast == ref
    return ref


def _kinds(trace):
    return [row[3] for row in trace]


# ------------------------------------------------------------------ scripted traces


def test_bubble_refuses_an_entering_packet_then_the_buffer_grants_it():
    """On a ring of 4, packet 0 (node 0 -> 2) continues through node 1 on x+ while packet 1 (node 1 -> 3)
    tries to enter the same link: with 16-chunk buffers and 8-chunk packets it must wait (the bubble)."""
    machine = _machine(TIGHT)
    full = _full_chunks(machine)
    serial = (full * 32 + machine.network.wire_overhead_bytes) / 1e7
    script = [(0, 2, full, 0.0), (1, 3, full, 0.6 * serial)]
    trace = both(TIGHT, "4x2x2", script)
    waits = [row for row in trace if row[3] == rules.DECISION_WAIT]
    assert waits and waits[0][1:3] == (1, 1) and waits[0][5] == full  # node 1, packet 1, bubble of a packet
    assert rules.DECISION_GRANT in _kinds(trace)


def test_contention_for_one_output_is_granted_in_order():
    """Four packets on one 4-ring: 1 (injected at node 1) takes node 1's x+ link, 0 (from node 0) continues
    behind it, 2 (injected at node 1) must wait with its bubble, and 3 (node 0's second) waits at node 0 to enter
    the ring behind 0; each waiting packet is granted later, once, in the order its buffer's queues say."""
    script = [(0, 2, 8, 0.0), (1, 2, 8, 1e-6), (1, 3, 8, 2e-6), (0, 2, 8, 5e-6)]
    trace = both(TIGHT, "4x2x2", script)
    waits = {row[2]: row for row in trace if row[3] == rules.DECISION_WAIT}
    assert sorted(waits) == [2, 3]
    assert (waits[2][1], waits[2][5], waits[3][1], waits[3][5]) == (1, 8, 0, 8)
    grants = [row[2] for row in trace if row[3] == rules.DECISION_GRANT]
    assert sorted(grants) == [2, 3]
    assert all(next(r[0] for r in trace if r[2] == p and r[3] == rules.DECISION_GRANT) > waits[p][0] for p in waits)


def test_adaptive_choice_among_minimal_directions():
    """Packets from node 0 to the far corner of a 4x4x2 torus: dynamic channels of x+, y+ (both ways round
    on a half ring) are chosen by how soon the link frees, then the escape channel once they are full."""
    sets = {**SLOW, "network.routing": "adaptive", "network.link_buffer_chunks": 16}
    script = [(0, 10, 8, k * 1e-7) for k in range(6)] + [(5, 10, 8, 3.3e-7)]
    trace = both(sets, "4x4x2", script)
    assert rules.DECISION_DYNAMIC in _kinds(trace)
    assert rules.DECISION_ESCAPE in _kinds(trace) or rules.DECISION_WAIT in _kinds(trace)


@pytest.mark.parametrize("sets", [
    TIGHT,
    {**TIGHT, "network.buffer_order": "fifo"},
    {**TIGHT, "network.half_ring_ties": "source-parity", "network.reception_fifo_chunks": 16},
    {**TIGHT, "network.routing": "adaptive", "network.fifos": "per-dimension"},
], ids=["bubble", "fifo-order", "parity-ties", "adaptive-per-dim"])
def test_random_script_same_decisions(sets):
    """Twenty packets at random among 32 nodes (seeded): every decision equal, in the same order."""
    rng = np.random.default_rng(43)
    script = []
    for k in range(20):
        src, dst = (int(v) for v in rng.choice(32, 2, replace=False))
        script.append((src, dst, int(rng.integers(1, 9)), float(k * 3.7e-7 + rng.random() * 1e-7)))
    trace = both(sets, "4x4x2", script)
    assert len(trace) >= 40


# ------------------------------------------------------------------ the seam itself


@pytest.mark.parametrize("shape,kind,ties", [("4x3x2", "torus", "plus"), ("4x4x2", "torus", "source-parity"),
                                             ("3x2x2", "mesh", "plus")])
def test_router_routes_as_the_topology(shape, kind, ties):
    """Hop by hop, the router's shared rule gives the topology's dimension-order route for every pair."""
    machine = _machine({"network.topology": kind, "network.half_ring_ties": ties})
    topo = make_topology(kind, shape, machine.network)
    net = Network(CountingEnvironment(), topo, machine.network)
    nbr = topo.neighbor_array().ravel()
    for a, b in itertools.product(range(topo.num_nodes), repeat=2):
        links, node = [], a
        while node != b:
            links.append(net.router.route(node, b))
            node = int(nbr[links[-1]])
        assert links == topo.route(a, b)
    assert HALF_RING_TIES[ties].code in (0, 1)


def test_unknown_router_lists_the_known_ones():
    for lookup in (router_class, router_kernel):
        with pytest.raises(UnknownNameError, match="bluegene-l"):
            lookup("booksim-iq")
    assert set(ROUTERS) == {"bluegene-l", "bgl-vc"}


def test_a_machine_file_may_name_exactly_the_routers_the_reference_engine_registers():
    """The config layer cannot import the engines, so it lists the names; this keeps the list and the registry one."""
    from gupsim.config.router import ROUTER_NAMES, RouterConfig

    assert set(ROUTER_NAMES) == set(ROUTERS)
    assert set(RouterConfig.model_fields["name"].annotation.__args__) == set(ROUTERS)


@pytest.mark.parametrize("free,chunks,bubble,cont,enter,ok", [
    (16, 8, 8, False, False, True), (15, 8, 8, False, False, False), (8, 8, 0, False, True, True),
    (16, 8, 8, False, True, False), (16, 8, 0, True, False, False),
])
def test_admission_rule(free, chunks, bubble, cont, enter, ok):
    """A continuing packet waits only behind continuing ones; an entering one behind all, with its bubble."""
    assert rules.admits(free, chunks, bubble, cont, enter) is ok


# ------------------------------------------------------------------ bgl-vc: Blue Gene/L's VC router (issue 44)
# Both engines run it (the fast transit with the pools its router declares); these scripts compare their
# decisions one by one, and compare it with bluegene-l where the two routers must agree.

VC = {**TIGHT, "network.router.name": "bgl-vc", "network.router.vc_depth_chunks": 16}


def test_vc_router_with_one_escape_vc_decides_as_bluegene_l():
    """One escape VC of the same depth as bluegene-l's buffer is bluegene-l's deterministic router: the same
    decisions, one by one, on a random script (so what bgl-vc adds is only its extra VCs and tokens)."""
    rng = np.random.default_rng(44)
    script = [(*(int(v) for v in rng.choice(32, 2, replace=False)), int(rng.integers(1, 9)), k * 3.7e-7)
              for k in range(20)]
    old = reference_trace(_machine({**TIGHT, "network.buffer_order": "fifo"}), "4x4x2", script)
    new = reference_trace(_machine({**VC, "network.buffer_order": "fifo"}), "4x4x2", script)
    assert new == old and rules.DECISION_WAIT in _kinds(old)


def test_second_escape_vc_admits_the_packet_the_bubble_refused():
    """The bubble test's script: with one escape VC packet 1 must wait to enter node 1's x+ link; with two,
    it takes the empty second VC at once."""
    full = _full_chunks(_machine(TIGHT))
    script = [(0, 2, full, 0.0), (1, 3, full, 0.6 * (full * 32 + 12) / 1e7)]
    one = both(VC, "4x2x2", script)
    two = both({**VC, "network.router.escape_vcs": 2}, "4x2x2", script)
    assert (1, 1, rules.DECISION_WAIT) in [(r[1], r[2], r[3]) for r in one]
    assert rules.DECISION_WAIT not in _kinds(two)
    assert (1, 1, rules.DECISION_ESCAPE, 0, full) in [(r[1], r[2], r[3], r[4], r[5]) for r in two]


def test_token_return_delay_delays_the_grant_by_exactly_it():
    """The waiting packet is granted when the tokens of the one ahead come back: ``token_return_ns`` later."""
    full = _full_chunks(_machine(TIGHT))
    script = [(0, 2, full, 0.0), (1, 3, full, 0.6 * (full * 32 + 12) / 1e7)]
    grant = {}
    for ns in (0.0, 250.0):
        trace = both({**VC, "network.router.token_return_ns": ns}, "4x2x2", script)
        grant[ns] = next(r[0] for r in trace if r[3] == rules.DECISION_GRANT)
    assert grant[250.0] - grant[0.0] == pytest.approx(250e-9, rel=1e-9)


def test_adaptive_vc_router_takes_the_hint_direction_with_most_tokens():
    """Node 0 to node 10 of a 4x4x2 torus (half-way round in x and y): the hint bits allow x+ and y+ only (ties
    go + with network.half_ring_ties plus), never x- or y-, and the dynamic VC with more free tokens wins: x+'s
    two VCs first (a tie keeps the earlier port), then y+'s two once x+'s hold a packet each."""
    sets = {**VC, "network.routing": "adaptive", "network.router.dynamic_vcs": 2}
    script = [(0, 10, 8, k * 1e-7) for k in range(6)]
    trace = both(sets, "4x4x2", script)
    first = [r[4] for r in trace if r[1] == 0 and r[3] == rules.DECISION_DYNAMIC]
    assert set(first) <= {0, 2} and first[:4] == [0, 0, 2, 2]
    old = reference_trace(_machine({**TIGHT, "network.routing": "adaptive"}), "4x4x2", script)
    assert {r[4] for r in old if r[1] == 0 and r[3] == rules.DECISION_DYNAMIC} - {0, 2}  # it also took a - way


def test_vc_router_returns_every_token():
    """After a random script every VC of bgl-vc (escape and dynamic) holds all its tokens again."""
    machine = _machine({**VC, "network.routing": "adaptive", "network.router.escape_vcs": 3,
                        "network.router.token_return_ns": 80.0})
    env = CountingEnvironment()
    topo = make_topology("torus", "4x4x2", machine.network)
    net = Network(env, topo, machine.network)
    rng = np.random.default_rng(7)
    for k in range(40):
        src, dst = (int(v) for v in rng.choice(32, 2, replace=False))
        env.process(net.inject(net.make_packet(src, dst, 32 * int(rng.integers(1, 9))))).entity = src
    env.run()
    assert net.packets_delivered == 40
    pools = net.router.pools()
    assert len(pools) > 32 and all(p.free == p.capacity and not p.waiting for p in pools)


@pytest.mark.parametrize("sets", [
    {**VC, "network.router.escape_vcs": 3, "network.router.token_return_ns": 150.0},
    {**VC, "network.router.escape_vcs": 2, "network.buffer_order": "fifo"},
    {**VC, "network.routing": "adaptive", "network.router.dynamic_vcs": 2, "network.buffer_order": "fifo"},
    {**VC, "network.routing": "adaptive", "network.router.escape_vcs": 2, "network.router.dynamic_vcs": 3,
     "network.half_ring_ties": "source-parity", "network.fifos": "per-dimension",
     "network.router.token_return_ns": 90.0},
], ids=["3-escape-token-delay", "2-escape-fifo-order", "adaptive-fifo-order", "adaptive-parity-per-dim"])
def test_vc_router_random_script_same_decisions(sets):
    """bgl-vc on both engines: forty packets from random nodes to two hot spots (seeded), every decision equal
    in the same order; the script makes packets wait for VCs or reception room, and adaptively takes dynamic VCs."""
    rng = np.random.default_rng(45)
    script = []
    for k in range(40):
        src, dst = int(rng.integers(1, 32)), int(rng.choice([0, 21]))
        script.append((src if src != dst else src + 1, dst, int(rng.integers(4, 9)), k * 1.3e-7 + rng.random() * 1e-7))
    trace = both(sets, "4x4x2", script)
    kinds = _kinds(trace)
    assert len(trace) >= 120 and {rules.DECISION_WAIT, rules.DECISION_EJECT_WAIT} & set(kinds)
    assert (rules.DECISION_DYNAMIC in kinds) == (sets.get("network.routing") == "adaptive")


def test_fast_engine_runs_the_vc_router_and_refuses_a_router_without_a_kernel_in_one_line(monkeypatch):
    from gupsim.engines.fast.engine import FastEngine
    run = make_run_config(machine=_machine({"network.router.name": "bgl-vc"}), shape="2x2x2",
                          algorithm="one-packet", updates_per_process=8, engine="simpy")
    assert FastEngine().unsupported(run) is None
    monkeypatch.delitem(c.ROUTER_KERNELS, "bgl-vc")  # as a router registered with the reference engine only
    reason = FastEngine().unsupported(run)
    assert reason is not None and "bgl-vc" in reason and "\n" not in reason


VC24 = {"network.router.name": "bgl-vc", "network.router.vc_depth_chunks": 24}


@pytest.mark.parametrize("sets, per_link", [
    ({}, 2), (VC24, 1), ({**VC24, "network.routing": "adaptive"}, 3),
    ({**VC24, "network.routing": "adaptive", "network.router.escape_vcs": 4, "network.router.dynamic_vcs": 3}, 7),
])
def test_fast_engine_gives_each_link_the_pools_its_router_declares(sets, per_link):
    """bluegene-l keeps its escape buffer and dynamic channel per link; bgl-vc has its escape VCs, and its dynamic
    VCs when it routes adaptively; the FIFOs follow, and every pool's owner is the link's near-end router."""
    machine = _machine({"network.topology": "torus", **sets})
    run = make_run_config(machine=machine, shape="2x2x2", algorithm="one-packet", updates_per_process=8,
                          engine="fast")
    a = FastSimulation(run)._arrays()
    ip, pq = a["int_params"], a["pools"]
    links = 8 * 6
    fifos = 8 * (4 if machine.network.fifos == "per-dimension" else 1)
    assert (ip[tb.I_POOL_INJ], ip[tb.I_POOL_REC], len(pq)) == (per_link * links, per_link * links + fifos,
                                                               per_link * links + 2 * fifos)
    assert (pq[:per_link * links, tb.PQ_FREE] == (24 if sets else machine.network.link_buffer_chunks)).all()
    assert (pq[ip[tb.I_POOL_INJ]:ip[tb.I_POOL_REC], tb.PQ_FREE] == machine.network.injection_fifo_chunks).all()
    assert (pq[ip[tb.I_POOL_REC]:, tb.PQ_FREE] == machine.network.reception_fifo_chunks).all()
    owners = [c.pool_owner(ip, pool) for pool in range(per_link * links)]
    assert owners == [8 + cr.link_of_pool(ip, pool) // 6 for pool in range(per_link * links)]
    assert sorted(set(cr.link_of_pool(ip, pool) for pool in range(ip[tb.I_POOL_DYN]))) == list(range(links))


def test_vc_depth_must_hold_the_bubble():
    from gupsim.base.errors import GupsimError
    with pytest.raises(GupsimError, match="vc_depth_chunks=8 is too small"):
        _machine({"network.router.name": "bgl-vc", "network.router.vc_depth_chunks": 8})
    with pytest.raises(GupsimError, match="router.escape_vcs is read by router bgl-vc only"):
        _machine({"network.router.escape_vcs": 4})  # bluegene-l would ignore it


@pytest.mark.parametrize("free,best,have,ok", [(5, 0, False, True), (5, 4, True, True), (4, 4, True, False),
                                               (3, 4, True, False)])
def test_more_tokens_rule(free, best, have, ok):
    """The dynamic VC with strictly more free tokens wins; a tie keeps the earlier one."""
    assert rules.more_tokens(free, best, have) is ok


@pytest.mark.parametrize("waiting,free,bw,bf,have,ok", [
    (3, 0, 0, 0, False, True), (0, 1, 1, 16, True, True), (1, 16, 0, 1, True, False), (0, 9, 0, 8, True, True),
    (0, 8, 0, 8, True, False),
])
def test_fewer_waiters_rule(waiting, free, bw, bf, have, ok):
    """Among a link's escape VCs: fewer waiters first, then more free tokens; a tie keeps the earlier VC."""
    assert rules.fewer_waiters(waiting, free, bw, bf, have) is ok


@pytest.mark.parametrize("algorithm", ["one-packet", "routed"])
def test_vc_router_at_bgl_parameters_keeps_the_records(algorithm):
    """bgl.yaml's own parameters (deterministic, one escape VC as deep as the link buffer, tokens back at once)
    under bgl-vc give bluegene-l's record, number for number: the router changes runs only through what it
    adds.  Slow links make the torus the bottleneck, so a difference in the network would show."""
    from gupsim.engines.run import simulate
    sets = {"network.topology": "torus", "network.link_bytes_per_s": 5e6}
    recs = [simulate(make_run_config(machine=_machine({**sets, "network.router.name": name}), shape="4x2x2",
                                     algorithm=algorithm, updates_per_process=128, engine="simpy"))[1]
            for name in ("bluegene-l", "bgl-vc")]
    same = ("gups", "sim_time_s", "events", "send_blocking_factor", "link_utilisation_max", "bytes_per_update")
    assert [recs[0][k] for k in same] == [recs[1][k] for k in same]
    assert recs[0]["link_utilisation_max"] > 0.6  # the torus was busy: a difference there would show
