"""Record extras (links, histograms, time series) agree with the run's own counters; the store keeps rows exactly."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gupsim.config import load_machine
from gupsim.base.errors import DeadlockError
from gupsim.engines.run import make_run_config, simulate
from gupsim.studies.store import ResultsStore
from gupsim.engines.reference.telemetry import Telemetry


@pytest.fixture(scope="module")
def routed_run():
    telemetry = Telemetry(links=True, histograms=True, sample_interval_s=2e-6)
    cfg = make_run_config(machine=load_machine("bgl"), shape="4x4x2", algorithm="routed", updates_per_process=256)
    sim, record = simulate(cfg, telemetry)
    return sim, record


def test_link_table_is_the_networks_counters_per_directed_link(routed_run):
    sim, record = routed_run
    links = pd.DataFrame(record["links"])
    assert len(links) == sim.topology.num_links
    assert links["bytes"].sum() == sum(sim.net.link_bytes)
    assert links["busy_s"].sum() == pytest.approx(sum(sim.net.link_busy_s))
    # Each link joins neighbours one step apart along its own dimension (4x4x2 <= 256 nodes: a mesh).
    for src, dst, dim, sign in zip(links["src"], links["dst"], links["dim"], links["dir"]):
        assert [b - a for a, b in zip(src, dst)] == [sign if d == dim else 0 for d in range(3)]
    assert record["link_utilisation_max"] == pytest.approx(links["utilisation"].max())


def test_histograms_count_every_packet_and_update(routed_run):
    sim, record = routed_run
    per_packet = {float(k): v for k, v in record["histograms"]["updates_per_packet"].items()}
    assert sum(per_packet.values()) == sim.net.packets_injected == record["alg_packets_sent"]
    assert sum(k * v for k, v in per_packet.items()) == sim.algorithm.packet_updates


def test_baseline_message_histogram_is_its_bucket_sizes():
    telemetry = Telemetry(histograms=True)
    cfg = make_run_config(machine=load_machine("bgl"), shape="4x2x2", algorithm="baseline", updates_per_process=512)
    sim, record = simulate(cfg, telemetry)
    sizes = {int(k): v for k, v in record["histograms"]["updates_per_message"].items()}
    assert sum(sizes.values()) == sim.algorithm.messages_sent
    assert sum(k * v for k, v in sizes.items()) == sim.algorithm.updates_sent


#: Algorithm -> (messages sent, updates they carried), from the record and the algorithm's own counters.
SENT = {
    "baseline": lambda sim, rec: (rec["alg_messages_sent"], sim.algorithm.updates_sent),
    "routed": lambda sim, rec: (rec["alg_packets_sent"], sim.algorithm.packet_updates),  # a message is a packet
    "routed-split": lambda sim, rec: (rec["alg_packets_sent"], sim.algorithm.packet_updates),
    "dv": lambda sim, rec: (rec["packets_injected"], sim.total_updates),  # a packet per update, local ones too
}


@pytest.mark.parametrize("machine, algorithm", [
    ("bgp", "baseline"), ("bgp", "routed"), ("bgp", "routed-split"), ("hypatia-ib", "baseline"),
    ("hypatia-dv", "dv")])
def test_histograms_count_every_packet_on_dma_and_switched_networks(machine, algorithm):
    """BG/P's DMA network, the fat tree and the Data Vortex launch packets their own way (their histograms were
    empty); each must reach the hook."""
    cores = {"cpu.processes_per_node": 4} if algorithm == "routed-split" else {}  # its router and worker cores
    cfg = make_run_config(machine=load_machine(machine, cores), shape="2x2x2", algorithm=algorithm,
                          updates_per_process=64)
    sim, record = simulate(cfg, Telemetry(histograms=True))
    per_packet = {float(k): v for k, v in record["histograms"]["updates_per_packet"].items()}
    per_message = {float(k): v for k, v in record["histograms"]["updates_per_message"].items()}
    messages, updates = SENT[algorithm](sim, record)
    assert sum(per_packet.values()) == record["packets_injected"] > 0
    assert sum(per_message.values()) == messages
    assert sum(k * v for k, v in per_message.items()) == updates
    assert sum(k * v for k, v in per_packet.items()) == pytest.approx(updates, rel=1e-3)  # a share, rounded


def test_time_series_is_sampled_on_its_interval_and_adds_up(routed_run):
    sim, record = routed_run
    ts = pd.DataFrame(record["timeseries"])
    assert (ts["t_s"].diff().dropna().round(12) == 2e-6).all()
    assert ts["updates_applied"].is_monotonic_increasing and ts["updates_applied"].iloc[-1] <= sim.total_updates
    assert ts["sbf_cumulative"].between(0, 1).all() and ts["throttled_fraction"].between(0, 1).all()
    assert ts["t_s"].iloc[-1] <= record["sim_time_s"]


def test_sampling_does_not_change_the_run():
    cfg = make_run_config(machine=load_machine("bgl"), shape="2x2x2", algorithm="one-packet", updates_per_process=256)
    plain = simulate(cfg)[1]
    sampled = simulate(cfg, Telemetry(sample_interval_s=1e-6, histograms=True, links=True))[1]
    assert sampled["sim_time_s"] == plain["sim_time_s"] and sampled["gups"] == plain["gups"]


def test_a_deadlock_is_still_reported_while_sampling():
    # The sampler must not keep a stuck machine's event queue alive (it would hang instead).
    tiny = {"network.injection_fifo_chunks": 8, "network.reception_fifo_chunks": 8,
            "network.link_buffer_chunks": 8, "network.topology": "mesh"}
    cfg = make_run_config(machine=load_machine("bgl", tiny), shape="4x4x1", algorithm="routed",
                          updates_per_process=1024,
                          algorithm_options={"bucket_capacity": 100, "receive_buckets": "shared"})
    with pytest.raises(DeadlockError, match="wait on each other"):
        simulate(cfg, Telemetry(sample_interval_s=1e-6))


rows = st.fixed_dictionaries({
    "key": st.sampled_from(["a", "b", "c", "d"]),
    "status": st.sampled_from(["ok", "failed"]),
    "gups": st.floats(0, 10, allow_nan=False),
    "shape": st.sampled_from(["2x2x2", "4x4x4"]),
})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(rows, min_size=1, max_size=8), compact_after=st.integers(0, 8))
def test_store_keeps_one_row_per_key_ok_beats_failed_later_beats_earlier(tmp_path_factory, batch, compact_after):
    store = ResultsStore(tmp_path_factory.mktemp("store"))
    for i, row in enumerate(batch):
        store.write(row)
        if i == compact_after:
            store.compact()
    table = store.compact().set_index("key")
    assert sorted(table.index) == sorted({r["key"] for r in batch})
    for key in table.index:
        mine = [r for r in batch if r["key"] == key]
        ok = [r for r in mine if r["status"] == "ok"]
        expected = (ok or mine)[-1]
        assert table.loc[key, "status"] == expected["status"] and table.loc[key, "gups"] == expected["gups"]
    assert not list(store.parts.glob("*"))
    # The compacted file is plain Parquet.
    assert json.loads(pd.read_parquet(store.compacted).to_json(orient="records"))


def test_store_compacts_columns_whose_type_differs_between_points(tmp_path):
    # e.g. one point sets an option to 8, another to "auto": the compacted column holds text, nothing is lost.
    store = ResultsStore(tmp_path / "s")
    store.write({"key": "a", "status": "ok", "cfg.algorithm_options.x": 8})
    store.write({"key": "b", "status": "ok", "cfg.algorithm_options.x": "auto"})
    table = store.compact().set_index("key")
    assert table.loc["a", "cfg.algorithm_options.x"] == "8" and table.loc["b", "cfg.algorithm_options.x"] == "auto"
