"""The Cray X1 and T3E machines (seed 004): every number cites its source or says it is assumed, free or a fit,
the X1's node is one torus endpoint of 4 MSPs, and HPCC's original algorithm and one-packet run on both."""

from __future__ import annotations

import re

import pytest

from gupsim.config import MACHINES_DIR, load_machine
from gupsim.engines.run import make_run_config, simulate

CRAYS = ("cray-x1", "cray-t3e")
#: What a comment must say of a number: where it comes from (a seed line, a source) or that it is a choice.
PROVENANCE = re.compile(r"seed 00\d|assumed|free|fit|\(P\)|\(S\)|\(W\)|HPCC 0\.5b|Dunigan|Scott|van der Steen")


@pytest.mark.parametrize("name", CRAYS)
def test_every_number_says_where_it_comes_from(name):
    load_machine(name)
    for line in (MACHINES_DIR / f"{name}.yaml").read_text().splitlines():
        key, _, rest = line.partition(":")
        value, _, comment = rest.partition("#")
        if re.fullmatch(r"[\d.e+-]+", value.strip()):
            assert PROVENANCE.search(comment), f"{name}: no source for: {line.strip()}"


def test_the_x1_node_holds_four_msps_on_a_2d_torus():
    x1 = load_machine("cray-x1")
    assert x1.cpu.processes_per_node == 4 and x1.network.topology == "torus"
    sim, rec = simulate(make_run_config(machine=x1, shape="2x2x1", algorithm="alltoall", updates_per_process=300,
                                        log2_table_size=16, verify=True, algorithm_options={"bucket_size": 8}))
    assert rec["processes"] == 16 and rec["nodes"] == 4 and rec["topology"] == "torus"
    assert sim.verify().errors == 0


@pytest.mark.parametrize("name,shape,algorithm", [("cray-x1", "2x2x1", "one-packet"), ("cray-t3e", "2x2x2", "alltoall"),
                                                  ("cray-t3e", "2x2x2", "one-packet")])
def test_hpccs_algorithms_run_and_verify(name, shape, algorithm):
    options = {"bucket_size": 8} if algorithm == "alltoall" else {}
    sim, rec = simulate(make_run_config(machine=name, shape=shape, algorithm=algorithm, updates_per_process=300,
                                        log2_table_size=16, verify=True, algorithm_options=options))
    assert rec["updates_applied"] == sim.total_updates and sim.verify().errors == 0
