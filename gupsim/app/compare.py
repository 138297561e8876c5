"""``gupsim compare``: two records, two stores, or one store grouped by a field (:mod:`gupsim.studies.compare`).

    gupsim compare base.json links2x.json
    gupsim compare results/a.store results/b.store
    gupsim compare results/example.store --by var.link_bytes_per_s
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gupsim.base.errors import GupsimError
from gupsim.studies.compare import Comparison, Side, grouped, what_changed
from gupsim.studies.headline import headline_record, headline_table
from gupsim.studies.record_check import check_rows
from gupsim.studies.store import load_record, store_table


def rows_of(source: str) -> list[dict[str, Any]]:
    """The ok runs of a store folder, or the one run of a JSON record (``gupsim run --json``), as headline rows."""
    path = Path(source)
    if path.is_dir():
        table = store_table(path)
        check_rows(table, path)
        table = headline_table(table)
        ok = table[table["status"].eq("ok")] if "status" in table else table
        if ok.empty:
            raise GupsimError(f"{source}: no finished (ok) runs to compare")
        return ok.to_dict("records")
    return [headline_record(load_record(path))]


@click.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--by", "field", default=None, metavar="FIELD",
              help="one store: compare the groups of this field (e.g. var.link_bytes_per_s), each against the "
                   "first, point by point, seeds pooled")
def compare(sources: tuple[str, ...], field: str | None) -> None:
    """Compare the GUPS of two records or stores (A is the reference), or a store's groups (--by).

    Prints each side's rate with its 95% interval, the difference and the ratio with theirs (delta method),
    and a verdict naming the reference's limiting resource."""
    if field is not None:
        if len(sources) != 1:
            raise GupsimError(f"--by {field}: give one results store, not {len(sources)} sources")
        table = store_table(sources[0])
        check_rows(table, sources[0])
        table = headline_table(table)
        ok = table[table["status"].eq("ok")] if "status" in table else table
        try:
            comparisons = grouped(ok, field)
        except ValueError as exc:
            raise GupsimError(f"--by: {exc}") from None
        if not comparisons:
            raise GupsimError(f"{sources[0]}: {field} has one value among the ok runs: nothing to compare")
        for c in comparisons:
            click.echo(c.verdict())
        return
    if len(sources) != 2:
        raise GupsimError(f"give two records or stores to compare (got {len(sources)}), or one store and --by FIELD")
    a_rows, b_rows = rows_of(sources[0]), rows_of(sources[1])
    change = what_changed(a_rows, b_rows)
    c = Comparison(Side.of(f"A {Path(sources[0]).name}", a_rows), Side.of(f"B {Path(sources[1]).name}", b_rows),
                   change=f"B vs A ({change})")
    for line in c.lines():
        click.echo(line)
