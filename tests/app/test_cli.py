"""The command-line contract: summaries, one JSON object, one-line errors with exit status 2."""

from __future__ import annotations

import json

import pytest

from tests.conftest import call_cli
from gupsim.engines.run import RECORD_KEYS


def test_run_json_prints_exactly_one_object_with_the_record_keys(capsys):
    code, out, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--algorithm", "one-packet", "--updates", "300", "--json",
                            "--fixed-length")
    assert code == 0
    record = json.loads(out)
    assert set(RECORD_KEYS) <= set(record)
    assert record["updates_generated"] == record["updates_applied"] == 2400
    assert record["config"]["machine"]["network"]["link_bytes_per_s"] == 175e6


def test_run_summary_and_verify(capsys):
    code, out, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--updates", "1500", "--verify")
    assert code == 0
    assert "HPCC verification" in out and "passed" in out
    # --verify applies every update (no precision target): the headline against the steady-state rule's 5%
    assert out.splitlines()[1].split()[0] == "GUPS" and "(target 5%)" in out


def test_the_checkpoint_interval_help_gives_the_drivers_default(capsys):
    """The help names the default as a literal (importing the kernels' driver would slow every command)."""
    from gupsim.engines.fast import driver

    code, out, _ = call_cli(capsys, "run", "--help")
    assert code == 0
    assert f"[default: {driver.CHECKPOINT_EVERY_S:g}]" in " ".join(out.split())


def test_set_changes_the_machine(capsys):
    _, slow, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--algorithm", "one-packet", "--updates", "400", "--json",
                          "--fixed-length")
    _, fast, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--algorithm", "one-packet", "--updates", "400", "--json",
                          "--fixed-length", "--set", "link_bytes_per_s=350e6")
    assert json.loads(fast)["config"]["machine"]["network"]["link_bytes_per_s"] == 350e6
    assert json.loads(fast)["sim_time_s"] < json.loads(slow)["sim_time_s"]


def test_bounds_json(capsys):
    code, out, _ = call_cli(capsys, "bounds", "--shape", "64x32x32", "--json")
    b = json.loads(out)
    assert code == 0 and b["nodes"] == 65536 and b["bottleneck"] == "network"
    assert {"cpu_bound_gups", "network_bound_gups", "alpha_over_C", "bytes_per_update"} <= set(b)


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["run", "--algorithm", "routd"], "unknown algorithm 'routd'; valid choices: alltoall, baseline, dv, one-packet, routed"),
        (["run", "--machine", "bgq"], "unknown machine 'bgq'; valid choices: bgl"),
        (["run", "--shape", "8x8"], "invalid shape '8x8'"),
        (["run", "--shape", "8x-1x8"], "invalid shape '8x-1x8'"),
        (["bounds", "--shape", "1x1x1"], "at least 2 nodes"),
        (["run", "--set", "link_bytes_per_s=-5"],
         "--set network.link_bytes_per_s=-5: Input should be greater than or equal to 1"),
        (["run", "--set", "clockhz=1"], "no such machine field"),
        (["run", "--option", "termination=never"], "option termination"),
        (["run", "--updates", "0"], "Invalid value for '--updates'"),
        (["run", "--precision", "0"], "precision: Input should be greater than 0"),
        (["run", "--precision", "1"], "precision: Input should be less than 1"),
        (["run", "--precision", "2.5"], "precision: Input should be less than 1"),
        (["run", "--precision", "nan"], "precision: Input should be a finite number"),
        (["run", "--precision", "inf"], "precision: Input should be a finite number"),
        (["run", "--precision", "-0.01"], "precision: Input should be greater than 0"),
        (["run", "--precision", "0.01", "--verify"], "drop --verify or --precision"),
        (["bounds", "--shape", "8x8x8", "--bytes-per-update", "-1"], "Invalid value for '--bytes-per-update'"),
        (["run", "--machine", "missing.yaml"], "machine file not found"),
        (["run", "--threads", "0"], "Invalid value for '--threads'"),
        (["run", "--threads", "2", "--algorithm", "baseline"], "--threads 2: the baseline kernel runs on one thread"),
        (["run", "--threads", "2", "--algorithm", "routed", "--engine", "simpy"],
         "--threads 2: the SimPy engine runs on one thread"),
        (["run", "--threads", "3", "--algorithm", "baseline", "--shape", "16x8x8", "--machine", "bgp"],
         "--threads 3: the baseline kernel runs on one thread only"),
        (["run", "--threads", "2", "--algorithm", "routed", "--shape", "8x8x8"], "--threads 2: 8x8x8 has fewer than"),
        # a configuration the algorithm cannot finish (tests/test_routed.py): one line on either engine
        (["run", "--shape", "16x2x2", "--algorithm", "routed", "--updates", "1024", "--set", "fifos=shared",
          "--set", "link_bytes_per_s=10937500"], "fifos=per-dimension"),
        (["run", "--shape", "16x2x2", "--algorithm", "routed", "--updates", "1024", "--set", "fifos=shared",
          "--set", "link_bytes_per_s=10937500", "--engine", "simpy"], "fifos=per-dimension"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(capsys, argv, expected):
    code, out, err = call_cli(capsys, *argv)
    assert code == 2
    assert expected in err
    assert "Traceback" not in err
    if err.startswith("gupsim: error:"):
        assert len(err.strip().splitlines()) == 1


def test_list(capsys):
    code, out, _ = call_cli(capsys, "list")
    assert "baseline" in out and "one-packet" in out and "torus" in out and "bgl" in out


def test_list_gives_each_algorithms_options_with_defaults_that_validate(capsys):
    from gupsim.algorithms import available_algorithms, validate_options
    from gupsim.config.overrides import parse_key_value

    _, out, _ = call_cli(capsys, "list")
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  ")
            and line.split()[0] in available_algorithms()}
    assert sorted(rows) == available_algorithms()
    assert "receive_test_every=1" in rows["baseline"] and "bucket_capacity=auto" in rows["routed"]
    for name, pairs in rows.items():
        given = dict(parse_key_value(p, "--option") for p in pairs if not p.endswith("=auto"))
        assert validate_options(name, given).model_dump(include=set(given)) == given  # what --option takes


def test_short_runs_are_flagged_as_not_steady(capsys):
    code, out, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--updates", "100")
    assert "note: the interval is wider than ±2%" in out or "note: no valid interval" in out
    code, out, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--updates", "100", "--json")
    assert json.loads(out)["steady_state"] is False


def test_runs_lists_the_kept_runs_and_a_missing_folder_is_one_line(capsys, tmp_path):
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config
    from gupsim.studies.runpool import SerialPool

    config = make_run_config(machine=load_machine("bgl"), shape="2x2x2", algorithm="one-packet",
                             updates_per_process=64)
    events = SerialPool(tmp_path / "runs").records([config])[0]["events"]
    code, out, _ = call_cli(capsys, "runs", "--out", str(tmp_path))
    assert code == 0 and "one-packet" in out and f"{events:,}" in out
    assert ": 1 kept runs, " in out.splitlines()[-1] and "unreadable" not in out
    (kept,) = (tmp_path / "runs" / "records").glob("*.json")
    kept.write_bytes(kept.read_bytes()[:40])
    code, out, _ = call_cli(capsys, "runs", "--out", str(tmp_path))
    assert code == 0 and out.splitlines()[-1].endswith(": 0 kept runs, 0 events, 0 s of wall time in all; 0 kept "
                                                       "by other code (not reused); 0 unfinished; 1 unreadable "
                                                       "(damaged files: the next reproduce runs them again)")
    (tmp_path / "empty" / "runs").mkdir(parents=True)
    code, out, _ = call_cli(capsys, "runs", "--out", str(tmp_path / "empty"))
    assert code == 0 and ": 0 kept runs, 0 events, " in out
    code, _, err = call_cli(capsys, "runs", "--out", str(tmp_path / "nowhere"))
    assert code == 2 and err.startswith("gupsim: error: ") and len(err.strip().splitlines()) == 1
