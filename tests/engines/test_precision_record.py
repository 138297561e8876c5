"""Every record carries the rate's 95% interval and its diagnostics, whichever engine ran it."""

from __future__ import annotations

from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, simulate


def test_records_of_both_engines_carry_the_interval():
    for engine in ("fast", "simpy"):
        rec = simulate(make_run_config(machine=load_machine("bgl", {}), shape="2x2x2", algorithm="one-packet",
                                       updates_per_process=600, engine=engine))[1]
        for key in ("gups_ci_low", "gups_ci_high", "gups_ci_batches", "gups_ci_lag1", "warmup_updates", "warmup_s",
                    "precision", "gups_steady", "cycles_per_update_ci_low", "cycles_per_update_ci_high"):
            assert key in rec, key
        assert rec["precision"] in ("ok", "insufficient")
        if rec["precision"] == "ok":
            assert rec["gups_ci_low"] < rec["gups_steady"] < rec["gups_ci_high"]
            cycles = rec["processes"] * 700e6 / (rec["gups_steady"] * 1e9)
            assert rec["cycles_per_update_ci_low"] < cycles < rec["cycles_per_update_ci_high"]
