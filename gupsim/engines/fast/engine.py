"""The fast engine's run of one configuration: :class:`FastSimulation` builds the arrays a kernel runs on, drives
the kernel batch by batch (:mod:`gupsim.engines.fast.driver`) and reports what the run measured
(:class:`gupsim.engines.outcome.ReportsOutcome`); :data:`ENGINE` is the engine as the contract
(:class:`gupsim.engines.contract.Engine`) states it: which runs a kernel models, their memory estimate, their
checkpoints."""

from __future__ import annotations

import logging
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from gupsim.model import hpcc
from gupsim.algorithms.base import algorithm_class, validate_options
from gupsim.base.errors import DeadlockError, GupsimError, SimulationError
from gupsim.base.memory import FAST_BASE_BYTES, FAST_MARGIN_BYTES, FAST_NODE_BYTES, check_fits
from gupsim.engines.links import link_stats, throttled_total_s
from gupsim.engines.order import MAX_ENTITIES, entities
from gupsim.engines.outcome import RunOutcome
from gupsim.model.costs import CostModel
from gupsim.model.output_analysis import CHECK_EVERY, applied_marks, first_check, precise
from gupsim.model.run_config import SLICE_START_FRACTION, WINDOW, RunConfig, stream_layout, stream_start
from gupsim.engines.checks import network_standin
from gupsim.engines.contract import Engine, Progress, SavedProgress, Simulated
from gupsim.config.torus import MachineConfig
from gupsim.topology.base import make_topology, parse_shape
from gupsim.topology.grid import HALF_RING_TIES
from gupsim.engines.fast import one_packet
from gupsim.engines.fast import routed
from gupsim.engines.fast import routed_split
from gupsim.engines.fast import baseline
from gupsim.engines.fast import alltoall
from gupsim.engines.fast import core as c, credits as cr, events as ev, stream, tables as tb
from gupsim.engines.fast import driver, partitioned, windows
from gupsim.engines.fast.compiling import compile_time
from gupsim.engines.fast.kernel_cache import PACKAGE_DIR
from gupsim.engines.fast.contract import KernelRegistry, register_kernel

log = logging.getLogger(__name__)
#: The smallest torus cut into parts: below it a window holds a few hundred events, and a window's
#: synchronisation costs more than two threads save (docs/performance.md, "Threads").
PART_MIN_NODES = 1024
#: The fast engine's largest packet: event payloads keep a pool's returned chunks in 5 bits.
MAX_FAST_CHUNKS = 31
#: The fast engine's largest run in updates (all processes): its counters are int64.
MAX_FAST_UPDATES = np.iinfo(np.int64).max


#: Algorithms with a fast kernel (each module's ``KERNEL``, checked against the contract as it registers);
#: the others always run on SimPy.
KERNELS = KernelRegistry()
for _kernel in (one_packet.KERNEL, routed.KERNEL, routed_split.KERNEL, baseline.KERNEL, alltoall.KERNEL):
    register_kernel(KERNELS, _kernel)


#: Per process, on a machine with a DMA engine: every packet its injection FIFO holds can be past the injection DMA
#: at once, held back at its first link (gupsim.engines.fast.dma), one chunk a packet at worst; each costs a packet
#: row (64 B), its times (16 B) and an event (heap 24 B, far table 32 B; only a link queue's head has one pending,
#: but each is counted), doubled as tables grow.
#: Measured: one-packet in VN mode on 8x8x4, 256 updates per process, 384 packet rows a process (35 KB of RSS).
DMA_PACKET_BYTES = 272


def per_rank_bytes(run: RunConfig) -> int:
    """The memory estimate's part per process: the kernel's measured figure (with its row of P entries, if it keeps
    one per process), or on a machine with a DMA engine the packets its injection FIFO can hold past the DMA,
    whichever is larger."""
    kernel = KERNELS[run.algorithm]
    ranks = math.prod(parse_shape(run.shape)) * run.machine.cpu.processes_per_node
    own = kernel.per_rank_bytes + ranks * kernel.per_rank_pair_bytes
    if getattr(run.machine, "dma", None) is None:
        return own
    return max(own, run.machine.network.injection_fifo_chunks * DMA_PACKET_BYTES)


#: One credit pool beyond the twelve a node's six links have under bluegene-l (which FAST_NODE_BYTES counts): its
#: 32-byte row and its kept credit returns and front time (``DEFER_SLOTS + 1`` slots of three int64).
VC_POOL_BYTES = 32 + (cr.DEFER_SLOTS + 1) * 3 * 8


def extra_vc_bytes(run: RunConfig) -> int:
    """Per node, the pools a router with more VCs per link than bluegene-l's two (bgl-vc) adds."""
    net = run.machine.network
    router = c.ROUTER_KERNELS.get(net.router.name)
    if router is None:
        return 0
    escape_vcs, dynamic_vcs, _, _ = router.channels(net)
    return max(0, 6 * (escape_vcs + dynamic_vcs) - 12) * VC_POOL_BYTES


def check_memory(run: RunConfig) -> int:
    """The fast engine's memory estimate for ``run`` in bytes; a run that would not fit is refused in one line
    (:func:`gupsim.base.memory.check_fits`)."""
    nodes = math.prod(parse_shape(run.shape))
    ppn = run.machine.cpu.processes_per_node
    per_node = FAST_NODE_BYTES + extra_vc_bytes(run) if isinstance(run.machine, MachineConfig) else FAST_NODE_BYTES
    return check_fits(nodes * ppn, per_rank_bytes(run), f"{run.algorithm} on {run.shape}",
                      base_bytes=FAST_BASE_BYTES + FAST_MARGIN_BYTES + nodes * per_node,
                      detail=f"{ppn} per node, fast engine")


@dataclass(frozen=True)
class AlgorithmHost:
    """What the reference algorithm object reads of its run when the fast engine makes it
    (:class:`gupsim.algorithms.base.SimulationView`'s set-up part).

    The fast engine makes the algorithm for what it fixes when it is made (its checks, bucket capacity,
    packet payload, per-hop costs: the kernel's ``prepare`` reads them), its deadlock hint and its
    ``metrics``; its SimPy process never runs, so there is no environment, CPU or stream here, and ``net``
    holds only the network's packet limits (:func:`gupsim.engines.checks.network_standin`).
    """

    run: RunConfig
    machine: Any
    topology: Any
    ppn: int
    num_ranks: int
    total_updates: int
    cost: CostModel
    net: Any


class FastSimulation:
    """One run on the fast engine: :meth:`execute` runs its kernel, :meth:`outcome` says what it measured."""

    def __init__(self, run: RunConfig):
        self.run = run
        m = self.machine = run.machine
        shape = parse_shape(run.shape)
        self.ppn = m.cpu.processes_per_node
        self.kernel = KERNELS[run.algorithm]
        self.memory_estimate_bytes = check_memory(run)
        self.topology = make_topology(m.network.topology_kind(math.prod(shape)), shape, m.network)
        self.num_ranks = self.topology.num_nodes * self.ppn
        self.net_cfg = m.network
        self.cost = CostModel.from_machine(m)
        self.layout = stream_layout(run)  # checks every rank's stretch first, as the SimPy engine does
        self.total_updates = self.num_ranks * run.updates_per_process
        options = validate_options(run.algorithm, run.algorithm_options)
        # The algorithm reads the packet limits, DMA header included, from a stand-in of the network.
        host = AlgorithmHost(run, m, self.topology, self.ppn, self.num_ranks, self.total_updates, self.cost,
                             network_standin(m, self.topology))
        self.algorithm = algorithm_class(run.algorithm)(host, options)
        self._outcome: RunOutcome | None = None
        #: A warm start's state (gupsim.algorithms.routed_warm), made with the streams (:meth:`_arrays`).
        self.warm: Any = None
        self.earlier_wall_s = self.earlier_peak_rss_mb = 0.0
        #: How the kernel's event queue went (not in the record); filled by :meth:`execute`.
        self.queue_stats: dict[str, int] = {}

    # ------------------------------------------------------------------ set-up

    def stream_starts(self) -> np.ndarray:
        """Every rank's first stream position, as :func:`gupsim.model.run_config.stream_start`.

        Positions reach 4 x the table size.  Up to 2^60 words that fits int64 and
        the positions are computed vectorised (fast on 131,072 processes); the
        skip's float product is the reference's own, IEEE double times the slice
        length rounded to double, so truncating it gives the same integer.  A
        larger table (``log2_table_size`` 61..63) puts positions past int64: they
        are the reference's exact Python integers, taken modulo HPCC's period,
        which is what both ``starts`` functions do first anyway.
        """
        lay, u, seed = self.layout, self.run.updates_per_process, self.run.seed
        if 4 * lay.table_size > np.iinfo(np.int64).max:
            return np.array([stream_start(self.run, self.layout, r) % hpcc.PERIOD for r in range(self.num_ranks)],
                            dtype=np.int64)
        r = np.arange(self.num_ranks, dtype=np.int64)
        mlts, rem = lay.min_local_table_size, lay.remainder
        local = mlts + (r < rem)
        gstart = np.where(r < rem, (mlts + 1) * r, mlts * r + rem)
        slice_len = 4 * local
        skip = (SLICE_START_FRACTION * slice_len.astype(np.float64)).astype(np.int64)
        # stream_layout has checked every slice, so (seed + 1) * u <= 4 x the table fits int64 here
        first = 4 * gstart + skip + seed * u
        # float skip must equal int(fraction * slice) exactly; check a few ranks against the reference
        for rank in {0, self.num_ranks - 1, self.num_ranks // 2}:
            if first[rank] != stream_start(self.run, self.layout, rank):
                raise SimulationError(f"fast engine: rank {rank}'s stream starts at {first[rank]}, "
                                      f"the reference's at {stream_start(self.run, self.layout, rank)}")
        return first

    def _arrays(self) -> dict[str, Any]:
        """The network's arrays, keyed by the fields of :class:`gupsim.engines.fast.contract.Network`."""
        net, topo = self.net_cfg, self.topology
        n, R = topo.num_nodes, self.num_ranks
        nlinks = n * topo.ports
        ip = np.zeros(tb.N_IPARAMS, dtype=np.int64)
        ip[tb.I_PPN] = self.ppn
        ip[tb.I_X:tb.I_Z + 1] = topo.shape
        ip[tb.I_WRAPS] = int(topo.wraps)
        ip[tb.I_BUBBLE], ip[tb.I_ESCAPE_SLOT] = net.bubble_chunks(topo.wraps), net.escape_slot_chunks(topo.wraps)
        ip[tb.I_ADAPTIVE] = int(net.routing == "adaptive")
        ip[tb.I_NLINKS], ip[tb.I_NRANKS], ip[tb.I_MAXCH] = nlinks, R, net.max_chunks_per_packet
        groups = topo.ports // 2 + 1 if net.fifos == "per-dimension" else 1
        F = R * groups  # injection (and reception) FIFOs: rank * groups + group, as network.Network
        ip[tb.I_FIFO_GROUPS] = groups
        ip[tb.I_ORDERED] = int(net.buffer_order == "fifo")
        ip[tb.I_TIES] = HALF_RING_TIES[net.half_ring_ties].code
        # a link's VCs, as its router declares them (core.ROUTER_KERNELS): every link's escape VCs, then every
        # link's dynamic VCs, then the FIFOs (gupsim.engines.fast.credits.link_of_pool)
        router = c.router_kernel(net.router.name)
        escape_vcs, dynamic_vcs, vc_chunks, token_s = router.channels(net)
        ip[tb.I_ROUTER], ip[tb.I_ESCAPE_VCS], ip[tb.I_DYNAMIC_VCS] = router.code, escape_vcs, dynamic_vcs
        vcs = (escape_vcs + dynamic_vcs) * nlinks
        ip[tb.I_POOL_DYN], ip[tb.I_POOL_INJ], ip[tb.I_POOL_REC] = escape_vcs * nlinks, vcs, vcs + F
        ip[tb.I_TOTAL] = self.total_updates
        ip[tb.I_MARK0], ip[tb.I_MARK1] = (math.ceil(f * self.total_updates) for f in WINDOW)
        marks = applied_marks(self.total_updates)
        ip[tb.I_NMARKS] = len(marks)
        if self.run.precision is not None:
            ip[tb.I_CHECK_EVERY] = CHECK_EVERY
            ip[tb.I_FIRST_CHECK] = first_check(self.run.updates_per_process, len(marks),
                                               algorithm_class(self.run.algorithm).holds_pending)
        fp = np.zeros(tb.N_FPARAMS)
        fp[tb.F_RATE] = net.link_bytes_per_s
        # the head moves on once the router has cut_through_bytes of it (one chunk unless set), as the reference
        fp[tb.F_CHUNK_S] = (net.cut_through_bytes or net.chunk_bytes) / net.link_bytes_per_s
        fp[tb.F_ROUTER_S] = net.router_delay_ns * 1e-9
        fp[tb.F_CYCLE_S] = 1.0 / self.machine.cpu.clock_hz
        fp[tb.F_TOKEN_S] = token_s
        dma = getattr(self.machine, "dma", None)
        ip[tb.I_DMA_ROW] = nlinks  # the nodes' DMA rows follow the links' in the link table
        ip[tb.I_THROTTLE_ROW] = nlinks + n  # then the throttle's queues, one per link
        if dma is not None:  # gupsim.engines.fast.dma, as gupsim.engines.reference.dma.DmaNetwork computes them
            ip[tb.I_DMA] = 1
            fp[tb.F_DMA_RATE] = dma.engine_bytes_per_s
            fp[tb.F_RX_OVERHEAD_S] = dma.rx_packet_overhead_ns * 1e-9
            fp[tb.F_BACKOFF_S] = dma.throttle_backoff_ns * 1e-9
        npools = vcs + 2 * F
        if npools > ev.MAX_POOLS or entities(R, n) > MAX_ENTITIES:  # a credit return names its pool
            raise GupsimError(f"fast engine: {R:,} processes on {n:,} nodes is too large for its event keys")
        pq = tb.line_aligned((npools, tb.PQ_COLS), np.int32, -1)  # no waiters; 32-byte rows, two to a line
        pq[:, tb.PQ_DEFERRED] = 0  # no credit returns kept beside any pool yet (dq is filled as they come)
        pq[:vcs, tb.PQ_FREE] = vc_chunks
        pq[vcs:vcs + F, tb.PQ_FREE] = net.injection_fifo_chunks
        pq[vcs + F:, tb.PQ_FREE] = net.reception_fifo_chunks
        # DEFER_SLOTS kept credit returns per pool, then (the last slot) the pool's front time (buffer_order)
        dq = np.empty((npools, cr.DEFER_SLOTS + 1, 3), dtype=np.int64)  # (time bits, key, chunks)
        dq[:, -1, :] = 0  # float bits of 0.0: nothing has left yet
        rk = tb.line_aligned((R, tb.RK_NET_COLS), np.int32, 0)
        rk[:, tb.RK_IN_HEAD] = -1
        packets = 4 * R + 2 * tb.PACKET_MARGIN
        pk = tb.line_aligned((packets, tb.PK_COLS), np.int32, 0)
        ctr = np.zeros(tb.N_COUNTERS, dtype=np.int64)
        ctr[tb.C_FREE_HEAD] = -1
        ctr[tb.C_PAUSE_AT] = np.iinfo(np.int64).max  # gupsim.engines.fast.driver sets it before every batch
        ctr[tb.C_NEXT_MARK] = marks[0] if marks else c.NO_MARK
        ctr[tb.C_STOP_T] = driver.NO_STOP
        c.link_free_list(pk, 0, packets, ctr)
        heap = 4 * R + 2 * ev.HEAP_MARGIN
        hh = ev.new_queue(heap, ctr, ev.bucket_seconds(fp[tb.F_CHUNK_S] + fp[tb.F_ROUTER_S], R), entities=entities(R, n))
        c.start_cpus(hh, ctr, R)
        lay = self.layout
        arrays = {
            "packets": pk, "packet_times": np.zeros((packets, tb.PF_COLS)),
            "pools": pq, "deferred": dq, "ranks": rk,
            "link_times": _link_times(nlinks, n, dma is not None), "link_bytes": np.zeros(nlinks, dtype=np.int64),
            # a writable copy of the topology's read-only table: read-only is part of a Numba argument type, and
            # a checkpoint gives its arrays back writable, so a resumed run compiled its whole kernel again
            "int_params": ip, "float_params": fp, "neighbors": np.array(topo.neighbor_array().ravel()),
            "coords": np.ascontiguousarray(topo.coords_array()),
            "queue": hh, "counters": ctr, "window_times": np.full(2, np.nan),
            "applied_times": np.full(len(marks), np.nan),
            "streams": self._registers(),
            "layout": np.array([lay.table_size - 1, lay.top, lay.min_local_table_size, lay.remainder],
                               dtype=np.uint64),
            # one part (gupsim.engines.fast.partitioned splits a run into more): nothing is ever posted
            "node_part": np.zeros(n, dtype=np.int64), "outbox": np.zeros((0, 4), dtype=np.int64),
        }
        return arrays

    def _registers(self) -> np.ndarray:
        """Every stream's register before its first update; with a warm start, after the updates it pre-fills
        (the algorithm's :meth:`warm_state`, kept in :attr:`warm` for the kernel's ``prepare``)."""
        registers = stream.starts_many(self.stream_starts())
        if not self.run.warm_start:
            return registers
        self.warm = self.algorithm.warm_state(registers)
        return self.warm.registers

    def _kernel_arrays(self) -> dict[str, Any]:
        """The kernel's own arrays (its ``prepare``), refused in one line unless keyed by its state's fields."""
        arrays = self.kernel.prepare(self, self.algorithm.options)
        if tuple(arrays) != self.kernel.state._fields:
            raise GupsimError(f"fast kernel {self.kernel.name!r}: prepare() gave {', '.join(arrays)}, its state "
                              f"has {', '.join(self.kernel.state._fields)}")
        return arrays

    # ------------------------------------------------------------------ run

    def execute(self, checkpoint: Any = None, batch_events: int | None = None, progress: Any = None,
                parts: int = 1) -> None:
        """Run to the end (resuming from ``checkpoint``, a :class:`gupsim.engines.fast.driver.Checkpoint`, if saved);
        ``progress(applied, total)`` hears how far it has got every batch (:func:`gupsim.engines.fast.driver.drive`).
        ``parts`` > 1 runs the torus in that many parts, one thread each (:mod:`gupsim.engines.fast.partitioned`):
        the same record, bit for bit."""
        kernel = self.kernel
        batch = driver.BATCH_EVENTS if batch_events is None else batch_events
        a = self._arrays() | self._kernel_arrays()
        self.parts_used, self.parallel_efficiency = 1, 1.0
        if parts > 1:
            why = self.serial_only(parts, checkpoint)
            if why is not None:
                raise GupsimError(f"--threads {parts}: {why}")
            try:
                now = self._run_in_parts(a, parts, batch, progress, checkpoint)
                self.parts_used = parts
            except windows.Overrun as exc:  # slower, never different: the whole run again, serially
                log.warning("partitioned run: %s; running it again on one thread", exc)
                a = self._arrays() | self._kernel_arrays()
                parts = 1
        if parts == 1:
            now, self.earlier_wall_s, self.earlier_peak_rss_mb = driver.drive(
                kernel, a, checkpoint, batch, self.total_updates, progress, self._stop_rule())
        self._check_finished(a, now)
        self.queue_stats = _queue_stats(a["counters"])
        self._outcome = self._measure(a, now)

    def serial_only(self, parts: int, checkpoint: Any = None) -> str | None:
        """Why this run cannot be cut into ``parts`` (None if it can)."""
        return self.serial_only_run(self.run, parts, checkpoint)

    @staticmethod
    def serial_only_run(run: RunConfig, parts: int, checkpoint: Any = None) -> str | None:
        """Why ``run`` cannot be cut into ``parts`` (None if it can)."""
        kernel = KERNELS[run.algorithm]
        if not kernel.summed_arrays:
            return f"the {kernel.name} kernel runs on one thread only (partitioned kernels: " \
                   f"{', '.join(sorted(k.name for k in KERNELS.values() if k.summed_arrays))})"
        longest = max(parse_shape(run.shape))
        if parts > longest:
            return f"{parts} parts: the longest dimension of {run.shape} has only {longest} planes to cut"
        return None

    def _run_in_parts(self, a: dict[str, Any], parts: int, batch: int, progress: Any, checkpoint: Any) -> float:
        """The run in ``parts`` slabs, one thread each, in windows of the model's lookahead, kept in (and resumed
        from) ``checkpoint`` as the serial driver keeps it."""
        net, start = self.net_cfg, 0.0
        if checkpoint is not None and checkpoint.path.exists():
            start, self.earlier_wall_s, self.earlier_peak_rss_mb = driver.load(checkpoint, a, self.kernel)
        elif checkpoint is not None:
            driver.check_writable(checkpoint.path)
        node_part = partitioned.slabs(a["coords"], self.topology.shape, parts)
        window_s = partitioned.lookahead_s(a["float_params"], net.chunk_bytes + net.wire_overhead_bytes)
        loop = windows.WindowLoop(self.kernel, a, partitioned.Partition(node_part, self.kernel.summed_arrays),
                                      window_s, np.asarray(applied_marks(self.total_updates), dtype=np.int64),
                                      self._stop_rule(), parts, batch, start)
        now = loop.run(progress, checkpoint, (self.earlier_wall_s, self.earlier_peak_rss_mb))
        if checkpoint is not None:
            checkpoint.path.unlink(missing_ok=True)
        self.window_stats = loop.at
        self.parallel_efficiency = loop.efficiency()
        return now

    def _stop_rule(self) -> Callable[[np.ndarray, int], bool] | None:
        """The stopping rule on the applied times of the first ``c`` marks (None without ``--precision``)."""
        precision = self.run.precision
        if precision is None:
            return None
        marks = applied_marks(self.total_updates)
        return lambda times, c: precise(marks[:c], times[:c], precision)

    def _check_finished(self, a: dict[str, Any], now: float) -> None:
        """Raise the kernel's own error, or a deadlock (a queue that emptied before the run finished)."""
        kernel, ctr = self.kernel, a["counters"]
        if ctr[tb.C_ERROR]:
            raise SimulationError(kernel.error_message(ctr[tb.C_ERROR], a))
        if not ctr[tb.C_DONE] and ctr[tb.C_STOP_T] == driver.NO_STOP:
            # a property of the configuration, as on the SimPy engine (Simulation.deadlock): the same line
            ranks = self.num_ranks
            stuck = (kernel.updates_left(a)[:ranks] > 0) | (a["ranks"][:ranks, tb.RK_IN_HEAD] >= 0)
            waiting = stuck if stuck.any() else ~kernel.ended(a)[:ranks]
            raise DeadlockError.report(now, np.flatnonzero(waiting).tolist(),
                                       int(ctr[tb.C_INJECTED] - ctr[tb.C_DELIVERED]), int(ctr[tb.C_APPLIED]),
                                       self.total_updates,
                                       self.algorithm.deadlock_hint() + self.net_cfg.deadlock_hint())

    def _measure(self, a: dict[str, Any], now: float) -> RunOutcome:
        """The outcome, read from the kernel's arrays; the algorithm's counters under the reference class's
        names (the kernel's ``counters`` and ``window_counters``), so that its ``metrics`` make the record."""
        kernel, ctr = self.kernel, a["counters"]
        lf, nlinks = a["link_times"], a["int_params"][tb.I_NLINKS]
        window_times = tuple(float(t) for t in a["window_times"] if not math.isnan(t))
        # a run its stopping rule ended before the window closed has no window (algorithms.base.window_counts)
        window = tuple(kernel.window_counters(a)) if len(window_times) == 2 else ()
        totals = kernel.counters(a)
        return RunOutcome(
            run=self.run, topology=self.topology, processes=self.num_ranks, total_updates=self.total_updates,
            sim_time_s=now, events=int(ctr[tb.C_EVENTS]), updates_applied=int(ctr[tb.C_APPLIED]),
            updates_generated=self.total_updates - int(kernel.updates_left(a).sum()),
            window_times=window_times, window_counters=window, totals=totals,
            algorithm_metrics=self.algorithm.metrics(window, totals),
            packets_injected=int(ctr[tb.C_INJECTED]), packets_delivered=int(ctr[tb.C_DELIVERED]),
            wire_bytes_injected=int(ctr[tb.C_WIRE]), packet_hops=int(ctr[tb.C_HOPS]),
            links=link_stats(self.topology, a["link_bytes"][:nlinks], lf[:nlinks, tb.LF_BUSY], lf[:nlinks, tb.LF_BLOCKED],
                             lf[:nlinks, tb.LF_FREE], now),
            dma=_dma_stats(a) if a["int_params"][tb.I_DMA] else None,
            applied_times=tuple(float(t) for t in a["applied_times"][:int(ctr[tb.C_MARK_INDEX])]),
            precision_reached=bool(ctr[tb.C_STOP_T] != driver.NO_STOP),
            earlier_wall_s=self.earlier_wall_s, earlier_peak_rss_mb=self.earlier_peak_rss_mb)

    def outcome(self) -> RunOutcome:
        """What the finished run measured (:class:`gupsim.engines.outcome.ReportsOutcome`)."""
        if self._outcome is None:
            raise SimulationError("fast engine: the run's outcome is asked for before it has run (execute)")
        return self._outcome


def _link_times(nlinks: int, nodes: int, dma: bool) -> np.ndarray:
    """The link table: a row per link, and with a DMA engine a row per node and a throttle queue per link
    (empty) below (:mod:`gupsim.engines.fast.dma`)."""
    lf = np.zeros((nlinks + (nodes + nlinks if dma else 0), tb.LF_COLS))
    if dma:
        lf[nlinks + nodes:, [tb.TQ_HEAD, tb.TQ_TAIL]] = -1.0
    return lf


def _dma_stats(a: dict[str, Any]) -> dict[str, Any]:
    """The DMA engines' counters, as :meth:`gupsim.engines.reference.dma.DmaNetwork.dma_stats` reports them."""
    ip = a["int_params"]
    nodes = a["link_times"][ip[tb.I_DMA_ROW]:ip[tb.I_THROTTLE_ROW]]
    ctr = a["counters"]
    return {"tx_busy_s": nodes[:, tb.LF_TX_BUSY].copy(), "rx_busy_s": nodes[:, tb.LF_RX_BUSY].copy(),
            "throttle_waits": int(ctr[tb.C_THROTTLE_WAITS]),
            "throttled_s": throttled_total_s(a["link_times"][ip[tb.I_THROTTLE_ROW]:, tb.TQ_THROTTLED_S]),
            "throttle_polls": int(ctr[tb.C_THROTTLE_POLLS]), "throttle_queued": int(ctr[tb.C_THROTTLE_QUEUED])}


def _queue_stats(ctr: np.ndarray) -> dict[str, int]:
    """How the events went: credit returns applied beside their pool without the heap, put back into the heap
    because someone started waiting, pushed because the slots were full; calendar buckets moved into the heap
    (pops per bucket: the heap's length)."""
    return {"events": int(ctr[tb.C_EVENTS]), "deferred_applied": int(ctr[tb.C_LAZY]),
            "deferred_rescheduled": int(ctr[tb.C_RESCHEDULED]), "deferred_full": int(ctr[tb.C_DEFER_FULL]),
            "buckets_moved": int(ctr[tb.C_MOVED]), "overflow_refiled": int(ctr[tb.C_REFILED])}


def simulate_fast(run: RunConfig, checkpoint: Any = None, progress: Any = None, parts: int = 1) -> FastSimulation:
    """Run ``run`` on the fast engine (saving and resuming through ``checkpoint``: :mod:`gupsim.engines.fast.driver`;
    in ``parts`` on as many threads: :mod:`gupsim.engines.fast.partitioned`)."""
    sim = FastSimulation(run)
    sim.execute(checkpoint, progress=progress, parts=parts)
    return sim




#: Seconds to compile each algorithm's kernels into an empty cache: the CPU seconds measured by
#: benchmarks/compile_profile.py --isolated on the 2-core box (docs/performance-log.md), which are the wall seconds
#: of an idle box (Numba compiles on one core); an algorithm not measured counts the largest.
COLD_COMPILE_S = {"baseline": 51.0, "routed": 59.0, "routed-split": 60.0, "one-packet": 35.0}


class FastEngine:
    """The compiled engine (:class:`gupsim.engines.contract.Engine`): a kernel per algorithm that has one
    (:data:`KERNELS`), on torus machines; it keeps a long run's state on disk (:mod:`gupsim.engines.fast.driver`)
    and takes no observer (its kernels keep no per-packet telemetry)."""

    name = "fast"
    title = "fast"
    observes = False
    checkpoints = True

    def unsupported(self, run: RunConfig) -> str | None:
        """Why no kernel models ``run`` (None when one does), naming what the user set."""
        if run.algorithm not in KERNELS:
            return f"no fast kernel for algorithm {run.algorithm!r} (fast kernels: {', '.join(sorted(KERNELS))})"
        if run.verify:
            return "verify keeps a real table, which only the SimPy engine does"
        options = validate_options(run.algorithm, run.algorithm_options)
        defaults = type(options)()
        for name in type(options).model_fields:
            if name not in KERNELS[run.algorithm].options and getattr(options, name) != getattr(defaults, name):
                return f"option {name}={getattr(options, name)!r} is not in the {run.algorithm} kernel"
        # The kernels compile the torus link model (torus_network.py, with dma.py's DMA engine) and nothing else.
        if not isinstance(run.machine, MachineConfig):
            return f"machine {run.machine.name} is not a torus machine (the kernels model network.py only)"
        router = run.machine.network.router.name
        if router not in c.ROUTER_KERNELS:
            return (f"network.router.name={router!r} has no fast router kernel (fast routers: "
                    f"{', '.join(sorted(c.ROUTER_KERNELS))})")
        if run.machine.network.max_chunks_per_packet > MAX_FAST_CHUNKS:
            return f"max_chunks_per_packet above {MAX_FAST_CHUNKS}"
        # The kernels count updates in int64; only a table near 2^63 words leaves room in its slices for more.
        ranks = math.prod(parse_shape(run.shape)) * run.machine.cpu.processes_per_node
        if ranks * run.updates_per_process > MAX_FAST_UPDATES:
            return (f"{ranks} processes x updates_per_process={run.updates_per_process} is more than the "
                    f"{MAX_FAST_UPDATES:,} updates the kernels count")
        return None

    def memory_estimate(self, run: RunConfig, alternative: Engine | None = None) -> int:
        return check_memory(run)

    def simulate(self, run: RunConfig, observer: Any = None, checkpoint: Any = None,
                 progress: Progress | None = None, threads: int = 1) -> Simulated:
        """Run ``run``'s kernel, in parts on ``threads`` threads where it can (:meth:`threads_for`); ``compile_s``
        is the time Numba spent compiling it or loading it from its cache."""
        parts, _ = self.threads_for(run, threads, checkpoint)
        with compile_time() as compile_s:
            sim = simulate_fast(run, checkpoint, progress, parts)
        return Simulated(sim, compile_s[0], sim.parts_used, sim.parallel_efficiency)

    def threads_for(self, run: RunConfig, threads: int, checkpoint: Any = None) -> tuple[int, str | None]:
        if threads == 1:
            return 1, None
        why = FastSimulation.serial_only_run(run, threads, checkpoint)
        if why is None and math.prod(parse_shape(run.shape)) < PART_MIN_NODES:
            why = f"{run.shape} has fewer than {PART_MIN_NODES:,} nodes: its windows hold too few events for " \
                  "threads to gain (docs/performance.md, \"Threads\")"
        return (1, why) if why else (threads, None)

    def compile_estimate_s(self, run: RunConfig) -> float:
        """The measured cold compile of ``run``'s kernel (:data:`COLD_COMPILE_S`) when Numba's cache holds none of
        this package's kernels yet, else 0 (per kernel the cache cannot tell, so a warm cache counts none)."""
        if any(PACKAGE_DIR.joinpath("__pycache__").glob("*.nbi")):
            return 0.0
        return COLD_COMPILE_S.get(run.algorithm, max(COLD_COMPILE_S.values()))

    def compile(self, machine: Any) -> None:
        """Every kernel, on a 2x2x1 run of 64 updates per process."""
        for name in KERNELS:
            simulate_fast(RunConfig(machine=machine, shape="2x2x1", algorithm=name, updates_per_process=64))

    def checkpoint(self, path: Path, key: str, every_s: float | None = None) -> driver.Checkpoint:
        # the default interval is read now, not at import, so a test can shorten it
        return driver.Checkpoint(Path(path), key=key, every_s=driver.CHECKPOINT_EVERY_S if every_s is None else every_s)

    def saved_progress(self, path: Path) -> SavedProgress | None:
        """Read from the saved counters alone (``np.load`` reads only the members asked for)."""
        try:
            with np.load(path, allow_pickle=False) as z:
                ctr, wall_s = z["counters"], float(z["_wall_s"])
            return SavedProgress(int(ctr[tb.C_APPLIED]), int(ctr[tb.C_EVENTS]), wall_s)
        except (OSError, ValueError, KeyError, IndexError, EOFError, zipfile.BadZipFile):
            return None  # not a checkpoint (a save in progress is a .part file)


#: The fast engine, as the registry (:data:`gupsim.engines.run.ENGINES`) holds it.
ENGINE = FastEngine()
