"""Helpers the fast engine's tests share: the bit-for-bit comparison of two engines' runs, and a small run's
record made batch by batch, from a checkpoint if one is given."""

from __future__ import annotations

import numpy as np
import pytest

from gupsim.app.reporting import MEASURED_KEYS, model_fields
from gupsim.base.errors import DeadlockError
from gupsim.config import load_machine
from gupsim.engines.fast import FastSimulation
from gupsim.engines.run import make_record, make_run_config
from gupsim.model.output_analysis import applied_marks

#: Differ by construction: the engines schedule different bookkeeping events and run at different speeds.
VOLATILE = MEASURED_KEYS | {"events", "engine", "config"}
#: Summed over ranks in a different order (float addition); the sums agree to rounding.
ROUNDED = {"alg_cpu_blocked_s"}  # compared to rel 1e-9: a long run sums ~1e5 terms (fuzz: 2e-12 apart)


def assert_records_agree(fast, ref):
    """The same metrics, each equal (NaN where the reference has NaN; the ROUNDED ones to 1e-9)."""
    assert set(fast) == set(ref)
    for key in sorted(set(ref) - VOLATILE):
        if key in ROUNDED:
            assert fast[key] == pytest.approx(ref[key], rel=1e-9), key
        elif isinstance(ref[key], float) and np.isnan(ref[key]):
            assert np.isnan(fast[key]), key
        else:
            assert fast[key] == ref[key], key


def assert_engines_agree(fast_sim, fast, ref_sim, ref):
    """Every reported metric exactly (NaN where the reference has NaN), every link counter, and the times at
    which the updates applied crossed each mark, bit for bit."""
    assert (fast["engine"], ref["engine"]) == ("fast", "simpy")
    assert_records_agree(fast, ref)
    fo, ro = fast_sim.outcome(), ref_sim.outcome()
    f, r = fo.links, ro.links
    for column in ("bytes", "busy_s", "blocked_s"):
        np.testing.assert_array_equal(f[column], r[column])
    # every packet is in, except for an algorithm whose last messages carry no update (alltoall's empty done
    # blocks): those may still be in flight when the last update is applied, on both engines alike
    assert (fo.packets_injected, fo.packets_delivered) == (ro.packets_injected, ro.packets_delivered)
    assert (fo.dma is None) == (ro.dma is None)
    if ro.dma is not None:  # BG/P's DMA engines: every node's busy seconds, and the throttle's back-offs
        for column in ("tx_busy_s", "rx_busy_s"):
            np.testing.assert_array_equal(fo.dma[column], ro.dma[column])
        keys = ("throttle_waits", "throttled_s", "throttle_polls", "throttle_queued")
        assert [fo.dma[k] for k in keys] == [ro.dma[k] for k in keys]
    assert len(fo.applied_times) == len(applied_marks(fo.total_updates)) == len(ro.applied_times)
    np.testing.assert_array_equal(np.array(fo.applied_times).view(np.int64), np.array(ro.applied_times).view(np.int64))


def assert_agree_or_deadlock_alike(run, updates):
    """``run(engine) -> (sim, record)`` on each engine: the records agree (:func:`assert_engines_agree`) and every
    update is applied; or, for a configuration whose buffers deadlock, both engines deadlock in the same line."""
    try:
        fast_sim, fast = run("fast")
    except DeadlockError as err:
        with pytest.raises(DeadlockError) as ref_err:
            run("simpy")
        assert str(ref_err.value) == str(err)
        return
    ref_sim, ref = run("simpy")
    assert fast["updates_applied"] == fast_sim.num_ranks * updates
    assert_engines_agree(fast_sim, fast, ref_sim, ref)


#: What a kernel's test runs need of the machine beyond its defaults: routed-split a worker and a router core.
KERNEL_SETS = {"routed-split": {"cpu.processes_per_node": 2}}


def kernel_machine(algorithm, name="bgl", sets=None):
    """Machine ``name`` with ``sets`` and whatever ``algorithm``'s kernel needs (:data:`KERNEL_SETS`)."""
    return load_machine(name, {**KERNEL_SETS.get(algorithm, {}), **(sets or {})})


def _config(algorithm, updates=200):
    machine = kernel_machine(algorithm, sets={"network.topology": "torus"})
    return make_run_config(machine=machine, shape="4x4x2", algorithm=algorithm, updates_per_process=updates,
                           engine="fast")


def _record(config, checkpoint=None, batch_events=None):
    sim = FastSimulation(config)
    sim.execute(checkpoint, batch_events)
    record = make_record(sim.outcome(), 0.0)
    return model_fields(record), sim


def a_saved_checkpoint(path, key, monkeypatch, config):
    """``config``'s run stopped right after its first checkpoint, which is left at ``path`` under ``key``."""
    from gupsim.engines.fast import driver
    from tests.conftest import Stopped, stop_after_saves

    checkpoint = driver.Checkpoint(path, key=key, every_s=0.0)
    stop_after_saves(monkeypatch, 1)
    with pytest.raises(Stopped):
        _record(config, checkpoint, batch_events=101)
    return checkpoint
