"""The benchmark scripts' own input checks (their measurements live in docs/performance.md, not in tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH_FAST = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_fast.py"


def test_bench_fast_refuses_a_shape_no_selected_case_has_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, str(BENCH_FAST), "--series", "slope-long", "--shapes", "64x32x23",
                          "--out", str(tmp_path / "b.csv")], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "bench_fast.py: error: --shapes: no case of the series slope-long has the shape(s) 64x32x23")
    assert not (tmp_path / "b.csv").exists()  # nothing ran
