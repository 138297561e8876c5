"""Faults of the environment and hostile input: one line on stderr, a non-zero exit, nothing lost.

Memory limits on the process (RLIMIT_DATA, RLIMIT_AS, a cgroup's), an allocation that fails during a run,
YAML alias bombs and values megabytes long, output to a full disk, a results store removed during a sweep,
names longer than the file system allows, and input nested deeper than Python recurses.  Each case here
gave a traceback, a hang or a line of megabytes before.  Bad input exits 2; a fault of the environment
(memory exhausted during a run, a full disk, a store removed under a sweep) exits 1.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gupsim.base import memory
from gupsim.app.cli import cli
from gupsim.config import MACHINES_DIR

GUPSIM = [sys.executable, "-m", "gupsim.app.cli"]
LONG_NAME = "x" * 300  # over the 255 bytes a file name may have on Linux's file systems


def _one_line(stderr: str, code: int, expected_code: int, *fragments: str) -> str:
    lines = stderr.splitlines()
    assert code == expected_code, (code, stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("gupsim: error: "), stderr[-2000:]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _invoke(*argv: str, expected_code: int = 2, fragments: tuple[str, ...] = ()) -> str:
    result = CliRunner().invoke(cli, list(argv))
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return _one_line(result.stderr, result.exit_code, expected_code, *fragments)


def _gupsim(*argv: str, limit: tuple[int, int] | None = None, stdout=subprocess.PIPE, cwd=None, timeout=120):
    """``gupsim ARGV`` in a child process, under the resource limit ``limit`` (which, bytes) if given."""
    def apply_limit():
        resource.setrlimit(limit[0], (limit[1], limit[1]))
    return subprocess.run(GUPSIM + list(argv), stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=cwd,
                          preexec_fn=apply_limit if limit else None, timeout=timeout)


# ---------------------------------------------------------------- memory limits on the process

BIG_RUN = ("run", "--shape", "32x32x16", "--updates", "64", "--algorithm", "routed", "--no-progress")


@pytest.mark.parametrize("which, name, limit", [(resource.RLIMIT_DATA, "RLIMIT_DATA", 600_000_000),
                                                (resource.RLIMIT_DATA, "RLIMIT_DATA", 300_000_000),
                                                (resource.RLIMIT_AS, "RLIMIT_AS", 1_500_000_000)])
def test_a_run_over_the_processs_memory_limit_is_refused_before_it_starts(which, name, limit):
    out = _gupsim(*BIG_RUN, limit=(which, limit))
    line = _one_line(out.stderr, out.returncode, 2, "by gupsim's estimate", name)
    assert f"{limit / 2**30:.1f} GB" in line and "1.3 GB" in line  # the limit and the estimate
    assert out.stdout == ""


def test_the_address_space_estimate_counts_what_the_libraries_reserve():
    # 4x4x4's resident estimate is 0.5 GB; LLVM failed to load under 1.4 GB of address space
    out = _gupsim("run", "--algorithm", "routed", "--updates", "16", "--no-progress",
                  limit=(resource.RLIMIT_AS, 1_500_000_000))
    _one_line(out.stderr, out.returncode, 2, "0.5 GB by gupsim's estimate", "2.0 GB of address space", "RLIMIT_AS")


def test_a_cgroup_limit_is_read_from_the_processs_own_group_and_its_ancestors(tmp_path):
    proc = tmp_path / "cgroup"
    proc.write_text("0::/user.slice/job\n")
    (tmp_path / "fs" / "user.slice" / "job").mkdir(parents=True)
    (tmp_path / "fs" / "user.slice" / "job" / "memory.max").write_text("max\n")
    (tmp_path / "fs" / "user.slice" / "memory.max").write_text(f"{2**30}\n")
    assert memory.cgroup_limit(str(proc), str(tmp_path / "fs")) == (str(tmp_path / "fs/user.slice/memory.max"), 2**30)
    proc.write_text("4:memory:/job\n")
    (tmp_path / "fs" / "memory" / "job").mkdir(parents=True)
    (tmp_path / "fs" / "memory" / "job" / "memory.limit_in_bytes").write_text(f"{2**29}\n")
    (tmp_path / "fs" / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # none
    assert memory.cgroup_limit(str(proc), str(tmp_path / "fs"))[1] == 2**29


def test_a_cgroup_limit_refuses_a_run_in_one_line(monkeypatch):
    monkeypatch.setattr(memory, "cgroup_limit", lambda: ("/sys/fs/cgroup/job/memory.max", 2**28))
    _invoke("run", "--updates", "16", fragments=("by gupsim's estimate", "cgroup limits memory to 0.2 GB",
                                                 "/sys/fs/cgroup/job/memory.max"))


@pytest.mark.parametrize("failure, fragment", [
    (np._core._exceptions._ArrayMemoryError((10**9, 12), np.dtype("uint64")), "an allocation failed"),
    (OSError("Could not find/load shared object file 'libllvmlite.so' from resource location: 'x'."),
     "libllvmlite.so"),
])
def test_an_allocation_that_fails_during_a_run_is_one_line_naming_the_estimate(monkeypatch, failure, fragment):
    from gupsim.engines import fast

    def fail(*args, **kwargs):
        raise failure
    monkeypatch.setattr(fast.FastSimulation, "__init__", fail)
    line = _invoke("run", "--algorithm", "routed", "--updates", "16", expected_code=1,
                   fragments=("ran out of memory", fragment, "0.5 GB by gupsim's estimate"))
    assert "available" in line or "limit" in line


# ---------------------------------------------------------------- YAML alias bombs and long values

# A "billion laughs": nine lists of nine aliases to the list before, 10^9 values expanded.
LAUGHS = "[&a [lol, lol, lol, lol, lol, lol, lol, lol, lol], " + ", ".join(
    f"&{b} [{', '.join(['*' + a] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi")) + "]"


def test_an_alias_bomb_in_a_machine_files_description_is_refused_not_expanded(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    lines = (MACHINES_DIR / "bgl.yaml").read_text().splitlines()
    bomb.write_text("\n".join(f"description: {LAUGHS}" if line.startswith("description:") else line for line in lines))
    line = _invoke("run", "--machine", str(bomb), fragments=("bomb.yaml", "aliases expand to", "100,000"))
    assert len(line) < 400


def test_an_alias_bomb_through_set_is_one_short_line():
    line = _invoke("run", "--set", f"description={LAUGHS}", fragments=("--set", "aliases expand to"))
    assert len(line) < 400, len(line)


def test_a_long_value_is_clipped_in_the_error_line():
    line = _invoke("run", "--set", "link_bytes_per_s=" + "9" * 10_000 + "x",
                   fragments=("link_bytes_per_s", "characters)"))
    assert len(line) < 300, len(line)


def test_a_long_unknown_key_is_clipped():
    line = _invoke("run", "--set", "k" * 10_000 + "=1", fragments=("no such machine field",))
    assert len(line) < 300, len(line)


# ---------------------------------------------------------------- nesting deeper than Python recurses

def test_deeply_nested_brackets_in_a_machine_file_are_one_line(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("name: deep\ndescription: " + "[" * 100_000 + "]" * 100_000 + "\n")
    _invoke("run", "--machine", str(path), fragments=("deep.yaml", "nested more deeply"))


def test_deeply_nested_brackets_in_a_set_are_one_line():
    _invoke("run", "--set", "description=" + "[" * 100_000 + "]" * 100_000, fragments=("nested too deeply",))


# ---------------------------------------------------------------- output that cannot be written

@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_run_whose_stdout_is_full_keeps_its_record_and_says_where(tmp_path):
    with open("/dev/full", "w") as full:
        out = _gupsim("run", "--updates", "16", "--json", stdout=full, cwd=tmp_path)
    line = _one_line(out.stderr, out.returncode, 1, "standard output", "No space left on device", "kept in")
    kept = tmp_path / line.rsplit("kept in ", 1)[1]
    record = json.loads(kept.read_text())
    assert kept.parent == tmp_path / "results" / "records" and record["updates_applied"] == 64 * 16


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_results_to_a_full_stdout_is_one_line(tmp_path):
    store = tmp_path / "s.store"
    (store / "parts").mkdir(parents=True)
    with open("/dev/full", "w") as full:
        out = _gupsim("results", str(store), stdout=full)
    _one_line(out.stderr, out.returncode, 1, "standard output", "No space left on device")


def test_a_store_removed_during_a_sweep_is_one_line_naming_it(tmp_path):
    from gupsim.studies.store import ResultsStore
    from gupsim.base.errors import ResourceFault
    import shutil

    store = ResultsStore(tmp_path / "s.store")
    shutil.rmtree(store.path)
    with pytest.raises(ResourceFault, match=r"s\.store: its folder .*parts was removed while the sweep ran"):
        store.write({"key": "k", "status": "ok"})


# ---------------------------------------------------------------- names over the file system's limit

def _long_sweep(tmp_path: Path) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nmachine: {LONG_NAME}.yaml\ngrid:\n  shape: [2x2x2]\n  updates: [4]\n  seed: [0, 1]\n")
    return str(path)


@pytest.mark.parametrize("argv", [
    ("run", "--machine", f"{LONG_NAME}.yaml"),
    ("bounds", "--machine", f"{LONG_NAME}.yaml", "--shape", "4x4x4"),
    ("run", "--updates", "4", "--checkpoint", LONG_NAME),
    ("results", LONG_NAME),
    ("sweep", "SWEEP", "--store", LONG_NAME),
    ("sweep", "LONGSWEEP", "--dry-run"),
])
def test_a_name_over_the_file_systems_limit_is_one_line(tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    short = tmp_path / "ok.yaml"
    short.write_text("name: s\nmachine: bgl\ngrid:\n  shape: [2x2x2]\n  updates: [4]\n  seed: [0]\n")
    argv = [str(short) if a == "SWEEP" else _long_sweep(tmp_path) if a == "LONGSWEEP" else a for a in argv]
    line = _invoke(*argv)
    assert "xxxx" in line and len(line) < 400, line
