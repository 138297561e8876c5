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
