"""Which engine runs a configuration, and why: the fast engine where a kernel models the run, else SimPy.

One place decides it (``RunConfig.engine``: ``auto``, ``fast`` or ``simpy``), and every reason the fast
engine cannot run a configuration is one line naming what the user set."""

from __future__ import annotations

from gupsim.engines.fast.engine import KERNELS, MAX_FAST_CHUNKS, MAX_FAST_UPDATES

import math
from gupsim.algorithms.base import validate_options
from gupsim.config.torus import MachineConfig
from gupsim.base.errors import GupsimError
from gupsim.model.run_config import RunConfig
from gupsim.topology.base import parse_shape


def unsupported(run: RunConfig) -> str | None:
    """Why the fast engine cannot run ``run`` (None when it can)."""
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
    if run.machine.network.max_chunks_per_packet > MAX_FAST_CHUNKS:
        return f"max_chunks_per_packet above {MAX_FAST_CHUNKS}"
    # The kernels count updates in int64; only a table near 2^63 words leaves room in its slices for more.
    ranks = math.prod(parse_shape(run.shape)) * run.machine.cpu.processes_per_node
    if ranks * run.updates_per_process > MAX_FAST_UPDATES:
        return (f"{ranks} processes x updates_per_process={run.updates_per_process} is more than the "
                f"{MAX_FAST_UPDATES:,} updates the kernels count")
    return None


def choose_engine(run: RunConfig) -> str:
    """Resolve ``run.engine``: 'fast' or 'simpy'; asking for 'fast' where it cannot run is one line."""
    engine = getattr(run, "engine", "auto")
    if engine == "simpy":
        return "simpy"
    reason = unsupported(run)
    if engine == "fast" and reason:
        raise GupsimError(f"--engine fast: {reason}; use --engine simpy or auto")
    return "simpy" if reason else "fast"
