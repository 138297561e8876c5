"""The cores this process may use: its CPU affinity, capped by its cgroup's CPU quota.

``os.cpu_count()`` counts the machine's cores, not this process's: a container limited to two CPUs of a 64-core
host, or a job pinned to four cores by its scheduler, would start 64 threads that share two or four cores.
Python 3.13 has ``os.process_cpu_count()`` for the affinity half; the quota (cgroup v2's ``cpu.max``, v1's
``cpu.cfs_quota_us``) it leaves out, as ``nproc`` does.  ``GUPSIM_THREADS`` overrides the default
(:func:`default_threads`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from gupsim.base.errors import GupsimError

#: Where cgroup v2 and v1 keep a process's CPU quota (for the process's own cgroup, as seen from inside it).
CGROUP_V2_MAX = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1_QUOTA = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
CGROUP_V1_PERIOD = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def usable_cores() -> int:
    """The cores this process may run on at once (at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    quota = cgroup_quota()
    return max(1, min(cores, math.ceil(quota)) if quota is not None else cores)


#: The environment variable that sets the threads a run uses unless told (as ``OMP_NUM_THREADS`` does for OpenMP):
#: a test suite on several workers, or a batch job sharing its cores, sets it to 1.
THREADS_VARIABLE = "GUPSIM_THREADS"


def default_threads() -> int:
    """The threads a run may use unless told: ``GUPSIM_THREADS`` if set, else :func:`usable_cores`.  A value that
    is not a positive integer is refused in one line."""
    value = os.environ.get(THREADS_VARIABLE)
    if value is None or not value.strip():
        return usable_cores()
    try:
        threads = int(value)
    except ValueError:
        threads = 0
    if threads < 1:
        raise GupsimError(f"{THREADS_VARIABLE}={value!r}: must be a whole number of threads, 1 or more")
    return threads


def cgroup_quota(v2: Path = CGROUP_V2_MAX, v1_quota: Path = CGROUP_V1_QUOTA,
                 v1_period: Path = CGROUP_V1_PERIOD) -> float | None:
    """The cgroup's CPU quota in cores (e.g. 1.5), or None when there is none or it cannot be read."""
    try:
        quota, period = v2.read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota, period = v1_quota.read_text().strip(), v1_period.read_text().strip()
        except OSError:
            return None
    if quota in ("max", "-1"):
        return None
    try:
        share = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None
    return share if share > 0 else None
