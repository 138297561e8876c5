"""The X1 mechanism study: its run lengths and names, its tables from records, and its bad input in one line."""

from __future__ import annotations

import json
import math

import pytest

from gupsim.engines.run import make_run_config
from gupsim.studies import crayx1_mechanisms as study


def test_an_mpi_run_holds_two_full_rounds_and_a_partial_one():
    for p in study.MPI_SHAPES:
        rounds = study.mpi_updates(p) / (study.POISSON_FILL * study.BUCKET_SLOTS * p)
        assert 2.4 < rounds < 2.6
        x, y, z = (int(n) for n in study.MPI_SHAPES[p].split("x"))
        assert 4 * x * y * z == p  # 4 MSPs a node
    assert study.mpi_name(60) == "cray-x1_alltoall_5x3x1_u292000.json"
    assert study.upc_name(256) == "cray-x1_upc_9x7x1_u512_window256.json"
    assert study.mpi_name(32, 8192) == "cray-x1_alltoall_4x2x1_u623000_bucket8192.json"  # 2.5 rounds of its buckets


def test_a_missing_record_is_made_once_then_read(tmp_path, capsys):
    path = tmp_path / "r.json"
    config = make_run_config(machine="cray-x1", shape="2x1x1", algorithm="alltoall", updates_per_process=200,
                             algorithm_options={"bucket_size": 4})
    with pytest.raises(SystemExit, match="r.json: no such record \\(run with --run to make it\\)"):
        study._load(path, config, run_missing=False)
    made = study._load(path, config, run_missing=True)
    assert "r.json:" in capsys.readouterr().out and made["alg_full_rounds"] >= 1
    assert study._load(path, config, run_missing=False) == made


def _upc(window, gups, window_full_s, sim_time_s=1e-3):
    return {"config": {"algorithm_options": {"window": window}}, "processes": 252, "updates_per_process": 512,
            "gups": gups, "gups_ci_low": gups * 0.9, "gups_ci_high": gups * 1.1, "gups_total": gups * 0.8,
            "steady_state": True, "network_bound_gups": 9.6, "alg_window_full_s": window_full_s,
            "sim_time_s": sim_time_s, "link_utilisation_max": 0.5, "wall_s": 1.0}


def test_the_upc_table_gives_littles_bound_and_the_share_of_time_the_window_was_full():
    table = study.upc_table([_upc(64, 1.8, 0.126), _upc(16, 0.5, 0.252)], reference_cycles=8_000, clock_hz=800e6)
    assert list(table["window"]) == [16, 64]
    # 252 MSPs x 16 references / 10 us per reference
    assert table.iloc[0]["little_bound_gups"] == pytest.approx(252 * 16 / 10e-6 / 1e9)
    assert list(table["window_full_share"]) == pytest.approx([1.0, 0.5])  # summed over the 252 processes


def _mpi(p, shape, full_gups):
    return {"processes": p, "shape": shape, "updates_per_process": 1000, "config": {"algorithm_options": {}},
            "alg_full_rounds": 2.0, "alg_round_s": 2e-3,
            "alg_share_fill": 0.1, "alg_share_barrier": 0.2, "alg_share_exchange": 0.6, "alg_share_apply": 0.1,
            "alg_fill_cv": 0.01, "alg_fill_wait_share": 0.002, "alg_full_round_gups": full_gups, "gups": full_gups / 2,
            "link_utilisation_max": 0.05, "wall_s": 1.0, "peak_rss_mb": 100.0}


def test_the_mpi_table_sets_each_run_against_its_published_row():
    """124 MSPs run as 128; 8 and 16 MSPs have no published row; 32 is seed 004's 1.06 GUPS (L111)."""
    table = study.mpi_table([_mpi(128, "8x4x1", 1.0), _mpi(8, "2x1x1", 0.2), _mpi(32, "4x2x1", 0.53)])
    assert list(table["msps"]) == [8, 32, 128]
    by = table.set_index("msps")
    assert math.isnan(by.loc[8, "published_gups"]) and math.isnan(by.loc[8, "rel_err"])
    assert by.loc[32, "published_gups"] == 1.06 and by.loc[32, "rel_err"] == pytest.approx(0.53 / 1.06 - 1)
    assert by.loc[128, "published_msps"] == 124 and by.loc[128, "published_gups"] == 1.52
    assert by.loc[128, "round_ms"] == pytest.approx(2.0)
    assert set(table["bucket_size"]) == {2048}  # 0.5b's size when the run names none
    swept = study.mpi_table([_mpi(32, "4x2x1", 0.5) | {"config": {"algorithm_options": {"bucket_size": 512}}},
                             _mpi(32, "4x2x1", 0.7)])
    assert list(swept["bucket_size"]) == [512, 2048]


def test_an_unknown_size_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        study.main([str(tmp_path / "r"), str(tmp_path / "o"), "--part", "mpi", "--sizes", "8,124"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        f"error: --sizes: 124 not among {sorted(study.MPI_SHAPES)}")
    assert not (tmp_path / "r").exists()


def test_the_tables_and_figures_are_written_from_records(tmp_path):
    records, out = tmp_path / "r", tmp_path / "o"
    records.mkdir()
    (records / study.mpi_name(8)).write_text(json.dumps(_mpi(8, "2x1x1", 0.2)))
    (records / study.mpi_name(32)).write_text(json.dumps(_mpi(32, "4x2x1", 0.53)))
    study.main([str(records), str(out), "--part", "mpi", "--sizes", "8,32"])
    assert (out / "crayx1-mpi-rounds.csv").read_text().splitlines()[0].startswith("msps,shape,")
    assert (out / "crayx1-mpi-rounds.png").stat().st_size > 0


def test_the_upc_runs_share_one_fitted_latency_and_littles_bound_counts_the_network_round_trip(tmp_path):
    (tmp_path / "upc_remote_latency.json").write_text(json.dumps({"remote_latency_cycles": 6000.0,
                                                                  "round_trip_cycles": 900.0}))
    for w in study.WINDOWS:
        (tmp_path / study.upc_name(w)).write_text(json.dumps(_upc(w, 1.0, 0.0)))
    records, reference_cycles = study.upc_records(tmp_path)
    assert reference_cycles == 6900.0 and len(records) == len(study.WINDOWS)
    (tmp_path / study.upc_name(study.WINDOWS[-1])).unlink()
    with pytest.raises(SystemExit, match="no such record"):
        study.upc_records(tmp_path)


def test_the_upc_table_and_figure_are_written_from_records(tmp_path):
    records, out = tmp_path / "r", tmp_path / "o"
    records.mkdir()
    (records / "upc_remote_latency.json").write_text(json.dumps({"remote_latency_cycles": 6000.0,
                                                                 "round_trip_cycles": 900.0}))
    for w in study.WINDOWS:
        (records / study.upc_name(w)).write_text(json.dumps(_upc(w, w / 40, 0.0)))
    study.main([str(records), str(out), "--part", "upc"])
    table = (out / "crayx1-upc-window.csv").read_text().splitlines()
    assert table[0].startswith("window,msps,") and len(table) == 1 + len(study.WINDOWS)
    assert (out / "crayx1-upc-window.svg").stat().st_size > 0
