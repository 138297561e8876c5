"""``routed``'s warm start (gupsim.algorithms.routed_warm): the pre-fill is a prefix of every process's own
stream, each update sits in a bucket on its own dimension-ordered route, nothing is lost or applied twice,
the state is a pure function of the run, and algorithms without a warm start refuse it in one line."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from gupsim.algorithms.routed_warm import PHI, rank_weights, targets
from gupsim.base.errors import GupsimError
from gupsim.config import load_machine
from gupsim.engines.fast import FastSimulation
from gupsim.engines.run import make_run_config, simulate
from gupsim.model import hpcc
from gupsim.model.run_config import MAX_PENDING_UPDATES


def _config(shape="4x4x2", updates=600, seed=0, ppn=1, **kw):
    machine = load_machine("bgl", {"cpu.processes_per_node": ppn})
    return make_run_config(machine=machine, shape=shape, algorithm="routed", updates_per_process=updates, seed=seed,
                           warm_start=True, **kw)


def _warm(config):
    sim = FastSimulation(config)
    sim._registers()
    return sim, sim.warm


@pytest.mark.parametrize("shape, ppn", [("4x4x2", 1), ("4x2x2", 2), ("3x2x2", 1)])
def test_the_pre_fill_is_each_process_s_first_updates_each_on_its_route(shape, ppn):
    sim, warm = _warm(_config(shape, ppn=ppn))
    alg, layout = sim.algorithm, sim.layout
    lengths, cap, R = alg.lengths, alg.capacity, sim.num_ranks
    nslots = sum(lengths)
    starts = sim.stream_starts()
    expected = Counter()
    for r in range(R):  # every process's first `taken` updates, and its register after them
        values = hpcc.stream(int(starts[r]), int(warm.taken[r]))
        expected.update(values.tolist())
        last = int(values[-1]) if len(values) else hpcc.starts(int(starts[r]))
        assert int(warm.registers[r]) == last
    held = Counter(warm.local_values.tolist())
    coords = np.array([alg._rank_coords(r) for r in range(R)])
    offsets = np.cumsum([0] + lengths[:-1])
    weights = rank_weights(lengths)
    for row in np.flatnonzero(warm.bucket_lengths):
        holder, slot = divmod(int(row), nslots)
        d = int(np.searchsorted(offsets, slot, side="right") - 1)
        j = slot - offsets[d]
        for value in warm.bucket_values[row, :warm.bucket_lengths[row]].tolist():
            held[value] += 1
            o = coords[layout.owner_of(value)]
            # held where the dimension-ordered route passes: the owner's coordinates below d, the holder's from d
            assert o[d] == j != coords[holder][d]
            assert (coords[holder][:d] == o[:d]).all()
        assert int(coords[holder] @ weights) == holder
    assert held == expected  # nothing lost, nothing twice
    assert (warm.bucket_lengths < cap).all()  # no bucket full: at most one full bucket per dimension holds
    assert (warm.bucket_lengths.reshape(R, nslots).sum(axis=1) <= MAX_PENDING_UPDATES).all()
    assert (warm.taken <= sim.run.updates_per_process).all() and warm.taken.sum() > 0
    for r in range(R):
        assert all(layout.owner_of(int(v)) == r for v in warm.locals_of(r))


def test_the_targets_spread_evenly_below_capacity_and_move_with_the_seed():
    t0, t1 = targets(10_000, 42, 0), targets(10_000, 42, 1)
    assert t0.min() == 0 and t0.max() == 41
    counts = np.bincount(t0, minlength=42)
    assert counts.max() - counts.min() <= 0.05 * counts.mean()  # a Weyl sequence: even to a few units
    assert (t0 != t1).mean() > 0.9
    assert PHI == pytest.approx((5 ** 0.5 - 1) / 2)


def test_the_warm_state_is_a_pure_function_of_the_run():
    a, b, c = (_warm(_config(seed=s))[1] for s in (2, 2, 3))
    for field in ("taken", "registers", "bucket_values", "bucket_lengths", "local_counts", "local_values"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.bucket_lengths, c.bucket_lengths)


@pytest.mark.parametrize("engine", ["simpy", "fast"])
def test_a_warm_run_applies_every_update_once_and_verifies(engine):
    verify = engine == "simpy"  # the fast engine keeps no table
    sim, rec = simulate(_config("4x2x2", 800, ppn=2, engine=engine, verify=verify))
    assert rec["warm_start"] is True
    assert rec["updates_generated"] == rec["updates_applied"] == sim.num_ranks * 800
    if verify:
        assert sim.verify().errors == 0


def test_a_warm_start_changes_the_run():
    cold = simulate(_config().model_copy(update={"warm_start": False}))[1]
    warm = simulate(_config())[1]
    assert cold["warm_start"] is False and cold["sim_time_s"] != warm["sim_time_s"]


@pytest.mark.parametrize("algorithm", ["baseline", "one-packet", "routed-split"])
def test_an_algorithm_without_a_warm_start_refuses_it_in_one_line(bgl, algorithm):
    cfg = make_run_config(machine=bgl, shape="2x2x2", algorithm=algorithm, updates_per_process=64, warm_start=True)
    with pytest.raises(GupsimError, match=f"algorithm {algorithm} has no warm start .*: routed$"):
        simulate(cfg)


def test_warm_start_on_the_command_line(capsys):
    from gupsim.app.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "--shape", "2x2x1", "--algorithm", "baseline", "--updates", "64", "--warm-start"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no warm start" in err[0]
    main(["run", "--shape", "2x2x1", "--algorithm", "routed", "--updates", "64", "--warm-start", "--json",
          "--no-progress"])
    assert '"warm_start": true' in capsys.readouterr().out
