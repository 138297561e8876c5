"""Runs that stop when precise (``--precision``): both engines stop at the same simulated instant with the same
record, the rule stops a less noisy configuration sooner, and a run made batch by batch stops as one made whole."""

from __future__ import annotations

import numpy as np
import pytest

from gupsim.algorithms.base import algorithm_class
from gupsim.config import load_machine
from gupsim.engines.fast import FastSimulation
from gupsim.engines.run import make_record, make_run_config, simulate
from gupsim.model.output_analysis import CHECK_EVERY, applied_marks, first_check

from .conftest import VOLATILE, assert_records_agree


def _run(algorithm, shape, updates, precision, engine="fast", seed=0, warm_start=False, **options):
    return simulate(make_run_config(machine=load_machine("bgl", {}), shape=shape, algorithm=algorithm,
                                    updates_per_process=updates, seed=seed, engine=engine, precision=precision,
                                    warm_start=warm_start, algorithm_options=options))


@pytest.mark.parametrize("algorithm, shape, updates, precision, warm", [
    ("one-packet", "2x2x2", 3000, 0.02, False),  # stops at the first evaluation, before the window opens
    ("routed", "4x2x2", 8000, 0.01, False),  # stops between the window's two marks
    ("routed", "4x2x2", 8000, 0.01, True),  # from the warm start (gupsim.algorithms.routed_warm)
    ("baseline", "2x2x2", 8000, 0.05, False),  # from 2,048 updates a process on (it holds updates in buckets)
])
def test_engines_stop_at_the_same_instant_with_the_same_record(algorithm, shape, updates, precision, warm):
    fast_sim, fast = _run(algorithm, shape, updates, precision, warm_start=warm)
    ref_sim, ref = _run(algorithm, shape, updates, precision, engine="simpy", warm_start=warm)
    assert fast["precision_reached"] and fast["precision_target"] == precision
    assert fast["updates_applied_per_process"] < updates
    assert_records_agree(fast, ref)  # assert_engines_agree also wants every mark crossed and no packet in flight
    fo, ro = fast_sim.outcome(), ref_sim.outcome()
    for column in ("bytes", "busy_s", "blocked_s"):
        np.testing.assert_array_equal(fo.links[column], ro.links[column])
    np.testing.assert_array_equal(np.array(fo.applied_times).view(np.int64), np.array(ro.applied_times).view(np.int64))
    # the run ended with the instant the rule held at: at a mark count it is evaluated at, and no event later
    crossed = len(fo.applied_times)
    assert crossed >= first_check(updates, len(applied_marks(fo.total_updates)), algorithm_class(algorithm).holds_pending)
    check = crossed - crossed % CHECK_EVERY
    assert fast["sim_time_s"] == fo.applied_times[check - 1]
    # the rate reported is the interval's, and it meets the target
    assert fast["gups"] == fast["gups_steady"]
    assert (fast["gups_ci_high"] - fast["gups_ci_low"]) / 2 <= precision * fast["gups"]


def test_an_unreached_precision_runs_to_the_cap_as_a_fixed_length_run():
    capped = _run("routed", "4x2x2", 2000, 0.0001)[1]
    fixed = _run("routed", "4x2x2", 2000, None)[1]
    assert not capped["precision_reached"] and capped["updates_applied_per_process"] == 2000
    assert capped["precision_target"] == 0.0001 and fixed["precision_target"] is None
    assert {k: v for k, v in capped.items() if k not in VOLATILE | {"precision_target"}} == \
        {k: v for k, v in fixed.items() if k not in VOLATILE | {"precision_target"}}


def test_the_rule_stops_a_less_noisy_configuration_sooner():
    """routed sends a bucket once full: 8-update buckets keep the updates applied flowing more evenly than
    the default's (the most 4+2+2 buckets may hold under 1,024 pending updates), so 0.4% comes sooner."""
    for seed in range(3):
        small = _run("routed", "4x2x2", 40000, 0.004, seed=seed, bucket_capacity=8)[1]
        large = _run("routed", "4x2x2", 40000, 0.004, seed=seed)[1]
        assert small["precision_reached"] and large["precision_reached"]
        assert small["updates_applied_per_process"] < large["updates_applied_per_process"], seed


def test_a_run_made_batch_by_batch_stops_as_one_made_whole():
    run = make_run_config(machine=load_machine("bgl", {}), shape="4x2x2", algorithm="routed",
                          updates_per_process=8000, precision=0.01, engine="fast")
    whole = FastSimulation(run)
    whole.execute()
    pieces = FastSimulation(run)
    pieces.execute(batch_events=5000)
    a, b = make_record(whole.outcome(), 0.0), make_record(pieces.outcome(), 0.0)
    assert a["precision_reached"]
    assert {k: v for k, v in a.items() if k not in VOLATILE} == {k: v for k, v in b.items() if k not in VOLATILE}
    assert len(whole.outcome().applied_times) < len(applied_marks(whole.outcome().total_updates))


@pytest.mark.parametrize("algorithm, shape, cap, warm", [("one-packet", "2x2x2", 20000, False),
                                                       ("routed", "4x2x2", 40000, False)])
def test_runs_stopped_when_precise_cover_the_long_run_rate(algorithm, shape, cap, warm):
    """A run that stops once its interval is narrow enough stops where the interval happens to be narrow, so
    its coverage is not the fixed-length one's by construction.  Of 20 seeds stopped at 1%, at least 17 cover
    the rate of one run 20 times the cap long (seed 1: its stretch of every stream begins where theirs end).
    Warm-started routed runs (gupsim.algorithms.routed_warm) cover it in 16 of 20, biased high, which is why
    the warm start stays an option (docs/performance-log.md); ``warm`` is kept to measure it again."""
    truth = _run(algorithm, shape, 20 * cap, None, seed=1)[1]
    assert truth["precision"] == "ok" and truth["gups_ci_high"] - truth["gups_ci_low"] < 0.004 * truth["gups_steady"]
    cover = 0
    for seed in range(20):
        rec = _run(algorithm, shape, cap, 0.01, seed=seed, warm_start=warm)[1]
        assert rec["precision_reached"] and rec["updates_applied_per_process"] < cap
        cover += rec["gups_ci_low"] <= truth["gups_steady"] <= rec["gups_ci_high"]
    assert cover >= 17, cover
