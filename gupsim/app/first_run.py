"""What makes ``gupsim run`` with no options an answer: a precision to run to, and an estimate before a long run.

**To a precision by default.**  A fixed 4,096 updates a process gave the README's first command a rate with
no valid interval ("precision: insufficient ... treat the rate as indicative"), though the rate matched the
published one: a reader was told first that the first number was not to be trusted.  ``gupsim run`` now runs
until the GUPS 95% interval is within :data:`RUN_PRECISION` of the rate (the engines' stopping rule,
:func:`gupsim.model.output_analysis.precise`), ``--updates`` being the cap; ``--fixed-length`` (or
``--verify``, which needs every update applied) runs them all.

**An estimate before a long run.**  A run the cost model (:mod:`gupsim.studies.estimate`) expects to take more
than :data:`SAY_ESTIMATE_FROM_S`, compiling included, is announced on stderr with its estimate, so that the
whole machine at 256 updates a process is not a silent wait of many minutes.  Compiling is counted as the
engine that will make the run expects it (the contract's ``compile_estimate_s``: the fast engine's measured
cold compile of that algorithm's kernels while its cache is empty).
"""

from __future__ import annotations

import sys
from typing import Any

from gupsim.base.errors import GupsimError
from gupsim.engines.run import ENGINES, choose_engine, preflight
from gupsim.studies.estimate import config_run_s

#: ``gupsim run``'s default precision: the GUPS 95% interval's half-width, as a fraction of the rate.
RUN_PRECISION = 0.02
#: Runs expected to last longer than this (wall seconds, compiling included) are announced with their estimate.
SAY_ESTIMATE_FROM_S = 60.0


def estimate_s(cfg: Any) -> tuple[float, float]:
    """(run, compile) wall seconds expected of ``cfg`` at its cap; compile is 0 on SimPy or a warm cache."""
    engine = choose_engine(cfg)
    run_s = config_run_s(engine, cfg)
    compile_s = ENGINES[engine].compile_estimate_s(cfg)
    return run_s, compile_s


def estimate_line(cfg: Any) -> str | None:
    """The line announcing a run expected to last over :data:`SAY_ESTIMATE_FROM_S`, or None (also for a run
    that cannot start: its own checks, in their order, say why)."""
    try:
        run_s, compile_s = estimate_s(cfg)
    except GupsimError:
        return None
    if run_s + compile_s <= SAY_ESTIMATE_FROM_S:
        return None
    capped = " at most (at its cap of updates; --precision may stop it sooner)" if cfg.precision is not None else ""
    compiling = f", of which about {compile_s:.0f} s compiling the fast engine's kernels" if compile_s else ""
    return (f"gupsim: this run is expected to take about {_duration(run_s + compile_s)}{capped}{compiling} "
            f"(on an idle box, by a cost model within about 2x either way: benchmarks/estimate_error.py){_faster(cfg, run_s)}")


def _faster(cfg: Any, run_s: float) -> str:
    """Where an engine other than the chosen one could make the run sooner, its estimate (a long run on the slower engine
    would otherwise say nothing for minutes)."""
    chosen = choose_engine(cfg)
    for name, engine in ENGINES.items():
        if name == chosen or engine.unsupported(cfg) is not None:
            continue
        other_s = config_run_s(name, cfg)
        if other_s < run_s:
            return f"; the {engine.title} engine (--engine {name}) would take about {_duration(other_s)}"
    return ""


def say_estimate(cfg: Any, telemetry: Any = ()) -> None:
    """Print :func:`estimate_line` on stderr for a run that will start: one that fails its checks is refused
    first (its one line alone), which for a long run costs nothing beside it."""
    line = estimate_line(cfg)
    if line:
        preflight(cfg, telemetry)
        print(line, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 7200 \
        else f"{seconds / 3600:.1f} h"
