"""Bad input at the command line and in sweep files: one line ``gupsim: error: ...``, exit 2, no traceback.

Each test here is a case an audit found giving a traceback, a four-line click usage error, a silent
default, a hang or an out-of-memory kill (tests/test_bad_input.py fuzzes machine files and stores).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gupsim.app.cli import cli
from gupsim.config import MACHINES_DIR
from gupsim.base.errors import GupsimError


def _invoke(*argv: str):
    return CliRunner().invoke(cli, list(argv))


def _one_error_line(result, *fragments: str) -> str:
    """Assert the contract: exit 2, exactly one line on stderr, ``gupsim: error:`` first; return it."""
    lines = result.stderr.splitlines()
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert len(lines) == 1 and lines[0].startswith("gupsim: error: "), result.stderr
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _sweep(tmp_path: Path, grid: dict, **top) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "machine": "bgl"} | top | {"grid": grid}))
    return str(path)


def _dry_run(tmp_path: Path, grid: dict, **top):
    return _invoke("sweep", _sweep(tmp_path, grid, **top), "--store", str(tmp_path / "st"), "--dry-run")


LINKS = {"src": [[0, 0, 0], [1, 0, 0]], "dst": [[1, 0, 0], [0, 0, 0]], "dim": [0, 0], "dir": [1, -1],
         "utilisation": [0.5, 0.25]}


def _record(tmp_path: Path, **sections) -> str:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"gups": 1.0, "machine": "bgl", "shape": "2x1x1", **sections}))
    return str(path)


# --- 1. bounds are closed forms; per-node tables refuse what cannot fit -------------------------------------


def test_bounds_of_any_shape_a_run_takes_are_computed_without_per_node_arrays():
    result = _invoke("bounds", "--shape", "1000x1000x1000", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["nodes"] == 10**9


def test_bounds_refuse_a_shape_a_run_refuses():
    """Issue 48: bounds had answered for 4 x 10^20 nodes, a shape no run can address (silent-wrong)."""
    _one_error_line(_invoke("bounds", "--shape", "99999999999999999999x2x2"), "more than the 2,147,483,647")


def test_a_topology_builds_its_tables_only_when_asked_and_counts_links_in_closed_form():
    from gupsim.topology import make_topology

    for kind in ("torus", "mesh"):
        topo = make_topology(kind, "5x2x1")
        assert "_nbr" not in vars(topo)  # bounds, hops and link counts need no table
        links = topo.num_links
        assert links == len(topo.links())  # the closed form against the table


def test_per_node_tables_that_cannot_fit_are_refused_in_one_line(monkeypatch):
    from gupsim.base import memory
    from gupsim.topology import make_topology

    monkeypatch.setattr(memory, "available_bytes", lambda: 256 * 2**20)
    topo = make_topology("torus", "400x100x100")  # 4M nodes: about 640 MB of tables
    with pytest.raises(GupsimError, match=r"torus 400x100x100: .* GB, but only 0.2 GB are available") as info:
        topo.neighbor_array()
    assert "\n" not in str(info.value)


# --- 2. click's usage errors are one line too ---------------------------------------------------------------


@pytest.mark.parametrize("argv, fragment", [
    (["run", "--updates", "0"], "Invalid value for '--updates'"),
    (["run", "--seed", "x"], "Invalid value for '--seed'"),
    (["run", "--engine", "bogus"], "Invalid value for '--engine'"),
    (["bounds"], "Missing option '--shape'"),
    (["run", "--bogus"], "No such option"),
    (["nosuchcommand"], "No such command"),
])
def test_usage_errors_are_one_line_and_exit_2(argv, fragment):
    _one_error_line(_invoke(*argv), fragment)


def test_help_still_works():
    result = _invoke("run", "--help")
    assert result.exit_code == 0 and "--updates" in result.stdout


# --- 3. no NaN or infinity through float options ------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["run", "--sample-interval-s", "nan"], ["run", "--sample-interval-s", "inf"],
    ["run", "--checkpoint-every-s", "nan"], ["run", "--checkpoint-every-s", "inf"],
    ["bounds", "--shape", "8x8x8", "--bytes-per-update", "nan"],
    ["bounds", "--shape", "8x8x8", "--bytes-per-update", "inf"],
])
def test_float_options_refuse_nan_and_inf(argv):
    _one_error_line(_invoke(*argv), "is not a finite number")


# --- 4. output paths that cannot be written -----------------------------------------------------------------


@pytest.fixture()
def store(tmp_path):
    from gupsim.studies.store import ResultsStore

    path = tmp_path / "st"
    ResultsStore(path).write({"key": "k1", "status": "ok", "error": "", "gups": 1.0})
    return str(path)


def test_an_export_to_a_missing_folder_is_one_line(store, tmp_path):
    _one_error_line(_invoke("results", store, "--csv", str(tmp_path / "nowhere" / "x.csv")), "--csv ")
    _one_error_line(_invoke("results", store, "--parquet", str(tmp_path / "nowhere" / "x.pq")), "--parquet ")


def test_a_plot_or_reproduce_folder_under_a_file_is_one_line(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    record = _record(tmp_path, links=LINKS)
    _one_error_line(_invoke("plot", "links", record, "--out", str(a_file / "x")), f"--out {a_file / 'x'}: ")
    _one_error_line(_invoke("reproduce", "bgl-table2", "--quick", "--out", str(a_file / "x")), "--out ")


def test_a_sweep_store_or_checkpoint_under_a_file_is_one_line_naming_the_file(tmp_path):
    """Before any point runs (the sweep's store had failed in os.mkdir, a traceback) and before the run
    (a checkpoint's folder had failed at the run's end, or at its first save ten minutes in)."""
    a_file = tmp_path / "file"
    a_file.write_text("x")
    blocker = f"{a_file} is a file, not a folder"
    sweep = _sweep(tmp_path, {"shape": ["2x2x2"], "updates": [8]})
    _one_error_line(_invoke("sweep", sweep, "--store", str(a_file / "st"), "--no-progress"),
                    f"--store {a_file / 'st'}: {blocker}")
    _one_error_line(_invoke("run", "--shape", "2x2x2", "--algorithm", "routed", "--updates", "8",
                            "--checkpoint", str(a_file / "x.npz")), f"checkpoint {a_file / 'x.npz'}: {blocker}")


# --- 5. malformed record sections ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind, section, where", [
    ("links", {"links": "x"}, "links"),
    ("links", {"links": [{"a": 1}]}, "links"),
    ("links", {"links": {**LINKS, "dim": [0]}}, "links"),
    ("links", {"links": {**LINKS, "utilisation": [0.5, float("nan")]}}, "links.utilisation[1]"),
    ("histograms", {"histograms": [1]}, "histograms"),
    ("histograms", {"histograms": {"updates_per_packet": {"x": 1}, "updates_per_message": {}}},
     "histograms.updates_per_packet"),
    ("timeseries", {"timeseries": 5}, "timeseries"),
    ("timeseries", {"timeseries": {"t_s": [0.0], "sbf_interval": [0.0]}}, "timeseries"),
])
def test_malformed_record_sections_are_one_line_naming_file_and_section(tmp_path, kind, section, where):
    record = _record(tmp_path, **section)
    _one_error_line(_invoke("plot", kind, record, "--out", str(tmp_path / "p")), f"{record}: {where}")


# --- 6. node counts: computed directly, absurd ones refused -------------------------------------------------


def _old_shape_for_nodes(nodes: int) -> str:
    """The search shape_for_nodes made before it looked at divisors only: the answers must not change."""
    best = None
    for z in range(1, round(nodes ** (1 / 3)) + 2):
        if nodes % z:
            continue
        for y in range(z, math.isqrt(nodes // z) + 1):
            if (nodes // z) % y == 0:
                dims = (nodes // z // y, y, z)
                if best is None or max(dims) / min(dims) < max(best) / min(best):
                    best = dims
    return "x".join(map(str, best))


def test_shape_for_nodes_is_unchanged_fast_and_bounded():
    from gupsim.studies.sweep import MAX_NODES, shape_for_nodes

    for n in [*range(2, 400), 720720, 2**20, 3**10]:
        assert shape_for_nodes(n) == _old_shape_for_nodes(n), n
    assert shape_for_nodes(10**12) == "10000x10000x10000"  # the old loop took minutes here
    with pytest.raises(GupsimError, match="more than any machine gupsim can simulate"):
        shape_for_nodes(MAX_NODES + 1)


def test_a_sweep_of_absurd_node_counts_is_one_line(tmp_path):
    _one_error_line(_dry_run(tmp_path, {"nodes": [10**18]}), "point nodes=1000000000000000000",
                    "more than any machine")


# --- 7. seeds -----------------------------------------------------------------------------------------------


def test_a_seed_too_large_fails_the_validation(tmp_path):
    _one_error_line(_dry_run(tmp_path, {"seed": [99999999999999999999]}), "point seed=99999999999999999999")


def test_a_failed_row_with_a_huge_seed_is_still_stored(tmp_path):
    from gupsim.config import load_machine
    from gupsim.engines.run import make_run_config
    from gupsim.studies.store import ResultsStore, failed_row

    cfg = make_run_config(machine=load_machine("bgl"), shape="2x2x2", algorithm="baseline",
                          updates_per_process=64, seed=10**20)
    store = ResultsStore(tmp_path / "st")
    store.write(failed_row("k", cfg, {"seed": 10**20}, "GupsimError: too far"))
    table = store.compact()
    assert list(table["status"]) == ["failed"] and str(table["seed"][0]) == str(10**20)


# --- 8. every point is validated as gupsim run would -------------------------------------------------------


@pytest.mark.parametrize("machine, grid, fragment", [
    ("hypatia-dv", {"engine": ["fast"], "algorithm": ["dv"]}, "engine fast: no fast kernel"),
    ("bgl", {"updates": [2**63]}, "runs past rank 0's HPCC slice"),
    ("bgl", {"nodes": [10**9]}, "GB are available"),
])
def test_points_that_cannot_run_fail_the_dry_run(tmp_path, machine, grid, fragment):
    _one_error_line(_dry_run(tmp_path, grid, machine=machine), fragment)


def test_telemetry_on_the_fast_engine_fails_the_dry_run(tmp_path):
    """The line names what a sweep file calls it (record keys) as well as gupsim run's flags."""
    _one_error_line(_dry_run(tmp_path, {"engine": ["fast"]}, record={"links": True}),
                    "needs the SimPy engine", "record keys", "engine to simpy or auto")


SWITCHED = [("hypatia-ib", "baseline", "fat-tree"), ("hypatia-dv", "dv", "data-vortex")]


@pytest.mark.parametrize("machine, algorithm, network", SWITCHED)
@pytest.mark.parametrize("flag, key", [("--links", "record.links"),
                                       ("--sample-interval-s", "record.sample_interval_s")])
@pytest.mark.parametrize("engine", [[], ["--engine", "fast"]])
def test_telemetry_a_switched_network_cannot_give_is_refused_before_the_run(machine, algorithm, network, flag, key,
                                                                            engine):
    """It had been a traceback (AttributeError) after the whole run.  With ``--engine fast`` the line had said
    to use SimPy, whose run was then refused with this line."""
    argv = ["run", "--machine", machine, "--algorithm", algorithm, "--shape", "2x2x2", "--updates", "64", *engine,
            flag]
    line = _one_error_line(_invoke(*argv, *(["1e-6"] if flag == "--sample-interval-s" else [])),
                           f"{flag} (a sweep's {key}) is not available on a {network} network (machine {machine})")
    assert "Error" not in line  # no exception's name or pydantic wording


@pytest.mark.parametrize("machine, algorithm, network", SWITCHED)
def test_links_on_a_switched_network_fail_the_dry_run(tmp_path, machine, algorithm, network):
    """The dry run had listed the point as fine and the real sweep stored it as failed."""
    result = _dry_run(tmp_path, {"algorithm": [algorithm], "shape": ["2x2x2"], "updates": [64]},
                      machine=machine, record={"links": True})
    _one_error_line(result, f"point algorithm={algorithm}", f"is not available on a {network} network")


def test_a_record_whose_histograms_are_empty_is_one_line(tmp_path):
    """Such records (BG/P, the switched fabrics) had been drawn as empty axes, exit 0."""
    record = _record(tmp_path, histograms={"updates_per_packet": {}, "updates_per_message": {}})
    _one_error_line(_invoke("plot", "histograms", record, "--out", str(tmp_path / "p")),
                    f"{record}: histograms.updates_per_packet: empty: no packet was counted")
    assert not list((tmp_path / "p").glob("*"))  # nothing drawn


def test_telemetry_on_the_fast_engine_is_refused_by_gupsim_run():
    _one_error_line(_invoke("run", "--shape", "4x4x4", "--updates", "8", "--engine", "fast", "--links"),
                    "needs the SimPy engine", "--links")


# --- 9. smaller things --------------------------------------------------------------------------------------


def test_top_level_help_gives_whole_summaries():
    out = _invoke("--help").stdout
    assert "CPU bound (eq. 1) and network bound (eq. 2)" in " ".join(out.split())
    assert "experiments" in _invoke("list", "--help").stdout


def test_key_is_never_ignored(tmp_path, store):
    """scaling draws the runs whose key starts with --key; a JSON record has no keys to choose from."""
    _one_error_line(_invoke("plot", "scaling", store, "--key", "zz", "--out", str(tmp_path / "p")),
                    "no ok run has a key starting with 'zz'")
    record = _record(tmp_path, links=LINKS)
    _one_error_line(_invoke("plot", "links", record, "--key", "k1", "--out", str(tmp_path / "p")), "not a store")


def test_a_folder_that_is_not_a_store_says_so(tmp_path):
    (tmp_path / "plain").mkdir()
    _one_error_line(_invoke("results", str(tmp_path / "plain")), "not a results store")


def test_a_machine_path_without_yaml_says_no_machine_and_no_file(tmp_path):
    line = _one_error_line(_invoke("run", "--machine", "m/noext"))
    assert "no machine named 'm/noext'" in line and "no file m/noext" in line


def test_a_relative_machine_path_in_a_sweep_is_read_beside_the_sweep_file(tmp_path, monkeypatch):
    machine = yaml.safe_load((MACHINES_DIR / "bgl.yaml").read_text())
    (tmp_path / "machines").mkdir()
    (tmp_path / "machines" / "mine.yaml").write_text(yaml.safe_dump(machine))
    sweep = _sweep(tmp_path, {"shape": ["2x2x2"]}, machine="machines/mine.yaml")
    monkeypatch.chdir(MACHINES_DIR)  # anywhere but the sweep's folder
    result = _invoke("sweep", sweep, "--store", str(tmp_path / "st"), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "1 points, 1 to run" in result.stdout


def test_an_algorithm_on_a_network_it_does_not_run_on_fails_the_dry_run(tmp_path):
    _one_error_line(_dry_run(tmp_path, {"algorithm": ["dv"]}), "point algorithm=dv: algorithm dv does not run on")


def test_an_ambiguous_bare_machine_key_in_a_sweep_names_the_candidates(tmp_path):
    # header_bytes is both mpi.header_bytes and dma.header_bytes: --set says so, and so must a sweep grid
    line = _one_error_line(_dry_run(tmp_path, {"header_bytes": [1]}), "grid.header_bytes: ambiguous")
    assert "mpi.header_bytes" in line and "dma.header_bytes" in line


@pytest.mark.parametrize("name", ["../../elsewhere", "a/b", "my sweep", ".hidden", ""])
def test_a_sweep_name_that_is_not_a_plain_file_name_is_one_line(tmp_path, name):
    """The name makes the default store, results/<name>.store: '../x' would have put it outside results/."""
    line = _one_error_line(_dry_run(tmp_path, {"shape": ["2x2x2"]}, name=name), "s.yaml: name: ")
    assert "Value error" not in line


def test_a_verify_table_that_cannot_fit_is_refused_by_the_estimate():
    """It had reached NumPy: 'Unable to allocate 8.00 TiB', a traceback."""
    _one_error_line(_invoke("run", "--shape", "2x2x2", "--updates", "64", "--log2-table-size", "40", "--verify"),
                    "--verify's table of 1,099,511,627,776 words) needs about", "a smaller --log2-table-size")


def test_times_factors_must_be_finite(tmp_path):
    """An infinite factor on an integer field had been an OverflowError from int(inf)."""
    for key in ("link_buffer_chunks", "link_bytes_per_s"):
        _one_error_line(_dry_run(tmp_path, {key: {"times": [float("inf")]}}),
                        f"grid.{key}.times: expected a list of positive, finite factors")


@pytest.mark.parametrize("fields, first, second", [
    ({"grid": {"updates": [64], "updates_per_process": [128]}}, "grid.updates", "grid.updates_per_process"),
    ({"grid": {"link_bytes_per_s": [1e8], "network.link_bytes_per_s": [2e8]}},
     "grid.link_bytes_per_s", "grid.network.link_bytes_per_s"),
    ({"grid": {"shape": ["2x2x2"]}, "set": {"link_bytes_per_s": 1e8, "network.link_bytes_per_s": 2e8}},
     "set.link_bytes_per_s", "set.network.link_bytes_per_s"),
])
def test_two_spellings_of_one_field_in_a_sweep_are_refused(tmp_path, fields, first, second):
    """One of them had silently won, and the store recorded both as varied."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "machine": "bgl"} | fields))
    _one_error_line(_invoke("sweep", str(path), "--store", str(tmp_path / "st"), "--dry-run"),
                    f"{first} and {second} name the same field; give it once")


def test_a_flag_given_twice_for_one_field_is_refused_not_overwritten(tmp_path, store):
    run = ("run", "--shape", "2x2x2", "--updates", "8")
    _one_error_line(_invoke(*run, "--option", "max_pending=1", "--option", "max_pending=2"),
                    "--option max_pending is given twice")
    _one_error_line(_invoke(*run, "--set", "link_bytes_per_s=175e6", "--set", "network.link_bytes_per_s=1e6"),
                    "--set link_bytes_per_s=175e6 and --set network.link_bytes_per_s=1e6 name the same field")
    _one_error_line(_invoke(*run, "--option", "nokey"), "expected KEY=VALUE, e.g. --option max_pending=512")
    both = str(tmp_path / "out.csv")
    _one_error_line(_invoke("results", store, "--csv", both, "--parquet", both), "--csv and --parquet both name")
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("machine, grid, fragment", [
    ("bgl", {"algorithm": ["routed"], "option.bucket_capacity": [100000]}, "exceeds the 1024 pending updates"),
    ("bgl", {"algorithm": ["routed"], "option.software_header_bytes": [100000]}, "leaves no room for an update"),
    ("bgl", {"algorithm": ["one-packet"], "option.payload_bytes": [10000]}, "does not fit one packet"),
    ("bgp", {"algorithm": ["one-packet"], "option.payload_bytes": [241]}, "(at most 240 bytes on this machine)"),
    ("bgl", {"algorithm": ["routed-split"]}, "router_cores=1 leaves no worker core"),
    ("hypatia-dv", {"algorithm": ["dv"], "shape": ["4x1x1"], "option.send_threads": [100]},
     "send_threads=100 leaves no core to apply updates"),
])
def test_an_algorithms_own_checks_fail_the_dry_run(tmp_path, machine, grid, fragment):
    """The dry run had listed these as fine; every run then failed with the line gupsim run gives up front."""
    _one_error_line(_dry_run(tmp_path, {"shape": ["2x2x2"]} | grid, machine=machine), "point ", fragment)


def test_an_infinite_sample_interval_fails_the_sweeps_validation(tmp_path):
    _one_error_line(_dry_run(tmp_path, {"shape": ["2x2x2"]}, record={"sample_interval_s": float("inf")}),
                    "record.sample_interval_s: Input should be a finite number")


@pytest.mark.parametrize("argv, reason", [
    (["--verify"], "which this run cannot use: verify keeps a real table"),
    (["--machine", "hypatia-dv", "--algorithm", "dv"], "which this run cannot use: no fast kernel for algorithm 'dv'"),
    (["--engine", "simpy"], "which this run cannot use: --engine simpy asks for SimPy"),
    (["--links"], "and --links, --histograms and --sample-interval-s need SimPy"),
])
def test_a_checkpoint_on_the_simpy_engine_gives_the_runs_own_reason(tmp_path, argv, reason):
    """The line had listed 'no telemetry options, and an algorithm with a fast kernel' whatever the cause."""
    _one_error_line(_invoke("run", "--shape", "2x2x2", "--updates", "8", "--checkpoint", str(tmp_path / "c.npz"),
                            *argv), f"--checkpoint needs the fast engine, {reason}")


def test_a_broken_kept_runs_folder_is_one_line_and_fresh_runs_anyway(tmp_path):
    """A file where reproduce keeps its runs (OUT/runs/records) had been a NotADirectoryError traceback."""
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / "records").write_text("not a folder")
    _one_error_line(_invoke("reproduce", "bgl-table4", "--quick", "--out", str(out)),
                    f"--out {out}: ", f"{out / 'runs' / 'records'}", "--fresh")
    assert _invoke("reproduce", "bgl-table4", "--quick", "--out", str(out), "--fresh").exit_code == 0
