"""The BG/L comparison of ``alltoall`` with ``baseline`` and ``routed``: its records, cost estimate, table and
figure, on small real runs standing in for the 512- and 8,192-node ones."""

from __future__ import annotations

import json

import pytest

from gupsim.engines.run import make_run_config, run
from gupsim.studies import alltoall_bgl


@pytest.fixture(scope="module")
def records():
    small = {512: "2x2x2", 8192: "4x2x2"}
    out = []
    for algorithm, nodes, _, options in alltoall_bgl.RUNS:
        rec = run(make_run_config(machine="bgl", shape=small[nodes], algorithm=algorithm, updates_per_process=256,
                                  engine="simpy", algorithm_options=options))
        out.append(rec | {"processes": nodes})  # stand in for the named size
    return out


def test_the_records_are_read_by_name_and_a_missing_one_is_one_line(records, tmp_path):
    for rec, (algorithm, nodes, updates, options) in zip(records, alltoall_bgl.RUNS):
        (tmp_path / alltoall_bgl.record_name(algorithm, nodes, updates, options)).write_text(json.dumps(rec))
    assert alltoall_bgl.load_records(tmp_path) == json.loads(json.dumps(records))
    (tmp_path / alltoall_bgl.record_name(*alltoall_bgl.RUNS[0])).unlink()
    with pytest.raises(SystemExit, match="no such record \\(run with --run to make it\\)"):
        alltoall_bgl.load_records(tmp_path)


def test_the_run_not_made_is_costed_from_the_measured_wall_time_per_message(records):
    cost = alltoall_bgl.round_cost(records, 8192)
    a2a = next(r for r in records if r["algorithm"] == "alltoall")
    assert cost["messages_per_round"] == 8192 * (8191 + 13)  # P - 1 blocks and ceil(log2 P) barrier steps each
    assert cost["wall_s_per_round_estimate"] == pytest.approx(
        cost["messages_per_round"] * a2a["wall_s"] / a2a["alg_messages_sent"])


def test_the_table_and_figure_are_written(records, tmp_path):
    frame = alltoall_bgl.table(records)
    assert list(frame["algorithm"]) == ["baseline", "baseline", "routed", "routed", "alltoall", "alltoall"]
    assert list(frame["engine"])[-1] == "not run" and frame["gups"].iloc[:5].gt(0).all()
    paths = alltoall_bgl.figure(frame, tmp_path)
    assert sorted(p.suffix for p in paths) == [".png", ".svg"]
