"""``alltoall``, HPCC 0.5b's bucket sort and MPI_Alltoall: conservation, HPCC's verification, determinism, the
collective's messages, bad options, and its rate against seed 000's bounds."""

from __future__ import annotations

import math

import pytest

from gupsim.base.errors import GupsimError
from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, simulate
from gupsim.model.bounds import bounds

from tests.conftest import call_cli

VOLATILE = ("wall_s", "events_per_s", "peak_rss_mb", "config")


def _run(shape="4x4x2", updates=512, machine="bgl", verify=False, **options):
    """A run of the reference (SimPy) model, whose objects these tests read; the fast kernel's records equal its
    records (tests/engines/fast/test_fast_alltoall.py)."""
    return simulate(make_run_config(machine=machine, shape=shape, algorithm="alltoall", updates_per_process=updates,
                                    log2_table_size=20, verify=verify, algorithm_options=options, engine="simpy"))


@pytest.mark.parametrize("shape,options", [
    ("4x4x2", {"bucket_size": 16}),
    ("3x2x1", {"bucket_size": 5, "exchange": "counts"}),  # 6 processes: not a power of two
    ("4x2x1", {"bucket_size": 1, "schedule": "linear"}),  # a round per update at most
    ("2x1x1", {}),  # no bucket fills: one round, every block marked done
])
def test_every_update_is_applied_once_at_its_owner(shape, options):
    """apply() refuses an update at a rank that does not own it; XOR twice cancels, so HPCC's check
    finds an update applied twice as surely as one never applied."""
    sim, rec = _run(shape, 300, verify=True, **options)
    assert rec["updates_generated"] == rec["updates_applied"] == sim.total_updates
    assert sim.verify().errors == 0


def test_verify_passes_on_the_command_line(capsys):
    code, out, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--algorithm", "alltoall", "--option", "bucket_size=8",
                            "--updates", "400", "--log2-table-size", "16", "--verify", "--all-rates")
    assert code == 0 and "HPCC verification" in out and "passed" in out
    assert "rate over the whole run, HPCC's metric" in out


def test_a_run_is_a_function_of_its_config_and_seed():
    a, b = (_run("4x2x1", 300, bucket_size=8)[1] for _ in range(2))
    same = [repr({k: v for k, v in r.items() if k not in VOLATILE}) for r in (a, b)]  # repr: nan == nan
    assert same[0] == same[1]
    c = simulate(make_run_config(machine="bgl", shape="4x2x1", algorithm="alltoall", updates_per_process=300,
                                 engine="simpy", log2_table_size=20, seed=1, algorithm_options={"bucket_size": 8}))[1]
    assert c["sim_time_s"] != a["sim_time_s"]


@pytest.mark.parametrize("exchange", ["fixed", "counts"])
def test_each_round_is_a_barrier_and_one_alltoall_of_the_right_blocks(exchange):
    """P - 1 blocks per process per round plus ceil(log2 P) barrier messages; a fixed block is 2 + bucket_size
    words whatever it holds, cut into the machine's packets."""
    sim, rec = _run("4x2x1", 300, bucket_size=8, exchange=exchange)
    p, rounds = sim.num_ranks, rec["alg_rounds"]
    assert rounds >= 2
    barrier = math.ceil(math.log2(p))
    assert rec["alg_messages_sent"] == rounds * p * (p - 1 + barrier)
    # the packet limit the algorithm itself reads, on either engine (the fast one runs this on its kernel)
    per_block = math.ceil(((2 + 8) * 8 + sim.machine.mpi.header_bytes) / sim.algorithm.sim.net.max_data_bytes)
    if exchange == "fixed":
        assert rec["alg_packets_sent"] == rounds * p * ((p - 1) * per_block + barrier)
        assert rec["alg_slot_fill"] < 1
    else:
        assert rec["alg_slot_fill"] == 1


def test_bad_options_and_engines_are_one_line():
    for options, match in [({"bucket_size": 0}, "option bucket_size: Input should be greater than or equal to 1"),
                           ({"exchange": "vector"}, "option exchange: Input should be 'fixed' or 'counts'"),
                           ({"schedul": "linear"}, "unknown option 'schedul' \\(valid: bucket_size, exchange, schedule\\)")]:
        with pytest.raises(GupsimError, match=match):
            _run(**options)
    with pytest.raises(GupsimError, match="--engine fast: machine hypatia-ib is not a torus machine"):
        simulate(make_run_config(machine="hypatia-ib", shape="8x1x1", algorithm="alltoall", updates_per_process=64,
                                 engine="fast"))
    with pytest.raises(GupsimError, match="algorithm alltoall does not run on a data-vortex network"):
        simulate(make_run_config(machine="hypatia-dv", shape="4x1x1", algorithm="alltoall", updates_per_process=64))


@pytest.mark.parametrize("machine,shape", [("hypatia-ib", "8x1x1"), ("bgp", "2x2x2")])
def test_runs_over_infiniband_and_bgps_dma_too(machine, shape):
    sim, rec = _run(shape, 256, machine=machine, verify=True, bucket_size=16)
    assert sim.verify().errors == 0 and rec["alg_rounds"] >= 2


def test_its_rate_stays_under_seed_000s_bounds_on_bgl():
    """The record's rate is the whole run's: a window of applied fractions would fall inside a round's burst
    of applies and report far more than either bound."""
    b = bounds(load_machine("bgl"), "4x4x2")
    _, rec = _run("4x4x2", 2048, bucket_size=64)
    assert rec["alg_rounds"] >= 4
    assert 0 < rec["gups"] < min(b.cpu_bound_gups, b.network_bound_gups)
    assert rec["gups"] == pytest.approx(rec["gups_total"])


def test_a_run_whose_rounds_cannot_fit_is_refused_in_one_line():
    """2,048 processes with full 2,048-slot buckets would hold 4.2 million updates each per round, twice, on the
    SimPy engine (the fast kernel holds their counts only)."""
    run = make_run_config(machine="bgl", shape="16x16x8", algorithm="alltoall", updates_per_process=2**23,
                          log2_table_size=34, engine="simpy")
    with pytest.raises(GupsimError, match=r"^alltoall on 16x16x8 \(2,048 processes, up to 4,194,304 updates held "
                                          r"per process per round\) needs about [\d.]+ (GB|TB)[^\n]*$"):
        simulate(run)


# ---------------------------------------------------------------- where a round's time goes (issue 46, item 2)

def test_a_full_rounds_fill_and_apply_are_the_cost_models_cycles_for_its_updates():
    """The fill is generate + insert per update a process generated, the apply one update per update it received;
    in a full round every bucket sent is received in it, so both follow from the round's generated updates."""
    sim, rec = _run("4x2x1", 300, bucket_size=8)
    alg, cost, cycle_s = sim.algorithm, sim.cost, 1 / sim.machine.cpu.clock_hz
    full = [r for r in alg.round_times if not r.done]
    assert len(full) == rec["alg_full_rounds"] >= 2
    for r in full:
        assert r.processes == sim.num_ranks and r.updates > 0
        assert r.fill == pytest.approx(r.updates * (cost.generate + cost.bucket_insert) * cycle_s)
        assert r.apply == pytest.approx(r.updates * cost.update * cycle_s)
        assert r.barrier > 0 and r.exchange > 0


def test_the_shares_cover_the_full_rounds_only_and_add_up():
    """A run of about 2.5 rounds of full buckets: the last rounds, in which a process ran out, are left out."""
    sim, rec = _run("4x2x1", 300, bucket_size=8)
    shares = [rec[f"alg_share_{phase}"] for phase in ("fill", "barrier", "exchange", "apply")]
    assert all(0 < s < 1 for s in shares) and sum(shares) == pytest.approx(1)
    assert rec["alg_full_rounds"] < rec["alg_rounds"]
    assert all(r.done for r in sim.algorithm.round_times[int(rec["alg_full_rounds"]):])
    # the full rounds' rate leaves out the partly empty last rounds, so it is above the whole run's
    assert rec["alg_full_round_gups"] > rec["gups"]


def test_round_shares_spread_and_wait_by_hand():
    from gupsim.algorithms.alltoall import RoundTimes, round_shares

    r = RoundTimes()
    r.add(10, 1.0, 2.0, 6.0, 1.0, done=False)  # a round time of 10 s
    r.add(30, 3.0, 0.0, 6.0, 1.0, done=False)  # 10 s: it waited for nobody
    late = RoundTimes()
    late.add(5, 1.0, 1.0, 1.0, 1.0, done=True)
    late.add(0, 0.0, 1.0, 1.0, 1.0, done=False)
    out = round_shares([r, late], processes=2)
    assert out["full_rounds"] == 1
    assert out["share_fill"] == pytest.approx(4 / 20) and out["share_exchange"] == pytest.approx(12 / 20)
    assert out["fill_cv"] == pytest.approx(0.5)  # fills 1 and 3: mean 2, deviation 1
    assert out["fill_wait_share"] == pytest.approx((3 - 2) / 10)
    assert out["round_s"] == pytest.approx(10) and out["full_round_gups"] == pytest.approx(40 / 10 / 1e9)
    none = round_shares([late], processes=2)
    assert none["full_rounds"] == 0 and math.isnan(none["share_fill"]) and math.isnan(none["full_round_gups"])


def test_the_full_round_rate_s_interval_by_hand():
    """Two full rounds at 4 and 2 updates per second per process: the rate is their pooled 3, and the interval
    is 3 plus or minus t(1) x the per-round rates' standard error (sd 1.414 over root 2, so 1) x 12.706."""
    from gupsim.algorithms.alltoall import RoundTimes, round_shares

    rounds = []
    for updates in (4, 2):  # one process, a round of 1 s each
        r = RoundTimes()
        r.add(updates, 0.25, 0.25, 0.25, 0.25, done=False)
        rounds.append(r)
    out = round_shares(rounds, processes=1)
    assert out["full_round_gups"] == pytest.approx(3e-9)
    assert out["full_round_gups_low"] == pytest.approx(3e-9 - 12.7062e-9, rel=1e-4)
    assert out["full_round_gups_high"] == pytest.approx(3e-9 + 12.7062e-9, rel=1e-4)
    one = round_shares(rounds[:1], processes=1)  # a single full round gives no interval
    assert one["full_round_gups"] == pytest.approx(4e-9) and math.isnan(one["full_round_gups_low"])


def test_the_full_round_interval_holds_its_rate_on_a_run():
    _, rec = _run("4x2x1", 300, bucket_size=8)
    assert rec["alg_full_round_gups_low"] <= rec["alg_full_round_gups"] <= rec["alg_full_round_gups_high"]
