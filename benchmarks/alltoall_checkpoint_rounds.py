"""What an unfinished ``alltoall`` run has measured so far: its full rounds, read from its fast-engine checkpoint.

A record's ``alg_full_round_gups`` is :func:`gupsim.algorithms.alltoall.round_shares` over the rounds every
process finished without running out of updates.  The checkpoint holds the same round tables the record is
made from (``round_times``, ``round_counts``), so once a round is finished by every process its numbers are
final: the finished run's record gives the same rate over the same rounds.  This reads them, to report a row
whose run is hours long (the T3E row of ``gupsim reproduce crayx1-hpcc``) before it ends, and says how far it
has got.

    python benchmarks/alltoall_checkpoint_rounds.py CHECKPOINT.npz PROCESSES

The file is read as plain arrays (``allow_pickle=False``), and only if its content digest is whole
(:func:`gupsim.engines.fast.driver.content_digest`, as a resumed run checks it).
"""

from __future__ import annotations

import sys
import zipfile

import numpy as np

from gupsim.algorithms.alltoall import round_shares
from gupsim.algorithms.base import algorithm_class
from gupsim.engines.fast.alltoall import COUNTER_NAMES, KERNEL_NAME, _round_times
from gupsim.engines.fast.driver import content_digest
from gupsim.studies.runpool import code_digest


def read(path: str, processes: int) -> tuple[dict, list, dict]:
    """The checkpoint's arrays, its finished rounds (:class:`gupsim.algorithms.alltoall.RoundTimes`) and their
    :func:`~gupsim.algorithms.alltoall.round_shares`; ValueError in one line if it is not a whole checkpoint."""
    try:
        with np.load(path, allow_pickle=False) as z:
            saved = {name: z[name] for name in z.files}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: not a readable checkpoint ({exc})") from None
    digest = str(saved.pop("_digest", ""))
    if digest != content_digest(saved) or "round_times" not in saved:
        raise ValueError(f"{path}: not a whole alltoall checkpoint (its content digest does not match)")
    rounds = _round_times(saved, algorithm_class(KERNEL_NAME))
    return saved, rounds, round_shares(rounds, processes)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: alltoall_checkpoint_rounds.py CHECKPOINT.npz PROCESSES", file=sys.stderr)
        return 2
    path, processes = argv[0], int(argv[1])
    try:
        saved, rounds, shares = read(path, processes)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    key = str(saved["_key"])
    same_code = key.split("-")[0] == code_digest()
    counters = dict(zip(COUNTER_NAMES, (int(v) for v in saved["alg_counters"][:len(COUNTER_NAMES)])))
    print(f"{path}: key {key} ({'this' if same_code else 'another'} version of the model code); simulated "
          f"{float(saved['_now']):.6f} s, {float(saved['_wall_s']):,.0f} s of wall time")
    print(f"  {counters['data_messages']:,} blocks and {counters['packets']:,} packets sent; rounds finished by "
          f"some process: {len(rounds)}, by all {processes:,}: "
          f"{sum(1 for r in rounds if r.processes == processes)}")
    for number, r in enumerate(rounds, 1):
        print(f"  round {number}: {r.processes:,} processes finished it, {r.updates:,} updates"
              f"{', some ran out' if r.done else ''}")
    if shares["full_rounds"]:
        print(f"  full rounds {shares['full_rounds']:.0f}: {shares['full_round_gups']:.4f} GUPS "
              f"[{shares['full_round_gups_low']:.4f}, {shares['full_round_gups_high']:.4f}] (no interval under two), "
              f"round {shares['round_s']:.4f} s; shares fill {shares['share_fill']:.3f}, barrier "
              f"{shares['share_barrier']:.3f}, exchange {shares['share_exchange']:.3f}, apply "
              f"{shares['share_apply']:.3f}; fill cv {shares['fill_cv']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
