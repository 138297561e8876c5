"""gupsim plot whatif: GUPS against a varied field, with intervals and each algorithm's bounds (issue 47)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from gupsim.base.errors import GupsimError
from gupsim.config import load_machine
from gupsim.engines.run import make_run_config, resolved_config


def _rows() -> pd.DataFrame:
    rows = []
    for algorithm in ("baseline", "routed"):
        for rate in (87.5e6, 175e6, 350e6):
            machine = load_machine("bgl", {"network.link_bytes_per_s": rate})
            cfg = make_run_config(machine=machine, shape="4x4x4", algorithm=algorithm, updates_per_process=64)
            rows.append({"status": "ok", "algorithm": algorithm, "shape": "4x4x4", "nodes": 64, "gups": 0.04,
                         "gups_ci_low": 0.039, "gups_ci_high": 0.041, "precision": "ok",
                         "network_bound_gups": rate / 175e6, "var.link_bytes_per_s": rate,
                         "config_json": json.dumps(resolved_config(cfg))})
    return pd.DataFrame(rows)


def test_whatif_draws_each_series_with_its_intervals_and_bounds_against_the_field_in_its_unit(figures, tmp_path):
    from gupsim.app.plots import plot_whatif

    plot_whatif(_rows(), tmp_path, x="var.link_bytes_per_s")
    ax = figures[0].axes[0]
    assert ax.get_xlabel() == "link_bytes_per_s (MB/s)"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "baseline, 4x4x4" in labels and "routed, 4x4x4" in labels
    assert sum("its eq. (2) bound" in label for label in labels) == 2
    assert labels.count("4x4x4: CPU bound, eq. (1)") == 1  # the shape's, drawn once
    bars = [c for c in ax.containers]
    assert len(bars) == 2  # one error-bar series per algorithm and shape


def test_whatif_names_the_fields_when_x_is_not_one(tmp_path):
    from gupsim.app.plots import plot_whatif

    with pytest.raises(GupsimError, match="--x nope: not a field of the store"):
        plot_whatif(_rows(), tmp_path, x="nope")
