"""The partitioned fast engine (gupsim.engines.fast.partitioned): the serial engine's record, bit for bit, at 1, 2
and 3 parts (3 is more threads than the 2-core CI box has, on purpose), and its refusals."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gupsim.app.reporting import MEASURED_KEYS, model_fields
from gupsim.base.errors import GupsimError
from gupsim.engines.fast import FastSimulation, core as c, partitioned, tables as tb, windows
from gupsim.engines.run import make_record, make_run_config
from tests.engines.fast.conftest import kernel_machine

TORUS = {"network.topology": "torus"}
SLOW = {"network.link_bytes_per_s": 2e7}  # links that fill, so that credits and waits cross the cut
CASES = [
    # (shape, updates per process, machine overrides, precision); the CI runs the cases not marked slow
    pytest.param("8x4x4", 300, TORUS, None, marks=pytest.mark.slow),
    pytest.param("6x4x2", 400, {**TORUS, **SLOW, "network.fifos": "per-dimension"}, None, marks=pytest.mark.slow),
    pytest.param("6x4x4", 300, {**TORUS, **SLOW, "network.buffer_order": "fifo", "network.routing": "adaptive"},
                 None, marks=pytest.mark.slow),
    ("8x2x2", 300, {**SLOW, "cpu.processes_per_node": 2}, None),  # a mesh, virtual-node mode
    pytest.param("8x4x4", 3000, TORUS, 0.05, marks=pytest.mark.slow),  # the stopping rule ends it
    # Blue Gene/L's VC router: two escape VCs, adaptive, tokens back 200 ns after the tail (issue 44)
    ("6x4x4", 300, {**TORUS, **SLOW, "network.router.name": "bgl-vc", "network.routing": "adaptive",
                    "network.router.escape_vcs": 2, "network.router.token_return_ns": 200.0}, None),
]


def _run(shape, updates, sets, precision, parts, machine="bgl"):
    config = make_run_config(machine=kernel_machine("routed", machine, sets=sets), shape=shape, algorithm="routed",
                             updates_per_process=updates, engine="fast", precision=precision)
    sim = FastSimulation(config)
    sim.execute(parts=parts)
    return sim, model_fields(make_record(sim.outcome(), 0.0))


def assert_same_run(a_sim, a, b_sim, b):
    """Every field of the record (wall times apart), every link counter and every mark's time, bit for bit."""
    assert set(a) == set(b)
    for key in sorted(set(a) - MEASURED_KEYS):
        if isinstance(a[key], float) and np.isnan(a[key]):
            assert np.isnan(b[key]), key
        else:
            assert a[key] == b[key], key
    ao, bo = a_sim.outcome(), b_sim.outcome()
    for column in ("bytes", "busy_s", "blocked_s"):
        np.testing.assert_array_equal(ao.links[column], bo.links[column])
    np.testing.assert_array_equal(np.array(ao.applied_times).view(np.int64), np.array(bo.applied_times).view(np.int64))
    assert ao.events == bo.events and ao.totals == bo.totals and ao.window_counters == bo.window_counters


@pytest.mark.parametrize("shape,updates,sets,precision", CASES)
def test_parts_give_the_serial_record(shape, updates, sets, precision):
    _check_parts(shape, updates, sets, precision)


def _check_parts(shape, updates, sets, precision, machine="bgl"):
    serial_sim, serial = _run(shape, updates, sets, precision, 1, machine)
    for parts in (2, 3):
        sim, record = _run(shape, updates, sets, precision, parts, machine)
        assert sim.parts_used == parts
        stats = sim.window_stats
        assert stats.parallel_windows > stats.serial_windows > 0  # most of the run in parts, the marks serial
        assert_same_run(serial_sim, serial, sim, record)
    return serial


@pytest.mark.parametrize("shape,updates,sets", [
    # virtual-node mode on slow links: packets held back at their first link, in every part
    ("6x4x2", 200, {"cpu.processes_per_node": 4, "network.link_bytes_per_s": 4e7}),
    pytest.param("6x4x4", 300, {"cpu.processes_per_node": 2}, marks=pytest.mark.slow),
])
def test_bgp_dma_runs_in_parts_with_the_serial_record(shape, updates, sets):
    """BG/P's DMA engines and throttle in parts: the held-back seconds are kept per link, summed exactly."""
    serial = _check_parts(shape, updates, sets, None, machine="bgp")
    assert serial["throttle_waits"] > 0 and serial["throttled_s"] > 0  # the throttle was exercised


def test_a_window_that_passes_an_ordered_point_reruns_serially(monkeypatch):
    """With no margin, a parallel window passes the window's first mark: the run is made again on one thread,
    and its record is the serial one."""
    monkeypatch.setattr(windows, "MARGIN_WINDOWS", 0)
    monkeypatch.setattr(windows, "MARGIN_PER_RANK", 0)
    serial_sim, serial = _run("8x4x4", 300, TORUS, None, 1)
    sim, record = _run("8x4x4", 300, TORUS, None, 2)
    assert sim.parts_used == 1
    assert_same_run(serial_sim, serial, sim, record)


def test_lookahead_is_the_shortest_cross_node_delay():
    """BG/L: a 1-chunk packet's 44 wire bytes at 175 MB/s (251.4 ns), below a chunk plus the router delay."""
    config = make_run_config(machine=kernel_machine("routed"), shape="4x4x4", algorithm="routed",
                             updates_per_process=64, engine="fast")
    sim = FastSimulation(config)
    net = sim.net_cfg
    a = sim._arrays()
    fp = a["float_params"]
    window = partitioned.lookahead_s(fp, net.chunk_bytes + net.wire_overhead_bytes)
    assert window == pytest.approx((net.chunk_bytes + net.wire_overhead_bytes) / net.link_bytes_per_s)
    assert window < fp[2] + fp[1]  # router delay + a chunk: the hop is not the shortest


@pytest.mark.parametrize("machine,algorithm,shape,words", [
    ("bgl", "baseline", "16x8x8", "runs on one thread only"),
    ("bgl", "routed", "16x8x8", None),
    ("bgp", "routed", "16x8x8", None),
])
def test_runs_without_parts_are_refused_in_one_line(machine, algorithm, shape, words):
    config = make_run_config(machine=kernel_machine(algorithm, machine), shape=shape, algorithm=algorithm,
                             updates_per_process=64, engine="fast")
    sim = FastSimulation(config)
    if words is None:
        assert sim.serial_only(2) is None
        return
    with pytest.raises(GupsimError, match=words) as err:
        sim.execute(parts=2)
    assert "\n" not in str(err.value)


def test_the_engine_gives_a_small_torus_one_thread():
    """Below PART_MIN_NODES the engine runs on one thread and says why (gupsim run --threads 2 refuses it)."""
    from gupsim.engines.fast.engine import ENGINE, PART_MIN_NODES

    small = make_run_config(machine=kernel_machine("routed"), shape="8x8x8", algorithm="routed",
                            updates_per_process=64, engine="fast")
    assert 8 * 8 * 8 < PART_MIN_NODES
    used, why = ENGINE.threads_for(small, 2)
    assert used == 1 and "fewer than 1,024 nodes" in why
    large = small.model_copy(update={"shape": "16x8x8"})
    assert ENGINE.threads_for(large, 2) == (2, None)


def test_more_parts_than_planes_is_refused():
    with pytest.raises(GupsimError, match="only 4 planes"):
        partitioned.slabs(np.zeros((64, 3), dtype=np.int64), (4, 4, 4), 5)


@pytest.mark.parametrize("resumed_parts", [2, pytest.param(1, marks=pytest.mark.slow)])
def test_a_partitioned_run_resumes_from_its_checkpoint(tmp_path, monkeypatch, resumed_parts):
    """Stopped after its third save, the run resumes from the file (in parts, or serially: the file is the
    serial engine's state) and gives the uninterrupted serial record."""
    from gupsim.engines.fast import driver
    from tests.conftest import Stopped, stop_after_saves

    config = make_run_config(machine=kernel_machine("routed", sets=TORUS), shape="8x4x4", algorithm="routed",
                             updates_per_process=300, engine="fast")
    serial_sim, serial = _run("8x4x4", 300, TORUS, None, 1)
    checkpoint = driver.Checkpoint(tmp_path / "run.npz", key="k", every_s=0.0)
    saves = stop_after_saves(monkeypatch, 3)
    with pytest.raises(Stopped):
        FastSimulation(config).execute(checkpoint, parts=2)
    assert len(saves) == 3 and checkpoint.path.exists()
    sim = FastSimulation(config)
    sim.execute(driver.Checkpoint(checkpoint.path, key="k"), parts=resumed_parts)  # saved every 10 min: not again
    assert not checkpoint.path.exists()
    assert_same_run(serial_sim, serial, sim, model_fields(make_record(sim.outcome(), 0.0)))



def _free_rows(pk, ctr):
    """The rows on the free list of counters ``ctr``."""
    rows, p = [], int(ctr[tb.C_FREE_HEAD])
    while p != -1:
        rows.append(p)
        p = int(pk[p, tb.PK_NEXT])
    assert len(rows) == ctr[tb.C_NFREE]
    return rows


@pytest.mark.parametrize("short_free,rich_free,moved", [
    (10, 5 * tb.PACKET_MARGIN, (5 * tb.PACKET_MARGIN - 10) // 2),  # half the difference: both end even
    (10, 4 * tb.PACKET_MARGIN - 100, 0),  # too little to leave both two margins: the tables grow instead
])
def test_a_part_short_of_packet_rows_takes_half_the_richest_part_s_surplus(monkeypatch, short_free, rich_free, moved):
    """A packet's row returns to the part that delivers it, so rows drift between parts; growing the shared tables
    whenever one part ran short doubled them once more than a serial run (2-thread peak RSS 1.2x the serial's)."""
    pk = np.zeros((short_free + rich_free + 7, tb.PK_COLS), dtype=np.int32)
    parts = []
    for first, last in ((0, short_free), (short_free, short_free + rich_free), (short_free + rich_free, len(pk))):
        ctr = np.zeros(tb.N_COUNTERS, dtype=np.int64)
        ctr[tb.C_FREE_HEAD] = -1
        c.link_free_list(pk, first, last, ctr)
        parts.append(SimpleNamespace(counters=ctr))
    grown = []
    monkeypatch.setattr(windows.driver, "grow_packets", lambda kernel, a, ctr: grown.append(ctr))
    windows._refill(None, {"packets": pk}, parts[0], parts)
    assert parts[0].counters[tb.C_NFREE] == short_free + moved
    assert parts[1].counters[tb.C_NFREE] == rich_free - moved
    assert grown == ([] if moved else [parts[0].counters])
    rows = [_free_rows(pk, part.counters) for part in parts]
    assert sorted(sum(rows, [])) == list(range(len(pk)))  # no row lost or on two lists
