// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify{limit=16}' | filecheck %s --check-prefix=SYNC

// One head of self-attention over 128 tokens of width 256 (cuSync's attention chain, with our
// kernels): QKV = x · w_qkvᵀ + b; S = q · kᵀ; P = softmax(S); O = P · v; y = O · w_outᵀ + b.
// q, k and v are read in place as column slices of the QKV temporary.
func.func @attention(%x: tensor<128x256xf16>, %wqkv: tensor<768x256xf16>, %bqkv: tensor<768xf16>, %wo: tensor<256x256xf16>, %bo: tensor<256xf16>) -> tensor<128x256xf16> {
  %qkv = graph.linear %x, %wqkv, %bqkv : (tensor<128x256xf16>, tensor<768x256xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<128x768xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>)
  %s = graph.linear %q, %k : (tensor<128x256xf16>, tensor<128x256xf16>) -> tensor<128x128xf16>
  %p = graph.softmax %s dim -1 : tensor<128x128xf16>
  %o = graph.matmul %p, %v : (tensor<128x128xf16>, tensor<128x256xf16>) -> tensor<128x256xf16>
  %y = graph.linear %o, %wo, %bo : (tensor<128x256xf16>, tensor<256x256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  func.return %y : tensor<128x256xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = {{.*}}, graph.temps = [tensor<128x768xf16>, tensor<128x128xf16>, tensor<128x128xf16>, tensor<128x256xf16>]} {
// CHECK-NOT:  func.func
// CHECK:      gpu.func @qkv(%A: memref<128x256xf16>, %B: memref<768x256xf16>, %C: memref<128x768xf16>, %bias: memref<768xf16>) kernel
// CHECK:      tile.copy_out %C[
// CHECK:      sync.store_point
// q (A) and k (B) are both the QKV temporary; k's columns are offset (by 256: sync-verify
// below proves the reads against the dependencies).
// CHECK:      gpu.func @scores(%A: memref<128x768xf16>, %B: memref<128x768xf16>, %C: memref<128x128xf16>) kernel
// CHECK:      sync.load_point operand 1
// CHECK:      tile.cp_async %{{.*}}, %B[%{{.*}}, %{{.*}}] masked swizzle {{.*}} : memref<3x128x64xf16, 3 : i64>, memref<128x768xf16>
// Its tile leaves through shared memory, whole rows at a time (staged_store).
// CHECK:      tile.copy_out %C[
// CHECK:      gpu.func @softmax(%X: memref<128x128xf16>, %Y: memref<128x128xf16>) kernel
// CHECK-NEXT: gpu.thread_id x
// CHECK-NEXT: %[[X:.*]], %[[Y:.*]] = sync.tile : index, index
// CHECK-NEXT: sync.load_point operand 0 [%[[X]], %[[Y]]]
// Unscaled: exp(x - max) (graph_to_stages_attention_scaled.mlir multiplies between).
// CHECK:      %[[D:.*]] = arith.subf
// CHECK-NEXT: math.exp %[[D]] : f32
// CHECK:      sync.store_point [%[[X]], %[[Y]]]
// CHECK-NEXT: gpu.return
// P · v with mma.sync: v is K x N (row-major B), columns from 512; 16 columns a tile (its 16 tiles
// fit a wave), an 8-stage ring, k-steps of 64.
// CHECK:      gpu.func @context(%A: memref<128x128xf16>, %B: memref<128x768xf16>, %C: memref<128x256xf16>) kernel
// CHECK:      arith.constant 512 : index
// CHECK:      tile.cp_async %{{.*}}, %B[%{{.*}}, %{{.*}}] masked swizzle {{.*}} : memref<8x64x16xf16, 3 : i64>, memref<128x768xf16>
// CHECK:      gpu.func @out(%A: memref<128x256xf16>, %B: memref<256x256xf16>, %C: memref<128x256xf16>, %bias: memref<256xf16>) kernel
// The output GEMM's (and the QKV GEMM's) 64-wide tiles leave through shared memory too.
// CHECK:      tile.copy_out %C[

// CHECK:      sync.stage @qkv {sync.wait_at_probe, graph.bind = [#graph.bind<input 0>, #graph.bind<input 1>, #graph.bind<temp 0>, #graph.bind<input 2>], kernel = @qkv_module::@qkv, grid = array<i64: 1, 12>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>}
// CHECK-NEXT: sync.stage @scores {sync.wait_at_probe, graph.bind = [#graph.bind<temp 0>, #graph.bind<temp 0>, #graph.bind<temp 1>], kernel = @scores_module::@scores, grid = array<i64: 1, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 64>}
// CHECK-NEXT: sync.stage @softmax {sync.wait_at_probe, graph.bind = [#graph.bind<temp 1>, #graph.bind<temp 2>], kernel = @softmax_module::@softmax, grid = array<i64: 32, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 4, 128>}
// CHECK-NEXT: sync.stage @context {sync.wait_at_probe, graph.bind = [#graph.bind<temp 2>, #graph.bind<temp 0>, #graph.bind<temp 3>], kernel = @context_module::@context, grid = array<i64: 1, 16>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 16, 64>}
// CHECK-NEXT: sync.stage @out {sync.wait_at_probe, graph.bind = [#graph.bind<temp 3>, #graph.bind<input 3>, #graph.bind<result 0>, #graph.bind<input 4>], kernel = @out_module::@out, grid = array<i64: 1, 4>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>}
// q: the QKV tile of k-step s0 (one 64-wide tile a step); k: the same, 256 columns on.
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d1, s0 + 4) forall s0 in [0, 4)
// A softmax block of 4 rows reads every tile of its row of S.
// CHECK-NEXT: sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 32 + s1, 0) forall s0 in [0, 2), s1 in [0, 32)
// v skips a stage: P · v reads the QKV temporary too.
// CHECK-NEXT: sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (s0 floordiv 2, (d1 + 32) floordiv 4) forall s0 in [0, 2)
// A k-step of the output GEMM (64) reads four 16-wide context tiles.
// CHECK-NEXT: sync.dependency @context -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0, s0 * 4 + s1) forall s0 in [0, 4), s1 in [0, 4)
// CHECK-NEXT: sync.launch @qkv {priority = -4 : i64}
// CHECK-NEXT: sync.launch @scores {stream = 1 : i64, priority = -3 : i64}
// CHECK-NEXT: sync.launch @softmax {stream = 2 : i64, priority = -2 : i64}
// CHECK-NEXT: sync.launch @context {stream = 3 : i64, priority = -1 : i64}
// CHECK-NEXT: sync.launch @out {stream = 4 : i64}

// The cuSync passes take the chain as it is: policies generated, PDL, every stage verified
// (under limit=16 the softmax's 32 blocks on the grid's boundary, every other stage's tiles all:
// the context stage, checked against the softmax's sampled tiles, is no more than "boundary").
// SYNC:      sync.stage @qkv {{.*}}sync.verified = "proved"{{.*}}policy = #sync.policy<TileSync
// SYNC:      sync.stage @scores {{.*}}sync.progress = "@qkv: programmatic dependent launch", sync.verified = "proved"
// SYNC:      sync.stage @softmax {{.*}}sync.progress = "@scores: programmatic dependent launch", sync.verified = "boundary"
// SYNC:      sync.stage @context {{.*}}sync.progress = "@softmax: programmatic dependent launch; @qkv: programmatic dependent launch", sync.verified = "boundary"
// SYNC:      sync.stage @out {{.*}}sync.progress = "@context: programmatic dependent launch", sync.verified = "proved"
// SYNC:      sync.launch @out {pdl = true}
