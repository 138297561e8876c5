"""Behaviour of the pipeline modules the suite left unpinned, found by hand-made mutation testing.

config (cycle table order, bare --set names, the bubble rule under 'auto', a machine file's own folder),
sweep (point keys, option precedence, the sweep's own set), store (failed rows), runpool (code digest,
kept-run keys, queue order, the runs tables), validation (errors, misses, summaries, notes), plots (what
each figure draws), cli (options passed through) and reference_docs.  Every expectation is worked out
here from first principles, on synthetic tables and records or runs of a few hundred updates; none is a
number copied from a run or from ../shared/reference.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from gupsim.config import MACHINES_DIR, load_machine
from gupsim.base.errors import GupsimError
from gupsim.engines.run import make_run_config, resolved_config
from tests.conftest import call_cli


# --------------------------------------------------------------------------- helpers


def _cycle_table(path: Path, rows: list[tuple[int, float, float]]) -> Path:
    pd.DataFrame(rows, columns=["payload_bytes", "send_mean_cycles", "recv_mean_cycles"]).to_csv(path, index=False)
    return path


def _sweep(tmp_path: Path, grid: dict, name: str = "t", **top):
    from gupsim.studies.sweep import load_sweep

    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "machine": "bgl", "grid": grid, **top}))
    return load_sweep(str(path))


# --------------------------------------------------------------------------- config


def test_a_cycle_table_in_any_row_order_interpolates_as_a_sorted_one(tmp_path):
    """np.interp needs rising payloads; the reader sorts, so a table written largest-first is the same table."""
    from gupsim.config import RawDeviceCosts

    rows = [(32, 10.0, 40.0), (96, 30.0, 100.0), (256, 70.0, 200.0)]
    ordered = RawDeviceCosts.from_csv(_cycle_table(tmp_path / "up.csv", rows))
    reversed_ = RawDeviceCosts.from_csv(_cycle_table(tmp_path / "down.csv", rows[::-1]))
    for costs in (ordered, reversed_):
        assert costs.send(64) == pytest.approx(20.0)  # halfway between 32 and 96
        assert costs.recv(176) == pytest.approx(150.0)  # halfway between 96 and 256
        assert costs.send(8) == 10.0 and costs.recv(1000) == 200.0  # clamped at both ends


def test_a_bare_set_key_must_be_a_whole_field_name_not_the_tail_of_one():
    """'trailer_bytes' is no field; resolving it to packet_trailer_bytes would change a field nobody named."""
    from gupsim.config.overrides import leaf_fields, resolve_override_key

    names = {p.rsplit(".", 1)[-1] for p in leaf_fields()}
    tails = {n.split("_", 1)[1] for n in names if "_" in n} - names
    assert tails
    for tail in sorted(tails):
        with pytest.raises(GupsimError, match="no such machine field"):
            resolve_override_key(tail)


def test_auto_topology_is_held_to_the_bubble_rule_of_the_torus_it_may_become():
    """'auto' wires a torus above mesh_up_to_nodes, so bubble flow control needs room for two packets there."""
    bgl = load_machine("bgl")
    assert bgl.network.topology == "auto" and bgl.network.flow_control == "bubble"
    one_packet = bgl.network.max_chunks_per_packet
    with pytest.raises(GupsimError, match="bubble"):
        load_machine("bgl", {"network.link_buffer_chunks": one_packet})
    with pytest.raises(GupsimError, match="bubble"):
        load_machine("bgl", {"network.link_buffer_chunks": one_packet, "network.topology": "torus"})
    mesh = load_machine("bgl", {"network.link_buffer_chunks": one_packet, "network.topology": "mesh"})
    assert mesh.network.link_buffer_chunks == one_packet  # a mesh needs no bubble
    load_machine("bgl", {"network.link_buffer_chunks": 2 * one_packet})  # two packets are enough


def test_a_machine_files_relative_cycle_table_is_read_from_that_files_folder(tmp_path):
    data = yaml.safe_load((MACHINES_DIR / "bgl.yaml").read_text())
    data["cpu"]["raw_device_cycle_table"] = "mine.csv"
    _cycle_table(tmp_path / "mine.csv", [(32, 1.0, 2.0), (256, 8.0, 16.0)])
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(data))
    machine = load_machine(str(tmp_path / "m.yaml"))
    assert (machine.costs.send(32), machine.costs.recv(256)) == (1.0, 16.0)


def test_set_values_yaml_leaves_as_text_still_become_numbers():
    """YAML 1.1 reads 09 as text (not octal, not decimal): a count must still arrive as the integer 9."""
    from gupsim.config.overrides import parse_key_value

    key, value = parse_key_value("chunk_bytes=09", "--set")
    assert (key, value) == ("chunk_bytes", 9) and type(value) is int
    assert parse_key_value("link_bytes_per_s=inf", "--set")[1] == math.inf


def test_a_larger_mpi_message_may_not_cost_even_a_fraction_of_a_cycle_less():
    small = load_machine("bgl").mpi.latency_small_cycles
    with pytest.raises(GupsimError, match="cannot cost less"):
        load_machine("bgl", {"mpi.latency_large_cycles": small - 0.5})
    assert load_machine("bgl", {"mpi.latency_large_cycles": small}).mpi.latency_large_cycles == small


# --------------------------------------------------------------------------- sweep


def test_a_point_key_includes_the_record_extras(tmp_path):
    """The same run recorded with and without per-link counters is two rows: a store that has the plain
    one must not skip the point that asks for links."""
    from gupsim.studies.sweep import expand

    grid = {"shape": ["2x2x2"], "updates": [64]}
    plain = expand(_sweep(tmp_path, grid, name="plain"))
    linked = expand(_sweep(tmp_path, grid, name="linked", record={"links": True}))
    assert resolved_config(plain[0].run) == resolved_config(linked[0].run)
    assert plain[0].key != linked[0].key


def test_a_grid_option_overrides_the_sweep_files_options_for_its_algorithm(tmp_path):
    from gupsim.studies.sweep import expand

    spec = _sweep(tmp_path, {"shape": ["2x2x2"], "option.max_pending": [16, 32]},
                  options={"baseline": {"max_pending": 8, "receive_test_every": 3}})
    points = expand(spec)
    assert [p.run.algorithm_options for p in points] == [{"max_pending": 16, "receive_test_every": 3},
                                                         {"max_pending": 32, "receive_test_every": 3}]


def test_the_sweeps_own_set_holds_at_every_point_of_a_machine_grid(tmp_path):
    from gupsim.studies.sweep import expand

    bgl = load_machine("bgl")
    spec = _sweep(tmp_path, {"link_bytes_per_s": [100e6, 200e6]}, set={"router_delay_ns": 0.0, "clock_hz": 1e9})
    points = expand(spec)
    assert [p.run.machine.network.link_bytes_per_s for p in points] == [100e6, 200e6]
    for p in points:
        assert p.run.machine.network.router_delay_ns == 0.0 and p.run.machine.cpu.clock_hz == 1e9
        assert p.run.machine.network.chunk_bytes == bgl.network.chunk_bytes  # the rest is the file's


# --------------------------------------------------------------------------- store


def test_a_failed_row_names_the_run_it_was():
    from gupsim.studies.store import failed_row

    cfg = make_run_config(machine=load_machine("bgl"), shape="4x2x2", algorithm="routed",
                          updates_per_process=96, seed=7)
    row = failed_row("k", cfg, {"shape": "4x2x2", "seed": 7}, "DeadlockError: stuck\nsecond line")
    assert (row["status"], row["error"]) == ("failed", "DeadlockError: stuck")
    assert (row["machine"], row["shape"], row["algorithm"], row["seed"], row["updates_per_process"]) == \
        ("bgl", "4x2x2", "routed", 7, 96)
    assert (row["var.shape"], row["var.seed"]) == ("4x2x2", 7)
    assert json.loads(row["config_json"]) == resolved_config(cfg)


# --------------------------------------------------------------------------- runpool


def test_the_code_digest_covers_the_model_folders_and_leaves_out_only_app_and_studies(tmp_path, monkeypatch):
    """A kept run is reused only by the model code that made it: an edit in gupsim/algorithms/, in a nested
    gupsim/engines/fast/ or in a top-level module must change the digest, an edit in gupsim/app/ or
    gupsim/studies/ must not."""
    import os

    import gupsim.studies.runpool as runpool

    pkg = tmp_path / "pkg"
    versions = iter(range(1, 100))

    def edit(name, text):
        (pkg / name).write_text(text)
        os.utime(pkg / name, ns=(1, next(versions)))  # a new version of the file, whatever the clock

    for folder in ("algorithms", "engines/fast", "app", "studies/experiments"):
        (pkg / folder).mkdir(parents=True)
    files = {"model.py": "a", "algorithms/alg.py": "b", "engines/fast/core.py": "c", "app/cli.py": "d",
             "studies/sweep.py": "e", "studies/experiments/table.py": "f"}
    for name, var in files.items():
        edit(name, f"{var} = 1\n")
    monkeypatch.setattr(runpool, "PACKAGE_DIR", pkg)
    seen = {runpool.code_digest()}
    for name in ("app/cli.py", "studies/sweep.py", "studies/experiments/table.py"):
        edit(name, f"{files[name]} = 2\n")
        assert runpool.code_digest() in seen, name
    for name in ("algorithms/alg.py", "engines/fast/core.py", "model.py"):
        edit(name, f"{files[name]} = 2\n")
        assert runpool.code_digest() not in seen, name
        seen.add(runpool.code_digest())


def test_the_code_digest_ignores_comments_and_docstrings(tmp_path, monkeypatch):
    """Editing what a model module says (its comments, docstrings) keeps kept runs; editing what it does,
    a string it computes with included, does not."""
    import os

    import gupsim.studies.runpool as runpool

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    model = pkg / "model.py"
    monkeypatch.setattr(runpool, "PACKAGE_DIR", pkg)

    def digest(text):
        model.write_text(text)
        os.utime(model, ns=(1, len(text)))  # a new version of the file, whatever the file system's clock
        return runpool.code_digest()

    first = digest('"""Doc."""\n# a comment\ndef f(x):\n    """What f does."""\n    return x + 1  # why\n')
    assert digest('"""Other doc."""\ndef f(x):\n    # other comment\n    return x + 1\n') == first
    assert digest('def f(x):\n    return x + 2\n') != first
    assert digest('def f(x):\n    return "x" + 1\n') != first


def test_a_run_key_names_the_code_and_the_whole_configuration():
    """Checkpoints are found by run_key: two runs of one shape (another seed, another link rate) need two."""
    from gupsim.studies.runpool import run_key

    bgl, fast_links = load_machine("bgl"), load_machine("bgl", {"network.link_bytes_per_s": 350e6})

    def cfg(machine, seed):
        return make_run_config(machine=machine, shape="2x2x2", algorithm="routed", updates_per_process=64, seed=seed)

    keys = {run_key(cfg(bgl, 0), "c"), run_key(cfg(bgl, 1), "c"), run_key(cfg(fast_links, 0), "c"),
            run_key(cfg(bgl, 0), "d")}
    assert len(keys) == 4
    assert run_key(cfg(bgl, 0), "c") == run_key(cfg(bgl, 0), "c") and run_key(cfg(bgl, 0), "c").startswith("c-")


class _Done:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class _InlineClient:
    """Just enough of a Dask client for DaskPool: a submitted task runs at once, in the pool's thread."""

    def submit(self, fn, *args, pure=False):
        return _Done(fn(*args))

    def run(self, fn):
        fn()


def test_a_dask_pool_starts_the_costliest_queued_run_first(monkeypatch):
    from gupsim.studies.runpool import DaskPool

    gate, order = threading.Event(), []
    pool = DaskPool(_InlineClient(), 1)
    try:
        blocker = pool.call(0, gate.wait, 10)  # holds the only worker while the others queue up
        futures = [pool.call(cost, order.append, cost) for cost in (1, 3, 2, 5)]
        gate.set()
        blocker.result(timeout=10)
        for f in futures:
            f.result(timeout=10)
    finally:
        pool.close()
    assert order == [5, 3, 2, 1]


def test_a_dask_pool_runs_each_distinct_configuration_even_on_one_shape(monkeypatch):
    import gupsim.studies.runpool as runpool
    from gupsim.studies.runpool import DaskPool

    monkeypatch.setattr(runpool, "cached_run", lambda config, cache_dir, code, threads=1: ("run", {"seed": config.seed}))
    bgl = load_machine("bgl")
    configs = [make_run_config(machine=bgl, shape="2x2x2", algorithm="baseline", updates_per_process=64, seed=s)
               for s in (0, 1, 0)]
    pool = DaskPool(_InlineClient(), 1)
    try:
        assert pool.records(configs) == [{"seed": 0}, {"seed": 1}, {"seed": 0}]
    finally:
        pool.close()


def _fake_run(wall_s: float):
    return lambda config, checkpoint=None, threads=1: {"events": 10, "wall_s": wall_s, "gups": 1.0, "processes": 8}


def test_kept_runs_gives_each_runs_seed_and_lists_this_codes_runs_first_longest_first(tmp_path, monkeypatch):
    import gupsim.studies.runpool as runpool
    from gupsim.studies.runpool import SerialPool, kept_runs

    bgl = load_machine("bgl")

    def cfg(seed):
        return make_run_config(machine=bgl, shape="2x2x2", algorithm="baseline", updates_per_process=64, seed=seed)

    for code, wall_s, seed in (("old", 100.0, 5), ("new", 1.0, 3), ("new", 2.0, 4)):
        monkeypatch.setattr(runpool, "code_digest", lambda code=code: code)
        monkeypatch.setattr(runpool, "run", _fake_run(wall_s))
        SerialPool(tmp_path).records([cfg(seed)])
    table = kept_runs(tmp_path, "new")
    assert list(table["reused"]) == [True, True, False]
    assert list(table["seed"]) == [4, 3, 5] and list(table["wall_s"]) == [2.0, 1.0, 100.0]
    assert list(table["updates_per_process"]) == [64] * 3 and list(table["code"]) == ["new", "new", "old"]


def test_unfinished_runs_marks_only_this_codes_checkpoints_as_resumed(tmp_path):
    from gupsim.engines.fast import tables
    from gupsim.studies.runpool import unfinished_runs

    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for name, applied in (("mine-0123.npz", 100), ("other-0123.npz", 200)):
        ctr = np.zeros(max(tables.C_APPLIED, tables.C_EVENTS) + 1, dtype=np.int64)
        ctr[tables.C_APPLIED], ctr[tables.C_EVENTS] = applied, 10 * applied
        np.savez(folder / name, counters=ctr, _wall_s=np.array(5.0))  # as the fast engine's driver names them
    table = unfinished_runs(tmp_path, "mine").set_index("checkpoint")
    assert table["resumed"].to_dict() == {"mine-0123.npz": True, "other-0123.npz": False}
    assert table["updates_applied"].to_dict() == {"mine-0123.npz": 100, "other-0123.npz": 200}
    assert table["events"].to_dict() == {"mine-0123.npz": 1000, "other-0123.npz": 2000}


# --------------------------------------------------------------------------- validation


def _comparison(published: list[float], simulated: list[float], target: float, **extra):
    """A table of rows n = 1, 2, ... with a published and (for the first len(simulated) rows) a simulated gups."""
    from gupsim.studies.validation import Comparison, compare

    ref = pd.DataFrame({"n": range(1, len(published) + 1), "gups": published})
    sim = pd.DataFrame({"n": range(1, len(simulated) + 1), "sim_gups": simulated})
    frame = compare(ref, sim, "n", ["gups"])
    return Comparison(name="t", title="T", key="n", frame=frame, targets={"gups": target}, machines="m", **extra)


def test_compare_gives_simulated_over_published_minus_one_and_keeps_unsimulated_rows():
    c = _comparison([2.0, 4.0, 5.0], [3.0, 3.0], 0.1)
    assert list(c.frame.columns[:4]) == ["n", "gups", "sim_gups", "rel_err_gups"]
    assert list(c.frame["n"]) == [1, 2, 3]  # the published row nobody simulated stays, without an error
    assert c.errors("gups").iloc[:2].tolist() == pytest.approx([3 / 2 - 1, 3 / 4 - 1])
    assert math.isnan(c.errors("gups").iloc[2]) and math.isnan(c.frame["sim_gups"].iloc[2])


def test_a_miss_is_an_error_beyond_the_target_either_way():
    c = _comparison([2.0, 4.0, 4.0, 4.0], [3.0, 2.0, 4.5], 0.4)  # +50%, -50%, +12.5%, not simulated
    assert c.misses() == [(1, "gups", 0.5, 0.4), (2, "gups", -0.5, 0.4)]


def test_the_summary_gives_mean_and_worst_absolute_error_and_counts_the_target_itself_as_within():
    c = _comparison([10.0, 10.0, 4.0], [11.0, 7.0, 5.0], 0.25)  # +10%, -30%, +25% (exactly)
    assert c.summary_lines() == ["t: gups: mean |err| 21.7%, worst 30.0% (n=2); target 25%: 2/3 judged rows within"]
    assert c.misses() == [(2, "gups", pytest.approx(-0.3), 0.25)]


def test_a_fitted_row_is_marked_on_the_page_named_with_its_fit_and_left_out_of_the_counts():
    """A fitted row agrees by construction: counting it as a pass had made a table of fits read '3/3 within'."""
    from gupsim.studies.validation import comparison_markdown

    c = _comparison([10.0, 10.0, 4.0], [10.0, 7.0, 5.0], 0.25, fitted={(1, "gups"): "x fitted on it"})
    assert c.summary_lines() == ["t: gups: mean |err| 27.5%, worst 30.0% (n=2); target 25%: 1/2 judged rows "
                                 "within; 1 fitted row not counted"]
    text = comparison_markdown(c)
    assert "| 1 | 10 | 10 | +0.0% (fit) |" in text and "| 2 | 10 | 7 | -30.0% |" in text
    assert "- n=1 (gups): x fitted on it" in text
    everything = _comparison([10.0, 4.0], [10.0, 4.0], 0.25, fitted={(1, "*"): "a", (2, "gups"): "b"})
    assert everything.summary_lines() == ["t: gups: every simulated row is a fit (2): nothing judged"]
    derived = _comparison([10.0], [11.0], 0.25, derived={"gups": "from a fit"})
    assert derived.summary_lines()[0].startswith("t: gups (from a fit): mean |err| 10.0%")


def test_a_miss_is_explained_by_its_own_note_before_its_rows_and_its_columns():
    from gupsim.studies.validation import comparison_markdown

    c = _comparison([2.0, 4.0, 2.0], [3.0, 2.0, 3.0], 0.4,
                    notes={(1, "gups"): "cell note", (1, "*"): "row note", (3, "*"): "row note",
                           ("*", "gups"): "column note"})
    text = comparison_markdown(c)
    assert "- **n=1, gups**: +50.0% (target ±40%). cell note" in text
    assert "- **n=2, gups**: -50.0% (target ±40%). column note" in text
    assert "- **n=3, gups**: +50.0% (target ±40%). row note" in text


def test_the_partition_shapes_read_from_table_2_have_the_node_count_they_are_keyed_by():
    from gupsim.topology import parse_shape
    from gupsim.studies.validation import bgl_partition_shapes

    shapes = bgl_partition_shapes()
    assert len(shapes) >= 2
    for nodes, shape in shapes.items():
        assert math.prod(parse_shape(shape)) == nodes, (nodes, shape)


def test_the_files_digest_follows_names_as_well_as_bytes_and_not_the_order_given(tmp_path):
    from gupsim.studies.validation import files_digest

    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("x: 1\n")
    b.write_text("y: 2\n")
    both = files_digest([a, b], tmp_path, 10)
    assert files_digest([b, a], tmp_path, 10) == both
    renamed = a.rename(tmp_path / "a2.yaml")  # the same bytes, in the same order, under another machine name
    assert files_digest([renamed, b], tmp_path, 10) != both


def test_only_calibration_rows_are_marked_fitted():
    import time

    from gupsim.studies.bgp import comparison

    reference = {"fitted": {"value": 1.0, "unit": "us", "source": "s", "role": "calibration"},
                 "judged": {"value": 2.0, "unit": "us", "source": "s"}}
    c = comparison("x", "X", reference, {"fitted": 1.0, "judged": 3.0}, 0.1, "", time.perf_counter())
    assert list(c.frame["role"]) == ["calibration", "judged"]
    assert set(c.fitted) == {("fitted", "value")}
    assert c.misses() == [("judged", "value", 0.5, 0.1)]
    assert c.summary_lines() == ["x: value: mean |err| 50.0%, worst 50.0% (observation=judged); target 10%: 0/1 "
                                 "judged rows within; 1 fitted row not counted"]


# --------------------------------------------------------------------------- plots


def test_scaling_draws_the_mean_over_seeds_with_their_range_and_each_bound_as_labelled(figures, tmp_path):
    from gupsim.model.bounds import bounds
    from gupsim.app.plots import plot_scaling

    machine = load_machine("bgl")
    rows = []
    for shape, nodes, gups in (("2x2x2", 8, (1.0, 2.0, 6.0)), ("4x2x2", 16, (2.0, 2.0, 2.0))):
        for seed, g in enumerate(gups):
            cfg = make_run_config(machine=machine, shape=shape, algorithm="baseline", updates_per_process=64,
                                  seed=seed)
            rows.append({"key": f"{shape}-{seed}", "status": "ok", "gups": g, "algorithm": "baseline",
                         "nodes": nodes, "shape": shape, "var.seed": seed, "var.shape": shape,
                         "config_json": json.dumps(resolved_config(cfg))})
    plot_scaling(pd.DataFrame(rows), tmp_path)
    ax = figures[0].axes[0]
    (series,) = ax.containers  # one line for the algorithm: the seeds are its error bar, not lines of their own
    assert series.get_label() == "baseline"
    assert list(series.lines[0].get_ydata()) == [3.0, 2.0]  # the means
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    network = [v for k, v in lines.items() if k.startswith("network bound")]
    assert network == [[bounds(machine, s).network_bound_gups for s in ("2x2x2", "4x2x2")]]
    assert lines["CPU bound, eq. (1)"] == [bounds(machine, s).cpu_bound_gups for s in ("2x2x2", "4x2x2")]


def _links_record():
    """A 2x2x1 record with x links only: x+ carries 10*(1 + x + 2y) %, x- 50 + 10*(x + 2y) %."""
    src, dst, dim, direction, util = [], [], [], [], []
    for y in range(2):
        for x in range(2):
            for sign, u in ((1, 0.1 * (1 + x + 2 * y)), (-1, 0.5 + 0.1 * (x + 2 * y))):
                src.append([x, y, 0])
                dst.append([(x + sign) % 2, y, 0])
                dim.append(0)
                direction.append(sign)
                util.append(u)
    return {"gups": 1.0, "machine": "bgl", "shape": "2x2x1",
            "links": {"src": src, "dst": dst, "dim": dim, "dir": direction, "utilisation": util}}


def test_the_link_map_puts_each_links_load_in_its_own_direction_and_node_and_ranks_the_busiest(figures, tmp_path):
    from gupsim.app.plots import plot_links

    record = _links_record()
    plot_links(record, tmp_path, top=2)
    fig = figures[0]
    plus, minus = fig.axes[0].images[0].get_array(), fig.axes[4].images[0].get_array()  # x+ and x- panels
    for y in range(2):
        for x in range(2):
            assert plus[y, x] == pytest.approx(10 * (1 + x + 2 * y))
            assert minus[y, x] == pytest.approx(50 + 10 * (x + 2 * y))
    (busiest,) = [ax for ax in fig.axes if ax.get_title().startswith("busiest")]
    assert [p.get_width() for p in busiest.patches] == pytest.approx([80.0, 70.0])


def test_the_histogram_means_are_weighted_by_the_counts(figures, tmp_path):
    from gupsim.app.plots import plot_histograms

    record = {"gups": 1.0, "histograms": {"updates_per_packet": {"1": 3, "4": 1},
                                          "updates_per_message": {"2": 1, "6": 3}}}
    plot_histograms(record, tmp_path)
    message, packet = figures[0].axes[:2]
    assert message.lines[0].get_xdata()[0] == pytest.approx((2 * 1 + 6 * 3) / 4)
    assert packet.lines[0].get_xdata()[0] == pytest.approx((1 * 3 + 4 * 1) / 4)


# --------------------------------------------------------------------------- cli


def test_run_passes_the_seed_and_the_table_size_to_the_run(capsys):
    code, out, _ = call_cli(capsys, "run", "--shape", "2x2x2", "--updates", "64", "--seed", "3",
                         "--log2-table-size", "20", "--json", "--no-progress")
    assert code == 0
    config = json.loads(out)["config"]
    assert (config["seed"], config["log2_table_size"]) == (3, 20)


def test_bounds_uses_the_bytes_per_update_it_is_given(capsys):
    """Eq. (2) is inversely proportional to b: twice the bytes per update, half the network bound."""
    _, one, _ = call_cli(capsys, "bounds", "--shape", "8x8x8", "--bytes-per-update", "50", "--json")
    _, two, _ = call_cli(capsys, "bounds", "--shape", "8x8x8", "--bytes-per-update", "100", "--json")
    one, two = json.loads(one), json.loads(two)
    assert (one["bytes_per_update"], two["bytes_per_update"]) == (50, 100)
    assert one["network_bound_gups"] == pytest.approx(2 * two["network_bound_gups"])


def test_reproduce_keeps_runs_unless_fresh(capsys, tmp_path, monkeypatch):
    import gupsim.app.cli as cli

    seen = []
    monkeypatch.setattr(cli, "run_experiments", lambda *a, **kw: seen.append(kw["cache_dir"]) or [])
    for extra in ((), ("--fresh",)):
        code, _, err = call_cli(capsys, "reproduce", "bgl-table2", "--quick", "--out", str(tmp_path), *extra)
        assert code == 0, err
    assert seen == [tmp_path / "runs", None]


def test_a_dry_run_counts_only_this_sweeps_points_as_done(capsys, tmp_path):
    from gupsim.studies.runpool import code_digest
    from gupsim.studies.store import ResultsStore
    from gupsim.studies.sweep import expand

    points = expand(_sweep(tmp_path, {"shape": ["2x2x2"], "seed": [0, 1]}, name="s"))
    path = tmp_path / "s.yaml"  # the file _sweep wrote
    store = ResultsStore(tmp_path / "st")
    for key in (points[0].key, "another-sweeps-point", "yet-another"):
        store.write({"key": key, "status": "ok", "error": "", "gups": 1.0, "code": code_digest()})
    code, out, _ = call_cli(capsys, "sweep", str(path), "--store", str(tmp_path / "st"), "--dry-run")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{points[0].key}  done  ") and lines[1].startswith(f"{points[1].key}  todo  ")
    assert "2 points, 1 to run" in lines  # the sweep's estimate follows the count


def test_runs_lists_other_codes_runs_only_with_all(capsys, tmp_path, monkeypatch):
    import gupsim.studies.runpool as runpool
    from gupsim.studies.runpool import SerialPool

    real = runpool.code_digest()
    cfg = make_run_config(machine=load_machine("bgl"), shape="4x2x2", algorithm="one-packet", updates_per_process=64)
    monkeypatch.setattr(runpool, "run", _fake_run(1.0))
    monkeypatch.setattr(runpool, "code_digest", lambda: "0ther0ther0ther0")
    SerialPool(tmp_path / "runs").records([cfg])
    monkeypatch.setattr(runpool, "code_digest", lambda: real)
    _, mine, _ = call_cli(capsys, "runs", "--out", str(tmp_path))
    _, everything, _ = call_cli(capsys, "runs", "--out", str(tmp_path), "--all")
    assert "one-packet" not in mine and ": 0 kept runs, " in mine and "1 kept by other code" in mine
    assert "one-packet" in everything and "0ther0ther0ther0" in everything


# --------------------------------------------------------------------------- reference_docs


def test_the_field_reference_shows_strict_and_inclusive_bounds_apart_and_factory_defaults():
    from gupsim.config import NetworkConfig
    from gupsim.app.reference_docs import fields_table, run_reference

    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in fields_table(NetworkConfig, prefix="network.").splitlines()[2:]}
    assert rows["`network.chunk_bytes`"][3].startswith("> 0")  # gt=0
    assert rows["`network.link_bytes_per_s`"][3] == "≥ 1"  # ge=1: a rate of at least one per second
    assert rows["`network.mesh_up_to_nodes`"][3].startswith("≥ 0")  # ge=0
    assert rows["`network.max_chunks_per_packet`"][3].startswith("≥ 1")
    options = [line for line in run_reference().splitlines() if line.startswith("| `algorithm_options` |")]
    assert len(options) == 1 and "| `{}` |" in options[0]
