"""Issue 48's classes of hostile input, one test per class and command (and its neighbours): an output that
would destroy an input, a path that is not a regular file, YAML that never ends expanding, integers past
Python's digit limit or any plausible range, names and paths that name nothing, answers that are not whole
or not true, and signals.  Each had given a traceback, a hang, a crash, a wrong exit 0, or lost results.

The wider, slower sweep of generated cases is ``benchmarks/hostile/run_hostile.py``.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gupsim.app.cli import cli
from gupsim.config import MACHINES_DIR

GUPSIM = [sys.executable, "-m", "gupsim.app.cli"]
HUGE = str(2**70)


def _invoke(*argv: str):
    return CliRunner().invoke(cli, list(argv))


def _one_line(result, code: int = 2, *fragments: str) -> str:
    lines = result.stderr.splitlines()
    assert result.exit_code == code, (result.exit_code, result.output)
    assert len(lines) == 1 and lines[0].startswith("gupsim: error: "), result.stderr
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def store(tmp_path) -> Path:
    from gupsim.studies.store import ResultsStore

    path = tmp_path / "s.store"
    s = ResultsStore(path)
    for i in range(3):
        s.write({"key": f"k{i}", "status": "ok", "gups": 0.1 * i, "shape": "2x2x2"})
    s.compact()
    return path


# --------------------------------------------------------------- outputs never overwrite inputs


@pytest.mark.parametrize("option", ["--csv", "--parquet"])
@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "symlink"])
def test_results_refuses_to_export_over_its_own_store(store, tmp_path, option, through_link):
    table = store / "results.parquet"
    before = table.read_bytes()
    target = table
    if through_link:
        target = tmp_path / "link.csv"
        target.symlink_to(table)
    _one_line(_invoke("results", str(store), option, str(target)), 2, "which this command reads")
    assert table.read_bytes() == before
    assert _invoke("results", str(store)).exit_code == 0


def test_results_refuses_an_export_anywhere_inside_the_store(store):
    _one_line(_invoke("results", str(store), "--csv", str(store / "parts" / "x.csv")), 2, "is inside")


def test_an_export_is_written_whole_and_replaces_the_old_file(store, tmp_path):
    out = tmp_path / "t.csv"
    out.write_text("old")
    assert _invoke("results", str(store), "--csv", str(out)).exit_code == 0
    assert out.read_text().startswith("key,") and not list(tmp_path.glob(".t.csv.*"))


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    from gupsim.base.files import replaced_atomically

    out = tmp_path / "o.txt"
    out.write_text("whole")
    with pytest.raises(OSError):
        with replaced_atomically(out) as tmp:
            tmp.write_text("half")
            raise OSError(28, "No space left on device")
    assert out.read_text() == "whole" and list(tmp_path.iterdir()) == [out]


def test_runs_refuses_a_csv_inside_its_kept_runs(tmp_path):
    (tmp_path / "runs" / "records").mkdir(parents=True)
    _one_line(_invoke("runs", "--out", str(tmp_path), "--csv", str(tmp_path / "runs" / "records" / "a.csv")), 2,
              "is inside")


def test_plot_refuses_to_draw_over_its_source(tmp_path):
    record = tmp_path / "r.json"
    record.write_text(json.dumps({"gups": 1.0, "machine": "bgl", "shape": "2x1x1"}))
    _one_line(_invoke("plot", "links", str(record), "--out", str(record)), 2, "which this command reads")


def test_no_output_goes_into_gupsims_own_machine_files(tmp_path):
    _one_line(_invoke("run", "--shape", "2x2x2", "--updates", "8", "--checkpoint", str(MACHINES_DIR / "bgl.yaml")),
              2, "which this command reads")


# --------------------------------------------------------------- only regular files are read, and boundedly


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "fifo.yaml"
    os.mkfifo(path)
    return path


def test_a_named_pipe_as_the_machine_file_is_refused_without_opening_it(fifo):
    for command in (["run", "--updates", "8"], ["bounds"]):
        _one_line(_invoke(*command, "--shape", "2x2x2", "--machine", str(fifo)), 2, "a named pipe")


def test_a_named_pipe_or_a_device_as_a_sweep_file_or_record_is_refused(fifo):
    _one_line(_invoke("sweep", str(fifo), "--dry-run"), 2, "a named pipe")
    _one_line(_invoke("plot", "links", "/dev/zero"), 2, "a character device")
    _one_line(_invoke("plot", "histograms", "/dev/urandom"), 2, "a character device")


def test_reproduce_refuses_a_device_as_its_docs_page(tmp_path):
    _one_line(_invoke("reproduce", "bgl-table2", "--quick", "--out", str(tmp_path), "--docs", "/dev/full"), 2,
              "a character device")


def test_every_read_is_bounded(tmp_path):
    from gupsim.base.errors import GupsimError
    from gupsim.base.files import read_bytes

    big = tmp_path / "big"
    big.write_bytes(b"\0" * 2000)
    assert read_bytes(big, limit=2000) == b"\0" * 2000
    with pytest.raises(GupsimError, match="larger than"):
        read_bytes(big, limit=1999)


def test_a_cycle_table_of_gigabytes_is_refused_before_it_is_read(tmp_path):
    data = (MACHINES_DIR / "bgl.yaml").read_text()
    table = tmp_path / "zeros.csv"
    with open(table, "wb") as fh:  # sparse: 64 MB of NUL bytes that take no disk
        fh.truncate(64 * 2**20)
    import yaml

    machine = yaml.safe_load(data)
    machine["cpu"]["raw_device_cycle_table"] = "zeros.csv"
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(machine))
    _one_line(_invoke("bounds", "--shape", "2x2x2", "--machine", str(tmp_path / "m.yaml")), 2, "larger than")


# --------------------------------------------------------------- YAML cycles, integer strings, ranges


@pytest.mark.parametrize("text", ["loop: &l [*l]", "&r {a: *r}", "a: &m {b: [1, *m]}"])
def test_a_yaml_alias_cycle_is_refused(tmp_path, text):
    path = tmp_path / "c.yaml"
    base = (MACHINES_DIR / "bgl.yaml").read_text() + "\n" if text.startswith("loop") else ""
    path.write_text(base + text + "\n")
    for command in (["bounds", "--shape", "2x2x2", "--machine", str(path)], ["sweep", str(path), "--dry-run"]):
        _one_line(_invoke(*command), 2, "cycle")


@pytest.mark.parametrize("flag, value", [("--set", "link_bytes_per_s=&a [*a]"), ("--option", "bucket_size=&a [*a]")])
def test_a_yaml_alias_cycle_in_an_option_is_refused(flag, value):
    _one_line(_invoke("run", "--shape", "2x2x2", "--updates", "8", "--algorithm", "alltoall", flag, value), 2, "cycle")


@pytest.mark.parametrize("flag, key", [("--set", "clock_hz"), ("--option", "bucket_size")])
def test_an_integer_of_5000_digits_is_one_line(flag, key):
    _one_line(_invoke("run", "--shape", "2x2x2", "--updates", "8", "--algorithm", "alltoall", flag,
                      f"{key}={'9' * 5000}"), 2, "digits")


def test_an_integer_of_5000_digits_in_a_machine_file_is_one_line(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text((MACHINES_DIR / "bgl.yaml").read_text().replace("processes_per_node: 1",
                                                                     "processes_per_node: " + "9" * 5000))
    _one_line(_invoke("bounds", "--shape", "2x2x2", "--machine", str(path)), 2, "digits")


@pytest.mark.parametrize("machine, option", [("cray-x1", f"bucket_size={2**31}"), ("bgl", f"bucket_size={HUGE}"),
                                             ("bgl", f"bucket_size={2**20 + 1}")])
def test_absurd_bucket_sizes_are_refused(machine, option):
    _one_line(_invoke("run", "--machine", machine, "--shape", "2x2x2", "--updates", "8", "--algorithm", "alltoall",
                      "--option", option), 2, "bucket_size")


def test_every_integer_option_has_a_ceiling():
    _one_line(_invoke("run", "--shape", "2x2x2", "--updates", "8", "--algorithm", "upc", "--option",
                      f"window={2**40}"), 2, "2,147,483,647")


@pytest.mark.parametrize("argv", [["reproduce", "bgl-table2", "--jobs", HUGE], ["sweep", "x.yaml", "--workers", HUGE],
                                  ["reproduce", "bgl-table2", "--jobs", "100000"]])
def test_worker_counts_have_a_plausible_range(argv):
    _one_line(_invoke(*argv), 2, "1<=x<=1024")


@pytest.mark.parametrize("setting, fragment", [("processes_per_node=3", "not a mode of a torus node")])
def test_a_torus_node_runs_one_of_its_modes(setting, fragment):
    _one_line(_invoke("run", "--shape", "2x2x2", "--updates", "8", "--set", setting), 2, fragment)


@pytest.mark.parametrize("setting, fragment", [("processes_per_node=1000", "more than the endpoint's 8 cores"),
                                               ("memory_bytes_per_processor=1", "1048576")])
def test_nonsense_server_values_are_refused(setting, fragment):
    _one_line(_invoke("run", "--machine", "hypatia-ib", "--shape", "2x1x1", "--updates", "8", "--set", setting), 2,
              fragment)


# --------------------------------------------------------------- names and paths that name nothing


def test_reproduce_refuses_an_unknown_name_beside_all():
    _one_line(_invoke("reproduce", "all", "nosuch", "--quick"), 2, "unknown experiment 'nosuch'")


@pytest.mark.parametrize("argv", [["reproduce", "bgl-table2", "--out", ""], ["runs", "--out", ""],
                                  ["sweep", "x.yaml", "--store", ""], ["plot", "links", "r.json", "--out", ""],
                                  ["results", "s", "--csv", ""], ["reproduce", "bgl-table2", "--docs", " "]])
def test_an_empty_path_is_refused(argv):
    _one_line(_invoke(*argv), 2, "an empty path")


# --------------------------------------------------------------- exit 0 only for a whole, true answer


def test_a_records_json_is_strict_json():
    result = _invoke("run", "--shape", "2x2x2", "--updates", "16", "--json")
    assert result.exit_code == 0

    def refuse(token):
        raise AssertionError(f"{token} is not JSON")

    record = json.loads(result.stdout, parse_constant=refuse)
    assert None in record.values()  # a short run's unmeasured rates are null, not NaN


def test_to_json_writes_null_for_every_number_that_is_not_finite():
    import numpy as np

    from gupsim.app.reporting import to_json

    assert json.loads(to_json({"a": float("nan"), "b": [float("inf"), np.float64("nan"), 1.5], "c": (2, None)})) \
        == {"a": None, "b": [None, None, 1.5], "c": [2, None]}


@pytest.mark.parametrize("argv, fragment", [(["--bytes-per-update", "1e-320"], "no finite bound"),
                                            (["--shape", "99999999999999999999x2x2"], "more than the")])
def test_bounds_refuses_what_has_no_finite_answer_or_no_run(argv, fragment):
    _one_line(_invoke("bounds", "--shape", "2x2x2", *argv), 2, fragment)


def test_a_record_cut_by_a_file_size_limit_is_not_an_answer(tmp_path):
    """``run --json > f.json`` under ``prlimit --fsize=1000`` had left 1,000 bytes and exited 0; bounds prints
    through the same path, and quickly."""
    with open(tmp_path / "f.json", "w") as out:
        done = subprocess.run(GUPSIM + ["bounds", "--shape", "2x2x2", "--json"], stdout=out, stderr=subprocess.PIPE,
                              text=True, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200)),
                              cwd=tmp_path, timeout=120)
    assert done.returncode == 1 and "File too large" in done.stderr, done.stderr


def test_a_full_disk_is_the_environments_fault():
    from gupsim.base.errors import ResourceFault, cannot_write

    assert isinstance(cannot_write("--csv", "/x/y.csv", OSError(28, "No space left on device")), ResourceFault)
    assert isinstance(cannot_write("--csv", "/x/y.csv", OSError(27, "File too large")), ResourceFault)
    assert not isinstance(cannot_write("--csv", "/x/y.csv", OSError(13, "Permission denied")), ResourceFault)


def test_a_store_table_that_cannot_be_opened_is_not_called_corrupt(store, monkeypatch):
    import builtins

    real_open = builtins.open

    def refusing(path, *args, **kwargs):
        if str(path).endswith("results.parquet"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing)
    line = _one_line(_invoke("results", str(store)), 2, "cannot read (Permission denied)")
    assert "corrupt" not in line


# --------------------------------------------------------------- signals


def test_an_interruption_survives_the_trip_through_a_dask_worker():
    from gupsim.studies.cluster import Interrupted

    again = pickle.loads(pickle.dumps(Interrupted(signal.SIGINT)))
    assert again.signum == signal.SIGINT and str(again) == "SIGINT"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGXCPU])
def test_a_run_stopped_by_a_signal_says_one_line(tmp_path, signum):
    # the script's own entry point: a signal during its imports (a loaded machine) is answered in one line too
    proc = subprocess.Popen([sys.executable, "-m", "gupsim.app.entry", "run", "--shape", "8x8x8", "--updates",
                             "100000", "--engine", "simpy", "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    first = _first_stderr_line(proc, deadline_s=60)  # the estimate: imports done, the run starting
    assert first.startswith("gupsim: this run is expected"), first
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, first + err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gupsim: interrupted: "), first + err


def _first_stderr_line(proc: subprocess.Popen, deadline_s: float) -> str:
    """The first line the process writes to stderr, waited for as long as it takes and no longer than
    ``deadline_s`` (a fixed sleep was both slow and, on a loaded box, too short)."""
    ready, _, _ = select.select([proc.stderr], [], [], deadline_s)
    return proc.stderr.readline() if ready else "(nothing on stderr within the deadline)"


def test_the_script_says_why_it_cannot_start_in_one_line():
    done = subprocess.run([sys.executable, "-m", "gupsim.app.entry", "list"], capture_output=True, text=True,
                          env={**os.environ, "NUMBA_DISABLE_JIT": "1"}, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("gupsim: error: NUMBA_DISABLE_JIT"), done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_time_series_cut_short_by_a_tiny_interval_is_said_and_marked():
    """``--sample-interval-s 1e-7`` had given 3 samples covering 0.2 us of the run, exit 0 and no note."""
    result = _invoke("run", "--shape", "2x2x2", "--updates", "256", "--engine", "simpy", "--sample-interval-s", "1e-7",
                     "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["timeseries_complete"] is False
    assert "gupsim: warning: the time series stops at" in result.stderr
    fine = _invoke("run", "--shape", "2x2x2", "--updates", "256", "--engine", "simpy", "--sample-interval-s", "1e-5",
                   "--json")
    assert json.loads(fine.stdout)["timeseries_complete"] is True and "warning" not in fine.stderr


def test_an_address_that_is_no_dask_scheduler_is_given_up_in_one_line(monkeypatch, tmp_path):
    """``sweep --scheduler tcp://...`` at a server that accepts and never answers as Dask had hung."""
    import socket

    from gupsim.studies import cluster

    monkeypatch.setattr(cluster, "CONNECT_S", 3.0)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: s\nmachine: bgl\ngrid:\n  shape: [2x2x2]\n  updates: [16]\n")
    try:
        started = time.monotonic()
        result = _invoke("sweep", str(sweep), "--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}",
                         "--store", str(tmp_path / "st"), "--no-progress")
        assert time.monotonic() - started < 30
    finally:
        server.close()
    _one_line(result, 2, "cannot reach a Dask scheduler", "within 3 s")


def test_a_run_estimated_long_says_so_before_it_starts(monkeypatch):
    """``run --shape 64x32x32 --updates 4096 --engine simpy`` had said nothing for minutes."""
    from gupsim.app import first_run

    monkeypatch.setattr(first_run, "SAY_ESTIMATE_FROM_S", 0.0)
    result = _invoke("run", "--shape", "2x2x2", "--updates", "8", "--engine", "simpy")
    assert result.exit_code == 0
    assert result.stderr.startswith("gupsim: this run is expected to take about ")
    assert "the fast engine (--engine fast) would take" in result.stderr
    monkeypatch.setattr(first_run, "SAY_ESTIMATE_FROM_S", 600.0)
    assert "expected to take" not in _invoke("run", "--shape", "2x2x2", "--updates", "8").stderr


@pytest.mark.parametrize("command", [["bounds"], ["run", "--updates", "8"]])
def test_a_shape_dimension_of_5000_digits_is_one_line(command):
    _one_line(_invoke(*command, "--shape", "1x1x" + "9" * 5000), 2, "invalid shape")


def test_a_local_cluster_under_a_tiny_open_files_limit_is_one_line(tmp_path):
    """``prlimit --nofile=40`` on a sweep had printed 2,909 lines of asyncio and Tornado tracebacks."""
    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: s\nmachine: bgl\ngrid:\n  shape: [2x2x2]\n  updates: [16]\n")
    done = subprocess.run(GUPSIM + ["sweep", str(sweep), "--store", str(tmp_path / "st"), "--no-progress"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40)))
    assert done.returncode == 1 and done.stderr.startswith("gupsim: error: cannot start a local Dask cluster with "
                                                           "a limit of 40 open files"), done.stderr
    assert len(done.stderr.splitlines()) == 1
