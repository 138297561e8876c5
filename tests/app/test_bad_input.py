"""Fuzzing the front door: broken machine files and command lines are rejected in one line.

Every case must end with exit status 2 and a single ``gupsim: error:`` (or
click usage) line on stderr -- never a traceback, never a silent default.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gupsim.app.cli import main
from gupsim.config import MACHINES_DIR

BASE = yaml.safe_load((MACHINES_DIR / "bgl.yaml").read_text())
LEAVES = [(section, key) for section, body in BASE.items() if isinstance(body, dict) for key in body]
NUMERIC = [(s, k) for s, k in LEAVES if isinstance(BASE[s][k], (int, float)) and not isinstance(BASE[s][k], bool)]
BAD_VALUES = st.sampled_from([-1, -1e9, "fast", None, [], {"a": 1}, "", float("nan"), float("-inf"), True])


def _reject(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, (argv, err)
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    if lines and lines[0].startswith("gupsim: error:"):
        assert len(lines) == 1, err
    else:  # click's own usage errors: a usage line, a hint line and one "Error:" line
        assert any(line.startswith("Error:") for line in lines), err
    return err


def _write(tmp_path: Path, data, name="m.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return str(path)


mutations = st.one_of(
    st.tuples(st.just("bad_value"), st.sampled_from(NUMERIC), BAD_VALUES),
    st.tuples(st.just("unknown_key"), st.sampled_from(LEAVES), st.text("abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=12)),
    st.tuples(st.just("missing_key"), st.sampled_from(LEAVES), st.none()),
    st.tuples(st.just("bad_section"), st.sampled_from(["network", "cpu", "mpi"]), st.sampled_from([1, "x", [], None])),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=mutations)
def test_broken_machine_files_are_rejected_in_one_line(tmp_path, capsys, mutation):
    kind, where, value = mutation
    data = copy.deepcopy(BASE)
    if kind == "bad_value":
        section, key = where
        if value is True and key in ("processes_per_node",):
            value = "two"
        data[section][key] = value
    elif kind == "unknown_key":
        section, key = where
        if value in data[section]:
            value += "_x"
        data[section][value] = 1
    elif kind == "missing_key":
        section, key = where
        del data[section][key]
    else:
        data[where] = value
    err = _reject(capsys, ["run", "--machine", _write(tmp_path, data), "--shape", "2x2x2", "--updates", "10"])
    assert "m.yaml" in err or "--set" in err


@pytest.mark.parametrize("machine", ["bgl", "bgp", "cray-x1"])
def test_a_torus_machine_file_without_its_router_is_refused_naming_the_key(tmp_path, capsys, machine):
    # The property test above deletes one leaf at random; this case always runs: no default router stands in.
    data = yaml.safe_load((MACHINES_DIR / f"{machine}.yaml").read_text())
    del data["network"]["router"]
    err = _reject(capsys, ["run", "--machine", _write(tmp_path, data), "--shape", "2x2x2", "--updates", "10"])
    assert "router" in err and "m.yaml" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--shape", "0x4x4"], ["run", "--shape", "4x4"], ["run", "--shape", "4x4x4x4"], ["run", "--shape", "axbxc"],
        ["run", "--shape", ""], ["run", "--shape", "1x1x1"], ["run", "--shape", "4.5x4x4"], ["run", "--shape", "-4x4x4"],
        ["run", "--algorithm", ""], ["run", "--algorithm", "BASELINE"], ["run", "--machine", "nosuch"],
        ["run", "--machine", "/nonexistent/m.yaml"], ["run", "--updates", "-3"], ["run", "--updates", "many"],
        ["run", "--seed", "-1"], ["run", "--set", "clock_hz"], ["run", "--set", "=5"], ["run", "--set", "nosuch=1"],
        ["run", "--set", "clock_hz=zero"], ["run", "--set", "clock_hz=0"], ["run", "--set", "link_bytes_per_s=-1e6"],
        ["run", "--set", "chunk_bytes=0"], ["run", "--set", "max_chunks_per_packet=0"],
        ["run", "--set", "link_buffer_chunks=1"], ["run", "--set", "topology=ring"], ["run", "--set", "routing=magic"], ["run", "--set", "buffer_order=lifo"],
        ["run", "--set", "processes_per_node=9"], ["run", "--set", "network=3"], ["run", "--option", "foo=1"],
        ["run", "--option", "max_pending=2000"], ["run", "--option", "max_pending=0"], ["run", "--option", "noequals"],
        ["run", "--algorithm", "one-packet", "--option", "payload_bytes=4096"],
        ["run", "--algorithm", "one-packet", "--option", "payload_bytes=2"],
        ["run", "--algorithm", "routed", "--option", "software_header_bytes=999"],
        ["run", "--log2-table-size", "0"], ["run", "--log2-table-size", "64"], ["run", "--log2-table-size", "3"],
        ["run", "--verify", "--updates", "100000"], ["bounds"], ["bounds", "--shape", "8x8"],
        ["bounds", "--shape", "8x8x8", "--bytes-per-update", "0"], ["bounds", "--shape", "8x8x8", "--set", "x=1"],
        ["reproduce"], ["reproduce", "bgl-nope"], ["nosuchcommand"], ["run", "--nosuchflag"],
        ["run", "--set", "mpi.latency_large_bytes=4"], ["run", "--set", "cpu.raw_device_cycle_table=missing.csv"],
        ["run", "--set", "send_share=1.5"],
        ["run", "--engine", "simpy", "--checkpoint", "state.npz"], ["run", "--checkpoint-every-s", "-1"],
        ["run", "--links", "--checkpoint", "state.npz"],
    ],
)
def test_broken_command_lines_are_rejected_in_one_line(capsys, argv):
    _reject(capsys, argv)


@pytest.mark.parametrize("text", ["", "[1, 2]", "name: [unclosed", "network: 5", "\t-bad"])
def test_broken_yaml_text_is_rejected_in_one_line(tmp_path, capsys, text):
    _reject(capsys, ["run", "--machine", _write(tmp_path, text), "--shape", "2x2x2"])


# --------------------------------------------------------------------------- sweeps, stores, plots

SWEEP = {"name": "t", "machine": "bgl", "grid": {"shape": ["2x2x2"], "updates": [64], "algorithm": ["routed"]}}


def _sweep(tmp_path: Path, data) -> str:
    return _write(tmp_path, data, name="sweep.yaml")


def _with(**changes):
    data = copy.deepcopy(SWEEP)
    for dotted, value in changes.items():
        node = data
        *parents, leaf = dotted.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        if value is _DELETE:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return data


_DELETE = object()

BROKEN_SWEEPS = [
    _with(grid={}), _with(grid=_DELETE), _with(grid=[1, 2]), _with(name=""), _with(name=_DELETE), _with(machine="nosuch"),
    _with(colour="red"), _with(grid__shape=[]), _with(grid__shape="2x2x2"), _with(grid__shape=["2x2"]),
    _with(grid__shape=["2x2x2", "2x2x2"]), _with(grid__shape=["0x2x2"]), _with(grid__nosuch=[1]),
    _with(grid__nodes=[1]), _with(grid__nodes=["many"]), _with(grid__nodes=[16]),  # 16 nodes vs 2x2x2
    _with(grid__algorithm=["nope"]), _with(grid__updates=[0]), _with(grid__seed=[-1]),
    _with(grid__log2_table_size=[0]), _with(grid__link_bytes_per_s=[-1.0]), _with(grid__link_bytes_per_s={"times": []}),
    _with(grid__link_bytes_per_s={"times": [-1]}), _with(grid__link_bytes_per_s={"times": "x"}),
    _with(grid__link_bytes_per_s={"times": [1], "plus": [2]}), _with(grid__topology={"times": [2]}),
    _with(grid__chunk_bytes={"times": [0.3]}), _with(grid__clock_hz=["fast"]), _with(grid__routing=["magic"]),
    _with(**{"grid__option.nosuch": [1]}), _with(**{"grid__option.bucket_capacity": [0]}),
    _with(set={"nosuch": 1}), _with(set={"clock_hz": "fast"}), _with(set=[1]), _with(options={"nosuchalg": {}}),
    _with(options={"routed": {"x": 1}}), _with(record={"links": "yes"}), _with(record={"sample_interval_s": -1.0}),
    _with(record={"nosuch": True}), "[1, 2]", "grid: [unclosed", "",
    # wrong units: a unit in the value, or a key named with another unit
    _with(grid__link_bytes_per_s=["175 MB/s"]), _with(set={"link_mbytes_per_s": 175}), _with(grid__clock_mhz=[700]),
    _with(set={"router_delay_ns": "100 ns"}),
    # two grid values that resolve to the same run
    _with(grid__link_bytes_per_s={"times": [1, 1.0]}),
]


@pytest.mark.parametrize("data", BROKEN_SWEEPS, ids=range(len(BROKEN_SWEEPS)))
def test_broken_sweep_files_are_rejected_in_one_line(tmp_path, capsys, data):
    err = _reject(capsys, ["sweep", _sweep(tmp_path, data), "--dry-run"])
    assert "sweep.yaml" in err


def test_a_sweep_naming_no_fields_says_so(tmp_path, capsys):
    assert "grid names no fields" in _reject(capsys, ["sweep", _sweep(tmp_path, _with(grid={})), "--dry-run"])


def test_a_shape_that_does_not_match_the_node_count_says_so(tmp_path, capsys):
    err = _reject(capsys, ["sweep", _sweep(tmp_path, _with(grid__nodes=[16])), "--dry-run"])
    assert "shape 2x2x2 has 8 nodes, not nodes=16" in err


def _store(tmp_path: Path, files: dict[str, bytes]) -> str:
    root = tmp_path / "store"
    (root / "parts").mkdir(parents=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return str(root)


def _parquet(frame) -> bytes:
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf)
    return buf.getvalue()


CORRUPT_STORES = [
    {"results.parquet": b""}, {"results.parquet": b"PAR1garbagePAR1"}, {"results.parquet": b"\x00" * 100},
    {"parts/abc-1.parquet": b"not parquet"}, {"results.parquet": _parquet(pd.DataFrame({"gups": [1.0]}))},
    {"parts/abc-1.parquet": _parquet(pd.DataFrame({"key": ["a"]}))},
]


@pytest.mark.parametrize("files", CORRUPT_STORES, ids=range(len(CORRUPT_STORES)))
def test_corrupt_results_stores_are_rejected_in_one_line(tmp_path, capsys, files):
    store = _store(tmp_path, files)
    assert "store" in _reject(capsys, ["results", store])
    _reject(capsys, ["sweep", _sweep(tmp_path, SWEEP), "--store", store, "--dry-run"])
    _reject(capsys, ["plot", "scaling", store, "--out", str(tmp_path / "p")])


def test_bad_sweep_results_and_plot_command_lines(tmp_path, capsys):
    record = tmp_path / "rec.json"
    record.write_text('{"gups": 0.1, "machine": "bgl"}')
    not_json = tmp_path / "x.json"
    not_json.write_text("{nope")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    empty = tmp_path / "empty"
    (empty / "parts").mkdir(parents=True)
    sweep = _sweep(tmp_path, SWEEP)
    for argv in (
        ["sweep"], ["sweep", "nosuch-sweep"], ["sweep", "/nonexistent/s.yaml"], ["sweep", sweep, "--workers", "0"],
        ["sweep", sweep, "--store", str(a_file), "--dry-run"], ["results"], ["results", str(tmp_path / "none")],
        ["results", str(a_file)], ["plot"], ["plot", "nosuch", str(record)], ["plot", "links", str(record)],
        ["plot", "histograms", str(record)], ["plot", "timeseries", str(record)],
        ["plot", "links", str(tmp_path / "missing.json")], ["plot", "links", str(not_json)],
        ["plot", "scaling", str(empty)], ["plot", "links", str(empty)], ["plot", "links", str(record), "--slice", "-1"],
        ["run", "--sample-interval-s", "0"], ["run", "--sample-interval-s", "-1e-6"],
    ):
        _reject(capsys, argv)
