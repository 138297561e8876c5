"""Checks made before a run is built, the same for both engines: that the algorithm runs on the machine's network
and that the algorithm accepts the run (its own checks, made on a stand-in of the machine)."""

from __future__ import annotations

from gupsim.model.run_config import RunConfig

import math
from typing import Any
from gupsim.algorithms.base import algorithm_class, available_algorithms, validate_options
from gupsim.base.errors import GupsimError
from gupsim.topology.base import make_topology, parse_shape
from gupsim.model.packet_format import data_header_bytes


def check_algorithm(run: RunConfig) -> None:
    """Build the run's algorithm on a stand-in of its machine, so that the algorithm's own checks (a bucket
    capacity above HPCC's limit, a payload no packet holds, no worker core, more threads than cores) fail
    before the run, and in a sweep's validation, with the line the run would give.  The stand-in holds what
    an algorithm reads when it is made: the machine, the topology (its per-node tables are built only when
    asked), the process counts and the network's packet limits."""
    from types import SimpleNamespace

    m = run.machine
    shape = parse_shape(run.shape)
    topology = make_topology(m.network.topology_kind(math.prod(shape)), shape, m.network)
    ppn = m.cpu.processes_per_node
    standin = SimpleNamespace(run=run, machine=m, topology=topology, ppn=ppn, num_ranks=topology.num_nodes * ppn,
                              net=network_standin(m, topology))
    algorithm_class(run.algorithm)(standin, validate_options(run.algorithm, run.algorithm_options))


def network_standin(machine: Any, topology: Any) -> Any:
    """What an algorithm reads of its network when it is made, without building one: the network's section,
    the topology, and the bytes a packet carries after the network's own header (BG/P's DMA header)."""
    from types import SimpleNamespace


    header = data_header_bytes(machine)
    return SimpleNamespace(cfg=machine.network, topology=topology, data_header_bytes=header,
                           max_data_bytes=machine.network.max_payload_bytes - header)


def check_network(run: RunConfig) -> None:
    """Refuse an algorithm on a network it does not run on, or without the MPI costs it needs, in one line."""
    m, cls = run.machine, algorithm_class(run.algorithm)
    kind = m.network.topology_kind(math.prod(parse_shape(run.shape)))
    if kind not in cls.networks:
        raise GupsimError(f"algorithm {run.algorithm} does not run on a {kind} network "
                          f"(machine {m.name}); it runs on: {', '.join(cls.networks)}")
    if run.warm_start and not cls.warm_start:
        starts = ", ".join(n for n in available_algorithms() if algorithm_class(n).warm_start)
        raise GupsimError(f"algorithm {run.algorithm} has no warm start (--warm-start); the algorithms that have "
                          f"one: {starts}")
    if cls.needs_mpi and getattr(m, "mpi", None) is None:
        raise GupsimError(f"algorithm {run.algorithm} needs MPI costs; machine {m.name} has no mpi section")
