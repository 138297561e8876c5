"""The fast kernels' contract (gupsim.engines.fast.contract): what a kernel declares, checked as it registers."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

from gupsim.base.errors import GupsimError
from gupsim.engines.fast import one_packet
from gupsim.engines.fast.contract import (Kernel, KernelRegistry, Network, UnknownKernel, contract_problems,
                                          register_kernel)
from gupsim.engines.fast.engine import KERNELS, FastSimulation
from gupsim.engines.run import make_run_config
from tests.engines.fast.conftest import _config, _record, a_saved_checkpoint, kernel_machine


def _refusal(kernel: Kernel) -> str:
    with pytest.raises(GupsimError) as info:
        register_kernel(KernelRegistry(), kernel)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"fast kernel {kernel.name!r} does not meet the kernel contract")
    return message


def test_every_registered_kernel_meets_the_contract():
    assert sorted(KERNELS) == ["alltoall", "baseline", "one-packet", "routed", "routed-split"]
    for name, kernel in KERNELS.items():
        assert kernel.name == name and contract_problems(kernel) == []


@pytest.mark.parametrize("algorithm", sorted(KERNELS))
def test_prepare_gives_the_state_fields_and_the_engine_the_network_fields(algorithm):
    sim = FastSimulation(make_run_config(machine=kernel_machine(algorithm), shape="2x2x2", algorithm=algorithm,
                                         updates_per_process=16))
    assert tuple(sim._arrays()) == Network._fields
    assert tuple(sim._kernel_arrays()) == sim.kernel.state._fields


def test_a_kernel_missing_a_member_is_refused_naming_it():
    message = _refusal(dataclasses.replace(one_packet.KERNEL, ended=None, updates_left="not a function"))
    assert message.endswith("ended is missing; updates_left is missing")


def test_a_loop_that_is_not_compiled_or_takes_other_arguments_is_refused():
    assert _refusal(dataclasses.replace(one_packet.KERNEL, loop=one_packet._loop.py_func)).endswith(
        "loop is not a Numba-compiled function")
    assert _refusal(dataclasses.replace(one_packet.KERNEL, loop=one_packet._cpu)).endswith(
        "loop does not take (state, network, now)")


def test_a_state_that_is_not_a_named_tuple_or_reuses_a_network_field_is_refused():
    class Clashing(NamedTuple):
        rank_ints: np.ndarray
        packets: np.ndarray

    assert _refusal(dataclasses.replace(one_packet.KERNEL, state=dict)).endswith("state is not a NamedTuple class")
    assert _refusal(dataclasses.replace(one_packet.KERNEL, state=Clashing)).endswith(
        "state reuses the network's field(s) packets")


def test_tables_named_for_growing_must_be_in_the_state():
    message = _refusal(dataclasses.replace(one_packet.KERNEL, packet_arrays=("packet_updates",),
                                           grown_arrays=("messages",)))
    assert "packet_arrays names packet_updates, not in its state" in message
    assert "grown_arrays names messages, not in its state" in message
    assert message.endswith("grown_arrays without grow_tables")


def test_a_kernel_registered_twice_is_refused():
    registry = KernelRegistry()
    register_kernel(registry, one_packet.KERNEL)
    with pytest.raises(GupsimError, match="registered twice"):
        register_kernel(registry, one_packet.KERNEL)


def test_an_unknown_kernel_lists_the_registered_ones_in_one_line():
    with pytest.raises(UnknownKernel) as info:
        KERNELS["dv"]
    assert str(info.value) == "no fast kernel for algorithm 'dv' (fast kernels: alltoall, baseline, one-packet, routed, routed-split)"
    assert isinstance(info.value, GupsimError) and isinstance(info.value, KeyError)


def test_a_checkpoint_keeping_the_arrays_under_other_names_is_refused_in_one_line(tmp_path, monkeypatch):
    """A state saved under names this code does not use (the tables' short names, say) cannot be resumed."""
    config = _config("one-packet", updates=64)
    checkpoint = a_saved_checkpoint(tmp_path / "run.npz", "k", monkeypatch, config)
    with np.load(checkpoint.path) as z:
        arrays = {("pk" if k == "packets" else k): z[k] for k in z.files}
    np.savez(checkpoint.path, **arrays)
    with pytest.raises(GupsimError, match="does not hold this kernel's tables: delete it") as info:
        _record(config, checkpoint)
    assert "\n" not in str(info.value)
