"""Where the fast engine's time goes, by compiled function: a sampling profile of the Numba kernels.

cProfile and pyinstrument see one call into a kernel and nothing inside it,
so this script uses Linux ``perf`` with its software clock (no hardware
counters needed, and the development VM has none).  perf cannot name
JIT-compiled code by itself; it reads ``/tmp/perf-PID.map``, a text file of
``start size name`` lines.  Numba knows every function it compiled and where
LLVM put it, so the script writes that map itself:

1. a warm-up run of the same case with a few updates loads (or compiles)
   every kernel it needs;
2. ``perf record -e cpu-clock`` is attached to this process for the measured
   run only, so loading, compiling and the warm-up are not in the samples;
3. Numba's execution engine knows every symbol it loaded, from its on-disk
   cache or freshly compiled, and its address; each function's range ends
   where the next one starts, and that is the map;
4. ``perf report`` is read back and the samples are summed per function
   (``gupsim.engines.fast.core.hop_on``); samples outside the kernels (NumPy, the
   interpreter, the kernel's page faults) are one row, ``(not compiled)``.

LLVM inlines small helpers into their callers, so a row is a function and
what LLVM inlined into it (``settle`` and ``take`` show up inside
``hop_on``, ``push`` inside whoever schedules).  The records are those of an
ordinary run: profiling changes nothing in the model.

Run::

    .venv/bin/python benchmarks/profile_fast.py --shape 32x32x16 --algorithm routed --updates 1024
    .venv/bin/python benchmarks/profile_fast.py --shape 16x16x16 --algorithm one-packet --updates 256 --out /tmp/p.csv

Needs ``perf`` on the PATH (``linux-perf`` / ``linux-tools``) and permission
to profile one's own processes (``kernel.perf_event_paranoid`` <= 2).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

NOT_COMPILED = "(not compiled)"

_REPORT_LINE = re.compile(r"^\s*([0-9.]+)%\s+(?:\[[^\]]*\]\s+)?(.+?)\s*$")


def numba_name(symbol: str) -> str | None:
    """``gupsim.engines.fast.core.hop_on`` from a Numba symbol (``_ZN6gupsim4fast4core6hop_onB3v73...``), else None.

    Numba mangles a function as ``_ZN`` followed by its qualified name's parts, each a decimal length and
    that many characters, then its ABI tags and argument types; CPython and cfunc wrappers are prefixed."""
    if not symbol.startswith("_ZN"):
        return None
    rest, parts = symbol[3:], []
    while rest[:1].isdigit():
        digits = re.match(r"\d+", rest).group()
        n = int(digits)
        parts.append(rest[len(digits):len(digits) + n])
        rest = rest[len(digits) + n:]
    if not parts or parts[0] == "cpython":
        return None
    return ".".join(parts)


def parse_report(text: str) -> dict[str, float]:
    """Percent of all samples per function, from ``perf report --stdio --sort sym`` (no call graphs).

    Numba symbols are summed by function (one per compiled signature); everything else is
    :data:`NOT_COMPILED`."""
    shares: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = _REPORT_LINE.match(line)
        if not m:
            continue
        name = numba_name(m.group(2)) or NOT_COMPILED
        shares[name] = shares.get(name, 0.0) + float(m.group(1))
    return shares


def write_perf_map(path: Path) -> int:
    """Write perf's map of every Numba function loaded in this process; return how many.

    Numba's execution engine knows every symbol it loaded, from its on-disk cache or freshly compiled, and
    where LLVM put it; a function's range ends where the next one starts."""
    import numba
    from numba.core.registry import cpu_target

    # No public API lists the loaded symbols; if a Numba release moves these internals, say so in one line.
    try:
        engine = cpu_target.target_context.codegen()._engine
        names = list(engine._defined_symbols)
    except AttributeError as exc:
        raise SystemExit(f"profile_fast: this Numba ({numba.__version__}) no longer exposes its loaded symbols "
                         f"where the script reads them ({exc}); the profile needs updating for it") from None
    starts: dict[int, str] = {}
    for name in names:
        if name.startswith("_ZN") and not name.startswith("_ZN08NumbaEnv"):  # functions, not environments
            address = engine.get_function_address(name)
            if address:
                starts[address] = name
    ordered = sorted(starts)
    with open(path, "w") as f:
        for here, nxt in zip(ordered, ordered[1:] + [ordered[-1] + 4096] if ordered else []):
            f.write(f"{here:x} {nxt - here:x} {starts[here]}\n")
    return len(ordered)


def run_configs(args: argparse.Namespace) -> tuple:
    """The warm-up run and the measured run, checked (a bad shape, machine or algorithm: ``GupsimError``)."""
    from gupsim.config import load_machine
    from gupsim.engines.run import choose_engine
    from gupsim.engines.run import make_run_config
    from gupsim.topology import parse_shape

    parse_shape(args.shape)  # otherwise checked only when the run builds its torus
    m = load_machine(args.machine)
    # the same shape (a small partition is a mesh, compiled apart), a few updates: the kernels loaded or compiled
    warm, config = (make_run_config(machine=m, shape=args.shape, algorithm=args.algorithm, updates_per_process=n,
                                    seed=args.seed, engine="fast") for n in (min(args.updates, 4), args.updates))
    choose_engine(config)  # the case must have a compiled kernel
    return warm, config


def profile(warm, config, frequency: int) -> dict:
    """Run ``config`` once under perf (after ``warm``, which loads its kernels); shares per function and the
    run's figures."""
    from gupsim.engines.run import simulate

    t0 = time.perf_counter()
    simulate(warm)
    warmup_s = time.perf_counter() - t0
    pid = os.getpid()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(frequency), "-p", str(pid),
                                "-o", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(0.5)  # perf attaches before the run starts
            c0 = time.process_time()
            _, record = simulate(config)
            cpu_s = time.process_time() - c0
        finally:  # a run that fails must not leave perf recording
            rec.send_signal(signal.SIGINT)
            _, err = rec.communicate()
        if rec.returncode not in (0, -signal.SIGINT) or not data.exists():
            last = (err.decode().strip().splitlines() or ["no message"])[-1]
            raise SystemExit(f"profile_fast: perf record failed: {last}")
        perf_map = Path(f"/tmp/perf-{pid}.map")
        try:
            functions = write_perf_map(perf_map)
            report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "sym",
                                     "-g", "none"], capture_output=True, text=True, check=True).stdout
        finally:
            perf_map.unlink(missing_ok=True)
    return {"shares": parse_report(report), "functions": functions, "cpu_s": cpu_s, "warmup_s": warmup_s,
            "events": record["events"], "gups": record["gups"]}


def table(shares: dict[str, float]) -> list[tuple[str, float, float]]:
    """Rows (function, % of all samples, % of the compiled code's samples), largest first."""
    compiled = sum(v for k, v in shares.items() if k != NOT_COMPILED) or 1.0
    rows = sorted(shares.items(), key=lambda kv: -kv[1])
    return [(k, v, (v / compiled * 100 if k != NOT_COMPILED else float("nan"))) for k, v in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="16x16x16")
    ap.add_argument("--algorithm", default="routed")
    ap.add_argument("--updates", type=int, default=256, help="updates per process")
    ap.add_argument("--machine", default="bgl")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--frequency", type=int, default=499, help="samples per second")
    ap.add_argument("--top", type=int, default=20, help="rows to print")
    ap.add_argument("--out", type=Path, help="also write every row as CSV")
    args = ap.parse_args()
    from gupsim.base.errors import GupsimError

    try:
        warm, config = run_configs(args)
    except GupsimError as exc:
        ap.exit(2, f"profile_fast: {exc}\n")
    if shutil.which("perf") is None:
        ap.exit(2, "profile_fast: `perf` is not on the PATH (install linux-perf / linux-tools)\n")
    try:
        result = profile(warm, config, args.frequency)
    except GupsimError as exc:  # what only building the run finds (a machine too large for memory, ...)
        ap.exit(2, f"profile_fast: {exc}\n")
    rows = table(result["shares"])
    print(f"{args.algorithm} {args.shape} x{args.updates}: {result['cpu_s']:.1f} CPU s profiled, "
          f"{result['events']:,} events ({result['events'] / result['cpu_s'] / 1e6:.2f} M per CPU s), "
          f"GUPS {result['gups']:.4g}; {result['functions']} compiled functions mapped; "
          f"warm-up (loading or compiling the kernels) {result['warmup_s']:.0f} s")
    print("| function | % of samples | % of compiled |\n|---|---:|---:|")
    for name, share, of_compiled in rows[:args.top]:
        shown = "–" if name == NOT_COMPILED else f"{of_compiled:.1f}"
        print(f"| `{name}` | {share:.1f} | {shown} |")
    if args.out:
        import csv

        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["function", "percent_of_samples", "percent_of_compiled"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
