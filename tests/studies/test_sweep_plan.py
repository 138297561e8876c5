"""Planning a sweep: its size limit, its estimate (wall time and memory), the progress bar weighted by it, and a
quiet, clean stop on SIGINT or SIGTERM."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gupsim.studies import estimate
from gupsim.engines import fast
from gupsim.app.cli import cli
from gupsim.config import REPO_ROOT
from gupsim.studies.store import ResultsStore
from tests.studies.conftest import start_sweep_until_a_point_is_stored
from gupsim.studies.sweep import MAX_POINTS, expand, load_sweep, run_sweep

GUPSIM = [sys.executable, "-m", "gupsim.app.cli"]


def _sweep_file(tmp_path: Path, grid: dict, name: str = "t") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "machine": "bgl", "grid": grid}))
    return path


def _points(tmp_path: Path, grid: dict):
    spec = load_sweep(str(_sweep_file(tmp_path, grid)))
    return spec, expand(spec)


# --------------------------------------------------------------------------- the limit on grid size


def _no_point_may_be_made(monkeypatch) -> None:
    """Making a point fails the test: the grid must be refused from its lists' lengths, before any point exists
    (expanding 64 million points would sit for hours)."""
    import gupsim.studies.sweep

    def refuse(**_fields):
        raise AssertionError("a point was made before the grid's size was checked")

    monkeypatch.setattr(gupsim.studies.sweep, "make_run_config", refuse)


def test_a_grid_of_64_million_points_is_refused_in_one_line_before_any_point_is_made(tmp_path, monkeypatch):
    _no_point_may_be_made(monkeypatch)
    grid = {"seed": list(range(1000)), "updates": list(range(1, 257)), "shape": ["2x2x2", "4x2x2", "4x4x2", "4x4x4"],
            "link_bytes_per_s": {"times": [0.5, 1, 2, 4]}, "algorithm": ["baseline", "routed", "one-packet", "routed-split"],
            "router_delay_ns": {"times": [1, 2, 4, 8]}}
    result = CliRunner().invoke(cli, ["sweep", str(_sweep_file(tmp_path, grid)), "--dry-run"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gupsim: error: "), result.stderr
    assert "grid has 65,536,000 points (" in lines[0] and f"more than the {MAX_POINTS:,}" in lines[0]
    for axis in ("1000 seed", "256 updates", "4 shape", "4 link_bytes_per_s", "4 algorithm", "4 router_delay_ns"):
        assert axis in lines[0]


def test_a_grid_of_exactly_the_limit_is_counted_not_refused(tmp_path, monkeypatch):
    _no_point_may_be_made(monkeypatch)
    grid = {"seed": list(range(MAX_POINTS // 2)), "shape": ["2x2x2", "4x2x2"]}
    with pytest.raises(AssertionError, match="a point was made"):  # past the count, to the points
        _points(tmp_path, grid)
    with pytest.raises(Exception, match="more than the"):
        _points(tmp_path, {"seed": list(range(MAX_POINTS // 2 + 1)), "shape": ["2x2x2", "4x2x2"]})


def test_sweeps_md_gives_the_limit():
    assert f"{MAX_POINTS:,} points" in (REPO_ROOT / "docs" / "sweeps.md").read_text()


# --------------------------------------------------------------------------- the estimate


def test_the_memory_estimate_is_the_memory_refusals_own(tmp_path):
    _, points = _points(tmp_path, {"shape": ["4x4x4", "8x8x8"], "algorithm": ["routed"], "updates": [64]})
    estimates = estimate.estimate_points(points)
    assert [e.memory_bytes for e in estimates] == [fast.check_memory(p.run) for p in points]
    assert {e.basis for e in estimates} == {"model"}
    assert estimate.peak_bytes(estimates, 2) == sum(e.memory_bytes for e in estimates)
    assert estimate.peak_bytes(estimates, 1) == max(e.memory_bytes for e in estimates)


def test_the_cost_model_grows_with_updates_processes_and_hops(tmp_path):
    _, points = _points(tmp_path, {"shape": ["4x4x4", "8x8x8"], "algorithm": ["routed"], "updates": [64, 128]})
    walls = {(p.run.shape, p.run.updates_per_process): e.wall_s - estimate.OVERHEAD_S
             for p, e in zip(points, estimate.estimate_points(points))}
    # the warm-up's share shrinks with the run's length: twice the updates, less than twice the time
    assert walls[("4x4x4", 64)] < walls[("4x4x4", 128)] < 2 * walls[("4x4x4", 64)]
    # 8x processes and twice the hops: more than 8x the time
    assert walls[("8x8x8", 64)] > 8 * walls[("4x4x4", 64)]
    routed = estimate.EVENTS_PER_UPDATE["routed"]
    events = 64 * 64 * (routed.base + routed.per_message_hop * 3 + routed.warmup * 3 ** routed.warmup_power / 64)
    s0, exponent = estimate.SECONDS_PER_EVENT["fast"]
    assert walls[("4x4x4", 64)] == pytest.approx(estimate.RUN_SETUP_S + events * s0 * 64 ** exponent)


def test_the_baselines_bucket_shrinks_with_the_process_count_as_the_bucketing_model_says():
    """The closed form the cost model uses for the baseline's updates a message, against the bucketing model's
    own simulation of it (gupsim.model.bucketing), within 15% from 128 to 4,096 processes."""
    from gupsim.model.bucketing import MAX_PENDING, mean_bucket_size

    for processes in (128, 512, 4096):
        assert 1 + 2 * MAX_PENDING / processes == pytest.approx(mean_bucket_size(processes, updates=2**14), rel=0.15)


def _timing_row(key: str, point, wall_s: float) -> dict:
    run = point.run
    return {"key": key, "status": "ok", "error": "", "wall_s": wall_s, "engine": point.engine,
            "algorithm": run.algorithm, "shape": run.shape, "processes": 64, "updates_per_process": run.updates_per_process}


def test_kept_timings_give_a_points_own_time_and_scale_the_model_for_the_others(tmp_path):
    _, points = _points(tmp_path, {"shape": ["4x4x4"], "algorithm": ["routed", "baseline"], "seed": [0, 1]})
    routed = [p for p in points if p.run.algorithm == "routed"]
    store = ResultsStore(tmp_path / "st")
    store.write(_timing_row(routed[0].key, routed[0], 7.0))  # the point itself, kept by any code
    modelled = estimate.model_run_s("fast", "routed", "4x4x4", 64, routed[0].run.updates_per_process)
    store.write(_timing_row("another", routed[0], 10 * modelled))  # another routed run, 10x slower than modelled
    by_key = dict(zip([p.key for p in points], estimate.estimate_points(points, store)))
    assert by_key[routed[0].key] == estimate.PointEstimate(estimate.OVERHEAD_S + 7.0, by_key[routed[0].key].memory_bytes,
                                                           "kept")
    # median of the two routed ratios (7.0 / modelled and 10)
    ratio = (7.0 / modelled + 10) / 2
    assert by_key[routed[1].key].basis == "calibrated"
    assert by_key[routed[1].key].wall_s == pytest.approx(estimate.OVERHEAD_S + ratio * modelled)
    baseline = [p for p in points if p.run.algorithm == "baseline"]
    assert {by_key[p.key].basis for p in baseline} == {"model"}  # no kept baseline timing


def test_the_dry_run_prints_each_points_estimate_and_the_sweeps(tmp_path, monkeypatch):
    # The estimate scales by the timings kept under ./results/runs; from an empty folder there are none, so the
    # test does not depend on what a developer's checkout has run.
    monkeypatch.chdir(tmp_path)
    path = _sweep_file(tmp_path, {"shape": ["4x4x4"], "algorithm": ["routed", "baseline"], "updates": [64]})
    result = CliRunner().invoke(cli, ["sweep", str(path), "--store", str(tmp_path / "st"), "--dry-run",
                                      "--workers", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    per_point = [line for line in lines if "  todo  " in line]
    assert len(per_point) == 2 and all(" s  " in line and " MB  " in line for line in per_point)
    last = lines[-1]
    assert last.startswith("estimate for 2 points (rough; 2 by the cost model alone; memory by the memory refusal's")
    assert "on 2 workers" in last and "per point" in last and "at once" in last


def test_the_total_is_the_work_shared_out_but_never_less_than_the_longest_point():
    e = [estimate.PointEstimate(w, 1, "model") for w in (100.0, 1.0, 1.0)]
    assert estimate.total_wall_s(e, 2) == estimate.STARTUP_S + 100.0
    e = [estimate.PointEstimate(10.0, 1, "model")] * 4
    assert estimate.total_wall_s(e, 2) == estimate.STARTUP_S + 20.0


# --------------------------------------------------------------------------- the progress bar


class _Bar:
    """Records what a sweep tells its progress bar."""

    made: list["_Bar"] = []

    def __init__(self, total=None, **_kwargs):
        self.total, self.steps = total, []
        _Bar.made.append(self)

    def update(self, n=1):
        self.steps.append(n)

    def set_postfix(self, **_kwargs):
        pass

    def close(self):
        pass

    @staticmethod
    def write(*_args, **_kwargs):
        pass


def test_the_progress_bar_counts_each_points_estimated_cost_not_points(tmp_path, monkeypatch):
    import tqdm
    from dask.distributed import Client, LocalCluster

    spec, points = _points(tmp_path, {"shape": ["2x2x2", "4x4x4"], "algorithm": ["baseline"], "updates": [64, 512]})
    expected = sorted(e.wall_s for e in estimate.estimate_points(points))
    assert len(set(expected)) == 4  # the points' costs differ, so weights and counts cannot agree by chance
    _Bar.made.clear()
    monkeypatch.setattr(tqdm, "tqdm", _Bar)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        run_sweep(spec, points, tmp_path / "st", client=client, progress=False)
    (bar,) = _Bar.made
    assert bar.total == pytest.approx(sum(expected))
    assert sorted(bar.steps) == pytest.approx(expected)


# --------------------------------------------------------------------------- SIGINT and SIGTERM


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def test_quiet_silences_the_loggers_dask_configures_below_the_named_ones():
    import distributed  # noqa: F401 - its configuration gives tornado.application a level and handler of its own

    from gupsim.studies.cluster import DASK_LOGGERS, _quiet

    kept = _Kept()
    names = ("tornado.application", "distributed.client")
    for name in names:
        logging.getLogger(name).addHandler(kept)
    try:
        with _quiet(DASK_LOGGERS):
            logging.getLogger("tornado.application").error("Exception in callback: NameError")
            logging.getLogger("distributed.client").error("noise")
        assert kept.records == []
        assert logging.getLogger("tornado.application").level == logging.ERROR  # restored
    finally:
        for name in names:
            logging.getLogger(name).removeHandler(kept)


def test_a_signal_silences_dask_before_the_interrupt_is_raised():
    import distributed  # noqa: F401

    from gupsim.studies.cluster import Interrupted, interruptible

    tornado_app = logging.getLogger("tornado.application")
    for signum in (signal.SIGINT, signal.SIGTERM):
        with pytest.raises(Interrupted) as caught, interruptible():
            try:
                os.kill(os.getpid(), signum)
                time.sleep(5)  # the handler runs at the next bytecode; the sleep is never reached in full
            except Interrupted:
                # Dask's event-loop thread may log the moment the interrupt reaches it: already silenced.
                assert not tornado_app.isEnabledFor(logging.CRITICAL)
                raise
        assert caught.value.signum == signum
        assert tornado_app.isEnabledFor(logging.ERROR)  # restored after the block
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def _stop_a_sweep(tmp_path: Path, signum: int, run: int) -> tuple[int, str]:
    path = _sweep_file(tmp_path, {"shape": ["8x4x4"], "algorithm": ["baseline", "routed"], "updates": [4096],
                                  "seed": [0, 1, 2, 3]}, name=f"s{run}")
    proc = start_sweep_until_a_point_is_stored(path, tmp_path / f"store{run}", workers=2)
    # SIGINT as a terminal sends it, to the whole group; SIGTERM as `kill` sends it, to gupsim alone
    (os.killpg if signum == signal.SIGINT else os.kill)(proc.pid, signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


@pytest.mark.parametrize("signum, stops", [
    (signal.SIGINT, 1),
    (signal.SIGTERM, 1),
    # Repeated in the slow run: a traceback came from a race (one Ctrl-C in seven), and a worker's own
    # traceback from a third of the stops with two workers; each stop starts a Dask cluster (about 13 s).
    pytest.param(signal.SIGINT, 3, marks=pytest.mark.slow),
    pytest.param(signal.SIGTERM, 2, marks=pytest.mark.slow),
], ids=["SIGINT", "SIGTERM", "SIGINT-3-times", "SIGTERM-2-times"])
def test_a_stopped_sweep_says_one_line_and_leaks_nothing(tmp_path, signum, stops):
    for run in range(stops):
        code, err = _stop_a_sweep(tmp_path, signum, run)
        assert code == 128 + signum, f"the sweep was not stopped (exit {code}): {err}"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gupsim: interrupted: "), err
        assert "Traceback" not in err and "leaked semaphore" not in err
