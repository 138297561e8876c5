"""Shared fixtures: the BG/L machine and the published reference tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings

from gupsim.config import load_machine

# No wall-clock deadline on any property test: speed lives in benchmarks/, and a deadline made a
# property test fail on a loaded 2-core box (test_cache's lookup-miss property, 2026-11-23).
settings.register_profile("gupsim", deadline=None)
settings.load_profile("gupsim")

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"


@pytest.fixture(scope="session")
def bgl():
    return load_machine("bgl")


def reference(name: str) -> pd.DataFrame:
    path = REFERENCE / name
    if not path.exists():
        pytest.fail(f"reference table missing: {path} (shared/ must sit beside the repository)")
    return pd.read_csv(path)
