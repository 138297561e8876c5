"""Files gupsim ships inside the package: the machine files and the published tables.

``machines/`` holds the registered machines (``gupsim/data/machines/<name>.yaml``);
``reference/`` holds the published tables the model reads (seed 000 Table 1) and the
ones the validation compares against, each opening with ``#`` lines that name its
source.  They are package data, so a clone or a ``pip install`` (editable or not)
has them without any folder beside the repository.

A machine file names a table either by a path relative to its own folder or as a
package resource, ``package:reference/<file>.csv``; :func:`resource` resolves the
latter through :mod:`importlib.resources`.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path
from typing import Any

import pandas as pd

#: The source checkout when gupsim runs from one (its docs/ and configs/ sit there); an installed package's
#: parent is site-packages, which :func:`source_checkout` tells apart.
REPO_ROOT = Path(__file__).resolve().parents[2]


def source_checkout() -> Path | None:
    """The repository gupsim runs from, or None when it is an installed package (no pyproject.toml and docs/
    beside it): only a checkout has pages for ``gupsim reproduce`` to refresh."""
    if (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "docs" / "model.md").is_file():
        return REPO_ROOT
    return None


#: The prefix of a file named inside gupsim's package data rather than relative to a machine file.
PACKAGE_SCHEME = "package:"

#: The package's data folder.  gupsim is installed unpacked (its compiled kernels cache beside their
#: modules), so the folder is a real directory that machine listings can glob.
DATA_DIR = Path(str(files(__name__)))
MACHINES_DIR = DATA_DIR / "machines"


def resource(name: str) -> Any:
    """The package data file ``name`` (``reference/bgl_raw_device_cycles.csv``), as importlib.resources finds it."""
    return files(__name__).joinpath(*name.split("/"))


def reference_resource(name: str) -> Any:
    """A published table shipped with gupsim (``bgl_table2_bottlenecks.csv``)."""
    return resource(f"reference/{name}")


def read_table(source: Any) -> pd.DataFrame:
    """A CSV table (a path or an importlib.resources file), skipping its ``#`` lines: each shipped table
    opens with lines naming its source."""
    if isinstance(source, (str, os.PathLike)):
        return pd.read_csv(source, comment="#")
    with source.open("rb") as handle:
        return pd.read_csv(handle, comment="#")
