"""The most a partitioned fast engine could gain on this box: two kernels that share nothing, on two threads.

A partitioned engine (docs/design/partitioned-engine.md) runs one part per thread and synchronises them at
every window.  Its speedup is at most what two *independent* halves of the machine reach when they run at
once: no synchronisation, no events crossing parts, only the cores, caches and memory bandwidth they
share (and, on a shared VM, the other users' load).  This script measures that ceiling: two fast-engine
runs of half the machine each (``routed`` on half of the shape, cut along its longest dimension), one after
the other on one thread and then at once on two threads (the kernels' loops release the GIL:
``nogil=True``), alternated ``--repeats`` times so that the VM's drift falls on both alike.  It reports the
wall times, their ratio per pair, and the peak RSS of the process.

Run::

    nice .venv/bin/python benchmarks/partition_ceiling.py --shape 16x16x16 --updates 256 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gupsim.base.memory import peak_rss_mb
from gupsim.config.loading import load_machine
from gupsim.engines.fast.engine import FastSimulation
from gupsim.model.run_config import RunConfig
from gupsim.topology.base import parse_shape


def half_shape(shape: str) -> str:
    """``shape`` with its longest dimension halved: one of two slabs."""
    dims = list(parse_shape(shape))
    axis = int(np.argmax(dims))
    dims[axis] //= 2
    return "x".join(str(d) for d in dims)


def one_run(run: RunConfig) -> float:
    """Build and run ``run`` on the fast engine; its simulated time."""
    sim = FastSimulation(run)
    sim.execute()
    return sim.outcome().sim_time_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine", default="bgl")
    ap.add_argument("--shape", default="16x16x16")
    ap.add_argument("--updates", type=int, default=256)
    ap.add_argument("--ppn", type=int, default=None, help="processes per node (4: BG/P virtual-node mode)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    overrides = {} if args.ppn is None else {"cpu.processes_per_node": args.ppn}
    machine = load_machine(args.machine, overrides)
    half = half_shape(args.shape)
    runs = [RunConfig(machine=machine, shape=half, algorithm="routed", updates_per_process=args.updates, seed=seed,
                      engine="fast") for seed in (0, 1)]
    one_run(runs[0].model_copy(update={"updates_per_process": 8}))  # loads the kernels
    pairs = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            serial = [one_run(r) for r in runs]
            one_thread, one_cpu = time.perf_counter() - t0, time.process_time() - c0
            t0, c0 = time.perf_counter(), time.process_time()
            together = list(pool.map(one_run, runs))
            two_threads, two_cpu = time.perf_counter() - t0, time.process_time() - c0
            assert together == serial, "a run is a pure function of (config, seed)"
            # cores_used: CPU over wall, what the box gave this process (2.0 on two idle cores)
            pairs.append({"one_thread_s": one_thread, "two_threads_s": two_threads, "ratio": one_thread / two_threads,
                          "cores_used_one": one_cpu / one_thread, "cores_used_two": two_cpu / two_threads})
    ratios = [p["ratio"] for p in pairs]
    print(json.dumps({"shape": args.shape, "half": half, "updates": args.updates, "pairs": pairs,
                      "median_ratio": float(np.median(ratios)), "peak_rss_mb": peak_rss_mb()}, indent=1))


if __name__ == "__main__":
    main()
