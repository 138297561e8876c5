"""Independent runs of one reproduced table, one after another or side by side on a Dask cluster.

A reproduced table (``gupsim/studies/experiments/``) is a handful of independent
simulations, one per row, and its rows differ in cost by orders of magnitude
(seed 000 Table 4: 32 nodes in seconds, the whole 65,536-node machine in most of
an hour).  Running a table as one task leaves a core idle while another
finishes the big row; running its rows as tasks keeps both cores busy until the
end.  So an experiment builds the :class:`~gupsim.model.run_config.RunConfig` of every
row first and hands the list to a pool, which returns their records in the same
order:

* :class:`SerialPool` runs them here, in order (``gupsim reproduce`` without
  ``--jobs``, and the tests);
* :class:`DaskPool` sends each run to a Dask worker as its own task, largest
  first (:func:`run_cost`) and only when a worker is free, so the whole-machine
  rows start before the small ones and the cores finish together.

A run is a pure function of its configuration, so the records do not depend on
the pool (``tests/studies/test_runpool.py``).  Only records travel back (the simulation
objects stay in the worker).

**Keeping finished runs.**  With a ``cache_dir`` every record is written there
(``cache_dir/records/<run key>.json``, :func:`keep_record`) the moment its run ends, keyed by the configuration
and by a digest of gupsim's model code (:func:`code_digest`: every module but
those of ``gupsim/app`` and ``gupsim/studies``, which only present, schedule or
store results).  A reproduction that is stopped and started again reuses the
runs it finished, and only those made by the same model code with the same
configuration: editing a machine file or a model module starts afresh; editing
the command line, the plots or this module does not.

A kept run is JSON, never a pickle: a results folder is shared and downloaded, and unpickling a file runs
whatever code it names (a planted ``output.pkl`` would run its payload under ``gupsim runs``).  JSON holds
only numbers, text, lists and mappings, and Python's ``json`` reads back every float exactly; a record's
``NaN`` (a rate not measured) is written as the token ``NaN``, which Python reads back.  Folders of
pickles that older versions kept (``runs/joblib``) are counted, never opened.

**Keeping unfinished runs.**  A run on an engine that keeps checkpoints (the fast one:
:meth:`gupsim.engines.contract.Engine.checkpoint`) also saves its whole state to
``cache_dir/checkpoints`` every ten minutes of wall time, under the same key, and a restarted reproduction
resumes it from there: a whole-machine row stopped near its end loses minutes,
not the hour and a half it had run.  The file is deleted when the run ends;
files left by other code are deleted when a pool starts.
"""

from __future__ import annotations

import ast
import functools
import gc
import hashlib
import itertools
import json
import logging
import math
import queue
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

from gupsim.base.errors import GupsimError
from gupsim.base.files import read_bytes, replaced_atomically
from gupsim.studies.headline import headline_record
from gupsim.engines.run import ENGINES, resolved_config, run
from gupsim.model.run_config import RunConfig
from gupsim.topology.base import parse_shape

#: The gupsim package, whose model modules the code digest hashes.
PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: One line per finished run (``gupsim reproduce`` shows them on stderr): hour-long rows are otherwise silent.
log = logging.getLogger(__name__)


#: The packages that present, schedule or store results: the top two layers (pyproject.toml's layers
#: contract).  A run's record does not depend on them, since no model or engine module may import them and a
#: run never loads one (tests/studies/test_runpool.py), so editing them keeps the kept runs and checkpoints.
#: Everything else under gupsim/ is the model the digest hashes, folder by folder: base, config, topology,
#: model, algorithms, engines, data (its loaders read the machine files and tables) and the package's own
#: ``__init__``.  The reproduced tables' scripts (studies/experiments) only build configurations, and a run's
#: key holds its whole configuration.
PRESENTATION_PACKAGES = frozenset({"app", "studies"})


class _NoDocstrings(ast.NodeTransformer):
    """Drops every statement that is a bare string (docstrings, and strings used as comments)."""

    def visit_Expr(self, node: ast.Expr) -> ast.Expr | None:
        return None if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) else node


@functools.lru_cache(maxsize=None)
def _module_code(path: Path, mtime_ns: int, size: int) -> bytes:
    """A module's syntax tree without its docstrings: what it does, not what it says.  Cached per file
    version (a whole package parses in about 0.35 s, and a sweep asks once per point)."""
    return ast.dump(_NoDocstrings().visit(ast.parse(path.read_bytes(), filename=str(path)))).encode()


def model_files() -> list[Path]:
    """The modules the code digest hashes: every module of the package outside :data:`PRESENTATION_PACKAGES`."""
    return [path for path in sorted(PACKAGE_DIR.rglob("*.py"))
            if path.relative_to(PACKAGE_DIR).parts[0] not in PRESENTATION_PACKAGES]


def code_digest() -> str:
    """A hash of the code of gupsim's model modules (:func:`model_files`): a kept record is reused only by the
    model code that made it.  Comments and docstrings are not code, so editing them keeps kept runs,
    checkpoints and sweep rows (a regeneration of the kept runs costs over an hour)."""
    h = hashlib.sha256()
    for path in model_files():
        stat = path.stat()
        name = path.relative_to(PACKAGE_DIR).as_posix()
        h.update(name.encode() + b"\0" + _module_code(path, stat.st_mtime_ns, stat.st_size) + b"\0")
    return h.hexdigest()[:16]


def config_json(config: RunConfig) -> str:
    """The configuration as JSON, without the folder its machine file was read from: the same run made in
    another checkout is the same run (what that file reads is keyed by its bytes, ``inputs_digest``).  The
    sweep's point key leaves it out too (:func:`gupsim.engines.run.resolved_config`)."""
    return json.dumps(resolved_config(config), sort_keys=True)


def run_key(config: RunConfig, code: str) -> str:
    """The name of one run made by one version of the code: ``code`` and a hash of the configuration, with the
    bytes of the files its machine reads (:attr:`gupsim.config.MachineConfig.inputs_digest`)."""
    blob = config_json(config) + config.machine.inputs_digest
    return f"{code}-{hashlib.sha256(blob.encode()).hexdigest()[:20]}"


def checkpoint_for(config: RunConfig, cache_dir: str, code: str) -> Any:
    """Where the unfinished state of ``config``'s run is kept, under ``cache_dir``, by the engine that makes it
    (None if that engine keeps none)."""
    key = run_key(config, code)
    return ENGINES.engine_for(config).checkpoint(Path(cache_dir) / "checkpoints" / f"{key}.npz", key)


def drop_stale_checkpoints(cache_dir: str, code: str) -> None:
    """Delete the unfinished runs other code left: they can never be resumed, and can be gigabytes."""
    for path in (Path(cache_dir) / "checkpoints").glob("*.npz*"):
        if not path.name.startswith(f"{code}-"):
            path.unlink(missing_ok=True)


def _keeping(cache_dir: Path | None) -> tuple[str | None, str]:
    """A pool's folder of kept runs (as text) and the code digest that keys them; other code's checkpoints
    are dropped."""
    if cache_dir is None:
        return None, ""
    code = code_digest()
    drop_stale_checkpoints(str(cache_dir), code)
    (Path(cache_dir) / RECORDS_DIR).mkdir(parents=True, exist_ok=True)  # a file in its way fails now, not after a run
    return str(cache_dir), code


#: The folder of ``cache_dir`` holding one JSON file per kept run, and the folder older versions pickled to.
RECORDS_DIR, PICKLED_DIR = "records", "joblib"
#: The first field of a kept run's file: what it is, and the version of its layout.
KEPT_FORMAT = "gupsim kept run 1"


def record_path(cache_dir: str | Path, config: RunConfig, code: str) -> Path:
    """Where the record of ``config`` run by ``code`` is kept: named by :func:`run_key`, which holds the
    configuration, the code and the bytes of the files the machine reads (an edited cycle table is another run)."""
    return Path(cache_dir) / RECORDS_DIR / f"{run_key(config, code)}.json"


def keep_record(path: Path, config: RunConfig, code: str, record: dict[str, Any]) -> None:
    """Write a finished run's record as JSON, whole or not at all (a temporary file renamed into place), with
    what it was: the configuration, the code and the inputs' digest (:func:`kept_runs` lists them)."""
    doc = {"format": KEPT_FORMAT, "code": code, "config": json.loads(config_json(config)),
           "inputs": config.machine.inputs_digest, "record": record}
    text = json.dumps(doc, default=_plain)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path) as tmp:
        tmp.write_text(text)


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds (a record's counters may be NumPy integers)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"a record holds a {type(value).__name__}, which JSON cannot keep")


def read_kept(path: Path) -> dict[str, Any]:
    """A kept run's file, checked to be one (ValueError if not); reading it runs no code, whatever it holds."""
    doc = json.loads(read_bytes(path))
    if not isinstance(doc, dict) or doc.get("format") != KEPT_FORMAT or not isinstance(doc.get("record"), dict) \
            or not isinstance(doc.get("config"), dict) or not isinstance(doc.get("code"), str):
        raise ValueError(f"{path}: not a gupsim kept run")
    return doc


def reset_peak_rss() -> None:
    """Restart this process's peak RSS (``VmHWM``, which a record's ``peak_rss_mb`` reads) from its current RSS.

    A pool's worker runs many configurations; without this a record would give the largest run the worker
    had held so far, not its own.  Linux only (``clear_refs``); elsewhere the lifetime peak stays.

    The earlier run is collected first.  A SimPy model is a web of reference cycles (the environment, its
    processes and their events point at each other), which CPython frees only at a full collection, and a
    worker that goes on to fast runs makes too few objects to trigger one.  Without it the next record
    starts from the dead model's memory: a 2,048-endpoint Data Vortex run leaves 650 MB, enough to make rows of
    32-128 processes record 1,014-1,026 MB.  Then the
    C allocator's free pages go back to the system (glibc's ``malloc_trim``), which is where a Dask worker's
    Python objects live (:func:`gupsim.studies.cluster.open_client`)."""
    gc.collect()
    _trim_malloc()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _trim_malloc() -> None:
    """Return the C heap's free pages to the system; glibc only (elsewhere nothing to do)."""
    import ctypes

    try:  # the symbols already loaded: no search for libc (find_library starts a subprocess)
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def cached_run(config: RunConfig, cache_dir: str | None, code: str, threads: int = 1) -> tuple[str, dict[str, Any]]:
    """Where the record of ``config`` came from, for the log, and the record, its ``gups`` the headline rate
    (:func:`gupsim.studies.headline.headline_record`: what a validation row calls GUPS has its interval
    beside it): from ``cache_dir`` if this code already ran it ("kept, reused"), else run, resuming its
    checkpoint if one was kept, and kept; on ``threads`` threads where its engine can split it."""
    origin, record = _cached_run(config, cache_dir, code, threads)
    return origin, headline_record(record)


def _cached_run(config: RunConfig, cache_dir: str | None, code: str, threads: int) -> tuple[str, dict[str, Any]]:
    reset_peak_rss()
    if cache_dir is None:
        return "run", run(config, threads=_threads(config, threads, None))
    path, checkpoint = record_path(cache_dir, config, code), checkpoint_for(config, cache_dir, code)
    # an engine that keeps no checkpoint (SimPy) gives None: its runs always start afresh
    origin = "resumed from its checkpoint" if checkpoint is not None and checkpoint.path.exists() else "run"
    if path.exists():
        try:
            return "kept, reused", read_kept(path)["record"]
        except (OSError, ValueError, GupsimError):  # a cut or damaged file: run it again, in one line
            log.warning("kept run unreadable, dropped and run again: %s (%s)", describe(config), path)
            path.unlink(missing_ok=True)
            origin = "run again: its kept record was unreadable"
    record = run(config, checkpoint=checkpoint, threads=_threads(config, threads, checkpoint))
    keep_record(path, config, code, record)
    return origin, record


def _threads(config: RunConfig, threads: int, checkpoint: Any) -> int:
    """The threads ``config``'s engine runs it on, of the ``threads`` it may use (one where it cannot split it)."""
    return ENGINES.engine_for(config).threads_for(config, threads, checkpoint)[0] if threads > 1 else 1


def describe(config: RunConfig) -> str:
    """One run in a few words: algorithm, partition, processes per node, run length."""
    ppn = config.machine.cpu.processes_per_node
    return (f"{config.algorithm} on {config.shape}" + (f" ({ppn} per node)" if ppn > 1 else "")
            + f", {config.updates_per_process:,} updates per process")


def _log_done(config: RunConfig, origin: str, record: dict[str, Any]) -> None:
    wall_s = record.get("wall_s", float("nan"))
    log.info("run done: %s: %s s of wall time (%s)", describe(config), f"{wall_s:,.1f}", origin)


class _StderrNow(logging.StreamHandler):
    """A handler that writes to ``sys.stderr`` as it is when a line is logged, not when the handler was made:
    a command run inside another program (a test's CliRunner) may have replaced and closed that stream since,
    and logging would print "--- Logging error ---" instead of the line."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def log_to_stderr() -> None:
    """Show gupsim's progress lines on stderr with the time of day: a finished run (here), a saved
    checkpoint (:meth:`gupsim.engines.contract.Engine.checkpoint`).  :class:`DaskPool` does it in every worker too."""
    logger = logging.getLogger("gupsim")
    if not logger.handlers:  # once per process: `main` may run reproduce more than once (tests)
        handler = _StderrNow()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


class RunPool(Protocol):
    def records(self, configs: list[RunConfig]) -> list[dict[str, Any]]:
        """The record of every run, in the order given."""


def with_precision(config: RunConfig, precision: float | None) -> RunConfig:
    """``config`` stopped once its GUPS interval is within ``precision`` (its length the cap), unless it asks
    for a precision of its own, verifies HPCC's table (which needs every update) or ``precision`` is None."""
    if precision is None or config.precision is not None or config.verify:
        return config
    return config.model_copy(update={"precision": precision})


def run_cost(config: RunConfig) -> int:
    """A rough cost: processes x updates x the partition's mean distance (only orders the queue)."""
    dims = parse_shape(config.shape)
    return math.prod(dims) * config.machine.cpu.processes_per_node * config.updates_per_process * max(1, sum(dims) // 4)


class SerialPool:
    """Run every configuration in this process, in order (kept in ``cache_dir`` if given); with a
    ``precision``, each stops once that precise (:func:`with_precision`)."""

    def __init__(self, cache_dir: Path | None = None, precision: float | None = None, threads: int = 1) -> None:
        self.cache_dir, self.code = _keeping(cache_dir)
        self.precision, self.threads = precision, threads

    def records(self, configs: list[RunConfig]) -> list[dict[str, Any]]:
        out = []
        for config in (with_precision(c, self.precision) for c in configs):
            origin, record = cached_run(config, self.cache_dir, self.code, self.threads)
            _log_done(config, origin, record)
            out.append(record)
        return out


class DaskPool:
    """Run every configuration as its own task on a Dask client, largest first, one per worker at a time.

    Several experiments call :meth:`records` from their own threads at once; their runs wait in one
    queue ordered by :func:`run_cost` and go to the cluster only when a worker is free.  (Submitted all
    at once, Dask may queue a small task behind an hour-long one on a busy worker while the other worker
    sits idle.)  A configuration asked for by several tables runs
    once.  A whole task that is not a list of runs (an
    experiment without a pool) takes its place in the same queue (:meth:`call`).  Workers keep
    each record in ``cache_dir`` as their run ends (see the module docstring).  With a ``precision``, each
    run stops once that precise (:func:`with_precision`).
    """

    def __init__(self, client: Any, workers: int, cache_dir: Path | None = None,
                 precision: float | None = None, threads: int = 1) -> None:
        self.client = client
        self.cache_dir, self.code = _keeping(cache_dir)
        self.precision, self.threads = precision, threads
        if logging.getLogger("gupsim").handlers:  # the caller shows progress: so do the workers' runs
            client.run(log_to_stderr)
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()  # ties: first come, first served
        self._runs: dict[str, Future] = {}  # every run asked for, by configuration: each is queued once
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._serve, daemon=True) for _ in range(workers)]
        for t in self._threads:
            t.start()

    def _serve(self) -> None:
        while True:
            _, _, fn, args, result = self._queue.get()
            if fn is None:
                return
            try:
                result.set_result(self.client.submit(fn, *args, pure=False).result())
            except BaseException as exc:  # handed to the caller waiting on it
                result.set_exception(exc)

    def call(self, cost: float, fn: Any, *args: Any) -> Future:
        """Queue ``fn(*args)`` for a worker; larger ``cost`` goes first."""
        result: Future = Future()
        self._queue.put((-cost, next(self._order), fn, args, result))
        return result

    def records(self, configs: list[RunConfig]) -> list[dict[str, Any]]:
        futures = [self._run(with_precision(c, self.precision)) for c in configs]
        return [dict(f.result()[1]) for f in futures]  # a copy each: two tables may share one run

    def _run(self, config: RunConfig) -> Future:
        """The run of ``config``, queued once however many tables ask for it (they ask from their threads)."""
        key = config_json(config)
        with self._lock:
            if key not in self._runs:
                future = self._runs[key] = self.call(run_cost(config), cached_run, config, self.cache_dir, self.code,
                                                     self.threads)
                future.add_done_callback(lambda f: f.exception() or _log_done(config, *f.result()))
            return self._runs[key]

    def close(self) -> None:
        """Stop serving: runs still queued fail (so nobody waits on them), running ones end with the client."""
        while True:
            try:
                *_, result = self._queue.get_nowait()
            except queue.Empty:
                break
            if result is not None:
                result.set_exception(GupsimError("the run pool was closed before this run started"))
        for _ in self._threads:
            self._queue.put((float("inf"), next(self._order), None, (), None))


def kept_runs(cache_dir: Path, code: str | None = None) -> Any:
    """Every run kept in ``cache_dir`` (by any code), one row each: what it was, what it cost, and whether
    this model code reuses it (``reused``).  ``gupsim runs`` prints it.  Read from the records, so the
    costs of a reproduction are data, not numbers copied from its log.  ``code``: the digest to compare
    with, :func:`code_digest` by default.  Kept runs whose file cannot be read are counted in
    ``attrs["unreadable"]``; pickles older versions kept, never opened, in ``attrs["pickled"]``."""
    import datetime

    import pandas as pd

    code, rows, unreadable = code or code_digest(), [], 0
    for path in sorted((Path(cache_dir) / RECORDS_DIR).glob("*.json")):
        try:
            doc = read_kept(path)
            config, record = doc["config"], doc["record"]
            machine = config["machine"]
            what = {"machine": machine["name"], "algorithm": config["algorithm"], "shape": config["shape"],
                    "updates_per_process": config["updates_per_process"], "seed": config["seed"],
                    "routing": (machine.get("network") or {}).get("routing", "")}
            kept_at = path.stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError, AttributeError, GupsimError):
            unreadable += 1  # counted, not listed: the next reproduction runs it again (cached_run)
            continue
        rows.append({
            "reused": doc["code"] == code, "code": doc["code"], **what, "engine": record.get("engine"),
            "processes": record.get("processes"),
            "events": record.get("events"), "wall_s": record.get("wall_s"),
            "events_per_wall_s": record.get("events_per_s"), "peak_rss_mb": record.get("peak_rss_mb"),
            "gups": headline_record(record).get("gups"),  # the headline rate, as every table shows it
            "kept_at": datetime.datetime.fromtimestamp(kept_at, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        })
    columns = ["reused", "code", "machine", "algorithm", "engine", "shape", "processes", "updates_per_process", "routing",
               "seed", "events", "wall_s", "events_per_wall_s", "peak_rss_mb", "gups", "kept_at"]
    table = pd.DataFrame(rows, columns=columns).sort_values(["reused", "wall_s"], ascending=False, ignore_index=True)
    table.attrs["unreadable"] = unreadable
    table.attrs["pickled"] = sum(1 for _ in (Path(cache_dir) / PICKLED_DIR).rglob("output.pkl"))
    return table


def kept_rows(cache_dir: Path) -> list[dict[str, Any]]:
    """The rows of :func:`kept_runs` (none if ``cache_dir`` is not a folder or cannot be read: they only
    calibrate an estimate, :mod:`gupsim.studies.estimate`)."""
    if not cache_dir.is_dir():
        return []
    try:
        return kept_runs(cache_dir).to_dict("records")
    except OSError:
        return []


def unfinished_runs(cache_dir: Path, code: str | None = None) -> Any:
    """The checkpoints in ``cache_dir``: runs stopped before their end, how far they got, and whether this
    code resumes them (a pool deletes the others when it starts; ``code`` as for :func:`kept_runs`)."""
    import datetime

    import pandas as pd

    code, rows = code or code_digest(), []
    for path in sorted((Path(cache_dir) / "checkpoints").glob("*.npz")):
        progress = ENGINES.saved_progress(path)
        if progress is None:
            continue  # not a checkpoint (a save in progress is a .part file, not listed)
        rows.append({"resumed": path.name.startswith(f"{code}-"), "checkpoint": path.name,
                     "updates_applied": progress.updates_applied, "events": progress.events,
                     "wall_s": progress.wall_s, "size_mb": path.stat().st_size / 2**20,
                     "saved_at": datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
                     .strftime("%Y-%m-%d %H:%M")})
    columns = ["resumed", "checkpoint", "updates_applied", "events", "wall_s", "size_mb", "saved_at"]
    return pd.DataFrame(rows, columns=columns)


#: The default pool of an experiment's ``reproduce``: stateless, so one shared instance is safe.
SERIAL = SerialPool()
