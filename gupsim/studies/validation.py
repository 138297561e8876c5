"""Comparing simulated numbers with published ones, and reporting every error.

An experiment (one module per table in :mod:`gupsim.studies.experiments`) produces a
:class:`Comparison`: the published table as read from the copy gupsim ships
(``gupsim/data/reference``), a ``sim_<column>`` beside every compared column and
a ``rel_err_<column>`` (simulated / published - 1).  Each compared column has
a stated target; rows that miss it are listed with the experiment's
explanation.  :func:`write_markdown` turns a set of comparisons into
``docs/validation.md``; nobody edits that file by hand.

Published numbers enter here only as the targets the simulation is judged
against: nothing in a model reads them (the one measured cost table that the
model does read, seed 000 Table 1, is loaded by :mod:`gupsim.config`).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import pkgutil
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

import gupsim.studies.experiments
from gupsim.config import MACHINES_DIR
from gupsim.data import read_table, reference_resource
from gupsim.base.errors import GupsimError, UnknownNameError
from gupsim.studies.runpool import DaskPool
from gupsim.studies.cluster import close_client, open_client
from gupsim.base.files import read_text, replaced_atomically
from gupsim.studies.runpool import SerialPool


#: A run record's 95% interval of each column a table may compare (:mod:`gupsim.engines.run`).
INTERVAL_FIELDS = {"gups": ("gups_ci_low", "gups_ci_high"),
                   "cycles_per_update": ("cycles_per_update_ci_low", "cycles_per_update_ci_high")}


def interval_cells(record: dict[str, Any], columns: tuple[str, ...] = ("gups",)) -> dict[str, float]:
    """``sim_<column>_low`` and ``_high``: the record's 95% interval of each column (NaN where the run was too
    short for a valid one), for :class:`Comparison` to show beside the value and judge."""
    valid = record.get("precision") == "ok"
    return {f"sim_{column}_{side}": float(record[name]) if valid else math.nan
            for column in columns for side, name in zip(("low", "high"), INTERVAL_FIELDS[column])}


def reference_table(name: str) -> pd.DataFrame:
    """A published table gupsim ships (``gupsim/data/reference/<name>``), without its source lines."""
    table = reference_resource(name)
    if not table.is_file():
        raise GupsimError(f"reference table not found: {name} (not in gupsim's package data: {table})")
    return read_table(table)


def bgl_partition_shapes() -> dict[int, str]:
    """Nodes -> XxYxZ of the BG/L partitions the seed measured (Table 2's shape column: inputs, not results)."""
    table = reference_table("bgl_table2_bottlenecks.csv")
    return dict(zip(table["nodes"].tolist(), table["shape"].tolist()))


def files_digest(paths, root: Path, chars: int) -> str:
    """A short sha256 of files (their paths below ``root`` and their bytes), in sorted order."""
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:chars]


def machine_files_digest() -> str:
    """A short hash of every machine file: the page marks sections made with other machine files."""
    return files_digest(MACHINES_DIR.glob("*.yaml"), MACHINES_DIR, 10)


@dataclass
class Comparison:
    """One reproduced table: published columns, simulated columns, errors, targets."""

    name: str
    title: str
    key: str
    frame: pd.DataFrame
    targets: dict[str, float]
    notes: dict[tuple[Any, str], str] = field(default_factory=dict)
    method: str = ""
    wall_s: float = float("nan")
    shown: list[str] = field(default_factory=list)  # extra columns for the docs, without a target
    plot: Any = None  # optional callable(out_dir) -> [paths] for experiments that are figures
    remarks: list[str] = field(default_factory=list)  # paragraphs the docs always show (e.g. on model columns)
    checks: list[str] = field(default_factory=list)  # summary lines of a table with no published column
    machines: str = field(default_factory=machine_files_digest)  # the machine files it was made with
    #: Cells a constant was fitted on, (key, column) -> what was fitted there; (key, "*") is every compared
    #: column of the row.  They agree by construction, so they are marked "(fit)" and left out of the counts.
    fitted: dict[tuple[Any, str], str] = field(default_factory=dict)
    #: Compared columns computed from a fitted value (they agree in part by construction) -> how.
    derived: dict[str, str] = field(default_factory=dict)

    def is_fitted(self, key: Any, column: str) -> bool:
        return (key, column) in self.fitted or (key, "*") in self.fitted

    def errors(self, column: str) -> pd.Series:
        return self.frame[f"rel_err_{column}"]

    def has_intervals(self, column: str) -> bool:
        return f"sim_{column}_low" in self.frame and f"sim_{column}_high" in self.frame

    def verdicts(self, column: str) -> pd.Series:
        """Each row's verdict on ``column`` from its 95% interval: "within" the target when the whole interval
        is, "outside" when the whole interval is, "undecided" when it straddles a bound, "no interval" where
        the run gave none; empty where nothing is judged (no published value, or a fitted row)."""
        target, ref = self.targets[column], self.frame[column].astype(float)
        low = self.frame[f"sim_{column}_low"].astype(float) / ref - 1
        high = self.frame[f"sim_{column}_high"].astype(float) / ref - 1
        out = []
        for key, r, lo, hi, err in zip(self.frame[self.key], ref, low, high, self.errors(column)):
            if math.isnan(err) or self.is_fitted(key, column) or not r:
                out.append("")
            elif math.isnan(lo) or math.isnan(hi):
                out.append("no interval")
            elif -target <= lo and hi <= target:
                out.append("within")
            elif hi < -target or lo > target:
                out.append("outside")
            else:
                out.append("undecided")
        return pd.Series(out, index=self.frame.index)

    def interval_line(self, column: str) -> str:
        """The counts of :meth:`verdicts`: how many judged rows the noise alone could not move across the target."""
        counts = self.verdicts(column).value_counts()
        parts = [f"{int(counts.get(v, 0))} {v}" for v in ("within", "outside", "undecided", "no interval")]
        return (f"{self.name}: {column}, judged by the 95% interval (within/outside: the whole interval is): "
                + ", ".join(parts))

    def misses(self) -> list[tuple[Any, str, float, float]]:
        """(row key, column, relative error, target) for every compared value worse than its target."""
        out = []
        for column, target in self.targets.items():
            err = self.errors(column)
            for key, value in zip(self.frame[self.key], err):
                if not (isinstance(value, float) and math.isnan(value)) and abs(value) > target:
                    out.append((key, column, float(value), target))
        return out

    def summary_lines(self) -> list[str]:
        """Mean and worst error per compared column; ``model_rel_err_*`` columns (analytic models
        shown beside the simulation) get their own line, labelled as a model."""
        lines = []
        for column, target in self.targets.items():
            for label, err_col in ((column, f"rel_err_{column}"), (f"{column} (model, not simulated)",
                                                                    f"model_rel_err_{column}")):
                if err_col not in self.frame:
                    continue
                err = self.frame[err_col].abs().dropna()
                if column in self.derived and err_col == f"rel_err_{column}":
                    label = f"{column} ({self.derived[column]})"
                judged = [not self.is_fitted(k, column) for k in self.frame.loc[err.index, self.key]]
                fits, err = len(err) - sum(judged), err[judged]  # an analytic model column uses the fit too
                fit_text = f"; {fits} fitted row{'s' if fits > 1 else ''} not counted" if fits else ""
                if err.empty:
                    lines.append(f"{self.name}: {label}: " + (f"every simulated row is a fit ({fits}): nothing "
                                                              "judged" if fits else "no simulated rows"))
                    continue
                worst_key = self.frame.loc[err.idxmax(), self.key]
                missed = int((err > target).sum())
                lines.append(
                    f"{self.name}: {label}: mean |err| {err.mean():.1%}, worst {err.max():.1%} "
                    f"({self.key}={worst_key}); target {target:.0%}: {len(err) - missed}/{len(err)} judged rows "
                    f"within{fit_text}"
                )
        lines += [self.interval_line(column) for column in self.targets if self.has_intervals(column)]
        return lines + [f"{self.name}: {line}" for line in self.checks]

    def fitted_lines(self) -> list[str]:
        """One line per fitted row: the columns it fixes and what was fitted on it."""
        by_row: dict[Any, list[str]] = {}
        for (key, column), what in self.fitted.items():
            by_row.setdefault((key, what), []).append("every compared column" if column == "*" else column)
        return [f"{self.key}={key} ({', '.join(columns)}): {what}" for (key, what), columns in by_row.items()]

    def figures(self, out_dir: Path) -> list[Path]:
        """Write the experiment's figures (if it has a plotter) and return their paths."""
        return self.plot(out_dir) if self.plot is not None else []

    def write_csv(self, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{self.name}.csv"
        with replaced_atomically(path) as tmp:
            self.frame.to_csv(tmp, index=False)
        return path


def compare(reference: pd.DataFrame, simulated: pd.DataFrame, key: str, columns: list[str]) -> pd.DataFrame:
    """Reference columns, then ``sim_<c>`` and ``rel_err_<c>`` for each compared column."""
    merged = reference.merge(simulated, on=key, how="left", validate="one_to_one")
    for column in columns:
        sim = merged[f"sim_{column}"].astype(float)
        ref = merged[column].astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            merged[f"rel_err_{column}"] = np.where(ref != 0, sim / ref - 1.0, np.nan)
    ordered = list(reference.columns)
    for column in columns:
        ordered += [f"sim_{column}", f"rel_err_{column}"]
    extra = [c for c in merged.columns if c not in ordered]
    return merged[ordered + extra]


# ------------------------------------------------------------------ experiments registry


def available_experiments() -> list[str]:
    """Every module ``gupsim/studies/experiments/<machine>_<result>.py``; helpers start with an underscore."""
    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(gupsim.studies.experiments.__path__)
                  if not m.name.startswith("_"))


def load_experiment(name: str):
    """The module ``gupsim.studies.experiments.<name>``: ``reproduce(quick, inputs)`` and optional ``NEEDS``."""
    if name not in available_experiments():
        raise UnknownNameError("experiment", name, available_experiments() + ["all"])
    return importlib.import_module(f"gupsim.studies.experiments.{name.replace('-', '_')}")


def _reproduce_one(name: str, quick: bool, inputs: dict) -> "Comparison":
    return load_experiment(name).reproduce(quick=quick, inputs=inputs)


def takes_pool(module) -> bool:
    """Whether an experiment hands its runs to a pool (``reproduce(..., pool=...)``; :mod:`gupsim.studies.runpool`)."""
    return "pool" in inspect.signature(module.reproduce).parameters


#: The precision ``gupsim reproduce`` runs each row to (relative half-width of its GUPS 95% interval), its
#: table's fixed length being the cap.
REPRODUCE_PRECISION = 0.01


def run_experiments(names: list[str], quick: bool, jobs: int = 1,
                    on_done: Callable[[Comparison], None] | None = None,
                    cache_dir: Path | None = None,
                    precision: float | None = REPRODUCE_PRECISION, threads: int = 1) -> list[Comparison]:
    """Run experiments in dependency order (``NEEDS``); each runs once, dependencies first.

    ``on_done`` is called with each comparison as soon as it is finished, so a caller can keep the
    finished results of a long run that is stopped before the end.  With ``cache_dir`` every run of
    an experiment that takes a pool is kept there as it ends, and a later call reuses it
    (:mod:`gupsim.studies.runpool`): a stopped reproduction resumes row by row.

    With ``jobs > 1`` the runs go to a Dask LocalCluster of that many single-threaded worker
    processes (the sweep's client, :func:`gupsim.studies.cluster.open_client`).  An experiment that takes a
    pool (:func:`takes_pool`) runs in a thread here and sends each of its rows to the cluster as a
    task of its own (:class:`gupsim.studies.runpool.DaskPool`), so a table's long rows and another table's
    short ones share the cores; one that does not is a single task.  Every experiment whose
    dependencies are done starts at once; the pool orders the runs, largest first.  Results are
    the same as with ``jobs = 1``, only the wall time changes.  With a ``precision`` every run an experiment
    hands to its pool stops once that precise, its fixed length the cap (:func:`gupsim.studies.runpool.with_precision`);
    the runs an experiment makes itself (fits, bounds) keep their fixed lengths.
    """
    modules = {}
    needs: dict[str, tuple[str, ...]] = {}

    def collect(name: str) -> None:
        if name in modules:
            return
        modules[name] = load_experiment(name)
        needs[name] = tuple(getattr(modules[name], "NEEDS", ()))
        for need in needs[name]:
            collect(need)

    for name in names:
        load_experiment(name)  # unknown names fail before any work
    for name in names:
        collect(name)
    order: list[str] = []  # dependencies first, then the names in the user's order

    def visit(name: str) -> None:
        if name not in order:
            for need in needs[name]:
                visit(need)
            order.append(name)

    for name in names:
        visit(name)
    done: dict[str, Comparison] = {}
    if jobs <= 1:
        serial = SerialPool(cache_dir, precision, threads)
        for name in order:
            inputs = {n: done[n] for n in needs[name]}
            done[name] = (modules[name].reproduce(quick=quick, inputs=inputs, pool=serial)
                          if takes_pool(modules[name]) else _reproduce_one(name, quick, inputs))
            if on_done:
                on_done(done[name])
        return [done[n] for n in order]

    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait


    client = open_client(None, jobs, processes=True)
    pool = DaskPool(client, jobs, cache_dir, precision, threads)

    def one(name: str, inputs: dict) -> Comparison:
        if takes_pool(modules[name]):
            return modules[name].reproduce(quick=quick, inputs=inputs, pool=pool)
        # The experiments without rows are short (bounds, figures of seconds): one task, after the runs.
        return pool.call(0, _reproduce_one, name, quick, inputs).result()

    # The client closes before the threads are joined: if one experiment fails, the others' waits
    # end with it instead of running their tables to the end.
    interrupted = False
    with ThreadPoolExecutor(max_workers=len(order)) as threads:
        try:
            running: dict = {}
            pending = list(order)

            def launch_ready() -> None:
                for name in [n for n in pending if all(d in done for d in needs[n])]:
                    pending.remove(name)
                    running[threads.submit(one, name, {n: done[n] for n in needs[name]})] = name

            launch_ready()
            while running:
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in finished:
                    name = running.pop(future)
                    done[name] = future.result()
                    if on_done:
                        on_done(done[name])
                launch_ready()
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            pool.close()
            close_client(client, interrupted=interrupted)
    return [done[n] for n in order]


# ------------------------------------------------------------------ docs


def _fmt(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "–"
        if float(value).is_integer() and abs(value) < 1e15:
            return f"{int(value)}"
        return f"{value:.4g}"
    return str(value)


def markdown_table(frame: pd.DataFrame, columns: list[str], err_columns: set[str],
                   fitted: Callable[[Any, str], bool] = lambda row, column: False) -> str:
    """A Markdown table; an error cell that ``fitted(row, column)`` marks reads "+0.0% (fit)"; a ``sim_<c>``
    cell with ``sim_<c>_low`` and ``_high`` beside it in ``frame`` shows its 95% interval, "0.115 [0.113, 0.117]"."""
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    rows = []
    for index, row in frame[columns].iterrows():
        cells = []
        for c in columns:
            v = row[c]
            if c in err_columns and isinstance(v, (float, np.floating)) and not math.isnan(v):
                cells.append(f"{v:+.1%}" + (" (fit)" if fitted(row, c.removeprefix("rel_err_")) else ""))
            elif f"{c}_low" in frame and f"{c}_high" in frame:
                cells.append(_fmt(v) + _interval_text(frame.at[index, f"{c}_low"], frame.at[index, f"{c}_high"]))
            else:
                cells.append(_fmt(v))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *rows])


def _interval_text(low: Any, high: Any) -> str:
    return "" if pd.isna(low) or pd.isna(high) else f" [{_fmt(float(low))}, {_fmt(float(high))}]"


def comparison_markdown(c: Comparison, figures_dir: Path | None = None, command: str | None = None) -> str:
    cols = [c.key]
    for column in c.targets:
        cols += [column, f"sim_{column}", f"rel_err_{column}"]
    cols += c.shown
    parts = [f"## {c.title}", "", c.method.strip(), ""]
    if figures_dir is not None and c.plot is not None:
        for path in c.figures(figures_dir):
            if path.suffix == ".png":
                parts += [f"![{c.title}]({figures_dir.name}/{path.name})", ""]
    err_columns = {col for col in c.frame.columns if "rel_err_" in col}
    parts += [markdown_table(c.frame, cols, err_columns, lambda row, column: c.is_fitted(row[c.key], column)),
              "", "Summary:", ""]
    parts += [f"- {line}" for line in c.summary_lines()]
    if c.fitted:
        parts += ["", "Rows a constant was fitted on (marked \"(fit)\"; they agree by construction and are not "
                  "counted above):", ""] + [f"- {line}" for line in c.fitted_lines()]
    misses = c.misses()
    if misses:
        parts += ["", "Rows worse than their target:", ""]
        for key, column, err, target in misses:
            why = (c.notes.get((key, column)) or c.notes.get((key, "*")) or c.notes.get(("*", column))
                   or "No explanation recorded yet.")
            parts.append(f"- **{c.key}={key}, {column}**: {err:+.1%} (target ±{target:.0%}). {why}")
    if c.remarks:
        parts += ["", "Notes:", ""] + [f"- {remark}" for remark in c.remarks]
    if not math.isnan(c.wall_s):
        by = f" by `{command}`" if command else ""
        parts += ["", f"_Reproduced{by} in {c.wall_s:.1f} s wall with machine files `{c.machines}`._"]
    return "\n".join(parts)


STALE = "Made with other machine files than today's"


def write_markdown(comparisons: list[Comparison], path: Path, command: str, refresh: bool = False) -> None:
    """Write docs/validation.md; with ``refresh``, replace only these comparisons' sections of the page.

    Reproducing one table must not wipe the others from the page, so a refresh keeps every other
    section.  Each section's last line names the command and the machine files that made it, and
    the header is rebuilt from the sections on every write: it lists those made with other machine
    files than today's, instead of piling up one line per command that ever touched the page.
    """
    figures = path.parent / "figures"
    sections = {c.title: comparison_markdown(c, figures, command) for c in comparisons}
    path.parent.mkdir(parents=True, exist_ok=True)
    if refresh and path.exists():
        _, old = _split_sections(read_text(path, "--docs"))  # a device (/dev/full) never ends
        for title, text in sections.items():
            old[title] = text  # in place if the page had it, else appended
        sections = old
    header = [
        "# Validation against the published tables",
        "",
        "Generated by `gupsim reproduce` from the CSVs it writes; do not edit by hand. The last line of each"
        " section names the command and the machine files that made it.",
        "Errors are simulated / published - 1. Each table states its target and explains every row that misses it.",
        "A simulated value shown as `v [low, high]` carries its run's 95% interval (each row runs until the interval"
        f" is within {REPRODUCE_PRECISION:.0%} of the rate, or the precision the command names, its table's run length"
        " being the cap; `--fixed-length`: the whole length); judged by it, a row"
        " is within its target only when the whole interval is, outside only when the whole interval is, and"
        " undecided otherwise.",
    ]
    today = machine_files_digest()
    stale = [title for title, text in sections.items() if f"machine files `{today}`" not in text]
    if stale:  # older sections stay on the page, but not as if today's machine files made them
        header += ["", f"{STALE} (today's: `{today}`): " + "; ".join(stale) + "."]
    body = "\n\n".join(text.strip("\n") for text in sections.values())
    with replaced_atomically(path) as tmp:  # a page cut by a full disk would lose every other table's section
        tmp.write_text("\n".join(header) + "\n\n" + body + "\n")


def _split_sections(text: str) -> tuple[list[str], dict[str, str]]:
    """The page's header lines, and its ``## title`` sections by title, in page order."""
    head: list[str] = []
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        if current is None:
            head.append(line)
        else:
            sections[current].append(line)
    return head, {title: "\n".join(lines) for title, lines in sections.items()}
