"""Documentation that is generated from the code must match it."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from pydantic import BaseModel

from gupsim.app import reference_docs
from gupsim.config import MACHINES_DIR, REPO_ROOT
from gupsim.base.errors import GupsimError
from gupsim.config.overrides import leaf_fields
from gupsim.app.reporting import machine_parameter_table


def test_model_doc_parameter_table_matches_the_machine_file():
    text = (REPO_ROOT / "docs" / "model.md").read_text()
    block = re.search(r"<!-- machine-parameters:bgl .*?-->\n(.*?)\n<!-- /machine-parameters -->", text, re.S)
    assert block, "docs/model.md lost its generated parameter table"
    # regenerate with: python -c "from gupsim.app.reporting import *; from gupsim.config import *;
    #   refresh_parameter_tables(REPO_ROOT / 'docs/model.md', MACHINES_DIR)"  (gupsim reproduce does it too)
    assert block.group(1).strip() == machine_parameter_table(MACHINES_DIR / "bgl.yaml").strip()


def test_parameter_table_has_every_field_with_a_source():
    table = machine_parameter_table(MACHINES_DIR / "bgl.yaml")
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert len(cells) == 3, row
        if cells[0] not in ("`name`", "`description`"):
            assert cells[2], f"no source for {row}"
    assert "`network.link_bytes_per_s`" in table and "`cpu.route_hop_cycles`" in table


def test_parameter_tables_refresh_for_hyphenated_machine_names(tmp_path):
    from gupsim.app.reporting import refresh_parameter_tables

    doc = tmp_path / "page.md"
    doc.write_text("<!-- machine-parameters:hypatia-dv (generated) -->\nstale\n<!-- /machine-parameters -->\n")
    refresh_parameter_tables(doc, MACHINES_DIR)
    assert "stale" not in doc.read_text()
    assert machine_parameter_table(MACHINES_DIR / "hypatia-dv.yaml").strip() in doc.read_text()


# --------------------------------------------------------------------------- the documentation site

def test_docs_site_builds_strict_without_warnings(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO_ROOT / "mkdocs.yml"), "-d", str(site)],
        capture_output=True, text=True, cwd=REPO_ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-3000:]
    config_page = (site / "reference" / "config" / "index.html").read_text()
    assert "gupsim:config-reference" not in config_page, "the hook did not fill the generated block"
    for path in leaf_fields():
        assert f"<code>{path}</code>" in config_page, f"{path} missing from the built configuration reference"
    assert (site / "validation" / "index.html").exists() and (site / "figures" / "bgl-figure3.png").exists()


def _leaf_models(model: type[BaseModel], prefix: str = ""):
    for name, field in model.model_fields.items():
        nested = reference_docs._nested_model(field)
        if nested is not None:
            yield from _leaf_models(nested, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", field


def test_every_config_field_is_in_the_reference_with_a_description():
    from gupsim.config import MachineConfig
    from gupsim.model.run_config import RunConfig

    text = reference_docs.config_reference()
    for path, field in _leaf_models(MachineConfig):
        if path == "source_path":
            continue
        assert f"| `{path}` |" in text, path
        assert field.description, f"MachineConfig field {path} has no description= (the docs reference shows it)"
    run_text = reference_docs.run_reference()
    for name, field in RunConfig.model_fields.items():
        if name != "machine":
            assert f"| `{name}` |" in run_text and field.description, name


def test_every_algorithm_and_option_is_in_the_reference():
    from gupsim.algorithms import algorithm_class, available_algorithms

    text = reference_docs.algorithm_options_reference()
    for name in available_algorithms():
        assert f"### `{name}`" in text
        for option in algorithm_class(name).Options.model_fields:
            assert f"| `{option}` |" in text, (name, option)


def test_every_command_is_in_the_cli_reference():
    from gupsim.app.cli import cli

    text = reference_docs.cli_reference()
    for name in cli.commands:
        assert f"### `gupsim {name}`" in text and f"Usage: gupsim {name}" in text


@pytest.mark.parametrize("name, unit", [("link_bytes_per_s", "bytes/s"), ("clock_hz", "Hz"), ("router_delay_ns", "ns"),
                                        ("test_cycles", "cycles"), ("chunk_bytes", "bytes"), ("send_share", "")])
def test_unit_is_read_from_the_field_name(name, unit):
    assert reference_docs.unit_of(name) == unit


def test_markers_are_replaced_and_an_unknown_one_is_one_line():
    out = reference_docs.render("a\n<!-- gupsim:bounds-example shape=4x4x2 -->\nb")
    assert "gupsim bounds --machine bgl --shape 4x4x2" in out and "CPU bound, eq. (1)" in out
    assert "not in this tree yet" in reference_docs.render("<!-- gupsim:optional-link path=no-such-page.md -->")
    assert reference_docs.render("<!-- gupsim:optional-link path=model.md up=1 -->") == "[`docs/model.md`](../model.md)"
    with pytest.raises(GupsimError, match="unknown generated block 'nope' .*valid: .*config-reference"):
        reference_docs.render("<!-- gupsim:nope -->", "x.md")


def test_the_add_an_algorithm_example_runs_and_matches_one_packet(bgl):
    """The how-to's example is real code: it must run, conserve updates, pass HPCC's check and equal one-packet."""
    from gupsim.algorithms import ALGORITHMS
    from gupsim.engines.run import make_run_config, simulate

    text = (REPO_ROOT / "docs" / "how-to" / "add-an-algorithm.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    try:
        exec(compile(code, "add-an-algorithm.md", "exec"), {})
        sim, record = simulate(make_run_config(machine=bgl, shape="2x2x2", algorithm="direct",
                                               updates_per_process=512, verify=True))
    finally:
        ALGORITHMS.pop("direct", None)
    assert record["updates_applied"] == 8 * 512 and sim.verify().passed
    _, reference = simulate(make_run_config(machine=bgl, shape="2x2x2", algorithm="one-packet",
                                            updates_per_process=512, verify=True))
    # Same packets at the same times; only the count of zero-length CPU timeouts differs.
    assert record["gups"] == reference["gups"] and record["sim_time_s"] == reference["sim_time_s"]


def test_the_tutorials_first_run_is_generated_and_is_what_gupsim_run_prints(bgl):
    """Section 2's output is a block that runs `gupsim run`; its deterministic lines must be the default run's."""
    from gupsim.app.cli import DEFAULTS
    from gupsim.app.first_run import RUN_PRECISION
    from gupsim.app.reporting import MEASURED_KEYS, SUMMARY_ROWS, format_record
    from gupsim.engines.run import make_run_config, simulate

    text = (REPO_ROOT / "docs" / "tutorial.md").read_text()
    assert "<!-- gupsim:run-example -->" in text
    assert "$ gupsim run\n" not in text, "docs/tutorial.md pastes a `gupsim run` output; use the run-example block"
    block = reference_docs.render("<!-- gupsim:run-example -->")
    shown = re.fullmatch(r"```text\n\$ gupsim run\n(.*)\n```", block, re.S).group(1).splitlines()
    _, record = simulate(make_run_config(machine=bgl, shape=DEFAULTS["shape"], algorithm=DEFAULTS["algorithm"],
                                         updates_per_process=DEFAULTS["updates"], seed=DEFAULTS["seed"],
                                         precision=RUN_PRECISION))
    fresh = format_record(record).splitlines()
    measured = tuple(label for key, label, _ in SUMMARY_ROWS if key in MEASURED_KEYS) + ("took",)
    assert len(shown) == len(fresh)
    for line, expected in zip(shown, fresh, strict=True):
        if not line.strip().startswith(measured):
            assert line == expected


def _table_rows(markdown: str) -> list[list[str]]:
    """The data rows of the one Markdown table in ``markdown``, as cells."""
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows[2:]]


def test_the_tutorials_what_if_table_is_generated_and_consistent():
    """Section 5's table: one row per rate, each share the simulated rate over the lower of the two bounds."""
    text = (REPO_ROOT / "docs" / "tutorial.md").read_text()
    marker = re.search(r"<!-- gupsim:whatif-example .*?-->", text)
    assert marker, "docs/tutorial.md lost its generated what-if table"
    args = dict(arg.split("=", 1) for arg in marker.group(0).split()[2:-1])
    rates = args["rates"].split(",")
    block = reference_docs.render(marker.group(0))
    # the loop shown above the table is the one that made it
    assert f"--shape {args['shape']} --algorithm {args['algorithm']} --updates {args['updates']} " in block
    rows = _table_rows(block)
    assert [row[0] for row in rows] == rates and len(rows) == 3
    for rate, network, cpu, bottleneck, gups, share, utilisation in rows:
        network, cpu, gups, share, utilisation = map(float, (network, cpu, gups, share, utilisation))
        lower = min(network, cpu)
        assert bottleneck == ("network" if network < cpu else "cpu"), rate
        # every value is rounded (bounds to 4 significant digits, gups to 4 decimals, share to 3)
        assert share == pytest.approx(gups / lower, abs=2e-3), rate
        assert 0 < utilisation <= 1 and 0 < gups
    # each row really ran at its rate: eq. (2) is proportional to the link rate, eq. (1) does not depend on it
    per_rate = [float(r[1]) / float(r[0]) for r in rows]
    assert max(per_rate) == pytest.approx(min(per_rate), rel=1e-3)
    assert len({r[2] for r in rows}) == 1


@pytest.mark.parametrize("page, extra", [("tutorial.md", ()), ("how-to/add-an-algorithm.md", ("direct",))])
def test_pasted_algorithm_lists_are_the_registry(page, extra):
    """An unknown --algorithm prints the registered names; a page that shows that error must show them all."""
    from gupsim.algorithms import available_algorithms

    text = (REPO_ROOT / "docs" / page).read_text()
    shown = re.findall(r"(?:valid choices|algorithms): ([\w, -]+)", text)
    assert shown, page
    for names in shown:
        assert names.strip().split(", ") == sorted([*available_algorithms(), *extra]), page


def _documented_errors() -> list[tuple[str, str, str]]:
    """(page, command, error line) of every '$ gupsim ...' a page shows followed by its 'gupsim: error:' line,
    for commands that name no file of the reader's own (a bad.yaml)."""
    found = []
    for page in sorted((REPO_ROOT / "docs").rglob("*.md")) + [REPO_ROOT / "README.md"]:
        lines = page.read_text().splitlines()
        for command, shown in zip(lines, lines[1:]):
            if command.startswith("$ gupsim ") and shown.startswith("gupsim: error: ") and ".yaml" not in command:
                found.append((str(page.relative_to(REPO_ROOT)), command.removeprefix("$ gupsim ").split("  #")[0],
                              shown))
    return found


def test_the_pages_find_their_error_examples():
    assert len(_documented_errors()) >= 2  # the tutorial's two


@pytest.mark.parametrize("page, command, shown", _documented_errors())
def test_a_documented_error_line_is_the_one_the_command_prints(page, command, shown):
    """The tutorial's --set line had gone stale when the rate floor changed (it said 'greater than 0')."""
    import shlex

    from click.testing import CliRunner

    from gupsim.app.cli import cli

    result = CliRunner().invoke(cli, shlex.split(command))
    assert result.exit_code == 2, (page, command, result.output)
    assert result.stderr.strip() == shown, page


def _shell_lines(page) -> list[str]:
    """The lines of a page's bash blocks."""
    blocks = re.findall(r"```bash\n(.*?)```", page.read_text(), re.S)
    return [line for block in blocks for line in block.splitlines()]


def test_the_tutorial_activates_the_venv_before_its_first_bare_gupsim():
    """A fresh shell has no gupsim on PATH: the tutorial's bare commands failed until the venv was activated."""
    lines = _shell_lines(REPO_ROOT / "docs" / "tutorial.md")
    activate = lines.index("source .venv/bin/activate")
    first_bare = next(i for i, line in enumerate(lines) if line.startswith(("gupsim ", "$ gupsim ")))
    assert activate < first_bare


def test_the_readme_examples_write_under_results_or_tmp():
    """Example outputs had landed in the checkout's root (rec.json, state.npz), outside what git ignores."""
    lines = _shell_lines(REPO_ROOT / "README.md")
    outputs = [m.group(1) for line in lines
               for m in re.finditer(r"(?:>|--checkpoint|--csv|--parquet|--store|--out)\s+(\S+)", line.split("  #")[0])]
    assert len(outputs) >= 4
    assert [p for p in outputs if not p.startswith(("results/", "/tmp/"))] == []


def test_the_readme_lists_kept_runs_from_the_folder_it_reproduced_into():
    """`gupsim runs` right after `reproduce ... --out /tmp/r` looked in results/runs and failed."""
    lines = [line.split("  #")[0] for line in _shell_lines(REPO_ROOT / "README.md")]
    runs = next(i for i, line in enumerate(lines) if " runs" in line and "gupsim runs" in line)
    reproduce = max(i for i in range(runs) if "gupsim reproduce" in lines[i])
    out = re.search(r"--out (\S+)", lines[reproduce])
    assert out and f"--out {out.group(1)}" in lines[runs]


def test_the_how_tos_local_only_example_runs_as_the_page_says():
    """The add-an-algorithm page's toy algorithm is code a reader copies: it must run, at the CPU bound the
    page derives (8 processes x 700 MHz / (18 + 86) cycles on 2x2x2)."""
    import re

    from gupsim.algorithms.base import ALGORITHMS
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config, simulate

    text = (REPO_ROOT / "docs" / "how-to" / "add-an-algorithm.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "class LocalOnly" in b)
    try:
        exec(code, {})
        _, record = simulate(make_run_config(machine=load_machine("bgl"), shape="2x2x2", algorithm="local-only",
                                             updates_per_process=512))
    finally:
        ALGORITHMS.pop("local-only", None)
    assert record["updates_applied"] == record["alg_local_updates"] == 8 * 512
    assert record["gups"] == pytest.approx(8 * 700e6 / (18 + 86) / 1e9, rel=1e-6)


def test_no_tracked_text_file_keeps_a_merge_conflict_marker():
    """A merge resolved in a hurry can leave ``<<<<<<<``/``>>>>>>>`` lines that neither Python nor the strict
    docs build notices in Markdown; this catches them in every tracked text file."""
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.yaml", "*.toml", "*.csv", "*.cfg", "*.ipynb"],
                           cwd=REPO_ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    marked = [name for name in files.stdout.split()
              if re.search(r"^(<{7}|>{7}) ", (REPO_ROOT / name).read_text(errors="replace"), re.M)]
    assert not marked, f"merge conflict markers in {marked}"


def test_ci_runs_exactly_the_readme_s_second_command():
    """`.ci/run` is the README's test command, install included, so what CI proves is what a user types."""
    commands = [line for line in _shell_lines(REPO_ROOT / "README.md") if line.startswith("python3 -m venv")]
    assert len(commands) == 2
    ci_lines = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    assert ci_lines[-1] == commands[1]
    assert commands[0].split(" && ")[:2] == commands[1].split(" && ")[:2]


def test_bgp_rows_add_refuses_what_is_not_a_planned_row_s_record_in_one_line(tmp_path):
    """``docs/figures/bgp_rows.py --add`` caches a record made elsewhere only if its configuration is a planned
    row's: a file that is not a record, or a record of another run, is refused in one line and the cache is left
    as it was."""
    import json

    script = REPO_ROOT / "docs" / "figures" / "bgp_rows.py"
    cache = REPO_ROOT / "docs" / "research" / "data" / "bgp_rows.jsonl"
    before = cache.read_bytes()
    cut, other = tmp_path / "cut.json", tmp_path / "other.json"
    cut.write_text('{"gups": 1.0, "con')
    other.write_text(json.dumps({"gups": 1.0, "wall_s": 1.0, "config": {"shape": "4x4x4"}}))
    for path, says in ((cut, "not a finished run's record"), (other, "not a planned row's configuration")):
        out = subprocess.run([sys.executable, str(script), "--add", str(path)], capture_output=True, text=True)
        assert out.returncode == 2
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{path}: {says}")
    assert cache.read_bytes() == before
