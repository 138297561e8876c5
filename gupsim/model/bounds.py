"""Analytic upper bounds on GUPS: the CPU bound (eq. 1) and the network bound (eq. 2).

Seed 000 §3.1, eq. (1): with ``N`` processes each spending ``t_g + t_u +
t_o^s`` cycles per update and, for the ``(N-1)/N`` remote updates, ``t_s +
t_r + t_o^p`` more,

    GUPS <= N * clock / (t_g + t_u + t_o^s + (N-1)/N * (t_s + t_r + t_o^p)).

Seed 000 §3.2, eq. (2): every cut (S, S̄) must carry ``b U |S||S̄|/N`` bytes,
so with ``alpha(G)`` the smallest edge expansion (in links) and ``C`` one
link's bandwidth,

    GUPS <= (2N / b) * alpha(G) * C.

§5.2 evaluates both for Blue Gene/L with one update per packet: ``t_s`` and
``t_r`` from Table 1 at a 32-byte payload, ``t_g + t_o^s = 18``, ``t_u =
86``, and "b = 32 + 14 = 44".  The arithmetic in that sentence is off: 32 +
14 = 46, and Table 2's network column is what b = 46 gives (equivalently,
b = 44 at 167.4 MB/s).  The physical wire bytes of a one-chunk packet with
BG/L's 8-byte header and 4-byte trailer outside its 32-byte chunk are 32 + 12
= 44 (gupsim's reading, after §5.2; §5.1 puts the header inside the packet's
n x 32 bytes: docs/model.md §3).  :func:`bounds`
reports both: ``network_bound_gups`` with the wire bytes of the machine
model, ``network_bound_gups_paper`` with the paper's 32 + 14.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gupsim.config.torus import MachineConfig
from gupsim.topology.grid import Topology
from gupsim.topology.base import make_topology, parse_shape, run_shape
from gupsim.base.errors import GupsimError


@dataclass(frozen=True)
class Bounds:
    nodes: int
    processes: int
    shape: str
    topology: str
    alpha_over_C: float
    bisection_links: int
    clock_hz: float
    link_bytes_per_s: float
    t_local_cycles: float
    t_send_cycles: float
    t_recv_cycles: float
    t_packet_overhead_cycles: float
    cycles_per_update: float
    cpu_bound_gups: float
    bytes_per_update: float
    network_bound_gups: float
    bytes_per_update_paper: float
    network_bound_gups_paper: float

    @property
    def bottleneck(self) -> str:
        return "network" if self.network_bound_gups < self.cpu_bound_gups else "cpu"

    def as_dict(self) -> dict:
        return asdict(self) | {"bottleneck": self.bottleneck}


def machine_topology(machine: MachineConfig, shape: str) -> Topology:
    """The topology a machine builds for a partition shape (mesh or torus)."""
    dims = parse_shape(shape)
    return make_topology(machine.network.topology_kind(math.prod(dims)), dims)


def cpu_bound_gups(processes: int, clock_hz: float, t_local: float, t_send: float, t_recv: float,
                   t_packet_overhead: float = 0.0) -> tuple[float, float]:
    """Eq. (1): (GUPS bound, cycles per update)."""
    n = processes
    cycles = t_local + (n - 1) / n * (t_send + t_recv + t_packet_overhead)
    return n * clock_hz / cycles / 1e9, cycles


def network_bound_gups(nodes: int, alpha_links: float, link_bytes_per_s: float, bytes_per_update: float) -> float:
    """Eq. (2): (2N/b) * alpha * C."""
    return 2 * nodes / bytes_per_update * alpha_links * link_bytes_per_s / 1e9


def bounds(machine: MachineConfig, shape: str, bytes_per_update: float | None = None) -> Bounds:
    """Both bounds for ``machine`` partitioned as ``shape``, one update per packet (seed 000 §5.2)."""
    if not isinstance(machine, MachineConfig):
        raise GupsimError(f"bounds: eq. (1) and (2) of seed 000 are for torus machines; {machine.name} is "
                          f"switched (see gupsim/experiments/dv_hypatia.py for its limits)")
    topo = machine_topology(machine, run_shape(shape))  # the shapes a run takes: a bound of one it refuses is moot
    net, cpu = machine.network, machine.cpu
    payload = net.chunk_bytes  # one update in one chunk-sized packet
    t_local = cpu.generate_cycles + cpu.update_cycles
    t_send, t_recv = machine.costs.send(payload), machine.costs.recv(payload)
    procs = topo.num_nodes * cpu.processes_per_node
    cpu_gups, cycles = cpu_bound_gups(procs, cpu.clock_hz, t_local, t_send, t_recv, cpu.packet_overhead_cycles)
    alpha = float(topo.edge_expansion())
    b_wire = bytes_per_update if bytes_per_update is not None else payload + net.wire_overhead_bytes
    b_paper = payload + net.paper_packet_overhead_bytes
    return _finite(Bounds(
        nodes=topo.num_nodes,
        processes=procs,
        shape="x".join(map(str, topo.shape)),
        topology=topo.kind,
        alpha_over_C=alpha,
        bisection_links=topo.bisection_links(),
        clock_hz=cpu.clock_hz,
        link_bytes_per_s=net.link_bytes_per_s,
        t_local_cycles=t_local,
        t_send_cycles=t_send,
        t_recv_cycles=t_recv,
        t_packet_overhead_cycles=cpu.packet_overhead_cycles,
        cycles_per_update=cycles,
        cpu_bound_gups=cpu_gups,
        bytes_per_update=b_wire,
        network_bound_gups=network_bound_gups(topo.num_nodes, alpha, net.link_bytes_per_s, b_wire),
        bytes_per_update_paper=b_paper,
        network_bound_gups_paper=network_bound_gups(topo.num_nodes, alpha, net.link_bytes_per_s, b_paper),
    ))


def _finite(b: Bounds) -> Bounds:
    """``b`` if every number in it is finite; else one line naming the first that is not.  A bytes per update
    of 1e-320 had printed "inf GUPS" and exited 0: a bound that overflows is no answer."""
    for name, value in asdict(b).items():
        if isinstance(value, float) and not math.isfinite(value):
            raise GupsimError(f"bounds: {name} comes out as {value} (the inputs are too extreme: bytes per update "
                              f"{b.bytes_per_update:g}, link bytes/s {b.link_bytes_per_s:g}); no finite bound")
    return b


def fit_packet_overhead(machine: MachineConfig, rows: list[tuple[int, float]]) -> float:
    """Least-squares ``t_o^p`` (cycles) that makes eq. (1) give the published CPU bounds.

    ``rows`` are (processes, published GUPS) pairs; eq. (1) is linear in
    ``t_o^p`` once inverted to cycles per update, so the fit is closed form.
    """
    cpu = machine.cpu
    t_local = cpu.generate_cycles + cpu.update_cycles
    payload = machine.network.chunk_bytes
    t_sr = machine.costs.send(payload) + machine.costs.recv(payload)
    xs, ys = [], []
    for n, gups in rows:
        cycles = n * cpu.clock_hz / (gups * 1e9)
        xs.append((n - 1) / n)
        ys.append(cycles - t_local - xs[-1] * t_sr)
    return sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)


# --------------------------------------------------------------------------- an algorithm's own bounds


@dataclass(frozen=True)
class StatedCosts:
    """What an algorithm states of its own work per update (``Algorithm.stated_costs``), for eq. (1) and (2).

    Eq. (1) and (2) as seed 000 writes them assume one update per packet and the raw device's send and receive
    for each; an algorithm that buckets or routes updates spends other cycles and puts other bytes on the wire.
    ``local_cycles`` is what every update costs, ``remote_cycles`` what a remote one costs beside it (the
    ``(N-1)/N`` share); ``wire_bytes_per_update`` is bytes on the wire over updates carried, with its
    ``updates_per_packet``.  Costs the algorithm's model spends but cannot state before a run (waiting, L1
    misses the machine's cache model adds) are left out, so that the bounds stay upper bounds; ``basis`` says
    what was counted."""

    algorithm: str
    local_cycles: float
    remote_cycles: float
    updates_per_packet: float
    wire_bytes_per_update: float
    basis: str


def algorithm_bounds(machine: MachineConfig, shape: str, costs: StatedCosts) -> dict:
    """Eq. (1) with the algorithm's cycles and eq. (2) with its wire bytes per update, and which binds and why."""
    b = bounds(machine, shape, costs.wire_bytes_per_update)
    cpu_gups, cycles = cpu_bound_gups(b.processes, b.clock_hz, costs.local_cycles, costs.remote_cycles, 0.0)
    binding = "network" if b.network_bound_gups < cpu_gups else "cpu"
    lower, higher = sorted((cpu_gups, b.network_bound_gups))
    why = (f"{costs.algorithm} needs {cycles:,.1f} cycles an update ({costs.basis}), so its "
           f"{b.processes:,} processes at {b.clock_hz / 1e6:g} MHz can make {cpu_gups:.4g} GUPS; it puts "
           f"{costs.wire_bytes_per_update:.4g} bytes an update on the wire (updates a packet "
           f"{costs.updates_per_packet:.3g}), so the bisection carries {b.network_bound_gups:.4g} GUPS; the {binding} bound is the "
           f"lower, by {higher / lower:.2f}x")
    return _finite_dict({"algorithm": costs.algorithm, "shape": b.shape, "topology": b.topology, "nodes": b.nodes,
                         "processes": b.processes, "cycles_per_update": cycles, "cpu_bound_gups": cpu_gups,
                         "updates_per_packet": costs.updates_per_packet,
                         "bytes_per_update": costs.wire_bytes_per_update,
                         "network_bound_gups": b.network_bound_gups, "binding": binding, "reason": why})


def _finite_dict(d: dict) -> dict:
    for name, value in d.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise GupsimError(f"bounds: {name} comes out as {value} (the inputs are too extreme); no finite bound")
    return d


def wire_bytes(machine: MachineConfig, payloads: list[float]) -> float:
    """Bytes on the wire of packets carrying ``payloads`` bytes each in their chunks: whole chunks, and each
    packet's header and trailer (seed 000 §5.1)."""
    net = machine.network
    return sum(math.ceil(p / net.chunk_bytes) * net.chunk_bytes + net.wire_overhead_bytes for p in payloads)
