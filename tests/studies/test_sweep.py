"""Sweeps: expansion, keys, Dask execution, the durable results store, resume after Ctrl-C or a killed worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from gupsim.config import REPO_ROOT, load_machine
from gupsim.base.errors import GupsimError
from gupsim.engines.run import simulate
from gupsim.studies.store import ResultsStore
from tests.studies.conftest import start_sweep_until_a_point_is_stored
from gupsim.studies import sweep as sweep_module
from gupsim.studies.sweep import EXPERIMENTS_DIR, expand, load_sweep, run_sweep, shape_for_nodes

GUPSIM = [sys.executable, "-m", "gupsim.app.cli"]


def _sweep_file(tmp_path: Path, grid: dict, name: str = "t", **top) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "machine": "bgl", "grid": grid, **top}))
    return path


def test_example_sweep_expands_to_its_grid_with_link_rates_scaled_from_the_machine():
    spec = load_sweep(str(EXPERIMENTS_DIR / "example.yaml"))
    points = expand(spec)
    grid = spec.grid
    assert len(points) == (len(grid["shape"]) * len(grid["link_bytes_per_s"]["times"]) * len(grid["algorithm"])
                           * len(grid["seed"]))
    assert len({p.key for p in points}) == len(points)
    base = load_machine("bgl").network.link_bytes_per_s
    rates = sorted({p.run.machine.network.link_bytes_per_s for p in points})
    assert rates == sorted(base * f for f in grid["link_bytes_per_s"]["times"])
    # Keys are stable: the same file expands to the same keys.
    assert [p.key for p in expand(load_sweep(str(EXPERIMENTS_DIR / "example.yaml")))] == [p.key for p in points]


def test_every_sweep_file_in_the_repository_is_valid():
    for path in sorted(EXPERIMENTS_DIR.glob("*.yaml")):
        assert expand(load_sweep(str(path)), str(path)), path


def test_times_scales_the_value_after_the_sweeps_own_set(tmp_path):
    path = _sweep_file(tmp_path, {"link_bytes_per_s": {"times": [1, 2]}}, set={"link_bytes_per_s": 100e6})
    rates = [p.run.machine.network.link_bytes_per_s for p in expand(load_sweep(str(path)))]
    assert rates == [100e6, 200e6]


def test_nodes_become_near_cubic_shapes():
    assert shape_for_nodes(512) == "8x8x8"
    assert shape_for_nodes(65536) == "64x32x32"
    assert shape_for_nodes(2048) == "16x16x8"
    assert shape_for_nodes(12) == "3x2x2"


def test_point_key_changes_with_the_seed_and_any_config_field(tmp_path):
    keys = {p.key for p in expand(load_sweep(str(_sweep_file(tmp_path, {"seed": [0, 1], "router_delay_ns": [100.0, 50.0]}))))}
    assert len(keys) == 4


def _small_sweep(tmp_path, **top):
    path = _sweep_file(tmp_path, {"shape": ["2x2x2", "4x2x2"], "algorithm": ["baseline", "one-packet"],
                                  "updates": [64], "seed": [0, 1]}, **top)
    spec = load_sweep(str(path))
    return spec, expand(spec)


def test_small_sweep_on_a_local_cluster_stores_every_point_and_skips_them_on_rerun(tmp_path):
    from dask.distributed import Client, LocalCluster

    spec, points = _small_sweep(tmp_path)
    store = tmp_path / "store"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        summary = run_sweep(spec, points, store, client=client, progress=False)
        assert (summary.done, summary.failed, summary.skipped) == (len(points), 0, 0)
        again = run_sweep(spec, points, store, client=client, progress=False)
        assert (again.done, again.skipped) == (0, len(points))
    table = pd.read_parquet(store / "results.parquet")  # plain pandas reads the compacted store
    assert sorted(table["key"]) == sorted(p.key for p in points)
    assert (table["status"] == "ok").all()
    assert {"config_json", "cfg.machine.network.link_bytes_per_s", "var.shape", "gups"} <= set(table.columns)
    # A stored row is the run's record: the same config and seed run here give the same numbers.
    p = points[-1]
    row = table.set_index("key").loc[p.key]
    _, record = simulate(p.run)
    assert row["gups"] == record["gups"] and row["events"] == record["events"]


def test_a_failing_point_is_stored_with_its_error_and_the_sweep_goes_on(tmp_path):
    from dask.distributed import Client, LocalCluster

    # routed with shared FIFOs on slow links deadlocks (tests/test_routed.py): a point that passes every
    # check at expansion and fails only when it runs; the same point on BG/L's links finishes.
    path = _sweep_file(tmp_path, {"shape": ["16x2x2"], "algorithm": ["routed"], "updates": [1024],
                                  "fifos": ["shared"], "link_bytes_per_s": [10937500.0, 175e6]})
    spec = load_sweep(str(path))
    points = expand(spec)
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster, Client(cluster) as client:
        summary = run_sweep(spec, points, tmp_path / "s", client=client, progress=False)
    assert (summary.done, summary.failed) == (1, 1)
    table = ResultsStore(tmp_path / "s").read()
    failed = table[table["status"] == "failed"].iloc[0]
    assert "deadlock" in failed["error"] and failed["var.link_bytes_per_s"] == 10937500.0
    fast = {p.key for p in points if p.run.machine.network.link_bytes_per_s == 175e6}
    assert ResultsStore(tmp_path / "s").done_keys() == fast


def test_a_killed_worker_loses_no_point(tmp_path):
    from dask.distributed import Client, LocalCluster

    spec, points = _small_sweep(tmp_path)
    killed = []

    def kill_a_worker(row, client):
        if not killed:
            pid = next(iter(client.run(os.getpid).values()))
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        summary = run_sweep(spec, points, tmp_path / "s", client=client, progress=False, on_row=kill_a_worker)
    assert killed
    assert (summary.done, summary.failed) == (len(points), 0)
    assert ResultsStore(tmp_path / "s").done_keys() == {p.key for p in points}


def test_ctrl_c_keeps_finished_points_and_the_sweep_resumes(tmp_path):
    # Points of 0.1-0.4 s each, so that the 11 left after the first one take seconds: with 256 updates on
    # 2x2x2 they took milliseconds, and on a loaded box the sweep once finished before Ctrl-C arrived.
    path = _sweep_file(tmp_path, {"shape": ["8x4x4", "8x4x2"], "algorithm": ["baseline", "routed"],
                                  "updates": [4096], "seed": [0, 1, 2]})
    store = tmp_path / "store"
    argv = GUPSIM + ["sweep", str(path), "--store", str(store), "--workers", "1", "--in-process", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 120
    while not list((store / "parts").glob("*.parquet")) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, f"the sweep was not interrupted (exit {proc.returncode}): {err}"
    assert "Traceback" not in err and "interrupted" in err
    finished = len(ResultsStore(store).done_keys())
    assert 1 <= finished < 12
    rerun = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{finished} already done, {12 - finished} run, 0 failed" in rerun.stdout
    assert len(ResultsStore(store).done_keys()) == 12


def test_ctrl_c_in_a_terminal_stops_worker_processes_without_their_tracebacks(tmp_path):
    # A terminal sends SIGINT to the whole process group: gupsim and its Dask worker processes.  Each
    # worker's asyncio runner had printed a KeyboardInterrupt traceback before gupsim's own line.
    path = _sweep_file(tmp_path, {"shape": ["8x4x4"], "algorithm": ["baseline", "routed"], "updates": [4096],
                                  "seed": [0, 1, 2]})
    proc = start_sweep_until_a_point_is_stored(path, tmp_path / "store", workers=1)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, f"the sweep was not interrupted (exit {proc.returncode}): {err}"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith("gupsim: interrupted: ")


def test_a_corrupt_store_is_one_line(tmp_path):
    store = ResultsStore(tmp_path / "s")
    (store.path / "results.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(GupsimError, match="results.parquet is corrupt"):
        store.read()


def test_sweep_and_results_and_plot_from_the_command_line(tmp_path, capsys):
    from gupsim.app.cli import main

    path = _sweep_file(tmp_path, {"shape": ["2x2x2", "4x2x2"], "updates": [64], "algorithm": ["routed"]},
                       record={"links": True, "histograms": True, "sample_interval_s": 2e-6})
    store = tmp_path / "store"
    with pytest.raises(SystemExit) as exc:
        main(["sweep", str(path), "--store", str(store), "--workers", "1", "--in-process", "--no-progress"])
        raise SystemExit(0)
    assert exc.value.code == 0
    assert "2 points: 0 already done, 2 run, 0 failed" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["results", str(store), "--csv", str(tmp_path / "r.csv")])
        raise SystemExit(0)
    assert "2 runs: 2 ok, 0 failed" in capsys.readouterr().out
    assert len(pd.read_csv(tmp_path / "r.csv")) == 2
    key = ResultsStore(store).read()["key"].iloc[0]
    for kind in ("scaling", "links", "histograms", "timeseries"):
        with pytest.raises(SystemExit):
            main(["plot", kind, str(store), "--key", key[:8], "--out", str(tmp_path / "plots")])
            raise SystemExit(0)
    made = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert made == sorted(f"store-{key[:8]}-{s}.{e}" for s in ("gups-scaling", "link-load", "bucket-sizes",
                                                                "throttling") for e in ("png", "svg"))


def test_scheduler_option_sends_points_to_an_existing_cluster(tmp_path, capsys):
    from dask.distributed import LocalCluster

    from gupsim.app.cli import main

    path = _sweep_file(tmp_path, {"shape": ["2x2x2"], "updates": [64], "seed": [0, 1]})
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        with pytest.raises(SystemExit) as exc:
            main(["sweep", str(path), "--store", str(tmp_path / "s"), "--scheduler", cluster.scheduler_address,
                  "--no-progress"])
            raise SystemExit(0)
        assert exc.value.code == 0
        assert cluster.status.name == "running"  # the sweep leaves someone else's cluster running
    assert "2 points: 0 already done, 2 run, 0 failed" in capsys.readouterr().out


def test_reading_a_store_leaves_a_write_in_flight_and_removes_a_stale_one(tmp_path):
    """A read (gupsim results, a plot, a dry run) had deleted every temporary part, so a sweep writing one at
    that moment failed on its rename and lost the point."""
    from gupsim.studies import store as store_module

    store = ResultsStore(tmp_path / "st")
    store.write({"key": "k1", "status": "ok", "error": "", "gups": 1.0})
    in_flight, stale = store.parts / ".k2-1.parquet.123.tmp", store.parts / ".k3-1.parquet.456.tmp"
    in_flight.write_bytes(b"being written")
    stale.write_bytes(b"left by a stopped write")
    old = time.time() - store_module.STALE_TMP_S - 1
    os.utime(stale, (old, old))
    assert list(store.read()["key"]) == ["k1"]
    assert in_flight.exists() and not stale.exists()


def test_a_store_reuses_only_the_rows_its_own_model_code_made(tmp_path):
    """A sweep had skipped points that older model code computed: the store then held that code's numbers."""
    from gupsim.studies.runpool import code_digest
    from gupsim.studies.sweep import RecordExtras, run_point

    store = ResultsStore(tmp_path / "st")
    for key, code in (("made-here", code_digest()), ("made-elsewhere", "0123456789abcdef")):
        store.write({"key": key, "status": "ok", "error": "", "gups": 1.0, "code": code})
    store.write({"key": "made-before-codes", "status": "ok", "error": "", "gups": 1.0})
    assert store.done_keys(code_digest()) == {"made-here"}
    assert store.done_keys() == {"made-here", "made-elsewhere", "made-before-codes"}  # every finished row
    _, points = _small_sweep(tmp_path)
    row = run_point(points[0].run, RecordExtras().model_dump(), points[0].key, points[0].varied)
    assert row["status"] == "ok" and row["code"] == code_digest()


def test_a_points_key_holds_its_cycle_tables_bytes(tmp_path):
    """Only the table's path had been in the keys of sweep points, kept runs and checkpoints, so an edited
    table reused the old table's numbers."""
    import shutil

    from gupsim.config import MACHINES_DIR
    from gupsim.studies.runpool import run_key
    from gupsim.studies.sweep import RecordExtras, point_key

    machine = yaml.safe_load((MACHINES_DIR / "bgl.yaml").read_text())
    table = tmp_path / "cycles.csv"
    shutil.copy(load_machine("bgl")._resolve(machine["cpu"]["raw_device_cycle_table"]), table)
    machine["cpu"]["raw_device_cycle_table"] = "cycles.csv"
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(machine))

    def keys():
        from gupsim.engines.run import make_run_config

        run = make_run_config(machine=str(tmp_path / "mine.yaml"), shape="2x2x2", algorithm="routed",
                              updates_per_process=8)
        return point_key(run, RecordExtras()), run_key(run, "code")

    before = keys()
    assert keys() == before
    table.write_text(table.read_text().replace("\n32,", "\n32,1", 1))  # one cost changed, the path is the same
    after = keys()
    assert after[0] != before[0] and after[1] != before[1]


def test_a_scaling_plot_of_two_sweep_files_in_one_store_draws_every_run(tmp_path, monkeypatch):
    """Each file's var.* columns are blank in the other's rows: the plot had dropped one file's runs, and
    with an engine varied in one file it had failed in sorted() (str < float), a traceback."""
    from click.testing import CliRunner

    from gupsim.app import plots
    from gupsim.app.cli import cli

    store = tmp_path / "store"
    for name, grid in (("a", {"shape": ["2x2x2"], "engine": ["auto", "simpy"], "updates": [64]}),
                       ("b", {"shape": ["2x2x2", "4x2x2"], "algorithm": ["routed"], "updates": [64]})):
        result = CliRunner().invoke(cli, ["sweep", str(_sweep_file(tmp_path, grid, name=name)), "--store", str(store),
                                          "--workers", "1", "--in-process", "--no-progress"])
        assert result.exit_code == 0, result.output
    drawn = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, *a, **_: drawn.append(fig) or [])
    plots.plot_scaling(ResultsStore(store).read(), tmp_path / "plots")
    points = sum(len(line.get_xdata()) for line in drawn[0].axes[0].lines if line.get_marker() not in ("None", None))
    assert points >= 1 + 1 + 2  # baseline auto and simpy at 8 nodes, routed at 8 and 16


def test_a_store_that_may_be_read_but_not_written(tmp_path, monkeypatch):
    """Permissions are checked through monkeypatching, as the suite may run as root, which ignores them.
    A read-only parts/ had made gupsim results fail in compaction (a PermissionError traceback); an
    unreadable one read as an empty store ('0 runs'); a sweep into it failed at its first point."""
    from click.testing import CliRunner

    from gupsim.app.cli import cli

    store = ResultsStore(tmp_path / "st")
    store.write({"key": "k1", "status": "ok", "error": "", "gups": 1.0})
    store.check_writable()  # a writable store passes
    real_unlink = Path.unlink

    def read_only(self, *args, **kwargs):
        if self.parent == store.parts and self.suffix == ".parquet":
            raise PermissionError(13, "Permission denied", str(self))
        return real_unlink(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", read_only)
    assert list(store.compact()["key"]) == ["k1"]
    assert list(store.compact()["key"]) == ["k1"]  # the part beside the compacted copy is not counted twice
    monkeypatch.undo()
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != store.parts)
    with pytest.raises(GupsimError, match=r"cannot read .*parts \(permission denied\)"):
        store.read()
    monkeypatch.undo()

    def denied(self):
        raise PermissionError(13, "Permission denied", str(self.parts))

    monkeypatch.setattr(ResultsStore, "check_writable", denied)
    result = CliRunner().invoke(cli, ["sweep", str(_sweep_file(tmp_path, {"shape": ["2x2x2"], "updates": [8]})),
                                      "--store", str(store.path), "--workers", "1", "--in-process", "--no-progress"])
    assert result.exit_code == 2 and result.stderr.strip() == f"gupsim: error: --store {store.path}: Permission denied"


def test_the_named_sweeps_are_package_data_and_an_unknown_name_lists_them():
    """They had been files of the source checkout only: an installed gupsim knew no named sweep."""
    from gupsim.data import DATA_DIR

    assert sweep_module.EXPERIMENTS_DIR == DATA_DIR / "sweeps"
    assert sweep_module.load_sweep("example").name == "example"
    with pytest.raises(GupsimError, match="unknown sweep 'nope'; valid choices: example, whatif-bgl-links"):
        sweep_module.load_sweep("nope")
