"""Geometry of the machines' networks: the 3D torus and mesh (:mod:`gupsim.topology.grid`) and the switched
topologies (:mod:`gupsim.topology.switched`), registered by kind (:mod:`gupsim.topology.base`).  Geometry only:
the engines build the networks that run on them."""

from gupsim.topology.base import MAX_RUN_NODES, TOPOLOGIES, Shape, make_topology, parse_shape, register_topology, run_shape
from gupsim.topology.grid import Mesh3D, Topology, Torus3D
from gupsim.topology import switched  # noqa: F401,E402  (registers the switched topologies)

__all__ = ["MAX_RUN_NODES", "TOPOLOGIES", "run_shape", "Mesh3D", "Shape", "Topology", "Torus3D", "make_topology", "parse_shape",
           "register_topology"]
