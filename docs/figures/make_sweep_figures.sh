#!/usr/bin/env bash
# Regenerates the figures of docs/sweeps.md: the example sweep's scaling plot and one routed run's link load,
# bucket sizes and throttling (a few minutes on two cores).  Run from anywhere: bash docs/figures/make_sweep_figures.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
gupsim=.venv/bin/gupsim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
figures=docs/figures
# A plot refuses to replace a file drawn from another source: these are this script's own outputs.
rm -f "$figures"/sweep-{example-scaling,link-load,bucket-sizes,throttling}.{png,svg}
"$gupsim" sweep configs/experiments/example.yaml --store "$work/example.store"
"$gupsim" plot scaling "$work/example.store" --out "$figures/sweep-example-scaling.png"
"$gupsim" run --shape 4x4x4 --algorithm routed --updates 512 --links --histograms --sample-interval-s 2e-6 \
    --json --no-progress > "$work/rec.json"
"$gupsim" plot links "$work/rec.json" --z 1 --out "$figures/sweep-link-load.png"
"$gupsim" plot histograms "$work/rec.json" --out "$figures/sweep-bucket-sizes.png"
"$gupsim" plot timeseries "$work/rec.json" --out "$figures/sweep-throttling.png"
