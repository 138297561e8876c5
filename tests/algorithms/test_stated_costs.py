"""``gupsim bounds --algorithm``: each algorithm's own eq. (1) and (2) (Algorithm.stated_costs,
gupsim.model.bounds.algorithm_bounds), checked against runs of that algorithm.

``gupsim bounds`` had known no algorithm: it said "bottleneck network" for shapes where ``routed`` is CPU-bound,
and a routed run then landed above the printed network bound (issue 47).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gupsim.algorithms.base import algorithm_class, validate_options
from gupsim.app.cli import cli
from gupsim.engines.run import make_run_config, simulate
from gupsim.model.bounds import algorithm_bounds
from gupsim.topology.base import parse_shape


def _stated(machine, shape: str, algorithm: str, **options) -> dict:
    costs = algorithm_class(algorithm).stated_costs(machine, parse_shape(shape), validate_options(algorithm, options))
    return algorithm_bounds(machine, shape, costs)


@pytest.mark.parametrize("shape, algorithm", [("4x4x4", "routed"), ("8x8x8", "routed"), ("8x8x8", "one-packet"),
                                              ("4x4x4", "one-packet")])
def test_a_run_stays_under_its_algorithms_stated_bounds(bgl, shape, algorithm):
    stated = _stated(bgl, shape, algorithm)
    lower = min(stated["cpu_bound_gups"], stated["network_bound_gups"])
    _, record = simulate(make_run_config(machine=bgl, shape=shape, algorithm=algorithm, updates_per_process=2048,
                                         precision=None))
    assert record["gups_total"] <= lower, (record["gups_total"], stated)
    assert record["gups_ci_low"] <= lower, (record["gups_ci_low"], stated)
    # and the bound is not loose by more than the run's start and drain: within a factor of 2 of the whole run
    assert record["gups_total"] > lower / 2, (record["gups_total"], stated)
    # the wire bytes and packing it states are the run's own, within a tenth
    assert stated["updates_per_packet"] == pytest.approx(record["updates_per_packet"], rel=0.1)


def test_routed_is_cpu_bound_where_one_update_a_packet_is_network_bound(bgl):
    assert _stated(bgl, "8x8x8", "one-packet")["binding"] == "network"
    routed = _stated(bgl, "8x8x8", "routed")
    assert routed["binding"] == "cpu" and routed["network_bound_gups"] > 5 * routed["cpu_bound_gups"]
    assert "cpu bound is the lower" in routed["reason"]


def test_an_option_changes_the_stated_costs(bgl):
    plain = _stated(bgl, "8x8x8", "one-packet")
    upc = _stated(bgl, "8x8x8", "one-packet", payload_bytes=64, wire_bytes=75, remote_overhead_cycles=100.0)
    assert upc["bytes_per_update"] == 75 and plain["bytes_per_update"] == 44
    assert upc["cycles_per_update"] > plain["cycles_per_update"] + 99


def _cli(*argv):
    return CliRunner().invoke(cli, ["bounds", "--shape", "8x8x8", *argv])


def test_bounds_with_an_algorithm_names_what_binds():
    result = _cli("--algorithm", "routed")
    assert result.exit_code == 0, result.output
    assert "routed's own bounds" in result.stdout and "binds                   cpu: routed needs" in result.stdout


@pytest.mark.parametrize("argv, says", [
    (["--algorithm", "nosuch"], "valid choices: alltoall, baseline"),
    (["--algorithm", "dv"], "dv states no costs for eq. (1) and (2) yet (those that do: one-packet, routed)"),
    (["--algorithm", "routed", "--option", "nosuch=1"], "unknown option 'nosuch'"),
    (["--option", "window=2"], "give --algorithm NAME too"),
])
def test_bounds_refuses_an_algorithm_it_cannot_bound_in_one_line(argv, says):
    result = _cli(*argv)
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.output
    assert says in result.stderr, result.stderr
