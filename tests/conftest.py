"""Shared fixtures: the BG/L machine and the published reference tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gupsim.config import load_machine

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"


@pytest.fixture(scope="session")
def bgl():
    return load_machine("bgl")


def reference(name: str) -> pd.DataFrame:
    path = REFERENCE / name
    if not path.exists():
        pytest.fail(f"reference table missing: {path} (shared/ must sit beside the repository)")
    return pd.read_csv(path)
