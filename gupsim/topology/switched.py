"""Switched fabrics beside the torus: InfiniBand fat trees and the Data Vortex (seed 003).

Both are indirect networks: every endpoint (a host adapter, or a Data Vortex
VIC) has one link into a switch, and switches of a fixed radix are wired in
one or two levels.

* ``"fat-tree"`` (:class:`FatTree`): FDR InfiniBand.  Up to ``radix``
  endpoints hang off one switch; Hypatia's 32 servers share one 36-port
  switch (seed 003 "The Data Vortex System").  Larger machines are a
  non-blocking two-level fat tree: leaves with ``radix/2`` endpoints and
  ``radix/2`` up-links, one link from every leaf to each of ``radix/2``
  spines, destination-mod-k up-link choice (the usual InfiniBand subnet
  manager routing).
* ``"data-vortex"`` (:class:`DataVortex`): one such network *per SerDes
  lane*.  Each of a VIC's 16 lanes goes to its own radix-64 switch chip, so
  16 identical switch networks run in parallel (seed 003 Fig. 3).  One level
  serves 64 endpoints; two levels, with 32 endpoints and 32 up-ports on every
  first-level chip, serve up to 64 x 32 = 2,048 (seed 003: "2 levels of Data
  Vortex switch FPGAs support up to 2048 unique node addresses").  The link
  ids here are those of one lane's network; the network model multiplies
  them by the lanes.

Link ids, for ``n`` endpoints, ``g`` groups (first-level chips) and ``h =
radix/2`` up-links per group: ``0..n-1`` endpoint to switch, ``n..2n-1``
switch to endpoint, then ``g*h`` group up-links (group ``G``, second-level
chip ``c``: ``2n + G*h + c``) and ``h*g`` down-links (``2n + g*h + c*g +
G``).  A single-level machine has only the first ``2n``.

Both are full-bisection networks: every cut's capacity is at least its
smaller side's endpoint links, so the smallest edge expansion is 1 endpoint
link (Data Vortex: per lane).  Shapes are written like the torus's, ``Nx1x1``
for N endpoints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import ClassVar

import networkx as nx
import numpy as np

from gupsim.base.errors import GupsimError
from gupsim.topology.base import _validated, parse_shape, register_topology


class SwitchedTopology:
    """Endpoints on switches of one radix: one level, or two as a full-bisection tree."""

    kind: ClassVar[str] = "abstract-switched"
    wraps: ClassVar[bool] = False
    #: As :attr:`gupsim.topology.Topology.telemetry_unavailable`.
    telemetry_unavailable: ClassVar[dict[str, str]] = {
        "links": "the link table gives each link's torus coordinates, dimension and direction, "
                 "which switch links do not have"}

    def __init__(self, shape: str | Sequence[int], radix: int, max_endpoints: int):
        self.shape = parse_shape(shape) if isinstance(shape, str) else _validated(shape, shape)
        self.num_nodes = n = math.prod(self.shape)
        self.radix = radix
        if n > max_endpoints:
            raise GupsimError(f"{self.kind}: {n} endpoints do not fit; at most {max_endpoints} "
                              f"with radix-{radix} switches in two levels")
        self.levels = 1 if n <= radix else 2
        self.group_size = n if self.levels == 1 else radix // 2
        self.groups = math.ceil(n / self.group_size)
        self.uplinks = 0 if self.levels == 1 else radix // 2
        self.num_link_slots = 2 * n + 2 * self.groups * self.uplinks
        self.num_links = self.num_link_slots

    @classmethod
    def from_config(cls, shape: str | Sequence[int], network: object = None) -> "SwitchedTopology":
        if network is None or getattr(network, "topology", None) != cls.kind:
            raise GupsimError(f"topology {cls.kind} needs a '{cls.kind}' network section to know its switches")
        return cls(shape, *cls._radix_and_limit(network))

    @staticmethod
    def _radix_and_limit(network) -> tuple[int, int]:
        raise NotImplementedError

    # ------------------------------------------------------------------ links and routes

    def group(self, node: int) -> int:
        return node // self.group_size

    def up_link(self, group: int, chip: int) -> int:
        return 2 * self.num_nodes + group * self.uplinks + chip

    def down_link(self, chip: int, group: int) -> int:
        return 2 * self.num_nodes + self.groups * self.uplinks + chip * self.groups + group

    def route(self, src: int, dst: int, chip: int | None = None) -> list[int]:
        """Endpoint link, then (between groups) up to a second-level chip and down, then the link to ``dst``.

        ``chip`` picks the second-level chip; by default destination mod k.
        """
        n = self.num_nodes
        if self.levels == 1 or self.group(src) == self.group(dst):
            return [src, n + dst]
        c = dst % self.uplinks if chip is None else chip
        return [src, self.up_link(self.group(src), c), self.down_link(c, self.group(dst)), n + dst]

    def hops(self, src: int, dst: int) -> int:
        """Switch chips a packet passes through."""
        return 1 if self.levels == 1 or self.group(src) == self.group(dst) else 3

    def hops_array(self, src, dst) -> np.ndarray:
        src, dst = np.asarray(src), np.asarray(dst)
        if self.levels == 1:
            return np.ones(np.broadcast(src, dst).shape, dtype=np.int64)
        return np.where(src // self.group_size == dst // self.group_size, 1, 3)

    @property
    def mean_hops(self) -> float:
        n = self.num_nodes
        if self.levels == 1:
            return 1.0
        sizes = [min(self.group_size, n - g * self.group_size) for g in range(self.groups)]
        same = sum(s * (s - 1) for s in sizes)
        return float(Fraction(same + 3 * (n * (n - 1) - same), n * (n - 1)))

    @property
    def diameter(self) -> int:
        return 1 if self.levels == 1 else 3

    def links(self) -> np.ndarray:
        return np.arange(self.num_link_slots)

    def edge_expansion(self) -> Fraction:
        """Full bisection: no cut carries less than its smaller side's endpoint links."""
        return Fraction(1)

    def bisection_links(self) -> int:
        return self.num_nodes // 2

    def to_networkx(self) -> nx.MultiDiGraph:
        graph = nx.MultiDiGraph(name=repr(self))
        n = self.num_nodes
        for node in range(n):
            graph.add_node(node, kind="endpoint")
            leaf = ("leaf", self.group(node))
            graph.add_edge(node, leaf, link=node)
            graph.add_edge(leaf, node, link=n + node)
        for g in range(self.groups if self.levels == 2 else 0):
            for c in range(self.uplinks):
                graph.add_edge(("leaf", g), ("spine", c), link=self.up_link(g, c))
                graph.add_edge(("spine", c), ("leaf", g), link=self.down_link(c, g))
        return graph

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.num_nodes} endpoints, {self.levels} level(s), radix {self.radix})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and (self.shape, self.radix) == (other.shape, other.radix)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.shape, self.radix))


@register_topology("fat-tree")
class FatTree(SwitchedTopology):
    """InfiniBand: one switch up to its port count, else a non-blocking two-level fat tree."""

    telemetry_unavailable = SwitchedTopology.telemetry_unavailable | {
        "timeseries": "its samples include link-blocked seconds, and the fat-tree model has no link-level "
                      "flow control to block on"}

    @staticmethod
    def _radix_and_limit(network) -> tuple[int, int]:
        return network.switch_ports, network.max_endpoints


@register_topology("data-vortex")
class DataVortex(SwitchedTopology):
    """One lane's Data Vortex network; a machine has ``lanes_per_vic`` of them in parallel."""

    telemetry_unavailable = SwitchedTopology.telemetry_unavailable | {
        "timeseries": "its samples count injection FIFO chunks and link-blocked seconds, and a VIC has a window "
                      "of packets and deflects packets instead of blocking them"}

    @staticmethod
    def _radix_and_limit(network) -> tuple[int, int]:
        return network.switch_radix, network.max_endpoints
