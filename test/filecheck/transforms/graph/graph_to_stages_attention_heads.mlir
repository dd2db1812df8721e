// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// Two heads of 64 over x of 192 columns (attention as one GPU holds it under tensor
// parallelism: q, k, v narrower than x, viewed as heads and merged back). q · kᵀ and P · v
// compute the heads one under another (H·T rows); each tile is one head's, whose q, k and v
// are QKV's columns h·D .. of its three thirds, h = the tile's first row / T.
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

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = {{.*}}, graph.temps = [tensor<256x384xf16>, tensor<2x256x256xf16>, tensor<2x256x256xf16>, tensor<2x256x64xf16>]} {
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
// CHECK:      %[[KH:.*]] = arith.divui %[[M0:.*]], %{{.*}} : index
// CHECK:      tile.cp_async %{{.*}}, %B[%{{.*}}, %{{.*}}] masked
// CHECK:      gpu.func @softmax(%X: memref<512x256xf16>, %Y: memref<512x256xf16>) kernel
// P · v: v's columns 256 + 64 h of the tile's head; O holds the heads one under another.
// CHECK:      gpu.func @context(%A: memref<512x256xf16>, %B: memref<256x384xf16>, %C: memref<512x64xf16>) kernel
// CHECK:      tile.cp_async %{{.*}}, %B[%{{.*}}, %{{.*}}] masked
// The output GEMM reads O as T x C: column c is head c / 64's row, column c mod 64.
// CHECK:      gpu.func @out(%A: memref<512x64xf16>, %B: memref<192x128xf16>, %C: memref<256x192xf16>) kernel
// CHECK:      sync.load_point operand 0
// CHECK:      %[[OT:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[OBASE:.*]] = arith.muli %{{.*}}, %[[OT]] : index
// CHECK-NEXT: %[[OROW:.*]] = arith.addi %[[OBASE]], %{{.*}} : index
// CHECK-NEXT: %[[OC:.*]] = arith.remui %{{.*}}, %{{.*}} : index
// CHECK-NEXT: tile.cp_async %{{.*}}, %A[%[[OROW]], %[[OC]]] masked
// CHECK:      sync.stage @qkv {{.*}}grid = array<i64: 2, 6>
// CHECK-NEXT: sync.stage @scores {{.*}}grid = array<i64: 4, 2>
// CHECK-NEXT: sync.stage @softmax {{.*}}grid = array<i64: 128, 1>
// CHECK-NEXT: sync.stage @context {{.*}}grid = array<i64: 4, 4>
// CHECK-NEXT: sync.stage @out {{.*}}grid = array<i64: 2, 3>
// Tile row d0 of q · kᵀ is head d0 floordiv 2 (T / BM = 2 rows a head): q and k are its
// QKV column tiles (64 wide) h and 2 + h, v its 4 + h.
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0 mod 2, d0 floordiv 2 + s0) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d1, d0 floordiv 2 + s0 + 2) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 2)
// CHECK-NEXT: sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 32 + s1, 0) forall s0 in [0, 4), s1 in [0, 32)
// CHECK-NEXT: sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (s0 floordiv 2, (d0 floordiv 2 * 4 + d1 + 16) floordiv 4) forall s0 in [0, 4)
// The output GEMM's k-step s0 is head s0's columns: P · v's tile row 2 s0 + d0, its 4 tiles
// of 16 columns.
// CHECK-NEXT: sync.dependency @context -> @out operand 0 tiles (d0, d1)[s0, s1] -> (s0 * 2 + d0, s1) forall s0 in [0, 2), s1 in [0, 4)

// sync-verify proves every stage's reads against these dependencies (a head's columns read
// from another head's tiles would be refused).
// SYNC: sync.stage @qkv {{.*}}sync.verified = "proved"
// SYNC: sync.stage @scores {{.*}}sync.verified = "proved"
// SYNC: sync.stage @softmax {{.*}}sync.verified = "proved"
// SYNC: sync.stage @context {{.*}}sync.verified = "proved"
// SYNC: sync.stage @out {{.*}}sync.verified = "proved"
