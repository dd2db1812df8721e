builtin.module attributes {tilesync.mode_choice = {mode = "row+pdl", chosen = "row+pdl", reason = "row+pdl predicted 0.3018 ms; next row+wait_kernel 0.3122 ms; library measured 0.3257 ms", predicted_ms = {"row+pdl" = 0.30176520000000001 : f64, "row+wait_kernel" = 0.31221520000000003 : f64, stream_sync = 0.32779179999999997 : f64, "tile+pdl" = 0.37938919999999998 : f64}, tile_ms = {context = 0.0041325190692406578 : f64, out = 0.010079314803025992 : f64, qkv = 0.077812310279360669 : f64, scores = 0.0012095177763631192 : f64, softmax = 0.00020158629606051984 : f64}, baseline = "stream_sync", baseline_ms = 0.32779200375080109 : f64, costs = {order_slowdown = 2.310000e-01 : f64, stream_gap_ms = 1.660000e-03 : f64, wait_kernel_ms = 2.090000e-03 : f64, wait_ms = 2.480000e-04 : f64}, sms = 132 : i64, device = "NVIDIA H200", library_ms = 0.32568000257015228 : f64}} {
  sync.stage @qkv {num_semaphores = 288 : i64, sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @qkv_module::@qkv, grid = array<i64: 8, 36>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 36 + d1), posts = 1>}
  sync.stage @scores {num_semaphores = 96 : i64, sync.progress = "@qkv: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 2 : i64, kernel = @scores_module::@scores, grid = array<i64: 96, 8>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>}
  sync.stage @softmax {num_semaphores = 96 : i64, sync.progress = "@scores: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 7 : i64, kernel = @softmax_module::@softmax, grid = array<i64: 3072, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 4, 1024>, policy = #sync.policy<Custom (d0, d1) -> (d0 floordiv 32 + d1), posts = 32>}
  sync.stage @context {num_semaphores = 8 : i64, sync.progress = "@softmax: programmatic dependent launch; @qkv: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @context_module::@context, grid = array<i64: 8, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 32, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
  sync.stage @out {sync.progress = "@context: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @out_module::@out, grid = array<i64: 8, 96>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 128, 64>}
  sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0 mod 8, (d0 floordiv 8 * 2 + s0) floordiv 2) forall s0 in [0, 2)
  sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d1, (d0 floordiv 8 * 2 + s0 + 24) floordiv 2) forall s0 in [0, 2)
  sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 8)
  sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d1 floordiv 4 * 256 + d0 * 32 + s1, 0) forall s0 in [0, 16), s1 in [0, 32)
  sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (s0 floordiv 2, (d1 + 96) floordiv 4) forall s0 in [0, 16)
  sync.dependency @context -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0, s0 * 2 + s1) forall s0 in [0, 24), s1 in [0, 2)
  sync.launch @qkv {priority = -4 : i64}
  sync.launch @scores {priority = -3 : i64, pdl = true}
  sync.launch @softmax {priority = -2 : i64, pdl = true}
  sync.launch @context {priority = -1 : i64, pdl = true}
  sync.launch @out {pdl = true}
}
