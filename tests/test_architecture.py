"""The package's layers are a contract: import-linter's contracts hold, no import cycle, imports at module top.

The folders are the architecture (README.md, Layout): app over studies over engines over algorithms over
model, topology, config and base.  ``pyproject.toml``'s ``[tool.importlinter]`` states the layers; these
tests run it, and check what a layers contract does not say: that the graph has no cycle at all, that no
module hides an import of the package inside a function (where a cycle or an upward import would go
unseen until it runs), and that the import graph stays shallow.

Import levels (the longest chain of modules each importing the next): 12 today, with no import running
upward: ``gupsim.app.reference_docs -> app.cli -> studies.sweep -> studies.estimate -> engines.run`` over an
engine's seven (``engines.fast.engine -> fast.routed_split -> fast.routed -> fast.core -> fast.dma ->
fast.events -> fast.tables``; the reference engine's network and the run's configuration are as deep).  It
was 14 when the layers were laid out, and the engine contract took two levels off: the runner holds the
engines' registry itself, a study calibrates its estimate from rows it is handed, and the telemetry module
no longer names the simulation it is attached to.  Before the layered layout the graph held four cycles
(one of ten modules), so its depth depended on how a cycle was counted: the review that asked for the layers
counted 14 levels, with 9 imports running upward; collapsing each cycle to one module gives 12.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest

import gupsim

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = Path(gupsim.__file__).resolve().parent

#: The longest import chain measured with the engine contract in place; a change may shorten it, not lengthen it.
#: Issue 43 asks for 10: three chains inside the engines (the fast kernels, the reference network, the run's
#: configuration) are each 7 modules deep, and the studies and the command line need five levels above them.
MAX_IMPORT_LEVELS = 12

#: Modules allowed an import of the package inside a function, with the reason; none needs one today
#: (a low layer that needs something chosen above it takes it as an argument or a registry entry).
IMPORTS_INSIDE_FUNCTIONS_ALLOWED: dict[str, str] = {
    "gupsim/app/entry.py": "the script's guard imports the command line inside main, to say in one line why it "
                           "cannot load (a memory limit, NUMBA_DISABLE_JIT, a signal during the imports)",
}


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    """The package's module import graph, every import that grimp finds (inside functions included)."""
    imports = grimp.build_graph("gupsim", cache_dir=None)
    g = nx.DiGraph()
    g.add_nodes_from(imports.modules)
    g.add_edges_from((m, d) for m in imports.modules for d in imports.find_modules_directly_imported_by(m))
    return g


def _lint_imports() -> subprocess.CompletedProcess:
    """``lint-imports`` on this checkout's pyproject.toml, without import-linter's cache (a stale cache
    would hide a new import)."""
    exe = Path(sys.executable).with_name("lint-imports")
    command = [str(exe)] if exe.exists() else [shutil.which("lint-imports") or "lint-imports"]
    # the package this session imported, whether an editable install points elsewhere or not
    path = [str(PACKAGE_DIR.parent), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run([*command, "--config", str(REPO_ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
                          capture_output=True, text=True, cwd=REPO_ROOT, env=env)


def test_import_linter_contracts_hold():
    out = _lint_imports()
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 broken" in out.stdout and "KEPT" in out.stdout, out.stdout


def test_the_package_has_no_import_cycle(graph):
    """Each group of modules that import each other, in a circle or through a longer loop, is named."""
    tangles = [sorted(group) for group in nx.strongly_connected_components(graph) if len(group) > 1]
    tangles += [[m] for m, n in nx.selfloop_edges(graph)]
    assert not tangles, "modules in an import cycle: " + "; ".join(", ".join(group) for group in tangles)


def test_algorithms_never_import_an_engine(graph):
    """An algorithm talks to its engine through what it is handed, never by importing one."""
    algorithms = [m for m in graph if m == "gupsim.algorithms" or m.startswith("gupsim.algorithms.")]
    reached = set().union(*(nx.descendants(graph, m) for m in algorithms))
    assert not sorted(m for m in reached if m.startswith("gupsim.engines"))


def test_the_import_graph_is_no_deeper_than_when_the_layers_were_laid_out(graph):
    """12 modules deep with the engine contract (14 when the layers were laid out; the review before them
    counted 14 levels in a graph with cycles); a change may shorten the longest chain, not lengthen it."""
    levels = nx.condensation(graph)  # a cycle counts as one level here (the cycle test names it)
    chain = [" | ".join(sorted(levels.nodes[n]["members"])) for n in nx.dag_longest_path(levels)]
    assert len(chain) <= MAX_IMPORT_LEVELS, f"{len(chain)} levels: " + " -> ".join(chain)


#: The imports of an engine's own modules that a study may make (pyproject.toml's engine-contract contract says why).
ENGINE_INTERNALS_IMPORTED_ABOVE = {("gupsim.studies.bgp", "gupsim.engines.reference.microbench")}


def _engine_internals_imported_above(graph: nx.DiGraph) -> set[tuple[str, str]]:
    """The direct imports of a module of the fast or reference engine by a study or the command line."""
    above = [m for m in graph if m.split(".")[:2] in (["gupsim", "studies"], ["gupsim", "app"])]
    return {(m, d) for m in above for d in graph.successors(m)
            if d.split(".")[:3] in (["gupsim", "engines", "fast"], ["gupsim", "engines", "reference"])}


def test_studies_and_the_command_line_see_an_engine_only_through_its_contract(graph):
    """The import-linter contract, stated on the graph: the engines' registry, runner and contract, never a
    kernel or an engine's own module (but the one exception the contract lists)."""
    assert _engine_internals_imported_above(graph) == ENGINE_INTERNALS_IMPORTED_ABOVE
    out = _lint_imports()
    assert "Studies and the command line see an engine only through the engine contract KEPT" in out.stdout


def test_the_engine_contract_check_finds_a_study_importing_a_kernel(graph):
    """The check above must be able to fail: a study that imports a fast-engine table is found."""
    g = graph.copy()
    g.add_edge("gupsim.studies.runpool", "gupsim.engines.fast.tables")
    assert ("gupsim.studies.runpool", "gupsim.engines.fast.tables") in _engine_internals_imported_above(g)


def test_the_runner_never_branches_on_an_engine_name():
    """gupsim/engines/run.py asks the chosen engine (gupsim.engines.contract.Engine); it compares no string with
    an engine's name, so a new engine needs no branch there."""
    from gupsim.engines.run import ENGINES

    tree = ast.parse((PACKAGE_DIR / "engines" / "run.py").read_text())
    compared = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
                for side in (node.left, *node.comparators)
                if isinstance(side, ast.Constant) and side.value in ENGINES]
    assert not compared, f"run.py compares an engine's name on lines {compared}"


def _inner_package_imports(source: str) -> list[int]:
    """The lines of the imports of gupsim (absolute or relative) that sit inside a function or class body."""
    found = set()
    for scope in ast.walk(ast.parse(source)):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            found |= {node.lineno for node in ast.walk(scope) if _imports_the_package(node)}
    return sorted(found)


def _imports_the_package(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] == "gupsim"
    return isinstance(node, ast.Import) and any(a.name.split(".")[0] == "gupsim" for a in node.names)


def test_package_imports_sit_at_module_top():
    inner = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        name = path.relative_to(PACKAGE_DIR.parent).as_posix()
        if name not in IMPORTS_INSIDE_FUNCTIONS_ALLOWED:
            lines = path.read_text().splitlines()
            inner += [f"{name}:{n}: {lines[n - 1].strip()}" for n in _inner_package_imports(path.read_text())]
    assert not inner, "\n".join(inner)


def test_the_module_top_check_finds_imports_inside_functions_and_methods():
    """The check above must be able to fail: imports in a method and in a function, a relative one
    included, are found; those at module top and of other packages are not."""
    source = ("import os\nfrom gupsim.config import load_machine\nclass A:\n    def f(self):\n"
              "        from gupsim.config import load_machine\ndef g():\n    from . import sibling\n"
              "    import gupsim.engines.run\n    import json\n")
    assert _inner_package_imports(source) == [5, 7, 8]


def test_no_unused_import_redefinition_or_undefined_name():
    """Pyflakes' three defects that a refactor leaves behind (F401 unused import, F811 redefinition, F821
    undefined name), checked by ruff over the package and the tests."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "F401,F811,F821",
                           "gupsim", "tests"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
