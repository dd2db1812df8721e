// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s

// Attention with its scores scaled by 1/sqrt(64) (softmax(q · kᵀ / 8)): the softmax kernel
// multiplies each x - max by the scale before its exp; nothing else of the chain changes.
func.func @attention(%x: tensor<64x64xf16>, %wqkv: tensor<192x64xf16>, %wo: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<64x64xf16>, tensor<192x64xf16>) -> tensor<64x192xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<64x192xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>)
  %s = graph.linear %q, %k : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %p = graph.softmax %s dim -1 scale 0.125 : tensor<64x64xf16>
  %o = graph.matmul %p, %v : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %y = graph.linear %o, %wo : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}

// CHECK:      gpu.func @scores(
// CHECK-NOT:  1.250000e-01
// CHECK:      gpu.func @softmax(%X: memref<64x64xf16>, %Y: memref<64x64xf16>) kernel
// CHECK:      %[[S:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT: %[[D0:.*]] = arith.subf %{{.*}}, %[[M:.*]] : f32
// CHECK-NEXT: %[[E0:.*]] = arith.mulf %[[D0]], %[[S]] : f32
// CHECK-NEXT: math.exp %[[E0]] : f32
// CHECK-NEXT: %[[D1:.*]] = arith.subf %{{.*}}, %[[M]] : f32
// CHECK-NEXT: %[[E1:.*]] = arith.mulf %[[D1]], %[[S]] : f32
// CHECK-NEXT: math.exp %[[E1]] : f32
// CHECK:      gpu.func @context(
// CHECK-NOT:  1.250000e-01
// CHECK:      sync.stage @softmax {sync.wait_at_probe, graph.bind = [#graph.bind<temp 1>, #graph.bind<temp 2>], kernel = @softmax_module::@softmax
