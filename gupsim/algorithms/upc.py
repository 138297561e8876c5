"""``upc``: each remote update is a read-modify-write through a global address space, a window of them in flight.

The UPC RandomAccess of seed 004 (L120): a shared ``Table`` cyclically distributed over the processes, and
each process runs the single-CPU loop on its share of the updates.  ``Table[i] ^= v`` on a shared array is
a remote load and then a remote store (docs/research/cray-x1-t3e.md, finding 6), issued by the hardware, not
by the owner's processor; vector look-ahead keeps many of them in flight at once.  Per update of a process:

1. generate it (``t_g``); a local one is applied at once (``t_u``);
2. a remote one waits for a free slot of the ``window`` outstanding references, then sends a **read
   request** packet (the raw send cost of ``payload_bytes``) to the owner;
3. the owner's memory system answers with a **reply** packet at once, without its processor;
4. the reply frees nothing yet: the reference completes ``remote_latency_cycles`` after it arrives (the
   part of a remote reference's round trip that the network model does not carry: the remote memory
   access and the network interfaces), and only then is the XORed value sent back as a **write** packet
   and the slot freed;
5. the owner's memory system applies the write when it arrives.

A process drains its reception queue whenever it waits (as ``one-packet``), so the replies it owes others
keep flowing while its own window is full.  No update is held in software: the 1,024-pending rule does not
apply.  ``read_modify_write=False`` sends only the write (a posted store, no reply, no window wait), the
traffic of ``one-packet``.  No fast kernel models it (SimPy only).
"""

from __future__ import annotations

from collections import deque

from pydantic import BaseModel, Field

from gupsim.algorithms.base import OPTIONS_CONFIG, Algorithm, register_algorithm

#: What a packet of this algorithm is (carried in ``Packet.message``; ``Packet.updates`` holds the value).
GET, REPLY, PUT = "upc-get", "upc-reply", "upc-put"


@register_algorithm("upc")
class Upc(Algorithm):
    memory_per_rank_bytes = 120_000  # as one-packet: no software buffers beyond the window

    class Options(BaseModel):
        model_config = OPTIONS_CONFIG
        window: int = Field(default=64, ge=1, description="remote references a process keeps in flight "
                                                          "(vector look-ahead)")
        remote_latency_cycles: float = Field(
            default=0.0, ge=0, description="cycles a remote reference takes beyond its packets' network "
                                           "round trip (remote memory access, network interfaces)")
        read_modify_write: bool = Field(default=True, description="a read round trip before each remote "
                                                                  "write; False: a posted store only")
        payload_bytes: int = Field(default=8, ge=8, description="bytes each packet carries")

    def __init__(self, sim, options):
        super().__init__(sim, options)
        ranks = sim.num_ranks
        self.outstanding = [0] * ranks
        #: Per rank: replies owed to others, ready at once (the memory system answers without the CPU).
        self.owed: list[deque] = [deque() for _ in range(ranks)]
        #: Per rank: (completion time, owner, value) of references whose reply has arrived.
        self.completing: list[deque] = [deque() for _ in range(ranks)]
        self.latency_s = options.remote_latency_cycles / sim.machine.cpu.clock_hz
        self.gets = self.puts = self.replies = self.sends_blocked = 0
        self.window_full_s = 0.0

    # ------------------------------------------------------------------ packets

    def _receive(self, rank: int, cpu) -> None:
        """Drain the reception queue: answer reads, apply writes, start the completion of replies."""
        sim, net = self.sim, self.sim.net
        inbox, now = net.inbox[rank].items, sim.env.now
        while inbox:
            pkt = inbox.popleft()
            net.release_later(cpu.debt_s, net.reception_fifo(pkt), pkt.chunks)
            kind = pkt.message
            if kind == GET:
                self.owed[rank].append((pkt.src, pkt.updates))
            elif kind == REPLY:
                self.completing[rank].append((now + self.latency_s, pkt.src, pkt.updates))
            else:
                sim.apply(rank, [pkt.updates], delay_s=cpu.debt_s)

    def _inject(self, rank: int, cpu, dst: int, value: int, kind: str):
        """Send one packet, draining the reception queue while the injection FIFO is full."""
        sim, env, net = self.sim, self.sim.env, self.sim.net
        pkt = net.make_packet(rank, dst, self.options.payload_bytes, updates=value, message=kind)
        if net.try_inject(pkt):
            return
        self.sends_blocked += 1
        room, inbox = net.request_injection(pkt), net.inbox[rank]
        while not room.triggered:
            yield env.any_of([room, inbox.wait()])
            self._receive(rank, cpu)
            yield cpu.flush()
        net.launch(pkt)

    def _serve(self, rank: int, cpu):
        """Send what is due: the replies owed, then the writes of completed references."""
        owed, completing = self.owed[rank], self.completing[rank]
        while owed or (completing and completing[0][0] <= self.sim.env.now):
            if owed:
                src, value = owed.popleft()
                self.replies += 1
                yield from self._inject(rank, cpu, src, value, REPLY)
            else:
                _, owner, value = completing.popleft()
                self.outstanding[rank] -= 1
                self.puts += 1
                yield from self._inject(rank, cpu, owner, value, PUT)

    def _wait(self, rank: int):
        """Wait for a packet, or for the next reference to complete."""
        env, completing = self.sim.env, self.completing[rank]
        events = [self.sim.net.inbox[rank].wait()]
        if completing:
            events.append(env.timeout(max(0.0, completing[0][0] - env.now)))
        yield env.any_of(events)

    # ------------------------------------------------------------------ the process

    def process(self, rank: int):
        sim, env, cost = self.sim, self.sim.env, self.sim.cost
        cpu, stream = sim.cpus[rank], sim.streams[rank]
        window, rmw = self.options.window, self.options.read_modify_write
        send_cycles = cost.raw_send(self.options.payload_bytes)
        while True:
            self._receive(rank, cpu)
            yield from self._serve(rank, cpu)
            if stream.remaining and (self.outstanding[rank] < window or not rmw):
                value, dest = stream.take()
                cpu.spend(cost.generate)
                if dest == rank:
                    cpu.spend(cost.update)
                    sim.apply(rank, [value], delay_s=cpu.debt_s)
                    yield cpu.flush()
                    continue
                cpu.spend(send_cycles)
                if rmw:
                    self.outstanding[rank] += 1
                    self.gets += 1
                else:
                    self.puts += 1
                yield cpu.flush()
                yield from self._inject(rank, cpu, dest, value, GET if rmw else PUT)
                continue
            start = env.now
            yield from self._wait(rank)
            if stream.remaining:
                self.window_full_s += env.now - start

    def counters(self) -> dict[str, float]:
        return {"gets": self.gets, "puts": self.puts, "replies": self.replies,
                "sends_blocked": self.sends_blocked, "window_full_s": self.window_full_s}

    def metrics(self, window, totals) -> dict[str, float]:
        packets = totals["gets"] + totals["puts"] + totals["replies"]
        return {
            "packets_sent": packets,
            "remote_reads": totals["gets"],
            "remote_writes": totals["puts"],
            "send_blocking_factor": totals["sends_blocked"] / packets if packets else 0.0,
            "window_full_s": totals["window_full_s"],
        }
