"""The fast engine's memory estimate (gupsim.base.memory, gupsim.engines.fast.KERNELS) against a measured peak.

The estimate must be conservative: a run it accepts should fit.  Each case
runs in a fresh interpreter and reads its own ``VmHWM``
(:func:`gupsim.engines.run.peak_rss_mb`; ``ru_maxrss`` would carry pytest's own
peak across ``exec``, which is how this test failed in CI); the fixed
part (interpreter, libraries, loaded kernels) is measured before the run and
compared with :data:`FAST_BASE_BYTES`, and what the run adds on top of it with
the per-node, per-process and margin parts of the estimate.  Not a timing test.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gupsim.base.memory import FAST_BASE_BYTES

CHILD = """
import json, resource
from gupsim.config import load_machine
from gupsim.engines.run import compile_all
from gupsim.engines.fast import simulate_fast
from gupsim.engines.run import make_run_config, peak_rss_mb
compile_all()
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()
before = rss()
run = make_run_config(machine=load_machine({machine!r}, {sets!r}), shape={shape!r}, algorithm={algorithm!r},
                      updates_per_process={updates}, engine="fast")
sim = simulate_fast(run)
print(json.dumps({{"before": before, "peak": peak_rss_mb() * 2**20,
                  "estimate": sim.memory_estimate_bytes}}))
"""


@pytest.mark.parametrize("machine, algorithm, shape, updates, sets", [
    ("bgl", "routed", "16x16x16", 64, {}),  # the largest per-process figure: ~77 MB added against 192 MB
    ("bgl", "one-packet", "8x8x8", 512, {"cpu.processes_per_node": 2}),  # virtual-node mode, buffers filled
    # BG/P in virtual-node mode (four processes per node, the DMA engines' rows) at two sizes
    ("bgp", "routed", "8x8x8", 1024, {"cpu.processes_per_node": 4}),
    pytest.param("bgp", "routed", "16x16x8", 256, {"cpu.processes_per_node": 4}, marks=pytest.mark.slow),
    # one-packet keeps hundreds of one-chunk packets a process past the DMA, polling (about 35 KB a process)
    ("bgp", "one-packet", "8x8x4", 256, {"cpu.processes_per_node": 4}),
])
def test_the_memory_estimate_covers_a_measured_peak(machine, algorithm, shape, updates, sets):
    from gupsim.engines.run import compile_all

    compile_all()  # here, so that the child loads the kernels from the cache instead of compiling them
    code = CHILD.format(machine=machine, algorithm=algorithm, shape=shape, updates=updates, sets=sets)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    m = json.loads(out.stdout.strip().splitlines()[-1])
    assert m["before"] < FAST_BASE_BYTES, "the fixed part alone exceeds FAST_BASE_BYTES"
    # what the run itself added (arrays, grown tables, temporaries) is within the sized part
    assert m["peak"] - m["before"] <= m["estimate"] - FAST_BASE_BYTES, m
    assert m["peak"] <= m["estimate"], m


def test_a_child_of_a_large_parent_reports_its_own_peak():
    """``ru_maxrss`` would report the parent's 1 GB here; the child itself holds 185-240 MB (the import of the
    engine: NumPy, pandas, Numba and LLVM, whose size depends on the wheels installed)."""
    grandchild = "from gupsim.engines.run import peak_rss_mb; print(peak_rss_mb())"
    parent = (f"import subprocess, sys\nx = bytearray(1024 * 2**20)\nx[::4096] = b'\\1' * len(x[::4096])\n"
              f"print(subprocess.run([sys.executable, '-c', {grandchild!r}], capture_output=True, text=True,"
              f" check=True).stdout)")
    out = subprocess.run([sys.executable, "-c", parent], check=True, capture_output=True, text=True)
    assert float(out.stdout.split()[-1]) < 600.0, out.stdout
