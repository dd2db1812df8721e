builtin.module attributes {tilesync.mode_choice = {mode = "row+pdl", chosen = "row+pdl", reason = "row+pdl predicted 0.3254 ms; next row+wait_kernel 0.3359 ms; library measured 0.5180 ms", predicted_ms = {"row+pdl" = 0.32540279999999999 : f64, "row+wait_kernel" = 0.33585280000000001 : f64, stream_sync = 0.33828749999999996 : f64, "tile+pdl" = 0.44672070000000003 : f64}, tile_ms = {context = 0.0097699304874719721 : f64, out = 0.0082019169524456068 : f64, qkv = 0.062238075697969596 : f64, scores = 0.0014473971092551071 : f64, softmax = 0.00048246570308503562 : f64}, baseline = "stream_sync", baseline_ms = 0.33828800916671753 : f64, costs = {order_slowdown = 2.310000e-01 : f64, stream_gap_ms = 1.660000e-03 : f64, wait_kernel_ms = 2.090000e-03 : f64, wait_ms = 2.480000e-04 : f64}, sms = 132 : i64, device = "NVIDIA H200", library_ms = 0.5180479884147644 : f64}} {
  sync.stage @qkv {num_semaphores = 384 : i64, sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @qkv_module::@qkv, grid = array<i64: 16, 24>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 24 + d1), posts = 1>}
  sync.stage @scores {num_semaphores = 128 : i64, sync.progress = "@qkv: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 2 : i64, kernel = @scores_module::@scores, grid = array<i64: 128, 16>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 16>}
  sync.stage @softmax {num_semaphores = 128 : i64, sync.progress = "@scores: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 4 : i64, kernel = @softmax_module::@softmax, grid = array<i64: 4096, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 4, 2048>, policy = #sync.policy<Custom (d0, d1) -> (d0 floordiv 32 + d1), posts = 32>}
  sync.stage @context {num_semaphores = 16 : i64, sync.progress = "@softmax: programmatic dependent launch; @qkv: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @context_module::@context, grid = array<i64: 16, 32>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 32, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 32>}
  sync.stage @out {sync.progress = "@context: programmatic dependent launch", sync.verified = "proved", blocks_per_sm = 1 : i64, kernel = @out_module::@out, grid = array<i64: 16, 64>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 128, 64>}
  sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0 mod 16, (d0 floordiv 16 * 2 + s0) floordiv 2) forall s0 in [0, 2)
  sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d1, (d0 floordiv 16 * 2 + s0 + 16) floordiv 2) forall s0 in [0, 2)
  sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 16)
  sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d1 floordiv 4 * 512 + d0 * 32 + s1, 0) forall s0 in [0, 32), s1 in [0, 32)
  sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (s0 floordiv 2, (d1 + 64) floordiv 4) forall s0 in [0, 32)
  sync.dependency @context -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0, s0 * 2 + s1) forall s0 in [0, 16), s1 in [0, 2)
  sync.launch @qkv {priority = -4 : i64}
  sync.launch @scores {priority = -3 : i64, pdl = true}
  sync.launch @softmax {priority = -2 : i64, pdl = true}
  sync.launch @context {priority = -1 : i64, pdl = true}
  sync.launch @out {pdl = true}
}
