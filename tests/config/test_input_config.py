"""Bad machine input and bad ``--set`` values: one line saying what is wrong and where.

Each case here once ended in a PyYAML or pandas traceback, a message blaming
the wrong file or key, or a silent default; the loader in gupsim.config now
names the key (or ``--set KEY=VALUE``) and the file in a single line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gupsim.app.cli import main
from gupsim.config import MACHINES_DIR, load_machine
from gupsim.base.errors import GupsimError
from gupsim.config.overrides import parse_key_value, parse_set_options
from gupsim.config.yaml_files import StrictLoader, read_yaml_mapping

TABLE = yaml.safe_load((MACHINES_DIR / "bgl.yaml").read_text())["cpu"]["raw_device_cycle_table"]
HEADER = "payload_bytes,send_mean_cycles,send_variance,recv_mean_cycles,recv_variance\n"


def _reject(capsys, argv: list[str]) -> str:
    """Run the CLI, expect exit status 2 and exactly one ``gupsim: error:`` line; return that line."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gupsim: error: "), err
    return lines[0]


def _fails(name_or_path: str, overrides: dict | None = None) -> str:
    with pytest.raises(GupsimError) as err:
        load_machine(name_or_path, overrides)
    message = str(err.value)
    assert "\n" not in message
    return message


def _machine_copy(tmp_path: Path, machine: str = "bgl", edit=lambda text: text, name: str = "my.yaml") -> Path:
    """The shipped file as text (comments and layout kept), edited; it names its table as package data, which
    a copy in any folder reads."""
    text = (MACHINES_DIR / f"{machine}.yaml").read_text()
    path = tmp_path / name
    path.write_text(edit(text))
    return path


# --------------------------------------------------------------------------- 1: --set values that are not YAML


@pytest.mark.parametrize("value", ["[", "{", ": x", "*a", "%", "@x"])
def test_a_set_value_that_is_not_yaml_is_one_line(capsys, value):
    line = _reject(capsys, ["run", "--shape", "2x2x2", "--updates", "16", "--set", f"clock_hz={value}"])
    assert f"--set clock_hz={value}: not a valid value" in line


@pytest.mark.parametrize("argv", [
    ["run", "--shape", "2x2x2", "--updates", "16", "--option", "max_pending=["],
    ["bounds", "--shape", "2x2x2", "--set", "clock_hz=["],
])
def test_option_and_bounds_values_that_are_not_yaml_are_one_line(capsys, argv):
    assert f"{argv[-2]} {argv[-1]}: not a valid value" in _reject(capsys, argv)


# --------------------------------------------------------------------------- 2: misspelt keys


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t.replace("link_bytes_per_s:", "link_bytes_per_sec:"),
     "unknown key 'network.link_bytes_per_sec' (did you mean 'link_bytes_per_s'?)"),
    (lambda t: t.replace("\ncpu:", "\ncpus:"), "unknown key 'cpus' (did you mean 'cpu'?)"),
])
def test_a_misspelt_key_is_named_not_the_key_it_hides(tmp_path, edit, expected):
    path = _machine_copy(tmp_path, edit=edit)
    message = _fails(str(path))
    assert message == f"{path}: {expected}"


def test_a_misspelt_key_in_a_switched_network_is_named(tmp_path):
    path = _machine_copy(tmp_path, "hypatia-dv", lambda t: t.replace("lane_bits_per_s:", "lane_bit_per_s:"))
    assert _fails(str(path)) == (f"{path}: unknown key 'network.lane_bit_per_s' in a data-vortex network "
                                 f"(did you mean 'lane_bits_per_s'?)")


# --------------------------------------------------------------------------- 3: duplicate keys


def test_a_duplicate_key_in_a_machine_file_is_refused_with_its_line(tmp_path):
    path = _machine_copy(tmp_path, edit=lambda t: t.replace("  chunk_bytes: 32", "  chunk_bytes: 32\n  chunk_bytes: 64"))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "chunk_bytes: 64" in text)
    assert _fails(str(path)).startswith(f"{path}: line {line}: duplicate key 'chunk_bytes'")


def test_a_duplicate_key_in_a_sweep_file_is_refused(tmp_path, capsys):
    path = tmp_path / "sweep.yaml"
    path.write_text("name: t\nmachine: bgl\ngrid:\n  shape: [2x2x2]\n  shape: [4x4x4]\n")
    assert f"{path}: line 5: duplicate key 'shape'" in _reject(capsys, ["sweep", str(path), "--dry-run"])


def test_merge_keys_may_still_be_overridden(tmp_path):
    # '<<' brings defaults in; the mapping's own key replacing one of them is not a duplicate.
    path = tmp_path / "m.yaml"
    path.write_text("base: &b {a: 1, b: 2}\nother:\n  <<: *b\n  b: 3\n")
    assert read_yaml_mapping(path, "fields")["other"] == {"a": 1, "b": 3}


# --------------------------------------------------------------------------- 4: the cycle table


@pytest.mark.parametrize("content, expected", [
    (None, "not a file"),  # a directory
    ("root:x:0:0:root:/root:/bin/bash\nbin:x:1:1:bin:/bin:/usr/sbin/nologin\n", "missing columns"),
    ("", "not a readable CSV table"),
    (HEADER, "no rows"),
    (HEADER + "32,fourteen,0,54,0\n", "data row 1: send_mean_cycles: expected a non-negative number (got 'fourteen')"),
    (HEADER + "32,14,0,,0\n", "data row 1: recv_mean_cycles: expected a non-negative number (got an empty cell)"),
    (HEADER + "32,-14,0,54,0\n", "send_mean_cycles: expected a non-negative number (got -14)"),  # not np.int64(-14)
    (HEADER + "32,14,0,54,0\n32,15,0,55,0\n", "payload_bytes repeats a size"),
])
def test_a_bad_cycle_table_fails_at_load_naming_the_set_and_the_file(tmp_path, content, expected):
    table = tmp_path / "table.csv"
    if content is None:
        table.mkdir()
    else:
        table.write_text(content)
    message = _fails("bgl", {"cpu.raw_device_cycle_table": str(table)})
    # the --set is quoted first (a value over 80 characters shortened: tmp_path's length varies), then the file
    assert message.startswith("--set cpu.raw_device_cycle_table=")
    assert f": {table}: " in message and expected in message.split(f": {table}: ", 1)[1]


def test_a_bad_cycle_table_named_in_the_file_blames_the_file(tmp_path):
    table = tmp_path / "table.csv"
    table.write_text(HEADER)
    path = _machine_copy(tmp_path, edit=lambda t: t.replace(TABLE, str(table)))
    assert _fails(str(path)).startswith(f"{path}: cpu.raw_device_cycle_table: {table}: no rows")


def test_a_one_row_cycle_table_is_enough(tmp_path):
    table = tmp_path / "table.csv"
    table.write_text(HEADER + "32,14,0,54,0\n")
    costs = load_machine("bgl", {"cpu.raw_device_cycle_table": str(table)}).costs
    assert costs.send(256) == 14 and costs.recv(8) == 54


def test_the_header_only_table_no_longer_reaches_simpy(capsys, tmp_path):
    table = tmp_path / "table.csv"
    table.write_text(HEADER)
    line = _reject(capsys, ["run", "--shape", "2x2x2", "--updates", "16", "--algorithm", "one-packet", "--engine",
                            "simpy", "--set", f"raw_device_cycle_table={table}"])
    assert "no rows" in line and "cpu.raw_device_cycle_table" in line


# --------------------------------------------------------------------------- 5: unreadable machine files


def test_a_machine_path_that_is_a_directory_is_one_line(capsys, tmp_path):
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    assert f"{folder}: cannot read" in _reject(capsys, ["run", "--machine", str(folder), "--shape", "2x2x2"])


def test_a_machine_file_that_is_not_utf8_is_one_line(capsys, tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: m\u00e4chtig\n".encode("latin-1"))
    assert f"{path}: not UTF-8 text" in _reject(capsys, ["run", "--machine", str(path), "--shape", "2x2x2"])


# --------------------------------------------------------------------------- 6: counts too large for the engines


def test_a_huge_count_fails_validation_naming_the_field(tmp_path):
    path = _machine_copy(tmp_path, edit=lambda t: re.sub(r"link_buffer_chunks: \d+", "link_buffer_chunks: "
                                                         "99999999999999999999999", t))
    assert _fails(str(path)).startswith(f"{path}: network.link_buffer_chunks: Input should be less than or equal to")


def test_a_huge_count_in_a_switched_machine_fails_validation():
    assert _fails("hypatia-dv", {"network.vic_window_packets": 2**40}).startswith(
        "--set network.vic_window_packets=1099511627776: Input should be less than or equal to")


# --------------------------------------------------------------------------- 7: blame the --set, not the file


@pytest.mark.parametrize("machine, item, expected", [
    ("hypatia-dv", "lane_bits_per_s=-1",
     "--set network.lane_bits_per_s=-1: Input should be greater than or equal to 1"),
    ("hypatia-dv", "switch_radix=1", "--set network.switch_radix=1: Input should be greater than or equal to 2"),
    ("hypatia-ib", "switch_ports=1", "--set network.switch_ports=1: Input should be greater than or equal to 4"),
    ("hypatia-dv", "link_bytes_per_s=1e9",
     "--set network.link_bytes_per_s=1000000000.0: unknown key 'network.link_bytes_per_s' in a data-vortex network"),
    ("hypatia-dv", "topology=ring", "--set network.topology=ring: Input should be one of 'data-vortex', 'fat-tree'"),
    ("bgl", "max_chunks_per_packet=100", "--set network.max_chunks_per_packet=100: network: link_buffer_chunks=32 "
                                         "cannot hold one full packet"),
    ("bgl", "link_buffer_chunks=1", "--set network.link_buffer_chunks=1: network: link_buffer_chunks=1 cannot hold"),
    ("bgl", "dma.engine_bytes_per_s=1e9", "--set dma.engine_bytes_per_s=1000000000.0: missing required key "
                                          "'dma.header_bytes' (bgl.yaml has no dma section"),
    ("bgl", "kind=switched", "--set kind=switched: unknown key"),
    ("bgl", "kind=ring", "--set kind=ring: unknown machine kind 'ring'"),
])
def test_a_bad_set_is_blamed_and_no_union_tag_is_shown(machine, item, expected):
    message = _fails(machine, parse_set_options([item]))
    assert message.startswith(expected)
    assert ".yaml:" not in message.split(": ", 1)[0] and "data-vortex." not in message and "fat-tree." not in message
    assert "[+" not in message


@pytest.mark.parametrize("machine, key", [
    ("bgl", "cpu.clock_hz"), ("bgl", "network.link_bytes_per_s"), ("bgp", "dma.engine_bytes_per_s"),
    ("hypatia-dv", "cpu.clock_hz"), ("hypatia-dv", "network.lane_bits_per_s"),
    ("hypatia-dv", "network.pcie_bytes_per_s"),
    ("hypatia-ib", "network.link_bytes_per_s"),
])
def test_a_rate_below_one_per_second_is_refused(machine, key):
    """A rate in (0, 1) per second is no machine: a denormal clock (1e-320 Hz) made every cycle last an
    infinite time and the record all n/a; it must be refused."""
    for value in (1e-320, 0.5):
        assert _fails(machine, {key: value}) == f"--set {key}={value}: Input should be greater than or equal to 1 (got {value})"


def test_a_bad_value_in_a_switched_file_shows_no_union_tag(tmp_path):
    path = _machine_copy(tmp_path, "hypatia-dv", lambda t: re.sub(r"lane_bits_per_s: \S+", "lane_bits_per_s: -1", t))
    assert _fails(str(path)) == f"{path}: network.lane_bits_per_s: Input should be greater than or equal to 1 (got -1)"


def test_a_broken_file_is_still_blamed_under_an_unrelated_set(tmp_path):
    path = _machine_copy(tmp_path, edit=lambda t: t.replace("  chunk_bytes: 32", "  chunk_bytes: -32"))
    assert _fails(str(path), {"cpu.clock_hz": 1e9}).startswith(f"{path}: network.chunk_bytes:")


# --------------------------------------------------------------------------- 9: 350e6 is a number


def test_floats_without_a_dot_are_numbers_in_machine_files(tmp_path):
    path = _machine_copy(tmp_path, edit=lambda t: re.sub(r"link_bytes_per_s: \S+", "link_bytes_per_s: 350e6", t)
                         .replace("clock_hz: 700.0e+6", "clock_hz: 7.0e8"))
    machine = load_machine(str(path))
    assert machine.network.link_bytes_per_s == 350e6 and machine.cpu.clock_hz == 700e6
    assert machine.network.chunk_bytes == 32 and isinstance(machine.network.chunk_bytes, int)


def test_strict_loader_reads_yaml_12_floats_and_leaves_other_text():
    assert yaml.load("[350e6, 1e-3, .5E2, -2e+1, 3, 4x4x4, e6, 1e]", Loader=StrictLoader) == [
        350e6, 1e-3, 50.0, -20.0, 3, "4x4x4", "e6", "1e"]
    assert parse_key_value("link_bytes_per_s=350e6", "--set") == ("link_bytes_per_s", 350e6)


def test_strict_loader_reads_yaml_12_integers():
    """YAML 1.1 would read 032 as octal 26, 1:30 as 90 (base 60) and 0b101 as 5, silently."""
    assert yaml.load("[032, 0o32, 0x1f, -7, +5, 09, 0, 1:30, 0b101, 1_000]", Loader=StrictLoader) == [
        32, 26, 31, -7, 5, 9, 0, "1:30", "0b101", "1_000"]
    assert parse_key_value("chunk_bytes=032", "--set") == ("chunk_bytes", 32)


def test_strict_loader_reads_yaml_12_booleans():
    """YAML 1.1 would read yes, no, on and off (and y, n) as booleans, so a field given ``off`` saw False."""
    assert yaml.load("[true, False, TRUE, yes, no, on, off, y, n, ~]", Loader=StrictLoader) == [
        True, False, True, "yes", "no", "on", "off", "y", "n", None]
    assert yaml.load("{on: 1, off: 2}", Loader=StrictLoader) == {"on": 1, "off": 2}
    assert parse_key_value("network.flow_control=off", "--set") == ("network.flow_control", "off")


def test_a_yaml_11_boolean_in_a_machine_file_is_named_as_typed(tmp_path):
    path = _machine_copy(tmp_path, edit=lambda t: re.sub(r"fifos: \S+", "fifos: no", t))
    with pytest.raises(GupsimError, match=r"fifos.*\(got 'no'\)"):
        load_machine(str(path))


def test_a_sexagesimal_count_in_a_machine_file_is_refused_not_read_as_base_60(tmp_path):
    path = _machine_copy(tmp_path, edit=lambda t: re.sub(r"chunk_bytes: \S+", "chunk_bytes: 1:30", t))
    with pytest.raises(GupsimError, match="chunk_bytes"):
        load_machine(str(path))


# --------------------------------------------------------------------------- 10: impossible values


def test_mpi_latency_may_not_fall_with_message_size():
    assert _fails("bgl", {"mpi.latency_large_cycles": 100}).startswith(
        "--set mpi.latency_large_cycles=100: mpi: latency_large_cycles=100.0 is below latency_small_cycles")


def test_an_mtu_must_carry_a_byte_but_a_small_one_is_a_what_if():
    # InfiniBand's MTUs are 256-4096 bytes, but a smaller one is a question a user may ask, not an error.
    assert _fails("hypatia-ib", {"network.mtu_bytes": 0}) == (
        "--set network.mtu_bytes=0: Input should be greater than 0 (got 0)")
    load_machine("hypatia-ib", {"network.mtu_bytes": 1})


# --------------------------------------------------------------------------- the Python side of load_machine


@pytest.mark.parametrize("name", [None, 5, "", "  "])
def test_a_machine_that_is_not_a_name_or_path_is_one_line(name):
    """None and 5 had been a TypeError from pathlib; '' had said 'the file exists'."""
    with pytest.raises(GupsimError, match=r"^machine: expected a machine name \(bgl, .*\) or a YAML path, got "):
        load_machine(name)


def test_python_overrides_take_bare_names_as_set_does_and_refuse_one_field_twice():
    assert load_machine("bgl", {"clock_hz": 1e9}).cpu.clock_hz == 1e9  # had been "unknown key 'clock_hz'"
    with pytest.raises(GupsimError, match=r"^overrides: two keys name cpu.clock_hz; give it once$"):
        load_machine("bgl", {"clock_hz": 1e9, "cpu.clock_hz": 2e9})
    with pytest.raises(GupsimError, match=r"^overrides: expected a mapping .* got list$"):
        load_machine("bgl", [("clock_hz", 1e9)])
