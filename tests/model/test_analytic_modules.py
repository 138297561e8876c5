"""Behaviour of the analytic modules that the rest of the suite left unpinned (found by mutation testing).

Every check here comes from first principles or an independent re-derivation (a brute-force bucketing
simulator, a per-access DRAM recursion, eq. (1) written out), never from the published tables.
"""

from __future__ import annotations

import bisect
import json
import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gupsim.model import hpcc
from gupsim.base import memory
from gupsim.model.bounds import bounds, fit_packet_overhead
from gupsim.model.bucketing import MAX_PENDING, mean_bucket_size
from gupsim.model.cpu_cache import hit_fraction
from gupsim.config import load_machine
from gupsim.model.dram import ProcessorMemory, fit_outstanding_misses, update_rate
from gupsim.base.errors import GupsimError
from gupsim.config.switched import MemoryConfig
from gupsim.model.costs import CostModel
from gupsim.app.reporting import SUMMARY_ROWS, format_record, to_json
from gupsim.model.run_config import stream_start
from gupsim.topology import Mesh3D, Torus3D, make_topology


# ----------------------------------------------------------------------------- topology


@pytest.mark.parametrize("kind", ["torus", "mesh"])
def test_out_of_range_ports_and_nodes_are_value_errors(kind):
    topo = make_topology(kind, "3x2x2")
    for port in (-1, topo.ports, topo.ports + 1):
        with pytest.raises(ValueError):
            topo.neighbor(0, port)
    # A negative node id must not wrap around to the end of the table (Python indexing would).
    for node in (-1, -topo.num_nodes, topo.num_nodes):
        with pytest.raises(ValueError):
            topo.coords(node)
        with pytest.raises(ValueError):
            topo.neighbor(node, 0)
        with pytest.raises(ValueError):
            topo.hops(node, 0)


def test_a_torus_and_a_mesh_of_one_shape_are_different_topologies():
    torus, mesh = Torus3D((2, 2, 2)), Mesh3D((2, 2, 2))
    assert torus != mesh and mesh != torus
    assert len({torus, mesh}) == 2
    assert torus == make_topology("torus", "2x2x2") and hash(torus) == hash(make_topology("torus", "2x2x2"))


# ----------------------------------------------------------------------------- bounds


def _eq1_gups(n, clock_hz, t_local, t_send, t_recv, t_overhead):
    """Seed 000 eq. (1), written out independently of gupsim.model.bounds."""
    return n * clock_hz / (t_local + (n - 1) / n * (t_send + t_recv + t_overhead)) / 1e9


@pytest.mark.parametrize("ppn", [1, 2, 4])
def test_processes_per_node_scale_eq1_but_not_eq2(ppn):
    m = load_machine("bgl", {"cpu.processes_per_node": ppn})
    b = bounds(m, "4x4x4")  # 64 nodes: a mesh on BG/L
    chunk = m.network.chunk_bytes
    n = 64 * ppn
    assert (b.nodes, b.processes) == (64, n)
    assert b.cpu_bound_gups == pytest.approx(
        _eq1_gups(n, m.cpu.clock_hz, m.cpu.generate_cycles + m.cpu.update_cycles, m.costs.send(chunk),
                  m.costs.recv(chunk), m.cpu.packet_overhead_cycles), rel=1e-12)
    # Eq. (2) is about links, which belong to nodes: 4x4x4 mesh, the middle plane cut crosses 16 links
    # for 32 nodes, alpha = 1/2 whatever the processes per node.
    wire = chunk + m.network.packet_header_bytes + m.network.packet_trailer_bytes
    assert b.network_bound_gups == pytest.approx(
        2 * 64 / wire * float(Fraction(16, 32)) * m.network.link_bytes_per_s / 1e9, rel=1e-12)


def test_send_and_receive_costs_are_reported_in_their_own_fields(bgl):
    b = bounds(bgl, "8x8x8")
    chunk = bgl.network.chunk_bytes
    assert bgl.costs.send(chunk) != bgl.costs.recv(chunk)  # else the check below could not tell them apart
    assert (b.t_send_cycles, b.t_recv_cycles) == (bgl.costs.send(chunk), bgl.costs.recv(chunk))
    assert b.t_local_cycles == bgl.cpu.generate_cycles + bgl.cpu.update_cycles


@pytest.mark.parametrize("b_wire", [1, 8, 44, 1000])
def test_bottleneck_names_the_lower_of_the_reported_bounds(bgl, b_wire):
    b = bounds(bgl, "64x32x32", bytes_per_update=b_wire)
    assert b.bottleneck == ("network" if b.network_bound_gups < b.cpu_bound_gups else "cpu")
    assert b.as_dict()["bottleneck"] == b.bottleneck
    if b_wire == 1:  # one byte per update lifts eq. (2) far above eq. (1), whatever the paper's b gives
        assert b.network_bound_gups > b.cpu_bound_gups > b.network_bound_gups_paper
        assert b.bottleneck == "cpu"


def test_fit_packet_overhead_inverts_eq1_at_small_machine_sizes(bgl):
    chunk = bgl.network.chunk_bytes
    args = (bgl.cpu.clock_hz, bgl.cpu.generate_cycles + bgl.cpu.update_cycles, bgl.costs.send(chunk),
            bgl.costs.recv(chunk))
    for t_o in (0.0, 7.25, 300.0):
        rows = [(n, _eq1_gups(n, *args, t_o)) for n in (2, 3, 16, 1000)]
        assert fit_packet_overhead(bgl, rows) == pytest.approx(t_o, abs=1e-6)
        assert fit_packet_overhead(bgl, rows[:1]) == pytest.approx(t_o, abs=1e-6)


# ----------------------------------------------------------------------------- hpcc


def test_stream_refuses_zero_lanes_in_one_line():
    with pytest.raises(GupsimError, match="lanes must be >= 1"):
        hpcc.stream(0, 10, lanes=0)


# ----------------------------------------------------------------------------- bucketing


def _brute_mean_bucket_size(num_procs, updates, rank):
    """seed 000 §4.1's rule, re-simulated with plain counters, from the full simulation's stream position."""
    log2_words = 25
    layout = hpcc.TableLayout(num_procs.bit_length() - 1 + log2_words, num_procs)
    starts = [layout.global_start(p) for p in range(num_procs)]
    # The stretch the simulation gives this rank (seed 0): the start of the rank's own slice of the stream.
    ran = hpcc.starts(stream_start(SimpleNamespace(updates_per_process=1, seed=0), layout, rank))
    counts: dict[int, int] = {}
    pending, sizes, sent, warm = 0, [], 0, True
    while True:
        ran = hpcc.next_ran(ran)
        dest = bisect.bisect_right(starts, ran & (layout.table_size - 1)) - 1
        if dest == rank:
            continue  # local updates are applied at once, never bucketed
        counts[dest] = counts.get(dest, 0) + 1
        pending += 1
        if pending == MAX_PENDING:
            largest = max(counts, key=lambda d: (counts[d], -d))  # ties: lowest destination
            size = counts.pop(largest)
            pending -= size
            if warm:  # the first message ends the warm-up and is not counted
                warm = False
                continue
            sizes.append(size)
            sent += size
            if sent >= updates:
                return sum(sizes) / len(sizes)


@pytest.mark.parametrize(("procs", "updates", "rank"), [(4, 2048, 0), (8, 4096, 5), (32, 3000, 1)])
def test_mean_bucket_size_is_the_bucketing_rule_on_the_simulations_stream(procs, updates, rank):
    assert mean_bucket_size(procs, updates=updates, rank=rank) == pytest.approx(
        _brute_mean_bucket_size(procs, updates, rank), rel=1e-12)


# ----------------------------------------------------------------------------- node


@pytest.mark.parametrize("share", [0.0, 0.25, 0.8])
def test_mpi_cost_is_split_between_sender_and_receiver_by_send_share(share):
    cm = CostModel.from_machine(load_machine("bgl", {"mpi.send_share": share}))
    for nbytes in (8, 100, 1024):
        latency = cm.mpi_latency(nbytes)
        assert cm.mpi_send(nbytes) == pytest.approx(share * latency, abs=1e-9)
        assert cm.mpi_recv(nbytes) == pytest.approx((1 - share) * latency, abs=1e-9)


# ----------------------------------------------------------------------------- memory


def test_estimate_counts_every_documented_part():
    assert memory.estimate_bytes(1000, 5000) == memory.BASE_BYTES + memory.ROUTE_CACHE_BYTES + 1000 * 5000
    assert memory.estimate_bytes(1000, 5000, base_bytes=123) == 123 + 1000 * 5000


def test_check_fits_keeps_the_headroom(monkeypatch):
    need = memory.estimate_bytes(1000, 10_000)
    # need is 95% of what is available: fits physically, but not within the headroom
    monkeypatch.setattr(memory, "available_bytes", lambda: int(need / ((1 + memory.HEADROOM) / 2)))
    with pytest.raises(GupsimError, match="GB are available"):
        memory.check_fits(1000, 10_000, "run")
    monkeypatch.setattr(memory, "available_bytes", lambda: int(need / (0.99 * memory.HEADROOM)))
    assert memory.check_fits(1000, 10_000, "run") == need
    monkeypatch.setattr(memory, "available_bytes", lambda: None)  # the system does not say: accept
    assert memory.check_fits(1000, 10_000, "run") == need


# ----------------------------------------------------------------------------- cache


def test_data_reused_at_once_is_still_cached():
    assert hit_fraction(32768, 0.0) == 1.0
    assert hit_fraction(32768, 1e-9) == pytest.approx(1.0)  # the limit as the reuse distance shrinks


# ----------------------------------------------------------------------------- dram


def _brute_batches(mem, threads, clock_hz, issue_cycles, batches):
    """One access at a time: each begins at least a fill-slot gap and one issue slot after the previous."""
    latency = mem.dram_latency_ns * 1e-9
    in_flight = min(threads * mem.line_fill_buffers_per_core, mem.outstanding_misses_per_processor)
    gap = latency / in_flight  # Little's law: in_flight slots, each held for one latency
    issue = issue_cycles / clock_hz / threads  # the threads issue side by side
    free_at, out = 0.0, []
    for start, count in batches:
        if count <= 0:
            out.append((start, start))
            continue
        begin = max(start, free_at)
        for _ in range(count - 1):
            begin += max(gap, issue)
        free_at = begin + gap
        out.append((begin + issue, begin + latency))
    return out


@settings(max_examples=150)
@given(
    threads=st.integers(1, 8), lfb=st.integers(1, 12), cap=st.floats(0.5, 80), latency_ns=st.floats(10, 200),
    clock_hz=st.floats(1e9, 4e9), issue_cycles=st.floats(0.5, 400),
    batches=st.lists(st.tuples(st.floats(0, 3), st.integers(0, 40)), min_size=1, max_size=8),
)
def test_processor_memory_batches_match_a_per_access_recursion(threads, lfb, cap, latency_ns, clock_hz,
                                                               issue_cycles, batches):
    mem = MemoryConfig(dram_latency_ns=latency_ns, line_fill_buffers_per_core=lfb,
                       outstanding_misses_per_processor=cap)
    # starts advance by up to three latencies, so a batch often arrives while the previous one is in flight
    t, timeline = 0.0, []
    for step, count in batches:
        t += step * latency_ns * 1e-9
        timeline.append((t, count))
    pm = ProcessorMemory(mem, threads, clock_hz, issue_cycles)
    got = [pm.batch(start, count) for start, count in timeline]
    want = _brute_batches(mem, threads, clock_hz, issue_cycles, timeline)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, rel=1e-9, abs=1e-18)
    assert pm.accesses == sum(max(0, c) for _, c in timeline)


@pytest.mark.parametrize(("threads", "issue_cycles"), [(1, 10.0), (4, 10.0), (4, 2000.0), (8, 600.0)])
def test_a_long_batch_runs_at_exactly_the_analytic_rate(threads, issue_cycles):
    mem = MemoryConfig(dram_latency_ns=80.0, line_fill_buffers_per_core=10, outstanding_misses_per_processor=25.0)
    pm = ProcessorMemory(mem, threads, 2.6e9, issue_cycles)
    count = 10_001
    _, done = pm.batch(0.0, count)
    rate = update_rate(mem, threads, 2.6e9, issue_cycles)
    # accesses begin 1/rate apart, and the last completes one latency after it began
    assert (done - 80e-9) * rate == pytest.approx(count - 1, rel=1e-9)


@pytest.mark.parametrize("rate", [1e8, 3.3e8, 1e9])
def test_fitted_outstanding_misses_reproduce_the_rate(rate):
    mem = MemoryConfig(dram_latency_ns=85.0, line_fill_buffers_per_core=10, outstanding_misses_per_processor=1.0)
    cap = fit_outstanding_misses(rate, mem)
    fitted = mem.model_copy(update={"outstanding_misses_per_processor": cap})
    threads = math.ceil(cap / 10) + 1  # enough fill buffers that the processor's cap binds
    assert update_rate(fitted, threads, 2.6e9, 0.0) == pytest.approx(rate, rel=1e-12)


# ----------------------------------------------------------------------------- reporting


def _record(**fields):
    rec = {"algorithm": "baseline", "machine": "bgl", "shape": "4x4x2", "topology": "mesh", "processes": 32,
           "updates_per_process": 64, "seed": 0}
    for key, _, fmt in SUMMARY_ROWS:
        rec[key] = 7 if "," in fmt and "f" not in fmt else 0.5
    return rec | fields


def test_the_verification_verdict_is_the_records_own():
    passed = format_record(_record(verify_errors=3, verify_passed=True, verify_table_size=4096))
    assert "passed (3 errors in 4,096 words)" in passed and "FAILED" not in passed
    failed = format_record(_record(verify_errors=0, verify_passed=False, verify_table_size=4096))
    assert "FAILED (0 errors" in failed


def test_nan_fields_read_n_a():
    line = next(ln for ln in format_record(_record(gups_steady=float("nan"))).splitlines()
                if ln.split()[0] == "GUPS")
    assert line.split()[-1] == "n/a"


def _interval(half):
    return {"gups_steady": 0.04, "gups_ci_low": 0.04 - half, "gups_ci_high": 0.04 + half, "precision": "ok",
            "precision_target": 0.02, "warmup_updates": 100}


def test_the_precision_note_appears_only_when_the_interval_misses_its_target():
    assert "note: no valid interval" in format_record(_record())  # no interval in the record at all
    assert "note:" not in format_record(_record(**_interval(0.0004)))  # +-1%, target 2%
    assert "note: the interval is wider than" in format_record(_record(**_interval(0.004)))  # +-10%


def test_json_writes_numpy_scalars_as_numbers():
    data = json.loads(to_json({"a": np.int64(3), "b": np.float64(0.5), "c": np.bool_(True)}))
    assert data == {"a": 3, "b": 0.5, "c": True}
