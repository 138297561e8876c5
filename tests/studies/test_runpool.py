"""The run pools of gupsim.studies.runpool: the same records whether runs go one by one or to Dask workers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gupsim.config import load_machine
from gupsim.engines.run import make_run_config
from gupsim.studies.runpool import DaskPool, SerialPool, reset_peak_rss, run_cost
from tests.conftest import Stopped, count_loads, stop_after_saves

#: What differs between two runs of one configuration: how long it took (and so its speed) and its memory.
from gupsim.app.reporting import MEASURED_KEYS as MEASURED  # noqa: E402


def _configs():
    bgl = load_machine("bgl")
    return [make_run_config(machine=bgl, shape="4x4x2", algorithm="routed", updates_per_process=256),
            make_run_config(machine=bgl, shape="2x2x2", algorithm="baseline", updates_per_process=128),
            make_run_config(machine=bgl, shape="4x2x2", algorithm="one-packet", updates_per_process=64, seed=3)]


def _fails():
    raise ValueError("boom")


def _model(records: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(records).drop(columns=sorted(MEASURED))


def test_dask_pool_returns_the_serial_records_in_order_and_hands_errors_back():
    from gupsim.studies.cluster import open_client

    configs = _configs()
    serial = SerialPool().records(configs)
    client = open_client(None, 2, processes=False)
    try:
        pool = DaskPool(client, 2)
        parallel = pool.records(configs)
        with pytest.raises(ValueError, match="boom"):
            pool.call(1, _fails).result()
        pool.close()
    finally:
        client.close()
    assert [r["algorithm"] for r in parallel] == ["routed", "baseline", "one-packet"]
    pd.testing.assert_frame_equal(_model(parallel), _model(serial))


def _counted_run(config, cache_dir, code, threads=1):
    with open(f"{cache_dir}/calls", "a") as f:  # Dask pickles the task: count in a file
        f.write("run\n")
    return "run", {"gups": 1.0}


def test_dask_pool_runs_a_configuration_asked_for_by_two_tables_once(monkeypatch, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    import gupsim.studies.runpool as runpool
    from gupsim.studies.cluster import open_client

    monkeypatch.setattr(runpool, "cached_run", _counted_run)
    config = _configs()[0]
    client = open_client(None, 2, processes=False)
    try:
        pool = DaskPool(client, 2)
        pool.cache_dir = str(tmp_path)  # where _counted_run counts (no kept runs: cached_run is replaced)
        with ThreadPoolExecutor(2) as tables:
            first, second = tables.map(pool.records, [[config, config], [config]])
        pool.close()
    finally:
        client.close()
    assert (tmp_path / "calls").read_text() == "run\n"
    assert first == [{"gups": 1.0}] * 2 and second == [{"gups": 1.0}]
    first[0]["gups"] = 2.0
    assert second[0]["gups"] == 1.0  # each table gets its own copy


def test_run_cost_orders_by_processes_updates_and_distance():
    bgl, vn = load_machine("bgl"), load_machine("bgl", {"cpu.processes_per_node": 2})

    def cost(machine, shape, updates):
        return run_cost(make_run_config(machine=machine, shape=shape, algorithm="routed", updates_per_process=updates))

    assert cost(bgl, "8x8x8", 64) < cost(bgl, "16x8x8", 64) < cost(vn, "16x8x8", 64) < cost(vn, "16x8x8", 128)
    assert cost(bgl, "64x32x32", 4096) == pytest.approx(65536 * 4096 * 32)


def test_kept_runs_are_reused_only_for_the_same_configuration_and_code(tmp_path, monkeypatch):
    import gupsim.studies.runpool as runpool

    bgl = load_machine("bgl")
    config = make_run_config(machine=bgl, shape="2x2x2", algorithm="baseline", updates_per_process=64)
    first = SerialPool(tmp_path).records([config])[0]
    calls = []
    monkeypatch.setattr(runpool, "run", lambda c, checkpoint=None, threads=1: calls.append(c) or {"gups": -1.0})
    assert SerialPool(tmp_path).records([config]) == [first]  # kept: not run again, the same record
    assert calls == []
    other = make_run_config(machine=bgl, shape="2x2x2", algorithm="baseline", updates_per_process=64, seed=1)
    assert SerialPool(tmp_path).records([other]) == [{"gups": -1.0}]  # another configuration runs
    monkeypatch.setattr(runpool, "code_digest", lambda: "edited")
    assert SerialPool(tmp_path).records([config]) == [{"gups": -1.0}]  # other code runs again
    assert len(calls) == 2


def test_code_digest_follows_the_source():
    from gupsim.studies.runpool import code_digest

    assert code_digest() == code_digest() and len(code_digest()) == 16


@pytest.mark.slow  # every machine x algorithm x engine in a fresh process: about a minute and a half
def test_a_run_imports_no_module_left_out_of_the_code_digest():
    """The digest leaves out the presentation packages; that is safe only while no run can reach them."""
    import subprocess
    import sys

    from gupsim.studies.runpool import PACKAGE_DIR, PRESENTATION_PACKAGES

    script = """
import sys
from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, run
from gupsim.algorithms import available_algorithms
from gupsim.config import available_machines
ran = 0
for machine in available_machines():
    m = load_machine(machine)
    for algorithm in available_algorithms():
        for engine in ("simpy", "fast"):
            for shape in ("2x2x2", "8x1x1"):
                try:
                    run(make_run_config(machine=m, shape=shape, algorithm=algorithm, updates_per_process=16,
                                        engine=engine))
                    ran += 1
                except Exception:
                    pass  # combinations that do not exist: every run that does is what counts
print(ran)
print(" ".join(sorted(k for k in sys.modules if k.startswith("gupsim"))))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=PACKAGE_DIR.parent).stdout.split()
    ran, out = int(out[0]), out[1:]
    assert ran >= 20 and "gupsim.engines.fast.core" in out and "gupsim.engines.reference.switched_network" in out
    left_out = tuple(f"gupsim.{package}" for package in sorted(PRESENTATION_PACKAGES))
    assert left_out == ("gupsim.app", "gupsim.studies")
    assert not [m for m in out if m in left_out or m.startswith(tuple(p + "." for p in left_out))]


def test_the_code_digest_hashes_every_model_folder_and_no_presentation_one():
    """The digest follows the folders: a module added to a model package is hashed without being listed."""
    from gupsim.studies.runpool import PACKAGE_DIR, model_files

    folders = {path.relative_to(PACKAGE_DIR).parts[0] for path in model_files()}
    assert folders == {"__init__.py", "algorithms", "base", "config", "data", "engines", "model", "topology"}
    every = set(PACKAGE_DIR.rglob("*.py"))
    assert every - set(model_files()) == {p for p in every if p.relative_to(PACKAGE_DIR).parts[0] in ("app", "studies")}
    assert PACKAGE_DIR / "engines" / "fast" / "core.py" in model_files()


def test_a_pool_resumes_the_checkpoint_of_a_stopped_run_and_drops_other_codes(tmp_path, monkeypatch, caplog):
    import gupsim.studies.runpool as runpool
    from gupsim.engines.fast import driver

    stale = tmp_path / "checkpoints" / "0123456789abcdef-0123.npz"  # left by other code
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old state")
    config = make_run_config(machine=load_machine("bgl"), shape="4x4x2", algorithm="routed",
                             updates_per_process=256, engine="fast")
    uncut = SerialPool().records([config])
    SerialPool(tmp_path)  # a pool that keeps runs drops what other code left
    assert not stale.exists()

    monkeypatch.setattr(driver, "CHECKPOINT_EVERY_S", 0.0)
    monkeypatch.setattr(driver, "BATCH_EVENTS", 2000)
    stop_after_saves(monkeypatch, 3)
    with pytest.raises(Stopped), caplog.at_level("INFO", logger="gupsim.engines.fast.driver"):
        SerialPool(tmp_path).records([config])
    progress = [r.getMessage() for r in caplog.records if r.name == "gupsim.engines.fast.driver"]
    # one line per save but the stopped one (its process died in the save)
    assert len(progress) == 2 and all(" of 8,192 updates applied (" in line for line in progress)
    checkpoint = runpool.checkpoint_for(config, str(tmp_path), runpool.code_digest())
    assert checkpoint.path.exists()
    (stopped,) = runpool.unfinished_runs(tmp_path).to_dict("records")  # listed, read through the engine contract
    assert stopped["resumed"] and 0 < stopped["updates_applied"] < 8192 and stopped["events"] > 0
    loads = count_loads(monkeypatch)
    resumed = SerialPool(tmp_path).records([config])
    assert loads == [1] and not checkpoint.path.exists()
    pd.testing.assert_frame_equal(_model(resumed), _model(uncut))


def test_every_finished_run_is_one_log_line_saying_where_its_record_came_from(tmp_path, caplog):
    config = make_run_config(machine=load_machine("bgl", {"cpu.processes_per_node": 2}), shape="2x2x2",
                             algorithm="routed", updates_per_process=64)
    with caplog.at_level("INFO", logger="gupsim.studies.runpool"):
        SerialPool(tmp_path).records([config])
        SerialPool(tmp_path).records([config])
    lines = [r.getMessage() for r in caplog.records if r.name == "gupsim.studies.runpool"]
    assert len(lines) == 2
    assert lines[0].startswith("run done: routed on 2x2x2 (2 per node), 64 updates per process: ")
    assert lines[0].endswith("s of wall time (run)") and lines[1].endswith("(kept, reused)")


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="VmHWM is reset through Linux's clear_refs")
def test_reset_peak_rss_restarts_the_peak_from_the_current_memory():
    """What the pools call before each run, so that a worker's record is not its largest run so far."""
    from gupsim.engines.run import peak_rss_mb

    big = np.ones(300 * 2**20 // 8)  # 300 MB touched, then freed: an earlier, larger run of the same worker
    del big
    before = peak_rss_mb()
    reset_peak_rss()
    assert peak_rss_mb() < before - 200


def test_reset_peak_rss_does_not_count_an_earlier_run_left_as_garbage_in_reference_cycles():
    """A finished SimPy model is unreachable but cyclic: it holds its memory until a full collection."""
    import gc

    from gupsim.engines.run import peak_rss_mb

    class Node:  # a model's objects that refer to each other, as SimPy's environment and processes do
        pass

    gc.disable()  # so that nothing but reset_peak_rss collects the cycle
    try:
        reset_peak_rss()
        before = peak_rss_mb()
        a, b = Node(), Node()
        a.other, b.other, a.state = b, a, np.ones(200 * 2**20 // 8)  # 200 MB touched
        del a, b
        reset_peak_rss()
        assert peak_rss_mb() < before + 100
    finally:
        gc.enable()


def _fragment_then_reset() -> tuple[float, float]:
    """In a worker: the peak after freeing 2 M small objects of which every 1,000th lives on, as a SimPy
    run's events do beside the worker's own objects; and the peak before them."""
    from gupsim.engines.run import peak_rss_mb

    reset_peak_rss()
    before = peak_rss_mb()
    dead, alive = [], []
    for i in range(2_000_000):
        dead.append([i, i])  # about 100 bytes each: 200 MB of small objects
        if i % 1000 == 0:
            alive.append([i, i])
    del dead
    reset_peak_rss()
    return before, peak_rss_mb()


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="the peak restarts on Linux only")
def test_a_dask_worker_gives_back_small_objects_freed_around_ones_that_live_on():
    """pymalloc would keep every arena one live object pins: the worker's next record would count them."""
    from gupsim.studies.cluster import close_client, open_client

    client = open_client(None, 1, processes=True)
    try:
        before, after = client.submit(_fragment_then_reset, pure=False).result()
    finally:
        close_client(client)
    assert after < before + 60


def test_kept_runs_lists_each_kept_record_with_its_cost_and_whether_this_code_reuses_it(tmp_path, monkeypatch):
    import gupsim.studies.runpool as runpool
    from gupsim.studies.runpool import kept_runs, unfinished_runs

    config = _configs()[1]
    record = SerialPool(tmp_path).records([config])[0]
    table = kept_runs(tmp_path)
    assert len(table) == 1
    row = table.iloc[0]
    assert bool(row["reused"]) and row["code"] == runpool.code_digest()
    assert (row["algorithm"], row["shape"], row["updates_per_process"]) == ("baseline", "2x2x2", 128)
    assert row["events"] == record["events"] and row["wall_s"] == record["wall_s"]
    assert len(unfinished_runs(tmp_path)) == 0
    monkeypatch.setattr(runpool, "code_digest", lambda: "edited")
    assert not kept_runs(tmp_path)["reused"].any()  # other code's runs are listed, as not reused


def test_progress_lines_go_to_the_stderr_of_the_moment(monkeypatch):
    """The handler had kept the stream of the first command that made it (a test's CliRunner, closed since),
    so every later line printed '--- Logging error ---' instead."""
    import io
    import logging
    import sys

    from gupsim.studies.runpool import log_to_stderr

    logger = logging.getLogger("gupsim")
    monkeypatch.setattr(logger, "handlers", [])  # this test's handler goes with it
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    log_to_stderr()  # made while one command's stderr is `first` ...
    first.close()  # ... which is gone when the next command logs
    now = io.StringIO()
    monkeypatch.setattr(sys, "stderr", now)
    logger.info("run done: %s", "x")
    assert now.getvalue().endswith("run done: x\n")


def test_a_kept_run_is_not_reused_once_its_machines_cycle_table_is_edited(tmp_path, monkeypatch):
    """The kept run's key had held the table's path only: an edited table reused the old table's record."""
    import shutil

    import yaml

    import gupsim.studies.runpool as runpool
    from gupsim.config import MACHINES_DIR

    data = yaml.safe_load((MACHINES_DIR / "bgl.yaml").read_text())
    table = tmp_path / "cycles.csv"
    shutil.copy(load_machine("bgl")._resolve(data["cpu"]["raw_device_cycle_table"]), table)
    data["cpu"]["raw_device_cycle_table"] = "cycles.csv"
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(data))
    ran = []
    monkeypatch.setattr(runpool, "run", lambda config, checkpoint=None, threads=1: ran.append(1) or {"wall_s": 0.0, "gups": 1.0})

    def records():
        config = make_run_config(machine=str(tmp_path / "mine.yaml"), shape="2x2x2", algorithm="baseline",
                                 updates_per_process=8)
        return SerialPool(tmp_path / "runs").records([config])

    records()
    records()
    assert len(ran) == 1  # the same table: the kept record
    table.write_text(table.read_text().replace("\n32,", "\n32,1", 1))
    records()
    assert len(ran) == 2  # an edited table: run again


def test_an_unreadable_kept_run_is_run_again_with_one_line_not_a_traceback(tmp_path, caplog, recwarn):
    config = _configs()[1]
    first = SerialPool(tmp_path).records([config])[0]
    (kept,) = tmp_path.rglob("*.json")
    kept.write_bytes(kept.read_bytes()[:40])  # a disk filled while it was written
    caplog.clear()
    with caplog.at_level("INFO", logger="gupsim.studies.runpool"):
        again = SerialPool(tmp_path).records([config])[0]
    assert _model([again]).equals(_model([first]))
    assert not recwarn.list  # no warning with a traceback in it
    lines = [r.getMessage() for r in caplog.records if r.name == "gupsim.studies.runpool"]
    assert lines[0].startswith("kept run unreadable, dropped and run again: baseline on 2x2x2")
    assert str(kept) in lines[0]
    assert lines[1].endswith("(run again: its kept record was unreadable)")
    with caplog.at_level("INFO", logger="gupsim.studies.runpool"):
        SerialPool(tmp_path).records([config])
    assert caplog.records[-1].getMessage().endswith("(kept, reused)")  # the new record was kept
    kept.write_bytes(b"")
    from gupsim.studies.runpool import kept_runs

    table = kept_runs(tmp_path)
    assert len(table) == 0 and table.attrs["unreadable"] == 1  # counted, not listed as a run


def test_kept_runs_counts_a_file_whose_configuration_is_not_a_runs(tmp_path):
    """A kept file naming a configuration that is not one (edited by hand, another tool's file) had been a
    TypeError traceback in gupsim runs; it is counted as unreadable, not listed."""
    import json

    from gupsim.studies.runpool import kept_runs

    SerialPool(tmp_path).records([_configs()[1]])
    (kept,) = tmp_path.rglob("*.json")
    data = json.loads(kept.read_text())
    data["config"] = [1, 2]
    kept.write_text(json.dumps(data))
    table = kept_runs(tmp_path)
    assert len(table) == 0 and table.attrs["unreadable"] == 1


def test_no_kept_run_is_unpickled_a_planted_pickle_never_runs(tmp_path):
    """Issue 48: gupsim runs had unpickled joblib's output.pkl under OUT/runs, and a planted one ran its
    payload.  Kept runs are JSON now; a pickle there is counted, never opened."""
    import pickle

    from gupsim.studies.runpool import kept_runs

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    planted = tmp_path / "joblib" / "gupsim" / "x" / "0123"
    planted.mkdir(parents=True)
    (planted / "output.pkl").write_bytes(pickle.dumps(Payload()))
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "c-1.json").write_bytes(pickle.dumps(Payload()))  # a pickle under a JSON name
    SerialPool(tmp_path).records([_configs()[1]])
    table = kept_runs(tmp_path)
    assert not marker.exists()
    assert len(table) == 1 and table.attrs["unreadable"] == 1 and table.attrs["pickled"] == 1


def test_a_kept_run_is_reused_from_another_checkout_of_the_same_code(tmp_path, monkeypatch):
    """The key had held the machine file's absolute path, so a clone or a worktree re-ran every kept run."""
    import gupsim.studies.runpool as runpool
    from gupsim.studies.runpool import checkpoint_for, code_digest, run_key

    import shutil

    from gupsim.config import MACHINES_DIR

    config = _configs()[1]
    other = tmp_path / "clone" / "gupsim" / "data" / "machines"  # it names its table as package data
    other.mkdir(parents=True)
    shutil.copy(MACHINES_DIR / "bgl.yaml", other / "bgl.yaml")
    moved = make_run_config(machine=load_machine(str(other / "bgl.yaml")), shape=config.shape,
                            algorithm=config.algorithm, updates_per_process=config.updates_per_process)
    assert moved.machine.source_path != config.machine.source_path
    runs = tmp_path / "runs"
    assert run_key(moved, "c") == run_key(config, "c")
    assert checkpoint_for(moved, str(runs), "c").key == checkpoint_for(config, str(runs), "c").key
    first = SerialPool(runs).records([config])[0]
    monkeypatch.setattr(runpool, "run", lambda c, checkpoint=None, threads=1: pytest.fail("ran again"))
    assert SerialPool(runs).records([moved]) == [first]
    assert runpool.kept_runs(runs, code_digest())["reused"].tolist() == [True]


def test_a_kept_pool_runs_a_configuration_whose_engine_keeps_no_checkpoint(tmp_path):
    """SimPy keeps no checkpoint (its engine gives None): a kept pool runs it, keeps it, and reuses it."""
    config = make_run_config(machine="cray-x1", shape="2x1x1", algorithm="upc", updates_per_process=16,
                             algorithm_options={"window": 1})
    first = SerialPool(tmp_path).records([config])[0]
    assert first["engine"] == "simpy" and first["updates_applied"] == 8 * 16
    again = SerialPool(tmp_path).records([config])[0]
    assert json.dumps(again, sort_keys=True, default=str) == json.dumps(first, sort_keys=True, default=str)  # NaNs
