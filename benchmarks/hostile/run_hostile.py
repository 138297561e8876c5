"""Hostile-input sweep of the ``gupsim`` command line (issue 48): generated cases, each run in a child process,
each classified as one of

* **clean**: one ``gupsim: error:`` line (or ``gupsim: interrupted:``) and a non-zero exit, within the time
  allowed, nothing lost; or, for a value gupsim may take, exit 0 with a whole, true answer;
* **traceback**: a Python traceback, or more than a few lines of error output;
* **hang**: still running when its time ran out (killed then);
* **crash**: killed by a signal, or a non-zero exit with nothing said;
* **silent-wrong**: exit 0 with an answer that is wrong, cut or incomplete (non-strict JSON, a cut file, a
  command that should have refused, a planted pickle that ran);
* **lost**: a file the command read (a store, a machine file, kept runs) changed or gone afterwards.

Usage (from a checkout; ``--root`` runs another checkout's code with this interpreter, e.g. main's)::

    python benchmarks/hostile/run_hostile.py --list                 # how many cases, per class
    python benchmarks/hostile/run_hostile.py --every 4 --jobs 2     # a stratified quarter, two at a time
    python benchmarks/hostile/run_hostile.py --root /tmp/main --every 4 --json before.json

The cases are combinations (commands x options x values, files x commands, limits x commands, signals x
commands), not hand-picked, so a fix of one case without its class shows up as the neighbours that still fail.
Not a unit test: it takes minutes, and measures the whole tool under limits the test suite does not set.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
KINDS = ("clean", "traceback", "hang", "crash", "silent-wrong", "lost")

HOSTILE_NUMBERS = ["", " ", "-1", "0", "1", "nan", "inf", "-inf", "1e309", "1e-320", "9" * 5000, str(2**70),
                   str(2**31), "0x10", "1_000", "abc", "1.5", "&a [*a]"]
HOSTILE_VALUES = ["-1", "0", "1e-320", "1e308", "nan", "inf", "9" * 5000, str(2**70), "&a [*a]", "[1, 2]", "{a: 1}",
                  "''", "yes", "0x10"]
BGL_FIELDS = ["clock_hz", "link_bytes_per_s", "chunk_bytes", "processes_per_node", "generate_cycles",
              "update_cycles", "packet_overhead_cycles", "route_hop_cycles", "poll_cycles_per_dimension",
              "packet_header_bytes"]
OPTION_CASES = [("alltoall", "bucket_size"), ("baseline", "max_pending"), ("baseline", "receive_test_every"),
                ("routed", "bucket_capacity"), ("routed", "software_header_bytes"), ("upc", "window"),
                ("upc", "payload_bytes"), ("one-packet", "payload_bytes"), ("one-packet", "wire_bytes")]
OPTION_VALUES = ["0", "-1", str(2**31), str(2**70), "9" * 5000, "&a [*a]", "nan", "x", "[1]", "1.5"]


@dataclass
class Case:
    name: str
    group: str
    argv: list[str]
    expect: str = "any"  # "fail": exit 0 is silent-wrong; "any": exit 0 must be a whole answer
    timeout: float = 30.0
    limits: list[str] = field(default_factory=list)  # prlimit options
    env: dict[str, str] = field(default_factory=dict)
    signal_after: tuple[int, float] | None = None  # (signum, seconds): send it to the process group
    stdout_file: str | None = None  # stdout to this file (relative to the case folder) instead of a pipe
    protect: list[str] = field(default_factory=list)  # files that must be unchanged afterwards
    marker: str | None = None  # a file whose existence afterwards means planted code ran
    setup: str | None = None  # a fixture the case needs made fresh


# ------------------------------------------------------------------------------------------------ fixtures


def make_fixtures(f: Path, python: list[str], env: dict[str, str]) -> None:
    """The folder of crafted files the cases name (``f/`` in issue 48)."""
    import yaml

    f.mkdir(parents=True, exist_ok=True)
    bgl_text = (Path(env["GUPSIM_ROOT"]) / "gupsim" / "data" / "machines" / "bgl.yaml").read_text()
    bgl = yaml.safe_load(bgl_text)
    (f / "bgl.yaml").write_text(bgl_text)
    table = Path(env["GUPSIM_ROOT"]) / "gupsim" / "data" / "reference" / "bgl_raw_device_cycles.csv"
    shutil.copy(table, f / "cycles.csv")
    bgl["cpu"]["raw_device_cycle_table"] = "cycles.csv"
    (f / "local.yaml").write_text(yaml.safe_dump(bgl))
    (f / "cyclic.yaml").write_text(bgl_text + "\nloop: &l [*l]\n")
    (f / "cyclic2.yaml").write_text("&r {a: *r}\n")
    (f / "cyclic3.yaml").write_text("a: &m {b: [1, *m]}\n")
    if not (f / "fifo.yaml").exists():
        os.mkfifo(f / "fifo.yaml")
    if not (f / "fifo.json").exists():
        os.mkfifo(f / "fifo.json")
    (f / "empty.yaml").write_text("")
    (f / "nul.yaml").write_bytes(b"\0" * 4096)
    (f / "binary.yaml").write_bytes(os.urandom(4096))
    (f / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (f / "list.yaml").write_text("- 1\n- 2\n")
    (f / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    (f / "bigint.yaml").write_text(bgl_text.replace("processes_per_node: 1", "processes_per_node: " + "9" * 5000))
    (f / "bomb.yaml").write_text("a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, c in zip("abcdefgh", "bcdefghi")))
    (f / "manykeys.yaml").write_text("".join(f"k{i}: {i}\n" for i in range(300_000)))
    (f / "dup.yaml").write_text(bgl_text + "\nname: again\n")
    (f / "dir.yaml").mkdir(exist_ok=True)
    if not (f / "loop.yaml").is_symlink():
        (f / "loop.yaml").symlink_to(f / "loop.yaml")
    with open(f / "zeros.csv", "wb") as fh:  # sparse: a gigabyte of NUL bytes taking no disk
        fh.truncate(2**30)
    (f / "random.csv").write_bytes(os.urandom(32 * 2**20))
    for name, target in (("zero_link.yaml", "zeros.csv"), ("urandom_link.yaml", "random.csv"),
                         ("dev_link.yaml", "/dev/zero")):
        data = yaml.safe_load(bgl_text)
        data["cpu"]["raw_device_cycle_table"] = target
        (f / name).write_text(yaml.safe_dump(data))
    for name, machine in (("sweep.yaml", "bgl"), ("sweep_cyclic.yaml", str(f / "cyclic.yaml"))):
        (f / name).write_text(yaml.safe_dump({"name": name.removesuffix(".yaml"), "machine": machine,
                                              "grid": {"shape": ["2x2x2", "2x2x1"], "algorithm": ["baseline"],
                                                       "updates": [16], "seed": [0, 1]}}))
    (f / "sweep_long.yaml").write_text(yaml.safe_dump({"name": "long", "machine": "bgl",
                                                       "grid": {"shape": ["8x8x8"], "algorithm": ["routed"],
                                                                "updates": [20000], "seed": list(range(8))}}))
    (f / "sweep_bigint.yaml").write_text(yaml.safe_dump({"name": "bi", "machine": "bgl",
                                                         "grid": {"shape": ["2x2x2"], "updates": [16], "seed": [7]}})
                                         .replace("- 7", "- " + "9" * 5000))
    # every fast kernel compiled (or loaded from Numba's cache) before any case is timed: a cold compile takes
    # minutes on a shared machine, and would count as a hang of whichever case came first
    subprocess.run([python[0], "-c", "from gupsim.engines.run import compile_all; compile_all()"], env=env,
                   timeout=1800, check=True)
    done = subprocess.run(python + ["run", "--shape", "2x2x2", "--updates", "64", "--json", "--links", "--histograms",
                                    "--sample-interval-s", "1e-6", "--engine", "simpy"],
                          capture_output=True, text=True, env=env, cwd=f, timeout=600)
    (f / "record.json").write_text(done.stdout if done.returncode == 0 else '{"gups": 1.0}')
    (f / "nan.json").write_text('{"gups": NaN, "machine": "bgl", "shape": "2x1x1", "links": NaN}')
    (f / "notjson.json").write_text("not json at all")
    (f / "listrec.json").write_text("[1, 2, 3]")
    (f / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with open(f / "huge.json", "wb") as fh:
        fh.truncate(2**30)


def make_store(where: Path, python: list[str], env: dict[str, str]) -> Path:
    """A results store of a few rows, made through the tool's own store (``ResultsStore``)."""
    store = where / "s.store"
    code = ("import sys; from gupsim.studies.store import ResultsStore\n"
            "s = ResultsStore(sys.argv[1])\n"
            "[s.write({'key': f'k{i}', 'status': 'ok', 'gups': 0.1 * i, 'shape': '2x2x2', 'nodes': 8}) for i in range(64)]\n"
            "s.compact()\n")
    subprocess.run([python[0], "-c", code, str(store)], check=True, env=env, timeout=300)
    return store


def plant_pickle(out: Path, marker: Path) -> None:
    """A results folder whose kept runs hold a pickle that writes ``marker`` when unpickled, in both the
    folder older versions used (joblib's) and under the name a JSON record has."""
    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    for folder in (out / "runs" / "joblib" / "gupsim" / "studies" / "runpool" / "_run_keyed" / ("0123abcd" * 4),
                   out / "runs" / "records"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "output.pkl").write_bytes(pickle.dumps(Payload()))
        # a call record naming a configuration, as joblib's own had: a reader that checks it reads on
        config = {"machine": {"name": "bgl"}, "algorithm": "baseline", "shape": "2x2x2", "updates_per_process": 8,
                  "seed": 0}
        (folder / "metadata.json").write_text(json.dumps({"input_args": {"code": "'x'",
                                                                         "key": repr(json.dumps(config))}}))
    (out / "runs" / "records" / "x-1.json").write_bytes(pickle.dumps(Payload()))


# ------------------------------------------------------------------------------------------------ cases


def cases(f: str) -> list[Case]:
    out: list[Case] = []
    numeric = {"run": ["--updates", "--seed", "--log2-table-size", "--precision", "--sample-interval-s",
                       "--checkpoint-every-s"],
               "bounds": ["--bytes-per-update"], "reproduce": ["--jobs", "--precision"], "sweep": ["--workers"],
               "plot": ["--z"]}
    base = {"run": ["run", "--shape", "2x2x2", "--no-progress", "--json"], "bounds": ["bounds", "--shape", "2x2x2", "--json"],
            "reproduce": ["reproduce", "nosuch"], "sweep": ["sweep", "nosuch.yaml"],
            "plot": ["plot", "links", f"{f}/record.json", "--out", "p"]}
    for command, options in numeric.items():
        for option in options:
            for i, value in enumerate(HOSTILE_NUMBERS):
                argv = base[command] + [option, value]
                if command == "run" and option == "--checkpoint-every-s":
                    argv += ["--checkpoint", "c.npz"]
                out.append(Case(f"flag {command} {option} #{i}", "flags", argv,
                                expect="fail" if command in ("reproduce", "sweep") else "any"))
    for field_name in BGL_FIELDS:
        for i, value in enumerate(HOSTILE_VALUES):
            out.append(Case(f"set bounds {field_name} #{i}", "set", ["bounds", "--shape", "2x2x2", "--json", "--set",
                                                                     f"{field_name}={value}"]))
    for field_name in BGL_FIELDS[:4]:
        for i, value in enumerate(HOSTILE_VALUES):
            out.append(Case(f"set run {field_name} #{i}", "set", ["run", "--shape", "2x2x2", "--updates", "32", "--json",
                                                                  "--set", f"{field_name}={value}"]))
    for machine in ("bgl", "cray-x1"):
        for algorithm, option in OPTION_CASES if machine == "bgl" else OPTION_CASES[:1]:
            for i, value in enumerate(OPTION_VALUES):
                out.append(Case(f"option {machine} {algorithm} {option} #{i}", "options",
                                ["run", "--machine", machine, "--shape", "2x2x2", "--updates", "32", "--json",
                                 "--algorithm", algorithm, "--option", f"{option}={value}"]))
    out += [Case("nonsense ppn=3 bgl", "machine-values", ["run", "--shape", "2x2x2", "--updates", "8", "--set",
                                                          "processes_per_node=3"], expect="fail"),
            Case("nonsense ppn=1000 hypatia-ib", "machine-values",
                 ["run", "--machine", "hypatia-ib", "--shape", "2x1x1", "--updates", "8", "--set",
                  "processes_per_node=1000"], expect="fail"),
            Case("nonsense memory=1 hypatia-ib", "machine-values",
                 ["run", "--machine", "hypatia-ib", "--shape", "2x1x1", "--updates", "8", "--set",
                  "memory_bytes_per_processor=1"], expect="fail")]
    machine_files = ["cyclic.yaml", "cyclic2.yaml", "cyclic3.yaml", "fifo.yaml", "empty.yaml", "nul.yaml",
                     "binary.yaml", "latin1.yaml", "list.yaml", "deep.yaml", "bigint.yaml", "bomb.yaml",
                     "manykeys.yaml", "dup.yaml", "dir.yaml", "loop.yaml", "zero_link.yaml", "urandom_link.yaml",
                     "dev_link.yaml", "missing.yaml"]
    for name in machine_files:
        for command in (["bounds", "--shape", "2x2x2"], ["run", "--shape", "2x2x2", "--updates", "8"]):
            out.append(Case(f"machine {command[0]} {name}", "files", command + ["--machine", f"{f}/{name}"],
                            expect="fail"))
        for limit in (["--as=3000000000"],):
            out.append(Case(f"machine bounds {name} under --as 3 GB", "files",
                            ["bounds", "--shape", "2x2x2", "--machine", f"{f}/{name}"], expect="fail", limits=limit))
        out.append(Case(f"sweep file {name}", "files", ["sweep", f"{f}/{name}", "--dry-run"], expect="fail"))
    for name in ["sweep_cyclic.yaml", "sweep_bigint.yaml"]:
        out.append(Case(f"sweep file {name}", "files", ["sweep", f"{f}/{name}", "--dry-run"], expect="fail"))
    records = ["/dev/zero", "/dev/urandom", "/dev/full", f"{f}/fifo.json", f"{f}/notjson.json", f"{f}/listrec.json",
               f"{f}/deep.json", f"{f}/huge.json", f"{f}/nan.json", f"{f}/missing.json", f"{f}/empty.yaml"]
    for record in records:
        for kind in ("links", "histograms", "timeseries"):
            out.append(Case(f"plot {kind} {record}", "files", ["plot", kind, record, "--out", "p"], expect="fail",
                            limits=["--as=3000000000"]))
    for docs in ("/dev/full", "/dev/zero", f"{f}/fifo.yaml"):
        out.append(Case(f"reproduce --docs {docs}", "files", ["reproduce", "bgl-table2", "--quick", "--out", "o",
                                                             "--docs", docs], expect="fail", timeout=60))
    # outputs over inputs: the store, the kept runs, the record, the machine file
    for option in ("--csv", "--parquet"):
        for target in ("s.store/results.parquet", "link.parquet", "s.store/parts/x", "s.store"):
            out.append(Case(f"results {option} {target}", "outputs", ["results", "s.store", option, target],
                            expect="fail", protect=["s.store/results.parquet"], setup="store"))
    out += [Case("runs --csv into kept runs", "outputs", ["runs", "--out", "o", "--csv", "o/runs/records/a.json"],
                 expect="fail", setup="kept", protect=["o/runs/records/x-1.json"]),
            Case("plot --out over its record", "outputs", ["plot", "links", "r.json", "--out", "r.json"],
                 expect="fail", setup="record", protect=["r.json"]),
            Case("run --checkpoint over the machine file", "outputs",
                 ["run", "--machine", "m.yaml", "--shape", "2x2x2", "--updates", "8", "--checkpoint", "m.yaml"],
                 expect="fail", setup="machine", protect=["m.yaml"]),
            Case("reproduce --docs over the machine file", "outputs",
                 ["reproduce", "bgl-table2", "--quick", "--out", "o", "--docs", "m.yaml"], setup="machine",
                 protect=["m.yaml"], timeout=90),
            Case("sweep --store over its sweep file", "outputs", ["sweep", f"{f}/sweep.yaml", "--store",
                                                                  f"{f}/sweep.yaml"], expect="fail",
                 protect=[f"{f}/sweep.yaml"])]
    out += [Case("runs reads a planted pickle", "pickle", ["runs", "--out", "o"], setup="kept", marker="ran"),
            Case("runs --all reads a planted pickle", "pickle", ["runs", "--out", "o", "--all"], setup="kept",
                 marker="ran")]
    for limit in ("--as=300000000", "--as=500000000", "--as=1000000000"):
        for command in (["list"], ["bounds", "--shape", "2x2x2"], ["run", "--shape", "2x2x2", "--updates", "8"]):
            out.append(Case(f"{' '.join(command[:1])} under prlimit {limit}", "limits", command, limits=[limit]))
    for command in (["list"], ["bounds", "--shape", "2x2x2"], ["run", "--shape", "2x2x2", "--updates", "8"]):
        out.append(Case(f"{command[0]} with NUMBA_DISABLE_JIT=1", "limits", command, env={"NUMBA_DISABLE_JIT": "1"}))
    for command in (["run", "--shape", "2x2x2", "--updates", "64", "--json"], ["bounds", "--shape", "2x2x2", "--json"],
                    ["run", "--shape", "4x4x4", "--updates", "64"]):
        out.append(Case(f"{command[0]} > file under --fsize=300", "limits", command, limits=["--fsize=300"],
                        stdout_file="f.out"))
    out.append(Case("results --csv under --fsize=300", "limits", ["results", "s.store", "--csv", "t.csv"],
                    limits=["--fsize=300"], setup="store", protect=["s.store/results.parquet"]))
    out.append(Case("sweep under --nofile=40", "limits", ["sweep", f"{f}/sweep.yaml", "--store", "st", "--no-progress"],
                    limits=["--nofile=40"], timeout=90))
    out.append(Case("run under --cpu=3", "limits", ["run", "--shape", "8x8x8", "--updates", "100000", "--engine",
                                                    "simpy", "--no-progress"], limits=["--cpu=3:60"], timeout=60,
                    expect="fail"))
    long_run = ["run", "--shape", "8x8x8", "--updates", "100000", "--engine", "simpy", "--no-progress"]
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGXCPU):
        out.append(Case(f"run {sig.name} at 6 s", "signals", long_run, signal_after=(sig, 6), expect="fail",
                        timeout=60))
        out.append(Case(f"run --checkpoint {sig.name} at 6 s", "signals",
                        ["run", "--shape", "16x16x16", "--updates", "100000", "--checkpoint", "c.npz",
                         "--checkpoint-every-s", "1", "--no-progress"], signal_after=(sig, 6), expect="fail",
                        timeout=60))
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        for at in (3.5, 5.0, 8.0):
            out.append(Case(f"sweep {sig.name} at {at} s", "signals", ["sweep", f"{f}/sweep_long.yaml", "--store", "st",
                                                                       "--workers", "2", "--no-progress"],
                            signal_after=(sig, at), expect="fail", timeout=90))
    for sig in (signal.SIGINT, signal.SIGTERM):
        out.append(Case(f"reproduce --jobs 2 {sig.name} at 5 s", "signals",
                        ["reproduce", "bgl-table3", "--jobs", "2", "--out", "o", "--docs", "v.md"],
                        signal_after=(sig, 5), expect="fail", timeout=120))
    names = [["reproduce", "all", "nosuch", "--quick"], ["reproduce", "bgl-table2", "--out", ""],
             ["runs", "--out", ""], ["sweep", f"{f}/sweep.yaml", "--store", ""], ["run", "--machine", ""],
             ["run", "--algorithm", "nosuch"], ["run", "--engine", "nosuch"], ["plot", "nosuch", "x"],
             ["results", "nosuch.store"], ["plot", "links", f"{f}/record.json", "--out", ""]]
    for argv in names:
        out.append(Case(f"names {' '.join(argv)!r}", "names", argv, expect="fail"))
    shapes = ["0x1x1", "1x1x1", "2x2", "axbxc", str(2**70) + "x1x1", "-1x2x2", "2x2x2x2", " ", "\uff12x2x2",
              "2.5x2x2", "99999999999999999999x2x2", "1x1x" + "9" * 5000]
    for shape in shapes:
        for command in (["bounds", "--json"], ["run", "--updates", "8", "--json"]):
            out.append(Case(f"shape {command[0]} {shape[:20]!r}", "names", command + ["--shape", shape], expect="fail"))
    return out


# ------------------------------------------------------------------------------------------------ running


def prepare(case: Case, folder: Path, f: Path, store_src: Path) -> None:
    if case.setup == "store":
        shutil.copytree(store_src, folder / "s.store")
        (folder / "link.parquet").symlink_to(folder / "s.store" / "results.parquet")
    elif case.setup == "kept":
        plant_pickle(folder / "o", folder / "ran")
    elif case.setup == "record":
        shutil.copy(f / "record.json", folder / "r.json")
    elif case.setup == "machine":
        shutil.copy(f / "local.yaml", folder / "m.yaml")
        shutil.copy(f / "cycles.csv", folder / "cycles.csv")


def digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def run_case(case: Case, python: list[str], env: dict[str, str], f: Path, store_src: Path, work: Path) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="case-", dir=work))
    prepare(case, folder, f, store_src)
    protected = {p: digest(folder / p) for p in case.protect}
    argv = (["prlimit", *case.limits, "--"] if case.limits else []) + python + case.argv
    stdout = open(folder / case.stdout_file, "w") if case.stdout_file else subprocess.PIPE
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=folder,
                            env={**env, **case.env}, start_new_session=True)
    hung = False
    try:
        if case.signal_after:
            try:
                proc.wait(timeout=case.signal_after[1])
            except subprocess.TimeoutExpired:
                sig = case.signal_after[0]
                # Ctrl-C reaches the whole group, as a terminal sends it; kill sends to gupsim alone
                (os.killpg if sig == signal.SIGINT else os.kill)(proc.pid, sig)
        out, err = proc.communicate(timeout=case.timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    wall = time.monotonic() - started
    if case.stdout_file:
        stdout.close()
        out = (folder / case.stdout_file).read_bytes()
    out = (out or b"").decode(errors="replace")
    err = (err or b"").decode(errors="replace")
    kind = classify(case, proc.returncode, out, err, hung, folder, protected)
    shutil.rmtree(folder, ignore_errors=True)
    return {"name": case.name, "group": case.group, "kind": kind, "rc": proc.returncode, "wall_s": round(wall, 1),
            "stderr": err[-400:]}


def classify(case: Case, rc: int, out: str, err: str, hung: bool, folder: Path, protected: dict) -> str:
    if any(digest(folder / p) != before for p, before in protected.items()):
        return "lost"
    if case.marker and (folder / case.marker).exists():
        return "silent-wrong"  # planted code ran
    if hung:
        return "hang"
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("gupsim: warning:", "20", "0", "1"))]
    if "Traceback" in err or len(lines) > 3:
        return "traceback"
    if rc is None or rc < 0:
        return "crash"
    if rc != 0:
        said = any(ln.startswith(("gupsim: error:", "gupsim: interrupted:", "gupsim: aborted")) for ln in lines)
        return "clean" if said else "crash"
    if case.expect == "fail" or case.signal_after:
        return "silent-wrong"
    if "--json" in case.argv:
        try:
            json.loads(out, parse_constant=lambda token: (_ for _ in ()).throw(ValueError(token)))
        except ValueError:
            return "silent-wrong"  # cut, or NaN/Infinity tokens: not JSON
    if case.stdout_file and not out.strip():
        return "silent-wrong"
    return "clean"


def script_command(root: Path) -> list[str]:
    """What the installed ``gupsim`` script of ``root`` runs (pyproject.toml's ``[project.scripts]``), as a
    command of this interpreter: a guard around the command line's import is part of what is measured."""
    import tomllib

    target = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["gupsim"]
    module, function = target.split(":")
    return [sys.executable, "-c", f"import sys; sys.argv[0] = 'gupsim'; from {module} import {function}; {function}()"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout whose gupsim to run (default: this)")
    parser.add_argument("--every", type=int, default=1, help="run every Nth case of each group (stratified)")
    parser.add_argument("--jobs", type=int, default=2, help="cases at once")
    parser.add_argument("--json", type=Path, default=None, help="write every case's result here")
    parser.add_argument("--list", action="store_true", help="count the cases per group and stop")
    parser.add_argument("--only", default=None, help="only the cases whose name contains this")
    parser.add_argument("--rerun", type=Path, default=None,
                        help="only the cases a --json file of an earlier sweep classed as hang, with --timeout: on a "
                             "loaded machine a legitimate run can outlast the usual 30 s")
    parser.add_argument("--timeout", type=float, default=None, help="seconds each case may take (default: its own)")
    args = parser.parse_args()
    # Started in the background of a shell without job control, this process ignores SIGINT, and its children
    # would inherit that (an ignored signal stays ignored through exec): every Ctrl-C case would test nothing.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = Path(tempfile.mkdtemp(prefix="gupsim-hostile-"))
    f = work / "f"
    every = cases(str(f))
    if args.list:
        for group, n in collections.Counter(c.group for c in every).items():
            print(f"{group:15} {n}")
        print(f"{'all':15} {len(every)}")
        return
    chosen = [c for g in dict.fromkeys(c.group for c in every)
              for c in [c for c in every if c.group == g][::args.every]]
    if args.only:
        chosen = [c for c in chosen if args.only in c.name]
    if args.rerun:
        hung = {r["name"] for r in json.loads(args.rerun.read_text())["results"] if r["kind"] == "hang"}
        chosen = [c for c in every if c.name in hung]
    if args.timeout:
        for c in chosen:
            c.timeout = args.timeout
    env = {**os.environ, "PYTHONPATH": str(args.root.resolve()), "GUPSIM_ROOT": str(args.root.resolve()),
           "COLUMNS": "200"}
    python = script_command(args.root.resolve())
    make_fixtures(f, python, env)  # its record's run compiles the kernels once, before the timed cases
    store_src = make_store(work, python, env)
    results = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for r in pool.map(lambda c: run_case(c, python, env, f, store_src, work), chosen):
            results.append(r)
            print(f"{r['kind']:12} {r['wall_s']:6.1f}s  {r['name'][:100]}", flush=True)
    tally = collections.Counter(r["kind"] for r in results)
    print(f"\ntried {len(results)} of {len(every)} cases ({args.root}): " +
          ", ".join(f"{k} {tally.get(k, 0)}" for k in KINDS))
    if args.json:
        args.json.write_text(json.dumps({"root": str(args.root), "every": args.every, "total_cases": len(every),
                                         "tally": {k: tally.get(k, 0) for k in KINDS}, "results": results}, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
