"""``gupsim reproduce --jobs 2`` stopped by Ctrl-C or ``kill``: one line saying what was kept, the signal's exit
status, and no traceback or leaked semaphore from the Dask workers (the same contract as ``gupsim sweep``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from gupsim.config import REPO_ROOT
from tests.studies.conftest import GUPSIM


def _stop_a_reproduction(tmp_path, signum: int) -> tuple[int, str]:
    out = tmp_path / "out"
    argv = GUPSIM + ["reproduce", "bgl-table3", "--jobs", "2", "--out", str(out), "--docs", str(tmp_path / "v.md")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, start_new_session=True)
    deadline = time.time() + 120
    # the kept runs' folder is made when the pool starts; the rows go out largest first, so none ends soon
    while not (out / "runs" / "records").is_dir() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(2)  # the Dask workers are busy with rows
    assert proc.poll() is None, "the reproduction ended before it could be stopped"
    # SIGINT as a terminal sends it, to the whole group; SIGTERM as `kill` sends it, to gupsim alone
    (os.killpg if signum == signal.SIGINT else os.kill)(proc.pid, signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


# SIGINT's path (the same handler, and the workers started ignoring it) is the sweep's, tested there by default
@pytest.mark.parametrize("signum", [pytest.param(signal.SIGINT, marks=pytest.mark.slow), signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_a_stopped_reproduction_says_one_line_and_leaks_nothing(tmp_path, signum):
    code, err = _stop_a_reproduction(tmp_path, signum)
    assert code == 128 + signum, f"the reproduction was not stopped (exit {code}): {err}"
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("gupsim: interrupted: "), err
    assert "Traceback" not in err and "leaked semaphore" not in err
