"""Machine descriptions: frozen, validated parameter sets loaded from YAML.

A machine (``gupsim/data/machines/<name>.yaml``, package data) holds every number the model
uses, each with its unit in the key name (``clock_hz``, ``link_bytes_per_s``,
``router_delay_ns``) and a comment in the YAML naming its source in the seeds.
The sections mirror the model's parts:

* ``network``: links, packet format, buffers (seed 000 §5.1);
* ``cpu``: clock and the measured per-step cycle costs (seed 000 §5.2,
  Table 1, read from the CSV the YAML names, never retyped);
* ``mpi``: the costs of the MPI library the baseline code calls (seed 000
  §5.2 and §6.1);
* ``cache`` (optional): cache sizes and latencies for the baseline's
  per-destination data (seed 000 §5.1, §6.1; :mod:`gupsim.model.cpu_cache`).

Loading is strict: an unknown key, a key given twice, a wrong type, an
impossible value or a broken cycle table is reported as one line naming the
file (or the ``--set`` that caused it) and the field (:class:`GupsimError`),
never as a pydantic, PyYAML or pandas traceback.  YAML is read as YAML 1.2
reads numbers: ``350e6`` is a float.  ``--set key=value`` overrides any leaf field
for what-if runs, by its dotted path or by its bare name when unambiguous (:mod:`gupsim.config.overrides`).
Reading YAML strictly is :mod:`gupsim.config.yaml_files`; turning pydantic's errors into that one line is
:mod:`gupsim.config.field_errors`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gupsim.data import MACHINES_DIR, PACKAGE_SCHEME, read_table, resource
from gupsim.config.field_errors import FieldProblem
from gupsim.config.plausible import plausible_field
from gupsim.config.router import RouterConfig
from gupsim.base.files import read_bytes

_STRICT = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

# Upper bound of every count-like int field (bytes, chunks, cycles, ports): the fast engine keeps
# them in int32 tables, so a larger value must fail here, naming the field, not overflow there.
MAX_COUNT = 2**31 - 1
#: The largest cycle table read: gupsim's is 2 KB; a table of gigabytes (a link to a file of NUL bytes) had
#: grown memory until the process was killed.
MAX_TABLE_BYTES = 16 * 2**20
#: The processes per node a torus machine runs: its modes (BG/L co-processor and virtual-node, BG/P SMP, dual
#: and virtual-node, the X1's four MSPs).
NODE_MODES = (1, 2, 4)


class NetworkConfig(BaseModel):
    """Torus links, packet format and buffer depths."""

    model_config = _STRICT

    topology: Literal["torus", "mesh", "auto"] = Field(
        description="'auto' builds a mesh up to mesh_up_to_nodes nodes and a torus above"
    )
    mesh_up_to_nodes: int = Field(ge=0, le=MAX_COUNT, description="largest partition wired as a mesh when topology is auto")
    link_bytes_per_s: float = plausible_field("bandwidth of one directed link", 1e6, 1e12, "bytes/s", ge=1)
    chunk_bytes: int = Field(gt=0, le=MAX_COUNT, description="packets are whole multiples of this many payload bytes")
    max_chunks_per_packet: int = Field(ge=1, le=MAX_COUNT, description="largest packet, in chunks")
    packet_header_bytes: int = Field(ge=0, le=MAX_COUNT, description="hardware header on the wire, per packet")
    packet_trailer_bytes: int = Field(ge=0, le=MAX_COUNT, description="hardware trailer (CRC) on the wire, per packet")
    paper_packet_overhead_bytes: int = Field(
        ge=0, le=MAX_COUNT, description="per-packet overhead the bottleneck table of seed 000 used (b = 32 + this)"
    )
    router_delay_ns: float = plausible_field("pipeline latency of one router hop", 0, 1e4, "ns", ge=0)
    routing: Literal["deterministic", "adaptive"] = Field(
        description="deterministic: dimension order; adaptive: minimal adaptive on a dynamic VC, "
        "dimension-order escape VC")
    flow_control: Literal["bubble", "none"] = Field(
        description="torus deadlock avoidance: BG/L's bubble rule, or none (a what-if that can deadlock)")
    bubble_accounting: Literal["chunks", "packets"] = Field(
        description="how an escape channel counts the room a packet holds, for the bubble rule: chunks: its own "
        "chunks (exact while a ring carries packets of one size; mixed sizes can split a ring's free room into "
        "pieces no waiting packet fits, and deadlock); packets: a full packet's room (max_chunks_per_packet) "
        "whatever its size, Puente et al.'s bubble in packet slots, deadlock-free for any mix "
        "(docs/model.md, 'Mixed packet sizes')")
    link_buffer_chunks: int = Field(ge=1, le=MAX_COUNT, description="input buffer at the far end of each directed link")
    injection_fifo_chunks: int = Field(ge=1, le=MAX_COUNT, description="injection FIFO depth of a node")
    reception_fifo_chunks: int = Field(ge=1, le=MAX_COUNT, description="reception FIFO depth of a node")
    fifos: Literal["shared", "per-dimension"] = Field(
        description="shared: one injection and one reception FIFO per process; per-dimension: one of each per "
        "torus dimension plus one for node-local packets, each of the depth above")
    buffer_order: Literal["fifo", "pool"] = Field(
        description="fifo: packets leave every link buffer and injection FIFO in the order they entered it, "
        "as hardware FIFOs do (head-of-line blocking); pool: a buffer is room only, and any packet whose next "
        "room is free may leave")
    half_ring_ties: Literal["plus", "source-parity"] = Field(
        description="which way deterministic routing sends a packet whose destination is exactly half-way round "
        "a ring of even length: plus: always +; source-parity: + from even coordinates, - from odd ones, as "
        "BG/L's BLRTS hint cut-offs do (IBM BlueMatter, svntrunk/src/BonB/src/blade_on_blrts.c, "
        "_blade_torus_calc_hints_same_as_blrts(): + when the + neighbour's coordinate is odd; "
        "docs/research/bgl-router-facts.md row 13). Adaptive routing's dynamic channels still see both "
        "directions of a tie as minimal")
    cut_through_bytes: int | None = Field(
        default=None, ge=1, le=MAX_COUNT,
        description="bytes a router must have before it forwards a packet's head (default: one chunk)")
    router: RouterConfig = Field(
        description="the torus router and its virtual channels (gupsim.config.router); required, as every "
        "network parameter is, so a file that lost its router section is refused rather than run with another")

    @model_validator(mode="after")
    def _buffers_hold_a_packet(self) -> "NetworkConfig":
        largest = self.max_chunks_per_packet
        for name in ("link_buffer_chunks", "injection_fifo_chunks", "reception_fifo_chunks"):
            if getattr(self, name) < largest:
                raise ValueError(
                    f"{name}={getattr(self, name)} cannot hold one full packet "
                    f"(max_chunks_per_packet={largest})"
                )
        if self.topology != "mesh" and self.flow_control == "bubble" and self.link_buffer_chunks < 2 * largest:
            raise ValueError(
                f"link_buffer_chunks={self.link_buffer_chunks} is too small for a torus: bubble flow "
                f"control needs room for two full packets ({2 * largest} chunks)"
            )
        vc = self.router
        if vc.name == "bgl-vc" and self.flow_control == "bubble" and vc.vc_depth_chunks < 2 * largest:
            raise ValueError(
                f"router.vc_depth_chunks={vc.vc_depth_chunks} is too small: the bubble rule on an escape VC "
                f"needs room for two full packets ({2 * largest} chunks)")
        return self

    def bubble_chunks(self, wraps: bool) -> int:
        """The room a packet entering a ring must leave free behind it: a full packet on a ring with the bubble
        rule, 0 on a mesh or without flow control (both engines' routers read it)."""
        return self.max_chunks_per_packet if wraps and self.flow_control == "bubble" else 0

    def escape_slot_chunks(self, wraps: bool) -> int:
        """The slot an escape channel counts a packet's room in: the bubble's full packet with
        ``bubble_accounting: packets``, 0 (each packet its own chunks) otherwise."""
        return self.bubble_chunks(wraps) if self.bubble_accounting == "packets" else 0

    def deadlock_hint(self) -> str:
        """Appended to a deadlock report: what in the network is known to allow one ('' if nothing)."""
        if self.topology != "mesh" and self.flow_control == "bubble" and self.bubble_accounting == "chunks":
            return ("; the bubble rule counts chunks here, and packets of mixed sizes can fragment a ring's free "
                    "room (docs/model.md, 'Mixed packet sizes'): --set network.bubble_accounting=packets")
        if self.topology != "mesh" and self.flow_control == "none":
            return "; a torus without flow control can deadlock: --set network.flow_control=bubble"
        return ""

    def topology_kind(self, num_nodes: int) -> str:
        """The topology a partition of ``num_nodes`` is wired as ('auto' resolved)."""
        if self.topology != "auto":
            return self.topology
        return "mesh" if num_nodes <= self.mesh_up_to_nodes else "torus"

    @property
    def max_payload_bytes(self) -> int:
        return self.chunk_bytes * self.max_chunks_per_packet

    @property
    def wire_overhead_bytes(self) -> int:
        return self.packet_header_bytes + self.packet_trailer_bytes


class CpuConfig(BaseModel):
    """Clock and the measured cycle cost of each step of an update."""

    model_config = _STRICT

    clock_hz: float = plausible_field("core clock; every *_cycles field counts cycles of it", 1e6, 1e10, "Hz", ge=1)
    processes_per_node: int = Field(ge=1, le=4, description="1: co-processor mode; 2: virtual-node mode; 4: "
                                    "BG/P's virtual-node mode, the X1's four MSPs (1, 2 or 4: a node's cores)")
    generate_cycles: int = Field(ge=0, le=MAX_COUNT, description="t_g + t_o^s: form the next update")
    update_cycles: int = Field(ge=0, le=MAX_COUNT, description="t_u: XOR into a table word that misses every cache")
    packet_overhead_cycles: float = plausible_field("t_o^p of eq. (1): per remote update, beyond send and receive",
                                                    0, 1e6, "cycles", ge=0)
    route_hop_cycles: float = plausible_field("software routing: per update per software hop, packets excluded",
                                              0, 1e6, "cycles", ge=0)
    poll_cycles_per_dimension: float = Field(
        gt=0, description="software routing: one pass of the loop that finds nothing to do, per software dimension "
        "(a status check of its injection and its reception FIFO); sets how often a waiting process re-tests a send")
    raw_device_cycle_table: str = Field(description="CSV of send/recv cycles by payload: a path relative to this "
                                        "file, or package:reference/<file>.csv for a table gupsim ships")


    @model_validator(mode="after")
    def _a_mode_a_node_has(self) -> "CpuConfig":
        # Every torus machine's node has 1, 2 or 4 cores, and its modes run one process per core or one per
        # node; any other count (3 on BG/L's two cores) is no machine that was built.
        if self.processes_per_node not in NODE_MODES:
            raise ValueError(f"processes_per_node={self.processes_per_node} is not a mode of a torus node "
                             f"({', '.join(map(str, NODE_MODES))}: one process per node, per pair of cores, or per core)")
        return self

class MpiConfig(BaseModel):
    """Costs of the MPI calls the baseline code makes (seed 000 §5.2, §6.1)."""

    model_config = _STRICT

    latency_small_cycles: float = Field(gt=0, description="MPI call latency at latency_small_bytes")
    latency_small_bytes: int = Field(gt=0, le=MAX_COUNT, description="message size of latency_small_cycles")
    latency_large_cycles: float = Field(gt=0, description="MPI call latency at latency_large_bytes")
    latency_large_bytes: int = Field(gt=0, le=MAX_COUNT, description="message size of latency_large_cycles")
    send_share: float = Field(ge=0, le=1, description="fraction of a message's MPI cost paid by the sender")
    header_bytes: int = Field(ge=0, le=MAX_COUNT, description="software header MPI adds to each message")
    test_cycles: float = Field(ge=0, description="one MPI_Test call")
    bucket_insert_cycles: float = Field(ge=0, description="append an update to its destination bucket")
    heap_cycles_per_level: float = Field(ge=0, description="heap update cost per level of a heap of N-1 entries")
    peer_state_bytes: float = Field(
        ge=0, description="MPI's state per peer, touched by each message's sender and receiver "
        "(its cache misses grow with N when the machine has a cache section)")

    @model_validator(mode="after")
    def _ordered(self) -> "MpiConfig":
        if self.latency_large_bytes <= self.latency_small_bytes:
            raise ValueError("latency_large_bytes must exceed latency_small_bytes")
        # A larger message never costs less; the latency line would fall, and mpi_latency clamps it.
        if self.latency_large_cycles < self.latency_small_cycles:
            raise ValueError(f"latency_large_cycles={self.latency_large_cycles} is below "
                             f"latency_small_cycles={self.latency_small_cycles}: a larger message cannot cost less")
        return self


class CacheConfig(BaseModel):
    """Cache sizes and latencies: the baseline's per-destination data (gupsim.model.cpu_cache), routed's working set (gupsim.model.routed_cache)."""

    model_config = _STRICT

    line_bytes: int = Field(gt=0, le=MAX_COUNT, description="cache line: the bytes one miss brings in")
    l1_bytes: int = Field(gt=0, le=MAX_COUNT, description="L1 data cache capacity")
    l1_hit_cycles: float = Field(ge=0, description="load latency on an L1 hit")
    l3_bytes: int = Field(gt=0, le=MAX_COUNT, description="last-level (L3) cache capacity")
    l3_hit_cycles: float = Field(ge=0, description="load latency on an L1 miss that hits L3")
    memory_cycles: float = Field(ge=0, description="main-memory latency (misses every cache)")
    routed_working_set: Literal["lookup", "round-robin"] = Field(
        description="what routed's per-hop L1 misses count (gupsim.model.routed_cache): lookup: the next-hop "
        "lookup table only, the rest assumed to stay in L1 (seed 000 §4.3's 27 KB argument); round-robin: "
        "lookup table, router headers, buckets and receive buffers together, in an L1 that replaces round-robin "
        "whether a line is in use or not (PPC440x5 User's Manual §4.1.1), with one new GUPS-table line per update")

    @model_validator(mode="after")
    def _ordered(self) -> "CacheConfig":
        if self.l3_bytes < self.l1_bytes:
            raise ValueError("l3_bytes must be at least l1_bytes")
        if not self.l1_hit_cycles <= self.l3_hit_cycles <= self.memory_cycles:
            raise ValueError("latencies must grow: l1_hit_cycles <= l3_hit_cycles <= memory_cycles")
        return self


class DmaConfig(BaseModel):
    """Blue Gene/P's per-node DMA engine and its sender-driven throttling (seed 002 §2, §3.2, §3.4).

    Optional: a machine without this section (BG/L) keeps the plain network.
    """

    model_config = _STRICT

    engine_bytes_per_s: float = Field(ge=1, description="one node's DMA engine, each way (injection, reception)")
    header_bytes: int = Field(ge=0, le=MAX_COUNT, description="DMA header carried inside each packet's chunks")
    rx_packet_overhead_ns: float = Field(ge=0, description="extra reception cost per packet from the torus")
    throttle_backoff_ns: float = Field(ge=0, description="wait before a sender whose first link is busy retries")


class MachineConfig(BaseModel):
    """A whole machine: what the simulator needs to know about the hardware."""

    model_config = _STRICT

    name: str = Field(description="the machine's name, as --machine takes it")
    description: str = Field(default="", description="one line for people")
    network: NetworkConfig
    cpu: CpuConfig
    mpi: MpiConfig
    cache: CacheConfig | None = Field(default=None, description="omit to model no cache misses on per-destination data")
    dma: DmaConfig | None = None
    source_path: str = Field(default="", description="file this machine was loaded from (set by the loader)")

    @model_validator(mode="after")
    def _dma_fifos_are_shared(self) -> "MachineConfig":
        if self.dma is not None and self.network.fifos != "shared":
            raise ValueError("network.fifos: the DMA model (dma section) has one injection and one reception "
                             "FIFO per process; use fifos: shared")
        return self

    @cached_property
    def costs(self) -> "RawDeviceCosts":
        return RawDeviceCosts.from_csv(self._resolve(self.cpu.raw_device_cycle_table))

    @cached_property
    def inputs_digest(self) -> str:
        """A hash of what the machine reads besides its fields: the cycle table's bytes.  Run keys hold it
        (kept runs, checkpoints, sweep points), so an edited table makes another run, not a reused one."""
        path = self._resolve(self.cpu.raw_device_cycle_table)
        data = read_bytes(path, "cpu.raw_device_cycle_table", MAX_TABLE_BYTES) if isinstance(path, Path) else \
            path.read_bytes()  # package data: gupsim's own table
        return hashlib.sha256(data).hexdigest()[:16]

    def _resolve(self, rel: str) -> Any:
        """The file ``rel`` names: a Path relative to the machine file's folder, or for ``package:NAME`` the
        package data file importlib.resources finds (it has ``is_file``, ``open`` and ``read_bytes``)."""
        if rel.startswith(PACKAGE_SCHEME):
            path = resource(rel.removeprefix(PACKAGE_SCHEME))
        else:
            base = Path(self.source_path).parent if self.source_path else MACHINES_DIR
            path = (base / rel).resolve()
        if not (path.is_file() or path.is_dir()):  # a folder is reported by from_csv, as not a file
            raise FieldProblem("cpu.raw_device_cycle_table", f"cpu.raw_device_cycle_table: file not found: {path}")
        return path

    @property
    def cycle_s(self) -> float:
        return 1.0 / self.cpu.clock_hz


@dataclass(frozen=True)
class RawDeviceCosts:
    """Send/receive cycles of the raw torus device by payload (seed 000 Table 1).

    Interpolated linearly between the measured payload sizes; a payload
    smaller than the first row costs what the first row costs, because the
    device moves whole chunks.
    """

    payload_bytes: np.ndarray
    send_cycles: np.ndarray
    recv_cycles: np.ndarray

    COLUMNS = ("payload_bytes", "send_mean_cycles", "recv_mean_cycles")

    @classmethod
    def from_csv(cls, path: Any) -> "RawDeviceCosts":
        """Read and check the table; any defect is a :class:`FieldProblem` of cpu.raw_device_cycle_table.

        Checked here, when the machine loads, because the table is first interpolated deep inside a
        run, where an empty or non-numeric column would surface as a NumPy error from SimPy.
        """
        def problem(reason: str) -> FieldProblem:
            return FieldProblem("cpu.raw_device_cycle_table", f"cpu.raw_device_cycle_table: {path}: {reason}")

        if not path.is_file():
            raise problem("not a file")
        if isinstance(path, Path) and path.stat().st_size > MAX_TABLE_BYTES:  # a table is a few KB
            raise problem(f"{path.stat().st_size:,} bytes, larger than the {MAX_TABLE_BYTES:,} a cycle table may be")
        try:
            frame = read_table(path)
        except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise problem(f"not a readable CSV table ({reason})") from None
        missing = [c for c in cls.COLUMNS if c not in frame.columns]
        if missing:
            raise problem(f"missing columns {missing} (expected a CSV with columns {', '.join(cls.COLUMNS)})")
        frame = frame[list(cls.COLUMNS)]
        if frame.empty:
            raise problem("no rows; the costs are interpolated, so at least one is needed")
        numbers = frame.apply(pd.to_numeric, errors="coerce")
        bad = numbers.isna() | ~np.isfinite(numbers.fillna(0)) | (numbers < 0)
        if bad.to_numpy().any():
            row, column = next((r, c) for r, c in zip(*np.nonzero(bad.to_numpy())))
            got = frame.iat[row, column]
            shown = "an empty cell" if pd.isna(got) else repr(got.item() if isinstance(got, np.generic) else got)
            raise problem(f"data row {row + 1}: {cls.COLUMNS[column]}: expected a non-negative number (got {shown})")
        if numbers["payload_bytes"].duplicated().any():
            raise problem("payload_bytes repeats a size; each row must be a different payload")
        numbers = numbers.sort_values("payload_bytes")
        return cls(*(numbers[c].to_numpy(float) for c in cls.COLUMNS))

    def send(self, payload_bytes: float) -> float:
        return self._lookup(payload_bytes)[0]

    def recv(self, payload_bytes: float) -> float:
        return self._lookup(payload_bytes)[1]

    def _lookup(self, payload_bytes: float) -> tuple[float, float]:
        # Payload sizes repeat endlessly in a run; interpolate each size once.
        cache = self.__dict__.setdefault("_cache", {})
        hit = cache.get(payload_bytes)
        if hit is None:
            hit = cache[payload_bytes] = (
                float(np.interp(payload_bytes, self.payload_bytes, self.send_cycles)),
                float(np.interp(payload_bytes, self.payload_bytes, self.recv_cycles)),
            )
        return hit


# --------------------------------------------------------------------------- loading


