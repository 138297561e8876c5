"""``dv``: the Data Vortex RandomAccess code of seed 003, Figure 4.

Each processor runs one process with two kinds of threads on different
cores, side by side:

* the **send thread** generates updates (LFSR step, destination from the
  value's bits) and the header word of each packet, into a buffer; a full
  buffer goes to the VIC by DMA (after setting a group counter), scattered
  into packets the VIC puts on its lanes.  One packet per update, local ones
  included, as Figure 4 has no branch for them.  Two buffers alternate so
  that generating overlaps the DMA; together they hold at most
  ``2 * buffer_updates <= 1024`` updates, the HPCC look-ahead rule (seed 003
  "a simple buffering system that follows the 1024 words limit").
* the **receive-and-update threads** read arrived packets out of the VIC by
  DMA (the group counter tells how many; the VIC gathers the payloads into
  cache lines) and XOR each into the table.  Two reads are kept in flight,
  so reading overlaps updating.  The updates' timing is the processor's
  memory system (:mod:`gupsim.model.dram`): ``update_threads`` threads, each
  core's fill buffers, and the processor's cap on misses in flight.

Costs: ``cpu.generate_cycles`` and ``cpu.header_cycles`` per update on the
send thread(s), the network section's DMA set-up, group counter and PCIe
rates per batch, ``cpu.update_issue_cycles`` per update on the update
threads, and the DRAM latency.  A VIC whose window of unread packets is
full stalls its send thread (counted as a blocked send).
"""

from __future__ import annotations

from collections import deque

from pydantic import BaseModel, Field

from gupsim.algorithms.base import OPTIONS_CONFIG, Algorithm, register_algorithm
from gupsim.model.dram import ProcessorMemory
from gupsim.base.errors import GupsimError

READS_IN_FLIGHT = 2  # the receive side double-buffers too: one DMA lands while the last batch is applied
LOOK_AHEAD = 1024  # HPCC: at most 1024 updates held before they are sent (seed 003 rule a)


@register_algorithm("dv")
class DataVortexUpdates(Algorithm):
    networks = ("data-vortex",)
    holds_pending = True
    memory_per_rank_bytes = 600_000  # the arrival heaps hold up to a window (4096 packets of ~120 B) per sender

    class Options(BaseModel):
        model_config = OPTIONS_CONFIG
        buffer_updates: int = Field(default=512, ge=1, le=LOOK_AHEAD // 2,
                                    description="updates per send buffer (two alternate: <= 1024 held)")
        receive_batch: int = Field(default=256, ge=1, description="most packets one DMA reads out of the VIC")
        send_threads: int = Field(default=1, ge=1, description="cores generating updates")
        update_threads: int | None = Field(default=None, ge=1,
                                           description="cores applying updates (default: the other cores)")

    def __init__(self, sim, options):
        super().__init__(sim, options)
        m = sim.machine
        cores = m.cores_per_endpoint
        self.update_threads = options.update_threads or cores - options.send_threads
        if options.update_threads is None and self.update_threads < 1:
            raise GupsimError(f"algorithm dv: send_threads={options.send_threads} leaves no core to apply updates "
                              f"({cores} cores behind one VIC of machine {m.name})")
        if self.update_threads < 1 or options.send_threads + self.update_threads > cores:
            raise GupsimError(f"algorithm dv: {options.send_threads} send + {self.update_threads} update threads "
                              f"do not fit the {cores} cores behind one VIC of machine {m.name}")
        if options.buffer_updates > m.network.vic_window_packets:
            raise GupsimError(f"algorithm dv: buffer_updates={options.buffer_updates} exceeds the VIC window of "
                              f"{m.network.vic_window_packets} packets")
        net = m.network
        pcie = net.pcie_bytes_per_s * net.pcie_efficiency
        self._out_gap_s = net.wire_bytes / pcie  # header + payload per packet, host to VIC
        self._in_gap_s = net.packet_payload_bytes / pcie  # payloads gathered into cache lines, VIC to host
        self._setup_s = (net.dma_setup_ns + net.group_counter_ns) * 1e-9
        self.memories = [ProcessorMemory(m.memory, self.update_threads, m.cpu.clock_hz, m.cpu.update_issue_cycles)
                         for _ in range(sim.num_ranks)]
        self.batches = 0
        self.batches_blocked = 0
        self.max_pending = 0

    def process(self, rank: int):
        self.sim.env.process(self._receive_thread(rank))
        yield from self._send_thread(rank)

    def _send_thread(self, rank: int):
        sim, env, net = self.sim, self.sim.env, self.sim.net
        cpu, stream, window = sim.cpus[rank], sim.streams[rank], net.injection[rank]
        per_update = (sim.machine.cpu.generate_cycles + sim.machine.cpu.header_cycles) / self.options.send_threads
        dma_done = [0.0, 0.0]  # when each of the two buffers is free again
        bus_free, k = 0.0, 0
        while stream.remaining:
            buf = k % 2
            if dma_done[buf] > env.now:
                yield env.timeout(dma_done[buf] - env.now)
            n = min(self.options.buffer_updates, stream.remaining)
            self.batches += 1
            if not window.take(n):
                self.batches_blocked += 1
                yield window.wait(n)
            pairs = [stream.take() for _ in range(n)]
            cpu.spend(n * per_update)
            yield cpu.flush()
            pending = n + (self.options.buffer_updates if dma_done[1 - buf] > env.now else 0)
            self.max_pending = max(self.max_pending, pending)
            sim.check_pending(rank, pending)
            start = max(env.now + self._setup_s, bus_free)
            bus_free = dma_done[buf] = start + n * self._out_gap_s
            net.send(rank, [d for _, d in pairs], [v for v, _ in pairs], start + self._out_gap_s, self._out_gap_s)
            k += 1

    def _receive_thread(self, rank: int):
        sim, env, net = self.sim, self.sim.env, self.sim.net
        mem, limit = self.memories[rank], self.options.receive_batch
        bus = [0.0]

        def read(got):  # DMA the payloads of ``got`` out of the VIC; returns (values, sources, ready time)
            ready = max(env.now + self._setup_s, bus[0]) + len(got) * self._in_gap_s
            bus[0] = ready
            return [v for _, v in got], [s for s, _ in got], ready

        reads: deque = deque()  # up to READS_IN_FLIGHT DMAs out of the VIC, overlapping the updates

        def top_up():
            while len(reads) < READS_IN_FLIGHT:
                got = net.take_arrived(rank, limit)
                if not got:
                    return
                reads.append(read(got))

        while True:
            top_up()
            if not reads:
                yield net.wait_arrival(rank)
                continue
            values, sources, ready = reads.popleft()
            if ready > env.now:
                yield env.timeout(ready - env.now)
            net.read_out(sources, env.now)
            top_up()
            issued, done = mem.batch(env.now, len(values))
            sim.apply(rank, values, delay_s=done - env.now)
            yield env.timeout(issued - env.now)

    def counters(self) -> dict[str, float]:
        net = self.sim.net
        return {"batches": self.batches, "batches_blocked": self.batches_blocked, "max_pending": self.max_pending,
                "packets": net.packets_injected, "deflections": net.deflections, "latency_sum_s": net.latency_sum_s}

    def metrics(self, window, totals) -> dict[str, float]:
        packets, batches = totals["packets"], totals["batches"]
        return {
            "packets_sent": packets,
            "updates_per_message": 1.0,
            "updates_per_packet": 1.0,
            "send_blocking_factor": totals["batches_blocked"] / batches if batches else 0.0,
            # over the whole run: short runs may inject every packet before the window opens
            "deflections_per_packet": totals["deflections"] / packets if packets else float("nan"),
            "mean_latency_s": totals["latency_sum_s"] / packets if packets else float("nan"),
            "update_threads": self.update_threads,
            "max_pending": totals["max_pending"],
        }
