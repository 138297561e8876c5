"""``routed``: software routing and aggregation (seed 000 §4.2-4.3, Figures 1 and 2).

Instead of one bucket per destination (which shrinks to one update per
message on a large machine, seed 000 Table 3), every process keeps one
bucket per *software router*: the processes that share all but one of its
coordinates.  An update from ``<x_i, y_i, z_i>`` to ``<x_j, y_j, z_j>``
travels x first, then y, then z, through the routers ``<x_j, y_i, z_i>``
and ``<x_j, y_j, z_i>``, and is re-bucketed at each.  With ``X + Y + Z``
buckets of ``1024 / (X + Y + Z)`` updates each (three of them receive
buckets, one per dimension), the 1024-pending rule holds by construction and
a 64x32x32 machine still packs 8 updates into a packet.

In virtual-node mode (seed 000 §6.2) each node runs two processes; the
process's core is a fourth software dimension, routed after x, y and z ("an
additional software routing hop"), with one more receive bucket.

The process loop is Figure 1:

1. *send*: for each dimension, if one of its buckets is full and the
   injection FIFO has room, write the bucket's packets (raw device, Table 1
   send cycles); a full bucket that finds no room counts as a *blocked*
   send (the send-blocking factor, SBF = blocked / attempted sends);
2. *receive*: for each dimension, while a packet from that dimension is
   waiting and its receive bucket is empty, receive it (Table 1 receive
   cycles) and route its updates (Figure 2); stop at the first update whose
   next bucket is full -- the rest stays in the receive bucket, and the
   dimension's next packet stays in the network.  Every pass first tries
   again to route what a receive bucket kept, even when no packet has
   arrived: Figure 1 calls ``routeUpdates(recvbuf[dim])`` only inside
   "while (packet available on dim)", which read literally would leave those
   updates until the dimension's next packet came.  That reading is gupsim's
   repair of the pseudo-code, not the seed's text;
3. *form*: if no bucket is full, generate one update and route it.

**Two SBFs.**  When a pass does nothing, the model sleeps until a packet
arrives or a FIFO drains; the real loop spins, and every pass tests the FIFO
of every full bucket again.  ``send_blocking_factor`` counts one test per
pass that did something, over the whole run: a process that waits long once
counts one blocked test, so it says how often the CPU found a FIFO full.
``send_blocking_factor_polled`` adds the tests of the spinning passes (a
wait of ``t`` seconds with ``f`` full buckets adds ``f * floor(t / pass)``
blocked tests, a pass being ``cpu.poll_cycles_per_dimension`` per software
dimension), in the steady-state window: it says how long the CPU waited.
Seed 000 defines the SBF by test calls (§6.1, for the baseline) and does not
say which its routed code counted, so both are reported.  Neither changes
any timing: a spinning process and a sleeping one wake at the same event.

At most one bucket per dimension is ever full (an update is only inserted
when no bucket of its dimension is full), so the send logic needs no search.

Termination: once a process has formed all its updates it keeps routing,
and whenever it finds nothing to send or receive it flushes its largest
non-empty bucket, so the last partial buckets drain.  The run ends when every
update has been applied (a perfect termination detector, as for the
baseline's ``counter`` mode).

Costs: ``cpu.route_hop_cycles`` per update per software hop (lookup, insert,
copy out of the receive buffer; seed 000 §6.2 estimates about 128 cycles per
hop in all, packet costs included), plus the raw-device send and receive
cycles of each packet and ``t_u`` per local update.  On a machine with a
``cache`` section each hop also pays the expected L1 misses on the next-hop
lookup table (:func:`gupsim.model.cpu_cache.routed_lookup_miss_cycles`): nothing up to
a few thousand processes, about 7 cycles per hop at 16,384 and 21 at 65,536,
where the N-byte table outgrows the 32 KB L1 (seed 000 §4.3).  With
``cache.routed_working_set: round-robin`` they are the misses of the whole
working set in the PPC440's round-robin L1 (:mod:`gupsim.model.routed_cache`).
"""

from __future__ import annotations

import math
from collections import deque

from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from gupsim.algorithms.base import OPTIONS_CONFIG, Algorithm, register_algorithm, window_counts
from gupsim.algorithms.routed_warm import WarmState, warm_fill
from gupsim.model import hpcc
from gupsim.model.bounds import StatedCosts, wire_bytes
from gupsim.model.packet_format import data_header_bytes
from gupsim.model.routed_cache import ROUTED_CACHE_MODELS
from gupsim.model.run_config import stream_layout
from gupsim.base.errors import GupsimError

UPDATE_BYTES = 8


class _Rank:
    """Per-process state of the routed algorithm."""

    __slots__ = ("buckets", "full", "recvbuf", "waiting", "sending", "coords")

    def __init__(self, ndims: int, coords: tuple[int, ...]):
        self.buckets: dict[int, list] = {}  # router rank -> [(value, owner), ...]
        self.full: list[int | None] = [None] * ndims  # the one full bucket of each dimension
        self.recvbuf: list[list] = [[] for _ in range(ndims)]
        self.waiting: list[deque] = [deque() for _ in range(ndims)]  # arrived packets not yet received
        self.sending: list[list | None] = [None] * ndims  # packets of a full bucket still to write
        self.coords = coords


@register_algorithm("routed")
class Routed(Algorithm):
    memory_per_rank_bytes = 100_000  # measured peak 67-86 KB per process on 4x4x4 and 8x8x8
    holds_pending = True
    warm_start = True

    class Options(BaseModel):
        model_config = OPTIONS_CONFIG
        software_header_bytes: int = Field(default=16, ge=0, description="per-packet software header (assumed)")
        bucket_capacity: int | None = Field(default=None, ge=1, description="default 1024 / (X + Y + Z [+ cores])")
        receive_buckets: Literal["per-dimension", "shared"] = Field(
            default="per-dimension",
            description="shared: one receive bucket for every dimension, a what-if that can deadlock: a "
                        "packet stuck on a full bucket stops all receiving, which back-pressures the senders")

    def __init__(self, sim, options):
        super().__init__(sim, options)
        topo = sim.topology
        self.lengths = list(topo.shape) + ([sim.ppn] if sim.ppn > 1 else [])
        self.ndims = len(self.lengths)
        self.capacity = options.bucket_capacity or 1024 // sum(self.lengths)
        if self.capacity * sum(self.lengths) > 1024:
            # X + Y + Z (+ cores) buckets of this size could hold more than HPCC's 1024 pending updates.
            raise GupsimError(f"routed: bucket_capacity={self.capacity} x {sum(self.lengths)} buckets exceeds "
                              f"the 1024 pending updates HPCC allows (at most {1024 // sum(self.lengths)} here)")
        if self.capacity < 1:
            raise GupsimError(f"routed: {'x'.join(map(str, self.lengths))} has more software routers than 1024 pending updates can give one bucket each")
        per_packet = (sim.net.max_data_bytes - options.software_header_bytes) // UPDATE_BYTES
        if per_packet < 1:
            raise GupsimError("routed: software_header_bytes leaves no room for an update in a packet")
        self.per_packet = per_packet
        # Expected L1-miss cycles per software hop, by the machine's model of routed's working set.
        cache = getattr(sim.machine, "cache", None)
        working_set = ROUTED_CACHE_MODELS[cache.routed_working_set] if cache is not None else ROUTED_CACHE_MODELS["lookup"]
        self.lookup_miss_cycles = working_set(cache, self.lengths, sim.num_ranks, self.capacity, per_packet, sim.ppn)
        self.hop_cycles = sim.machine.cpu.route_hop_cycles + self.lookup_miss_cycles
        self.shared_receive = options.receive_buckets == "shared"
        # software coordinates of every rank: (x, y, z[, core])
        self.strides = [1]
        for length in self.lengths[:-1]:
            self.strides.append(self.strides[-1] * length)
        self.sends = 0
        self.sends_blocked = 0
        # A waiting process sleeps until an event; the real loop spins, re-testing every full bucket's FIFO
        # once per pass.  Those re-tests count in seed 000's SBF ("the number of times [the test] is called").
        cpu = sim.machine.cpu
        self.poll_pass_s = cpu.poll_cycles_per_dimension * len(self.lengths) / cpu.clock_hz
        self.polls = 0
        self.packets = 0
        self.packet_updates = 0
        self.hops = 0
        self._warm: WarmState | None = None


    states_costs = True

    @classmethod
    def stated_costs(cls, machine, dims, options) -> StatedCosts:
        """Per software hop (one per dimension whose coordinate differs, and the core in virtual-node mode):
        ``route_hop_cycles`` and the raw send and receive of the bucket's packets shared by its updates."""
        ppn = machine.cpu.processes_per_node
        lengths = list(dims) + ([ppn] if ppn > 1 else [])
        ranks = math.prod(lengths)
        header = data_header_bytes(machine) + options.software_header_bytes
        per_packet = (machine.network.max_payload_bytes - header) // UPDATE_BYTES
        capacity = options.bucket_capacity or 1024 // sum(lengths)
        if per_packet < 1 or capacity < 1:
            raise GupsimError("routed: no update fits a packet or a bucket on this machine and shape")
        full, rest = divmod(capacity, per_packet)
        payloads = [header + UPDATE_BYTES * n for n in [per_packet] * full + ([rest] if rest else [])]
        packet_cycles = sum(machine.costs.send(p) + machine.costs.recv(p) for p in payloads) / capacity
        hops = sum(1 - 1 / k for k in lengths)  # an update's software hops, a local one's none
        remote = hops / (1 - 1 / ranks) * (machine.cpu.route_hop_cycles + packet_cycles) if ranks > 1 else 0.0
        return StatedCosts("routed", machine.cpu.generate_cycles + machine.cpu.update_cycles, remote,
                           capacity / len(payloads), wire_bytes(machine, payloads) / capacity,
                           f"t_g + t_u, and at each of {hops:.3g} software hops route_hop_cycles and its packet's "
                           "raw send and receive, L1 misses left out")

    # ------------------------------------------------------------------ geometry

    def _rank_coords(self, rank: int) -> tuple[int, ...]:
        sim = self.sim
        node, core = divmod(rank, sim.ppn)
        coords = sim.topology.coords(node)
        return tuple(coords) + ((core,) if sim.ppn > 1 else ())

    def _rank_of(self, coords: tuple[int, ...] | list[int]) -> int:
        sim = self.sim
        x, y, z = coords[0], coords[1], coords[2]
        node = sim.topology.node_id((x, y, z))
        return node * sim.ppn + (coords[3] if sim.ppn > 1 else 0)

    def _next_hop(self, st: _Rank, dest: int) -> tuple[int, int]:
        """(dimension, router rank) of the next software hop towards ``dest``."""
        mine = st.coords
        theirs = self._rank_coords(dest)
        for d in range(self.ndims):
            if mine[d] != theirs[d]:
                hop = list(mine)
                hop[d] = theirs[d]
                return d, self._rank_of(hop)
        raise AssertionError("next hop asked for a local update")

    # ------------------------------------------------------------------ warm start

    def warm_state(self, registers: np.ndarray) -> WarmState:
        """Buckets pre-filled from every process's own stream (:mod:`gupsim.algorithms.routed_warm`)."""
        sim = self.sim
        coords = np.array([self._rank_coords(r) for r in range(sim.num_ranks)], dtype=np.int64)
        return warm_fill(registers, stream_layout(sim.run), coords, self.lengths, self.capacity,
                         sim.run.updates_per_process, sim.run.seed)

    def _warm_up(self, rank: int, st: _Rank, stream) -> None:
        """Start ``rank`` from the warm state: its pre-filled updates taken from its stream, its buckets
        filled, the ones it owns applied now, at no CPU cost (gupsim.algorithms.routed_warm)."""
        sim = self.sim
        if self._warm is None:
            self._warm = self.warm_state(np.array([hpcc.starts(s.first) for s in sim.streams], dtype=np.uint64))
        warm, nslots, layout = self._warm, sum(self.lengths), stream_layout(sim.run)
        for _ in range(int(warm.taken[rank])):
            stream.take()
        offset = 0
        for d, length in enumerate(self.lengths):
            for j in range(length):
                row = rank * nslots + offset + j
                n = int(warm.bucket_lengths[row])
                if n:
                    hop = list(st.coords)
                    hop[d] = j
                    values = [int(v) for v in warm.bucket_values[row, :n]]
                    st.buckets[self._rank_of(hop)] = [(v, layout.owner_of(v)) for v in values]
            offset += length
        for value in warm.locals_of(rank).tolist():
            sim.apply(rank, [int(value)])

    # ------------------------------------------------------------------ Figure 2

    def _route(self, rank: int, st: _Rank, cpu, updates: list, start: int) -> int:
        """routeUpdates: apply or re-bucket updates from ``start``; return where it stopped."""
        sim, cost = self.sim, self.sim.cost
        hop_cycles = self.hop_cycles
        i = start
        while i < len(updates):
            value, owner = updates[i]
            if owner == rank:
                cpu.spend(cost.update)
                sim.apply(rank, [value], delay_s=cpu.debt_s)
            else:
                d, router = self._next_hop(st, owner)
                if st.full[d] is not None:
                    return i
                self._insert(st, d, router, value, owner, cpu, hop_cycles)
            i += 1
        return i

    def _insert(self, st, d: int, router: int, value, owner: int, cpu, hop_cycles: float) -> None:
        """One software hop: append the update to the bucket of ``router`` (dimension ``d``)."""
        bucket = st.buckets.setdefault(router, [])
        bucket.append((value, owner))
        cpu.spend(hop_cycles)
        self.hops += 1
        if len(bucket) >= self.capacity:
            st.full[d] = router

    # ------------------------------------------------------------------ sending

    def _packets_of(self, bucket: list) -> list[list]:
        n = self.per_packet
        return [bucket[i:i + n] for i in range(0, len(bucket), n)]

    def _write_packets(self, rank: int, st: _Rank, cpu, d: int) -> bool:
        """Write as many packets of dimension ``d``'s full bucket as the FIFO takes; True when done."""
        net, cost = self.sim.net, self.sim.cost
        router = st.full[d]
        if st.sending[d] is None:
            st.sending[d] = self._packets_of(st.buckets.pop(router))
        pending = st.sending[d]
        # A BG/P packet's chunks also hold the DMA header (gupsim.engines.reference.dma), before the software header.
        hdr = net.data_header_bytes + self.options.software_header_bytes
        while pending:
            updates = pending[0]
            pkt = net.make_packet(rank, router, hdr + UPDATE_BYTES * len(updates), updates=updates, message=d)
            if not net.try_inject(pkt):
                return False
            pending.pop(0)
            cpu.spend(cost.raw_send(pkt.payload))
            self.packets += 1
            self.packet_updates += len(updates)
        st.sending[d] = None
        st.full[d] = None
        return True

    def _send_logic(self, rank: int, st: _Rank, cpu) -> bool:
        progressed = False
        for d in range(self.ndims):
            if st.full[d] is None:
                continue
            self.sends += 1
            if self._write_packets(rank, st, cpu, d):
                progressed = True
            else:
                self.sends_blocked += 1
        return progressed

    def _flush_partial(self, rank: int, st: _Rank, cpu) -> bool:
        """FinishLogic: when idle after forming every update, send the largest partial bucket."""
        candidates = [(len(b), r) for r, b in st.buckets.items() if b and r not in st.full]
        if not candidates:
            return False
        _, router = max(candidates)
        d = self._next_dim(st, router)
        if st.full[d] is not None:
            return False
        st.full[d] = router
        self._write_packets(rank, st, cpu, d)
        return True

    def _next_dim(self, st: _Rank, router: int) -> int:
        theirs = self._rank_coords(router)
        return next(d for d in range(self.ndims) if theirs[d] != st.coords[d])

    @staticmethod
    def _pending(st: _Rank) -> int:
        """Updates held by the process: buckets, packets not yet written, receive buckets."""
        held = sum(len(b) for b in st.buckets.values()) + sum(len(r) for r in st.recvbuf)
        return held + sum(len(u) for pkts in st.sending if pkts for u in pkts)

    # ------------------------------------------------------------------ receiving

    def _receive_logic(self, rank: int, st: _Rank, cpu) -> bool:
        sim, net, cost = self.sim, self.sim.net, self.sim.cost
        inbox = net.inbox[rank].items
        while inbox:  # sort arrivals by the dimension they came from
            pkt = inbox.popleft()
            # Per dimension, an update only moves to a higher dimension, so waits are ordered and
            # cannot form a cycle (seed 000 §4.3); one shared bucket loses that order.
            st.waiting[0 if self.shared_receive else pkt.message].append(pkt)
        progressed = False
        for d in range(self.ndims):
            while True:
                buf = st.recvbuf[d]
                if not buf:
                    if not st.waiting[d]:
                        break
                    pkt = st.waiting[d].popleft()
                    cpu.spend(cost.raw_recv(pkt.payload))
                    net.release_later(cpu.debt_s, net.reception_fifo(pkt), pkt.chunks)
                    buf = st.recvbuf[d] = list(pkt.updates)
                    sim.check_pending(rank, self._pending(st))
                    progressed = True
                done = self._route(rank, st, cpu, buf, 0)
                if done:
                    progressed = True
                st.recvbuf[d] = buf[done:]
                if st.recvbuf[d]:
                    break
        return progressed

    # ------------------------------------------------------------------ the process

    def process(self, rank: int):
        sim, env, cost = self.sim, self.sim.env, self.sim.cost
        net = sim.net
        cpu, stream, inbox = sim.cpus[rank], sim.streams[rank], net.inbox[rank]
        st = _Rank(self.ndims, self._rank_coords(rank))
        if sim.run.warm_start:
            self._warm_up(rank, st, stream)
        fifos = net.dimension_fifos(rank, self.ndims)  # "can send a packet on dim"
        while True:
            progressed = self._send_logic(rank, st, cpu)
            progressed |= self._receive_logic(rank, st, cpu)
            if stream.remaining:
                if all(f is None for f in st.full):
                    value, owner = stream.take()
                    cpu.spend(cost.generate)
                    self._route(rank, st, cpu, [(value, owner)], 0)
                    progressed = True
            elif not progressed and not any(st.waiting) and not any(st.recvbuf):
                progressed = self._flush_partial(rank, st, cpu)
            if cpu.debt:
                yield cpu.flush()
            if not progressed:
                # Nothing to do until a packet arrives or the injection FIFO drains.
                waited_from = env.now
                yield env.any_of([inbox.wait()] + self._full_fifo_waits(st, fifos))
                full = sum(f is not None for f in st.full)
                self.polls += int((env.now - waited_from) / self.poll_pass_s) * full

    def _full_fifo_waits(self, st, fifos) -> list:
        """Room events on the FIFOs of the dimensions whose bucket is full (each FIFO once)."""
        waits = []  # distinct FIFOs (shared FIFOs: one for every dimension)
        for d in range(self.ndims):
            if st.full[d] is not None and fifos[d] not in waits:
                waits.append(fifos[d])
        return [fifo.when_free(self.sim.net.cfg.max_chunks_per_packet) for fifo in waits]

    def deadlock_hint(self) -> str:
        net = self.sim.machine.network
        if net.fifos == "shared" and not self.shared_receive and self.sim.machine.dma is None:
            return ("; routed is deadlock-free only with FIFOs per dimension (seed 000 §4.3: 'can send a packet "
                    "on dim'): --set network.fifos=per-dimension")
        return ""

    def counters(self) -> dict[str, float]:
        return {"packets": self.packets, "updates": self.packet_updates, "wire": self.sim.net.wire_bytes_injected,
                "send_tests": self.sends, "send_tests_blocked": self.sends_blocked, "polls": self.polls,
                "hops": self.hops}

    def metrics(self, window, totals) -> dict[str, float]:
        sent = window_counts(window, totals, ("packets", "updates", "wire"), ("packets",))
        packets, updates, wire = sent["packets"], sent["updates"], sent["wire"]
        per_packet = updates / packets if packets else math.nan
        tested = window_counts(window, totals, ("send_tests", "send_tests_blocked", "polls"),
                               ("send_tests", "polls"))
        tests, blocked, polls = tested["send_tests"], tested["send_tests_blocked"], tested["polls"]
        sends, sends_blocked = totals["send_tests"], totals["send_tests_blocked"]
        return {
            "packets_sent": totals["packets"],
            "updates_per_packet": per_packet,
            "updates_per_message": per_packet,
            # blocked tests / tests over the whole run, one test per pass that did something
            "send_blocking_factor": sends_blocked / sends if sends else 0.0,
            # the same with the tests of the passes a waiting process spins, in the steady-state window (seed
            # 000's runs were long: their fill and drain weigh nothing); which of the two seed 000 measured for
            # the routed code, it does not say
            "send_blocking_factor_polled": (blocked + polls) / (tests + polls) if tests + polls else 0.0,
            "blocked_polls": totals["polls"],
            "software_hops_per_update": totals["hops"] / self.sim.total_updates,
            # wire bytes per update per software hop in the steady-state window: the whole run's figure also
            # counts the partial buckets flushed at the end (gupsim.engines.run's network bound uses this one)
            "window_bytes_per_hop": wire / updates if updates else math.nan,
            "bucket_capacity": self.capacity,
            "lookup_miss_cycles_per_hop": self.lookup_miss_cycles,
        }
