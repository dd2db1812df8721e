"""What is neither a pass nor runtime: models and readers that passes, the runtime, the
benchmarks and the tools all call.

* `grid` — the tiles of a grid and their row-major linear ids;
* `tile_order` — the permutation a `#sync.order` hands tiles out in;
* `stage_graph` — the one reader of a stage program: stages, dependencies and the host plan;
* `occupancy`, `wave_model` — blocks per SM, waves, predicted gains, the T rule;
* `forward_progress` — the one rule set saying what keeps a waiting block from starving its
  producer (stream order, PDL, wait-kernels, co-residency, the W rule);
* `dependency_analysis` — what the cuSync passes derive from `sync.dependency` ops;
* `simulator` — a CPU model of a stage program against adversarial block schedulers.
"""
