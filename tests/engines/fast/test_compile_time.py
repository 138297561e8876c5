"""The fast engine's compile time is its own record field; ``wall_s`` and ``events_per_s`` are the run's."""

from __future__ import annotations

import io
from types import SimpleNamespace

from numba.core import event

from gupsim.engines import run as runner
from gupsim.config import load_machine
from gupsim.engines.fast import compiling
from gupsim.engines.run import make_run_config


def test_wall_time_leaves_out_the_kernels_compile_time(monkeypatch):
    """A first run on an empty Numba cache had counted its ~25 s of compiling as run time (wall_s 25.6 s
    against 1.2 s on the rerun).  A fake clock: the run takes 10 s, and a compile inside it 30 s."""
    import gupsim.engines.fast.engine as fast

    clock = [1000.0]
    monkeypatch.setattr(runner, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(event, "timer", lambda: clock[0])
    real = fast.simulate_fast
    told = []

    def simulate_fast(run, checkpoint=None, progress=None, parts=1):
        sim = real(run, checkpoint, progress, parts)  # the kernels are compiled or cached already: no time on the clock
        with event.trigger_event("numba:compiler_lock"), event.trigger_event("numba:compile"):
            clock[0] += 30.0
        clock[0] += 10.0
        return sim

    monkeypatch.setattr(fast, "simulate_fast", simulate_fast)  # the fast engine's run, timed by its simulate
    monkeypatch.setattr(compiling, "tell_terminal", lambda: told.append(compiling.NOTICE))
    _, record = runner.simulate(make_run_config(machine=load_machine("bgl"), shape="2x1x1", algorithm="routed",
                                                updates_per_process=16, engine="fast"))
    assert record["compile_s"] == 30.0
    assert record["wall_s"] == 10.0
    assert record["events_per_s"] == record["events"] / 10.0
    assert told == [compiling.NOTICE]


def test_the_notice_goes_to_a_terminal_only(monkeypatch):
    for tty, expected in ((True, f"gupsim: {compiling.NOTICE}\n"), (False, "")):
        err = io.StringIO()
        err.isatty = lambda tty=tty: tty
        monkeypatch.setattr("sys.stderr", err)
        compiling.tell_terminal()
        assert err.getvalue() == expected


def test_a_simpy_run_spends_nothing_compiling():
    _, record = runner.simulate(make_run_config(machine=load_machine("bgl"), shape="2x1x1", algorithm="baseline",
                                                updates_per_process=16, engine="simpy"))
    assert record["compile_s"] == 0.0


def test_a_real_compilation_is_announced_once_and_timed():
    from numba import njit

    @njit(cache=False)
    def add_one(x):
        return x + 1

    told = []
    with compiling.compile_time(lambda: told.append("compiling")) as spent:
        add_one(1)
        add_one(2)
    assert told == ["compiling"] and spent[0] > 0
    with compiling.compile_time(lambda: told.append("again")) as spent:
        add_one(3)  # compiled already: nothing to announce
    assert told == ["compiling"]


def test_a_package_function_compiles_once_whatever_integer_width_or_constant_it_is_called_with():
    """Numba had compiled ``core.flush_cpu`` six times, once per phase constant passed to it, and ``credits.give``
    three times (``int32`` from the packet table, ``int64`` elsewhere): 10 of a cold first run's 65 CPU seconds.
    A function of the fast engine's package now compiles for one signature, from any call site."""
    import numpy as np
    from numba import njit

    def step(x):
        return x + 1

    step.__module__ = compiling.PACKAGE + ".probe"  # as if defined in the package
    step = njit(cache=False)(step)

    @njit(cache=False)
    def calls(a32, b64):
        return step(a32) + step(b64) + step(3) + step(-1)

    assert calls(np.int32(1), 2) == 2 + 3 + 4 + 0
    assert [tuple(map(str, sig)) for sig in step.signatures] == [("int64",)]


def test_only_the_package_functions_are_widened():
    from numba.core import types

    assert compiling.widened(types.literal(7)) == types.int64
    assert compiling.widened(types.int32) == types.int64
    assert compiling.widened(types.uint32) == types.uint32  # unsigned: left as it is
    assert compiling.widened(types.literal(True)) == types.boolean
    assert compiling.widened(types.float32) == types.float32
