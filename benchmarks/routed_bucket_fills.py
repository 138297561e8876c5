"""What a long ``routed`` run's buckets hold in steady state: the measurement behind the warm start
(issue 35; :mod:`gupsim.algorithms.routed_warm`, docs/performance-log.md).

Runs ``routed`` on the fast engine and samples every process's bucket fill levels between batches of
``--batch`` events, from the time 40% of the updates are applied to 80% (past the fill, before the drain).
Per dimension it prints the mean fill as a fraction of the capacity, the histogram of fills in tenths of the
capacity (a uniform spread is 10% each), and two measures of synchronisation: the spread over time of the
machine-wide mean fill (a synchronised machine's mean swings with its buckets; independent buckets' mean
barely moves), and the correlation between the fills of one process's buckets of one dimension.

    nice -n 10 .venv/bin/python benchmarks/routed_bucket_fills.py --shape 4x4x2 --updates 16384
"""

from __future__ import annotations

import argparse

import numpy as np

from gupsim.config.loading import load_machine
from gupsim.engines.fast import driver
from gupsim.engines.fast.engine import FastSimulation
from gupsim.engines.run import make_run_config


def sample(shape: str, updates: int, batch: int, warm: bool = False) -> tuple[list[np.ndarray], FastSimulation]:
    fields = {"warm_start": True} if warm else {}
    run = make_run_config(machine=load_machine("bgl"), shape=shape, algorithm="routed", updates_per_process=updates,
                          engine="fast", **fields)
    sim = FastSimulation(run)
    a = sim._arrays() | sim._kernel_arrays()
    samples: list[np.ndarray] = []

    def progress(applied: int, total: int) -> None:
        if 0.4 * total <= applied <= 0.8 * total:
            samples.append(a["bucket_lengths"].copy())

    driver.drive(sim.kernel, a, None, batch, sim.total_updates, progress)
    return samples, sim


def report(samples: list[np.ndarray], sim: FastSimulation) -> None:
    alg = sim.algorithm
    lengths, cap, R = alg.lengths, alg.capacity, sim.num_ranks
    fills = np.stack(samples).reshape(len(samples), R, sum(lengths)) / cap  # (time, rank, slot)
    print(f"{sim.run.shape}: {R} processes, capacity {cap}, {len(samples)} samples; held per process "
          f"{fills.sum(axis=2).mean() * cap:.0f} of 1024 (sd over processes and time "
          f"{(fills.sum(axis=2) * cap).std():.0f})")
    start = 0
    for d, n in enumerate(lengths):
        part = fills[:, :, start:start + n]
        start += n
        own = np.arange(R) // np.array([1, lengths[0], lengths[0] * lengths[1]][d]) % n if d < 3 else np.arange(R) % n
        mask = np.ones((R, n), dtype=bool)
        mask[np.arange(R), own] = False  # a process's own coordinate is never a bucket
        vals = part[:, mask]
        hist = np.histogram(vals, bins=10, range=(0, 1))[0] / vals.size
        series = vals.mean(axis=1)
        per_rank = part[:, mask].reshape(len(samples), R, n - 1)
        corr = np.nanmean([np.corrcoef(per_rank[:, r, :].T)[np.triu_indices(n - 1, 1)].mean()
                           for r in range(0, R, max(1, R // 16))]) if n > 2 else float("nan")
        print(f"  dim {d} ({n}): mean fill {vals.mean():.2f} of capacity, sd {vals.std():.2f} (uniform: 0.50, 0.29);"
              f" tenths {' '.join(f'{h:.2f}' for h in hist)}; machine mean over time sd {series.std():.3f}; "
              f"within-process bucket correlation {corr:+.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4x4x2")
    parser.add_argument("--updates", type=int, default=16384)
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--warm-start", action="store_true")
    args = parser.parse_args()
    report(*sample(args.shape, args.updates, args.batch, args.warm_start))


if __name__ == "__main__":
    main()
