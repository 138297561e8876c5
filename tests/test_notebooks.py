"""The teaching notebooks run, at a reduced size, and are stored clean.

Each notebook in ``notebooks/`` is executed top to bottom by nbclient on an
ipykernel kernel with ``GUPSIM_NOTEBOOK_QUICK=1`` (read by its first code
cell), so a change in gupsim that breaks a notebook fails here.  The stored
files must carry no outputs, and the notebooks must hold no model logic of
their own (no functions or classes: everything comes from gupsim).
"""

from __future__ import annotations

import os
import re

import nbformat
import pytest
from nbclient import NotebookClient

from gupsim.config import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
QUICK_SWITCH = 'os.environ.get("GUPSIM_NOTEBOOK_QUICK") == "1"'


def test_the_numbered_notebooks_exist():
    names = [path.name[:2] for path in NOTEBOOKS]
    assert names == ["00", "01", "02", "05"], names  # 03 and 04 come with the BG/P and Data Vortex machines


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs_and_without_model_logic(path):
    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert QUICK_SWITCH in code[0].source, f"{path.name}: the first code cell must read GUPSIM_NOTEBOOK_QUICK"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs before committing"
        assert not re.search(r"^\s*(def|class)\s", cell.source, re.M), f"{path.name}: model logic belongs in gupsim"
        assert "import gupsim" in cell.source or "from gupsim" in cell.source or cell is not code[1], path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_at_reduced_size(path, monkeypatch, tmp_path):
    monkeypatch.setenv("GUPSIM_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "agg")
    book = nbformat.read(path, as_version=4)
    client = NotebookClient(book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if any cell fails
    errors = [out for cell in book.cells if cell.cell_type == "code" for out in cell.outputs
              if out.output_type == "error"]
    assert not errors
    assert os.environ["GUPSIM_NOTEBOOK_QUICK"] == "1"
