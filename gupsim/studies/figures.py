"""Figure files, the outputs of studies and plots: matplotlib without a display, and PNG and SVG files that
are a function of the figure alone (no dates, fixed ids), so a regenerated unchanged result is byte-identical."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gupsim.base.errors import GupsimError



def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, out_dir: Path, stem: str, dpi: int = 120, source: str | None = None) -> list[Path]:
    """Write ``fig`` as ``out_dir/stem.png`` and ``.svg`` and close it; return the two paths.

    The files are a function of the figure alone, byte for byte: the SVG gets no creation date and fixed
    element ids (``svg.hashsalt``; matplotlib draws them at random otherwise), so regenerating an
    unchanged result leaves the committed figures unchanged.  ``source``, if given, is kept in both files'
    metadata (``Source``), so that a later plot can tell whether it would replace another source's."""
    import matplotlib

    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    extra = {"Source": source} if source is not None else {}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with matplotlib.rc_context({"svg.hashsalt": "gupsim"}):
            for path in paths:
                fig.savefig(path, dpi=dpi, bbox_inches="tight",
                            metadata=({"Date": None} if path.suffix == ".svg" else {}) | extra or None)
    except OSError as exc:  # a folder that cannot be made or written: the user's path, in one line
        raise GupsimError(f"cannot write {exc.filename or out_dir}: {exc.strerror or exc}") from None
    finally:
        pyplot().close(fig)
    return paths


#: Field-name endings and the unit a legend writes their values in (a link rate as "350 MB/s", not "3.5e+08").
UNITS = (("bytes_per_s", 1e6, "MB/s"), ("_hz", 1e6, "MHz"), ("_bytes", 1.0, "B"), ("_s", 1.0, "s"))


def readable(field: str, text: Any) -> str:
    """A field's value for a legend: in the unit its name ends with (:data:`UNITS`), else %g, else as it is."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return str(text)
    for ending, scale, unit in UNITS:
        if field.endswith(ending):
            return f"{value / scale:g} {unit}"
    return f"{value:g}"
