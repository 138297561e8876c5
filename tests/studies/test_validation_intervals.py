"""The validation page judges a simulated value by its 95% interval: within the target only when the whole
interval is inside, outside only when the whole interval is outside, undecided otherwise."""

from __future__ import annotations

import math

import pandas as pd

from gupsim.studies.runpool import with_precision
from gupsim.studies.validation import Comparison, compare, comparison_markdown, interval_cells
from gupsim.engines.run import make_run_config


def _comparison() -> Comparison:
    ref = pd.DataFrame({"nodes": [1, 2, 3, 4, 5, 6], "gups": [1.0] * 6})
    sim = pd.DataFrame({"nodes": [1, 2, 3, 4, 5, 6],
                        "sim_gups": [1.0, 1.25, 1.12, 1.0, 1.0, 0.80],
                        "sim_gups_low": [0.95, 1.20, 1.10, math.nan, 0.99, 0.70],
                        "sim_gups_high": [1.05, 1.30, 1.20, math.nan, 1.01, 0.84]})
    return Comparison(name="t", title="T", key="nodes", frame=compare(ref, sim, "nodes", ["gups"]),
                      targets={"gups": 0.15}, fitted={(5, "*"): "a constant"})


def test_rows_are_within_outside_or_undecided_by_their_whole_interval():
    c = _comparison()
    assert list(c.verdicts("gups")) == ["within", "outside", "undecided", "no interval", "", "outside"]
    assert c.interval_line("gups").endswith("1 within, 2 outside, 1 undecided, 1 no interval")
    # the point estimate alone would call row 3 (+12%) within its target
    assert abs(c.errors("gups")[2]) < 0.15


def test_the_page_shows_each_value_with_its_interval():
    page = comparison_markdown(_comparison())
    assert "| 1 | 1 | 1 [0.95, 1.05] | +0.0% |" in page
    assert "| 4 | 1 | 1 | +0.0% |" in page  # no interval: the value alone
    assert "judged by the 95% interval" in page


def test_interval_cells_are_nan_where_the_run_gave_no_valid_interval():
    ok = {"precision": "ok", "gups_ci_low": 0.1, "gups_ci_high": 0.2}
    assert interval_cells(ok) == {"sim_gups_low": 0.1, "sim_gups_high": 0.2}
    assert all(math.isnan(v) for v in interval_cells(ok | {"precision": "insufficient"}).values())


def test_pools_run_to_a_precision_with_the_fixed_length_as_cap():
    run = make_run_config(machine="bgl", shape="2x2x2", algorithm="one-packet", updates_per_process=4096)
    assert with_precision(run, 0.01).precision == 0.01 and with_precision(run, 0.01).updates_per_process == 4096
    assert with_precision(run, None) is run
    own = run.model_copy(update={"precision": 0.05})
    assert with_precision(own, 0.01).precision == 0.05
    verify = make_run_config(machine="bgl", shape="2x2x2", algorithm="one-packet", updates_per_process=64, verify=True)
    assert with_precision(verify, 0.01).precision is None
