"""``upc``, a remote read-modify-write per update with a window in flight: conservation, HPCC's verification,
determinism, the packets of a read-modify-write, the window's and the latency's effect, and bad options."""

from __future__ import annotations

import pytest

from gupsim.base.errors import GupsimError
from gupsim.engines.run import make_run_config, simulate

from tests.conftest import call_cli

VOLATILE = ("wall_s", "events_per_s", "peak_rss_mb", "config")


def _run(shape="3x2x1", updates=200, machine="cray-x1", verify=False, seed=0, **options):
    return simulate(make_run_config(machine=machine, shape=shape, algorithm="upc", updates_per_process=updates,
                                    log2_table_size=18, verify=verify, seed=seed, algorithm_options=options))


@pytest.mark.parametrize("machine,shape,options", [
    ("cray-x1", "3x2x1", {"window": 4, "remote_latency_cycles": 500.0}),
    ("cray-x1", "2x1x1", {"window": 1}),
    ("bgl", "2x2x2", {"window": 16, "read_modify_write": False}),
    ("cray-t3e", "2x2x2", {"window": 32, "payload_bytes": 16}),
])
def test_every_update_is_applied_once_at_its_owner(machine, shape, options):
    """apply() refuses an update at a rank that does not own it, and XOR twice cancels, so HPCC's check finds
    an update applied twice as surely as one never applied."""
    sim, rec = _run(shape, 150, machine=machine, verify=True, **options)
    assert rec["updates_generated"] == rec["updates_applied"] == sim.total_updates
    assert sim.verify().errors == 0


def test_verify_passes_on_the_command_line(capsys):
    code, out, _ = call_cli(capsys, "run", "--machine", "cray-x1", "--shape", "2x1x1", "--algorithm", "upc",
                            "--option", "window=8", "--updates", "300", "--log2-table-size", "14", "--verify")
    assert code == 0 and "HPCC verification" in out and "passed" in out


def test_a_run_is_a_function_of_its_config_and_seed():
    a, b = (_run(window=8)[1] for _ in range(2))
    same = [repr({k: v for k, v in r.items() if k not in VOLATILE}) for r in (a, b)]  # repr: nan == nan
    assert same[0] == same[1]
    assert _run(window=8, seed=1)[1]["sim_time_s"] != a["sim_time_s"]


def test_a_remote_update_is_a_read_a_reply_and_a_write():
    sim, rec = _run(window=8)
    remote = rec["alg_remote_reads"]
    assert 0 < remote < rec["updates_generated"]  # some updates are local: no packet
    assert rec["alg_remote_writes"] == remote
    assert rec["alg_packets_sent"] == rec["packets_injected"] == 3 * remote
    _, posted = _run(window=8, read_modify_write=False)
    assert posted["alg_remote_reads"] == 0 and posted["alg_packets_sent"] == posted["alg_remote_writes"] == remote


def test_the_window_and_the_remote_latency_set_the_rate_by_littles_law():
    """With the remote latency far above everything else, a process completes about ``window`` references per
    latency: doubling the window doubles the rate, and the rate is near window / latency."""
    latency = 20_000.0
    rates = {w: _run("2x1x1", 400, window=w, remote_latency_cycles=latency)[1] for w in (2, 4)}
    assert rates[4]["gups"] / rates[2]["gups"] == pytest.approx(2.0, rel=0.1)
    clock = 800e6  # cray-x1
    per_process = rates[4]["gups"] * 1e9 / rates[4]["processes"]
    remote_share = rates[4]["alg_remote_reads"] / rates[4]["updates_generated"]
    assert per_process * remote_share == pytest.approx(4 / (latency / clock), rel=0.1)
    assert _run("2x1x1", 400, window=4)[1]["gups"] > 5 * rates[4]["gups"]


def test_bad_options_and_engines_are_one_line():
    for options, match in [({"window": 0}, "option window: Input should be greater than or equal to 1"),
                           ({"remote_latency_cycles": -1.0}, "option remote_latency_cycles: Input should be greater"),
                           ({"read_modify_write": "yes"}, "option read_modify_write: Input should be a valid boolean"),
                           ({"windows": 4}, "unknown option 'windows' \\(valid: window, remote_latency_cycles, "
                                            "read_modify_write, payload_bytes\\)")]:
        with pytest.raises(GupsimError, match=match):
            _run(**options)
    with pytest.raises(GupsimError, match="--engine fast: no fast kernel for algorithm 'upc'"):
        simulate(make_run_config(machine="cray-x1", shape="2x1x1", algorithm="upc", updates_per_process=64,
                                 engine="fast"))
