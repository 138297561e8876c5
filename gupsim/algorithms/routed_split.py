"""``routed-split``: software routing with the cores of a node specialised into routers and workers.

After seed 000 §4.2-4.3 and §6.2: in ``routed`` every process
generates, routes and updates, and in virtual-node mode the core is a fourth
software dimension.  Later Blue Gene/P RandomAccess work instead split a
node's cores: some only *route* (they own the buckets, the torus packets and
the software hops), the others only *generate and update*.  Nothing in seeds
000-004 describes that code, so this module is our model of the idea, not a
transcription:

* Of a node's ``P`` cores (``cpu.processes_per_node``), the last
  ``router_cores`` are routers and the first ``W = P - router_cores`` are
  workers.  The node's table (the slices of all ``P`` ranks) is in memory the
  cores share (SMP-mode threads; in virtual-node mode it needs a shared
  segment), so any worker of a node may apply any update owned by the node.
* A *worker* takes updates from the node's ``P`` HPCC streams in turn (so the
  routers' streams are generated too and the workload is unchanged), pays
  ``t_g + t_o^s``, applies a local update (``t_u``) and hands a remote one to
  router ``W + (w mod router_cores)`` through a shared-memory queue
  (``handoff_cycles`` to write it).  It also applies the updates routers
  deliver to it (``handoff_cycles`` to read, ``t_u`` to apply).
* A *router* runs :class:`~gupsim.algorithms.routed.Routed`'s Figure-1 loop on
  node coordinates only (x, y, z: no core dimension, because the hand-off
  replaces it), with router ``i`` of one node sending to router ``i`` of the
  next; its "form" step reads an update from its hand-off queue
  (``handoff_cycles``) instead of generating one.  An update that reaches its
  owner's node goes to worker ``owner_core mod W`` (``handoff_cycles``).

The 1024-pending rule: a router holds its X + Y + Z buckets and its hand-off
queue, each of capacity ``1024 // (X + Y + Z + 1)``; a worker waits while its
router's queue is full.

Per-core cycle costs (all assumptions: seed 002 gives no BG/P cycle counts):
``t_g + t_o^s`` = 18 and ``t_u`` = 86 (BG/L, seed 000 §5.2),
``cpu.route_hop_cycles`` per update per hop from bgp.yaml (BG/L's fit on
Table 4's N = 32 row by gupsim/experiments/bgl_table4.py, made with the pool buffer
order this DMA model uses), packet send and receive from seed 000 Table 1
(BG/L raw device), and ``handoff_cycles`` = 10 by default (assumed: one
store or load of an 8-byte update and an index in a cache-resident ring,
the same order as ``mpi.bucket_insert_cycles``).
"""

from __future__ import annotations

from collections import deque

from pydantic import Field

from gupsim.algorithms.base import register_algorithm
from gupsim.algorithms.routed import Routed, _Rank
from gupsim.base.errors import GupsimError


class _Router(_Rank):
    __slots__ = ("inq",)

    def __init__(self, ndims: int, coords: tuple[int, ...]):
        super().__init__(ndims, coords)
        self.inq: deque = deque()  # (value, owner) handed over by the node's workers


@register_algorithm("routed-split")
class RoutedSplit(Routed):
    #: its processes are workers and routers with their own loops (process below): no warm start
    warm_start = False

    class Options(Routed.Options):
        router_cores: int = Field(default=1, ge=1, description="cores per node that only route")
        handoff_cycles: float = Field(default=10.0, ge=0,
                                      description="write or read of one update in a shared-memory queue (assumed)")

    #: its routing runs on other cores than its updates, which eq. (1)'s one CPU a process does not describe
    #: (``routed``'s stated costs are not this algorithm's)
    states_costs = False

    def __init__(self, sim, options):
        ppn = sim.ppn
        if options.router_cores >= ppn:
            raise GupsimError(f"algorithm routed-split: router_cores={options.router_cores} leaves no worker "
                              f"core: it must be below cpu.processes_per_node ({ppn} here)")
        super().__init__(sim, options)
        self.lengths = list(sim.topology.shape)  # node coordinates only: the hand-off replaces the core hop
        self.ndims = len(self.lengths)
        self.capacity = options.bucket_capacity or 1024 // (sum(self.lengths) + 1)
        self.workers = ppn - options.router_cores
        self.per_packet = (sim.net.max_data_bytes - options.software_header_bytes) // 8
        self._routers = {r: _Router(self.ndims, self._rank_coords(r)) for r in range(sim.num_ranks)
                         if self.is_router(r)}
        self._deliveries = [deque() for _ in range(sim.num_ranks)]  # per worker rank
        self._wake = [None] * sim.num_ranks
        self._next_stream = [0] * sim.topology.num_nodes
        self.handoffs = 0

    # ------------------------------------------------------------------ geometry

    def _rank_coords(self, rank: int) -> tuple[int, ...]:
        return tuple(self.sim.topology.coords(rank // self.sim.ppn))

    def is_router(self, rank: int) -> bool:
        return rank % self.sim.ppn >= self.workers

    def _poke(self, rank: int) -> None:
        ev, self._wake[rank] = self._wake[rank], None
        if ev is not None and not ev.triggered:
            ev.succeed()

    def _sleep(self, rank: int):
        ev = self._wake[rank] = self.sim.env.event()
        return ev

    # ------------------------------------------------------------------ router side

    def _route(self, rank: int, st, cpu, updates: list, start: int) -> int:
        sim, ppn = self.sim, self.sim.ppn
        hop_cycles = self.hop_cycles
        node, core = divmod(rank, ppn)
        i = start
        while i < len(updates):
            value, owner = updates[i]
            onode = owner // ppn
            if onode == node:
                worker = node * ppn + (owner % ppn) % self.workers
                cpu.spend(self.options.handoff_cycles)
                self._deliveries[worker].append((value, owner))
                self._poke(worker)
            else:
                theirs = sim.topology.coords(onode)
                d = next(k for k in range(self.ndims) if st.coords[k] != theirs[k])
                if st.full[d] is not None:
                    return i
                hop = list(st.coords)
                hop[d] = theirs[d]
                router = sim.topology.node_id(tuple(hop)) * ppn + core
                self._insert(st, d, router, value, owner, cpu, hop_cycles)
            i += 1
        return i

    @staticmethod
    def _pending(st) -> int:
        return Routed._pending(st) + len(st.inq)

    def _node_generating(self, node: int) -> bool:
        ppn = self.sim.ppn
        return any(self.sim.streams[r].remaining for r in range(node * ppn, (node + 1) * ppn))

    def _router_process(self, rank: int):
        sim, env = self.sim, self.sim.env
        net = sim.net
        cpu, inbox = sim.cpus[rank], net.inbox[rank]
        fifos = net.dimension_fifos(rank, self.ndims)
        st = self._routers[rank]
        node = rank // sim.ppn
        while True:
            progressed = self._send_logic(rank, st, cpu)
            progressed |= self._receive_logic(rank, st, cpu)
            if st.inq and all(f is None for f in st.full):
                # Drain the queue while no bucket is full: one wake-up serves every waiting update.
                while st.inq and all(f is None for f in st.full):
                    cpu.spend(self.options.handoff_cycles)
                    self._route(rank, st, cpu, [st.inq.popleft()], 0)
                for w in range(node * sim.ppn, node * sim.ppn + self.workers):
                    self._poke(w)  # room in the queue again
                progressed = True
            elif (not progressed and not st.inq and not self._node_generating(node)
                  and not any(st.waiting) and not any(st.recvbuf)):
                progressed = self._flush_partial(rank, st, cpu)
            if cpu.debt:
                yield cpu.flush()
            if not progressed:
                yield env.any_of([inbox.wait(), self._sleep(rank)] + self._full_fifo_waits(st, fifos))

    # ------------------------------------------------------------------ worker side

    def _apply_deliveries(self, rank: int, cpu) -> bool:
        box = self._deliveries[rank]
        if not box:
            return False
        cost = self.sim.cost
        while box:
            value, owner = box.popleft()
            cpu.spend(self.options.handoff_cycles + cost.update)
            self.sim.apply(owner, [value], delay_s=cpu.debt_s)
        return True

    def _take(self, node: int):
        """The next update of the node's streams, in turn; None when all are done."""
        ppn, streams = self.sim.ppn, self.sim.streams
        for _ in range(ppn):
            r = node * ppn + self._next_stream[node]
            self._next_stream[node] = (self._next_stream[node] + 1) % ppn
            if streams[r].remaining:
                return streams[r].take()
        return None

    def _worker_process(self, rank: int):
        sim, cost = self.sim, self.sim.cost
        ppn, cpu = sim.ppn, sim.cpus[rank]
        node, core = divmod(rank, ppn)
        router = node * ppn + self.workers + core % self.options.router_cores
        while True:
            progressed = self._apply_deliveries(rank, cpu)
            rst = self._routers[router]
            if len(rst.inq) < self.capacity:
                item = self._take(node)
                if item is not None:
                    value, owner = item
                    cpu.spend(cost.generate)
                    if owner // ppn == node:
                        cpu.spend(cost.update)
                        sim.apply(owner, [value], delay_s=cpu.debt_s)
                    else:
                        cpu.spend(self.options.handoff_cycles)
                        rst.inq.append(item)
                        self.handoffs += 1
                        self._poke(router)
                    progressed = True
            if cpu.debt:
                yield cpu.flush()
            if not progressed:
                if not self._node_generating(node):
                    self._poke(router)  # the router may now flush its partial buckets
                yield self._sleep(rank)

    def process(self, rank: int):
        if self.is_router(rank):
            return self._router_process(rank)
        return self._worker_process(rank)

    def counters(self) -> dict[str, float]:
        return super().counters() | {"handoffs": self.handoffs}

    def metrics(self, window, totals) -> dict[str, float]:
        return super().metrics(window, totals) | {"router_cores_per_node": self.options.router_cores,
                                                  "handoffs_per_update": totals["handoffs"] / self.sim.total_updates}
