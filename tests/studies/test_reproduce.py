"""Every reproduced table runs in CI at its reduced (--quick) size, with its stated targets."""

from __future__ import annotations

import pandas as pd
import pytest

from gupsim.app.cli import main
from gupsim.studies.validation import available_experiments, run_experiments, write_markdown
from tests.studies.conftest import check_page_lists_every_miss_with_its_explanation, \
    check_writes_reference_sim_and_error_columns


#: The experiment run once, in tests/studies/test_crayx1_hpcc.py, which applies this file's checks of every
#: experiment to it: at its quick size it takes about 15 s (its alltoall runs on the fast engine; 45 s on SimPy).
OWN_FILE = ("crayx1-hpcc",)


@pytest.fixture(scope="module")
def quick_results():
    names = [name for name in available_experiments() if name not in OWN_FILE]
    return {c.name: c for c in run_experiments(names, quick=True)}


@pytest.fixture(scope="module")
def quick_page(quick_results, tmp_path_factory):
    """docs/validation.md as ``gupsim reproduce all --quick`` writes it, written once for the tests that read
    it: writing it draws every table's figures, tens of seconds on a 2-core box."""
    page = tmp_path_factory.mktemp("docs") / "validation.md"
    write_markdown(list(quick_results.values()), page, "gupsim reproduce all --quick")
    return page.read_text()


def test_every_experiment_writes_reference_sim_and_error_columns(quick_results, tmp_path):
    assert sorted(quick_results) == sorted(set(available_experiments()) - set(OWN_FILE))
    for c in quick_results.values():
        check_writes_reference_sim_and_error_columns(c, tmp_path)


def test_table2_meets_its_targets_except_the_documented_row(quick_results):
    c = quick_results["bgl-table2"]
    misses = c.misses()
    assert [(key, col) for key, col, _, _ in misses] == [(64, "cpu_bound_gups")]
    assert (64, "cpu_bound_gups") in c.notes


def test_table3_bucket_size_within_5_percent_every_row(quick_results):
    c = quick_results["bgl-table3"]
    assert c.errors("mean_bucket_size").abs().max() < 0.05
    assert c.errors("mean_bucket_size").notna().all()
    assert c.frame["sim_gups"].notna().sum() >= 2  # the quick run still simulates the baseline


def test_table4_simulated_rows_meet_their_targets(quick_results):
    c = quick_results["bgl-table4"]
    simulated = c.frame["sim_gups"].notna()
    assert simulated.sum() >= 2
    for column, target in c.targets.items():
        errors = c.errors(column)[simulated].dropna()
        assert (errors.abs() <= target).all(), (column, errors.tolist())


def test_validation_page_lists_every_miss_with_its_explanation(quick_results, quick_page):
    check_page_lists_every_miss_with_its_explanation(list(quick_results.values()), quick_page)


def test_reproducing_one_table_refreshes_only_its_section(quick_results, quick_page, tmp_path):
    page = tmp_path / "validation.md"
    everything = list(quick_results.values())
    before = quick_page
    table2 = quick_results["bgl-table2"]
    stale = before.replace(table2.method.strip(), "STALE METHOD TEXT")
    assert stale != before
    page.write_text(stale)
    write_markdown([table2], page, "gupsim reproduce bgl-table2", refresh=True)
    after = page.read_text()
    assert "STALE METHOD TEXT" not in after
    assert all(c.title in after for c in everything)  # the other sections survive, in their order
    assert [line for line in after.splitlines() if line.startswith("## ")] == \
        [line for line in before.splitlines() if line.startswith("## ")]
    assert "_Reproduced by `gupsim reproduce bgl-table2` in" in after.split(f"## {table2.title}")[1]
    assert "Refreshed by" not in after  # the header is rebuilt, not appended to
    write_markdown([table2], page, "gupsim reproduce bgl-table2", refresh=True)
    assert page.read_text() == after  # refreshing twice changes nothing


def test_unknown_experiment_lists_the_valid_ones(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "bgl-tabel2"])
    assert exc.value.code == 2
    assert "valid choices: all, bgl-figure3, bgl-table2, bgl-table3, bgl-table4" in capsys.readouterr().err


def test_figure3_writes_png_and_svg(quick_results, tmp_path):
    paths = quick_results["bgl-figure3"].figures(tmp_path)
    assert sorted(p.suffix for p in paths) == [".png", ".svg"]
    assert all(p.stat().st_size > 5000 for p in paths)


def test_figures_are_byte_identical_when_drawn_again(quick_results, tmp_path):
    """Regenerating an unchanged result must not change a committed figure (no date, no random SVG ids)."""
    first = {p.name: p.read_bytes() for p in quick_results["bgl-figure3"].figures(tmp_path / "a")}
    again = {p.name: p.read_bytes() for p in quick_results["bgl-figure3"].figures(tmp_path / "b")}
    assert first == again
    assert b"<dc:date>" not in first["bgl-figure3.svg"]


def test_upc_simulated_rows_meet_their_target_and_the_limit_is_eq2(quick_results):
    c = quick_results["bgl-upc"]
    simulated = c.frame["sim_gups"].notna()
    assert simulated.sum() >= 1
    assert (c.errors("gups")[simulated].abs() <= c.targets["gups"]).all()
    limit = c.frame.set_index("processors").loc[131072, "sim_network_bound_gups"]
    assert limit == pytest.approx(2 * 65536 / 75 * (1 / 16) * 175e6 / 1e9)


def test_vnmode_co_processor_runs_are_table4s_rows():
    """bgl-vnmode asks the pool for Table 4's co-processor runs itself: the same configurations, so that
    kept runs and one pool serve both tables with one run each."""
    from gupsim.config import load_machine
    from gupsim.studies.validation import bgl_partition_shapes, load_experiment

    table4, vnmode = load_experiment("bgl-table4"), load_experiment("bgl-vnmode")
    shapes = bgl_partition_shapes()
    assert (table4.UPDATES, table4.QUICK_UPDATES) == (vnmode.UPDATES, vnmode.QUICK_UPDATES)
    for n in vnmode.FULL_SIZES + vnmode.QUICK_SIZES:
        assert vnmode.co_config(shapes[n], vnmode.UPDATES).model_dump_json() == \
            table4._config(load_machine("bgl"), shapes[n], table4.UPDATES).model_dump_json()


def test_vnmode_explains_a_gain_above_a_network_bound_row_from_the_simulated_row():
    from gupsim.studies.validation import load_experiment

    note = load_experiment("bgl-vnmode").gain_note
    values = {"vn_over_co_gups": 1.1, "sim_vn_over_co_gups": 1.69, "published_sbf_vn": 0.42,
              "sim_sbf_vn": 0.103, "sim_sbf_polled_vn": 0.31, "sim_sbf_co": 0.013, "sim_sbf_polled_co": 0.05,
              "published_sbf_co": 0.01, "sim_link_utilisation_vn": 0.516}
    text = note(pd.Series(values))
    assert "gains 1.69 with an SBF of 0.10 (0.31 with the spinning passes counted; co-processor mode 0.013 " \
           "and 0.05, published 0.01) and mean link utilisation 0.52" in text
    assert "not yet the limit" in text
    assert "not yet the limit" not in note(pd.Series(values | {"sim_vn_over_co_gups": 0.9}))  # below the published
    assert "round figure" in note(pd.Series(values | {"published_sbf_vn": float("nan")}))


def test_experiments_run_in_parallel_give_the_same_tables(quick_results):
    """``gupsim reproduce --jobs 2`` runs rows (tables that take a pool) and whole tables (the others) on
    Dask workers, a dependent table after its input; the numbers do not change."""
    from gupsim.studies.validation import load_experiment, takes_pool

    names = ["bgl-figure3", "bgl-vnmode", "bgl-table2", "bgp-fig2"]  # figure 3 needs tables 3 and 4
    assert [takes_pool(load_experiment(n)) for n in ("bgl-table4", "bgl-vnmode", "bgl-table2")] == [True, True, False]
    parallel = run_experiments(names, quick=True, jobs=2)
    done = [c.name for c in parallel]
    assert sorted(done) == sorted(names + ["bgl-table3", "bgl-table4"])
    assert done.index("bgl-table3") < done.index("bgl-figure3") and done.index("bgl-table4") < done.index("bgl-figure3")
    for c in parallel:
        pd.testing.assert_frame_equal(quick_results[c.name].frame, c.frame)


def test_table3_explains_every_simulated_row_that_misses_from_the_row_alone():
    import pandas as pd

    from gupsim.studies.validation import load_experiment

    mod = load_experiment("bgl-table3")
    frame = pd.DataFrame([
        {"nodes": 8192, "rel_err_gups": 0.12, "rel_err_cycles_per_update": -0.107, "model_cycles_per_update": 4879.0,
         "sim_vs_model_cycles_per_update": -0.028, "sim_send_blocking_factor": 0.2,
         "model_rel_err_cycles_per_update": -0.081},
        {"nodes": 16384, "rel_err_gups": 0.68, "rel_err_cycles_per_update": -0.41, "model_cycles_per_update": 5496.0,
         "sim_vs_model_cycles_per_update": -0.027, "sim_send_blocking_factor": 0.28,
         "model_rel_err_cycles_per_update": -0.389},
        {"nodes": 65536, "rel_err_gups": float("nan"), "rel_err_cycles_per_update": float("nan")},
    ])
    notes = mod.row_notes(frame, {"gups": 0.15, "cycles_per_update": 0.15})
    assert set(notes) == {(16384, "gups"), (16384, "cycles_per_update")}
    assert "5,496 cycles" in notes[(16384, "gups")] and "-38.9%" in notes[(16384, "gups")]


def test_a_stopped_reproduce_keeps_the_tables_it_finished(tmp_path, monkeypatch):
    """Each table lands as soon as it is done: a run that dies later keeps the finished ones on the page."""
    import types

    from gupsim.studies import validation

    real = validation.load_experiment

    def load(name):
        module = real(name)
        if name != "bgp-fig2":
            return module

        def reproduce(quick=False, inputs=None):
            raise KeyboardInterrupt  # the user stops the run while this table is still running

        return types.SimpleNamespace(reproduce=reproduce, NEEDS=())

    monkeypatch.setattr(validation, "load_experiment", load)
    page = tmp_path / "validation.md"
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "bgl-table2", "bgp-fig2", "--quick", "--docs", str(page), "--out", str(tmp_path)])
    assert exc.value.code == 130
    title = real("bgl-table2").reproduce(quick=True).title
    assert (tmp_path / "bgl-table2.csv").exists() and not (tmp_path / "bgp-fig2.csv").exists()
    text = page.read_text()
    assert f"## {title}" in text
    assert "_Reproduced by `gupsim reproduce bgl-table2 bgp-fig2 --quick` in" in text.split(f"## {title}")[1]


def test_sections_made_with_other_machine_files_are_marked(quick_results, tmp_path, monkeypatch):
    """A refresh keeps older sections, but the page names those made with other machine files."""
    from gupsim.studies import validation

    page = tmp_path / "validation.md"
    table2, fig2 = quick_results["bgl-table2"], quick_results["bgp-fig2"]
    write_markdown([table2, fig2], page, "gupsim reproduce all")
    assert validation.STALE not in page.read_text()
    monkeypatch.setattr(validation, "machine_files_digest", lambda: "0123456789")  # a machine file changed
    fresh = validation.Comparison(**{**table2.__dict__, "machines": "0123456789"})
    write_markdown([fresh], page, "gupsim reproduce bgl-table2", refresh=True)
    text = page.read_text()
    assert f"{validation.STALE} (today's: `0123456789`): {fig2.title}." in text
    assert "machine files `0123456789`" in text.split(f"## {table2.title}")[1]


def test_figure3_explains_its_misses_with_the_tables_row_notes():
    """Figure 3 shows Tables 3 and 4's GUPS, so a row it misses carries that table's explanation."""
    import types

    from gupsim.studies.validation import load_experiment

    carried = load_experiment("bgl-figure3").carried_notes
    t3 = types.SimpleNamespace(notes={(16384, "gups"): "baseline reason", (16384, "cycles_per_update"): "other",
                                      ("*", "gups"): ""})
    t4 = types.SimpleNamespace(notes={(65536, "gups"): "routed reason", (65536, "*"): "size note",
                                      (128, "*"): "only a size note"})
    notes = carried({"bgl-table3": t3, "bgl-table4": t4})
    assert notes == {(16384, "baseline_gups"): "baseline reason", (65536, "optimized_gups"): "routed reason",
                     (128, "optimized_gups"): "only a size note"}


def test_table4_compares_the_whole_machine_with_the_upc_run_on_the_same_torus_from_the_published_tables():
    from gupsim.config import load_machine
    from gupsim.studies.validation import load_experiment, reference_table

    table4 = load_experiment("bgl-table4")
    ref = reference_table("bgl_table4_routed.csv")
    upc = reference_table("bgl_upc_one_packet.csv").set_index("processors").loc[131072, "gups"]
    text = table4.same_torus_remark(ref, load_machine("bgl"))
    assert "64x32x32" in text and f"reached {upc} GUPS" in text
    ratio = float(text.split("carried ")[1].split("x more")[0])
    # computed, not written: a published whole-machine rate twice as high halves the ratio
    doubled = ref.assign(gups=ref["gups"].where(ref["nodes"] != 65536, 2 * ref["gups"]))
    again = table4.same_torus_remark(doubled, load_machine("bgl"))
    assert float(again.split("carried ")[1].split("x more")[0]) == pytest.approx(ratio / 2, abs=0.06)


def test_an_installed_gupsim_reproduces_into_out_only(tmp_path, monkeypatch, capsys):
    """From an installed package (no checkout with docs/ around it) reproduce writes its CSVs into --out and
    touches no page: it had written docs/validation.md and docs/model.md beside site-packages."""

    import gupsim.app.cli as cli

    monkeypatch.setattr(cli, "source_checkout", lambda: None)
    monkeypatch.setattr(cli, "write_markdown", lambda *a, **kw: pytest.fail(f"wrote a page: {a[1]}"))
    monkeypatch.setattr(cli, "refresh_parameter_tables", lambda *a: pytest.fail(f"refreshed {a[0]}"))
    main(["reproduce", "bgl-table2", "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert (tmp_path / "r" / "bgl-table2.csv").is_file()
    assert f"writing only into {tmp_path / 'r'}" in out


def test_the_checkout_is_told_from_an_installed_package(tmp_path, monkeypatch):
    import gupsim.data

    assert gupsim.data.source_checkout() == gupsim.data.REPO_ROOT  # the tests run from a checkout
    monkeypatch.setattr(gupsim.data, "REPO_ROOT", tmp_path)  # site-packages: other packages, no docs/model.md
    (tmp_path / "docs").mkdir()
    assert gupsim.data.source_checkout() is None


def test_runs_without_kept_runs_names_the_out_option(tmp_path, monkeypatch, capsys):
    """After ``reproduce ... --out DIR`` a bare ``gupsim runs`` looks in results/; the line says to pass --out."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["runs"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert "results/runs does not exist" in err[0] and "gupsim runs --out DIR" in err[0]
