"""The benchmark scripts' own input checks (their measurements live in docs/performance.md, not in tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH_FAST = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_fast.py"


def test_bench_fast_refuses_a_shape_no_selected_case_has_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, str(BENCH_FAST), "--series", "slope-long", "--shapes", "64x32x23",
                          "--out", str(tmp_path / "b.csv")], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "bench_fast.py: error: --shapes: no case of the series slope-long has the shape(s) 64x32x23")
    assert not (tmp_path / "b.csv").exists()  # nothing ran


def test_bench_fast_a_run_of_some_shapes_keeps_the_other_rows():
    """Running one shape again (``--shapes``) must not drop the CSV's other rows, whose figure shows them all."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_fast", BENCH_FAST)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def row(shape, algorithm, cpu_s, processes=512):
        return {"label": "slope", "shape": shape, "algorithm": algorithm, "updates_per_process": 64,
                "processes": processes, "nodes": 512, "cpu_s": cpu_s}

    old = [row("8x8x8", "routed", 1.0), row("16x16x16", "routed", 9.0), row("8x8x8", "one-packet", 2.0),
           row("8x8x8", "routed", 5.0, processes=1024)]
    merged = bench.merge_rows(old, [row("8x8x8", "routed", 3.0)])
    assert sorted((r["shape"], r["algorithm"], r["processes"], r["cpu_s"]) for r in merged) == [
        ("16x16x16", "routed", 512, 9.0), ("8x8x8", "one-packet", 512, 2.0), ("8x8x8", "routed", 512, 3.0),
        ("8x8x8", "routed", 1024, 5.0)]


# ---------------------------------------------------------------- profile_fast.py: its pure parts (perf is not needed)

def _profile_fast():
    import importlib.util

    spec = importlib.util.spec_from_file_location("profile_fast", BENCH_FAST.parent / "profile_fast.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_profile_fast_reads_numba_symbols_as_qualified_names():
    pf = _profile_fast()
    assert pf.numba_name("_ZN6gupsim7engines4fast4core6hop_onB3v73B40c8tJTIeFIjxB2IKSgI4CrvSCKg1MMVC_2fAwA_3dE5ArrayIiLi2E"
                         ) == "gupsim.engines.fast.core.hop_on"
    assert pf.numba_name("_ZN6gupsim7engines4fast6routed5_loopB3v16B48c8tJTIeFIjxE5ArrayIxLi2E") == "gupsim.engines.fast.routed._loop"
    assert pf.numba_name("_ZN7cpython6gupsim7engines4fast4core4growB4v167E") is None  # the CPython wrapper
    assert pf.numba_name("_PyEval_EvalFrameDefault") is None


def test_profile_fast_sums_samples_per_function_and_keeps_the_rest_apart():
    pf = _profile_fast()
    report = "\n".join([
        "# Samples: 1K of event 'cpu-clock'",
        "#",
        "    40.00%  [.] _ZN6gupsim7engines4fast4core6hop_onB3v73B40cE5ArrayIiLi2E",
        "    20.00%  [.] _ZN6gupsim7engines4fast4core6hop_onB3v99B40cE5ArrayIxLi2E",  # a second signature
        "    30.00%  [.] _ZN6gupsim7engines4fast4core8heap_popB3v23E",
        "     6.00%  [.] _PyEval_EvalFrameDefault",
        "     4.00%  [k] clear_page_rep",
        "",
    ])
    shares = pf.parse_report(report)
    assert shares == {"gupsim.engines.fast.core.hop_on": 60.0, "gupsim.engines.fast.core.heap_pop": 30.0, pf.NOT_COMPILED: 10.0}
    rows = pf.table(shares)
    assert [r[0] for r in rows] == ["gupsim.engines.fast.core.hop_on", "gupsim.engines.fast.core.heap_pop", pf.NOT_COMPILED]
    assert abs(rows[0][2] - 60 / 90 * 100) < 1e-9  # share of the compiled code's samples


def test_profile_fast_refuses_to_run_without_perf_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, str(BENCH_FAST.parent / "profile_fast.py")], capture_output=True,
                         text=True, env={"PATH": str(tmp_path)})  # no perf on this PATH
    assert out.returncode == 2
    assert out.stderr.strip() == "profile_fast: `perf` is not on the PATH (install linux-perf / linux-tools)"


def test_profile_fast_refuses_bad_input_in_one_line_before_looking_for_perf(tmp_path):
    script = str(BENCH_FAST.parent / "profile_fast.py")
    for argv, message in [(["--shape", "4x4"], "invalid shape '4x4'"),
                          (["--algorithm", "routd"], "unknown algorithm 'routd'; valid choices: alltoall, baseline"),
                          (["--algorithm", "upc"], "no fast kernel for algorithm 'upc'")]:
        out = subprocess.run([sys.executable, script, *argv], capture_output=True, text=True,
                             env={"PATH": str(tmp_path)})  # no perf either: the input is checked first
        assert out.returncode == 2
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("profile_fast: ") and message in lines[0], out.stderr


def test_bench_fast_redraws_a_slope_figure_only_from_every_case(monkeypatch, capsys):
    """A run of one shape into a fresh --out must not redraw the committed slope figure from that shape."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_fast", BENCH_FAST)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    drawn = []
    monkeypatch.setattr(bench, "slope_plot", lambda rows, label: drawn.append(label) or {"fit": 1.0})

    def rows(shapes):
        return [{"label": "slope", "shape": s, "algorithm": a} for a in bench.SLOPE_UPDATES for s in shapes]

    assert bench.slope_plots(rows(["64x32x32"])) == {}
    assert drawn == []
    assert "slope: figure not redrawn, its CSV lacks 8x8x8 one-packet" in capsys.readouterr().err
    assert bench.slope_plots(rows(bench.SLOPE_SHAPES)) == {"slope": {"fit": 1.0}}
    assert drawn == ["slope"]


def test_side_by_side_refuses_a_folder_that_is_no_checkout(tmp_path):
    out = subprocess.run([sys.executable, str(BENCH_FAST.parent / "side_by_side.py"), "--base", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert f"--base {tmp_path} is not a gupsim checkout" in out.stderr


# ---------------------------------------------------------------- partition_profile.py: finding each event's cause

def test_partition_profile_finds_the_event_that_handed_out_each_key():
    """An event's cause is the event during which its key's entity handed out its sequence number; an event
    keyed before any recorded event ran (the processes' start) has none."""
    import importlib.util

    import numpy as np

    from gupsim.engines.order import NORMAL, order_key

    spec = importlib.util.spec_from_file_location("partition_profile", BENCH_FAST.parent / "partition_profile.py")
    pp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pp)
    def key(entity, seq):
        return order_key(NORMAL, entity, seq)

    rec = np.zeros((5, 6), dtype=np.int64)
    # columns: time bits, key, kind, entity run as, first and one-past-last sequence number handed out
    rec[0, 1:] = key(7, 0), 0, 5, 0, 3   # entity 5 hands out 0, 1, 2
    rec[1, 1:] = key(5, 1), 0, 9, 0, 1   # keyed (5, 1): caused by row 0; entity 9 hands out 0
    rec[2, 1:] = key(5, 2), 0, 5, 3, 4   # keyed (5, 2): row 0; entity 5 hands out 3
    rec[3, 1:] = key(9, 0), 0, 5, 4, 4   # keyed (9, 0): row 1; hands out nothing
    rec[4, 1:] = key(5, 3), 0, 9, 1, 1   # keyed (5, 3): row 2
    assert pp.causes(rec).tolist() == [-1, 0, 0, 1, 2]


def test_compile_profile_refuses_an_unknown_family_in_one_line():
    out = subprocess.run([sys.executable, str(BENCH_FAST.parent / "compile_profile.py"), "--families", "first,nope"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("compile_profile.py: error: --families: unknown nope (valid: first,")


def test_alltoall_peak_refuses_a_scale_that_does_not_divide_the_machines_in_one_line():
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "alltoall_peak.py"
    out = subprocess.run([sys.executable, str(script), "--scale", "3"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == ""  # nothing ran
    assert out.stderr.strip() == "alltoall_peak: --scale 3 does not divide every dimension of 64x32x32, 40x32x16"


# ---------------------------------------------------------------- alltoall_checkpoint_rounds.py

def test_alltoall_checkpoint_rounds_gives_the_finished_runs_full_round_rate(tmp_path, monkeypatch):
    """The full rounds a checkpoint holds are final: read from the last save before the run ends, they give the
    record's own full-round rate and shares, to the bit; a damaged file is refused in one line."""
    import importlib.util
    import shutil

    from gupsim.config.loading import load_machine
    from gupsim.engines.fast import driver
    from gupsim.engines.run import make_run_config
    from tests.engines.fast.conftest import _record

    spec = importlib.util.spec_from_file_location("rounds", BENCH_FAST.parent / "alltoall_checkpoint_rounds.py")
    rounds = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rounds)
    config = make_run_config(machine=load_machine("cray-x1", {"network.bubble_accounting": "packets"}),
                             shape="2x2x1", algorithm="alltoall", updates_per_process=6000,
                             algorithm_options={"bucket_size": 64}, engine="fast")
    uncut, _ = _record(config)
    saves, save = [], driver.save

    def keep(checkpoint, *args):
        save(checkpoint, *args)
        saves.append(shutil.copy(checkpoint.path, tmp_path / f"save{len(saves)}.npz"))

    monkeypatch.setattr(driver, "save", keep)
    _record(config, driver.Checkpoint(tmp_path / "run.npz", key="k", every_s=0.0), batch_events=997)
    assert len(saves) > 3
    _, first_rounds, first = rounds.read(saves[0], 16)
    _, last_rounds, last = rounds.read(saves[-1], 16)
    assert first["full_rounds"] < last["full_rounds"] == uncut["alg_full_rounds"] >= 2
    for key in ("full_round_gups", "full_round_gups_low", "full_round_gups_high", "round_s", "share_exchange"):
        assert last[key] == uncut[f"alg_{key}"]
    (tmp_path / "bad.npz").write_bytes(open(saves[-1], "rb").read()[:-100])
    assert rounds.main([str(tmp_path / "bad.npz"), "16"]) == 2
