"""The package stands on its own: the tables and machine files it ships, and a non-editable install.

gupsim ships the published tables it uses (``gupsim/data/reference``) and its machine files
(``gupsim/data/machines``), so a clone without ``../shared`` or a ``pip install .`` runs.  The copies must
not drift from ``../shared/reference`` where that folder exists.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from gupsim.config import REPO_ROOT
from gupsim.data import DATA_DIR, read_table
from gupsim.studies.validation import available_experiments

SHARED = REPO_ROOT.parent / "shared" / "reference"
PACKAGED = DATA_DIR / "reference"


def _data_lines(path: Path) -> list[str]:
    """The table's lines without its ``#`` source lines (and without trailing blanks)."""
    return [line.rstrip() for line in path.read_text().splitlines() if not line.startswith("#") and line.strip()]


def test_every_shipped_table_opens_with_its_source():
    """A seed's table names the seed; a table from the public literature beyond the seeds names a dated
    publication on its source lines."""
    tables = sorted(PACKAGED.glob("*.csv"))
    assert len(tables) >= 9
    for path in tables:
        text = path.read_text()
        sources = "\n".join(line for line in text.splitlines() if line.startswith("# source: "))
        assert text.startswith("# source: "), f"{path.name} does not open with its source"
        assert "seed 00" in sources or re.search(r"\b(19|20)\d\d\b", sources), \
            f"{path.name} names neither a seed nor a dated publication"
        assert len(read_table(path)) >= 1


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is not beside this checkout")
@pytest.mark.parametrize("name", sorted(p.name for p in SHARED.glob("*.csv")) if SHARED.is_dir() else [])
def test_the_shipped_copy_equals_the_shared_table(name):
    """Every table in ../shared/reference has a copy in the package with the same rows, byte for byte."""
    copy = PACKAGED / name
    assert copy.is_file(), f"{name} is in {SHARED} but not shipped in {PACKAGED}"
    assert _data_lines(copy) == _data_lines(SHARED / name), f"{copy} has drifted from {SHARED / name}"
    pd.testing.assert_frame_equal(read_table(copy), pd.read_csv(SHARED / name))


def test_the_drift_check_sees_a_changed_number(tmp_path):
    """The comparison above is not blind to one digit."""
    name = "bgl_table2_bottlenecks.csv"
    edited = tmp_path / name
    edited.write_text((PACKAGED / name).read_text().replace("0.13", "0.14", 1))
    assert _data_lines(edited) != _data_lines(PACKAGED / name)


_TOUCHES = """
import json, os, sys
touched = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        touched.append(os.fsdecode(args[0]))
    elif event in ("os.listdir", "os.scandir") and args and args[0] is not None:
        touched.append(os.fsdecode(args[0]))
sys.addaudithook(hook)
from gupsim.config import available_machines, load_machine
from gupsim.studies.validation import available_experiments, load_experiment, reference_table
for name in available_machines():
    machine = load_machine(name)
    if hasattr(machine.cpu, "raw_device_cycle_table"):
        machine.costs, machine.inputs_digest
for name in available_experiments():
    load_experiment(name)
for name in ("bgl_table2_bottlenecks.csv", "bgl_section62.csv", "bgl_upc_text.csv", "dv_hypatia.csv"):
    reference_table(name)
print(json.dumps(touched))
"""


def test_nothing_is_read_from_beside_the_package(tmp_path):
    """Loading every machine, experiment and table reads files of the package (or Python's) only: nothing
    from ``../shared`` or elsewhere in the checkout."""
    out = subprocess.run([sys.executable, "-c", _TOUCHES], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    package = (REPO_ROOT / "gupsim").resolve()
    python = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    outside = sorted({p for p in json.loads(out)
                      if (suffix := Path(p).suffix) in (".csv", ".yaml", ".yml", ".py")
                      and not (resolved := Path(p).resolve()).is_relative_to(package)
                      and not (suffix == ".py" and any(resolved.is_relative_to(prefix) for prefix in python))})
    assert not outside, f"read from outside the package: {outside}"


_INSTALLED = """
import sys
import gupsim
assert gupsim.__file__.startswith(sys.argv[1]), gupsim.__file__
from gupsim.config import available_machines, load_machine
from gupsim.studies.validation import available_experiments, load_experiment
print(available_machines(), load_machine("bgl").costs.send_cycles[0], len(available_experiments()))
print(load_experiment("bgl-table2").reproduce(quick=True).frame["rel_err_network_bound_gups"].abs().max())
from gupsim.app.cli import main
main(["run", "--shape", "2x2x2", "--updates", "16", "--engine", "simpy", "--json"])
"""


def test_a_built_wheel_ships_the_data_and_runs_from_anywhere(tmp_path):
    """``pip wheel .`` holds the machine files, the tables and the experiments; installed (not editable)
    into a bare folder, it loads a machine, lists and runs an experiment and runs a simulation from an
    unrelated folder."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO_ROOT)],
                   check=True, capture_output=True, text=True)
    (wheel,) = wheels.glob("gupsim-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, suffix in (("machines", ".yaml"), ("reference", ".csv"), ("sweeps", ".yaml")):
        shipped = {f"gupsim/data/{folder}/{p.name}" for p in (DATA_DIR / folder).glob(f"*{suffix}")}
        assert shipped and shipped <= names, sorted(shipped - names)
    assert "gupsim/studies/experiments/bgl_table2.py" in names and "gupsim/studies/experiments/__init__.py" in names

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, text=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", _INSTALLED, str(target)], capture_output=True, text=True,
                          cwd=elsewhere, env={**os.environ, "PYTHONPATH": str(target)})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    # the installed copy lists the experiments the checkout has
    assert lines[0].startswith("['bgl', 'bgp'") and lines[0].endswith(f" 14.0 {len(available_experiments())}")
    assert float(lines[1]) < 0.2
    record = json.load(io.StringIO("\n".join(lines[2:])))
    assert record["updates_applied"] == 16 * 8
