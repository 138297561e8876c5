"""Bad input at the engines' door: one line of GupsimError on either engine, never a traceback or a wrong run.

Each engine used to meet some inputs on its own: the fast engine keeps stream
positions and update counts in int64 and took a huge ``--updates`` or
``--seed`` to an OverflowError the SimPy engine never reached; a table of
2^62 or 2^63 words put the fast engine's stream positions past int64.  The
runner now checks every rank's stretch of the HPCC stream before choosing an
engine (:func:`gupsim.model.run_config.stream_layout`), so both give the reference's
line, and the fast engine computes large tables' positions exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner

from gupsim.model import hpcc
from gupsim.algorithms import algorithm_class, available_algorithms, validate_options
from gupsim.app.cli import cli
from gupsim.config import load_machine
from gupsim.base.errors import GupsimError
from gupsim.engines.fast import FastSimulation
from gupsim.engines.run import ENGINES, choose_engine
from gupsim.app.reporting import model_fields
from gupsim.engines.run import make_run_config, simulate
from gupsim.engines.reference.simulation import Simulation

#: updates x processes = 2^63 on a 2x2x2 partition (8 processes): past int64
HUGE_UPDATES = 2**60
#: a line of the reference engine's own, naming the slice the run overflows
PAST_SLICE = "runs past rank 0's HPCC slice"


def _gupsim(*args: str):
    return CliRunner().invoke(cli, list(args))


def _one_line_error(result, *expected: str) -> str:
    """The CLI refused the input: exit status 2 and one line naming it, no traceback."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gupsim: error: "), result.output
    for text in expected:
        assert text in lines[0]
    return lines[0]


def _run(engine: str = "auto", **fields):
    fields = {"machine": load_machine("bgl"), "shape": "2x2x2", "algorithm": "baseline",
              "updates_per_process": 16} | fields
    return make_run_config(engine=engine, **fields)


# ------------------------------------------------------------------ 1, 2: past the HPCC slice


@pytest.mark.parametrize("algorithm", ["baseline", "one-packet", "routed"])
@pytest.mark.parametrize("flags", [("--updates", str(HUGE_UPDATES)),
                                   ("--updates", "16", "--seed", str(2**63 - 1)),
                                   ("--updates", "16", "--seed", "99999999999999999999")])
def test_a_run_past_its_slice_is_the_same_line_on_both_engines(algorithm, flags):
    """Every fast kernel, and SimPy, refuse with the reference's line; none reaches int64 arithmetic."""
    lines = {engine: _one_line_error(_gupsim("run", "--shape", "2x2x2", "--algorithm", algorithm, *flags,
                                             "--engine", engine), PAST_SLICE)
             for engine in ("auto", "fast", "simpy")}
    assert len(set(lines.values())) == 1, lines


def test_the_slice_is_checked_before_either_engine_builds_anything():
    """The API says the same: simulate, and either engine built directly, raise GupsimError."""
    run = _run("fast", updates_per_process=HUGE_UPDATES)
    for build in (simulate, Simulation, FastSimulation):
        with pytest.raises(GupsimError, match=PAST_SLICE):
            build(run)


def test_the_first_rank_past_its_slice_is_named_as_building_the_streams_names_it():
    """With a remainder, ranks below it have a longer slice: the first shorter one is the rank that fails."""
    # 2^4 words over 12 processes (3x2x2): ranks 0..3 hold 2 words (slice 8), ranks 4..11 hold 1 (slice 4)
    run = make_run_config(machine=load_machine("bgl"), shape="3x2x2", algorithm="baseline", updates_per_process=3,
                          log2_table_size=4, engine="simpy")
    assert hpcc.TableLayout(4, 12).remainder == 4
    with pytest.raises(GupsimError, match="runs past rank 4's HPCC slice of 4 updates"):
        simulate(run)


def test_more_updates_than_the_kernels_count_are_a_reason_not_a_crash():
    """A 2^63-word table leaves room for 2^63 updates in all: SimPy's to run, the fast engine says why not."""
    run = _run("fast", updates_per_process=HUGE_UPDATES, log2_table_size=63)
    assert "updates the kernels count" in ENGINES["fast"].unsupported(run)
    with pytest.raises(GupsimError, match="^--engine fast: 8 processes x updates_per_process="):
        choose_engine(run)
    assert choose_engine(run.model_copy(update={"engine": "auto"})) == "simpy"


# ------------------------------------------------------------------ 3: tables of 2^61..2^63 words


@pytest.mark.parametrize("log2", [60, 61, 62, 63])
def test_the_fast_engine_finds_every_stream_start_of_a_huge_table_exactly(log2):
    """Positions past int64 (4 x 2^61 and up) are the reference's, modulo HPCC's period."""
    sim = FastSimulation(_run("fast", algorithm="one-packet", log2_table_size=log2, seed=3))
    firsts = sim.stream_starts()
    assert [int(f) % hpcc.PERIOD for f in firsts] == [
        Simulation.stream_start(sim, r) % hpcc.PERIOD for r in range(sim.num_ranks)]
    from gupsim.engines.fast import stream

    assert [int(v) for v in stream.starts_many(firsts)] == [
        hpcc.starts(Simulation.stream_start(sim, r)) for r in range(sim.num_ranks)]


@pytest.mark.parametrize("algorithm", ["baseline", "one-packet", "routed"])
@pytest.mark.parametrize("log2", [62, 63])
def test_a_huge_table_runs_on_the_fast_engine_as_on_simpy(algorithm, log2):
    """``--log2-table-size`` 62 and 63 (the CLI offers 1..63): auto picks the fast engine, the same record."""
    records = {engine: simulate(_run(engine, algorithm=algorithm, log2_table_size=log2))[1]
               for engine in ("auto", "simpy")}
    assert records["auto"]["engine"] == "fast"
    volatile = {"events", "events_per_s", "engine", "config"}
    fast, ref = ({k: v for k, v in model_fields(r).items() if k not in volatile} for r in records.values())
    assert fast.keys() == ref.keys()
    for key in fast:
        assert fast[key] == ref[key] or (fast[key] != fast[key] and ref[key] != ref[key]), key


def test_a_huge_table_from_the_command_line():
    result = _gupsim("run", "--shape", "2x2x2", "--updates", "16", "--log2-table-size", "63", "--json")
    assert result.exit_code == 0, result.output
    assert '"engine": "fast"' in result.output


# ------------------------------------------------------------------ 4: each unsupported feature its own reason


def test_cut_through_and_a_dma_engine_run_on_the_fast_engine():
    """Both are in the kernels (gupsim.engines.fast.dma; the head's cut-through time): no reason to refuse."""
    assert ENGINES["fast"].unsupported(_run("fast", machine=load_machine("bgl", {"network.cut_through_bytes": 8}))) is None
    assert ENGINES["fast"].unsupported(_run("fast", machine=load_machine("bgp"))) is None


# ------------------------------------------------------------------ 5: algorithm options


def _float_options() -> list[tuple[str, str]]:
    return [(name, field) for name in available_algorithms()
            for field, info in algorithm_class(name).Options.model_fields.items()
            if info.annotation in (float, float | None)]


def test_every_algorithm_has_float_options_to_check():
    assert {("one-packet", "local_overhead_cycles"), ("one-packet", "remote_overhead_cycles"),
            ("routed-split", "handoff_cycles")} <= set(_float_options())


@pytest.mark.parametrize("algorithm, option", _float_options())
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_float_option_must_be_finite(algorithm, option, value):
    with pytest.raises(GupsimError, match=f"^algorithm {algorithm}: option {option}: Input should be a finite "
                                          f"number"):
        validate_options(algorithm, {option: value})


@pytest.mark.parametrize("algorithm, option", _float_options())
@pytest.mark.parametrize("value", ["inf", "nan", "1.5"])
def test_a_float_option_given_as_text_from_python_is_refused(algorithm, option, value):
    """Options are strict, as machine fields are; --option reads its value as YAML, so '1.5' there is a number."""
    with pytest.raises(GupsimError, match=f"^algorithm {algorithm}: option {option}: Input should be a valid number"):
        validate_options(algorithm, {option: value})


def test_an_infinite_overhead_is_refused_on_the_command_line():
    """It used to run, print GUPS n/a and, with --json, Infinity: not JSON."""
    _one_line_error(_gupsim("run", "--shape", "2x2x2", "--updates", "16", "--algorithm", "one-packet",
                            "--option", "local_overhead_cycles=inf", "--json"), "local_overhead_cycles",
                    "finite")


def test_fewer_wire_bytes_than_the_payload_are_refused():
    _one_line_error(_gupsim("run", "--shape", "2x2x2", "--updates", "16", "--algorithm", "one-packet",
                            "--option", "wire_bytes=1"),
                    "option wire_bytes: wire_bytes=1 is less than payload_bytes=8")
    with pytest.raises(GupsimError, match="wire_bytes=63 is less than payload_bytes=64"):
        validate_options("one-packet", {"payload_bytes": 64, "wire_bytes": 63})
    # seed 001's packet, and a payload that fills its wire bytes exactly, are fine
    assert validate_options("one-packet", {"payload_bytes": 64, "wire_bytes": 75}).wire_bytes == 75
    assert validate_options("one-packet", {"wire_bytes": 8}).wire_bytes == 8


# ------------------------------------------------------------------ 6: the sampling interval


@pytest.mark.parametrize("interval", [math.nan, math.inf, 0.0, -1e-6])
def test_a_sampling_interval_must_be_finite_and_positive(interval):
    """NaN timeouts reorder SimPy's queue: the run used to finish with a wrong rate."""
    from gupsim.engines.reference.telemetry import Telemetry

    with pytest.raises(GupsimError, match="^sample_interval_s=.*: must be a finite number"):
        simulate(_run("simpy"), Telemetry(sample_interval_s=interval))


def test_a_sampling_interval_nan_is_refused_on_the_command_line():
    _one_line_error(_gupsim("run", "--shape", "2x2x2", "--updates", "16", "--sample-interval-s", "nan", "--json"),
                    "nan")


def test_a_finite_sampling_interval_still_samples():
    from gupsim.engines.reference.telemetry import Telemetry

    _, record = simulate(_run("simpy"), Telemetry(sample_interval_s=1e-6))
    assert np.all(np.isfinite(record["timeseries"]["t_s"]))
