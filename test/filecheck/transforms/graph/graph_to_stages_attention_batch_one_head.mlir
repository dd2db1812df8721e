// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// One head over a batch of three sequences, causal, q, k, v used as they are (B x T x C):
// q is read in place (row r of S is row r of QKV); k and v at the tile's sequence's rows.
func.func @attention(%x: tensor<3x128x128xf16>, %wqkv: tensor<192x128xf16>, %wo: tensor<128x64xf16>) -> tensor<3x128x128xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<3x128x128xf16>, tensor<192x128xf16>) -> tensor<3x128x192xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<3x128x192xf16>) -> (tensor<3x128x64xf16>, tensor<3x128x64xf16>, tensor<3x128x64xf16>)
  %s = graph.linear %q, %k : (tensor<3x128x64xf16>, tensor<3x128x64xf16>) -> tensor<3x128x128xf16>
  %p = graph.softmax %s dim -1 causal : tensor<3x128x128xf16>
  %o = graph.matmul %p, %v : (tensor<3x128x128xf16>, tensor<3x128x64xf16>) -> tensor<3x128x64xf16>
  %y = graph.linear %o, %wo : (tensor<3x128x64xf16>, tensor<128x64xf16>) -> tensor<3x128x128xf16>
  func.return %y : tensor<3x128x128xf16>
}

// CHECK:      graph.temps = [tensor<384x192xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<384x64xf16>]
// CHECK:      gpu.func @scores(%A: memref<384x192xf16>, %B: memref<384x192xf16>, %C: memref<384x128xf16>) kernel
// CHECK:      gpu.func @softmax(%X: memref<384x128xf16>, %Y: memref<384x128xf16>) kernel
// CHECK:      arith.cmpi ule
// P is B·T x T, read as it is.
// CHECK:      gpu.func @context(%A: memref<384x128xf16>, %B: memref<384x192xf16>, %C: memref<384x64xf16>) kernel
// CHECK:      sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d0 + d1, s0 + 1) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 32 + s1, 0) forall s0 in [0, 2), s1 in [0, 32)
// CHECK-NEXT: sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (d0 + s0 floordiv 2, (d1 + 8) floordiv 4) forall s0 in [0, 2)

// SYNC:      sync.stage @qkv {{.*}}sync.verified = "proved"
// SYNC-NEXT: sync.stage @scores {{.*}}sync.verified = "proved"
// SYNC-NEXT: sync.stage @softmax {{.*}}sync.verified = "proved"
// SYNC-NEXT: sync.stage @context {{.*}}sync.verified = "proved"
// SYNC-NEXT: sync.stage @out {{.*}}sync.verified = "proved"
