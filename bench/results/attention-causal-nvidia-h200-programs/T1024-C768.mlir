builtin.module attributes {tilesync.mode_choice = {mode = "row+pdl", chosen = "row+pdl", reason = "row+pdl predicted 0.0548 ms; next row+wait_kernel 0.0653 ms; library measured 0.1254 ms", predicted_ms = {"row+pdl" = 5.484840e-02 : f64, "row+wait_kernel" = 0.065298399999999993 : f64, stream_sync = 0.07222400000000001 : f64, "tile+pdl" = 8.175540e-02 : f64}, tile_ms = {context = 0.0089262946794892144 : f64, out = 0.011321154227644856 : f64, qkv = 0.011321154227644856 : f64, scores = 0.0017417160350222856 : f64, softmax = 0.00043542900875557139 : f64}, baseline = "stream_sync", baseline_ms = 0.072223998606204987 : f64, costs = {order_slowdown = 2.310000e-01 : f64, stream_gap_ms = 1.660000e-03 : f64, wait_kernel_ms = 2.090000e-03 : f64, wait_ms = 2.480000e-04 : f64}, sms = 132 : i64, device = "NVIDIA H200", library_ms = 0.12537600100040436 : f64}} {
  sync.stage @qkv {num_semaphores = 144 : i64, sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @qkv_module::@qkv, grid = array<i64: 8, 18>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 18 + d1), posts = 1>}
  sync.stage @scores {num_semaphores = 96 : i64, sync.progress = "@qkv: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 2 : i64, kernel = @scores_module::@scores, grid = array<i64: 96, 8>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>}
  sync.stage @softmax {num_semaphores = 96 : i64, sync.progress = "@scores: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 7 : i64, kernel = @softmax_module::@softmax, grid = array<i64: 3072, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 4, 1024>, policy = #sync.policy<Custom (d0, d1) -> (d0 floordiv 32 + d1), posts = 32>}
  sync.stage @context {num_semaphores = 8 : i64, sync.progress = "@softmax: programmatic dependent launch; @qkv: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @context_module::@context, grid = array<i64: 8, 24>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 32, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 24>}
  sync.stage @out {sync.progress = "@context: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @out_module::@out, grid = array<i64: 8, 6>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 128, 64>}
  sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0 mod 8, (d0 floordiv 8 + s0) floordiv 2) forall s0 in [0, 1)
  sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d1, (d0 floordiv 8 + s0 + 12) floordiv 2) forall s0 in [0, 1)
  sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 8)
  sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d1 floordiv 2 * 256 + d0 * 32 + s1, 0) forall s0 in [0, 16), s1 in [0, 32)
  sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (s0 floordiv 2, (d1 + 48) floordiv 4) forall s0 in [0, 16)
  sync.dependency @context -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0, s0 * 2 + s1) forall s0 in [0, 12), s1 in [0, 2)
  sync.launch @qkv {priority = -4 : i64}
  sync.launch @scores {priority = -3 : i64, pdl = true}
  sync.launch @softmax {priority = -2 : i64, pdl = true}
  sync.launch @context {priority = -1 : i64, pdl = true}
  sync.launch @out {pdl = true}
}
