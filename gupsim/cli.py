"""The ``gupsim`` command line: ``run``, ``bounds`` and ``list``.

Every user mistake ends in one line on stderr and exit status 2; nothing a
user types produces a traceback.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from gupsim.errors import GupsimError

DEFAULTS = {"machine": "bgl", "shape": "4x4x4", "algorithm": "baseline", "updates": 4096, "seed": 0}


def _key_values(items: tuple[str, ...], what: str) -> dict[str, Any]:
    from gupsim.config import parse_key_value

    return dict(parse_key_value(item, what) for item in items)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gupsim")
def cli() -> None:
    """Simulate HPCC RandomAccess (GUPS) on torus supercomputers."""


@cli.command()
@click.option("--machine", default=DEFAULTS["machine"], show_default=True, help="machine name or YAML path")
@click.option("--shape", default=DEFAULTS["shape"], show_default=True, help="partition shape XxYxZ")
@click.option("--algorithm", default=DEFAULTS["algorithm"], show_default=True)
@click.option("--updates", default=DEFAULTS["updates"], show_default=True, type=click.IntRange(min=1),
              help="updates per process")
@click.option("--seed", default=DEFAULTS["seed"], show_default=True, type=click.IntRange(min=0))
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a machine field (repeatable)")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="algorithm option (repeatable)")
@click.option("--log2-table-size", type=click.IntRange(1, 63), default=None, help="global table size, log2 words")
@click.option("--verify", is_flag=True, help="carry real values and run HPCC's verification")
@click.option("--engine", type=click.Choice(["auto", "fast", "simpy"]), default="auto", show_default=True,
              help="fast: compiled kernels (gupsim.fast); simpy: the reference; auto: fast where a kernel exists")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def run(machine, shape, algorithm, updates, seed, sets, options, log2_table_size, verify, engine, as_json) -> None:
    """Simulate one run and print its record."""
    from gupsim.config import load_machine, parse_set_options
    from gupsim.reporting import format_record, to_json
    from gupsim.runner import make_run_config, simulate

    m = load_machine(machine, parse_set_options(sets))
    cfg = make_run_config(machine=m, shape=shape, algorithm=algorithm, updates_per_process=updates, seed=seed,
                          verify=verify, log2_table_size=log2_table_size,
                          algorithm_options=_key_values(options, "--option"), engine=engine)
    sim, record = simulate(cfg)
    if verify:
        result = sim.verify()
        record |= {"verify_errors": result.errors, "verify_table_size": result.table_size,
                   "verify_passed": result.passed}
    click.echo(to_json(record) if as_json else format_record(record))
    if verify and not record["verify_passed"]:
        sys.exit(1)


@cli.command()
@click.option("--machine", default=DEFAULTS["machine"], show_default=True, help="machine name or YAML path")
@click.option("--shape", required=True, help="partition shape XxYxZ, e.g. 64x32x32")
@click.option("--bytes-per-update", type=click.FloatRange(min=0, min_open=True), default=None,
              help="b for eq. (2) instead of the machine's wire bytes")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a machine field (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def bounds(machine, shape, bytes_per_update, sets, as_json) -> None:
    """CPU bound (eq. 1) and network bound (eq. 2) of seed 000."""
    from gupsim.bounds import bounds as compute
    from gupsim.config import load_machine, parse_set_options
    from gupsim.reporting import format_bounds, to_json

    b = compute(load_machine(machine, parse_set_options(sets)), shape, bytes_per_update).as_dict()
    click.echo(to_json(b) if as_json else format_bounds(b))


@cli.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--out", "out_dir", default="results", show_default=True, type=click.Path(file_okay=False),
              help="folder for the CSVs")
@click.option("--quick", is_flag=True, help="reduced sizes/lengths, for CI")
@click.option("--docs", "docs_path", default=None, type=click.Path(dir_okay=False),
              help="write the validation page here (default: docs/validation.md unless --quick)")
def reproduce(names, out_dir, quick, docs_path) -> None:
    """Reproduce published tables: bgl-table2, bgl-table3, ... or all."""
    from pathlib import Path

    from gupsim.config import REPO_ROOT
    from gupsim.validation import available_experiments, run_experiments, write_markdown

    wanted = available_experiments() if "all" in names else list(dict.fromkeys(names))
    comparisons = run_experiments(wanted, quick)
    for comparison in comparisons:
        path = comparison.write_csv(Path(out_dir))
        for extra in comparison.figures(Path(out_dir)):
            click.echo(f"{comparison.name}: wrote {extra}")
        click.echo(f"{comparison.name}: wrote {path} ({comparison.wall_s:.1f} s)")
        for line in comparison.summary_lines():
            click.echo(f"  {line}")
    if docs_path is None and not quick:
        docs_path = str(REPO_ROOT / "docs" / "validation.md")
    if docs_path:
        command = "gupsim reproduce " + " ".join(names) + (" --quick" if quick else "")
        write_markdown(comparisons, Path(docs_path), command)
        click.echo(f"wrote {docs_path}")
    if not quick:
        from gupsim.config import MACHINES_DIR
        from gupsim.reporting import refresh_parameter_tables

        refresh_parameter_tables(REPO_ROOT / "docs" / "model.md", MACHINES_DIR)


@cli.command(name="list")
def list_() -> None:
    """List the machines, algorithms and topologies gupsim knows."""
    from gupsim.algorithms import available_algorithms
    from gupsim.config import available_machines
    from gupsim.topology import TOPOLOGIES

    click.echo(f"machines:   {', '.join(available_machines())}")
    click.echo(f"algorithms: {', '.join(available_algorithms())}")
    click.echo(f"topologies: {', '.join(sorted(TOPOLOGIES))}")
    from gupsim.validation import available_experiments

    click.echo(f"experiments: {', '.join(available_experiments())}")


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="gupsim", standalone_mode=False)
    except GupsimError as exc:
        click.echo(f"gupsim: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("gupsim: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SystemExit:
        raise


if __name__ == "__main__":
    main()
