// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// A batch of two sequences of 256 tokens, two heads of 64 each, causal (torch's
// x.view(B, T, H, D).transpose(1, 2) and is_causal). Every row count doubles: QKV and O are
// B·T rows, S and P B·H·T (sequence b's head h at rows (b·H + h)·T); a tile is one sequence's
// (BM = 128: two tile rows a head), whose q, k and v are that sequence's rows of QKV.
func.func @attention(%x: tensor<2x256x192xf16>, %wqkv: tensor<384x192xf16>, %wo: tensor<192x128xf16>) -> tensor<2x256x192xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<2x256x192xf16>, tensor<384x192xf16>) -> tensor<2x256x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<2x256x384xf16>) -> (tensor<2x256x128xf16>, tensor<2x256x128xf16>, tensor<2x256x128xf16>)
  %q4 = graph.reshape %q : (tensor<2x256x128xf16>) -> tensor<2x256x2x64xf16>
  %qh = graph.transpose %q4 perm [0, 2, 1, 3] : (tensor<2x256x2x64xf16>) -> tensor<2x2x256x64xf16>
  %k4 = graph.reshape %k : (tensor<2x256x128xf16>) -> tensor<2x256x2x64xf16>
  %kh = graph.transpose %k4 perm [0, 2, 1, 3] : (tensor<2x256x2x64xf16>) -> tensor<2x2x256x64xf16>
  %v4 = graph.reshape %v : (tensor<2x256x128xf16>) -> tensor<2x256x2x64xf16>
  %vh = graph.transpose %v4 perm [0, 2, 1, 3] : (tensor<2x256x2x64xf16>) -> tensor<2x2x256x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>) -> tensor<2x2x256x256xf16>
  %p = graph.softmax %s dim -1 scale 0.125 causal : tensor<2x2x256x256xf16>
  %o = graph.matmul %p, %vh : (tensor<2x2x256x256xf16>, tensor<2x2x256x64xf16>) -> tensor<2x2x256x64xf16>
  %ot = graph.transpose %o perm [0, 2, 1, 3] : (tensor<2x2x256x64xf16>) -> tensor<2x256x2x64xf16>
  %om = graph.reshape %ot : (tensor<2x256x2x64xf16>) -> tensor<2x256x128xf16>
  %y = graph.linear %om, %wo : (tensor<2x256x128xf16>, tensor<192x128xf16>) -> tensor<2x256x192xf16>
  func.return %y : tensor<2x256x192xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = {{.*}}, graph.temps = [tensor<512x384xf16>, tensor<4x256x256xf16>, tensor<4x256x256xf16>, tensor<512x128xf16>]} {
// CHECK:      gpu.func @qkv(%A: memref<512x192xf16>, %B: memref<384x192xf16>, %C: memref<512x384xf16>) kernel
// q · kᵀ: row r of S is token r mod T of group g = r / T, head g mod H of sequence g / H.
// CHECK:      gpu.func @scores(%A: memref<512x384xf16>, %B: memref<512x384xf16>, %C: memref<1024x256xf16>) kernel
// Causal: a tile wholly above the diagonal (n0 > (m0 mod T) + BM - 1) is masked whole by the
// softmax: it computes and stores nothing, and still posts.
// CHECK:      %[[SM0:.*]] = arith.muli %{{.*}}, %[[SBM:.*]] : index
// CHECK-NEXT: %[[SN0:.*]] = arith.muli %{{.*}}, %[[SBM]] : index
// CHECK:      %[[ST:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[SPOS:.*]] = arith.remui %[[SM0]], %[[ST]] : index
// CHECK-NEXT: %[[SBM1:.*]] = arith.constant 127 : index
// CHECK-NEXT: %[[SLAST:.*]] = arith.addi %[[SPOS]], %[[SBM1]] : index
// CHECK-NEXT: %[[BELOW:.*]] = arith.cmpi ule, %[[SN0]], %[[SLAST]] : index
// CHECK-NEXT: scf.if %[[BELOW]] {
// CHECK:      sync.load_point operand 0
// CHECK:      %[[T:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[GROUP:.*]] = arith.divui %[[ROW:.*]], %[[T]] : index
// CHECK-NEXT: %[[TOKEN:.*]] = arith.remui %[[ROW]], %[[T]] : index
// CHECK-NEXT: %[[H:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[SEQ:.*]] = arith.divui %[[GROUP]], %[[H]] : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[SEQ]], %[[T]] : index
// CHECK-NEXT: %[[HEAD:.*]] = arith.remui %[[GROUP]], %[[H]] : index
// CHECK-NEXT: %[[QROW:.*]] = arith.addi %[[FIRST]], %[[TOKEN]] : index
// CHECK-NEXT: %[[QHEAD:.*]] = arith.muli %[[HEAD]], %{{.*}} : index
// CHECK-NEXT: %[[QCOL:.*]] = arith.addi %{{.*}}, %[[QHEAD]] : index
// CHECK-NEXT: tile.cp_async %{{.*}}, %A[%[[QROW]], %[[QCOL]]] masked
// k: the keys of the tile's sequence, m0 / (H·T), at its head's columns.
// CHECK:      sync.load_point operand 1
// CHECK:      %[[KGROUP:.*]] = arith.divui %{{.*}}, %[[T]] : index
// CHECK-NEXT: %[[KHEAD:.*]] = arith.remui %[[KGROUP]], %[[H]] : index
// CHECK-NEXT: %[[KSEQ:.*]] = arith.divui %[[KGROUP]], %[[H]] : index
// CHECK-NEXT: %[[KFIRST:.*]] = arith.muli %[[KSEQ]], %[[T]] : index
// CHECK-NEXT: %[[KROW:.*]] = arith.addi %[[KFIRST]], %{{.*}} : index
// CHECK:      tile.cp_async %{{.*}}, %B[%[[KROW]], %{{.*}}] masked
// CHECK:      tile.copy_out %C
// CHECK:      gpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: sync.store_point
// The causal softmax: row r is query r mod T; a key past it is -inf before the maximum, and
// its lane reads the query's column instead (S past the diagonal may be unwritten).
// CHECK:      gpu.func @softmax(%X: memref<1024x256xf16>, %Y: memref<1024x256xf16>) kernel
// CHECK:      %[[SCOLS:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[QUERY:.*]] = arith.remui %{{.*}}, %[[SCOLS]] : index
// CHECK-NEXT: %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT: %[[KEEP:.*]] = arith.cmpi ule, %[[COL:.*]], %[[QUERY]] : index
// CHECK-NEXT: %[[READ:.*]] = arith.minui %[[COL]], %[[QUERY]] : index
// CHECK-NEXT: %[[X:.*]] = memref.load %X[%{{.*}}, %[[READ]]]
// CHECK-NEXT: %[[XF:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT: %{{.*}} = arith.select %[[KEEP]], %[[XF]], %[[NEGINF]] : f32
// P · v: O is B·T x C; A (P) at row (b·H + h)·T + r mod T, b = r / T, h = n0 / D.
// CHECK:      gpu.func @context(%A: memref<1024x256xf16>, %B: memref<512x384xf16>, %C: memref<512x128xf16>) kernel
// Causal: P is zero past each query, so the tile's k-tiles end at its last row's position,
// min(T / 64, ((m0 mod T) + BM - 1) / 64 + 1); the prologue's and the loop's loads stop there.
// CHECK:      %[[CT:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[POS:.*]] = arith.remui %{{.*}}, %[[CT]] : index
// CHECK-NEXT: %[[BM1:.*]] = arith.constant 127 : index
// CHECK-NEXT: %[[LAST:.*]] = arith.addi %[[POS]], %[[BM1]] : index
// CHECK-NEXT: %[[KTILES:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[BK:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[LASTK:.*]] = arith.divui %[[LAST]], %[[BK]] : index
// CHECK-NEXT: %[[NEEDED:.*]] = arith.addi %[[LASTK]], %{{.*}} : index
// CHECK-NEXT: %[[KCOUNT:.*]] = arith.minui %[[KTILES]], %[[NEEDED]] : index
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi ult, %[[ZERO]], %[[KCOUNT]] : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK:      sync.load_point operand 0
// CHECK:      %[[PT:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[PSEQ:.*]] = arith.divui %[[PROW:.*]], %[[PT]] : index
// CHECK-NEXT: %[[PH:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[PBH:.*]] = arith.muli %[[PSEQ]], %[[PH]] : index
// CHECK-NEXT: %[[PGROUP:.*]] = arith.addi %[[PBH]], %{{.*}} : index
// CHECK-NEXT: %[[PBASE:.*]] = arith.muli %[[PGROUP]], %[[PT]] : index
// CHECK-NEXT: %[[PTOKEN:.*]] = arith.remui %[[PROW]], %[[PT]] : index
// CHECK-NEXT: %[[PADDR:.*]] = arith.addi %[[PBASE]], %[[PTOKEN]] : index
// CHECK-NEXT: tile.cp_async %{{.*}}, %A[%[[PADDR]], %{{.*}}] masked
// v: key row k of the tile's sequence, m0 / T, is QKV's row (m0 / T)·T + k.
// CHECK:      sync.load_point operand 1
// CHECK:      %[[VSEQ:.*]] = arith.divui %{{.*}}, %[[PT]] : index
// CHECK-NEXT: %[[VFIRST:.*]] = arith.muli %[[VSEQ]], %[[PT]] : index
// CHECK-NEXT: %[[VROW:.*]] = arith.addi %[[VFIRST]], %{{.*}} : index
// CHECK-NEXT: %[[VCOL:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: tile.cp_async %{{.*}}, %B[%[[VROW]], %[[VCOL]]] masked
// CHECK:      scf.for %{{.*}} = %{{.*}} to %[[KCOUNT]] step
// CHECK:      gpu.func @out(%A: memref<512x128xf16>, %B: memref<192x128xf16>, %C: memref<512x192xf16>) kernel
// CHECK:      sync.stage @qkv {{.*}}grid = array<i64: 4, 6>
// CHECK-NEXT: sync.stage @scores {{.*}}grid = array<i64: 8, 2>
// CHECK-NEXT: sync.stage @softmax {{.*}}grid = array<i64: 256, 1>
// CHECK-NEXT: sync.stage @context {{.*}}grid = array<i64: 4, 8>
// CHECK-NEXT: sync.stage @out {{.*}}grid = array<i64: 4, 3>
// Tile row d0 of q · kᵀ is group d0 floordiv 2 (two tile rows a head): sequence d0 floordiv 4,
// head (d0 floordiv 2) mod 2; q and k are that sequence's QKV tile rows (its first: 2 b),
// column tiles h and 2 + h.
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 4 * 2 + d0 mod 2, d0 floordiv 2 mod 2 + s0) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d0 floordiv 4 * 2 + d1, d0 floordiv 2 mod 2 + s0 + 2) forall s0 in [0, 1)
// CHECK-NEXT: sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0 floordiv 32, s0) forall s0 in [0, 2)
// P · v's tile (d0, d1) is sequence b = d0 floordiv 2's head h = d1 floordiv 4: P's tile row
// (b (H - 1) + h) 2 + d0 = (b H + h) 2 + d0 mod 2, in softmax blocks of 4 rows (32 a tile).
// CHECK-NEXT: sync.dependency @softmax -> @context operand 0 tiles (d0, d1)[s0, s1] -> (d0 floordiv 2 * 64 + d1 floordiv 4 * 64 + d0 * 32 + s1, 0) forall s0 in [0, 4), s1 in [0, 32)
// CHECK-NEXT: sync.dependency @qkv -> @context operand 1 tiles (d0, d1)[s0] -> (d0 floordiv 2 * 2 + s0 floordiv 2, (d1 + 16) floordiv 4) forall s0 in [0, 4)
// CHECK-NEXT: sync.dependency @context -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0, s0 * 4 + s1) forall s0 in [0, 2), s1 in [0, 4)

// Every stage's waits proved against the kernels' loads.
// SYNC:      sync.stage @qkv {{.*}}sync.verified = "proved"
// SYNC-NEXT: sync.stage @scores {{.*}}sync.verified = "proved"
// SYNC-NEXT: sync.stage @softmax {{.*}}sync.verified = "proved"
// SYNC-NEXT: sync.stage @context {{.*}}sync.verified = "proved"
// SYNC-NEXT: sync.stage @out {{.*}}sync.verified = "proved"
