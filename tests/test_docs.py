"""Documentation that is generated from the code must match it."""

from __future__ import annotations

import re

from gupsim.config import MACHINES_DIR, REPO_ROOT
from gupsim.reporting import machine_parameter_table


def test_model_doc_parameter_table_matches_the_machine_file():
    text = (REPO_ROOT / "docs" / "model.md").read_text()
    block = re.search(r"<!-- machine-parameters:bgl .*?-->\n(.*?)\n<!-- /machine-parameters -->", text, re.S)
    assert block, "docs/model.md lost its generated parameter table"
    # regenerate with: python -c "from gupsim.reporting import *; from gupsim.config import *;
    #   refresh_parameter_tables(REPO_ROOT / 'docs/model.md', MACHINES_DIR)"  (gupsim reproduce does it too)
    assert block.group(1).strip() == machine_parameter_table(MACHINES_DIR / "bgl.yaml").strip()


def test_parameter_table_has_every_field_with_a_source():
    table = machine_parameter_table(MACHINES_DIR / "bgl.yaml")
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert len(cells) == 3, row
        if cells[0] not in ("`name`", "`description`"):
            assert cells[2], f"no source for {row}"
    assert "`network.link_bytes_per_s`" in table and "`cpu.route_hop_cycles`" in table
