"""Studies made of many runs: reproduced tables (``experiments``), their comparison with the published numbers,
run pools that keep finished runs, what-if sweeps on Dask and their results store."""
