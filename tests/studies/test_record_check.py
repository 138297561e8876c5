"""A record whose fields disagree is refused in one line naming the file and the field (gupsim.studies.record_check).

A record whose ``shape`` was edited by hand had been plotted under the false title (issue 48).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gupsim.app.cli import cli
from gupsim.base.errors import GupsimError
from gupsim.engines.run import make_run_config, simulate, telemetry
from gupsim.studies.record_check import check_record
from gupsim.studies.store import ResultsStore, load_record, record_row


@pytest.fixture(scope="module")
def record():
    """A small run's record with a link table, as ``gupsim run --links --json`` writes it."""
    cfg = make_run_config(machine="bgl", shape="2x2x2", algorithm="baseline", updates_per_process=256,
                          precision=None)
    _, rec = simulate(cfg, telemetry(links=True))
    return json.loads(json.dumps(rec))


def _edited(record: dict, **fields) -> dict:
    return {**record, **fields}


def test_a_record_as_the_run_wrote_it_passes(record):
    check_record(record, "rec.json")


@pytest.mark.parametrize("fields, named", [
    ({"shape": "4x4x4"}, "field shape"),
    ({"algorithm": "routed"}, "field algorithm"),
    ({"machine": "bgp"}, "field machine"),
    ({"nodes": 64}, "field nodes"),
    ({"processes": 16}, "field processes"),
    ({"shape": "4x4x4x"}, "field shape"),
])
def test_one_edited_field_is_named(record, fields, named):
    with pytest.raises(GupsimError, match=f"^rec.json: {named}"):
        check_record(_edited(record, **fields), "rec.json")


def test_an_edit_carried_through_the_config_is_still_caught(record):
    """Shape, nodes, processes and the config's shape edited together: the counts no longer add up."""
    edited = _edited(record, shape="4x4x4", nodes=64, processes=64, config={**record["config"], "shape": "4x4x4"})
    with pytest.raises(GupsimError, match="field processes is 64"):
        check_record(edited, "rec.json")


def test_a_link_outside_the_shape_is_named(record):
    links = {**record["links"], "src": [[5, 0, 0]] + record["links"]["src"][1:]}
    with pytest.raises(GupsimError, match=r"field links.src is \[5, 0, 0\]"):
        check_record(_edited(record, links=links), "rec.json")


def _cli(*argv):
    return CliRunner().invoke(cli, list(argv))


def _one_line(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gupsim: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_plot_and_compare_refuse_an_edited_json_record(record, tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(record))
    bad.write_text(json.dumps(_edited(record, shape="4x4x2")))
    _one_line(_cli("plot", "links", str(bad), "--out", str(tmp_path / "out")), str(bad), "field shape")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    _one_line(_cli("compare", str(good), str(bad)), str(bad), "field shape")
    assert _cli("compare", str(good), str(good)).exit_code == 0


def test_plot_and_compare_refuse_an_edited_store_row(record, tmp_path):
    store = ResultsStore(tmp_path / "s.store")
    store.write(record_row("abc123", _edited(record, shape="2x2x4"), {}))
    store.compact()
    where = f"{store.path} (key abc123)"
    _one_line(_cli("plot", "scaling", str(store.path), "--out", str(tmp_path / "out")), where, "field shape")
    _one_line(_cli("compare", str(store.path), str(store.path)), where, "field shape")
    with pytest.raises(GupsimError, match="field shape"):
        load_record(store.path, "abc")
