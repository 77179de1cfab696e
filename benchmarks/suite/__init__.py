"""The benchmark suite behind benchmarks/run.py: runs the area scripts, normalizes their JSON into
common rows (rows.py) through one adapter per area (areas/, found by registry.py), prints tables,
compares with an earlier run and draws charts. Nothing here imports pygpukit: the suite reads
results on any machine; only the scripts it runs need a GPU."""
