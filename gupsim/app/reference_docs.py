"""Reference pages generated from the code, so the documentation is never written twice.

The documentation site (``mkdocs.yml``, ``docs/``) describes every machine
field, every algorithm option, every command and the run record.  All of them
already exist in the code: the frozen pydantic models of :mod:`gupsim.config`
(with their ``Field`` descriptions and bounds), each registered algorithm's
``Options`` model, the click commands of :mod:`gupsim.app.cli`, and the summary
rows of :mod:`gupsim.app.reporting`.  This module turns them into Markdown.

A page asks for a block with a marker comment, e.g.
``<!-- gupsim:config-reference -->``; the mkdocs hook in
``docs/_hooks/gupsim_pages.py`` replaces each marker with :func:`render`'s
output at build time.  A field added to a model, an algorithm registered or a
command added therefore appears on the site without touching the docs, and
``tests/test_docs.py`` checks that every leaf field does.

The tutorial's example outputs (``gupsim bounds``, a default ``gupsim run``,
a what-if table across link rates, a quick reproduction) are blocks too,
computed when the site is built, so no simulated number is typed by hand.
"""

from __future__ import annotations

import re
import sys
import typing
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gupsim.base.errors import GupsimError
from gupsim.config.kinds import machine_kinds
from gupsim.model.run_config import RunConfig
from gupsim.algorithms.base import algorithm_class, available_algorithms
from gupsim.app.cli import cli
from gupsim.app.reporting import OTHER_RATES, SUMMARY_ROWS
from gupsim.config import MACHINES_DIR
from gupsim.config.loading import available_machines
from gupsim.app.reporting import machine_parameter_table
from gupsim.model.bounds import bounds
from gupsim.config.loading import load_machine
from gupsim.config.overrides import parse_set_options
from gupsim.app.reporting import format_bounds
from gupsim.studies.validation import run_experiments
from gupsim.engines.run import make_run_config, simulate
from gupsim.app.first_run import RUN_PRECISION
from gupsim.studies.headline import Headline, headline_record
from gupsim.config import REPO_ROOT

#: Unit suffixes of field names (the project's naming rule: units live in the name).
UNIT_SUFFIXES = (
    ("_bytes_per_s", "bytes/s"),
    ("_per_s", "1/s"),
    ("_hz", "Hz"),
    ("_ns", "ns"),
    ("_us", "µs"),
    ("_s", "s"),
    ("_cycles", "cycles"),
    ("_bytes", "bytes"),
    ("_chunks", "chunks"),
    ("_nodes", "nodes"),
)


def unit_of(name: str) -> str:
    """The unit a field's name declares (``link_bytes_per_s`` -> ``bytes/s``), or ``""``."""
    for suffix, unit in UNIT_SUFFIXES:
        if name.endswith(suffix):
            return unit
    return ""


def _type_name(annotation: object) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a!r}`".replace("'", '"') for a in typing.get_args(annotation))
    text = str(annotation).replace("typing.", "")
    return text.replace("|", "\\|")


def _bounds(field: FieldInfo) -> str:
    symbols = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    parts = []
    for meta in field.metadata:
        for attr, symbol in symbols.items():
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{symbol} {value}")
    return ", ".join(parts)


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        return f"`{field.default_factory()!r}`"
    return f"`{field.default!r}`"


def _nested_models(field: FieldInfo) -> list[type[BaseModel]]:
    """The section models of a field (``NetworkConfig``; ``SomeConfig | None``; a union of variants)."""
    candidates = (field.annotation, *typing.get_args(field.annotation))
    return [ann for ann in candidates if isinstance(ann, type) and issubclass(ann, BaseModel)]


def _nested_model(field: FieldInfo) -> type[BaseModel] | None:
    models = _nested_models(field)
    return models[0] if models else None


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def fields_table(model: type[BaseModel], prefix: str = "", skip: tuple[str, ...] = ()) -> str:
    """One Markdown row per leaf field of ``model`` (nested sections by dotted name)."""
    rows = ["| field | type | unit | allowed | default | description |", "|---|---|---|---|---|---|"]
    rows += _field_rows(model, prefix, skip)
    return "\n".join(rows)


def _field_rows(model: type[BaseModel], prefix: str, skip: tuple[str, ...]) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        nested = _nested_model(field)
        if nested is not None:
            rows += _field_rows(nested, f"{prefix}{name}.", ())
            continue
        rows.append(
            f"| `{prefix}{name}` | {_type_name(field.annotation)} | {unit_of(name)} | {_bounds(field)} "
            f"| {_default(field)} | {_cell(field.description or '')} |"
        )
    return rows


def _doc_summary(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return _cell(doc.split("\n\n", 1)[0]) if doc else ""


def config_reference() -> str:
    """Every machine field of every machine kind (``kind:`` in the YAML), section by section."""
    out: list[str] = []
    for kind, model in machine_kinds().items():
        out += ["" if out else "", f"## Machine kind `{kind}`", "", f"**`{model.__name__}`**: {_doc_summary(model)}",
                "", fields_table(model, skip=tuple(n for n, f in model.model_fields.items()
                                                   if _nested_model(f) or n == "source_path"))]
        for name, field in model.model_fields.items():
            for nested in _nested_models(field):
                out += ["", f"### `{name}` ({kind}: `{nested.__name__}`)", "", f"{_doc_summary(nested)}", "",
                        fields_table(nested, prefix=f"{name}.")]
    return "\n".join(out)


def run_reference() -> str:
    """The fields of one run (:class:`gupsim.model.run_config.RunConfig`) besides the machine."""
    return f"**`RunConfig`**: {_doc_summary(RunConfig)}\n\n" + fields_table(RunConfig, skip=("machine",))


def algorithm_options_reference() -> str:
    """Each registered algorithm: its summary and the fields of its ``Options`` model."""
    out = []
    for name in available_algorithms():
        cls = algorithm_class(name)
        # The module docstring explains the algorithm (one algorithm per module).
        module = sys.modules[cls.__module__]
        out += [f"### `{name}`", "", f"{_doc_summary(module)} (`{cls.__module__}.{cls.__qualname__}`)", ""]
        if cls.Options.model_fields:
            out += [fields_table(cls.Options), ""]
        else:
            out += ["No options.", ""]
    return "\n".join(out).rstrip()


def cli_reference() -> str:
    """``--help`` of every ``gupsim`` command, as click prints it."""
    import click


    out = []
    for name in sorted(cli.commands):
        command = cli.commands[name]
        parent = click.Context(cli, info_name="gupsim", **cli.context_settings)
        text = command.get_help(click.Context(command, info_name=name, parent=parent))
        out += [f"### `gupsim {name}`", "", "```text", text, "```", ""]
    return "\n".join(out).rstrip()


def record_reference() -> str:
    """The summary rows of a run record, with the labels ``gupsim run`` prints."""
    rows = ["| record key | printed as |", "|---|---|",
            "| `gups_steady`, `gups_ci_low`, `gups_ci_high` | GUPS, with its 95% interval (the headline rate) |",
            "| `precision`, `precision_target` | precision: the interval's half-width against the target |"]
    rows += [f"| `{key}` | {_cell(label)} (`--all-rates`) |" for key, label, _ in OTHER_RATES]
    rows += [f"| `{key}` | {_cell(label)} |" for key, label, _ in SUMMARY_ROWS]
    return "\n".join(rows)


def machines_reference() -> str:
    """Every machine file's values and source comments (one table per machine)."""
    out = []
    for name in available_machines():
        out += [f"### `{name}`", "", f"`gupsim/data/machines/{name}.yaml`", "",
                machine_parameter_table(MACHINES_DIR / f"{name}.yaml"), ""]
    return "\n".join(out).rstrip()


def bounds_example(shape: str, machine: str = "bgl", override: str = "") -> str:
    """``gupsim bounds`` output for one shape (and an optional ``--set``), computed now."""
    sets = [override] if override else []
    text = format_bounds(bounds(load_machine(machine, parse_set_options(sets)), shape).as_dict())
    flag = f" --set {override}" if override else ""
    return f"```text\n$ gupsim bounds --machine {machine} --shape {shape}{flag}\n{text}\n```"


def reproduce_example(name: str) -> str:
    """What ``gupsim reproduce NAME --quick`` prints, computed now (fast experiments only): the CSV it wrote
    (into a scratch folder, shown as the default ``results/``; its wall time varies) and each column's line."""
    import tempfile


    lines = [f"$ gupsim reproduce {name} --quick"]
    with tempfile.TemporaryDirectory() as scratch:
        for comparison in run_experiments([name], quick=True):
            written = comparison.write_csv(Path(scratch))
            lines.append(f"{comparison.name}: wrote results/{written.name} ({comparison.wall_s:.1f} s)")
            lines += [f"  {line}" for line in comparison.summary_lines()]
    return "```text\n" + "\n".join(lines) + "\n```"


def run_example() -> str:
    """What ``gupsim run`` with no options prints, run now by the installed command line.

    The command runs in a process of its own, as in a reader's shell, so that its defaults are the command's
    own (nothing here restates them) and the wall time and peak memory it prints are a standalone run's,
    not the site build's.  Those three lines vary from machine to machine; every other line is deterministic.
    """
    import subprocess

    # --progress none: the lines a pipe would get on stderr are not the page's
    proc = subprocess.run([sys.executable, "-c", "from gupsim.app.cli import main; main()", "run", "--progress", "none"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise GupsimError(f"run-example: `gupsim run` failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return f"```text\n$ gupsim run\n{proc.stdout.rstrip()}\n```"


def whatif_example(shape: str, algorithm: str, updates: str, rates: str, machine: str = "bgl") -> str:
    """``gupsim bounds`` and ``gupsim run`` at several link rates (``rates``: comma-separated), computed now.

    One table row per rate: both bounds of seed 000, the simulated ``gups``, that rate as a share of the
    lower bound and the busiest link's utilisation.  Runs use ``gupsim run``'s defaults otherwise (seed 0,
    engine ``auto``), so the loop shown above the table reproduces every number in it.
    """
    values = rates.split(",")
    loop = [f"for rate in {' '.join(values)}; do",
            f"  gupsim bounds --machine {machine} --shape {shape} --set link_bytes_per_s=$rate",
            f"  gupsim run --machine {machine} --shape {shape} --algorithm {algorithm} --updates {updates} "
            f"--set link_bytes_per_s=$rate",
            "done"]
    rows = ["| `link_bytes_per_s` | network bound, eq. (2) [GUPS] | CPU bound, eq. (1) [GUPS] | bottleneck "
            "| simulated `gups` | `gups` / lower bound | `link_utilisation_max` |",
            "|---|---|---|---|---|---|---|"]
    short = False
    for rate in values:
        m = load_machine(machine, parse_set_options([f"link_bytes_per_s={rate}"]))
        b = bounds(m, shape)
        _, raw = simulate(make_run_config(machine=m, shape=shape, algorithm=algorithm,
                                          updates_per_process=int(updates), precision=RUN_PRECISION))
        record = headline_record(raw)
        lower = min(b.network_bound_gups, b.cpu_bound_gups)
        # Same number formats as `gupsim bounds` (4 significant digits) and `gupsim run` (gups to 4 decimals).
        rows.append(f"| {rate} | {b.network_bound_gups:.4g} | {b.cpu_bound_gups:.4g} | {b.bottleneck} "
                    f"| {record['gups']:.4f} | {record['gups'] / lower:.3f} | {record['link_utilisation_max']:.3f} |")
        short |= not Headline.of(record).met
    out = "```bash\n" + "\n".join(loop) + "\n```\n\n" + "\n".join(rows)
    if short:
        # The record flags it; say so beside the table rather than let the rates pass for steady-state ones.
        out += ("\n\nA row's GUPS is not within its precision target (its interval is wider, or the run was "
                "too short for one), so treat these rates as indicative.")
    return out


def optional_link(path: str, up: str = "0") -> str:
    """A link to ``docs/<path>`` once a page exists there, else its name (pages other branches add)."""
    if (REPO_ROOT / "docs" / path).exists():
        return f"[`docs/{path}`]({'../' * int(up)}{path})"
    return f"`docs/{path}` (not in this tree yet)"


BLOCKS: dict[str, Callable[..., str]] = {
    "config-reference": config_reference,
    "run-reference": run_reference,
    "algorithm-options": algorithm_options_reference,
    "cli-reference": cli_reference,
    "record-keys": record_reference,
    "machines": machines_reference,
    "bounds-example": bounds_example,
    "reproduce-example": reproduce_example,
    "run-example": run_example,
    "whatif-example": whatif_example,
    "optional-link": optional_link,
}

MARKER = re.compile(r"<!-- gupsim:([\w-]+)((?:\s+\w+=[^\s>]+)*)\s*-->")


def render(markdown: str, where: str = "page") -> str:
    """Replace every ``<!-- gupsim:NAME key=value ... -->`` marker by its generated block."""

    def substitute(match: re.Match[str]) -> str:
        name, args = match.group(1), match.group(2).split()
        if name not in BLOCKS:
            raise GupsimError(f"{where}: unknown generated block '{name}' (valid: {', '.join(BLOCKS)})")
        kwargs = dict(arg.split("=", 1) for arg in args)
        return BLOCKS[name](**kwargs)

    return MARKER.sub(substitute, markdown)


def render_file(path: Path) -> str:
    return render(Path(path).read_text(), str(path))
