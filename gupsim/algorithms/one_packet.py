"""``one-packet``: every remote update travels as its own packet.

This is the naive algorithm of IBM's UPC RandomAccess on Blue Gene/L (seed
001): the compiler turns ``Table[ran & (TableSize-1)] ^= ran`` into a
one-sided update in the communication library, so each remote update is one
packet and "performance is limited by the network".  The process loop is:

1. read every packet waiting in the reception FIFO (raw-device receive cost,
   seed 000 Table 1) and apply its update (``t_u``);
2. generate the next update (``t_g``); apply it if local, else write one
   packet to the injection FIFO (raw-device send cost).  A full FIFO stalls
   the CPU until there is room: that send counts as *blocked*, and the
   send-blocking factor is blocked sends over all sends.  While it waits the
   CPU keeps draining its reception FIFO, as any messaging layer must: a
   sender that stopped receiving would deadlock the torus once every FIFO
   on a cycle of nodes is full.

No update is held back, so the 1024-pending rule is met trivially.  The
payload and its size on the wire are options: the default is one 8-byte
update in one 32-byte chunk (44 bytes on the wire with BG/L's 8-byte header
and 4-byte trailer, seed 000 §5.1); the UPC run's 64-byte packet with 75 bytes on the
wire (seed 001, backup slide) is ``payload_bytes=64, wire_bytes=75``, and
the UPC runtime's own per-update costs are ``local_overhead_cycles`` and
``remote_overhead_cycles`` (fitted by ``gupsim/experiments/bgl_upc.py``).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from gupsim.algorithms.base import OPTIONS_CONFIG, Algorithm, register_algorithm
from gupsim.base.errors import GupsimError
from gupsim.model.bounds import StatedCosts, wire_bytes
from gupsim.model.packet_format import data_header_bytes


@register_algorithm("one-packet")
class OnePacket(Algorithm):
    memory_per_rank_bytes = 120_000  # measured peak about 115 KB per process on 8x8x8, routes excluded

    class Options(BaseModel):
        model_config = OPTIONS_CONFIG
        payload_bytes: int = Field(default=8, ge=8, description="bytes the packet carries")
        wire_bytes: int | None = Field(default=None, ge=1, description="override the bytes on the wire")
        local_overhead_cycles: float = Field(
            default=0.0, ge=0, description="runtime cost per local update beyond t_g + t_u (e.g. UPC pointer translation)")
        remote_overhead_cycles: float = Field(
            default=0.0, ge=0, description="runtime cost per remote update at the sender, beyond the raw send")

        @field_validator("wire_bytes")
        @classmethod
        def _wire_carries_payload(cls, wire: int | None, info: ValidationInfo) -> int | None:
            # The wire carries the payload and then some (header, trailer); fewer bytes is no packet at all.
            # payload_bytes is declared first, so it is validated first; it is absent only if it was invalid.
            payload = info.data.get("payload_bytes")
            if wire is not None and payload is not None and wire < payload:
                raise ValueError(f"wire_bytes={wire} is less than payload_bytes={payload}: the bytes on the "
                                 f"wire include the payload")
            return wire

    def __init__(self, sim, options):
        super().__init__(sim, options)
        self.sends = 0
        self.sends_blocked = 0
        self.blocked_s = 0.0
        largest = sim.net.max_data_bytes
        if options.payload_bytes > largest:
            raise GupsimError(f"algorithm one-packet: payload_bytes={options.payload_bytes} does not fit one "
                              f"packet (at most {largest} bytes on this machine)")
        #: The packet's bytes inside its chunks: a DMA engine's header (BG/P) rides with the update, as in
        #: routed's packets, and the raw send and receive are charged for the bytes the packet carries.
        self.packet_payload_bytes = options.payload_bytes + sim.net.data_header_bytes

    states_costs = True

    @classmethod
    def stated_costs(cls, machine, dims, options) -> StatedCosts:
        """Eq. (1) and (2) as seed 000 §3 writes them, with this algorithm's payload and overheads."""
        cpu, costs = machine.cpu, machine.costs
        processes = math.prod(dims) * cpu.processes_per_node
        payload = options.payload_bytes + data_header_bytes(machine)
        wire = options.wire_bytes if options.wire_bytes is not None else wire_bytes(machine, [payload])
        return StatedCosts("one-packet", cpu.generate_cycles + cpu.update_cycles
                           + options.local_overhead_cycles / processes,
                           costs.send(payload) + costs.recv(payload) + options.remote_overhead_cycles, 1.0, wire,
                           "t_g + t_u, and a remote update's raw send and receive of its own packet")

    def _receive(self, rank: int, cpu) -> None:
        sim, net, cost = self.sim, self.sim.net, self.sim.cost
        inbox = net.inbox[rank].items
        while inbox:
            pkt = inbox.popleft()
            cpu.spend(cost.raw_recv(pkt.payload) + cost.update)
            net.release_later(cpu.debt_s, net.reception_fifo(pkt), pkt.chunks)
            sim.apply(rank, [pkt.updates], delay_s=cpu.debt_s)

    def process(self, rank: int):
        sim, env, net, cost = self.sim, self.sim.env, self.sim.net, self.sim.cost
        cpu, stream, inbox = sim.cpus[rank], sim.streams[rank], net.inbox[rank]
        payload, wire = self.packet_payload_bytes, self.options.wire_bytes
        while stream.remaining:
            self._receive(rank, cpu)
            value, dest = stream.take()
            cpu.spend(cost.generate)
            if dest == rank:
                cpu.spend(cost.update + self.options.local_overhead_cycles)
                sim.apply(rank, [value], delay_s=cpu.debt_s)
                yield cpu.flush()
                continue
            cpu.spend(cost.raw_send(payload) + self.options.remote_overhead_cycles)
            yield cpu.flush()
            pkt = net.make_packet(rank, dest, payload, updates=value, wire_bytes=wire)
            self.sends += 1
            if not net.try_inject(pkt):
                self.sends_blocked += 1
                start = env.now
                room = net.request_injection(pkt)
                while not room.triggered:
                    yield env.any_of([room, inbox.wait()])
                    self._receive(rank, cpu)
                    yield cpu.flush()
                net.launch(pkt)
                self.blocked_s += env.now - start
        while True:
            yield inbox.wait()
            self._receive(rank, cpu)
            yield cpu.flush()

    def counters(self) -> dict[str, float]:
        return {"send_tests": self.sends, "send_tests_blocked": self.sends_blocked, "blocked_s": self.blocked_s}

    def metrics(self, window, totals) -> dict[str, float]:
        sends, blocked = totals["send_tests"], totals["send_tests_blocked"]
        return {
            "packets_sent": sends,
            "updates_per_message": 1.0,
            "updates_per_packet": 1.0,
            "send_blocking_factor": blocked / sends if sends else 0.0,
            "cpu_blocked_s": totals["blocked_s"],
        }
