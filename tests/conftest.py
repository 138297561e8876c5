"""Shared fixtures: the BG/L machine and the published reference tables."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import settings

from gupsim.config import load_machine
from gupsim.studies.validation import reference_table

# No wall-clock deadline on any property test: speed lives in benchmarks/, and a deadline made a
# property test fail on a loaded 2-core box (test_cache's lookup-miss property, 2026-11-23).
settings.register_profile("gupsim", deadline=None)
settings.load_profile("gupsim")



@pytest.fixture(scope="session")
def bgl():
    return load_machine("bgl")


def reference(name: str) -> pd.DataFrame:
    """A published table, from the project's own copy (gupsim/data/reference; tests/test_package_data.py
    checks it against ../shared/reference when that folder is there)."""
    return reference_table(name)
