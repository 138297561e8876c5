"""Every way to start the command line goes through the entry point's guard (gupsim.app.entry).

``python -m gupsim.app.cli`` had run the command line's imports before any guard, so ``NUMBA_DISABLE_JIT=1``
(or a memory limit) gave a traceback there while the installed ``gupsim`` script gave one line (issue 48).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

WAYS = [["-m", "gupsim.app.cli"], ["-m", "gupsim.app.entry"]]


def _start(way: list[str], *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *way, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("way", WAYS, ids=" ".join)
def test_every_way_in_says_why_it_cannot_start_in_one_line(way):
    done = _start(way, "list", env={"NUMBA_DISABLE_JIT": "1"})
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("gupsim: error: NUMBA_DISABLE_JIT") and len(done.stderr.splitlines()) == 1, \
        done.stderr


@pytest.mark.parametrize("way", WAYS, ids=" ".join)
def test_every_way_in_runs_the_command_line_once(way):
    good = _start(way, "list")
    assert good.returncode == 0 and good.stdout.count("\nalgorithms: ") == 1, (good.stdout, good.stderr)
    bad = _start(way, "bounds", "--shape", "0x1x1")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1, bad.stderr
