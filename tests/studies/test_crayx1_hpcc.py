"""``gupsim reproduce crayx1-hpcc`` at its quick size: communication rows as fits and judged rows, RandomAccess
rows simulated or listed with the reason they are not."""

from __future__ import annotations

import math

import pytest

from gupsim.studies.experiments import crayx1_hpcc
from gupsim.studies.validation import comparison_markdown, run_experiments, write_markdown
from tests.studies.conftest import check_page_lists_every_miss_with_its_explanation, \
    check_writes_reference_sim_and_error_columns


@pytest.fixture(scope="module")
def result():
    """What ``gupsim reproduce crayx1-hpcc --quick`` makes (run once for the suite: tests/studies/test_reproduce.py
    leaves this experiment to this file)."""
    (comparison,) = run_experiments(["crayx1-hpcc"], quick=True)
    return comparison


def _row(c, key):
    return c.frame.set_index("row").loc[key]


def test_the_communication_rows_the_constants_were_fitted_on_agree_and_are_marked(result):
    """The machine files' MPI costs reproduce the four rows they were fitted on (to their rounding), and
    those rows are fits, not judged."""
    assert set(crayx1_hpcc.FITS) <= set(result.frame["row"])
    for key in crayx1_hpcc.FITS:
        assert result.is_fitted(key, "value")
        assert abs(_row(result, key)["rel_err_value"]) < 1e-3, key
    assert "(fit)" in comparison_markdown(result)


def test_the_judged_communication_rows_report_their_error(result):
    latency = _row(result, "X1 124 random-ring latency")
    assert latency["rel_err_value"] == pytest.approx(22.6 / 20.8 - 1, rel=1e-3)
    assert not result.is_fitted("X1 124 random-ring latency", "value")
    bandwidth = _row(result, "X1 252 natural-ring bandwidth")
    assert bandwidth["rel_err_value"] == pytest.approx(4.12 / 2.60 - 1, rel=1e-3)
    assert ("X1 252 natural-ring bandwidth", "value") in result.notes  # a miss, explained
    assert math.isnan(_row(result, "X1 252 random-ring bandwidth")["sim_value"])  # no ring benchmark: no value


def test_randomaccess_rows_are_simulated_or_listed_with_the_reason(result):
    simulated = ["X1 32 RandomAccess MPI", "X1 60 RandomAccess MPI", "X1 252 RandomAccess UPC"]
    for key in simulated:
        row = _row(result, key)
        assert row["sim_value"] > 0 and row["rel_err_value"] == pytest.approx(row["sim_value"] / row["value"] - 1)
        assert row["how"].startswith("simulated")
        assert not result.is_fitted(key, "value")
    for key in ["X1 124 RandomAccess MPI", "X1 252 RandomAccess MPI", "T3E 1024 RandomAccess HPCC list"]:
        assert math.isnan(_row(result, key)["sim_value"])
        assert result.notes[(key, "value")].startswith("Not simulated")
    assert _row(result, "X1 32 RandomAccess MPI")["sim_updates_per_process"] == crayx1_hpcc.QUICK_MPI_UPDATES
    assert "--quick" in result.method


def test_the_figure_is_written(result, tmp_path):
    paths = result.figures(tmp_path)
    assert sorted(p.suffix for p in paths) == [".png", ".svg"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_the_upc_row_is_the_read_modify_write_model_with_its_latency_fitted_on_the_upc_ring_row(result):
    fit = _row(result, crayx1_hpcc.UPC_FIT_ROW)
    assert result.is_fitted(crayx1_hpcc.UPC_FIT_ROW, "value")
    assert fit["how"].startswith("simulated round trip at window 1")
    upc = _row(result, "X1 252 RandomAccess UPC")
    assert upc["how"] == "simulated, upc (simpy)" and not result.is_fitted("X1 252 RandomAccess UPC", "value")
    assert f"{crayx1_hpcc.UPC_WINDOW} references in flight" in result.method


def test_the_upc_random_ring_bandwidth_is_simulated_as_posted_stores_and_judged(result):
    ring = _row(result, crayx1_hpcc.UPC_RING_ROW)
    assert ring["how"].startswith("simulated: posted 8-byte stores") and ring["sim_value"] > 0
    assert not result.is_fitted(crayx1_hpcc.UPC_RING_ROW, "value")
    assert math.isnan(_row(result, "X1 252 UPC natural-ring bandwidth")["sim_value"])
    assert any(r.startswith("The MPI rows' shape") and "(60)" in r for r in result.remarks)


def test_it_passes_the_checks_every_reproduced_table_passes(result, tmp_path):
    check_writes_reference_sim_and_error_columns(result, tmp_path)
    page = tmp_path / "validation.md"
    write_markdown([result], page, "gupsim reproduce crayx1-hpcc --quick")
    check_page_lists_every_miss_with_its_explanation([result], page.read_text())


def test_the_full_target_simulates_every_randomaccess_row_the_t3e_s_too():
    """Without --quick, the X1 MPI rows at 32-252 MSPs, the UPC row and the T3E row (hours, kept and resumable)
    have runs; the T3E's is 0.5b's all-to-all on the whole 1,024-processor torus, counted in slots."""
    runs = crayx1_hpcc._runs(quick=False, upc_latency_cycles=0.0)
    assert {"X1 32 RandomAccess MPI", "X1 60 RandomAccess MPI", "X1 124 RandomAccess MPI", "X1 252 RandomAccess MPI",
            "X1 252 RandomAccess UPC", crayx1_hpcc.T3E_ROW} <= set(runs)
    t3e = runs[crayx1_hpcc.T3E_ROW]
    assert (t3e.machine.name, t3e.shape, t3e.algorithm) == ("cray-t3e", crayx1_hpcc.T3E_SHAPE, "alltoall")
    assert t3e.updates_per_process == crayx1_hpcc.T3E_UPDATES
    assert t3e.machine.network.bubble_accounting == "packets"
    assert math.prod(map(int, crayx1_hpcc.T3E_SHAPE.split("x"))) == crayx1_hpcc.T3E_CPUS == 1024
    assert crayx1_hpcc.T3E_ROW not in crayx1_hpcc._runs(quick=True, upc_latency_cycles=0.0)


@pytest.mark.parametrize("sim, verdict", [(0.4, "within"), (0.12, "outside"), (0.55, "outside")])
def test_the_t3e_row_is_judged_against_a_factor_of_two(sim, verdict):
    row = _row_of(crayx1_hpcc.T3E_ROW).copy()
    row["sim_value"], row["sim_value_low"], row["sim_value_high"] = sim, sim * 0.9, sim * 1.1
    note = crayx1_hpcc._t3e_note(row)
    assert f"{sim / row['value']:.2f}x the published value" in note
    assert f", {verdict} a factor of 2" in note


def _row_of(key):
    return crayx1_hpcc.reference_rows().set_index("row").loc[key].rename(key)


def test_an_alltoall_row_is_its_full_round_rate_with_that_rate_s_interval():
    record = {"algorithm": "alltoall", "engine": "fast", "gups": 0.5, "gups_total": 0.5, "alg_full_rounds": 2.0,
              "alg_full_round_gups": 0.8, "alg_full_round_gups_low": 0.7, "alg_full_round_gups_high": 0.9}
    cells = crayx1_hpcc._simulated_rate(record)
    assert (cells["sim_value"], cells["sim_value_low"], cells["sim_value_high"]) == (0.8, 0.7, 0.9)
    assert "full-round rate over 2 full rounds" in cells["how"]
    short = record | {"alg_full_rounds": 0.0, "alg_full_round_gups": math.nan}  # --quick: under one round
    cells = crayx1_hpcc._simulated_rate(short)
    assert cells["sim_value"] == 0.5 and math.isnan(cells["sim_value_low"]) and "whole-run" in cells["how"]
