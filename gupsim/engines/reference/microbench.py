"""MPI micro-benchmarks on the Blue Gene/P model: ping-pong, bandwidth, hot-spot (seed 002 §3).

Seed 002 characterises MPI on BG/P with a handful of traffic patterns:
ping-pong latency and windowed unidirectional bandwidth between two
processes (§3.1-3.3, Figs. 2-4), two overlapping streams (§3.4, Fig. 5),
several streams at once (§3.5, Fig. 6a), many workers ping-ponging one
master (§3.6, Fig. 6b) and one process sending to or receiving from up to six
neighbours (§3.7, Fig. 7).

:class:`Messenger` is the message layer these run on: a message of ``n``
bytes is ``ceil(n / d)`` packets of up to ``d`` application bytes (a packet's
256 bytes less the DMA header), at least one.  The sending core pays the
sender's share of the MPI call cost, then hands the message to the node's DMA
engine (:class:`gupsim.engines.reference.dma.DmaNetwork`), which injects its packets in order
while the core goes on; the receiving core sees the message when its last
packet has been received by its DMA engine, and then pays the receiver's
share.  Seed 002 §3.1: the DMA is zero-copy, so the cost of a call does not
grow with the message (the machine file says so with equal small and large
latencies).  Each core's calls are serialised, so a core that serves several
streams pays for each.

Each pattern is a small class registered by name (:func:`microbenchmark`);
unknown names list the valid ones.  Everything is deterministic: there is no
randomness in any pattern.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, ClassVar

import simpy

from gupsim.model.bounds import machine_topology
from gupsim.config.torus import MachineConfig
from gupsim.engines.reference.dma import DmaNetwork
from gupsim.engines.reference.networks import make_network
from gupsim.base.errors import GupsimError, UnknownNameError
from gupsim.model.costs import CostModel

MICROBENCHMARKS: dict[str, type["Microbenchmark"]] = {}


class Message:
    __slots__ = ("src", "dst", "nbytes", "left")

    def __init__(self, src: int, dst: int, nbytes: int, packets: int):
        self.src, self.dst, self.nbytes, self.left = src, dst, nbytes, packets


class Messenger:
    """MPI-like point-to-point messages between ranks of a BG/P partition."""

    def __init__(self, machine: MachineConfig, shape: str):
        if machine.dma is None:
            raise GupsimError(f"machine {machine.name} has no dma section: the micro-benchmarks model BG/P")
        self.machine = machine
        self.env = simpy.Environment()
        self.topology = machine_topology(machine, shape)
        self.ppn = machine.cpu.processes_per_node
        self.net: DmaNetwork = make_network(self.env, self.topology, machine, self.ppn)  # type: ignore[assignment]
        self.cost = CostModel.from_machine(machine)
        self.num_ranks = self.net.num_ranks
        self._cpu_free_at: dict[int, float] = {}
        self._outq: dict[tuple[int, int], deque] = {}
        self._wake: dict[tuple[int, int], simpy.Event | None] = {}
        self._done: dict[int, deque] = {}
        self._waiters: dict[int, list] = {}
        #: (src, dst) -> [(time, cumulative data bytes)] per packet received, when a pattern asks for it.
        self.packet_log: dict[tuple[int, int], list] | None = None

    # ------------------------------------------------------------------ placement

    def rank(self, node: int, core: int = 0) -> int:
        if not (0 <= core < self.ppn):
            raise GupsimError(f"core {core}: this mode has {self.ppn} process(es) per node")
        return node * self.ppn + core

    def farthest_node(self, node: int = 0) -> int:
        """The lowest-numbered node farthest (in hops) from ``node``."""
        import numpy as np

        n = self.topology.num_nodes
        hops = self.topology.hops_array(np.full(n, node), np.arange(n))
        return int(np.argmax(hops))

    # ------------------------------------------------------------------ the calls

    def _cpu(self, rank: int, seconds: float):
        start = max(self.env.now, self._cpu_free_at.get(rank, 0.0))
        self._cpu_free_at[rank] = start + seconds
        return self.env.timeout(start + seconds - self.env.now)

    def send(self, src: int, dst: int, nbytes: int):
        """Generator: the sender's call cost; the DMA then moves the message asynchronously."""
        yield self._cpu(src, self.cost.mpi_send(nbytes) * self.machine.cycle_s)
        packets = max(1, math.ceil(nbytes / self.net.max_data_bytes))
        # One DMA injection queue per torus direction (and one for the node itself), so messages
        # to different neighbours leave at once (seed 002 §3.7, fan-out) while one direction keeps order.
        s_node, d_node = self.net.node_of(src), self.net.node_of(dst)
        queue = (src, self.net.route(s_node, d_node)[0] if s_node != d_node else -1)
        self._outq.setdefault(queue, deque()).append(Message(src, dst, nbytes, packets))
        if queue not in self._wake:
            self._wake[queue] = None
            self.env.process(self._injector(queue))
        wake = self._wake[queue]
        if wake is not None and not wake.triggered:
            wake.succeed()
        self._ensure_receiver(dst)

    def recv(self, rank: int, src: int | None = None):
        """Generator: wait for a whole message (from ``src``, or anyone), then pay the receiver's cost."""
        self._ensure_receiver(rank)
        done = self._done[rank]
        msg = next((m for m in done if src is None or m.src == src), None)
        if msg is not None:
            done.remove(msg)
        else:
            event = self.env.event()
            self._waiters[rank].append((src, event))
            msg = yield event
        yield self._cpu(rank, self.cost.mpi_recv(msg.nbytes) * self.machine.cycle_s)
        return msg

    # ------------------------------------------------------------------ DMA side

    def _injector(self, key: tuple[int, int]):
        src = key[0]
        net, queue, hdr = self.net, self._outq[key], self.net.dma.header_bytes
        per = net.max_data_bytes
        while True:
            while not queue:
                self._wake[key] = self.env.event()
                yield self._wake[key]
            msg = queue.popleft()
            left = msg.nbytes
            for _ in range(msg.left):
                data = min(left, per)
                left -= data
                pkt = net.make_packet(src, msg.dst, data + hdr, message=msg)
                if not net.try_inject(pkt):
                    yield net.request_injection(pkt)
                    net.launch(pkt)

    def _ensure_receiver(self, rank: int) -> None:
        if rank not in self._done:
            self._done[rank], self._waiters[rank] = deque(), []
            self.env.process(self._receiver(rank))

    def _receiver(self, rank: int):
        box, net = self.net.inbox[rank], self.net
        while True:
            yield box.wait()
            while box.items:
                pkt = box.items.popleft()
                net.consumed(pkt)
                msg = pkt.message
                if self.packet_log is not None:
                    log = self.packet_log.setdefault((msg.src, msg.dst), [(0.0, 0)])
                    log.append((self.env.now, log[-1][1] + pkt.payload - net.dma.header_bytes))
                msg.left -= 1
                if msg.left == 0:
                    self._complete(rank, msg)

    def _complete(self, rank: int, msg: Message) -> None:
        for i, (src, event) in enumerate(self._waiters[rank]):
            if src is None or src == msg.src:
                del self._waiters[rank][i]
                event.succeed(msg)
                return
        self._done[rank].append(msg)

    def run(self, *processes) -> None:
        procs = [self.env.process(p) for p in processes]
        self.env.run(until=simpy.AllOf(self.env, procs))


# ---------------------------------------------------------------------- patterns


class Microbenchmark:
    """Protocol: ``run(machine, shape, **params) -> dict`` of results (seconds, bits per second)."""

    name: ClassVar[str]

    def run(self, machine: MachineConfig, shape: str, **params: Any) -> dict[str, Any]:
        raise NotImplementedError


def register_microbenchmark(cls: type[Microbenchmark]) -> type[Microbenchmark]:
    MICROBENCHMARKS[cls.name] = cls
    return cls


def microbenchmark(name: str) -> Microbenchmark:
    if name not in MICROBENCHMARKS:
        raise UnknownNameError("micro-benchmark", name, sorted(MICROBENCHMARKS))
    return MICROBENCHMARKS[name]()


@register_microbenchmark
class PingPong(Microbenchmark):
    """One-way latency: half the mean round trip of ``iters`` ping-pongs between two ranks."""

    name = "ping-pong"

    def run(self, machine, shape, *, src: int = 0, dst: int | None = None, nbytes: int = 0,
            iters: int = 4, farthest: bool = False) -> dict[str, Any]:
        m = Messenger(machine, shape)
        if farthest:
            dst = m.rank(m.farthest_node(m.net.node_of(src)))
        if dst is None:
            dst = m.rank(1) if m.topology.num_nodes > 1 else 1
        out: dict[str, float] = {}

        def ping():
            t0 = m.env.now
            for _ in range(iters):
                yield from m.send(src, dst, nbytes)
                yield from m.recv(src, dst)
            out["latency_s"] = (m.env.now - t0) / (2 * iters)

        def pong():
            for _ in range(iters):
                yield from m.recv(dst, src)
                yield from m.send(dst, src, nbytes)

        m.run(ping(), pong())
        hops = len(m.net.route(m.net.node_of(src), m.net.node_of(dst)))
        return out | {"hops": hops, "src": src, "dst": dst}


@register_microbenchmark
class Bandwidth(Microbenchmark):
    """Windowed unidirectional bandwidth of one or more concurrent streams.

    Each stream (sender, receiver) repeats ``iters`` times: the sender posts
    ``window`` messages of ``nbytes``, the receiver takes them and answers with
    one 0-byte acknowledgement.  Every stream's rate is measured up to the
    moment the first stream finishes, so all rates share one time window in
    which every stream was running.  A message counts once the receiving
    application has received it, and the one message it is receiving when
    the window closes counts for the bytes the DMA has already written.
    Counting whole received messages only, a stream whose last 64 KB message
    had landed 0.1 us before the window closed, but whose receive call ends
    1.3 us later, lost that message entirely (1/8 of its bytes at window 4,
    iters 2): fan-out to two neighbours showed 5,638 Mb/s, not about twice
    one stream's 3,006 (seed 002 Fig. 7).  Counting every packet on arrival
    would instead also count a busy receiver's backlog, which overstates
    small-message rates (Fig. 6a's 256 B ratio).
    """

    name = "bandwidth"

    def run(self, machine, shape, *, pairs: list[tuple[int, int]], nbytes: int, window: int = 8,
            iters: int = 2) -> dict[str, Any]:
        m = Messenger(machine, shape)
        m.packet_log = {}
        received = [[] for _ in pairs]  # (time, cumulative bytes received by the application) per stream
        finish = [math.inf] * len(pairs)

        def sender(i, s, r):
            for _ in range(iters):
                for _ in range(window):
                    yield from m.send(s, r, nbytes)
                yield from m.recv(s, r)
            finish[i] = m.env.now

        def receiver(i, s, r):
            total = 0
            for _ in range(iters):
                for _ in range(window):
                    yield from m.recv(r, s)
                    total += nbytes
                    received[i].append((m.env.now, total))
                yield from m.send(r, s, 0)

        procs = []
        for i, (s, r) in enumerate(pairs):
            procs += [sender(i, s, r), receiver(i, s, r)]
        m.run(*procs)
        stop = min(finish)
        rates = []
        for log, (s, r) in zip(received, pairs):
            done = max((b for t, b in log if t <= stop), default=0)
            arrived = max((b for t, b in m.packet_log.get((s, r), ()) if t <= stop), default=0)
            arriving = min(arrived - done, nbytes)  # landed bytes of the one message being received
            rates.append(8 * (done + arriving) / stop)
        return {"bits_per_s": rates, "aggregate_bits_per_s": sum(rates), "window_s": stop,
                "throttle_waits": m.net.throttle_waits}


@register_microbenchmark
class HotSpot(Microbenchmark):
    """Every worker ping-pongs one master (rank 0); the mean one-way latency the workers see."""

    name = "hot-spot"

    def run(self, machine, shape, *, nbytes: int = 0, iters: int = 2) -> dict[str, Any]:
        m = Messenger(machine, shape)
        workers = [m.rank(n) for n in range(1, m.topology.num_nodes)]
        if not workers:
            raise GupsimError("hot-spot needs at least two nodes")
        latency: list[float] = []

        def master():
            for _ in range(iters * len(workers)):
                msg = yield from m.recv(0)
                yield from m.send(0, msg.src, nbytes)

        def worker(w):
            t0 = m.env.now
            for _ in range(iters):
                yield from m.send(w, 0, nbytes)
                yield from m.recv(w, 0)
            latency.append((m.env.now - t0) / (2 * iters))

        m.run(master(), *[worker(w) for w in workers])
        return {"latency_s": sum(latency) / len(latency), "workers": len(workers)}
