"""Where a cold compile of the fast engine's kernels goes: per kernel, per signature, per Numba pass.

Numba compiles one machine-code specialisation of a function per tuple of argument types, so the same kernel
reached with two types (a read-only and a writable array, an int32 and an int64 scalar) is compiled, and
cached, twice.  This script runs a list of small fast runs ("families": one per algorithm and machine kind) in a
child process whose ``NUMBA_CACHE_DIR`` is a fresh empty folder, so every compile in it is real, and listens to
Numba's events (:mod:`numba.core.event`): ``numba:compile`` (one per function and signature actually compiled;
a callee is compiled inside its caller's type inference, so the events nest) and ``numba:run_pass`` (each
compiler pass).  From the nesting it reports, per function and signature, the seconds of its own compile (its
children's taken out), which function's compile or which Python line asked for it, and, for each family, the
seconds its runs spent compiling on top of the families before it.  Functions with more than one signature are
listed with the argument positions whose types differ.

Seconds are thread CPU seconds (``time.thread_time``), which a shared box's load inflates far less than wall
seconds; both are printed.  ``--isolated`` runs every family in a cache of its own instead of one after another
in one cache (what each algorithm's first run costs on a machine that never ran another).

    .venv/bin/python benchmarks/compile_profile.py                      # all families, one cache
    .venv/bin/python benchmarks/compile_profile.py --families first     # the README's first command only
    .venv/bin/python benchmarks/compile_profile.py --isolated --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

#: name -> (machine, overrides, shape, algorithm, updates per process, precision).  ``first`` is the README's
#: first command (``gupsim run``: baseline on bgl 4x4x4, 4,096 updates a process, stopping at 2%).
FAMILIES = {
    "first": ("bgl", {}, "4x4x4", "baseline", 4096, 0.02),
    "baseline": ("bgl", {"cpu.processes_per_node": 2}, "2x2x1", "baseline", 64, None),
    "routed": ("bgl", {}, "4x4x4", "routed", 256, None),
    "routed-split": ("bgl", {"cpu.processes_per_node": 2}, "2x2x1", "routed-split", 64, None),
    "one-packet": ("bgl", {}, "4x4x4", "one-packet", 256, None),
    "bgp-one-packet": ("bgp", {}, "4x4x4", "one-packet", 128, None),
    "bgp-routed": ("bgp", {}, "4x4x4", "routed", 128, None),
    "compile_all": None,
    # the run time of compiled code (compiles nothing after "first"): what a lower optimisation level costs
    "speed": ("bgl", {}, "8x8x8", "baseline", 2000, None),  # gupsim.engines.run.compile_all(): every kernel on bgl 2x2x1, two processes a node
}


def _cpu() -> float:
    return time.thread_time()


class Recorder:
    """Nested ``numba:compile`` and ``numba:run_pass`` events with their wall and CPU seconds."""

    def __init__(self):
        from numba.core import event

        recorder = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                recorder.start(ev)

            def on_end(self, ev):
                recorder.end(ev)

        self.listener = _Listener()
        self.stack: list[dict] = []
        self.compiles: list[dict] = []
        self.family = None

    def start(self, ev):
        node = {"kind": ev.kind, "wall0": time.perf_counter(), "cpu0": _cpu(), "child_wall": 0.0, "child_cpu": 0.0,
                "passes": defaultdict(float)}
        if ev.kind == "numba:compile":
            disp = ev.data["dispatcher"]
            node["function"] = f"{disp.py_func.__module__.rsplit('.', 1)[-1]}.{disp.py_func.__qualname__}"
            node["args"] = [str(a) for a in ev.data["args"]]
            parent = next((n for n in reversed(self.stack) if n["kind"] == "numba:compile"), None)
            node["asked_by"] = parent["function"] if parent else _python_caller()
        else:
            node["pass"] = ev.data["name"].split(" [")[0]
        self.stack.append(node)

    def end(self, ev):
        node = self.stack.pop()
        wall, cpu = time.perf_counter() - node["wall0"], _cpu() - node["cpu0"]
        # a pass's own time leaves out the compiles nested in it (its direct children); a compile's leaves out
        # the compiles nested anywhere below it, not its own passes
        own_wall, own_cpu = wall - node["child_wall"], cpu - node["child_cpu"]
        owner = next((n for n in reversed(self.stack) if n["kind"] == "numba:compile"), None)
        if node["kind"] == "numba:run_pass":
            if owner is not None:
                owner["passes"][node["pass"]] += own_cpu
            if self.stack and self.stack[-1]["kind"] == "numba:run_pass":  # an inlined callee's pass
                self.stack[-1]["child_wall"] += wall
                self.stack[-1]["child_cpu"] += cpu
            return
        if owner is not None:
            owner["child_wall"] += wall
            owner["child_cpu"] += cpu
            if self.stack[-1] is not owner:  # the pass of the owner's compile this compile ran inside
                self.stack[-1]["child_wall"] += wall
                self.stack[-1]["child_cpu"] += cpu
        self.compiles.append({"family": self.family, "function": node["function"], "args": node["args"],
                              "asked_by": node["asked_by"], "wall_s": wall, "cpu_s": cpu, "own_wall_s": own_wall,
                              "own_cpu_s": own_cpu, "passes": dict(node["passes"]),
                              "top": owner is None})


def _python_caller() -> str:
    """The innermost gupsim line outside Numba that asked for a top-level compile."""
    import traceback

    for frame in reversed(traceback.extract_stack()[:-3]):
        if "/gupsim/" in frame.filename and "compile_profile" not in frame.filename:
            return f"{frame.filename.split('/gupsim/')[-1]}:{frame.lineno} ({frame.name})"
    return "?"


def _run_family(name: str) -> None:
    from gupsim.config import load_machine
    from gupsim.engines.run import compile_all, make_run_config, simulate

    if FAMILIES[name] is None:
        return compile_all(), None
    machine, sets, shape, algorithm, updates, precision = FAMILIES[name]
    _, record = simulate(make_run_config(machine=load_machine(machine, sets), shape=shape, algorithm=algorithm,
                                         updates_per_process=updates, precision=precision, engine="fast"))
    return record["compile_s"], record["wall_s"]


def child(families: list[str]) -> dict:
    """In a process whose NUMBA_CACHE_DIR is empty: run the families in order, recording every compile."""
    from numba.core import caching, event

    import gupsim.engines.fast  # noqa: F401  (installs the package's cache locators first)

    if os.environ.get("GUPSIM_PROFILE_NO_WRAPPERS"):
        _drop_wrappers()
    if os.environ.get("GUPSIM_PROFILE_INLINE_ALL"):
        _inline_all()
    rec = Recorder()
    cache_io = defaultdict(float)
    for method in ("load_overload", "save_overload"):
        real = getattr(caching.Cache, method)

        def timed(self, *args, _real=real, _method=method, **kw):
            t0 = _cpu()
            try:
                return _real(self, *args, **kw)
            finally:
                cache_io[_method] += _cpu() - t0

        setattr(caching.Cache, method, timed)
    llvm = _time_llvm_steps()
    totals = {}
    with event.install_listener("numba:compile", rec.listener), \
            event.install_listener("numba:run_pass", rec.listener):
        for name in families:
            rec.family = name
            wall0, cpu0 = time.perf_counter(), _cpu()
            compile_s, run_wall_s = _run_family(name)
            totals[name] = {"wall_s": time.perf_counter() - wall0, "cpu_s": _cpu() - cpu0, "record_compile_s": compile_s,
                            "record_wall_s": run_wall_s,
                            "top_cpu_s": sum(c["cpu_s"] for c in rec.compiles if c["family"] == name and c["top"]),
                            "compile_cpu_s": sum(c["own_cpu_s"] for c in rec.compiles if c["family"] == name),
                            "compile_wall_s": sum(c["own_wall_s"] for c in rec.compiles if c["family"] == name),
                            "compiles": sum(1 for c in rec.compiles if c["family"] == name)}
    signatures, sizes = _signatures()
    return {"families": totals, "compiles": rec.compiles, "signatures": signatures, "llvm_lines": sizes,
            "cache_io_cpu_s": cache_io,
            "llvm_cpu_s": llvm}


#: The compiled functions the engine calls from Python: the only ones that need Numba's CPython wrapper.
CALLED_FROM_PYTHON = {"_loop", "link_free_list", "start_cpus", "settle_all", "starts_many", "_link_messages"}


def _drop_wrappers() -> None:
    """An experiment (``GUPSIM_PROFILE_NO_WRAPPERS=1``): compile every other function of the fast engine without
    the CPython wrapper that unboxes its arguments, which only a call from Python needs."""
    for value in _package_dispatchers():
        if value.py_func.__name__ not in CALLED_FROM_PYTHON:
            value.targetoptions["no_cpython_wrapper"] = True


def _inline_all() -> None:
    """An experiment (``GUPSIM_PROFILE_INLINE_ALL=1``): inline every function not called from Python into its
    callers at Numba's level, so that only the functions called from Python are compiled on their own."""
    for value in _package_dispatchers():
        if value.py_func.__name__ not in CALLED_FROM_PYTHON:
            value.targetoptions["inline"] = "always"


def _package_dispatchers() -> list:
    import importlib
    import pkgutil

    import gupsim.engines.fast as pkg
    from numba.core.registry import CPUDispatcher

    return [value for info in pkgutil.iter_modules(pkg.__path__)
            for value in vars(importlib.import_module(f"{pkg.__name__}.{info.name}")).values()
            if isinstance(value, CPUDispatcher)]


def _time_llvm_steps() -> dict:
    """CPU seconds of the LLVM steps inside ``native_lowering``, summed over every compile (inclusive: ``finalize``
    holds the module optimisation, the linking of the callees' modules and the machine code)."""
    from numba.core import codegen
    from llvmlite import binding as ll

    spent = defaultdict(float)
    steps = [(codegen.CPUCodeLibrary, "finalize", "finalize (all below, and linking callees)"),
             (codegen.CPUCodeLibrary, "_optimize_final_module", "module optimisation"),
             (codegen.CPUCodeLibrary, "_optimize_functions", "function optimisation"),
             (codegen.JITCodeLibrary, "_finalize_specific", "machine code (MCJIT)"),
             (codegen.CPUCodeLibrary, "add_ir_module", "IR text to LLVM module")]
    for owner, attr, label in steps:
        real = getattr(owner, attr)

        def timed(*args, _real=real, _label=label, **kw):
            t0 = _cpu()
            try:
                return _real(*args, **kw)
            finally:
                spent[_label] += _cpu() - t0

        setattr(owner, attr, timed)
    del ll
    return spent


def _signatures() -> dict:
    """Every compiled function of the fast engine's modules and the signatures it holds now."""
    import importlib
    import pkgutil

    import gupsim.engines.fast as pkg
    from numba.core.registry import CPUDispatcher

    out, sizes = {}, {}
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for attr, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                out[f"{info.name}.{value.py_func.__qualname__}"] = [[str(t) for t in sig] for sig in value.signatures]
                for cres in value.overloads.values():
                    sizes[f"{info.name}.{value.py_func.__qualname__}"] = sizes.get(
                        f"{info.name}.{value.py_func.__qualname__}", 0) + _llvm_lines(cres)
    return out, sizes


def _llvm_lines(cres) -> int:
    """Lines of LLVM IR in the optimised module of one compiled signature, its linked callees included: the code
    that signature's own optimisation and machine-code passes went over."""
    try:
        return cres.library.get_llvm_str().count("\n")
    except Exception:  # loaded from a cache: no IR kept
        return 0


def _differing(sigs: list[list[str]]) -> str:
    positions = [i for i in range(len(sigs[0])) if len({s[i] for s in sigs}) > 1]
    return "; ".join(f"arg {i}: {' | '.join(sorted({_short(s[i]) for s in sigs}))}" for i in positions)


def _short(t: str) -> str:
    return t if len(t) < 60 else _tuple_diff_hint(t)


def _tuple_diff_hint(t: str) -> str:
    return t[:40] + "..." + t[-15:]


def report(result: dict, out=sys.stdout) -> None:
    compiles = result["compiles"]
    print("\n== per family (one cache, in order: the compile each adds on top of those before it)", file=out)
    print(f"{'family':16} {'compiles':>8} {'compile CPU s':>14} {'compile wall s':>15} {'run wall s':>11} "
          f"{'run CPU s':>10} {'compile_s':>10} {'wall_s':>7}", file=out)
    for name, t in result["families"].items():
        print(f"{name:16} {t['compiles']:8d} {t['top_cpu_s']:14.1f} {t['compile_wall_s']:15.1f} "
              f"{t['wall_s']:11.1f} {t['cpu_s']:10.1f} {t['record_compile_s'] or 0:10.1f} {t['record_wall_s'] or 0:7.2f}",
              file=out)
    total = sum(t["top_cpu_s"] for t in result["families"].values())
    print(f"{'total':16} {len(compiles):8d} {total:14.1f}", file=out)
    print(f"cache save/load CPU s: {dict(result['cache_io_cpu_s'])}", file=out)

    by_fn = defaultdict(list)
    for c in compiles:
        by_fn[c["function"]].append(c)
    print("\n== per function: own CPU s of each signature compiled (largest first), who asked", file=out)
    for fn, cs in sorted(by_fn.items(), key=lambda kv: -sum(c["own_cpu_s"] for c in kv[1])):
        own = sum(c["own_cpu_s"] for c in cs)
        if own < 0.2 and len(cs) == 1:
            continue
        print(f"{fn:40} {len(cs)} sig  {own:6.1f} s  " +
              ", ".join(f"{c['own_cpu_s']:.1f} [{c['family']}; {c['asked_by']}]" for c in cs), file=out)
        if len(cs) > 1:
            print(f"{'':40} differ: {_differing([c['args'] for c in cs])}", file=out)

    passes = defaultdict(float)
    for c in compiles:
        for p, s in c["passes"].items():
            passes[p] += s
    print("\n== by Numba pass (CPU s, all compiles)", file=out)
    for p, s in sorted(passes.items(), key=lambda kv: -kv[1])[:12]:
        print(f"{p:40} {s:7.1f}", file=out)

    print(f"LLVM steps, CPU s: { {k: round(v, 1) for k, v in result['llvm_cpu_s'].items()} }", file=out)
    lines = result["llvm_lines"]
    loops = {fn: n for fn, n in lines.items() if fn.endswith("._loop")}
    print(f"\n== LLVM IR lines optimised and turned into machine code: {sum(lines.values()):,} in all; the kernels' "
          f"loops alone {sum(loops.values()):,} ({', '.join(f'{fn} {n:,}' for fn, n in loops.items())})", file=out)

    dup = {fn: sigs for fn, sigs in result["signatures"].items() if len(sigs) > 1}
    extra = sum(c["own_cpu_s"] for fn, cs in by_fn.items() if len(cs) > 1 for c in sorted(cs, key=lambda c: c["own_cpu_s"])[:-1])
    print(f"\n== functions holding more than one signature: {len(dup)} of {len(result['signatures'])}; "
          f"own CPU s of all but each one's largest signature: {extra:.1f}", file=out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help=f"comma list of {', '.join(FAMILIES)}")
    parser.add_argument("--isolated", action="store_true", help="each family in a fresh cache of its own")
    parser.add_argument("--json", help="write the raw measurements here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        json.dump(child(args.families.split(",")), open(args.child, "w"))
        return
    families = args.families.split(",")
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        parser.error(f"--families: unknown {', '.join(unknown)} (valid: {', '.join(FAMILIES)})")
    groups = [[f] for f in families] if args.isolated else [families]
    results = []
    for group in groups:
        with tempfile.TemporaryDirectory(prefix="gupsim-numba-") as cache, \
                tempfile.NamedTemporaryFile(suffix=".json") as out:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            subprocess.run([sys.executable, __file__, "--families", ",".join(group), "--child", out.name],
                           env=env, check=True)
            results.append(json.load(open(out.name)))
    for result in results:
        report(result)
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
