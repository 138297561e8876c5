"""``baseline``: HPCC's MPIRandomAccess reference code, as Blue Gene/L ran it.

Seed 000 §2 and §6.1 describe the code; this class follows its main loop
(``HPCC_AnyNodesMPIRandomAccessUpdate``) step by step:

1. every iteration tests the posted receive (``MPI_Test``) and applies every
   message that has arrived;
2. while fewer than 1024 updates are pending, it generates one update: a
   local one is applied at once, a remote one is appended to the bucket of
   its destination and the max-heap of bucket sizes is updated (O(log N));
3. at 1024 pending it tests the one outstanding send (``MPI_Test``); if that
   send has completed it ``MPI_Isend``-s the largest bucket, otherwise the
   test counts as *blocked*.  The send-blocking factor (SBF) is blocked tests
   over all tests of the send request, exactly as seed 000 §6.1 defines it;
4. at the end it flushes its buckets and, with ``termination: messages``,
   sends a FINISHED message to every other process and receives theirs.

An ``MPI_Isend`` costs the sender its share of the MPI call latency; the
messaging co-processor (seed 000 §5.1, co-processor mode) then pushes the
message's packets into the injection FIFO, and the send request completes
when the last packet is in.  A full FIFO therefore shows up as blocked tests.

``termination: counter`` (the default) replaces the O(N^2) FINISHED
messages by a perfect detector: the run ends when every update has been
applied.  The measured steady-state rate excludes the drain, so both give
the same rate; ``messages`` is there to study the drain on small machines.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from gupsim.algorithms.base import OPTIONS_CONFIG, Algorithm, register_algorithm, window_counts
from gupsim.model.bucketing import Buckets, mean_bucket_size
from gupsim.model.cpu_cache import baseline_cache_costs
from gupsim.model.costs import CostModel

UPDATE_BYTES = 8
#: The counters whose differences across the steady-state window give updates per message and per packet.
WINDOW_COUNTERS = ("updates", "messages", "packets")


class Message:
    """A software message: its updates arrive when its last packet does."""

    __slots__ = ("updates", "nbytes", "npackets", "received", "finished")

    def __init__(self, updates: list[int], nbytes: int, npackets: int, finished: bool = False):
        self.updates, self.nbytes, self.npackets = updates, nbytes, npackets
        self.received, self.finished = 0, finished


def packet_payloads(net, nbytes: int) -> list[int]:
    """A message's packets: its bytes cut at what a packet carries, each with the network's own header
    (BG/P's DMA header, gupsim.engines.reference.dma; none on BG/L) in its chunks."""
    size, hdr = net.max_data_bytes, net.data_header_bytes
    full, rest = divmod(nbytes, size)
    return [size + hdr] * full + ([rest + hdr] if rest else [])


def inject_message(net, rank: int, dst: int, payloads: list[int], msg: Message):
    """Push ``msg``'s packets, of ``payloads`` bytes each, from ``rank`` towards ``dst`` into the injection FIFO
    (a SimPy process body: it waits while the FIFO is full)."""
    for payload in payloads:
        yield from net.inject(net.make_packet(rank, dst, payload, message=msg))


@register_algorithm("baseline")
class Baseline(Algorithm):
    memory_per_rank_bytes = 200_000  # up to 1024 one-update buckets per process on a large machine
    networks = ("torus", "mesh", "fat-tree")  # MPI over InfiniBand too (seed 003)
    needs_mpi = True
    holds_pending = True

    class Options(BaseModel):
        model_config = OPTIONS_CONFIG
        termination: Literal["counter", "messages"] = Field(
            default="counter", description="counter: perfect end detector; messages: HPCC's FINISHED messages")
        max_pending: int = Field(default=1024, ge=1, le=1024,
                                 description="updates buffered before a send (HPCC: 1024)")
        receive_test_every: int = Field(
            default=1, ge=1,
            description="test the posted receive every k-th loop iteration (HPCC: 1; seed 000 §6.1 tried 60)")

    def __init__(self, sim, options):
        super().__init__(sim, options)
        self.messages_sent = 0
        self.packets_sent = 0
        self.updates_sent = 0
        self.send_tests = 0
        self.send_tests_blocked = 0
        self.finished_ranks = 0
        # Data messages sent to and received by each rank: a FINISHED that overtook data in the network
        # (adaptive routing, pool buffers) waits for it, as MPI's non-overtaking order makes it (_finish).
        self.data_sent_to = [0] * sim.num_ranks
        self.data_received = [0] * sim.num_ranks
        # Cache misses on per-destination data (seed 000 §6.1's fourth cause): expected
        # cycles per insert and per message side at this N, from gupsim.model.cpu_cache.
        ranks = sim.num_ranks
        cache = getattr(sim.machine, "cache", None)  # switched machines have no cache section
        self.cache = baseline_cache_costs(
            cache, sim.machine.mpi.peer_state_bytes, ranks,
            mean_bucket_size(ranks, updates=2**13) if ranks > 1 and cache else 1.0)

    @classmethod
    def steady_cycles_per_update(cls, machine, ranks: int, updates_per_message: float,
                                 receive_test_every: int = 1) -> float:
        """The CPU accounting of :meth:`process` per generated update, when nothing blocks.

        Not a simulation: the sum of the steps' cycles, for rows the SimPy engine
        cannot run, labelled as a model wherever it is shown.  The full
        simulation agrees with it while the SBF is near zero (tests/model/test_cache.py).
        """
        cost = CostModel.from_machine(machine)
        cache = baseline_cache_costs(getattr(machine, "cache", None), machine.mpi.peer_state_bytes, ranks,
                                     updates_per_message)
        remote = 1.0 - 1.0 / ranks
        per_message_bytes = UPDATE_BYTES * updates_per_message + machine.mpi.header_bytes
        per_message = (cost.mpi_test / receive_test_every + cost.mpi_test  # the sending iteration
                       + cost.mpi_send(per_message_bytes) + cost.mpi_recv(per_message_bytes)
                       + 2 * cache.per_message_side + cost.mpi_test)  # the receive loop's extra test
        insert = cost.bucket_insert + cost.heap_update(ranks - 1) + cache.per_remote_update
        return (cost.mpi_test / receive_test_every + cost.generate + cost.update
                + remote * insert + remote / updates_per_message * per_message)

    # ------------------------------------------------------------------ messaging

    def _packet_payloads(self, nbytes: int) -> list[int]:
        return packet_payloads(self.sim.net, nbytes)

    def _message_bytes(self, updates: int) -> int:
        # A FINISHED message carries one 8-byte word (HPCC sends its last random number).
        return UPDATE_BYTES * max(1, updates) + self.sim.machine.mpi.header_bytes

    def _isend(self, rank: int, dst: int, updates: list[int], finished: bool = False):
        """The messaging co-processor pushes one message into the injection FIFO."""
        net = self.sim.net
        nbytes = self._message_bytes(len(updates))
        payloads = self._packet_payloads(nbytes)
        msg = Message(updates, nbytes, len(payloads), finished)
        if not finished:
            self.packets_sent += len(payloads)
        yield from inject_message(net, rank, dst, payloads, msg)

    def _receive(self, rank: int, cpu) -> int:
        """Copy every arrived packet out of the reception FIFO; apply completed messages."""
        sim, net, cost = self.sim, self.sim.net, self.sim.cost
        inbox = net.inbox[rank].items
        finished = 0
        while inbox:
            pkt = inbox.popleft()
            msg = pkt.message
            msg.received += 1
            if msg.received == msg.npackets:
                # HPCC's receive loop tests again after every message it handles.
                cpu.spend(cost.mpi_recv(msg.nbytes) + self.cache.per_message_side + cost.mpi_test)
                if msg.finished:
                    finished += 1
                else:
                    self.data_received[rank] += 1
                    cpu.spend(cost.update * len(msg.updates))
                    sim.apply(rank, msg.updates, delay_s=cpu.debt_s)
            # The packet's room in the reception FIFO is free once the CPU has copied it out.
            net.release_later(cpu.debt_s, net.reception_fifo(pkt), pkt.chunks)
        return finished

    # ------------------------------------------------------------------ the process

    def process(self, rank: int):
        sim, cost = self.sim, self.sim.cost
        cpu, stream, inbox = sim.cpus[rank], sim.streams[rank], sim.net.inbox[rank]
        insert_cost = cost.bucket_insert + cost.heap_update(sim.num_ranks - 1) + self.cache.per_remote_update
        limit = self.options.max_pending
        buckets = Buckets()
        state = {"outreq": None, "finished": 0}
        every, iteration = self.options.receive_test_every, 0

        while stream.remaining:
            iteration += 1
            if iteration % every == 0:
                cpu.spend(cost.mpi_test)
                state["finished"] += self._receive(rank, cpu)
            if buckets.pending < limit:
                value, dest = stream.take()
                cpu.spend(cost.generate)
                if dest == rank:
                    cpu.spend(cost.update)
                    sim.apply(rank, [value], delay_s=cpu.debt_s)
                else:
                    buckets.add(dest, value)
                    cpu.spend(insert_cost)
                    sim.check_pending(rank, buckets.pending)
                yield cpu.flush()
            else:
                yield from self._test_and_send(rank, cpu, buckets, state)

        while buckets.pending > 0:
            cpu.spend(cost.mpi_test)
            state["finished"] += self._receive(rank, cpu)
            yield from self._test_and_send(rank, cpu, buckets, state)

        if self.options.termination == "messages":
            yield from self._finish(rank, cpu, state)
            return
        while True:  # keep applying what others send until the run ends
            yield inbox.wait()
            cpu.spend(cost.mpi_test)
            self._receive(rank, cpu)
            yield cpu.flush()

    def _test_and_send(self, rank, cpu, buckets: Buckets, state):
        """``MPI_Test`` the outstanding send; if it completed, ``MPI_Isend`` the largest bucket."""
        sim, env, cost = self.sim, self.sim.env, self.sim.cost
        cpu.spend(cost.mpi_test)
        yield cpu.flush()
        self.send_tests += 1
        outreq = state["outreq"]
        if outreq is None or not outreq.is_alive:
            dest, updates = buckets.pop_largest()
            self.data_sent_to[dest] += 1
            self.messages_sent += 1
            self.updates_sent += len(updates)
            cpu.spend(cost.mpi_send(self._message_bytes(len(updates))) + self.cache.per_message_side)
            yield cpu.flush()
            state["outreq"] = env.process(self._isend(rank, dest, updates))
            return
        # Blocked: the real code spins, testing the receive and the send in turn.
        # Instead of simulating every spin, wait for whichever changes first and
        # count the spins that fitted in the wait as failed send tests; the caller's
        # next iteration is the spin that sees the change.
        self.send_tests_blocked += 1
        spin_s = 2 * cost.mpi_test * cpu.cycle_s
        start = env.now
        yield env.any_of([outreq, sim.net.inbox[rank].wait()])
        spins = math.floor((env.now - start) / spin_s) if spin_s > 0 else 0
        self.send_tests += spins
        self.send_tests_blocked += spins

    def _finish(self, rank, cpu, state):
        """HPCC's end game: FINISHED to every other process, then receive until all have finished."""
        sim, env, cost = self.sim, self.sim.env, self.sim.cost
        outreq = state["outreq"]
        if outreq is not None and outreq.is_alive:
            # MPI does not let a later send to the same process overtake an earlier one: the
            # co-processor sends FINISHED only after the last data message is in the FIFO.
            yield outreq
        sends = []
        for other in range(sim.num_ranks):
            if other != rank:
                cpu.spend(cost.mpi_send(self._message_bytes(0)) + self.cache.per_message_side)
                yield cpu.flush()
                sends.append(env.process(self._isend(rank, other, [], finished=True)))
        inbox = sim.net.inbox[rank]
        # MPI matches a sender's messages in the order sent, so its FINISHED comes after all its data. The
        # network may deliver them out of order (adaptive routing, pool buffers): every rank has sent all
        # its data before its FINISHED, so once all FINISHED are in, data_sent_to[rank] is final.
        while state["finished"] < sim.num_ranks - 1 or self.data_received[rank] < self.data_sent_to[rank]:
            yield inbox.wait()
            cpu.spend(cost.mpi_test)
            state["finished"] += self._receive(rank, cpu)
            yield cpu.flush()
        yield env.all_of(sends)
        self.finished_ranks += 1

    def counters(self) -> dict[str, float]:
        return {"updates": self.updates_sent, "messages": self.messages_sent, "packets": self.packets_sent,
                "send_tests": self.send_tests, "send_tests_blocked": self.send_tests_blocked,
                "finished_ranks": self.finished_ranks}

    def metrics(self, window, totals) -> dict[str, float]:
        d = window_counts(window, totals, WINDOW_COUNTERS, ("messages",))
        tests, blocked = totals["send_tests"], totals["send_tests_blocked"]
        return {
            "messages_sent": totals["messages"],
            "packets_sent": totals["packets"],
            "updates_per_message": d["updates"] / d["messages"] if d["messages"] else float("nan"),
            "updates_per_packet": d["updates"] / d["packets"] if d["packets"] else float("nan"),
            "send_blocking_factor": blocked / tests if tests else 0.0,
            "send_tests": tests,
            "cache_cycles_per_remote_update": self.cache.per_remote_update,
            "cache_cycles_per_message_side": self.cache.per_message_side,
        }
