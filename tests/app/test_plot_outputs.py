"""Where `gupsim plot` writes: named after its source, or --out's file name; never over another source's plot."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from gupsim.app.cli import cli


def _record(tmp_path, name: str):
    links = {"src": [[0, 0, 0], [1, 0, 0]], "dst": [[1, 0, 0], [0, 0, 0]], "dim": [0, 0], "dir": [1, -1],
             "utilisation": [0.1, 0.2]}
    path = tmp_path / name
    path.write_text(json.dumps({"gups": 1.0, "machine": "bgl", "shape": "2x1x1", "links": links}))
    return path


def _plot(*args):
    return CliRunner().invoke(cli, ["plot", "links", *map(str, args)])


def test_plots_are_named_after_their_source_and_never_replace_another_sources(tmp_path):
    """plot scaling had always written results/plots/gups-scaling.png: a second store's plot replaced the
    first's without a word."""
    a, b = _record(tmp_path, "a.json"), _record(tmp_path, "b.json")
    out = tmp_path / "plots"
    assert _plot(a, "--out", out).exit_code == 0
    assert _plot(b, "--out", out).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["a-link-load.png", "a-link-load.svg",
                                                     "b-link-load.png", "b-link-load.svg"]
    assert _plot(a, "--out", out).exit_code == 0  # the same source again replaces its own plot
    before = (out / "a-link-load.png").read_bytes()
    refused = _plot(b, "--out", out / "a-link-load.png")
    assert refused.exit_code == 2
    assert refused.output.startswith(f"gupsim: error: {out / 'a-link-load.png'} was drawn from {a.resolve()}, ")
    assert refused.output.count("\n") == 1
    assert (out / "a-link-load.png").read_bytes() == before


def test_out_may_name_the_file_and_a_figure_of_unknown_origin_is_kept(tmp_path):
    a = _record(tmp_path, "a.json")
    assert _plot(a, "--out", tmp_path / "mine.png").exit_code == 0
    assert (tmp_path / "mine.png").exists() and (tmp_path / "mine.svg").exists()
    shutil.copy(tmp_path / "mine.svg", tmp_path / "theirs.svg")
    (tmp_path / "theirs.svg").write_text("<svg/>")  # made by something else
    result = _plot(a, "--out", tmp_path / "theirs.svg")
    assert result.exit_code == 2 and "was drawn from something else" in result.output
    assert (tmp_path / "theirs.svg").read_text() == "<svg/>"
