"""Faults in what gupsim keeps on disk between runs: one line (or a recompile), never a crash.

A checkpoint edited or damaged so that one array has too few rows or another dtype had been handed to the
compiled kernels, which index it unchecked: the process died of a segmentation fault, with no message.
"""

from __future__ import annotations

import numpy as np
import pytest

from gupsim.errors import GupsimError
from gupsim.fast import driver
from tests.test_fast_checkpoint import Stopped, _config, _record, stop_after_saves


@pytest.fixture(scope="module")
def saved_routed(tmp_path_factory):
    """A checkpoint of a routed run stopped after its first save, and the run's config."""
    path = tmp_path_factory.mktemp("ckpt") / "run.npz"
    config = _config("routed", updates=64)
    with pytest.MonkeyPatch.context() as monkeypatch:
        stop_after_saves(monkeypatch, 1)
        with pytest.raises(Stopped):
            _record(config, driver.Checkpoint(path, key="k", every_s=0.0), batch_events=101)
    return config, path


def _tampered(saved_routed, tmp_path, name, change):
    config, path = saved_routed
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays[name] = change(arrays[name])
    out = tmp_path / "tampered.npz"
    np.savez(out, **arrays)
    return config, driver.Checkpoint(out, key="k")


@pytest.mark.parametrize("name, change, shown", [
    ("rk", lambda x: x[:10], "array 'rk' is int32 (10, "),  # the tester's case: one array cut to 10 rows
    ("pk", lambda x: x[:10], "array 'pk' is int32 (10, "),  # a table that may grow, cut below a fresh run's
    ("ctr", lambda x: x.astype(np.float64), "array 'ctr' is float64"),
    ("lf", lambda x: x[:, :2], "array 'lf' is float64"),
    ("hh0", lambda x: x[:3], "array 'hh0'"),
])
def test_a_tampered_checkpoint_is_one_line_naming_the_array(saved_routed, tmp_path, name, change, shown):
    config, checkpoint = _tampered(saved_routed, tmp_path, name, change)
    with pytest.raises(GupsimError, match="delete it to start afresh") as info:
        _record(config, checkpoint)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"checkpoint {checkpoint.path}: ") and shown in message
    assert checkpoint.path.exists()  # nothing lost: the user decides


def test_packet_tables_of_different_lengths_are_refused(saved_routed, tmp_path):
    config, checkpoint = _tampered(saved_routed, tmp_path, "pf", lambda x: np.concatenate([x, x]))
    with pytest.raises(GupsimError, match=r"packet tables differ in rows"):
        _record(config, checkpoint)


def test_an_untampered_checkpoint_still_resumes(saved_routed, tmp_path):
    config, checkpoint = _tampered(saved_routed, tmp_path, "pk", lambda x: x)
    assert _record(config, checkpoint)[0] == _record(config)[0]
