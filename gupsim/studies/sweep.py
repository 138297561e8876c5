"""What-if sweeps: a validated grid of runs, expanded into points and run on Dask.

A sweep file (``configs/experiments/<name>.yaml``) names a machine, optional
fixed overrides, and a ``grid``: for each field, the list of values to try.
The points are the Cartesian product of the grid.  Grid keys are

* any machine field, by its dotted path or bare name exactly as ``--set``
  takes it (``network.link_bytes_per_s`` or ``link_bytes_per_s``); a numeric
  machine field may be given as ``{times: [0.5, 1, 2, 4]}``, factors of the
  machine's own value, which is how "links x0.5 .. x4" is written without
  retyping the machine's number;
* any run field of :class:`gupsim.model.run_config.RunConfig` (``shape``,
  ``algorithm``, ``seed``, ``log2_table_size``, ``engine``; ``updates`` is
  short for ``updates_per_process``), plus ``nodes``: a
  node count, turned into the most cubic power-of-two-friendly shape, or, if
  ``shape`` is given too, checked against it;
* ``option.NAME``: an algorithm option for every point.

Every point runs until its GUPS 95% interval is within :data:`SWEEP_PRECISION` (1%) of its rate, its
updates per process being the cap (``precision``, a run field, sets another target).

Every point is validated (machine, run fields, algorithm options, and what
``gupsim run`` checks before it builds a run: the HPCC slice, the engine, the
memory estimate) before any runs, so a bad sweep file fails in one line naming
the file and the field.
A point's identity is :func:`point_key`, a hash of its fully resolved
configuration (seed included) and of the record extras asked for; the
results store (:mod:`gupsim.studies.store`) uses it to skip points already done.

Execution (:func:`run_sweep`) is Dask's: a ``LocalCluster`` with one worker
per core by default, or an existing scheduler (:mod:`gupsim.studies.cluster`).  The driver writes each
finished point to the store as it arrives, so an interrupted sweep loses
nothing it finished; a point that raises is stored with its error and the
sweep goes on.  A worker that dies is Dask's business: its task is re-run
elsewhere (after ``distributed.scheduler.allowed-failures`` deaths the point
is stored as failed).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gupsim.data import DATA_DIR
from gupsim.config.loading import load_machine
from gupsim.base.errors import GupsimError
from gupsim.config.overrides import leaf_fields, resolve_override_key
from gupsim.config.yaml_files import read_yaml_mapping
from gupsim.model.run_config import RunConfig
from gupsim.algorithms.base import validate_options
from gupsim.engines.run import make_run_config
from gupsim.topology.base import parse_shape
from gupsim.engines.run import preflight
from gupsim.engines.run import resolved_config
from gupsim.studies.runpool import code_digest, kept_rows, reset_peak_rss
from gupsim.studies.store import failed_row, record_row
from gupsim.engines.run import simulate_with_extras, telemetry
from gupsim.studies.cluster import close_client, interruptible, open_client
from gupsim.studies.estimate import estimate_points
from gupsim.studies.store import ResultsStore
from gupsim.studies.estimate import describe

#: The named sweeps (``gupsim sweep example``), package data: an installed gupsim has them too.
EXPERIMENTS_DIR = DATA_DIR / "sweeps"
#: Run-field aliases a sweep file may use.
RUN_ALIASES = {"updates": "updates_per_process"}
#: The precision a point runs to unless its sweep file gives one (relative half-width of its GUPS 95%
#: interval; ``--precision``): its updates per process are the cap.
SWEEP_PRECISION = 0.01
#: RunConfig fields a grid may not set directly (they have their own keys).
_NOT_GRID = {"machine", "algorithm_options", "verify"}


class RecordExtras(BaseModel):
    """Optional, larger parts of each record (see :mod:`gupsim.engines.reference.telemetry`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)
    links: bool = Field(default=False, description="per-link bytes, busy and blocked seconds")
    histograms: bool = Field(default=False, description="updates per packet and per message (bucket sizes)")
    sample_interval_s: float | None = Field(default=None, gt=0, description="sample throttling and SBF this often")


class SweepSpec(BaseModel):
    """A sweep file."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    name: str = Field(min_length=1, description="names the default store, results/<name>.store")
    description: str = ""
    machine: str = "bgl"
    set: dict[str, Any] = Field(default_factory=dict, description="machine overrides for every point")
    options: dict[str, dict[str, Any]] = Field(default_factory=dict,
                                               description="algorithm -> options, for every point of it")
    record: RecordExtras = RecordExtras()
    grid: dict[str, Any] = Field(description="field -> list of values; the points are their product")

    @field_validator("name")
    @classmethod
    def _a_file_name(cls, name: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):  # '../x' would put the store anywhere
            raise ValueError(f"{name!r} names the store results/<name>.store: letters, digits, '.', '_' "
                             "and '-' only, not first '.', '_' or '-'")
        return name


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its validated RunConfig, its key and what varied."""

    key: str
    run: Any  # gupsim.model.run_config.RunConfig
    varied: dict[str, Any] = field(default_factory=dict)
    engine: str = "fast"  # the engine that will run it (gupsim.engines.run.preflight)


def load_sweep(path_or_name: str) -> SweepSpec:
    path = _sweep_path(path_or_name)
    data = read_yaml_mapping(path, "sweep fields (name, machine, grid)")
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            model = RecordExtras if err["loc"][0] == "record" else SweepSpec
            raise GupsimError(f"{path}: unknown key '{loc}' (valid: {', '.join(model.model_fields)})") from None
        if err["type"] == "missing":
            raise GupsimError(f"{path}: missing required key '{loc}'") from None
        raise GupsimError(f"{path}: {loc}: {err['msg'].removeprefix('Value error, ')}") from None
    if not spec.grid:
        raise GupsimError(f"{path}: grid names no fields; give at least one field and its values, "
                          f"e.g. grid: {{shape: [4x4x4, 8x8x8]}}")
    machine = Path(spec.machine)
    if machine.suffix in (".yaml", ".yml") and not machine.is_absolute():
        # A machine file beside the sweep file is found wherever gupsim is started from, as a machine
        # file's own relative paths (raw_device_cycle_table) are read from its folder.
        beside = path.parent / machine
        if not beside.exists():
            raise GupsimError(f"{path}: machine {spec.machine}: file not found (a relative path is read "
                              f"from the sweep file's folder: {beside})")
        spec = spec.model_copy(update={"machine": str(beside)})
    return spec


def _sweep_path(path_or_name: str) -> Path:
    path = Path(path_or_name)
    if path.suffix in (".yaml", ".yml"):
        if not path.exists():
            raise GupsimError(f"sweep file not found: {path}")
        return path
    named = EXPERIMENTS_DIR / f"{path_or_name}.yaml"
    if not named.exists():
        known = sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))
        raise GupsimError(f"unknown sweep {path_or_name!r}; valid choices: {', '.join(known)}")
    return named


# --------------------------------------------------------------------------- expansion


def _run_fields() -> set[str]:
    return set(RunConfig.model_fields) - _NOT_GRID


def _classify(key: str, where: str) -> tuple[str, str]:
    """('run' | 'option' | 'machine', canonical name) of a grid key."""
    if key.startswith("option."):
        return "option", key.removeprefix("option.")
    name = RUN_ALIASES.get(key, key)
    if name in _run_fields() or name == "nodes":
        return "run", name
    try:
        return "machine", resolve_override_key(key)
    except GupsimError as exc:
        if "did you mean" in str(exc):
            raise GupsimError(f"{where}: grid.{key}: no such field{str(exc).split('field', 1)[1]}") from None
        if "ambiguous" in str(exc):  # a bare name two sections share: say which to write, as --set does
            raise GupsimError(f"{where}: grid.{key}: {str(exc).split(': ', 1)[1]}") from None
        valid = sorted(_run_fields() | {"nodes", "updates", "option.NAME"})
        raise GupsimError(f"{where}: grid.{key}: not a run field ({', '.join(valid)}) "
                          f"nor a machine field (e.g. {', '.join([p for p in leaf_fields() if '.' in p][:3])}, ...)") from None


def _values(key: str, kind: str, name: str, raw: Any, base: dict[str, Any], where: str) -> list[Any]:
    if isinstance(raw, dict) and set(raw) == {"times"} and kind == "machine":
        factors = raw["times"]
        value = _dig(base, name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise GupsimError(f"{where}: grid.{key}: 'times' needs a numeric machine field, {name} is {value!r}")
        if not isinstance(factors, list) or not factors or not all(
                isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f < math.inf for f in factors):
            raise GupsimError(f"{where}: grid.{key}.times: expected a list of positive, finite factors")
        return [type(value)(value * f) if isinstance(value, float) else _int_times(value, f, key, where)
                for f in factors]
    if not isinstance(raw, list) or not raw:
        raise GupsimError(f"{where}: grid.{key}: expected a non-empty list of values"
                          + (" or {times: [factors]}" if kind == "machine" else ""))
    if len({json.dumps(v, sort_keys=True, default=str) for v in raw}) != len(raw):
        raise GupsimError(f"{where}: grid.{key}: repeated values {raw!r}")
    return raw


def _int_times(value: int, factor: float, key: str, where: str) -> int:
    scaled = value * factor
    if scaled != int(scaled):
        raise GupsimError(f"{where}: grid.{key}: {value} x {factor} is not a whole number")
    return int(scaled)


def _once(seen: dict[Any, str], field_name: Any, key: str, where: str) -> None:
    """Refuse two spellings of one field (``updates`` and ``updates_per_process``, a bare and a dotted machine
    key): one would silently win, and the store would record both as varied."""
    if field_name in seen:
        raise GupsimError(f"{where}: {seen[field_name]} and {key} name the same field; give it once")
    seen[field_name] = key


def _dig(data: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


#: The largest node count a sweep may name: 2^40 nodes would take about 3 PB at the fast engine's per-node
#: figure (gupsim.base.memory.FAST_NODE_BYTES), beyond any machine gupsim runs on.  It also bounds the divisor
#: search of :func:`shape_for_nodes` (a million candidates at most).
MAX_NODES = 2**40
#: The most points a sweep file may have.  Every point is validated before any runs (a few ms each) and listed
#: by ``--dry-run``, so a grid of millions would sit for hours before saying anything; a larger study is several
#: sweep files, which may share one store (``--store``).
MAX_POINTS = 10_000


def shape_for_nodes(nodes: int) -> str:
    """The most nearly cubic XxYxZ with X >= Y >= Z for a node count (65536 -> 64x32x32)."""
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 2:
        raise GupsimError(f"nodes={nodes!r}: expected a whole number of at least 2")
    if nodes > MAX_NODES:
        raise GupsimError(f"nodes={nodes}: more than any machine gupsim can simulate (at most 2^40 = "
                          f"{MAX_NODES:,} nodes, and far fewer fit in this computer's memory)")
    import bisect

    import numpy as np

    # Only divisors can be dimensions: find them at once (vectorised trial division up to sqrt(n)) and
    # search them in ascending order, which decides the tie between equally good shapes, so a node count
    # always gets the same shape.
    small = np.arange(1, math.isqrt(nodes) + 1, dtype=np.int64)
    small = small[nodes % small == 0].tolist()
    divisors = sorted(set(small) | {nodes // d for d in small})
    best = None
    for z in divisors:
        if z > round(nodes ** (1 / 3)) + 1:
            break
        rest = nodes // z
        for y in divisors[bisect.bisect_left(divisors, z):bisect.bisect_right(divisors, math.isqrt(rest))]:
            if rest % y == 0:
                dims = (rest // y, y, z)
                if best is None or max(dims) / min(dims) < max(best) / min(best):
                    best = dims
    return "x".join(map(str, best))


def expand(spec: SweepSpec, where: str = "sweep") -> list[Point]:
    """Every point of the grid, validated; one line of error for the first bad one."""
    machine_overrides: dict[str, Any] = {}
    set_by: dict[str, str] = {}
    for key, value in spec.set.items():
        try:
            name = resolve_override_key(key)
        except GupsimError as exc:
            raise GupsimError(f"{where}: set.{key}: {str(exc).split(': ', 1)[1]}") from None
        _once(set_by, name, f"set.{key}", where)
        machine_overrides[name] = value
    try:
        # {times: [...]} scales the machine's value after the sweep's own `set`.
        base = load_machine(spec.machine, machine_overrides).model_dump()
        for alg, opts in spec.options.items():
            validate_options(alg, opts)
    except GupsimError as exc:
        raise GupsimError(f"{where}: {str(exc).replace('--set ', 'set: ')}") from None
    axes = []
    grid_by: dict[tuple[str, str], str] = {}
    for key, raw in spec.grid.items():
        kind, name = _classify(key, where)
        _once(grid_by, (kind, name), f"grid.{key}", where)
        axes.append((key, kind, name, _values(key, kind, name, raw, base, where)))
    _check_size(axes, where)
    points: list[Point] = []
    seen: dict[str, str] = {}
    machines: dict[str, Any] = {}
    for combo in itertools.product(*(values for *_, values in axes)):
        run: dict[str, Any] = {}
        overrides = dict(machine_overrides)
        options: dict[str, Any] = {}
        varied = {}
        for (key, kind, name, _), value in zip(axes, combo):
            varied[key] = value
            {"run": run, "machine": overrides, "option": options}[kind][name] = value
        shown = ", ".join(f"{k}={v}" for k, v in varied.items())
        nodes = run.pop("nodes", None)
        if nodes is not None:
            run["shape"] = _shape_and_nodes(run.get("shape"), nodes, f"{where}: point {shown}")
        run.setdefault("algorithm", "baseline")
        run.setdefault("shape", "4x4x4")
        run.setdefault("updates_per_process", 4096)
        run.setdefault("precision", SWEEP_PRECISION)  # updates_per_process is then the cap
        options = {**spec.options.get(run["algorithm"], {}), **options}
        mkey = json.dumps(overrides, sort_keys=True, default=str)
        try:
            if mkey not in machines:
                machines[mkey] = load_machine(spec.machine, overrides)
            validate_options(run["algorithm"], options)
            cfg = make_run_config(machine=machines[mkey], algorithm_options=options, **run)
            engine = _check_runnable(cfg, spec.record)
        except GupsimError as exc:
            # load_machine blames "--set KEY=VALUE", choose_engine "--engine"; here the value came from the
            # sweep file.
            raise GupsimError(f"{where}: point {shown}: "
                              f"{str(exc).replace('--set ', '').replace('--engine ', 'engine ')}") from None
        key = point_key(cfg, spec.record)
        if key in seen:
            raise GupsimError(f"{where}: points {seen[key]} and {shown} are the same run "
                              f"(same resolved configuration and seed)")
        seen[key] = shown
        points.append(Point(key, cfg, varied, engine))
    return points


def _check_size(axes: list[tuple[str, str, str, list[Any]]], where: str) -> None:
    """Refuse a grid of more than :data:`MAX_POINTS` points, counted from its lists' lengths before any is made."""
    count = math.prod(len(values) for *_, values in axes)
    if count > MAX_POINTS:
        sizes = " x ".join(f"{len(values)} {key}" for key, *_, values in axes)
        raise GupsimError(f"{where}: grid has {count:,} points ({sizes}), more than the {MAX_POINTS:,} a sweep file "
                          f"may have; split it into several sweep files (they may share one --store)")


def _shape_and_nodes(shape: Any, nodes: Any, where: str) -> str:
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 2:
        raise GupsimError(f"{where}: nodes={nodes!r}: expected a whole number of at least 2")
    if shape is None:
        try:
            return shape_for_nodes(nodes)
        except GupsimError as exc:
            raise GupsimError(f"{where}: {exc}") from None
    dims = parse_shape(str(shape))
    if math.prod(dims) != nodes:
        raise GupsimError(f"{where}: shape {shape} has {math.prod(dims)} nodes, not nodes={nodes}")
    return str(shape)


def _check_runnable(cfg: Any, extras: RecordExtras) -> str:
    """What ``gupsim run`` checks before it builds anything (:func:`gupsim.engines.run.preflight`: the HPCC
    slice, the network, the engine, the memory estimate), so that a point that cannot run fails the
    validation instead of every run; the engine that will run it."""
    return preflight(cfg, telemetry=telemetry(extras.links, extras.histograms, extras.sample_interval_s).kinds)


def point_key(run_config: Any, extras: RecordExtras) -> str:
    """Stable id of a point: hash of (resolved config incl. seed, the bytes of the files its machine reads,
    record extras)."""
    blob = json.dumps({"config": resolved_config(run_config), "inputs": run_config.machine.inputs_digest,
                       "record": extras.model_dump()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


# --------------------------------------------------------------------------- running


def run_point(run_config: Any, extras: dict[str, Any], key: str, varied: dict[str, Any],
              threads: int = 1) -> dict[str, Any]:
    """Run one point (on a Dask worker, on up to ``threads`` threads); never raises: a failure becomes a row with
    its error.  The row names the model code that made it (``code``): a store reuses only its own code's rows, as
    reproduce does."""
    reset_peak_rss()  # this point's peak, not the worker's largest point so far
    try:
        record = simulate_with_extras(run_config, RecordExtras(**extras), threads)
    except Exception as exc:  # noqa: BLE001 - every failure is stored, the sweep goes on
        row = failed_row(key, run_config, varied, f"{type(exc).__name__}: {exc}")
    else:
        row = record_row(key, record, varied)
    return row | {"code": code_digest()}  # the worker's code: a remote cluster may run another version


@dataclass
class SweepSummary:
    total: int
    skipped: int
    done: int = 0
    failed: int = 0

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - self.done - self.failed


#: Where ``gupsim reproduce`` keeps its runs by default: their timings calibrate a sweep's estimate.
KEPT_RUNS_DIR = Path("results") / "runs"


def run_sweep(spec: SweepSpec, points: list[Point], store_path: Path, *, client=None,
              scheduler: str | None = None, workers: int | None = None, processes: bool = True,
              progress: bool = True, on_row: Callable[[dict[str, Any], Any], None] | None = None,
              threads: int = 1) -> SweepSummary:
    """Run the points not yet in the store, each on up to ``threads`` threads; write each as it finishes.  SIGINT and SIGTERM close the cluster
    quietly and raise :class:`gupsim.studies.cluster.Interrupted` (a ``KeyboardInterrupt``)."""
    store = ResultsStore(store_path)
    done = store.done_keys(code_digest())  # a row other model code made is run again
    todo = [p for p in points if p.key not in done]
    summary = SweepSummary(total=len(points), skipped=len(points) - len(todo))
    if not todo:
        store.compact()
        return summary
    estimates = estimate_points(todo, store, kept_rows(KEPT_RUNS_DIR))
    own_client, interrupted = client is None, False
    with interruptible():
        client = client or open_client(scheduler, workers, processes)
        try:
            if progress:
                _say_what_runs(spec, client, scheduler, store_path, summary, estimates)
            _run_points(spec, todo, [e.wall_s for e in estimates], store, client, summary, progress, on_row,
                        threads)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            if own_client:
                close_client(client, interrupted=interrupted)
            store.compact()
    return summary


def _say_what_runs(spec: SweepSpec, client: Any, scheduler: str | None, store_path: Path, summary: SweepSummary,
                   estimates: list[Any]) -> None:
    from tqdm import tqdm


    n_workers = len(client.scheduler_info().get("workers", {}))
    where = scheduler or f"a local cluster of {n_workers} workers"
    tqdm.write(f"{spec.name}: {summary.total} points, {summary.skipped} already in {store_path}, "
               f"running {summary.remaining} on {where}", file=sys.stderr)
    tqdm.write(f"{spec.name}: {describe(estimates, n_workers)}", file=sys.stderr)


def _run_points(spec: SweepSpec, todo: list[Point], costs: list[float], store: Any, client: Any,
                summary: SweepSummary, progress: bool, on_row: Callable[[dict[str, Any], Any], None] | None,
                threads: int = 1) -> None:
    """Submit every point and store each as it finishes.  The bar advances by each finished point's estimated
    cost, not by one: points differ in cost by orders of magnitude, and a bar of points extrapolates the
    cheap ones that finish first to the whole sweep."""
    from dask.distributed import as_completed
    from tqdm import tqdm


    bar = tqdm(total=sum(costs), disable=not progress, desc=spec.name, dynamic_ncols=True,
               bar_format="{desc}: {percentage:3.0f}% of the estimated work|{bar}| [{elapsed}<{remaining}{postfix}]")
    extras = spec.record.model_dump()
    by_future = {}
    try:
        for p, cost in zip(todo, costs):
            fut = client.submit(run_point, p.run, extras, p.key, p.varied, threads, key=f"gupsim-point-{p.key}",
                                pure=False)
            by_future[fut] = (p, cost)
        for fut in as_completed(list(by_future)):
            p, cost = by_future[fut]
            try:
                row = fut.result()
            except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker: the point failed, not the sweep
                row = failed_row(p.key, p.run, p.varied, f"{type(exc).__name__}: {exc}")
            row["sweep"] = spec.name
            store.write(row)
            if row["status"] == "ok":
                summary.done += 1
            else:
                summary.failed += 1
            bar.set_postfix(done=summary.done, failed=summary.failed, remaining=summary.remaining, refresh=False)
            bar.update(cost)
            if on_row is not None:
                on_row(row, client)
    finally:
        bar.close()
        for fut in by_future:
            fut.cancel()
