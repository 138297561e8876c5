"""Machine descriptions: strict loading, one-line errors, --set overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gupsim.config import MACHINES_DIR, load_machine
from gupsim.base.errors import GupsimError, UnknownNameError
from gupsim.config.overrides import leaf_fields, parse_set_options


def _write_variant(tmp_path: Path, mutate) -> Path:
    data = yaml.safe_load((MACHINES_DIR / "bgl.yaml").read_text())
    mutate(data)
    # the cycle table is named as package data (package:...), which any folder reads
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_bgl_loads_with_units_and_sources(bgl):
    assert bgl.cpu.clock_hz == 700e6
    assert bgl.network.link_bytes_per_s == 175e6
    assert bgl.network.chunk_bytes == 32 and bgl.network.max_chunks_per_packet == 8
    assert bgl.network.wire_overhead_bytes == 12
    assert bgl.cpu.generate_cycles + bgl.cpu.update_cycles == 104


def test_every_yaml_number_has_a_source_comment():
    for line in (MACHINES_DIR / "bgl.yaml").read_text().splitlines():
        key, _, rest = line.partition(":")
        value = rest.split("#")[0].strip()
        if value and value.replace(".", "").replace("e+", "").replace("-", "").isdigit():
            assert "#" in rest, f"no source comment on: {line.strip()}"


def test_raw_device_table_is_read_from_csv_and_interpolated(bgl):
    assert bgl.costs.send(32) == 14 and bgl.costs.recv(32) == 54
    assert bgl.costs.send(256) == 70 and bgl.costs.recv(256) == 192
    assert bgl.costs.send(48) == pytest.approx(18.0)  # halfway between 14 and 22
    assert bgl.costs.recv(8) == 54  # below one chunk costs one chunk


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["network"].update(link_byte_per_s=1), "unknown key 'network.link_byte_per_s' (did you mean 'link_bytes_per_s'?)"),
        (lambda d: d["network"].update(link_bytes_per_s=-175e6),
         "network.link_bytes_per_s: Input should be greater than or equal to 1"),
        (lambda d: d["cpu"].update(clock_hz="fast"), "cpu.clock_hz: Input should be a valid number"),
        (lambda d: d["network"].pop("chunk_bytes"), "missing required key 'network.chunk_bytes'"),
        (lambda d: d["network"].update(link_buffer_chunks=4), "cannot hold one full packet"),
        (lambda d: d["network"].update(topology="ring"), "network.topology: Input should be 'torus', 'mesh' or 'auto'"),
        (lambda d: d["network"].update(fifos="per-link"), "network.fifos: Input should be 'shared' or 'per-dimension'"),
        (lambda d: d.update(colour="blue"), "unknown key 'colour'"),
        (lambda d: d["cpu"].update(raw_device_cycle_table="nowhere.csv"), "file not found"),
    ],
)
def test_bad_machine_is_one_line_naming_file_and_field(tmp_path, mutate, expected):
    path = _write_variant(tmp_path, mutate)
    with pytest.raises(GupsimError) as err:
        load_machine(str(path))
    message = str(err.value)
    assert expected in message
    assert str(path) in message or "nowhere.csv" in message
    assert "\n" not in message


def test_invalid_yaml_is_reported_with_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nnetwork: [unclosed\n")
    with pytest.raises(GupsimError, match="not valid YAML"):
        load_machine(str(path))


def test_unknown_machine_lists_valid_choices():
    with pytest.raises(UnknownNameError, match="valid choices: bgl"):
        load_machine("bgq")


def test_set_overrides_by_bare_and_dotted_name():
    sets = parse_set_options(["link_bytes_per_s=350e6", "cpu.clock_hz=1e9", "router_delay_ns=0"])
    assert sets == {"network.link_bytes_per_s": 350e6, "cpu.clock_hz": 1e9, "network.router_delay_ns": 0}
    m = load_machine("bgl", sets)
    assert m.network.link_bytes_per_s == 350e6 and m.cpu.clock_hz == 1e9
    assert load_machine("bgl").network.link_bytes_per_s == 175e6  # the file is untouched


@pytest.mark.parametrize(
    "item, expected",
    [
        ("link_bytes_per_sec=1", "no such machine field (did you mean 'link_bytes_per_s'?)"),
        ("link_bytes_per_s", "expected KEY=VALUE"),
    ],
)
def test_bad_set_is_one_line(item, expected):
    with pytest.raises(GupsimError, match=expected.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        parse_set_options([item])


def test_bad_set_value_blames_the_override():
    with pytest.raises(GupsimError,
                       match=r"^--set network.link_bytes_per_s=-1: Input should be greater than or equal to 1"):
        load_machine("bgl", parse_set_options(["link_bytes_per_s=-1"]))


def test_machine_is_frozen(bgl):
    with pytest.raises(Exception):
        bgl.cpu.clock_hz = 1.0


def test_leaf_fields_cover_every_section():
    fields = leaf_fields()
    assert "network.link_bytes_per_s" in fields and "mpi.test_cycles" in fields and "cpu.clock_hz" in fields


def test_unknown_key_in_an_optional_section_gets_a_hint():
    # dma is optional (BG/L has none); its keys still get "did you mean".
    with pytest.raises(GupsimError, match=r"unknown key 'dma.engine_byte_per_s' \(did you mean 'engine_bytes_per_s'\?\)"):
        load_machine("bgp", {"dma.engine_byte_per_s": 1.0})
    with pytest.raises(GupsimError, match=r"unknown key 'dma.zzz' \(valid: engine_bytes_per_s, "):
        load_machine("bgp", {"dma.zzz": 1.0})


def test_fifos_per_dimension_are_refused_with_the_dma_model():
    from gupsim.config import load_machine

    with pytest.raises(GupsimError, match="network.fifos=per-dimension: the DMA model"):
        load_machine("bgp", {"network.fifos": "per-dimension"})
