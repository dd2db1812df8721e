builtin.module attributes {tilesync.mode_choice = {mode = "row+pdl", chosen = "row+pdl", reason = "row+pdl predicted 0.0203 ms; next stream_sync 0.0269 ms; library measured 0.0236 ms", predicted_ms = {"fused:row+pdl" = 2.717600e-02 : f64, "fused:stream_sync" = 3.049600e-02 : f64, "fused:tile+pdl" = 3.147460e-02 : f64, "row+pdl" = 2.027200e-02 : f64, "row+wait_kernel" = 3.072200e-02 : f64, stream_sync = 2.691200e-02 : f64, "tile+pdl" = 2.903470e-02 : f64}, tile_ms = {context = 0.013113398243864493 : f64, out = 0.0028741694781072862 : f64, qkv = 0.0028741694781072862 : f64, scores = 0.0043112542171609286 : f64, softmax = 0.00071854236952682154 : f64}, baseline = "stream_sync", baseline_ms = 0.02691200003027916 : f64, costs = {order_slowdown = 2.310000e-01 : f64, stream_gap_ms = 1.660000e-03 : f64, wait_kernel_ms = 2.090000e-03 : f64, wait_ms = 2.480000e-04 : f64}, sms = 132 : i64, device = "NVIDIA H200", library_ms = 0.023615999147295952 : f64}} {
  sync.stage @qkv {sync.wait_at_probe, num_semaphores = 48 : i64, sync.verified = "proved", blocks_per_sm = 3 : i64, kernel = @qkv_module::@qkv, grid = array<i64: 8, 6>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 6 + d1), posts = 1>}
  sync.stage @scores {sync.wait_at_probe, num_semaphores = 8 : i64, sync.progress = "@qkv: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 2 : i64, kernel = @scores_module::@scores, grid = array<i64: 8, 8>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>}
  sync.stage @softmax {sync.wait_at_probe, num_semaphores = 8 : i64, sync.progress = "@scores: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 7 : i64, kernel = @softmax_module::@softmax, grid = array<i64: 256, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 4, 1024>, policy = #sync.policy<Custom (d0, d1) -> (d0 floordiv 32 + d1), posts = 32>}
  sync.stage @context {sync.wait_at_probe, num_semaphores = 8 : i64, sync.progress = "@softmax: programmatic dependent launch; @qkv: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @context_module::@context, grid = array<i64: 8, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 16, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>}
  sync.stage @out {sync.wait_at_probe, sync.progress = "@context: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 3 : i64, kernel = @out_module::@out, grid = array<i64: 8, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>}
  sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 2)
  sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d1, s0 + 2) forall s0 in [0, 2)
  sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 8)
  sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 32 + s1, 0) forall s0 in [0, 16), s1 in [0, 32)
  sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (s0 floordiv 2, (d1 + 16) floordiv 4) forall s0 in [0, 16)
  sync.dependency @context -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0, s0 * 4 + s1) forall s0 in [0, 2), s1 in [0, 4)
  sync.launch @qkv {priority = -4 : i64}
  sync.launch @scores {priority = -3 : i64, pdl = true}
  sync.launch @softmax {priority = -2 : i64, pdl = true}
  sync.launch @context {priority = -1 : i64, pdl = true}
  sync.launch @out {pdl = true}
}
