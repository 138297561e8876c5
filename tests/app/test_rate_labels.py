"""No summary, table or plot calls a rate a steady-state one unless its run is one (gupsim.app.rate_quality)."""

from __future__ import annotations

import json

import pandas as pd

from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, resolved_config, simulate


def _rows(steady: dict[str, bool], updates: int = 256) -> pd.DataFrame:
    machine = load_machine("bgl")
    rows = []
    for algorithm, per_packet in (("baseline", 14.0), ("routed", 24.0)):
        for shape, nodes in (("2x2x2", 8), ("4x2x2", 16)):
            cfg = make_run_config(machine=machine, shape=shape, algorithm=algorithm, updates_per_process=updates)
            rows.append({"key": f"{algorithm}-{shape}", "status": "ok", "gups": 0.05, "algorithm": algorithm,
                         "nodes": nodes, "shape": shape, "steady_state": steady[algorithm],
                         "updates_per_process": updates, "updates_per_packet": per_packet,
                         "config_json": json.dumps(resolved_config(cfg))})
    return pd.DataFrame(rows)


def _series_faces(ax) -> dict[str, str]:
    return {c.get_label(): c.lines[0].get_markerfacecolor() for c in ax.containers}


def test_a_scaling_plot_of_transient_runs_says_so_and_draws_them_hollow(figures, tmp_path):
    from gupsim.app.plots import plot_scaling

    plot_scaling(_rows({"baseline": False, "routed": False}), tmp_path)
    ax = figures[0].axes[0]
    assert "steady state" in ax.get_ylabel() and "not steady state" in ax.get_ylabel()
    assert set(_series_faces(ax).values()) == {"none"}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "hollow: transient, 256 updates/process, not steady state" in legend


def test_a_scaling_plot_calls_its_rates_steady_only_when_every_point_is(figures, tmp_path):
    from gupsim.app.plots import plot_scaling

    plot_scaling(_rows({"baseline": True, "routed": False}), tmp_path)
    plot_scaling(_rows({"baseline": True, "routed": True}, updates=4096), tmp_path)
    mixed, steady = (fig.axes[0] for fig in figures)
    assert "not steady state" in mixed.get_ylabel()
    faces = _series_faces(mixed)
    assert faces["routed"] == "none" and faces["baseline"] != "none"
    assert steady.get_ylabel() == "GUPS (10$^9$ updates/s, steady state)"
    assert not any("transient" in t.get_text() for t in steady.get_legend().get_texts())


def test_the_one_update_per_packet_bound_names_the_algorithms_it_does_not_bind(figures, tmp_path):
    """Routed's points sat above the line drawn as 'the network bound': it packs 24 updates into a packet,
    so its wire bytes per update, and eq. (2) with them, are not the line's."""
    from gupsim.app.plots import plot_scaling

    plot_scaling(_rows({"baseline": False, "routed": False}), tmp_path)
    legend = " ".join(t.get_text() for t in figures[0].axes[0].get_legend().get_texts())
    assert "baseline: 14, routed: 24 updates per packet" in legend
    assert "higher eq. (2) bound" in legend


def test_the_summary_of_a_short_run_does_not_call_its_rate_steady():
    from gupsim.app.reporting import format_record

    machine = load_machine("bgl")
    short = simulate(make_run_config(machine=machine, shape="2x1x1", algorithm="baseline", updates_per_process=16,
                                     engine="simpy"))[1]
    text = format_record(short)
    assert "steady state" not in text
    assert "precision" in text.splitlines()[2] and "note: no valid interval" in text


def test_a_what_ifs_summary_and_record_name_every_set_and_option(tmp_path):
    """With --set link_bytes_per_s=700e6 the summary's header had been the unmodified run's, so a saved
    summary of a what-if passed for the real machine's."""
    from click.testing import CliRunner

    from gupsim.app.cli import cli

    args = ["run", "--shape", "2x1x1", "--updates", "16", "--algorithm", "baseline", "--engine", "simpy",
            "--set", "link_bytes_per_s=700e6", "--option", "max_pending=512"]
    text = CliRunner().invoke(cli, args).output
    assert text.splitlines()[1] == "  what-if: --set network.link_bytes_per_s=7e+08 --option max_pending=512"
    record = json.loads(CliRunner().invoke(cli, args + ["--json"]).output)
    assert record["what_if"] == {"set": {"network.link_bytes_per_s": 7e8}, "option": {"max_pending": 512}}
    plain = CliRunner().invoke(cli, args[:8]).output
    assert "what-if" not in plain
    bounds = CliRunner().invoke(cli, ["bounds", "--shape", "2x1x1", "--set", "link_bytes_per_s=700e6"]).output
    assert bounds.splitlines()[1] == "  what-if: --set network.link_bytes_per_s=7e+08"


def test_gupsim_results_shows_whether_each_rate_is_steady(tmp_path):
    from click.testing import CliRunner

    from gupsim.app.cli import cli
    from gupsim.studies.store import ResultsStore

    store = ResultsStore(tmp_path / "st")
    store.write({"key": "short", "status": "ok", "error": "", "gups": 1.0, "steady_state": False})
    store.write({"key": "long", "status": "ok", "error": "", "gups": 2.0, "steady_state": True})
    lines = CliRunner().invoke(cli, ["results", str(store.path)]).output.splitlines()
    header = lines[0].split()
    assert header[header.index("gups") + 1] == "steady"
    cells = {line.split()[0]: line.split()[header.index("steady")] for line in lines[1:3]}
    assert cells == {"short": "no", "long": "yes"}


def test_the_link_figure_explains_white_cells_names_its_colours_and_takes_a_plane(figures, tmp_path):
    from click.testing import CliRunner

    from gupsim.app.cli import cli
    from gupsim.app.plots import plot_links

    src = [[x, y, z] for z in range(2) for y in range(2) for x in range(2)]
    links = {"src": src, "dst": [[1 - x, y, z] for x, y, z in src], "dim": [0] * 8,
             "dir": [1 if x == 0 else -1 for x, _, _ in src], "utilisation": [0.1 * (i + 1) for i in range(8)]}
    record = {"gups": 1.0, "machine": "bgl", "shape": "2x2x2", "topology": "mesh", "links": links}
    plot_links(record, tmp_path, z_slice=1)
    fig = figures[0]
    assert any("white: no such link" in t.get_text() for t in fig.texts)
    (busiest,) = [ax for ax in fig.axes if ax.get_title().startswith("busiest")]
    assert [t.get_text() for t in busiest.get_legend().get_texts()] == ["x link", "y link", "z link"]
    assert fig.axes[0].get_title() == "x+ links, z=1"
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(record))
    result = CliRunner().invoke(cli, ["plot", "links", str(path), "--z", "2", "--out", str(tmp_path / "p")])
    assert result.exit_code == 2 and result.output == "gupsim: error: --z 2: the machine has z = 0..1\n"
