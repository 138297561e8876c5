"""Faults in what gupsim keeps on disk between runs: one line (or a recompile), never a crash.

A damaged file of Numba's cache had failed every later run of its kernel (UnpicklingError,
UnicodeDecodeError) until the user deleted it.  A checkpoint edited or damaged so that one array has too few rows or another dtype had been handed to the
compiled kernels, which index it unchecked: the process died of a segmentation fault, with no message.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gupsim.config import load_machine
from gupsim.base.errors import GupsimError
from gupsim.engines.fast import driver, simulate_fast
from gupsim.app.reporting import model_fields
from gupsim.engines.run import make_run_config
from tests.conftest import Stopped, stop_after_saves
from tests.engines.fast.conftest import _config, _record


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
    ("ranks", lambda x: x[:10], "array 'ranks' is int32 (10, "),  # the tester's case: one array cut to 10 rows
    ("packets", lambda x: x[:10], "array 'packets' is int32 (10, "),  # a table that may grow, cut below a fresh run's
    ("counters", lambda x: x.astype(np.float64), "array 'counters' is float64"),
    ("link_times", lambda x: x[:, :2], "array 'link_times' is float64"),
    ("queue0", lambda x: x[:3], "array 'queue0'"),
])
def test_a_tampered_checkpoint_is_one_line_naming_the_array(saved_routed, tmp_path, name, change, shown):
    config, checkpoint = _tampered(saved_routed, tmp_path, name, change)
    with pytest.raises(GupsimError, match="delete it to start afresh") as info:
        _record(config, checkpoint)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"checkpoint {checkpoint.path}: ") and shown in message
    assert checkpoint.path.exists()  # nothing lost: the user decides


def _one_more(x):
    x = x.copy()
    x.flat[0] += 1
    return x


@pytest.mark.parametrize("name", ["packets", "counters", "queue0", "_now"])
def test_a_checkpoint_edited_in_its_values_alone_is_refused_by_its_digest(saved_routed, tmp_path, name):
    """Shapes and dtypes intact, one value changed: the kernels would index with it unchecked."""
    config, checkpoint = _tampered(saved_routed, tmp_path, name, _one_more)
    with pytest.raises(GupsimError, match="changed after it was saved") as info:
        _record(config, checkpoint)
    assert "\n" not in str(info.value) and str(info.value).startswith(f"checkpoint {checkpoint.path} ")
    assert checkpoint.path.exists()


def test_an_untouched_checkpoint_passes_its_digest(saved_routed, tmp_path):
    config, checkpoint = _tampered(saved_routed, tmp_path, "counters", lambda x: x)
    assert _record(config, checkpoint)[0] == _record(config, None)[0]


def test_packet_tables_of_different_lengths_are_refused(saved_routed, tmp_path):
    config, checkpoint = _tampered(saved_routed, tmp_path, "packet_times", lambda x: np.concatenate([x, x]))
    with pytest.raises(GupsimError, match=r"packet tables differ in rows"):
        _record(config, checkpoint)


def test_an_untampered_checkpoint_still_resumes(saved_routed, tmp_path):
    config, checkpoint = _tampered(saved_routed, tmp_path, "packets", lambda x: x)
    assert _record(config, checkpoint)[0] == _record(config)[0]


# ------------------------------------------------------------------ a damaged compiled-kernel cache


def _cache_copy(tmp_path, dispatcher):
    """A copy of the fast engine's compiled cache (``dispatcher``'s folder, warmed by a tiny run) where
    ``NUMBA_CACHE_DIR=tmp_path`` finds it, so that damaging it leaves the shared cache whole; returns its folder."""
    from numba.core import caching

    from gupsim.engines.fast import kernel_cache as cache

    simulate_fast(make_run_config(machine=load_machine("bgl"), shape="2x2x1", algorithm="one-packet",
                                  updates_per_process=16, engine="fast"))
    source = Path(dispatcher.stats.cache_path)
    locator = getattr(caching, "UserProvidedCacheLocator", None) or caching._UserProvidedCacheLocator
    copy = tmp_path / locator.get_suitable_cache_subpath(str(cache.PACKAGE_DIR / "core.py"))
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("*.tmp.*"))
    return copy


def _gupsim_subprocess(cache_dir):
    env = os.environ | {"NUMBA_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-m", "gupsim.app.cli", "run", "--shape", "2x2x1", "--algorithm",
                           "one-packet", "--updates", "16", "--engine", "fast", "--json", "--fixed-length",
                           "--progress", "none"],  # stderr: the cache's own line alone
                          env=env, capture_output=True, text=True, timeout=1200)


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if how == "cut" else data[:40] + b"\xff" * 64 + data[104:])


@pytest.mark.parametrize("func, suffix, how", [
    ("one_packet._loop", "1.nbc", "cut"),  # the kernel's machine code, cut short
    ("stream.starts_many", "nbi", "overwrite"),  # a helper's index, overwritten (UnicodeDecodeError)
])
def test_a_damaged_kernel_cache_is_recompiled_with_one_line(tmp_path, func, suffix, how):
    from gupsim.engines.fast import one_packet, stream

    dispatcher = {"one_packet._loop": one_packet._loop, "stream.starts_many": stream.starts_many}[func]
    copy = _cache_copy(tmp_path, dispatcher)
    (damaged,) = copy.glob(f"{func}-*.{suffix}")
    _damage(damaged, how)
    first = _gupsim_subprocess(tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    lines = first.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gupsim: the compiled-kernel cache at {copy} was damaged"), \
        first.stderr[-2000:]
    assert lines[0].endswith("; recompiling")
    second = _gupsim_subprocess(tmp_path)  # the files were written anew: a clean run
    assert second.returncode == 0 and second.stderr == "", second.stderr[-2000:]
    assert model_fields(json.loads(first.stdout)) == model_fields(json.loads(second.stdout))


def test_a_read_only_package_caches_in_the_users_cache_folder(tmp_path, monkeypatch):
    """Where gupsim/fast/__pycache__ cannot be written (an install into a read-only place), Numba's own
    locators would keep helpers' stale code (they stamp each file alone); gupsim's user folder is used."""
    from numba.core import caching

    from gupsim.engines.fast import kernel_cache as cache, core

    monkeypatch.setattr(caching.config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def read_only(self):
        if self._cache_path.startswith(str(cache.PACKAGE_DIR)):
            raise PermissionError(13, "Permission denied", self._cache_path)
        os.makedirs(self._cache_path, exist_ok=True)

    monkeypatch.setattr(cache._InTreeLocator, "ensure_cache_path", read_only)
    monkeypatch.setattr(cache._UserCacheLocator, "ensure_cache_path", read_only)
    located = caching.FunctionCache(core.link_free_list.py_func)
    assert Path(located.cache_path).is_relative_to(tmp_path / "gupsim" / "numba")
    assert isinstance(located._impl.locator, cache._PackageStamp)
