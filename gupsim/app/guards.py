"""Checks the command line makes before any work: outputs that would destroy an input, empty paths, absurd
counts, names that name nothing (each one function every command calls).

* **An output never overwrites an input.**  ``gupsim results S --csv S/results.parquet`` had written CSV over
  the store's own table, and the next read called the store corrupt: its rows were gone.  :func:`refuse_overwrite`
  compares real paths (links resolved), so a link to the file is caught too, and a path inside an input
  folder (a store, a folder of kept runs, gupsim's own machine files) is refused as well.
* **An empty path is not the current folder.**  ``--out ''`` had written into ``.`` and ``--store ''``
  used the default store: :class:`NonEmptyPath` refuses it.
* **A count has a plausible range.**  ``--jobs 2**70`` started a cluster that never came up, with Ctrl-C
  ignored meanwhile: :data:`MAX_LOCAL_WORKERS` caps the local workers.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Iterable

import click

from gupsim.base.errors import GupsimError, UnknownNameError
from gupsim.base.files import kind_of
from gupsim.data import DATA_DIR

#: The most local worker processes (``reproduce --jobs``, ``sweep --workers``): far more than any machine's
#: cores; each worker is a process of a few hundred MB, so 2**70 of them is a mistake, not a request.
MAX_LOCAL_WORKERS = 1024


def _real(path: str | os.PathLike) -> str:
    return os.path.realpath(os.fspath(path))


def refuse_overwrite(option: str, output: str | os.PathLike | None, inputs: Iterable[str | os.PathLike | None]) -> None:
    """One line if the output ``option`` names is one of ``inputs`` or inside one of them (or inside gupsim's
    own data: its machine files and published tables), through links or not, or is a device or a pipe."""
    if not output:
        return
    try:
        mode = os.stat(output).st_mode
    except OSError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # /dev/full, a pipe: never ends
        raise GupsimError(f"{option} {output}: it is {kind_of(mode)}, not a file or folder gupsim can write; "
                          "give a file name")
    out = _real(output)
    for given in [*inputs, DATA_DIR]:
        if not given:
            continue
        real = _real(given)
        if out == real or out.startswith(real.rstrip(os.sep) + os.sep):
            where = "is" if out == real else "is inside"
            raise GupsimError(f"{option} {output}: {where} {given}, which this command reads; writing there "
                              "would destroy it: give another path")


class NonEmptyPath(click.Path):
    """A ``click.Path`` that refuses the empty string: ``''`` would otherwise mean the current folder or,
    where the option has a default, silently that default."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path; give a file or folder name", param, ctx)
        return super().convert(value, param, ctx)


def workers_range() -> click.IntRange:
    """The range of ``--jobs`` and ``--workers``: 1 to :data:`MAX_LOCAL_WORKERS`."""
    return click.IntRange(1, MAX_LOCAL_WORKERS)


def experiment_names(names: Iterable[str], valid: list[str]) -> list[str]:
    """The experiments ``reproduce NAMES`` asks for, in order, ``all`` meaning every one; an unknown name
    is refused even beside ``all`` (it had been ignored there)."""
    names = list(dict.fromkeys(names))
    for name in names:
        if name != "all" and name not in valid:
            raise UnknownNameError("experiment", name, valid + ["all"])
    return list(valid) if "all" in names else names


#: The share of a run a time series must cover to be the run's: the last sample falls within one interval of
#: the end, so anything much shorter means the sampler stopped early.
TIMESERIES_COVERAGE = 0.9


def warn_short_timeseries(record: dict[str, Any], interval_s: float | None) -> None:
    """Say on stderr, and in the record (``timeseries_complete``), when a run's time series stops well before
    the run did.  The reference sampler stops when nothing but its own tick happened between two samples (its
    test for a stuck machine), so an interval shorter than the gap between two events (``--sample-interval-s
    1e-7``) had given 3 samples covering 0.2 us of a 1,815 us run, with no note, and a plot of it."""
    series, end = record.get("timeseries"), record.get("sim_time_s")
    if not isinstance(series, dict) or not series.get("t_s") or not end or interval_s is None:
        return
    last = series["t_s"][-1]
    record["timeseries_complete"] = bool(last + interval_s >= TIMESERIES_COVERAGE * end)
    if not record["timeseries_complete"]:
        click.echo(f"gupsim: warning: the time series stops at t={last:.3g} s of a {end:.3g} s run "
                   f"({len(series['t_s'])} samples): the interval is shorter than the gaps between the run's events; "
                   "give a larger --sample-interval-s", err=True)
