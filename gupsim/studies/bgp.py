"""Blue Gene/P experiment support (seed 002): partition shapes, transcribed targets, fits, comparisons.

There is no reference CSV for BG/P.  Each experiment keeps a ``REFERENCE``
mapping of the values it is judged against, transcribed from seed 002's
text (section and figure named beside each), and marks which of them were
used to fit a constant (``role = "calibration"``) and which are judged.
The comparison frame has one row per observation: the transcribed value
(``value``), the simulated one (``sim_value``) and the error
(``rel_err_value``).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from gupsim.config.loading import load_machine
from gupsim.engines.reference.microbench import microbenchmark
from gupsim.studies.validation import Comparison, compare
from gupsim.model.bounds import machine_topology

#: Nodes -> partition shape.  8x8x8 is the smallest BG/P torus and a rack is 8x8x16 (Blue Gene/P facts taken as given, not from a seed);
#: larger partitions double one dimension at a time, up to 40 racks.  Below 512 nodes: meshes.
PARTITIONS = {2: "2x1x1", 8: "2x2x2", 64: "4x4x4", 128: "8x4x4", 256: "8x8x4",
              512: "8x8x8", 1024: "8x8x16", 2048: "8x16x16", 4096: "16x16x16", 8192: "16x16x32",
              16384: "16x32x32", 32768: "32x32x32", 40960: "32x32x40"}
CORES_PER_NODE = 4  # seed 002 §2


def machine(ppn: int = 1, overrides: dict | None = None):
    return load_machine("bgp", {"cpu.processes_per_node": ppn} | (overrides or {}))


def mbps(bits_per_s: float) -> float:
    return bits_per_s / 1e6


def latency(m, shape: str, nbytes: int, *, farthest: bool = False, src: int = 0, dst: int | None = None,
            iters: int = 2) -> float:
    return microbenchmark("ping-pong").run(m, shape, nbytes=nbytes, farthest=farthest, src=src, dst=dst,
                                           iters=iters)["latency_s"]


def bandwidth(m, shape: str, pairs, nbytes: int, window: int = 8, iters: int = 2) -> dict:
    return microbenchmark("bandwidth").run(m, shape, pairs=pairs, nbytes=nbytes, window=window, iters=iters)


def farthest_node(m, shape: str, node: int = 0) -> int:
    """The lowest-numbered node of the partition ``shape`` farthest (in hops) from ``node``."""
    topology = machine_topology(m, shape)
    n = topology.num_nodes
    return int(np.argmax(topology.hops_array(np.full(n, node), np.arange(n))))


def intra_node_latency(m0, nbytes: int = 0) -> float:
    """Two cores of one node (virtual-node mode), the 'system of 4 cores' of Fig. 4."""
    vn = m0.model_copy(update={"cpu": m0.cpu.model_copy(update={"processes_per_node": 4})})
    return latency(vn, "2x1x1", nbytes, src=0, dst=1)


def fit_latency_constants(one_hop_s: float = 2.8e-6, degradation: float = 1.0,
                          far_shape: str = "32x32x32") -> tuple[float, float]:
    """(mpi.latency_small_cycles, network.router_delay_ns) from Fig. 2a and Fig. 4.

    Fig. 2a: 0-byte one-hop latency ``one_hop_s``.  Fig. 4: the 0-byte latency to
    the farthest node of ``far_shape`` is ``1 + degradation`` times the 4-core
    (one node) latency.  Both latencies are linear in the two constants on an
    idle network, so three runs and a 2x2 solve give the fit exactly.
    """
    base = machine()
    c0, r0 = base.mpi.latency_small_cycles, base.network.router_delay_ns

    def run(c, r):
        m = machine(overrides={"mpi.latency_small_cycles": c, "mpi.latency_large_cycles": c,
                               "network.router_delay_ns": r})
        one = latency(m, "2x1x1", 0)
        far = latency(m, far_shape, 0, farthest=True, iters=1)
        return np.array([one, far - (1 + degradation) * intra_node_latency(m)])

    f0, fc, fr = run(c0, r0), run(c0 + 100, r0), run(c0, r0 + 10)
    jac = np.column_stack([(fc - f0) / 100, (fr - f0) / 10])
    dc, dr = np.linalg.solve(jac, np.array([one_hop_s, 0.0]) - f0)
    return c0 + dc, r0 + dr


def comparison(name: str, title: str, reference: dict, simulated: dict, tolerance: float, method: str,
               t0: float, notes: dict | None = None, extra: pd.DataFrame | None = None,
               plot=None) -> Comparison:
    """One row per observation: transcribed ``value``, ``sim_value``, ``rel_err_value``."""
    ref = pd.DataFrame([{"observation": k, "value": v["value"], "unit": v["unit"], "source": v["source"],
                         "role": v.get("role", "judged")} for k, v in reference.items()])
    sim = pd.DataFrame([{"observation": k, "sim_value": v} for k, v in simulated.items()])
    frame = compare(ref, sim, "observation", ["value"])
    if extra is not None:
        frame = pd.concat([frame, extra], ignore_index=True)
    cal = {(k, "value"): "a constant fitted on it (see the method)" for k, v in reference.items()
           if v.get("role") == "calibration"}
    return Comparison(name=name, title=title, key="observation", frame=frame, targets={"value": tolerance},
                      notes=notes or {}, method=method, wall_s=time.perf_counter() - t0,
                      shown=["unit", "role", "source"], plot=plot, fitted=cal)


def axes(ncols: int = 2):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, ncols, figsize=(5.5 * ncols, 4))


def fan_pairs(m, shape: str, k: int, inward: bool) -> list[tuple[int, int]]:
    """A centre node and its first ``k`` torus neighbours (+x, -x, +y, -y, +z, -z), core 0 each."""
    topo = machine_topology(m, shape)
    centre = topo.node_id(tuple(d // 2 for d in topo.shape))
    ppn = m.cpu.processes_per_node
    nbrs = [int(topo.neighbor(centre, p)) * ppn for p in range(k)]
    return [(n, centre * ppn) if inward else (centre * ppn, n) for n in nbrs]


def fan_bits_per_s(m, k: int, inward: bool, nbytes: int = 65536, window: int = 4, shape: str = "8x8x8") -> float:
    return bandwidth(m, shape, fan_pairs(m, shape, k, inward), nbytes, window=window)["aggregate_bits_per_s"]


def fit_rx_overhead(target_bits_per_s: float = 13_000e6, window: int = 4) -> float:
    """dma.rx_packet_overhead_ns so that fan-in from six neighbours saturates at Fig. 7a's 13,000 Mb/s.

    Secant on the simulated fan-in (it falls monotonically as the overhead grows).
    """
    def err(ns: float) -> float:
        return fan_bits_per_s(machine(overrides={"dma.rx_packet_overhead_ns": ns}), 6, True,
                              window=window) - target_bits_per_s

    x0, x1 = 0.0, 40.0
    f0, f1 = err(x0), err(x1)
    for _ in range(6):
        if abs(f1) < 1e-3 * target_bits_per_s or f1 == f0:
            break
        x0, f0, x1 = x1, f1, x1 - f1 * (x1 - x0) / (f1 - f0)
        f1 = err(x1)
    return x1
