"""The fast engine: Numba-compiled kernels that run the reference model on whole machines.

The SimPy model (:mod:`gupsim.engines.reference`, :mod:`gupsim.algorithms`) is the
readable reference and what docs/model.md teaches.  It schedules tens of
Python events per update and reaches about 1,000 nodes in minutes; the
seeds' most interesting rows (seed 000 Table 4 at 16K and 64K nodes, seed
001's 131,072 processes) need the whole 64x32x32 torus.  This package runs
the same model as compiled event loops over NumPy arrays:

* :mod:`gupsim.engines.fast.core`: the torus network of the reference (links, bubble
  flow control, deterministic and adaptive routing, buffer order), on
  :mod:`gupsim.engines.fast.credits` (credit pools and FIFOs, deferred credit
  returns), :mod:`gupsim.engines.fast.events` (the event queue in the canonical event order) and
  :mod:`gupsim.engines.fast.tables` (the state's tables and their columns);
* :mod:`gupsim.engines.fast.stream`: the HPCC generator and owner function, bit for
  bit;
* one module per algorithm with a kernel (:data:`KERNELS`), each a state
  machine of the reference process, spending cycles in the same order, and
  each exporting a :class:`gupsim.engines.fast.contract.Kernel` that says what
  it provides (checked as it registers);
* :mod:`gupsim.engines.fast.driver`: runs a kernel batch by batch, and saves and
  resumes a long run (checkpoints).

**Engines.**  ``RunConfig.engine`` (``gupsim run --engine``) is ``simpy``,
``fast`` or ``auto`` (the default): the fast engine where a kernel exists
for the algorithm and the run's features, else SimPy.  :data:`ENGINE` states
which runs those are, in one line each for the others
(:class:`gupsim.engines.contract.Engine`, registered in :data:`gupsim.engines.run.ENGINES`).
Every record says which ran (``engine``).  Runs with ``verify`` use SimPy (the
fast engine keeps no table).

**Agreement.**  Same model, same costs spent in the same order, the same
HPCC stream, and events at equal times taken in the canonical order of
:mod:`gupsim.engines.fast.events` (time, phase, entity, the entity's own sequence number), which the
reference engine's SimPy environment keeps too.  ``tests/engines/fast/test_fast.py`` checks that the
records are equal to SimPy's bit for bit, every metric and every link
counter, on meshes and tori, deterministic and adaptive routing,
co-processor and virtual-node mode.  The engines differ only in ``events``
(SimPy counts its bookkeeping events too) and speed.
"""

# First: Python runs this file before any module of the package, so the kernels' cache is stamped before any
# of them decorates a function (gupsim.engines.fast.kernel_cache).
from gupsim.engines.fast import kernel_cache  # noqa: F401
from gupsim.engines.fast.contract import Kernel
from gupsim.engines.fast.engine import (ENGINE, KERNELS, MAX_FAST_CHUNKS, MAX_FAST_UPDATES, FastEngine,
                                        FastSimulation, check_memory, simulate_fast)

__all__ = ["ENGINE", "KERNELS", "MAX_FAST_CHUNKS", "MAX_FAST_UPDATES", "FastEngine", "FastSimulation", "Kernel",
           "check_memory", "simulate_fast"]
