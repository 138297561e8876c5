"""Helpers the studies' tests share."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from gupsim.data import REPO_ROOT

GUPSIM = [sys.executable, "-m", "gupsim.app.cli"]


def start_sweep_until_a_point_is_stored(path: Path, store: Path, workers: int) -> subprocess.Popen:
    """``gupsim sweep`` on ``path`` in a process group of its own, returned once its first point is in
    ``store`` (or after two minutes), so that a test can then stop it as a terminal or ``kill`` would."""
    argv = GUPSIM + ["sweep", str(path), "--store", str(store), "--workers", str(workers), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    deadline = time.time() + 120
    while not list((store / "parts").glob("*.parquet")) and time.time() < deadline:
        time.sleep(0.02)
    return proc


def check_writes_reference_sim_and_error_columns(c, tmp_path: Path) -> None:
    """A reproduced table's CSV is named after it and holds each target's published, simulated and error
    columns (tests/studies/test_reproduce.py checks every experiment with it)."""
    path = c.write_csv(tmp_path)
    assert path.name == f"{c.name}.csv"
    for column in c.targets:
        assert {column, f"sim_{column}", f"rel_err_{column}"} <= set(c.frame.columns)
    assert c.summary_lines()


def check_page_lists_every_miss_with_its_explanation(comparisons: list, text: str) -> None:
    """docs/validation.md as written for ``comparisons`` shows each one and explains each of its misses."""
    for c in comparisons:
        assert c.title in text
        for key, column, _, _ in c.misses():
            assert f"**{c.key}={key}, {column}**" in text
    assert "No explanation recorded yet" not in text
