"""Shared fixtures and helpers: the fast engine's kernels compiled once, the BG/L machine, the published
reference tables, the command line called in this process, and a fast run stopped after a checkpoint is
saved (as a killed process would be)."""

from __future__ import annotations


import os
import time

import pandas as pd
import pytest
from hypothesis import settings

from gupsim.app.cli import main
from gupsim.config import load_machine
from gupsim.engines.fast import driver
from gupsim.engines.fast.engine import KERNELS, simulate_fast
from gupsim.engines.run import compile_all, make_run_config
from gupsim.studies.validation import reference_table

# Two xdist workers share the CI's two cores: each test's runs take one thread unless a test asks for more
# (gupsim.base.cores.default_threads).
os.environ.setdefault("GUPSIM_THREADS", "1")

# No wall-clock deadline on any property test: speed lives in benchmarks/, and on a loaded 2-core box a
# deadline fails a property test for the machine's load, not for the code.
settings.register_profile("gupsim", deadline=None)
settings.load_profile("gupsim")

#: Where the session keeps the seconds the kernels took to compile (or load from Numba's cache).
COMPILE_SECONDS = pytest.StashKey[float]()


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels(request):
    """Compile every fast-engine kernel once, before the first test: a cold compile takes minutes on a 2-core
    box, and would otherwise be charged to whichever test first runs the fast engine.  The seconds are
    reported at the end of the session; with Numba's cache warm they are a few.

    Under pytest-xdist each worker is a process of its own and needs every kernel, but Numba's cache is on
    disk: worker ``i`` of ``n`` starts at the ``i``-th ``n``-th of the list, so the workers compile different
    kernels at once and then load the others' from the cache instead of compiling them again."""
    t0 = time.perf_counter()
    jobs = _kernel_runs()
    start = len(jobs) * _worker_index() // _worker_count()
    for algorithm, precision in jobs[start:] + jobs[:start]:
        simulate_fast(make_run_config(machine=load_machine("bgl", {"cpu.processes_per_node": 2}), shape="2x2x1",
                                      algorithm=algorithm, updates_per_process=64, precision=precision))
    compile_all()  # every registered engine's own compile step: the fast kernels are in this process by now
    request.config.stash[COMPILE_SECONDS] = time.perf_counter() - t0
    if hasattr(request.config, "workeroutput"):  # an xdist worker: the controller prints the slowest's
        request.config.workeroutput["compile_s"] = request.config.stash[COMPILE_SECONDS]


def _kernel_runs() -> list:
    """(algorithm, precision) of a small run per compiled variant: ``gupsim run`` stops at 2% by default, and
    Numba compiles a run with a float precision apart from one with None (another argument type); compiled
    here, no test's stderr gets the compile notice."""
    return [(name, precision) for name in KERNELS for precision in (None, 0.02)]


def _worker_index() -> int:
    return int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))


def _worker_count() -> int:
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


#: The test files that take longest (minutes on a 2-core box), longest first, as measured with --durations.
#: ``--dist loadfile`` hands a worker one whole file at a time; xdist would order the files by their number of
#: tests, which sends these few-test, long files last, and one worker then runs the last of them while the other
#: sits idle.  Started first, the long files share out between the workers and the many short files even out
#: the end (longest-first scheduling).  A file renamed or gone just loses its place: nothing fails.
LONGEST_FILES = (
    "tests/studies/test_sweep_plan.py",
    "tests/studies/test_reproduce.py",
    "tests/test_notebooks.py",
    "tests/studies/test_headline.py",  # its property test draws its runs: from 15 s to minutes
    "tests/studies/test_sweep.py",
    "tests/studies/test_crayx1_hpcc.py",
    "tests/engines/fast/test_fast_memory.py",
    "tests/studies/test_runpool.py",
    "tests/engines/fast/test_fast_precision.py",
    "tests/engines/test_precision_coverage.py",
    "tests/engines/fast/test_kept_state_faults.py",
    "tests/data/test_package_data.py",
    "tests/engines/fast/test_fast_checkpoint.py",
    "tests/app/test_entry.py",
)


def pytest_collection_modifyitems(config, items):
    """The longest files first (:data:`LONGEST_FILES`), then the others by their number of tests, as xdist
    orders them (``--no-loadscope-reorder`` in pyproject's addopts makes it keep this order)."""
    files = [item.nodeid.split("::")[0] for item in items]
    tests_in = {f: files.count(f) for f in set(files)}
    rank = {f: i for i, f in enumerate(LONGEST_FILES)}
    order = sorted(range(len(items)), key=lambda i: (rank.get(files[i], len(rank)), -tests_in[files[i]], files[i], i))
    items[:] = [items[i] for i in order]


def pytest_testnodedown(node, error):
    """An xdist worker's compile seconds, kept by the controller (the longest worker's is the session's)."""
    seconds = getattr(node, "workeroutput", {}).get("compile_s")
    if seconds is not None:
        node.config.stash[COMPILE_SECONDS] = max(seconds, node.config.stash.get(COMPILE_SECONDS, 0.0))


def pytest_terminal_summary(terminalreporter, config):
    seconds = config.stash.get(COMPILE_SECONDS, None)
    if seconds is not None:
        terminalreporter.write_line(f"fast-engine kernels compiled (or loaded from Numba's cache) once for the "
                                    f"session, before the first test: {seconds:.1f} s")


@pytest.fixture(scope="session")
def bgl():
    return load_machine("bgl")


def reference(name: str) -> pd.DataFrame:
    """A published table, from the project's own copy (gupsim/data/reference; tests/data/test_package_data.py
    checks it against ../shared/reference when that folder is there)."""
    return reference_table(name)


def call_cli(capsys, *argv):
    """``gupsim *argv`` in this process: its exit status, stdout and stderr."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


class Stopped(Exception):
    """Stands for the process being killed after a save."""


def stop_after_saves(monkeypatch, n):
    """Make ``driver.save`` stop the run (raise :class:`Stopped`, as a killed process would) right after its
    ``n``-th save, and save normally again from then on; return the simulated times saved."""
    saves, real_save = [], driver.save

    def save_then_stop(*args):
        real_save(*args)
        saves.append(args[2])
        if len(saves) == n:
            monkeypatch.setattr(driver, "save", real_save)
            raise Stopped

    monkeypatch.setattr(driver, "save", save_then_stop)
    return saves


def count_loads(monkeypatch):
    """Count the checkpoints ``driver.load`` reads from now on (a resumed run reads one)."""
    loaded, real_load = [], driver.load
    monkeypatch.setattr(driver, "load", lambda *a: loaded.append(1) or real_load(*a))
    return loaded


@pytest.fixture()
def figures(monkeypatch):
    """The figures the plot functions draw, kept instead of written."""
    from gupsim.app import plots

    kept = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, out_dir, stem, **_: kept.append(fig) or [])
    yield kept
    import matplotlib.pyplot as plt

    for fig in kept:
        plt.close(fig)
