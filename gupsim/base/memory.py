"""Estimating a run's memory before building it, refusing runs that cannot fit, and measuring its peak.

The SimPy reference engine keeps Python objects per process (CPU, stream,
FIFOs, the algorithm's buckets and in-flight packets) and a bounded route
cache.  The per-process figures are the peaks ``tracemalloc`` measured on
4x4x4 and 8x8x8 runs (docs/performance.md), rounded up; each algorithm class
states its own as ``memory_per_rank_bytes``.  The estimate is deliberately
pessimistic: a refused run would have been at risk, an accepted one should
fit.

The fast engine (:mod:`gupsim.engines.fast`) keeps NumPy arrays instead: a fixed
part (:data:`FAST_BASE_BYTES`: the interpreter, the libraries and Numba
compiling its kernels; :data:`FAST_MARGIN_BYTES`: the fixed margins a run
allocates), a part per node (links, their buffers, the topology:
:data:`FAST_NODE_BYTES`) and a part per process that each kernel states
(``gupsim.engines.fast.KERNELS``: its queues, buckets, and the packets and events in
flight, which grow with the load).  Those figures are peak RSS measured at up
to the whole 64x32x32 machine, short and long runs (docs/performance.md),
with a margin; ``tests/engines/fast/test_fast_memory.py`` checks them against a measured
peak.

A run is refused when its estimate breaks any limit on the process, the
tightest named in the line: the memory available on the machine, the
process's RLIMIT_DATA and RLIMIT_AS (the latter counting the address space the
libraries reserve beside the resident set, :data:`ADDRESS_SPACE_BYTES`), and
its cgroup's memory limit.  An allocation that fails anyway, during the run, is
one line naming the estimate and the tightest limit (:func:`allocation_failures`).
"""

from __future__ import annotations

import resource
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from gupsim.base.errors import GupsimError, ResourceFault, clip

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
#: without adaptive routing), and with a DMA engine its six links' throttle queues (6 x 32 B).
FAST_NODE_BYTES = 3_200
#: Address space a run maps beyond its resident set, which RLIMIT_AS counts: the libraries' reservations
#: (glibc's arenas, LLVM, pandas) that are never touched.  Measured as VmPeak - VmHWM: 1.27 GB for a 4x4x4
#: SimPy run, 1.36 GB for a 4x4x4 fast run with its kernels loaded, 1.45 GB for a 32x32x16 ``routed`` one.
#: Under a tight RLIMIT_AS the libraries reserve less (a 4x4x4 fast run finished under 0.8 GB), but not
#: predictably (it failed under 1.4 and 1.6 GB, loading LLVM), so the measured figure is the one assumed.
ADDRESS_SPACE_BYTES = 1536 * 2**20
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
    M GB are available; use a smaller shape or fewer processes per node<hint>`` (or names the process's or
    its cgroup's limit, where that is tighter: :func:`tightest_limit`)."""
    need = estimate_bytes(num_ranks, per_rank_bytes, base_bytes)
    refuse_if_over(need, f"{what} ({num_ranks:,} processes{', ' + detail if detail else ''}) needs",
                   f"use a smaller shape or fewer processes per node{hint}", " by gupsim's estimate",
                   address_bytes=ADDRESS_SPACE_BYTES)
    return need


def refuse_if_over(need: int, subject: str, hint: str, estimated: str = "", address_bytes: int = 0) -> None:
    """Refuse, in one line (``<subject> about N GB, but only M GB are available; <hint>``), ``need`` bytes
    above the tightest limit on this process (:func:`tightest_limit`), or above :data:`MAX_ARRAY_BYTES`:
    NumPy would otherwise fail with a traceback, LLVM abort, or the process grow until the kernel kills it."""
    broken = tightest_limit(need, address_bytes)
    if broken is not None:
        raise GupsimError(f"{subject} about {gb(need)}{estimated}{broken}; {hint}")
    if need > MAX_ARRAY_BYTES:
        raise GupsimError(f"{subject} about {gb(need)}{estimated}, beyond any array NumPy can index; {hint}")


def gb(n: float) -> str:
    return f"{n / 2**30:,.1f} GB"


def tightest_limit(need: int, address_bytes: int = 0) -> str | None:
    """The words (``, but ...``) for the limit on this process that ``need`` resident bytes (with
    ``address_bytes`` more of address space beside them) would break most; None if they fit under every one
    (:func:`limits`)."""
    broken = [(allows - wanted, f"{space}, but {why}")
              for wanted, allows, space, why in limits(need, address_bytes) if wanted > allows]
    return min(broken)[1] if broken else None


def limits(need: int, address_bytes: int = 0) -> list[tuple[int, float, str, str]]:
    """Each limit on this process as (what ``need`` comes to under it, what it allows, the words for the
    former where it is not ``need``, the words for the limit).

    The limits: :data:`HEADROOM` of MemAvailable; RLIMIT_DATA (the heap and private mappings, which the
    resident estimate covers: a 4x4x4 fast run needs about 0.34 GB of it against its 0.5 GB estimate);
    RLIMIT_AS, which counts address space the libraries reserve and never touch (``address_bytes``); and the
    memory limit of the process's cgroup (v2 ``memory.max``, v1 ``memory.limit_in_bytes``, its own and its
    ancestors'), which the process shares with the rest of its group."""
    out: list[tuple[int, float, str, str]] = []
    have = available_bytes()
    if have is not None:
        out.append((need, HEADROOM * have, "", f"only {gb(have)} are available"))
    for name, which, extra in (("RLIMIT_DATA", resource.RLIMIT_DATA, 0), ("RLIMIT_AS", resource.RLIMIT_AS, address_bytes)):
        soft = resource.getrlimit(which)[0]
        if soft != resource.RLIM_INFINITY:
            space = f" ({gb(need + extra)} of address space with what the libraries reserve)" if extra else ""
            out.append((need + extra, soft, space, f"this process's limit {name} is {gb(soft)}"))
    cgroup = cgroup_limit()
    if cgroup is not None:
        out.append((need, HEADROOM * cgroup[1], "", f"this process's cgroup limits memory to {gb(cgroup[1])} "
                                                    f"({cgroup[0]})"))
    return out


@contextmanager
def allocation_failures(subject: str, estimate: Callable[[], int]) -> Iterator[None]:
    """An allocation that fails during a run (NumPy's MemoryError; LLVM's library that cannot be mapped under
    a tight RLIMIT_AS, an OSError without an errno) as one :class:`ResourceFault` line naming ``estimate()``
    and the tightest limit on the process.  The estimate is computed after the failed frames are released."""
    try:
        yield
    except MemoryError:
        failed = "an allocation failed"
    except OSError as exc:
        if exc.errno is not None or ".so" not in str(exc):
            raise
        failed = f"a library could not be loaded ({clip(str(exc).split(':')[0])})"
    else:
        return
    need = estimate()
    allowed = limits(need, ADDRESS_SPACE_BYTES)
    _, _, space, why = min(allowed, key=lambda b: b[1] - b[0]) if allowed else (0, 0, "", "gupsim sees no limit")
    raise ResourceFault(f"{subject} ran out of memory: {failed}; it needs about {gb(need)} by gupsim's estimate"
                        f"{space}, and {why}; use a smaller shape, or raise the limit")


def cgroup_limit(proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup") -> tuple[str, int] | None:
    """The tightest memory limit of this process's cgroup and its ancestors: (the file that sets it, bytes).

    cgroup v2 lists the process's group as ``0::/path`` and limits it in ``<root>/path/memory.max``
    (``max`` for none); v1 lists ``N:memory:/path``, limited in ``<root>/memory/path/memory.limit_in_bytes``
    (a number near 2^63 for none).  A group's limit binds its children, so every ancestor is read."""
    try:
        lines = Path(proc_cgroup).read_text().splitlines()
    except OSError:
        return None
    found: list[tuple[int, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            found += _limits_up(Path(root), path, "memory.max")
        elif "memory" in controllers.split(","):
            found += _limits_up(Path(root) / "memory", path, "memory.limit_in_bytes")
    return min(((str(f), n) for n, f in found), key=lambda x: x[1], default=None)


def _limits_up(mount: Path, path: str, name: str) -> list[tuple[int, str]]:
    """``name``'s value in the group at ``path`` under ``mount`` and in each of its ancestors, where it limits."""
    group = mount / path.strip("/")
    out = []
    for folder in [group, *group.parents]:
        if not folder.is_relative_to(mount):
            break
        try:
            text = (folder / name).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < NO_CGROUP_LIMIT:
            out.append((int(text), str(folder / name)))
    return out


#: cgroup v1 writes "no limit" as the largest page-aligned 64-bit number; any value this large is none.
NO_CGROUP_LIMIT = 2**62


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
