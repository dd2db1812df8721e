// RUN: tilesync-opt %s -p 'sync-generate-policies,sync-select-policy{policy=auto}' | filecheck %s --check-prefix=AUTO
// RUN: tilesync-opt %s -p 'sync-generate-policies,sync-select-policy{policy=tile}' | filecheck %s --check-prefix=TILE
// RUN: tilesync-opt %s -p 'sync-generate-policies,sync-select-policy{policy=row}' | filecheck %s --check-prefix=ROW
// RUN: tilesync-opt %s -p 'sync-generate-policies,sync-select-policy{policy=strided stage=qkv}' | filecheck %s --check-prefix=STRIDED
// RUN: tilesync-opt %s -p 'sync-generate-policies,sync-select-policy{policy=strided stride=2 stage=mlp1},sync-insert-post-wait' | filecheck %s --check-prefix=STRIDE2
// RUN: tilesync-opt %s -p 'sync-generate-policies,sync-select-policy{policy=tile},sync-insert-post-wait' | filecheck %s --check-prefix=WAITS

builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @p(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @gemm2(%a: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c48 = arith.constant 48 : index
      scf.for %kt = %c0 to %c48 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
      }
      gpu.return
    }
    gpu.func @attn(%a: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      gpu.return
    }
  }
  sync.stage @mlp1 {kernel = @k::@p, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @mlp2 {kernel = @k::@gemm2, grid = array<i64: 4, 16>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
  sync.stage @qkv {kernel = @k::@p, grid = array<i64: 4, 9>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @attn {kernel = @k::@attn, grid = array<i64: 4, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 3) forall s0 in [0, 3)
}

// auto keeps what was generated.
// AUTO: sync.stage @mlp1 {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
// AUTO: sync.stage @qkv {{.*}}policy = #sync.policy<StridedSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 3>}

// TILE: sync.stage @mlp1 {{.*}}policy = #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1>}
// TILE-NEXT: sync.stage @mlp2 {{.*}}tile = array<i64: 64, 64>}
// TILE: sync.stage @qkv {{.*}}policy = #sync.policy<TileSync (d0, d1) -> (d0 * 9 + d1), posts = 1>}
// TILE-NEXT: sync.stage @attn {{.*}}tile = array<i64: 64, 64>}

// RowSync on attention is legal (it waits for the whole row, more than it reads).
// ROW: sync.stage @mlp1 {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
// ROW: sync.stage @qkv {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 9>}

// STRIDED: sync.stage @mlp1 {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
// STRIDED: sync.stage @qkv {{.*}}policy = #sync.policy<StridedSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 3>}

// A stride of 2 on the MLP: even and odd columns of a row have their own semaphore, so a
// k-step waits on the semaphore of its own parity, steps 0 and 1 (the later ones read those).
// STRIDE2:      scf.for %kt = %c0 to %c48 step %c1 {
// STRIDE2-NEXT:   %[[TWO:.*]] = arith.constant 2 : index
// STRIDE2-NEXT:   %[[EARLY:.*]] = arith.cmpi slt, %kt, %[[TWO]] : index
// STRIDE2-NEXT:   scf.if %[[EARLY]] {
// STRIDE2-NEXT:     sync.wait %sems_mlp1[%x, %kt] epoch %epoch policy #sync.policy<StridedSync (d0, d1) -> (d0 * 2 + d1 mod 2), posts = 24> unless %ready_mlp1 : memref<?xi32>
// STRIDE2:      sync.stage @mlp1 {num_semaphores = 8 : i64, {{.*}}policy = #sync.policy<StridedSync (d0, d1) -> (d0 * 2 + d1 mod 2), posts = 24>}

// TileSync with per-k-step loads: the wait is inside the loop, on the step's own tile, every
// step (the reference waited once).
// WAITS-LABEL: gpu.func @gemm2(
// WAITS:         scf.for %kt = %c0 to %c48 step %c1 {
// WAITS-NEXT:      sync.wait %sems_mlp1[%x, %kt] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1> unless %ready_mlp1 : memref<?xi32>
// WAITS-NEXT:      sync.load_point operand 0 [%x, %y] step %kt {sync.filled}
// WAITS-NEXT:    }
// WAITS-LABEL: gpu.func @attn(
// WAITS:         scf.for %s0 = %{{.*}} to %{{.*}} step %{{.*}} {
// WAITS-NEXT:      %[[COL:.*]] = affine.apply affine_map<(d0, d1)[s0] -> ((d1 + (s0 * 3)))> (%x, %y)[%s0]
// WAITS-NEXT:      sync.wait %sems_qkv[%x, %[[COL]]] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 9 + d1), posts = 1> : memref<?xi32>
