"""The ``gupsim`` command line: ``run``, ``bounds``, ``list``, ``reproduce``, ``runs``, ``sweep``, ``results``, ``plot``.

Every user mistake ends in one line on stderr and exit status 2; nothing a
user types produces a traceback.
"""

from __future__ import annotations

if __name__ == "__main__":
    # ``python -m gupsim.app.cli`` runs this file before any of its imports below: hand over to the script's
    # entry point, which imports this module under its guard (a memory limit, NUMBA_DISABLE_JIT, a signal while
    # the libraries load: one line, never a traceback); the exit keeps the rest of this file from running again
    # as ``__main__``.  Imported by name: this ``__main__`` is not the module ``gupsim.app.cli`` that the entry
    # point imports, so there is no cycle, but a static import here would read as one (tests/test_architecture.py).
    import importlib

    raise SystemExit(importlib.import_module("gupsim.app.entry").main())

import errno
import math
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, NoReturn

import click

from gupsim.base.cores import default_threads
from gupsim.base.errors import GupsimError, cannot_write
from gupsim.config.loading import load_machine
from gupsim.config.overrides import parse_set_options
from gupsim.config.overrides import parse_key_value
from gupsim.base.errors import clip
from gupsim.app.reporting import format_record, to_json, what_if
from gupsim.engines.run import ENGINES, make_run_config, simulate, telemetry as make_telemetry
from gupsim.base.errors import ResourceFault
from gupsim.studies.runpool import code_digest, run_key
from gupsim.engines.contract import titles
from gupsim.studies.runpool import log_to_stderr
from gupsim.model.bounds import algorithm_bounds, bounds as compute
from gupsim.app.reporting import format_bounds
from gupsim.data import source_checkout
from gupsim.studies.validation import REPRODUCE_PRECISION, available_experiments, run_experiments, write_markdown
from gupsim.config import MACHINES_DIR
from gupsim.app.reporting import refresh_parameter_tables
from gupsim.studies.runpool import kept_rows, kept_runs, unfinished_runs
from gupsim.algorithms.base import algorithm_class, available_algorithms, validate_options
from gupsim.config.loading import available_machines
from gupsim.topology.base import TOPOLOGIES, parse_shape
from gupsim.studies.store import ResultsStore
from gupsim.studies.cluster import interruptible
from gupsim.studies.sweep import expand, load_sweep, run_sweep
from gupsim.studies.estimate import describe, estimate_points
from gupsim.studies.sweep import KEPT_RUNS_DIR
from gupsim.studies.store import store_table
from gupsim.app import rate_quality
from gupsim.app import plots
from gupsim.app import first_run, progress
from gupsim.app.compare import compare
from gupsim.studies.headline import headline_record, readable_table
from gupsim.app.guards import NonEmptyPath, experiment_names, refuse_overwrite, warn_short_timeseries, \
    workers_range
from gupsim.base.files import replaced_atomically

DEFAULTS = {"machine": "bgl", "shape": "4x4x4", "algorithm": "baseline", "updates": 4096, "seed": 0}


def _load_machine(machine: str, sets: tuple[str, ...]) -> Any:
    """``--machine`` and ``--set``: the validated machine."""
    return load_machine(machine, parse_set_options(sets))


def _key_values(items: tuple[str, ...], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, value = parse_key_value(item, what)
        if key in out:  # the last would silently win
            raise GupsimError(f"{what} {key} is given twice; give it once")
        out[key] = value
    return out


class GupsimGroup(click.Group):
    """The command group, which reports every user mistake as one line ``gupsim: error: ...`` and exit 2.

    Click's own usage errors (a bad option value, a missing or unknown option) would print a usage line,
    a hint and the error; the README promises the one line, whichever layer found the mistake.  This is
    the group's ``main``, so ``gupsim`` and ``CliRunner().invoke(cli, ...)`` behave the same.  A command
    that succeeds returns (``main()`` callers run several commands in one process); one that fails exits.
    """

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:  # the caller handles the exceptions itself
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except GupsimError as exc:
            _fail(str(exc), exc.exit_code)
        except OSError as exc:  # one the command did not name itself: the path and the OS's reason
            _fail(os_error_line(exc), os_error_status(exc))
        except RecursionError:  # a value nested deeper than Python's recursion limit, wherever it was read
            _fail("input nested too deeply to read (more levels than Python's recursion limit)")
        except click.exceptions.NoArgsIsHelpError as exc:  # bare `gupsim`: the help, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            _fail(exc.format_message(), exc.exit_code)
        except _StoppedOutsideItsHandling as exc:
            _interrupted(exc.stop, "the command stopped before it kept anything", resumable=False)
        except click.exceptions.Abort as exc:  # Ctrl-C, or a signal gupsim.app.entry answers, while parsing
            _interrupted(exc.__context__ or KeyboardInterrupt(), "while reading the command; nothing was done",
                         resumable=False)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        return code

    def invoke(self, ctx: click.Context) -> Any:
        """The command, with a stop that its own handling did not catch (a signal in the instant before or
        after it) passed to :meth:`main` as itself: click would print an empty line and say "Aborted"."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise _StoppedOutsideItsHandling(exc) from None


class _StoppedOutsideItsHandling(Exception):
    """A KeyboardInterrupt (Ctrl-C, or a signal gupsim.app.entry answers) that left a command unhandled."""

    def __init__(self, stop: KeyboardInterrupt) -> None:
        super().__init__(str(stop))
        self.stop = stop


def _fail(message: str, code: int = 2) -> None:
    """Print ``gupsim: error: MESSAGE`` as one line on stderr and exit.

    A message past :data:`MAX_ERROR_CHARS` (a value echoed whole somewhere) keeps its start and end."""
    line = " ".join(message.split())
    if len(line) > MAX_ERROR_CHARS:
        half = MAX_ERROR_CHARS // 2
        line = f"{line[:half]} [... {len(line) - 2 * half:,} characters ...] {line[-half:]}"
    try:
        click.echo(f"gupsim: error: {line}", err=True)
    except OSError:
        pass  # stderr itself cannot be written: the exit status is all that is left
    sys.exit(code)


#: The longest error line printed: every echoed value is clipped (gupsim.base.errors.clip), this is the backstop.
MAX_ERROR_CHARS = 600
#: errno values that mean the path given was wrong (exit 2, bad input); any other OSError is a fault of the
#: environment (a full disk, an I/O error: exit 1).
BAD_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP,
                             errno.EACCES, errno.EPERM, errno.EEXIST, errno.EINVAL})


def os_error_line(exc: OSError) -> str:
    """``<path>: <the OS's reason>`` (the path clipped: a name over the file system's limit is long)."""
    why = exc.strerror or str(exc)
    return f"{clip(str(exc.filename))}: {why}" if exc.filename is not None else why


def os_error_status(exc: OSError) -> int:
    return 2 if exc.errno in BAD_PATH_ERRNOS else 1


class FiniteFloatRange(click.FloatRange):
    """A ``click.FloatRange`` that also refuses ``nan`` and ``inf``: float() parses both, and the range
    test lets NaN through (every comparison with it is false), so ``--sample-interval-s nan`` ran with a
    meaningless interval."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


@contextmanager
def _writing(option: str, path: Any) -> Iterator[None]:
    """Turn an OSError while writing the output named by ``option`` into one line naming the path (a
    missing folder, a read-only place); any other exception is left alone."""
    try:
        yield
    except OSError as exc:
        raise cannot_write(option, path, exc) from None


def _interrupted(exc: KeyboardInterrupt, kept: str, resumable: bool = True) -> NoReturn:
    """A long command stopped by a signal (:class:`gupsim.studies.cluster.Interrupted`): one line saying what
    was ``kept``, and the signal's exit status (128 + its number)."""
    try:
        click.echo(f"gupsim: interrupted: {kept}" + ("; run the same command again to resume" if resumable else ""),
                   err=True)
    except OSError:
        pass  # stderr gone with the terminal (SIGHUP): the exit status is all that is left
    sys.exit(128 + getattr(exc, "signum", 2))


@contextmanager
def _kept_runs(out_dir: str) -> Iterator[None]:
    """A file under ``--out`` that cannot be used (its kept runs' folder made unreadable, a file where a folder
    belongs) as one line naming it; an OSError about anything else is left alone."""
    try:
        yield
    except OSError as exc:
        where = Path(exc.filename).resolve() if exc.filename else None
        if where is None or not where.is_relative_to(Path(out_dir).resolve()):
            raise
        raise GupsimError(f"{cannot_write(f'--out {out_dir}:', exc.filename, exc)}; move it aside, or run with "
                          "--fresh to ignore the kept runs") from None


@click.group(name="gupsim", cls=GupsimGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gupsim")
def cli() -> None:
    """Simulate HPCC RandomAccess (GUPS) on torus supercomputers."""


@cli.command()
@click.option("--machine", default=DEFAULTS["machine"], show_default=True, help="machine name or YAML path")
@click.option("--shape", default=DEFAULTS["shape"], show_default=True, help="partition shape XxYxZ")
@click.option("--algorithm", default=DEFAULTS["algorithm"], show_default=True,
              help="update algorithm (gupsim list gives the names and their options)")
@click.option("--updates", default=DEFAULTS["updates"], show_default=True, type=click.IntRange(min=1),
              help="updates per process: the cap of a run to --precision, the length of a --fixed-length one")
@click.option("--seed", default=DEFAULTS["seed"], show_default=True, type=click.IntRange(min=0),
              help="the run's one random stream: the same inputs and seed give the same numbers")
@click.option("--precision", type=float, default=None, metavar="P",
              help=f"stop once the GUPS 95% interval is within P of the rate either side; --updates is then "
                   f"the cap  [default: {first_run.RUN_PRECISION:g}; none with --verify]")
@click.option("--fixed-length", is_flag=True, help="run all --updates (no --precision); --verify implies it")
@click.option("--all-rates", is_flag=True,
              help="also print the rate between 25% and 75% of the updates applied and the whole run's")
@click.option("--warm-start", is_flag=True,
              help="start with buckets pre-filled from each process's own stream, as a long run holds them "
                   "(routed only; docs/model.md)")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a machine field (repeatable)")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="algorithm option (repeatable; gupsim list gives them)")
@click.option("--log2-table-size", type=click.IntRange(1, 63), default=None, help="global table size, log2 words")
@click.option("--verify", is_flag=True, help="carry real values and run HPCC's verification")
@click.option("--engine", type=click.Choice(["auto", *ENGINES]), default="auto", show_default=True,
              help="fast: compiled kernels (gupsim.engines.fast); simpy: the reference; auto: fast where a kernel exists")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--links", is_flag=True, help="add per-link counters to the record (for gupsim plot links)")
@click.option("--histograms", is_flag=True, help="add updates-per-packet/-message histograms to the record")
@click.option("--sample-interval-s", type=FiniteFloatRange(min=0, min_open=True), default=None,
              help="sample throttling and SBF this often (simulated seconds)")
@click.option("--checkpoint", "checkpoint_path", default=None, type=click.Path(dir_okay=False),
              help="keep the fast run's state in this file as it goes; the same command resumes from it")
@click.option("--checkpoint-every-s", default=None, type=FiniteFloatRange(min=0),
              help="wall seconds between two saves of --checkpoint  [default: 600]")
@click.option("--progress", "progress_mode", type=click.Choice(progress.MODES), default="auto", show_default=True,
              help="bar (a terminal), plain (a line on stderr every 30 s), none; auto: bar on a terminal, else plain")
@click.option("--no-progress", is_flag=True, help="the same as --progress none")
@click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
              help="threads for one run (default: the cores this process may use, or $GUPSIM_THREADS); the record is "
                   "the same on any number")
def run(machine, shape, algorithm, updates, seed, precision, fixed_length, all_rates, warm_start, sets, options,
        log2_table_size, verify, engine, as_json, links, histograms, sample_interval_s, checkpoint_path,
        checkpoint_every_s, progress_mode, no_progress, threads) -> None:
    """Simulate one run and print its record: GUPS with its 95% interval, to 2% unless told otherwise."""
    precision = None if fixed_length else first_run.RUN_PRECISION if precision is None and not verify else precision
    m = _load_machine(machine, sets)
    algorithm_options = _key_values(options, "--option")
    cfg = make_run_config(machine=m, shape=shape, algorithm=algorithm, updates_per_process=updates, seed=seed,
                          precision=precision, warm_start=warm_start, verify=verify,
                          log2_table_size=log2_table_size, algorithm_options=algorithm_options, engine=engine)
    telemetry = make_telemetry(links=links, histograms=histograms, sample_interval_s=sample_interval_s)
    checkpoint = _checkpoint(cfg, checkpoint_path, checkpoint_every_s, telemetry.wanted)
    try:  # a signal just after the estimate is this run's interruption too
        first_run.say_estimate(cfg, telemetry.kinds if telemetry.wanted else ())
        with interruptible(), \
                progress.reporting(f"{cfg.shape} {cfg.algorithm}", "none" if no_progress else progress_mode) as tell:
            sim, record = simulate(cfg, telemetry if telemetry.wanted else None, checkpoint, tell,
                                   _threads(cfg, threads, checkpoint))
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP, SIGXCPU (gupsim.studies.cluster.Interrupted)
        _interrupted(exc, f"the run's last saved state is kept in {checkpoint_path}" if checkpoint_path else
                     "the run is lost (gupsim run --checkpoint FILE keeps its state as it goes)",
                     resumable=bool(checkpoint_path))
    warn_short_timeseries(record, sample_interval_s)
    if sets or options:
        record["what_if"] = what_if(parse_set_options(sets), algorithm_options)
    if verify:
        result = sim.verify()
        record |= {"verify_errors": result.errors, "verify_table_size": result.table_size,
                   "verify_passed": result.passed}
    _print_or_keep(to_json(headline_record(record)) if as_json else format_record(record, all_rates), record, cfg)
    if verify and not record["verify_passed"]:
        sys.exit(1)


def _print(text: str) -> None:
    """Print ``text`` on stdout now; stdout that cannot be written (a full disk, a closed pipe) is one line."""
    try:
        _write_all_to_stdout(text + "\n")
    except OSError as exc:
        sys.stdout = open(os.devnull, "w")  # what is buffered would fail again, with a traceback, at exit

        raise ResourceFault(f"cannot write to standard output: {exc.strerror or exc}") from None


def _write_all_to_stdout(text: str) -> None:
    """Write ``text`` to stdout's file descriptor until every byte is taken, or raise the OSError that stops it.

    Through Python's buffered stdout a write cut short by a file-size limit (``prlimit --fsize``) was dropped
    without an error: ``run --json > f.json`` left 1,000 bytes of a record and exited 0.  A stdout with no
    descriptor (a test's captured stream) is written the ordinary way."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        click.echo(text, nl=False)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    data = memoryview(text.encode(sys.stdout.encoding or "utf-8", errors="replace"))
    while data:
        data = data[os.write(fd, data):]


#: Where ``gupsim run`` keeps a finished record that stdout could not take.
KEPT_RECORDS_DIR = Path("results") / "records"


def _print_or_keep(text: str, record: dict, cfg: Any) -> None:
    """Print a finished run's record; if stdout cannot take it, keep the record (as JSON) under
    :data:`KEPT_RECORDS_DIR`, named by the run's key, and say where: a run's result is never lost."""
    try:
        _print(text)
    except ResourceFault as exc:
        path = KEPT_RECORDS_DIR / f"{run_key(cfg, code_digest())}.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with replaced_atomically(path) as tmp:
                tmp.write_text(to_json(record) + "\n")
        except OSError as again:
            raise ResourceFault(f"{exc}; the record could not be kept either: {path}: "
                                f"{again.strerror or again}") from None
        raise ResourceFault(f"{exc}; the run's record is kept in {path}") from None


def _share_cores(jobs: int, threads: int | None) -> int:
    """The threads each of ``jobs`` runs at a time gets: as asked, or the usable cores shared out among them (at
    least one each); said in one line, with a warning when jobs x threads is more than the cores."""
    cores = default_threads()
    each = threads if threads is not None else max(1, cores // jobs)
    busy = jobs * each
    note = f" (more than the {cores} usable cores: they will share them)" if busy > cores else ""
    click.echo(f"{jobs} job(s) x {each} thread(s) a run, on {cores} usable core(s){note}; a run its engine "
               "cannot split uses one")
    return each


def _threads(cfg: Any, asked: int | None, checkpoint: Any) -> int:
    """``gupsim run --threads``: the threads the run gets (default: the cores this process may use).  Asked for
    more than one and refused by the engine that makes the run, it is one line; by default the run just uses one."""
    if asked is None:  # the engine uses what it can of them, and says nothing (the record gives how many)
        return default_threads()
    if asked == 1:
        return 1
    engine = ENGINES.engine_for(cfg)
    used, why = engine.threads_for(cfg, asked, checkpoint)
    if why is not None:
        raise GupsimError(f"--threads {asked}: {why}")
    return used


def _checkpoint(cfg: Any, path: str | None, every_s: float | None, telemetry: bool) -> Any:
    """``gupsim run --checkpoint``: where and how often the engine that makes the run keeps its state; one that
    keeps none is refused, saying why the run cannot go to one that does."""
    if path is None:
        return None
    keepers = ENGINES.that("checkpoints")
    if telemetry:
        raise GupsimError(f"--checkpoint needs the {titles(keepers)} engine, and --links, --histograms and "
                          f"--sample-interval-s need {titles(ENGINES.that('observes'))}: drop one or the other")
    engine = ENGINES.engine_for(cfg)
    if not engine.checkpoints:
        reasons = [reason for reason in (e.unsupported(cfg) for e in keepers) if reason]
        why = reasons[0] if reasons else f"--engine {cfg.engine} asks for {engine.title}"
        raise GupsimError(f"--checkpoint needs the {titles(keepers)} engine, which this run cannot use: {why}")
    refuse_overwrite("--checkpoint", path, [cfg.machine.source_path])
    log_to_stderr()  # a line per save: how far the run has got
    return engine.checkpoint(Path(path), run_key(cfg, code_digest()), every_s)


@cli.command(short_help="CPU bound (eq. 1) and network bound (eq. 2) of seed 000.")
@click.option("--machine", default=DEFAULTS["machine"], show_default=True, help="machine name or YAML path")
@click.option("--shape", required=True, help="partition shape XxYxZ, e.g. 64x32x32")
@click.option("--bytes-per-update", type=FiniteFloatRange(min=0, min_open=True), default=None,
              help="b for eq. (2) instead of the machine's wire bytes")
@click.option("--algorithm", default=None,
              help="also this algorithm's own bounds: its cycles and wire bytes per update, and which binds")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="an option of --algorithm (repeatable; gupsim list shows them)")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a machine field (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def bounds(machine, shape, bytes_per_update, algorithm, options, sets, as_json) -> None:
    """CPU bound (eq. 1) and network bound (eq. 2) of seed 000; with --algorithm, that algorithm's own."""
    loaded = _load_machine(machine, sets)
    b = compute(loaded, shape, bytes_per_update).as_dict()
    if sets:
        b["what_if"] = what_if(parse_set_options(sets), {})
    if algorithm is not None:
        b["algorithm"] = _stated_bounds(loaded, b["shape"], algorithm, _key_values(options, "--option"))
    elif options:
        raise GupsimError("--option sets an option of --algorithm; give --algorithm NAME too")
    _print(to_json(b) if as_json else format_bounds(b))


def _stated_bounds(machine: Any, shape: str, name: str, options: dict[str, Any]) -> dict[str, Any]:
    """Eq. (1) and (2) with algorithm ``name``'s stated costs (:meth:`Algorithm.stated_costs`)."""
    cls = algorithm_class(name)  # an unknown name lists the valid ones
    if not cls.states_costs:
        stating = [a for a in available_algorithms() if algorithm_class(a).states_costs]
        raise GupsimError(f"bounds --algorithm {name}: {name} states no costs for eq. (1) and (2) yet "
                          f"(those that do: {', '.join(stating)})")
    costs = cls.stated_costs(machine, parse_shape(shape), validate_options(name, options))
    return algorithm_bounds(machine, shape, costs)


@cli.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--out", "out_dir", default="results", show_default=True, type=NonEmptyPath(file_okay=False),
              help="folder for the CSVs")
@click.option("--quick", is_flag=True, help="reduced sizes/lengths, for CI")
@click.option("--docs", "docs_path", default=None, type=NonEmptyPath(dir_okay=False),
              help="write the validation page here (default: docs/validation.md of a source checkout, unless "
                   "--quick; an installed gupsim writes only into --out)")
@click.option("--jobs", default=1, show_default=True, type=workers_range(),
              help="Dask worker processes; the tables' runs share them, largest first")
@click.option("--keep-runs/--fresh", default=True, show_default=True,
              help="keep each finished run in OUT/runs and reuse those this code already made (resume a stopped run)")
@click.option("--precision", default=REPRODUCE_PRECISION, show_default=True,
              type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
              help="stop each row once its GUPS 95% interval is within this fraction of the rate; the table's "
                   "run length is the cap")
@click.option("--fixed-length", is_flag=True, help="run every row to its table's fixed length (no --precision)")
@click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
              help="threads for each run (default: the cores this process may use, shared out among the --jobs)")
def reproduce(names, out_dir, quick, docs_path, jobs, keep_runs, precision, fixed_length, threads) -> None:
    """Reproduce published tables: bgl-table2, bgl-table3, ... or all."""
    wanted = experiment_names(names, available_experiments())
    refuse_overwrite("--docs", docs_path, [Path(out_dir) / "runs"])
    checkout = source_checkout()
    if docs_path is None and not quick:
        if checkout is not None:
            docs_path = str(checkout / "docs" / "validation.md")
        else:  # an installed package has no pages of its own to refresh; site-packages is not the user's
            click.echo(f"gupsim is installed, not run from its source checkout: writing only into {out_dir} "
                       "(--docs FILE also writes the validation page)")
    command = "gupsim reproduce " + " ".join(names) + (" --quick" if quick else "") + \
        (" --fixed-length" if fixed_length else f" --precision {precision:g}" if precision != REPRODUCE_PRECISION else "")
    finished = []

    def keep(comparison) -> None:
        # Each table lands (CSV, figures, its section of the page) as soon as it is done, so a long
        # `reproduce all` that is stopped early keeps what it finished; the page says which ones.
        finished.append(comparison)
        with _writing("--out", out_dir):
            path = comparison.write_csv(Path(out_dir))
            figures = comparison.figures(Path(out_dir))
        for extra in figures:
            click.echo(f"{comparison.name}: wrote {extra}")
        click.echo(f"{comparison.name}: wrote {path} ({comparison.wall_s:.1f} s)")
        for line in comparison.summary_lines():
            click.echo(f"  {line}")
        if docs_path:
            with _writing("--docs", docs_path):
                write_markdown(finished, Path(docs_path), command, refresh=True)

    with _writing("--out", out_dir):  # a folder that cannot be made fails now, not after the runs
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    cache_dir = Path(out_dir) / "runs" if keep_runs else None
    threads = _share_cores(jobs, threads)
    log_to_stderr()
    try:
        with _kept_runs(out_dir), interruptible():
            comparisons = run_experiments(wanted, quick, jobs, on_done=keep, cache_dir=cache_dir,
                                          precision=None if fixed_length else precision, threads=threads)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (gupsim.studies.cluster.Interrupted)
        kept = f"; its finished runs are kept in {cache_dir} and reused" if cache_dir else ""
        _interrupted(exc, f"{len(finished)} finished table(s) are written to {out_dir}{kept}")
    if docs_path:
        # One table reproduced refreshes its own section; `all` rewrites the page once everything is in.
        with _writing("--docs", docs_path):
            write_markdown(comparisons, Path(docs_path), command, refresh="all" not in names)
        click.echo(f"wrote {docs_path}")
    if not quick and checkout is not None:
        refresh_parameter_tables(checkout / "docs" / "model.md", MACHINES_DIR)


@cli.command()
@click.option("--out", "out_dir", default="results", show_default=True, type=NonEmptyPath(file_okay=False),
              help="the --out of gupsim reproduce (its runs are kept in OUT/runs)")
@click.option("--all", "show_all", is_flag=True, help="also the runs other model code kept (never reused)")
@click.option("--csv", "csv_path", default=None, type=NonEmptyPath(dir_okay=False), help="export the table as CSV")
def runs(out_dir, show_all, csv_path) -> None:
    """List the runs gupsim reproduce kept: what each was, its cost, and whether this code reuses it."""

    import pandas as pd


    cache_dir = Path(out_dir) / "runs"
    if not cache_dir.is_dir():
        # The usual cause: reproduce was given --out DIR, and this looks in the default folder.
        raise GupsimError(f"{cache_dir} does not exist: no runs are kept there; gupsim reproduce keeps its runs in "
                          f"the runs/ folder of its --out, so if it was given --out DIR, run gupsim runs --out DIR")
    refuse_overwrite("--csv", csv_path, [cache_dir])
    code = code_digest()
    table, stopped = kept_runs(cache_dir, code), unfinished_runs(cache_dir, code)
    mine = table.loc[table["reused"].astype(bool)]  # .loc: an empty object column would select columns
    shown = table if show_all else mine
    if csv_path:
        with _writing("--csv", csv_path), replaced_atomically(csv_path) as tmp:
            shown.to_csv(tmp, index=False)
    readable = {"events": "{:,}".format, "wall_s": "{:,.1f}".format, "events_per_wall_s": "{:,.0f}".format,
                "peak_rss_mb": "{:,.0f}".format, "gups": "{:.4g}".format, "updates_applied": "{:,}".format,
                "size_mb": "{:,.0f}".format}
    with pd.option_context("display.max_rows", 500, "display.width", 250, "display.max_columns", 50):
        if len(shown):
            click.echo(shown.drop(columns=[] if show_all else ["reused", "code"]).to_string(
                index=False, formatters=readable))
        if len(stopped):
            click.echo("\nunfinished (checkpoints):\n" + stopped.to_string(index=False, formatters=readable))
    click.echo(f"model code {code}: {len(mine)} kept runs, {mine['events'].sum():,.0f} events, "
               f"{mine['wall_s'].sum():,.0f} s of wall time in all; {len(table) - len(mine)} kept by other code "
               f"(not reused); {int(stopped['resumed'].sum())} unfinished"
               + (f"; {table.attrs['unreadable']} unreadable (damaged files: the next reproduce runs them again)"
                  if table.attrs.get("unreadable") else "")
               + (f"; {table.attrs['pickled']} kept as pickles by an older gupsim, not read (a pickle can run "
                  f"code): delete {cache_dir / 'joblib'}" if table.attrs.get("pickled") else ""))


@cli.command(name="list")
def list_() -> None:
    """List the machines, algorithms (with their options), topologies and experiments gupsim knows."""
    click.echo(f"machines:   {', '.join(available_machines())}")
    click.echo(f"algorithms: {', '.join(available_algorithms())}")
    click.echo("  their --option KEY=VALUE, with the defaults (meanings: docs/reference/algorithms.md):")
    for name in available_algorithms():
        fields = algorithm_class(name).Options.model_fields
        defaults = "  ".join(f"{k}={'auto' if f.default is None else f.default}" for k, f in fields.items())
        click.echo(f"  {name:<13} {defaults or '(no options)'}")
    click.echo(f"topologies: {', '.join(sorted(TOPOLOGIES))}")

    click.echo(f"experiments: {', '.join(available_experiments())}")


@cli.command()
@click.argument("sweep_file")
@click.option("--store", "store_path", default=None, type=NonEmptyPath(),
              help="results store folder (default: results/<sweep name>.store)")
@click.option("--scheduler", default=None, metavar="ADDRESS", help="run on an existing Dask cluster (tcp://host:8786)")
@click.option("--workers", type=workers_range(), default=None, help="local workers (default: one per core)")
@click.option("--in-process", is_flag=True, help="local workers as threads in this process (no subprocesses)")
@click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
              help="threads for each point's run (default: the usable cores shared out among the local workers)")
@click.option("--dry-run", is_flag=True, help="validate and list the points with their estimated cost; run nothing")
@click.option("--no-progress", is_flag=True, help="no progress bar")
def sweep(sweep_file, store_path, scheduler, workers, in_process, threads, dry_run, no_progress) -> None:
    """Run every point of a sweep file not yet in its results store."""
    spec = load_sweep(sweep_file)
    points = expand(spec, sweep_file)
    store = Path(store_path or Path("results") / f"{spec.name}.store")
    refuse_overwrite("--store", store, [sweep_file])
    done = ResultsStore(store, create=False).done_keys(code_digest()) if store.exists() else set()
    if dry_run:
        _dry_run(spec, points, store, done, workers)
        return
    with _writing("--store", store):  # a folder that cannot be made or written fails now, not at the first point
        ResultsStore(store).check_writable()
    try:
        each = threads if scheduler is not None else _share_cores(workers or default_threads(), threads)
        summary = run_sweep(spec, points, store, scheduler=scheduler, workers=workers, processes=not in_process,
                            progress=not no_progress, threads=each or 1)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (gupsim.studies.cluster.Interrupted)
        rows = ResultsStore(store).done_keys(code_digest()) & {p.key for p in points}
        _interrupted(exc, f"{len(rows)} of {len(points)} points are in {store}")
    click.echo(f"{spec.name}: {summary.total} points: {summary.skipped} already done, {summary.done} run, "
               f"{summary.failed} failed; results in {store}")
    if summary.failed:
        sys.exit(1)


def _dry_run(spec: Any, points: list[Any], store: Path, done: set[str], workers: int | None) -> None:
    """``gupsim sweep --dry-run``: every point, done or to run, with its estimate, then the sweep's."""
    estimates = estimate_points(points, ResultsStore(store, create=False) if store.exists() else None,
                                kept_rows(KEPT_RUNS_DIR))
    for p, e in zip(points, estimates):
        click.echo(f"{p.key}  {'done' if p.key in done else 'todo'}  ~{e.wall_s:.2g} s  {e.memory_bytes / 2**20:,.0f} MB  "
                   + ", ".join(f"{k}={v}" for k, v in p.varied.items()))
    todo = [e for p, e in zip(points, estimates) if p.key not in done]
    click.echo(f"{len(points)} points, {len(todo)} to run")
    click.echo(describe(todo, workers or os.cpu_count() or 1))


@cli.command()
@click.argument("store_path", type=click.Path())
@click.option("--csv", "csv_path", default=None, type=NonEmptyPath(dir_okay=False), help="export the table as CSV")
@click.option("--parquet", "parquet_path", default=None, type=NonEmptyPath(dir_okay=False),
              help="export as one Parquet file")
@click.option("--all-columns", is_flag=True, help="print every column (default: the main ones)")
def results(store_path, csv_path, parquet_path, all_columns) -> None:
    """Print (or export) a results store: one row per run."""
    import pandas as pd


    if csv_path and parquet_path and os.path.realpath(csv_path) == os.path.realpath(parquet_path):
        raise GupsimError(f"--csv and --parquet both name {csv_path}: the second export would overwrite the first")
    refuse_overwrite("--csv", csv_path, [store_path])
    refuse_overwrite("--parquet", parquet_path, [store_path])
    table = readable_table(store_table(store_path))  # "gups": the headline rate (gupsim.studies.headline)
    if csv_path:
        with _writing("--csv", csv_path), replaced_atomically(csv_path) as tmp:
            table.to_csv(tmp, index=False)
    if parquet_path:
        with _writing("--parquet", parquet_path), replaced_atomically(parquet_path) as tmp:
            table.to_parquet(tmp, index=False)

    if len(table):  # whether each row's gups is a steady-state rate, beside it
        table.insert(table.columns.get_loc("gups") + 1 if "gups" in table else len(table.columns),
                     rate_quality.COLUMN, [rate_quality.cell(row) for _, row in table.iterrows()])
    main_cols = ["key", "status", "shape", "nodes", "algorithm", "seed"] + \
        [c for c in table.columns if c.startswith("var.")] + ["gups", "gups_ci_low", "gups_ci_high", "precision", rate_quality.COLUMN, "network_bound_fraction", "send_blocking_factor", "bytes_per_update", "updates_per_packet", "error"]
    shown = table if all_columns else table[[c for c in dict.fromkeys(main_cols) if c in table]]
    with pd.option_context("display.max_rows", 500, "display.width", 200, "display.max_columns", 50):
        _print(shown.to_string(index=False) if len(shown) else f"{store_path}: no runs yet")
    ok = int(table["status"].eq("ok").sum()) if len(table) else 0
    _print(f"{len(table)} runs: {ok} ok, {len(table) - ok} failed")


@cli.command()
@click.argument("kind", type=click.Choice(["scaling", "whatif", "links", "histograms", "timeseries"]))
@click.argument("source", type=click.Path())
@click.option("--out", "out_dir", default="results/plots", show_default=True, type=NonEmptyPath(),
              help="a folder (the figure is named after the source: <store or record>-<kind>.png/.svg) "
                   "or a file name ending .png or .svg")
@click.option("--key", default=None,
              help="which run of a results store (a unique key prefix); scaling: the runs whose key starts with it")
@click.option("--z", "--slice", "z_slice", default=0, show_default=True, type=click.IntRange(min=0),
              help="links: the z plane to draw (0 .. Z-1)")
@click.option("--x", "x_field", default=None, metavar="FIELD",
              help="whatif: the varied field on the x axis (e.g. var.link_bytes_per_s; gupsim results shows them)")
def plot(kind, source, out_dir, key, z_slice, x_field) -> None:
    """Draw a figure (PNG and SVG) from a results store or a JSON run record.

    scaling: GUPS vs nodes with the eq. (1)/(2) bounds, from a store.
    whatif: GUPS vs the field --x (e.g. var.link_bytes_per_s), with each algorithm's bounds, from a store.
    links / histograms / timeseries: from a record made with --links /
    --histograms / --sample-interval-s (or a store row with --key).
    """
    refuse_overwrite("--out", out_dir, [source])
    folder = plots.output_place(kind, source, Path(out_dir), key)[0]
    with _writing("--out", out_dir):
        folder.mkdir(parents=True, exist_ok=True)
    for path in plots.draw(kind, source, Path(out_dir), key=key, z_slice=z_slice, x=x_field):
        click.echo(f"wrote {path}")


cli.add_command(compare)


def main(argv: list[str] | None = None) -> None:
    """The ``gupsim`` script: :class:`GupsimGroup` turns every user mistake into one line and exit 2."""
    cli.main(args=argv, prog_name="gupsim")

