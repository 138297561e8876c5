"""The SimPy reference engine: the readable model docs/model.md teaches (torus links, BG/P's DMA, switched
fabrics, the CPU as cycles spent), the microbenchmarks of seed 002 and telemetry."""
