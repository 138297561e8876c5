"""Which network model the reference engine runs on a topology, by the topology's kind.

Topologies are geometry only (:mod:`gupsim.topology`); the engine decides what
moves packets over them.  A torus or mesh gets the link model of
:mod:`gupsim.engines.reference.torus_network` (with BG/P's DMA engine when the
machine has a ``dma`` section, :mod:`gupsim.engines.reference.dma`); a switched
topology gets its fabric's model (:mod:`gupsim.engines.reference.switched_network`).
A new topology kind registers its network here with :func:`register_network`.
"""

from __future__ import annotations

from typing import Any, Callable

from gupsim.base.errors import UnknownNameError
from gupsim.engines.reference.dma import make_torus_network
from gupsim.engines.reference.switched_network import DataVortexNetwork, FatTreeNetwork

#: A network builder: (SimPy environment, topology, machine, processes per node) -> network.
NetworkBuilder = Callable[[Any, Any, Any, int], Any]

NETWORKS: dict[str, NetworkBuilder] = {
    "torus": make_torus_network,
    "mesh": make_torus_network,
    "fat-tree": FatTreeNetwork,
    "data-vortex": DataVortexNetwork,
}


def register_network(kind: str, builder: NetworkBuilder) -> None:
    """Run ``builder``'s network on topologies of ``kind``."""
    NETWORKS[kind] = builder


def make_network(env: Any, topology: Any, machine: Any, processes_per_node: int = 1) -> Any:
    """The network of ``machine`` on ``topology``; an unknown topology kind lists the known ones."""
    try:
        builder = NETWORKS[topology.kind]
    except KeyError:
        raise UnknownNameError("network for topology kind", topology.kind, list(NETWORKS)) from None
    return builder(env, topology, machine, processes_per_node)
