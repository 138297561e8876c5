"""Seed 000 Table 2: the CPU bound (eq. 1) and the network bound (eq. 2), with stated tolerances.

Tolerance: 2% on every row (the issue's target), except the CPU bound at
N = 64.  Eq. (1) rises monotonically in N, so the cycles per update at N = 64
cannot exceed those at N = 512; Table 2's 2.06 GUPS at N = 512 allows at most
174.4 cycles, hence at least 0.257 GUPS at N = 64 -- 2.7% above the printed
0.25 whatever the parameters.  The test checks that argument and holds that
row to 4%.
"""

from __future__ import annotations

import pytest

from gupsim.model.bounds import bounds, cpu_bound_gups, fit_packet_overhead
from tests.conftest import reference

TABLE2 = reference("bgl_table2_bottlenecks.csv")
TOL = 0.02


@pytest.mark.parametrize("row", TABLE2.to_dict("records"), ids=lambda r: str(r["nodes"]))
def test_table2_row(bgl, row):
    b = bounds(bgl, row["shape"])
    assert b.nodes == row["nodes"]
    assert b.alpha_over_C == pytest.approx(row["alpha_over_C"], abs=1e-12)
    assert b.network_bound_gups_paper == pytest.approx(row["network_bound_gups"], rel=TOL)
    cpu_tol = 0.04 if row["nodes"] == 64 else TOL
    assert b.cpu_bound_gups == pytest.approx(row["cpu_bound_gups"], rel=cpu_tol)


def test_table2_n64_cpu_entry_is_inconsistent_with_n512():
    n512 = TABLE2.set_index("nodes").loc[512]
    max_cycles = 512 * 700e6 / ((n512.cpu_bound_gups - 0.005) * 1e9)  # largest value that rounds to 2.06
    min_gups_64 = 64 * 700e6 / max_cycles / 1e9
    assert min_gups_64 > 0.255  # so 0.25 (which allows up to 0.255) cannot be met
    assert min_gups_64 / 0.25 - 1 > TOL


def test_the_papers_b_is_46_not_44(bgl):
    # The text says "b = 32 + 14 = 44"; the table's network column is what 46 gives.
    row = TABLE2.set_index("nodes").loc[65536]
    b = bounds(bgl, row["shape"])
    assert b.bytes_per_update_paper == 46 and b.bytes_per_update == 44
    assert abs(b.network_bound_gups_paper / row.network_bound_gups - 1) < 0.001
    assert abs(b.network_bound_gups / row.network_bound_gups - 1) > 0.04


def test_packet_overhead_in_the_machine_is_the_fit_on_the_named_row(bgl):
    row = TABLE2.set_index("nodes").loc[65536]
    fitted = fit_packet_overhead(bgl, [(65536, row.cpu_bound_gups)])
    assert bgl.cpu.packet_overhead_cycles == pytest.approx(fitted, abs=0.01)


def test_eq1_closed_form_and_limits():
    gups, cycles = cpu_bound_gups(1, 700e6, 104, 14, 54)
    assert cycles == 104 and gups == pytest.approx(700e6 / 104 / 1e9)  # sequential RandomAccess (seed 000 §5.2)
    big, _ = cpu_bound_gups(2**20, 700e6, 104, 14, 54)
    assert big == pytest.approx(2**20 * 700e6 / 172 / 1e9, rel=1e-5)


def test_bytes_per_update_override_and_link_rate_what_if(bgl):
    from gupsim.config import load_machine

    base = bounds(bgl, "64x32x32")
    assert bounds(bgl, "64x32x32", bytes_per_update=8).network_bound_gups == pytest.approx(base.network_bound_gups * 44 / 8)
    fast = bounds(load_machine("bgl", {"network.link_bytes_per_s": 350e6}), "64x32x32")
    assert fast.network_bound_gups == pytest.approx(2 * base.network_bound_gups)
    assert fast.cpu_bound_gups == base.cpu_bound_gups


def test_every_torus_record_carries_eq2_at_its_own_bytes_and_a_bound_run_stays_under_it(bgl):
    """one-packet on a 4x4x4 mesh is network bound (eq. 2 is below eq. 1 there): the simulated rate comes
    close to eq. (2) but a link model that moved more bytes than its links carry would exceed it."""
    from gupsim.model.bounds import machine_topology, network_bound_gups
    from gupsim.engines.run import make_run_config, simulate

    rec = simulate(make_run_config(machine=bgl, shape="4x4x4", algorithm="one-packet", updates_per_process=256))[1]
    topo = machine_topology(bgl, "4x4x4")
    expected = network_bound_gups(64, float(topo.edge_expansion()), bgl.network.link_bytes_per_s,
                                  rec["bytes_per_update"])
    assert rec["network_bound_gups"] == pytest.approx(expected, rel=1e-12)
    assert 0.8 < rec["network_bound_fraction"] <= 1.0
    routed = simulate(make_run_config(machine=bgl, shape="4x4x2", algorithm="routed", updates_per_process=256))[1]
    b = routed["alg_window_bytes_per_hop"]  # one hop crosses a cut (Table 4), in the steady-state window
    assert b < routed["bytes_per_update"] / routed["alg_software_hops_per_update"]  # the end's partial buckets
    assert routed["network_bound_gups"] == pytest.approx(
        network_bound_gups(32, float(machine_topology(bgl, "4x4x2").edge_expansion()),
                           bgl.network.link_bytes_per_s, b), rel=1e-12)
