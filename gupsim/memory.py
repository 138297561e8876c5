"""Estimating a run's memory before building it, refusing runs that cannot fit, and measuring its peak.

The SimPy reference engine keeps Python objects per process (CPU, stream,
FIFOs, the algorithm's buckets and in-flight packets) and a bounded route
cache.  The per-process figures are the peaks ``tracemalloc`` measured on
4x4x4 and 8x8x8 runs (docs/performance.md), rounded up; each algorithm class
states its own as ``memory_per_rank_bytes``.  The estimate is deliberately
pessimistic: a refused run would have been at risk, an accepted one should
fit.

The fast engine (:mod:`gupsim.fast`) keeps NumPy arrays instead: a fixed
part (:data:`FAST_BASE_BYTES`: the interpreter, the libraries and Numba
compiling its kernels; :data:`FAST_MARGIN_BYTES`: the fixed margins a run
allocates), a part per node (links, their buffers, the topology:
:data:`FAST_NODE_BYTES`) and a part per process that each kernel states
(``gupsim.fast.KERNELS``: its queues, buckets, and the packets and events in
flight, which grow with the load).  Those figures are peak RSS measured at up
to the whole 64x32x32 machine, short and long runs (docs/performance.md),
with a margin; ``tests/test_fast_memory.py`` checks them against a measured
peak.
"""

from __future__ import annotations

import resource

from gupsim.errors import GupsimError

#: Interpreter, NumPy, pandas, SimPy, ... (measured after imports: about 90 MB).
BASE_BYTES = 100 * 2**20
#: Route cache at its cap (2^18 routes at about 430 B each).
ROUTE_CACHE_BYTES = 110 * 2**20
#: Fast engine: interpreter, libraries and Numba compiling the kernels (measured: 242 MB with the kernels
#: loaded from the cache, 410 MB peak compiling them into an empty cache).
FAST_BASE_BYTES = 512 * 2**20
#: Fast engine: what a run allocates whatever its size: the event queue's and packet table's margins (the
#: calendar's 1 MB of slots, the heap and far table, ``PACKET_MARGIN`` packet rows).  Measured: a 4x4x4
#: virtual-node ``one-packet`` run added 6.1 MB to the RSS where its per-node and per-process parts are 2.1 MB.
FAST_MARGIN_BYTES = 16 * 2**20
#: Fast engine, per node: six links' times, counters and credit pools, and the topology tables (1,200 B),
#: and the slots of its twelve link and dynamic-channel pools: the credit returns kept beside them and the
#: time their oldest packet may leave (12 x (``DEFER_SLOTS`` + 1) x 16 B = 1,728 B, about half of it touched
#: without adaptive routing).
FAST_NODE_BYTES = 3_000
#: Refuse when the estimate exceeds this share of the memory available now.
HEADROOM = 0.9
#: Refuse above this whatever the system says it has: beyond any array NumPy can index.
MAX_ARRAY_BYTES = 2**62


def estimate_bytes(num_ranks: int, per_rank_bytes: int, base_bytes: int | None = None) -> int:
    """Peak bytes of a run; ``base_bytes`` replaces the SimPy engine's fixed part (the fast engine states its own)."""
    base = BASE_BYTES + ROUTE_CACHE_BYTES if base_bytes is None else base_bytes
    return base + num_ranks * per_rank_bytes


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo, or None where the system does not say."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_fits(num_ranks: int, per_rank_bytes: int, what: str, base_bytes: int | None = None,
               detail: str = "", hint: str = "") -> int:
    """Raise a one-line :class:`GupsimError` if the run would not fit; return the estimate.

    The line reads ``<what> (<num_ranks> processes, <detail>) needs about N GB by gupsim's estimate, but only
    M GB are available; use a smaller shape or fewer processes per node<hint>``."""
    need = estimate_bytes(num_ranks, per_rank_bytes, base_bytes)
    refuse_if_over(need, f"{what} ({num_ranks:,} processes{', ' + detail if detail else ''}) needs",
                   f"use a smaller shape or fewer processes per node{hint}", " by gupsim's estimate")
    return need


def refuse_if_over(need: int, subject: str, hint: str, estimated: str = "") -> None:
    """Refuse, in one line (``<subject> about N GB, but only M GB are available; <hint>``), ``need`` bytes
    above :data:`HEADROOM` of the memory available now, or above :data:`MAX_ARRAY_BYTES` where the system
    does not say: NumPy would otherwise fail with a traceback, or grow until the kernel kills the process."""
    have = available_bytes()
    limit = MAX_ARRAY_BYTES if have is None else min(MAX_ARRAY_BYTES, HEADROOM * have)
    if need > limit:
        shown = "" if have is None else f", but only {have / 2**30:,.1f} GB are available"
        raise GupsimError(f"{subject} about {need / 2**30:,.1f} GB{estimated}{shown}; {hint}")


def peak_rss_mb() -> float:
    """This process's own peak resident set, in MB.

    Linux's ``ru_maxrss`` survives ``exec``: a child started by a large parent
    (pytest after the suite, a Dask nanny) reports at least the parent's size at
    fork.  ``VmHWM`` belongs to the process's own address space, so it is read
    first; ``ru_maxrss`` is the fallback where ``/proc`` does not exist.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
