"""What both engines share: a run's configuration, the HPCC stream and table layout, the node's cost model,
cache and DRAM models, the bucket-size model, packet format and the analytic bounds of seed 000 §3."""
