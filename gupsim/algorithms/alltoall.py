"""``alltoall``: HPCC's original MPI RandomAccess (HPCchallenge 0.5b), a bucket sort and one all-to-all per round.

The code the Cray X1 report of seed 004 describes ("first sorts the updates into different buckets for
different CPUs, sends those buckets around the machine through a huge mpi_alltoall", seed 004 L98), as
``RandomAccess/MPIRandomAccess.c`` of HPCchallenge 0.5b has it (icl-utk-edu/hpcc commit 50a87b6; see
docs/research/cray-x1-t3e.md).  One round of every process:

1. **fill**: generate updates one after another and append each to the bucket of its owner, one bucket per
   process *including itself*, until a bucket holds ``bucket_size`` updates (0.5b: 2,048) or the process's
   updates run out; a process whose updates ran out marks every bucket it sends "done";
2. **barrier**: ``MPI_Barrier``, here a dissemination barrier of small messages over the network
   (ceil(log2 P) steps, step s to rank + 2^s);
3. **exchange**: one ``MPI_Alltoall``: P - 1 point-to-point messages per process through the machine's
   network, each costing the MPI send and receive shares of ``baseline``'s message model and cut into the
   network's packets as ``baseline``'s messages are.  0.5b sends every block whole, 2 + ``bucket_size`` words
   (a done flag, a count and the slots) however few updates it holds (``exchange: fixed``); ``exchange:
   counts`` sends each block at its own size, an ``MPI_Alltoallv`` what-if.  ``schedule`` says in which
   order a process sends its P - 1 blocks: ``pairwise``, to rank + k at step k (no two senders aim at one
   receiver at once), or ``linear``, to rank k at step k (every process starts on rank 0, a hot spot);
   the block to itself is a local copy;
4. **apply**: walk the P received buckets and XOR every update into the table;

and it stops after the round in which every bucket it received was marked done, so a process that ran out
early keeps sending empty done blocks until all have run out, as 0.5b does.

Where a round's time goes (seed 004 L116, L118): every process times its four phases, and
the record gives their shares over the *full* rounds (those in which no process ran out of updates, so the
first-round and last-round effects of a short run stay out).  The fill and the apply are pure processor time,
read from the cycles spent before they are flushed, so the timing adds no event; the barrier phase is what is
left between the end of the fill and the start of the exchange: the barrier's own messages and the wait for
the slowest filler.  The spread of the fill across the processes of a round (its coefficient of variation,
and the mean wait for the slowest filler) is the load imbalance that seed 004 names.

A process holds up to P x ``bucket_size`` updates between rounds: 0.5b predates HPCC's 1,024-pending rule, so
this algorithm does not (and may not) call ``check_pending``.  The fast engine runs it too, bit for bit
(:mod:`gupsim.engines.fast.alltoall`, on one thread: ``--threads`` runs it serially).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from gupsim.algorithms.base import OPTIONS_CONFIG, Algorithm, register_algorithm, window_counts
from gupsim.algorithms.baseline import UPDATE_BYTES, Message, inject_message, packet_payloads
from gupsim.base.memory import check_fits
from gupsim.model.output_analysis import t_975

#: Words of a 0.5b bucket besides its slots: the done flag and the fill count.
BUCKET_HEADER_WORDS = 2
#: Bytes per update a round holds (a Python int in a bucket list, then in a received block): estimated from the
#: 405 MB peak RSS of cray-x1 4x2x1 at 130,000 updates per process, about 63,000 held per round.
HELD_UPDATE_BYTES = 50
#: The counters whose differences across the steady-state window give updates per message and per slot.
WINDOW_COUNTERS = ("updates", "data_messages", "slots")


class Tagged(Message):
    """A message of one collective step: ``tag`` says which (round, barrier step or exchange) it belongs to."""

    __slots__ = ("tag", "src", "done")

    def __init__(self, updates: list[int], nbytes: int, npackets: int, tag: tuple, src: int, done: bool = False):
        super().__init__(updates, nbytes, npackets)
        self.tag, self.src, self.done = tag, src, done


def message_bytes(machine, words: int) -> int:
    """An MPI message of ``words`` 8-byte words on ``machine``: the words and the MPI header (a fixed block of
    0.5b is ``BUCKET_HEADER_WORDS + bucket_size`` words; the cost model prices a round's blocks with it too)."""
    return UPDATE_BYTES * words + machine.mpi.header_bytes


#: The phases of a round each process times, in order (:class:`RoundTimes`).
PHASES = ("fill", "barrier", "exchange", "apply")


class RoundTimes:
    """One round's phase times summed over the processes that have finished it, and its fill spread.

    ``done`` is True once any process ran out of updates in this round: such a round is partly empty and is
    left out of the shares (a short run's first and last rounds weigh far more than a real run's).
    """

    __slots__ = ("processes", "updates", "fill", "fill_sq", "fill_max", "barrier", "exchange", "apply", "done")

    def __init__(self):
        self.processes = self.updates = 0
        self.fill = self.fill_sq = self.fill_max = self.barrier = self.exchange = self.apply = 0.0
        self.done = False

    def add(self, updates: int, fill: float, barrier: float, exchange: float, apply: float, done: bool) -> None:
        self.processes += 1
        self.updates += updates
        self.fill += fill
        self.fill_sq += fill * fill
        self.fill_max = max(self.fill_max, fill)
        self.barrier += barrier
        self.exchange += exchange
        self.apply += apply
        self.done = self.done or done


def round_shares(rounds: list[RoundTimes], processes: int) -> dict[str, float]:
    """Shares of the full rounds' time per phase, the fill's spread and the wait for the slowest filler.

    ``fill_cv`` is the mean over full rounds of the fill time's coefficient of variation across processes;
    ``fill_wait_share`` the mean over full rounds of (slowest fill - mean fill) / mean round time, the part of
    a round a process spends, on average, waiting at the barrier for the slowest filler.  ``full_round_gups``
    is the updates generated in the full rounds over their mean duration: the rate of a run of many rounds,
    without the short run's first and last.  Its 95% interval (``full_round_gups_low``, ``_high``) is that rate
    plus or minus Student's t times the standard error of the full rounds' own rates, each round a batch (a
    round's fill starts afresh, so rounds are near independent); it needs two full rounds, and two give a wide
    one (t = 12.7 at one degree of freedom).
    """
    full = [r for r in rounds if r.processes == processes and not r.done]
    out = {"full_rounds": float(len(full))}
    if not full:
        return out | {f"share_{phase}": float("nan") for phase in PHASES} | {
            "round_s": float("nan"), "fill_cv": float("nan"), "fill_wait_share": float("nan"),
            "full_round_gups": float("nan"), "full_round_gups_low": float("nan"),
            "full_round_gups_high": float("nan")}
    sums = {phase: sum(getattr(r, phase) for r in full) for phase in PHASES}
    total = sum(sums.values())
    round_s = [sum(getattr(r, phase) for phase in PHASES) / processes for r in full]  # each round's duration
    cvs, waits = [], []
    for r, duration in zip(full, round_s):
        mean = r.fill / processes
        var = max(0.0, r.fill_sq / processes - mean * mean)
        cvs.append(var**0.5 / mean if mean > 0 else 0.0)
        waits.append((r.fill_max - mean) / duration if duration > 0 else 0.0)
    rate = sum(r.updates for r in full) / (total / processes) / 1e9
    low, high = _round_interval(rate, [r.updates / duration / 1e9 for r, duration in zip(full, round_s)])
    return out | {f"share_{phase}": sums[phase] / total for phase in PHASES} | {
        "round_s": total / processes / len(full), "fill_cv": sum(cvs) / len(cvs),
        "fill_wait_share": sum(waits) / len(waits),
        "full_round_gups": rate, "full_round_gups_low": low, "full_round_gups_high": high}


def _round_interval(rate: float, per_round: list[float]) -> tuple[float, float]:
    """``rate`` plus or minus t times the standard error of the per-round rates (NaN with fewer than two)."""
    n = len(per_round)
    if n < 2:
        return float("nan"), float("nan")
    mean = sum(per_round) / n
    sd = (sum((x - mean) ** 2 for x in per_round) / (n - 1)) ** 0.5
    half = t_975(n - 1) * sd / n ** 0.5
    return rate - half, rate + half


#: What :func:`round_shares` gives, in the record as ``alg_<key>``.
ROUND_SHARE_KEYS = ("full_rounds", *(f"share_{phase}" for phase in PHASES), "round_s", "fill_cv", "fill_wait_share",
                    "full_round_gups", "full_round_gups_low", "full_round_gups_high")


#: The largest bucket: 512 times HPCC's, 8 MB per peer per round with the fixed exchange.
MAX_BUCKET_SIZE = 2**20


@register_algorithm("alltoall")
class AllToAll(Algorithm):
    #: Measured: about 0.7 MB traced per process on bgl 4x4x2 at 8,192 updates per process (one round, no
    #: bucket full), rounded up; the updates a round holds are counted on top of it (HELD_UPDATE_BYTES).
    memory_per_rank_bytes = 1_000_000
    networks = ("torus", "mesh", "fat-tree")  # every network that moves MPI messages in packets
    needs_mpi = True
    rate_over_whole_run = True  # every round's updates are applied in one burst after its exchange
    holds_pending = True
    #: What the fast kernel (gupsim.engines.fast.alltoall) reads through the algorithm registry, so that the
    #: engines do not import this module: a block's header words, and the round sums and the shares made of them.
    header_words = BUCKET_HEADER_WORDS
    round_times_class = RoundTimes
    shares = staticmethod(round_shares)

    class Options(BaseModel):
        model_config = OPTIONS_CONFIG
        bucket_size: int = Field(
            default=2048, ge=1, le=MAX_BUCKET_SIZE,
            description="updates a bucket holds; a round ends when one is full (HPCC 0.5b: 2,048; at most "
                        "2^20: every fixed-size block carries the whole bucket, 2^31 had spun for ever)")
        exchange: Literal["fixed", "counts"] = Field(
            default="fixed", description="fixed: every block 2 + bucket_size words (0.5b's MPI_Alltoall); "
                                         "counts: each block its own size (an MPI_Alltoallv what-if)")
        schedule: Literal["pairwise", "linear"] = Field(
            default="pairwise", description="order of a process's sends: pairwise, to rank+k at step k; "
                                            "linear, to rank k at step k")

    def __init__(self, sim, options):
        super().__init__(sim, options)
        ranks = sim.num_ranks
        #: Completed messages not yet consumed, per rank, by tag.
        self.mail: list[dict[tuple, list[Tagged]]] = [{} for _ in range(ranks)]
        self.rounds = 0
        self.messages_sent = 0
        self.packets_sent = 0
        self.updates_sent = 0
        self.data_messages = 0
        self.slots_sent = 0
        self.barrier_s = 0.0
        self.exchange_s = 0.0
        #: Per round, every process's phase times (:func:`round_shares` reads them).
        self.round_times: list[RoundTimes] = []
        self.barrier_steps = max(1, (ranks - 1).bit_length()) if ranks > 1 else 0
        # A round holds a process's buckets and what it received, up to P x bucket_size updates each: refuse in
        # one line a run whose rounds would not fit, before the first one fills.  Only the SimPy engine (the one
        # with an environment) holds the updates themselves; the fast kernel keeps their counts.
        if getattr(sim, "env", None) is None:
            return
        held = min(sim.run.updates_per_process, ranks * options.bucket_size)
        check_fits(ranks, self.memory_per_rank_bytes + 2 * held * HELD_UPDATE_BYTES, f"alltoall on {sim.run.shape}",
                   detail=f"up to {held:,} updates held per process per round")

    # ------------------------------------------------------------------ messaging

    def _message_bytes(self, words: int) -> int:
        return message_bytes(self.sim.machine, words)

    def _isend(self, rank: int, dst: int, msg: Tagged):
        net = self.sim.net
        yield from inject_message(net, rank, dst, packet_payloads(net, msg.nbytes), msg)

    def _send(self, rank: int, cpu, dst: int, updates: list[int], words: int, tag: tuple, done: bool = False):
        """Pay the sender's MPI share and start the message into the injection FIFO; return its process."""
        nbytes = self._message_bytes(words)
        msg = Tagged(updates, nbytes, len(packet_payloads(self.sim.net, nbytes)), tag, rank, done)
        self.messages_sent += 1
        self.packets_sent += msg.npackets
        cpu.spend(self.sim.cost.mpi_send(nbytes))
        yield cpu.flush()
        return self.sim.env.process(self._isend(rank, dst, msg))

    def _receive(self, rank: int, cpu) -> None:
        """Copy every arrived packet out of the reception FIFO; file each completed message under its tag."""
        net, cost, mail = self.sim.net, self.sim.cost, self.mail[rank]
        inbox = net.inbox[rank].items
        while inbox:
            pkt = inbox.popleft()
            msg = pkt.message
            msg.received += 1
            if msg.received == msg.npackets:
                cpu.spend(cost.mpi_recv(msg.nbytes))
                mail.setdefault(msg.tag, []).append(msg)
            net.release_later(cpu.debt_s, net.reception_fifo(pkt), pkt.chunks)

    def _wait_for(self, rank: int, cpu, tag: tuple, count: int, sending=None):
        """Receive until ``count`` messages tagged ``tag`` are in (and ``sending``, if any, has finished)."""
        mail, inbox = self.mail[rank], self.sim.net.inbox[rank]
        while True:
            self._receive(rank, cpu)
            yield cpu.flush()
            busy = sending is not None and sending.is_alive
            if len(mail.get(tag, ())) >= count and not busy:
                return mail.pop(tag, [])
            yield self.sim.env.any_of([sending, inbox.wait()] if busy else [inbox.wait()])

    # ------------------------------------------------------------------ the collectives

    def _barrier(self, rank: int, cpu, round_no: int):
        """Dissemination barrier: at step s send to rank + 2^s and wait for rank - 2^s."""
        p = self.sim.num_ranks
        for step in range(self.barrier_steps):
            tag = ("barrier", round_no, step)
            sending = yield from self._send(rank, cpu, (rank + (1 << step)) % p, [], 1, tag)
            yield from self._wait_for(rank, cpu, tag, 1, sending)

    def _order(self, rank: int) -> list[int]:
        p = self.sim.num_ranks
        if self.options.schedule == "pairwise":
            return [(rank + k) % p for k in range(1, p)]
        return [k for k in range(p) if k != rank]

    def _exchange(self, rank: int, cpu, round_no: int, buckets: list[list[int]], done: bool):
        """One MPI_Alltoall: send the P - 1 blocks in schedule order, one in the FIFO at a time, receiving
        whatever arrives meanwhile; return every block received, the process's own included."""
        env, inbox = self.sim.env, self.sim.net.inbox[rank]
        tag = ("data", round_no)
        size, fixed = self.options.bucket_size, self.options.exchange == "fixed"
        sending = None
        for dst in self._order(rank):
            while sending is not None and sending.is_alive:  # one send in the FIFO at a time
                self._receive(rank, cpu)
                yield cpu.flush()
                yield env.any_of([sending, inbox.wait()])
            self._receive(rank, cpu)
            updates = buckets[dst]
            words = BUCKET_HEADER_WORDS + (size if fixed else len(updates))
            self.updates_sent += len(updates)
            self.data_messages += 1
            self.slots_sent += size if fixed else len(updates)
            sending = yield from self._send(rank, cpu, dst, updates, words, tag, done)
        received = yield from self._wait_for(rank, cpu, tag, self.sim.num_ranks - 1, sending)
        own = Tagged(buckets[rank], 0, 0, tag, rank, done)
        return received + [own]

    # ------------------------------------------------------------------ the process

    def process(self, rank: int):
        sim, env, cost = self.sim, self.sim.env, self.sim.cost
        cpu, stream = sim.cpus[rank], sim.streams[rank]
        p, size = sim.num_ranks, self.options.bucket_size
        fill_cost = cost.generate + cost.bucket_insert
        round_no = 0
        while True:
            buckets: list[list[int]] = [[] for _ in range(p)]
            before = stream.remaining
            while stream.remaining:
                value, dest = stream.take()
                buckets[dest].append(value)
                cpu.spend(fill_cost)
                if len(buckets[dest]) >= size:
                    break
            done = not stream.remaining
            fill_s = cpu.debt_s  # flushed by the barrier's first send: no event of its own
            start = env.now
            yield from self._barrier(rank, cpu, round_no)
            mid = env.now
            blocks = yield from self._exchange(rank, cpu, round_no, buckets, done)
            end = env.now
            if rank == 0:
                self.rounds += 1
                self.barrier_s += mid - start
                self.exchange_s += end - mid
            for block in blocks:
                if block.updates:
                    cpu.spend(cost.update * len(block.updates))
                    sim.apply(rank, block.updates, delay_s=cpu.debt_s)
            self._time_round(round_no, before - stream.remaining, fill_s, mid - start - fill_s, end - mid,
                             cpu.debt_s, done)
            yield cpu.flush()
            round_no += 1
            if all(block.done for block in blocks):
                return

    def _time_round(self, round_no: int, updates: int, fill_s: float, barrier_s: float, exchange_s: float,
                    apply_s: float, done: bool) -> None:
        if round_no == len(self.round_times):
            self.round_times.append(RoundTimes())
        self.round_times[round_no].add(updates, fill_s, barrier_s, exchange_s, apply_s, done)

    def counters(self) -> dict[str, float]:
        return {"updates": self.updates_sent, "messages": self.messages_sent, "packets": self.packets_sent,
                "data_messages": self.data_messages, "slots": self.slots_sent, "rounds": self.rounds,
                "barrier_s": self.barrier_s, "exchange_s": self.exchange_s} | round_shares(
                    self.round_times, self.sim.num_ranks)

    def metrics(self, window, totals) -> dict[str, float]:
        d = window_counts(window, totals, WINDOW_COUNTERS, ("data_messages",))
        return {
            "rounds": totals["rounds"],
            "messages_sent": totals["messages"],
            "packets_sent": totals["packets"],
            "updates_per_message": d["updates"] / d["data_messages"] if d["data_messages"] else float("nan"),
            "slot_fill": d["updates"] / d["slots"] if d["slots"] else float("nan"),
            "rank0_barrier_s": totals["barrier_s"],
            "rank0_exchange_s": totals["exchange_s"],
        } | {key: totals[key] for key in ROUND_SHARE_KEYS}
