"""gupsim compare's arithmetic and verdicts (gupsim.studies.compare)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from gupsim.model.output_analysis import VT_DF, t_975
from gupsim.studies.compare import Comparison, Side, grouped, what_changed

T = t_975(VT_DF)


def _row(rate, half, link=175e6, seed=0, **extra):
    config = {"seed": seed, "machine": {"network": {"link_bytes_per_s": link}}}
    return {"gups_steady": rate, "gups_ci_low": rate - half, "gups_ci_high": rate + half, "precision": "ok",
            "gups": rate, "link_utilisation_max": 0.19, "send_blocking_factor": 0.01, "processes": 64,
            "sim_time_s": 1.0, "config_json": json.dumps(config), "status": "ok",
            "var.link_bytes_per_s": link, "var.seed": seed} | extra


def test_a_change_inside_both_intervals_is_no_detectable_change_and_names_what_bound_the_run():
    c = Comparison(Side.of("A", [_row(0.0400, 0.0004)]), Side.of("B", [_row(0.0401, 0.0004, link=350e6)]),
                   change="links x2")
    low, high = c.ratio_interval()
    assert low < 1 < high and c.detectable() is False
    assert c.verdict().startswith("links x2: x1.002 [")
    assert "no detectable change at 95%; the reference run is CPU-bound (busiest link 19% busy" in c.verdict()


def test_the_ratio_s_interval_is_the_delta_method_s():
    a, b = Side.of("A", [_row(1.0, 0.01 * T)]), Side.of("B", [_row(2.0, 0.02 * T)])
    c = Comparison(a, b)
    assert c.ratio == 2.0 and c.ratio_se == pytest.approx(2.0 * (0.01 ** 2 + 0.01 ** 2) ** 0.5)
    assert c.difference_interval() == pytest.approx((1.0 - T * (0.01 ** 2 + 0.02 ** 2) ** 0.5,
                                                     1.0 + T * (0.01 ** 2 + 0.02 ** 2) ** 0.5))
    assert c.detectable() and "faster by 100.0%" in c.verdict()


def test_a_side_without_a_valid_interval_gets_no_verdict():
    c = Comparison(Side.of("A", [_row(1.0, 0.01) | {"precision": "insufficient"}]), Side.of("B", [_row(1.0, 0.01)]))
    assert c.detectable() is None and "no verdict" in c.verdict()


def test_seeds_pool_into_one_side_with_a_smaller_error():
    one = Side.of("A", [_row(1.0, 0.02)])
    two = Side.of("A", [_row(1.0, 0.02), _row(1.02, 0.02, seed=1)])
    assert two.rate == pytest.approx(1.01) and two.se == pytest.approx(one.se / 2 ** 0.5)


def test_what_changed_names_the_configuration_keys_that_differ_but_not_the_seed():
    assert what_changed([_row(1, 0.1)], [_row(1, 0.1, link=350e6, seed=3)]) == "link_bytes_per_s x2"
    assert what_changed([_row(1, 0.1)], [_row(1, 0.1, seed=3)]) == "same configuration"


def test_a_store_grouped_by_a_field_compares_each_level_with_the_first_point_by_point():
    rows = [_row(r, 0.001, link=link, seed=seed, **{"var.shape": shape})
            for shape, r in (("2x2x2", 0.02), ("4x4x4", 0.04))
            for link in (175e6, 350e6) for seed in (0, 1)]
    out = grouped(pd.DataFrame(rows), "var.link_bytes_per_s")
    assert [len(c.a.rows) for c in out] == [2, 2] and all(c.detectable() is False for c in out)
    assert "shape=2x2x2" in out[0].a.label and out[0].b.label == "link_bytes_per_s=350 MB/s"
    with pytest.raises(ValueError, match="no field"):
        grouped(pd.DataFrame(rows), "var.nope")
