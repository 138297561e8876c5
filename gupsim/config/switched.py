"""Machine descriptions for switched fabrics: Data Vortex and FDR InfiniBand (seed 003).

A torus machine (:class:`gupsim.config.MachineConfig`) describes links,
chunks and a BG/L cost table.  A commodity cluster on a switch is described
differently, so it has its own strict model, chosen in the YAML by
``kind: switched``; files without ``kind`` stay torus machines and load
exactly as before.  Its sections:

* ``network``: one of two fabrics, told apart by ``network.topology``:
  ``data-vortex`` (:class:`DataVortexConfig`: 64-bit payload packets, a VIC
  per processor with 16 SerDes lanes of 8 Gb/s, one radix-64 switch chip per
  lane, seed 003 "The Data Vortex Network") or ``fat-tree``
  (:class:`FatTreeConfig`: 56 Gb/s FDR links and 36-port switches, seed 003
  "The Data Vortex System");
* ``cpu``: the Xeon processors and how many processes use one network
  endpoint (:class:`XeonCpuConfig`);
* ``memory``: the random-access limits of one processor's DRAM
  (:class:`MemoryConfig`, the model of :mod:`gupsim.model.dram`);
* ``mpi``: the MPI cost model the ``baseline`` algorithm uses (the torus
  machines' :class:`gupsim.config.MpiConfig`), only on machines that run MPI.

Every number carries its unit in its name and a source comment in the YAML.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union

from pydantic import BaseModel, Field, model_validator

from gupsim.config.torus import _STRICT, MAX_COUNT, MpiConfig


#: A deflected packet may come round at most this many times in one packet's time on a lane.
MAX_DEFLECTIONS_PER_PACKET_TIME = 1000


class DataVortexConfig(BaseModel):
    """The Data Vortex network of one machine: VICs, lanes and radix-64 switch chips."""

    model_config = _STRICT

    topology: Literal["data-vortex"]
    lanes_per_vic: int = Field(ge=1, le=MAX_COUNT, description="SerDes lanes of one VIC, each to its own switch network")
    lane_bits_per_s: float = Field(ge=1, description="signalling rate of one lane")
    lane_coding_efficiency: float = Field(gt=0, le=1, description="data bits per signalled bit on a lane")
    packet_payload_bytes: int = Field(ge=1, le=MAX_COUNT, description="payload of every packet")
    packet_header_bytes: int = Field(ge=0, le=MAX_COUNT, description="header word on the wire: destination VIC and address")
    switch_radix: int = Field(ge=2, le=MAX_COUNT, description="ports of one switch chip")
    switch_level_delay_ns: float = Field(ge=0, description="pipeline latency of one switch level")
    deflection_delay_ns: float = Field(gt=0, description="time a deflected packet needs to come round again")
    pcie_bytes_per_s: float = Field(ge=1, description="host-to-VIC bus bandwidth, each direction")
    pcie_efficiency: float = Field(gt=0, le=1, description="share of the bus left for data after packet overheads")
    dma_setup_ns: float = Field(ge=0, description="start one DMA between host memory and the VIC")
    group_counter_ns: float = Field(ge=0, description="set (send) or read out (receive) one group counter")
    vic_window_packets: int = Field(ge=1, le=MAX_COUNT, description="packets a VIC may have sent but not yet read out at their destinations")

    @model_validator(mode="after")
    def _deflections_are_not_vanishing(self) -> "DataVortexConfig":
        # A packet that finds its output taken comes round again after deflection_delay_ns, and keeps doing
        # so until the output is free; a round far shorter than a packet's time on a lane would make the
        # simulator step through millions of rounds per packet (it had hung on 1e-9 ns).
        packet_ns = self.lane_packet_s * 1e9
        if self.deflection_delay_ns * MAX_DEFLECTIONS_PER_PACKET_TIME < packet_ns:
            raise ValueError(f"deflection_delay_ns={self.deflection_delay_ns:g} is under 1/"
                             f"{MAX_DEFLECTIONS_PER_PACKET_TIME:,} of a packet's time on a lane ({packet_ns:g} ns, "
                             "from the lane rate, coding efficiency and packet bytes): a waiting packet would "
                             f"come round more than {MAX_DEFLECTIONS_PER_PACKET_TIME:,} times per packet ahead of it")
        return self

    def deadlock_hint(self) -> str:
        """Appended to a deadlock report (as the torus network's): nothing known allows one here."""
        return ""

    def topology_kind(self, num_nodes: int) -> str:
        return self.topology

    @property
    def wire_bytes(self) -> int:
        return self.packet_payload_bytes + self.packet_header_bytes

    @property
    def lane_packet_s(self) -> float:
        """Time one packet occupies one lane."""
        return 8 * self.wire_bytes / (self.lane_bits_per_s * self.lane_coding_efficiency)

    @property
    def max_payload_bytes(self) -> int:
        return self.packet_payload_bytes

    @property
    def max_endpoints(self) -> int:
        """Two levels: radix/2 endpoints per first-level chip, radix first-level chips per lane (seed 003)."""
        return self.switch_radix * self.switch_radix // 2


class FatTreeConfig(BaseModel):
    """An InfiniBand fabric: one switch, or a two-level fat tree of the same switches."""

    model_config = _STRICT

    topology: Literal["fat-tree"]
    link_bytes_per_s: float = Field(ge=1, description="data bandwidth of one link direction")
    switch_ports: int = Field(ge=4, le=MAX_COUNT, description="ports of one switch")
    router_delay_ns: float = Field(ge=0, description="port-to-port latency of one switch")
    adapter_delay_ns: float = Field(ge=0, description="host adapter latency, added once per packet")
    chunk_bytes: int = Field(gt=0, le=MAX_COUNT, description="flow-control credit unit (buffer room is counted in these)")
    mtu_bytes: int = Field(gt=0, le=MAX_COUNT, description="largest packet payload")
    packet_header_bytes: int = Field(ge=0, le=MAX_COUNT, description="headers and CRCs on the wire, per packet")
    injection_fifo_chunks: int = Field(ge=1, le=MAX_COUNT, description="send queue room of one process at the adapter")
    reception_fifo_chunks: int = Field(ge=1, le=MAX_COUNT, description="receive buffer room of one process")

    @model_validator(mode="after")
    def _fifos_hold_a_packet(self) -> "FatTreeConfig":
        largest = math.ceil(self.mtu_bytes / self.chunk_bytes)
        for name in ("injection_fifo_chunks", "reception_fifo_chunks"):
            if getattr(self, name) < largest:
                raise ValueError(f"{name}={getattr(self, name)} cannot hold one full packet ({largest} chunks)")
        return self

    def deadlock_hint(self) -> str:
        """Appended to a deadlock report (as the torus network's): nothing known allows one here."""
        return ""

    def topology_kind(self, num_nodes: int) -> str:
        return self.topology

    @property
    def max_payload_bytes(self) -> int:
        return self.mtu_bytes

    @property
    def max_chunks_per_packet(self) -> int:
        return math.ceil(self.mtu_bytes / self.chunk_bytes)

    @property
    def wire_overhead_bytes(self) -> int:
        return self.packet_header_bytes

    @property
    def max_endpoints(self) -> int:
        """A non-blocking two-level fat tree: half of each leaf's ports down, one spine port per leaf."""
        return self.switch_ports * self.switch_ports // 2


#: The least DRAM a processor may have: 1 MiB (a table of 64 K words); 1 byte had run as if it were 128 GB.
MIN_MEMORY_BYTES = 2**20


class XeonCpuConfig(BaseModel):
    """The processors of a commodity server and the processes that share one network endpoint."""

    model_config = _STRICT

    clock_hz: float = Field(ge=1)
    cores_per_processor: int = Field(ge=1, le=MAX_COUNT)
    processors_per_endpoint: int = Field(ge=1, le=MAX_COUNT, description="processors behind one network endpoint (adapter)")
    processes_per_node: int = Field(ge=1, le=MAX_COUNT, description="processes (ranks) per network endpoint")
    generate_cycles: float = Field(ge=0, description="form the next update (LFSR step, owner, loop)")
    update_cycles: float = Field(ge=0, description="one update applied by a single thread: one DRAM miss")
    header_cycles: float = Field(ge=0, description="Data Vortex: build the header word of one packet")
    update_issue_cycles: float = Field(ge=0, description="Data Vortex: core time to issue one update (XOR, loop)")
    memory_bytes_per_processor: float = Field(ge=MIN_MEMORY_BYTES, description="DRAM of one processor (the HPCC "
                                              "table is half; at least 1 MiB)")

    @model_validator(mode="after")
    def _a_process_per_core_at_most(self) -> "XeonCpuConfig":
        # HPCC runs a rank per core at most; 1,000 ranks on an 8-core server had run as if it had them.
        cores = self.cores_per_processor * self.processors_per_endpoint
        if self.processes_per_node > cores:
            raise ValueError(f"processes_per_node={self.processes_per_node} is more than the endpoint's {cores} "
                             f"cores ({self.cores_per_processor} per processor x {self.processors_per_endpoint} "
                             "processors): a process per core at most")
        return self


class MemoryConfig(BaseModel):
    """Random cache-line accesses of one processor: latency and how many may be in flight (gupsim.model.dram)."""

    model_config = _STRICT

    dram_latency_ns: float = Field(gt=0, description="latency of one random access that misses every cache")
    line_fill_buffers_per_core: int = Field(ge=1, le=MAX_COUNT, description="misses one core can have in flight")
    outstanding_misses_per_processor: float = Field(gt=0, description="misses the whole processor can have in flight")


NetworkSection = Annotated[Union[DataVortexConfig, FatTreeConfig], Field(discriminator="topology")]


class SwitchedMachineConfig(BaseModel):
    """A cluster of commodity servers on a switched fabric (``kind: switched``)."""

    model_config = _STRICT

    kind: Literal["switched"]
    name: str
    description: str = ""
    network: NetworkSection
    cpu: XeonCpuConfig
    memory: MemoryConfig
    mpi: MpiConfig | None = Field(default=None, description="MPI costs; only machines that run MPI have them")
    source_path: str = Field(default="", description="file this machine was loaded from (set by the loader)")

    @property
    def inputs_digest(self) -> str:
        """As :attr:`gupsim.config.MachineConfig.inputs_digest`: a switched machine reads no file but its YAML."""
        return ""

    @property
    def cycle_s(self) -> float:
        return 1.0 / self.cpu.clock_hz

    @property
    def cores_per_endpoint(self) -> int:
        return self.cpu.cores_per_processor * self.cpu.processors_per_endpoint
