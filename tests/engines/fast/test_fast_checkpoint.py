"""A fast run cut into batches, or stopped and resumed from a checkpoint, is the uncut run bit for bit.

gupsim.engines.fast.driver runs a kernel batch by batch and can keep its state in a
file; these tests cut small runs of every kernel into many short batches, and
stop a run after it saved its state (as a killed process would), then resume
it from the file.
"""

from __future__ import annotations

import pytest

from gupsim.base.errors import GupsimError
from gupsim.engines.fast import KERNELS, FastSimulation, driver
from gupsim.app.reporting import model_fields
from gupsim.engines.run import make_record
from tests.conftest import Stopped, count_loads, stop_after_saves
from tests.engines.fast.conftest import _config, _record, a_saved_checkpoint


@pytest.mark.parametrize("algorithm", sorted(KERNELS))
def test_a_run_cut_into_short_batches_is_the_uncut_run(algorithm):
    config = _config(algorithm)
    uncut, sim = _record(config)
    assert uncut["events"] > 50 * 97  # many pauses below
    # repr: a NaN field (alltoall's round shares, a run without a full round) equals itself there
    assert repr(_record(config, batch_events=97)[0]) == repr(uncut)


# routed-split, one-packet and alltoall save the most state every batch here (a minute or more each on a 2-core
# box; alltoall 97 s): slow, while baseline and routed keep the resume path in the default suite.
@pytest.mark.parametrize("algorithm", [pytest.param(a, marks=pytest.mark.slow)
                                       if a in ("routed-split", "one-packet", "alltoall") else a
                                       for a in sorted(KERNELS)])
def test_a_run_stopped_after_a_save_resumes_from_it_to_the_same_record(algorithm, tmp_path, monkeypatch):
    config = _config(algorithm)
    uncut, _ = _record(config)
    checkpoint = driver.Checkpoint(tmp_path / "run.npz", key="this run", every_s=0.0)  # saved every batch
    saves = stop_after_saves(monkeypatch, 5)
    with pytest.raises(Stopped):
        _record(config, checkpoint, batch_events=311)
    assert checkpoint.path.exists()
    loaded = count_loads(monkeypatch)
    resumed, sim = _record(config, checkpoint, batch_events=311)
    assert loaded == [1] and saves[-1] > 0
    assert sim.earlier_wall_s > 0  # the record's wall time counts the stopped piece
    assert repr(resumed) == repr(uncut)  # repr: NaN fields equal (above)
    assert not checkpoint.path.exists()  # a finished run leaves no state behind


def test_a_resumed_record_gives_the_largest_peak_rss_of_its_pieces(tmp_path, monkeypatch):
    """The stopped piece's peak is kept in the checkpoint: a resumed run that needs less does not hide it."""
    config = _config("routed")
    checkpoint = driver.Checkpoint(tmp_path / "run.npz", key="this run", every_s=0.0)
    monkeypatch.setattr(driver, "peak_rss_mb", lambda: 123456.0)  # the stopped process peaked high
    stop_after_saves(monkeypatch, 3)
    with pytest.raises(Stopped):
        _record(config, checkpoint, batch_events=311)
    monkeypatch.undo()
    sim = FastSimulation(config)
    sim.execute(checkpoint, 311)
    assert sim.earlier_peak_rss_mb == 123456.0
    assert make_record(sim.outcome(), 0.0)["peak_rss_mb"] == 123456.0
    fresh = FastSimulation(config)
    fresh.execute()
    assert fresh.earlier_peak_rss_mb == 0.0 and make_record(fresh.outcome(), 0.0)["peak_rss_mb"] < 123456.0


def test_a_checkpoint_of_another_run_is_refused_in_one_line(tmp_path, monkeypatch):
    config = _config("one-packet", updates=64)
    checkpoint = a_saved_checkpoint(tmp_path / "run.npz", "code1-runAAAAAAAAAAAA", monkeypatch, config)
    other = driver.Checkpoint(checkpoint.path, key="code1-runBBBBBBBBBBBB")
    with pytest.raises(GupsimError, match=r"belongs to another run \(key runAAAAAAAAA, this run's runBBBBBBBBB\)") \
            as info:  # keys are <code>-<run>: the part shown is the one that differs
        _record(config, other)
    assert "\n" not in str(info.value)
    with pytest.raises(GupsimError, match=r"belongs to another gupsim \(key code1, this run's code2\)"):
        _record(config, driver.Checkpoint(checkpoint.path, key="code2-runAAAAAAAAAAAA"))
    # the same key, but another kernel's tables (a file made by other code under a stale key)
    with pytest.raises(GupsimError, match="does not hold this kernel's tables"):
        _record(_config("routed", updates=64), checkpoint)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint", b"PK\x03\x04 truncated"])
def test_an_unreadable_checkpoint_is_refused_in_one_line(tmp_path, content):
    path = tmp_path / "run.npz"
    path.write_bytes(content)
    with pytest.raises(GupsimError, match="not a readable gupsim checkpoint") as info:
        _record(_config("one-packet", updates=16), driver.Checkpoint(path, key="k"))
    assert "\n" not in str(info.value)


def test_a_checkpoint_that_cannot_be_written_is_refused_before_the_run(tmp_path, monkeypatch):
    """Not at the first save, ten minutes of wall time in: a folder on the path is a file."""
    (tmp_path / "afile").write_text("")
    checkpoint = driver.Checkpoint(tmp_path / "afile" / "run.npz", key="k", every_s=0.0)
    monkeypatch.setattr(driver, "save", lambda *a: pytest.fail("the run started"))
    with pytest.raises(GupsimError, match=r"^checkpoint .*run.npz: .*afile is a file, not a folder$") as info:
        _record(_config("one-packet", updates=16), checkpoint, batch_events=101)
    assert "\n" not in str(info.value)


def test_a_save_that_fails_mid_run_is_one_line_and_keeps_the_previous_save(tmp_path, monkeypatch):
    import errno

    import numpy as np

    checkpoint = driver.Checkpoint(tmp_path / "run.npz", key="k", every_s=0.0)
    calls, real_savez = [], np.savez

    def savez_then_fill_the_disk(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_savez(*args, **kwargs)

    monkeypatch.setattr(np, "savez", savez_then_fill_the_disk)
    with pytest.raises(GupsimError, match=r"run.npz: No space left on device \(the previous save, if any, is kept\)$") as info:
        _record(_config("routed"), checkpoint, batch_events=311)
    assert "\n" not in str(info.value) and len(calls) == 2
    assert checkpoint.path.exists() and not (tmp_path / "run.npz.part").exists()
    monkeypatch.undo()
    loaded = count_loads(monkeypatch)
    assert _record(_config("routed"), checkpoint, batch_events=311)[0] == _record(_config("routed"))[0]
    assert loaded == [1]  # resumed from the first save, which was whole


def test_a_batch_must_hold_an_event():
    with pytest.raises(GupsimError, match="batch_events"):
        _record(_config("one-packet", updates=16), batch_events=0)


def test_gupsim_run_with_checkpoint_resumes_a_stopped_run_to_the_same_record(tmp_path, monkeypatch, capsys):
    import json

    from gupsim.app.cli import main

    argv = ["run", "--shape", "4x4x2", "--algorithm", "routed", "--updates", "200", "--json"]
    main(argv)
    uncut = json.loads(capsys.readouterr().out)
    path = tmp_path / "state.npz"
    monkeypatch.setattr(driver, "BATCH_EVENTS", 1000)
    stop_after_saves(monkeypatch, 1)
    with pytest.raises(Stopped):
        main(argv + ["--checkpoint", str(path), "--checkpoint-every-s", "0"])
    assert path.exists()
    loaded = count_loads(monkeypatch)
    main(argv + ["--checkpoint", str(path)])
    resumed = json.loads(capsys.readouterr().out)
    assert loaded == [1] and not path.exists()

    def model(record):
        return model_fields(record)

    assert model(resumed) == model(uncut)


def test_batches_are_paced_by_the_wall_clock_within_their_cap():
    """A signal is answered between batches: a batch aims at BATCH_TARGET_S of wall time, grows at most
    BATCH_GROWTH-fold over the last, and never passes its cap (a fixed 2^24-event batch took minutes under load)."""
    pacer = driver.BatchPacer(cap=10**9)
    assert pacer.events == driver.FIRST_BATCH_EVENTS
    pacer.took(pacer.events, 1e-6)  # fast: grows, but at most BATCH_GROWTH-fold
    assert pacer.events == driver.BATCH_GROWTH * driver.FIRST_BATCH_EVENTS
    pacer.took(4_000_000, 8 * driver.BATCH_TARGET_S)  # slow: shrinks to what the target's wall time runs
    assert pacer.events == 500_000
    pacer.took(0, 1.0)  # a batch that ran nothing (a table had to grow) says nothing of the rate
    assert pacer.events == 500_000
    assert driver.BatchPacer(cap=311).events == 311
    capped = driver.BatchPacer(cap=1000)
    capped.took(1000, 1e-9)
    assert capped.events == 1000
