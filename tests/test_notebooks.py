"""The teaching notebooks run, at a reduced size, and are stored clean.

Each notebook in ``notebooks/`` is executed top to bottom by nbclient on an
ipykernel kernel with ``GUPSIM_NOTEBOOK_QUICK=1`` (read by its first code
cell), so a change in gupsim that breaks a notebook fails here.  The stored
files must carry no outputs, and the notebooks must hold no model logic of
their own (no functions or classes: everything comes from gupsim).
"""

from __future__ import annotations

import json
import re
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from gupsim.config import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
QUICK_SWITCH = 'os.environ.get("GUPSIM_NOTEBOOK_QUICK") == "1"'
KERNEL = "gupsim-tests"


@pytest.fixture(scope="module")
def kernel_path(tmp_path_factory):
    """A kernelspec for this very interpreter, so a user's own 'python3' kernel cannot be picked instead."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))
    return str(root)


def test_the_numbered_notebooks_exist():
    numbers = [path.name[:2] for path in NOTEBOOKS]
    assert all(n.isdigit() for n in numbers) and len(set(numbers)) == len(numbers), numbers
    assert {"00", "01", "02", "03", "04", "05"} <= set(numbers), numbers


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs_and_without_model_logic(path):
    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert QUICK_SWITCH in code[0].source, f"{path.name}: the first code cell must read GUPSIM_NOTEBOOK_QUICK"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs before committing"
        assert not re.search(r"^\s*(def|class)\s", cell.source, re.M), f"{path.name}: model logic belongs in gupsim"
    assert any("from gupsim" in cell.source for cell in code), f"{path.name}: a notebook teaches gupsim, it imports it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_at_reduced_size(path, monkeypatch, tmp_path, kernel_path):
    monkeypatch.setenv("JUPYTER_PATH", kernel_path)
    monkeypatch.setenv("GUPSIM_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "agg")
    book = nbformat.read(path, as_version=4)
    client = NotebookClient(book, timeout=120, kernel_name=KERNEL, resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if any cell fails
    errors = [out for cell in book.cells if cell.cell_type == "code" for out in cell.outputs
              if out.output_type == "error"]
    assert not errors
    plots = [out for cell in book.cells if cell.cell_type == "code" for out in cell.outputs
             if "image/png" in out.get("data", {})]
    assert plots, f"{path.name} drew no inline plot"
