"""Absurd but finite input: a shape written loosely is normalised, an impossible one is a shape error.

``' 4x4x4 '`` and ``4X4X4`` had been kept verbatim in the record (and so in the run's key), and
``99999999999999999999x2x2`` had been refused with a line about ``log2_table_size``, not the shape.
"""

from __future__ import annotations

import re

import json

import pytest
from click.testing import CliRunner

from gupsim.app.cli import cli
from gupsim.base.errors import GupsimError
from gupsim.engines.run import make_run_config
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


# ------------------------------------------------------------------ values outside what any machine has had


@pytest.fixture(autouse=True)
def _warn_again(monkeypatch):
    """Each test sees its warnings: gupsim says each once per process."""
    from gupsim.config import plausible

    monkeypatch.setattr(plausible, "_warned", set())


def _what_if(item: str):
    return _gupsim("run", "--shape", "2x2x2", "--updates", "16", "--algorithm", "one-packet", "--set", item)


@pytest.mark.parametrize("item, field, shown", [
    ("clock_hz=1e300", "cpu.clock_hz", "cpu.clock_hz=1e+300 is outside its plausible range 1e+06 to 1e+10 Hz"),
    ("router_delay_ns=1e300", "network.router_delay_ns",
     "network.router_delay_ns=1e+300 is outside its plausible range 0 to 10000 ns"),
    ("link_bytes_per_s=10", "network.link_bytes_per_s",
     "network.link_bytes_per_s=10 is outside its plausible range 1e+06 to 1e+12 bytes/s"),
])
def test_an_implausible_but_computable_value_runs_with_one_warning(item, field, shown):
    result = _what_if(item)
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().splitlines() == [f"gupsim: warning: {shown}; running it as a what-if"]
    # the summary shows huge numbers in scientific form, not 300 digits
    assert not re.search(r"\d{16}", result.stdout), result.stdout  # no number printed digit by digit


def test_a_value_whose_run_overflows_is_refused_in_one_line():
    result = _what_if("clock_hz=1e308")
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "gupsim: error: the run's cycles_per_update overflowed a double (inf): cpu.clock_hz=1e+308 is outside "
        "its plausible range 1e+06 to 1e+10 Hz; use smaller values"]


def test_the_shipped_machines_are_plausible_and_the_ranges_are_documented():
    from gupsim.config import CpuConfig, load_machine
    from gupsim.config.plausible import implausible

    for name in ("bgl", "bgp"):
        assert implausible(load_machine(name)) == []
    assert CpuConfig.model_fields["clock_hz"].description.endswith("(plausible 1e+06 to 1e+10 Hz)")


def test_a_partition_larger_than_any_built_is_named_a_what_if_in_the_summary():
    """65x33x33 on bgl (70,785 nodes, more than the 65,536 of the largest BG/L) had run without a word; the
    record of a run that size takes minutes, so its summary is checked on a small run's record."""
    from gupsim.app.reporting import format_record
    from gupsim.engines.run import simulate

    _, record = simulate(make_run_config(machine="bgl", shape="2x2x2", algorithm="one-packet",
                                         updates_per_process=16))
    assert "what-if" not in format_record(record)
    notes = [line for line in format_record(record | {"nodes": 70_785}).splitlines() if "largest" in line]
    assert notes == ["  note: 70,785 nodes is more than the largest bgl built (65,536, seed 000 §5: the 64K-node "
                     "Blue Gene/L, 64x32x32): a what-if"]
    assert "largest bgl" not in format_record(record | {"nodes": 65_536})
