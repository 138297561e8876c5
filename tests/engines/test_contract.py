"""The engine contract (gupsim.engines.contract.Engine) and the registry that chooses between engines
(gupsim.engines.run.ENGINES): every engine states what the contract asks, an unknown name lists the registered ones,
and the choice, the refusals and the checkpoints go through the contract alone."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from gupsim.base.errors import GupsimError, UnknownNameError
from gupsim.config import load_machine
from gupsim.engines.contract import Engine, EngineRegistry
from gupsim.engines.run import ENGINES, make_run_config, memory_estimate


def _run(algorithm: str = "routed", **fields):
    return make_run_config(machine=fields.pop("machine", None) or load_machine("bgl"), shape="2x2x2",
                           algorithm=algorithm, updates_per_process=16, **fields)


@pytest.mark.parametrize("name", list(ENGINES))
def test_every_registered_engine_states_what_the_contract_asks(name):
    engine = ENGINES[name]
    assert engine.name == name and engine.title
    assert isinstance(engine.observes, bool) and isinstance(engine.checkpoints, bool)
    for method in ("unsupported", "memory_estimate", "simulate", "compile", "checkpoint", "saved_progress"):
        mine = inspect.signature(getattr(engine, method)).parameters
        assert list(mine) == list(inspect.signature(getattr(Engine, method)).parameters)[1:], (name, method)


def test_an_unknown_engine_lists_the_registered_ones():
    with pytest.raises(UnknownNameError, match=r"unknown engine 'partitioned'; valid choices: fast, simpy"):
        ENGINES["partitioned"]


def test_an_engine_is_registered_once():
    registry = EngineRegistry()
    registry.register(ENGINES["simpy"])
    with pytest.raises(GupsimError, match="registered twice"):
        registry.register(ENGINES["simpy"])


def test_auto_takes_the_first_engine_that_can_make_the_run_and_a_named_one_says_why_not():
    assert ENGINES.engine_for(_run()).name == "fast"
    assert ENGINES.engine_for(_run(verify=True)).name == "simpy"
    with pytest.raises(GupsimError, match=r"^--engine fast: verify keeps a real table, which only the SimPy engine "
                                          r"does; use --engine simpy or auto$"):
        ENGINES.engine_for(_run(verify=True, engine="fast"))


def test_a_run_with_an_observer_goes_to_an_engine_that_observes():
    assert ENGINES.engine_for(_run(), observed=True).name == "simpy"
    with pytest.raises(GupsimError, match="needs the SimPy engine: set the engine to simpy or auto$"):
        ENGINES.engine_for(_run(engine="fast"), observed=True)


def test_an_observed_run_no_observing_engine_can_make_is_one_line():
    """The reference makes every run, so only a registry without it reaches this: the line names each reason."""
    class Refusing:
        name, title, observes, checkpoints = "refusing", "Refusing", True, False

        def unsupported(self, run):
            return "it refuses everything"

    with pytest.raises(GupsimError, match=r"none can make this run \(refusing: it refuses everything\)$"):
        EngineRegistry((Refusing(),)).engine_for(_run(), observed=True)


def test_the_simpy_memory_refusal_offers_an_engine_that_can_make_the_run(monkeypatch):
    from gupsim.base import memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 2**20)
    with pytest.raises(GupsimError, match=r"\(or the fast engine: --engine fast, without telemetry\)$"):
        memory_estimate(_run(engine="simpy"), "simpy")
    # upc has no kernel: nothing to offer
    with pytest.raises(GupsimError, match=r"SimPy engine\)[^(]*$"):
        memory_estimate(_run("upc", engine="simpy"), "simpy")


def test_only_an_engine_that_keeps_checkpoints_makes_one(tmp_path):
    assert ENGINES["simpy"].checkpoint(tmp_path / "run.npz", "k") is None
    checkpoint = ENGINES["fast"].checkpoint(tmp_path / "run.npz", "k", every_s=5.0)
    assert (checkpoint.path, checkpoint.key, checkpoint.every_s) == (tmp_path / "run.npz", "k", 5.0)


def test_saved_progress_is_read_by_the_engine_that_kept_the_file(tmp_path):
    """A real checkpoint's counters (gupsim.engines.fast.driver saves the arrays under their field names); a
    file that is not one is None."""
    from gupsim.engines.fast import driver, tables

    ctr = np.zeros(tables.N_COUNTERS, dtype=np.int64)
    ctr[tables.C_APPLIED], ctr[tables.C_EVENTS] = 100, 1000
    path = tmp_path / "run.npz"
    driver.save(driver.Checkpoint(path, key="k"), {"counters": ctr, "queue": (np.zeros(2),)}, now=1.0,
                wall_s=5.0, peak_mb=1.0)
    assert tuple(ENGINES.saved_progress(path)) == (100, 1000, 5.0)
    (tmp_path / "other.npz").write_bytes(b"not a checkpoint")
    assert ENGINES.saved_progress(tmp_path / "other.npz") is None
