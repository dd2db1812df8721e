// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// Two heads of 64 over x of 192 columns (attention as one GPU holds it under tensor
// parallelism: q, k, v narrower than x, viewed as heads and merged back). q · kᵀ computes the
// heads one under another (H·T rows of S and P): a tile is one head's, whose q and k are QKV's
// columns h·D .. of its first two thirds, h = the tile's first row / T. P · v computes O as
// T x C with the heads side by side: its tile is head n0 / D's, reading that head's rows of P.
func.func @attention(%x: tensor<256x192xf16>, %wqkv: tensor<384x192xf16>, %wo: tensor<192x128xf16>) -> tensor<256x192xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<256x192xf16>, tensor<384x192xf16>) -> tensor<256x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<256x384xf16>) -> (tensor<256x128xf16>, tensor<256x128xf16>, tensor<256x128xf16>)
  %q4 = graph.reshape %q : (tensor<256x128xf16>) -> tensor<256x2x64xf16>
  %qh = graph.transpose %q4 perm [1, 0, 2] : (tensor<256x2x64xf16>) -> tensor<2x256x64xf16>
  %k4 = graph.reshape %k : (tensor<256x128xf16>) -> tensor<256x2x64xf16>
  %kh = graph.transpose %k4 perm [1, 0, 2] : (tensor<256x2x64xf16>) -> tensor<2x256x64xf16>
  %v4 = graph.reshape %v : (tensor<256x128xf16>) -> tensor<256x2x64xf16>
  %vh = graph.transpose %v4 perm [1, 0, 2] : (tensor<256x2x64xf16>) -> tensor<2x256x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x256x64xf16>, tensor<2x256x64xf16>) -> tensor<2x256x256xf16>
  %p = graph.softmax %s dim -1 scale 0.125 : tensor<2x256x256xf16>
  %o = graph.matmul %p, %vh : (tensor<2x256x256xf16>, tensor<2x256x64xf16>) -> tensor<2x256x64xf16>
  %ot = graph.transpose %o perm [1, 0, 2] : (tensor<2x256x64xf16>) -> tensor<256x2x64xf16>
  %om = graph.reshape %ot : (tensor<256x2x64xf16>) -> tensor<256x128xf16>
  %y = graph.linear %om, %wo : (tensor<256x128xf16>, tensor<192x128xf16>) -> tensor<256x192xf16>
  func.return %y : tensor<256x192xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = {{.*}}, graph.temps = [tensor<256x384xf16>, tensor<2x256x256xf16>, tensor<2x256x256xf16>, tensor<256x128xf16>]} {
// CHECK:      gpu.func @qkv(%A: memref<256x192xf16>, %B: memref<384x192xf16>, %C: memref<256x384xf16>) kernel
// q · kᵀ over H·T = 512 rows. A (q): row r is token r mod 256 of head r / 256, at column
// 64 h; B (k): the tile's head, m0 / 256, at columns 128 + 64 h.
// CHECK:      gpu.func @scores(%A: memref<256x384xf16>, %B: memref<256x384xf16>, %C: memref<512x256xf16>) kernel
// CHECK:      sync.load_point operand 0
// CHECK:      %[[T:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[QH:.*]] = arith.divui %[[QROW:.*]], %[[T]] : index
// CHECK-NEXT: %[[QTOKEN:.*]] = arith.remui %[[QROW]], %[[T]] : index
// CHECK-NEXT: %[[QHEAD:.*]] = arith.muli %[[QH]], %{{.*}} : index
// CHECK-NEXT: %[[QCOL:.*]] = arith.addi %{{.*}}, %[[QHEAD]] : index
// CHECK-NEXT: tile.cp_async %{{.*}}, %A[%[[QTOKEN]], %[[QCOL]]] masked
// CHECK:      sync.load_point operand 1
// CHECK:      tile.cp_async %{{.*}}, %B[%{{.*}}, %{{.*}}] masked
// CHECK:      gpu.func @softmax(%X: memref<512x256xf16>, %Y: memref<512x256xf16>) kernel
// P · v: O is T x C; A (P) at the rows of the tile's head, n0 / 64, v in place.
// CHECK:      gpu.func @context(%A: memref<512x256xf16>, %B: memref<256x384xf16>, %C: memref<256x128xf16>) kernel
// CHECK:      sync.load_point operand 0
// CHECK:      %[[PT:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[PBASE:.*]] = arith.muli %{{.*}}, %[[PT]] : index
// CHECK-NEXT: %[[PROW:.*]] = arith.addi %[[PBASE]], %{{.*}} : index
// CHECK-NEXT: tile.cp_async %{{.*}}, %A[%[[PROW]], %{{.*}}] masked
// The output GEMM reads O as it is.
// CHECK:      gpu.func @out(%A: memref<256x128xf16>, %B: memref<192x128xf16>, %C: memref<256x192xf16>) kernel
// CHECK:      sync.stage @qkv {{.*}}grid = array<i64: 2, 6>
// CHECK-NEXT: sync.stage @scores {{.*}}grid = array<i64: 4, 2>
// CHECK-NEXT: sync.stage @softmax {{.*}}grid = array<i64: 128, 1>
// CHECK-NEXT: sync.stage @context {{.*}}grid = array<i64: 2, 8>
// CHECK-NEXT: sync.stage @out {{.*}}grid = array<i64: 2, 3>
// Tile row d0 of q · kᵀ is head d0 floordiv 2 (T / BM = 2 rows a head): q and k are its
// QKV column tiles (64 wide) h and 2 + h.
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0 mod 2, d0 floordiv 2 + s0) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d1, d0 floordiv 2 + s0 + 2) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 2)
// Tile column d1 of P · v (16 wide) is head d1 floordiv 4: its P rows are that head's tile
// row d0, softmax blocks 64 h + 32 d0 ..; v and O are as with one head.
// CHECK-NEXT: sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d1 floordiv 4 * 64 + d0 * 32 + s1, 0) forall s0 in [0, 4), s1 in [0, 32)
// CHECK-NEXT: sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (s0 floordiv 2, (d1 + 16) floordiv 4) forall s0 in [0, 4)
// CHECK-NEXT: sync.dependency @context -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0, s0 * 4 + s1) forall s0 in [0, 2), s1 in [0, 4)

// sync-verify proves every stage's reads against these dependencies (a head's columns read
// from another head's tiles would be refused).
// SYNC: sync.stage @qkv {{.*}}sync.verified = "proved"
// SYNC: sync.stage @scores {{.*}}sync.verified = "proved"
// SYNC: sync.stage @softmax {{.*}}sync.verified = "proved"
// SYNC: sync.stage @context {{.*}}sync.verified = "proved"
// SYNC: sync.stage @out {{.*}}sync.verified = "proved"
