"""gupsim run's first screen, and gupsim compare / plot whatif on real records (issue 47)."""

from __future__ import annotations

import json

from tests.conftest import call_cli


def _record(capsys, tmp_path, name, *extra):
    code, out, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--algorithm", "one-packet", "--updates", "4096",
                            "--json", "--progress", "none", *extra)
    assert code == 0
    path = tmp_path / name
    path.write_text(out)
    return path, json.loads(out)


def test_a_run_with_no_length_options_runs_to_2_percent_and_says_gups_limit_and_time_first(capsys):
    code, out, err = call_cli(capsys, "run", "--shape", "2x2x2", "--algorithm", "one-packet", "--updates", "4096",
                              "--progress", "none")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith("x 4096 updates (cap), seed 0, fast engine")
    assert [line.split()[0] for line in lines[1:5]] == ["GUPS", "precision", "limited", "took"]
    assert "95% CI" in lines[1] and "(target 2%)" in lines[2]
    assert "rate over the whole run" not in out  # other rates only when asked


def test_all_rates_names_each_rate_for_what_it_is(capsys):
    _, out, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--updates", "1500", "--verify", "--all-rates",
                         "--progress", "none")
    assert "rate between 25% and 75% of the updates applied" in out and "rate over the whole run" in out
    assert "(target 5%)" in out  # --verify runs every update: no target asked, the steady-state rule's


def test_the_json_record_s_gups_is_the_headline_inside_its_interval(capsys, tmp_path):
    _, rec = _record(capsys, tmp_path, "a.json")
    assert rec["gups"] == rec["gups_steady"] and rec["gups_ci_low"] <= rec["gups"] <= rec["gups_ci_high"]
    assert "gups_window" in rec


def test_compare_two_records_prints_both_sides_the_ratio_and_a_verdict(capsys, tmp_path):
    a, _ = _record(capsys, tmp_path, "a.json")
    b, _ = _record(capsys, tmp_path, "b.json", "--set", "link_bytes_per_s=350e6")
    code, out, _ = call_cli(capsys, "compare", str(a), str(b))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("A a.json: ") and lines[1].startswith("B b.json: ")
    assert lines[3].startswith("ratio: x") and "(95%, delta method)" in lines[3]
    assert lines[4].startswith("B vs A (link_bytes_per_s x2): x")


def test_compare_refuses_one_source_without_by_in_one_line(capsys, tmp_path):
    a, _ = _record(capsys, tmp_path, "a.json")
    code, _, err = call_cli(capsys, "compare", str(a))
    assert code == 2 and err.startswith("gupsim: error: give two records or stores") and err.count("\n") == 1


def test_run_help_shows_percent_signs_once(capsys):
    _, out, _ = call_cli(capsys, "run", "--help")
    assert "95%%" not in out and "95%" in out
