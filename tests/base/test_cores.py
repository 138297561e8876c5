"""The cores a process may use: its affinity, capped by its cgroup's CPU quota (v2 ``cpu.max`` or v1's pair)."""

from __future__ import annotations

import os

import pytest

from gupsim.base import cores


@pytest.mark.parametrize("text,expected", [("max 100000", None), ("150000 100000", 1.5), ("200000 100000", 2.0),
                                           ("garbage", None), ("0 100000", None)])
def test_cgroup_v2_quota(tmp_path, text, expected):
    v2 = tmp_path / "cpu.max"
    v2.write_text(text + "\n")
    assert cores.cgroup_quota(v2, tmp_path / "none", tmp_path / "none") == expected


def test_cgroup_v1_quota_when_there_is_no_v2(tmp_path):
    (tmp_path / "q").write_text("300000\n")
    (tmp_path / "p").write_text("100000\n")
    assert cores.cgroup_quota(tmp_path / "none", tmp_path / "q", tmp_path / "p") == 3.0
    (tmp_path / "q").write_text("-1\n")
    assert cores.cgroup_quota(tmp_path / "none", tmp_path / "q", tmp_path / "p") is None


def test_usable_cores_is_capped_by_the_quota(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(cores, "cgroup_quota", lambda: 1.5)
    assert cores.usable_cores() == 2
    monkeypatch.setattr(cores, "cgroup_quota", lambda: None)
    assert cores.usable_cores() == 4


def test_gupsim_threads_sets_the_default_and_a_bad_value_is_one_line(monkeypatch):
    from gupsim.base.errors import GupsimError

    monkeypatch.setenv("GUPSIM_THREADS", "3")
    assert cores.default_threads() == 3
    monkeypatch.setenv("GUPSIM_THREADS", "")
    monkeypatch.setattr(cores, "usable_cores", lambda: 5)
    assert cores.default_threads() == 5
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("GUPSIM_THREADS", bad)
        with pytest.raises(GupsimError, match="GUPSIM_THREADS"):
            cores.default_threads()
