"""Absurd but finite input: a shape written loosely is normalised, an impossible one is a shape error.

``' 4x4x4 '`` and ``4X4X4`` had been kept verbatim in the record (and so in the run's key), and
``99999999999999999999x2x2`` had been refused with a line about ``log2_table_size``, not the shape.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gupsim.cli import cli
from gupsim.errors import GupsimError
from gupsim.runner import make_run_config
from gupsim.topology import MAX_RUN_NODES, parse_shape, run_shape


def _gupsim(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("written", [" 4x4x4 ", "4X4X4", "4 x 4 x 4", "04x4x4"])
def test_a_loosely_written_shape_is_recorded_as_xyz(written):
    result = _gupsim("run", "--shape", written, "--updates", "16", "--algorithm", "one-packet", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["shape"] == "4x4x4"
    assert make_run_config(machine="bgl", shape=written, algorithm="one-packet",
                           updates_per_process=16).shape == "4x4x4"


@pytest.mark.parametrize("shape, expected", [
    ("99999999999999999999x2x2", "399,999,999,999,999,999,996 nodes, more than the 2,147,483,647 a run can address"),
    ("2048x1024x1024", "2,147,483,648 nodes, more than"),
    ("0x4x4", "each dimension must be a positive integer"),
    ("-1x4x4", "each dimension must be a positive integer"),
    ("4.5x4x4", "each dimension must be a positive integer"),
])
def test_an_impossible_shape_is_a_shape_error(shape, expected):
    result = _gupsim("run", "--shape", shape, "--updates", "16")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gupsim: error: invalid shape {shape!r}: "), result.output
    assert expected in lines[0]


def test_the_largest_addressable_shape_is_a_run_shape_and_bounds_take_any():
    assert run_shape(f" {MAX_RUN_NODES}X1x1") == f"{MAX_RUN_NODES}x1x1"
    assert parse_shape("99999999999999999999x2x2") == (99999999999999999999, 2, 2)  # gupsim bounds: closed forms
    with pytest.raises(GupsimError, match="invalid shape"):
        run_shape("8x8")
