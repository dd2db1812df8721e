// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait | filecheck %s

// GPT-3 MLP, per-k-step loads: RowSync reads the row's one semaphore at every k-step, so the
// wait runs at step 0 only; operand 1 (W2) is produced by no stage: its hook goes, no wait.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm1(%a: memref<?xf32>, %c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @gemm2(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c48 = arith.constant 48 : index
      scf.for %kt = %c0 to %c48 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
        sync.load_point operand 1 [%x, %y] step %kt
      }
      sync.store_point [%x, %y]
      gpu.return
    }
  }
  sync.stage @gemm1 {kernel = @k::@gemm1, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @gemm2 {kernel = @k::@gemm2, grid = array<i64: 4, 16>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
}

// CHECK-LABEL: gpu.func @gemm1(%a: memref<?xf32>, %c: memref<?xf32>, %sems_gemm1: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@gemm1", "epoch"]} {
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    sync.post %sems_gemm1[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 48> : memref<?xi32>
// CHECK-NEXT:    gpu.return
// CHECK-LABEL: gpu.func @gemm2(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %sems_gemm1: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@gemm1", "epoch"]} {
// CHECK:         scf.for %kt = %c0 to %c48 step %c1 {
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi slt, %kt, %[[ONE]] : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        sync.wait %sems_gemm1[%x, %kt] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 48> : memref<?xi32>
// CHECK-NEXT:      }
// CHECK-NEXT:      sync.load_point operand 0 [%x, %y] step %kt {sync.filled}
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.return
// CHECK:       sync.stage @gemm1 {num_semaphores = 4 : i64, {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
// CHECK-NEXT:  sync.stage @gemm2 {kernel = @k::@gemm2, {{.*}}tile = array<i64: 64, 64>}

// -----

// Whole-tile load under TileSync (forced by a second, tile-for-tile consumer): the consumer
// waits on each of the 8 tiles of its row, in a loop over the forall range.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @p(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @row(%a: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      gpu.return
    }
    gpu.func @tile(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 1 [%x, %y]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @row {kernel = @k::@row, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @tile {kernel = @k::@tile, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @p -> @row operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @p -> @tile operand 1 tiles (d0, d1) -> (d0, d1)
}

// CHECK-LABEL: gpu.func @row(
// CHECK:         %[[LO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[HI:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[ST:.*]] = arith.constant 1 : index
// CHECK-NEXT:    scf.for %s0 = %[[LO]] to %[[HI]] step %[[ST]] {
// CHECK-NEXT:      sync.wait %sems_p[%x, %s0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> : memref<?xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.load_point operand 0 [%x, %y] {sync.filled}
// CHECK-LABEL: gpu.func @tile(%a: memref<?xf32>, %b: memref<?xf32>, %sems_p: memref<?xi32>, %epoch: i32)
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    sync.wait %sems_p[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> : memref<?xi32>
// CHECK-NEXT:    sync.load_point operand 1 [%x, %y] {sync.filled}

// -----

// Attention: head y reads Q, K, V tiles y, y + 3, y + 6; StridedSync gives them one
// semaphore, so a single wait (on the representative s0 = 0, tile (x, y)) covers all three.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @qkv(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @attn(%qkv: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      gpu.return
    }
  }
  sync.stage @qkv {kernel = @k::@qkv, grid = array<i64: 4, 9>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @attn {kernel = @k::@attn, grid = array<i64: 4, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 3) forall s0 in [0, 3)
}

// CHECK-LABEL: gpu.func @attn(
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    sync.wait %sems_qkv[%x, %y] epoch %epoch policy #sync.policy<StridedSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 3> : memref<?xi32>
// CHECK-NEXT:    sync.load_point operand 0 [%x, %y] {sync.filled}
// CHECK-NOT:     sync.wait

// -----

// Conv2DTileSync: @c3 reads runs of 2 producer column tiles, so runs of 2 share a semaphore;
// @c2 reads runs of 4, so its wait loop over s0 in [0, 4) steps by 2: two waits for the four
// tiles read, one for @c3's two.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @c1(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c2(%a: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      gpu.return
    }
    gpu.func @c3(%a: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      gpu.return
    }
  }
  sync.stage @c1 {kernel = @k::@c1, grid = array<i64: 8, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @c2 {kernel = @k::@c2, grid = array<i64: 8, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @c3 {kernel = @k::@c3, grid = array<i64: 8, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @c1 -> @c2 operand 0 tiles (d0, d1)[s0] -> (d0, d1 * 4 + s0) forall s0 in [0, 4)
  sync.dependency @c1 -> @c3 operand 0 tiles (d0, d1)[s0] -> (d0, d1 * 2 + s0) forall s0 in [0, 2)
}

// CHECK-LABEL: gpu.func @c2(
// CHECK:         %[[LO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[HI:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[ST:.*]] = arith.constant 2 : index
// CHECK-NEXT:    scf.for %s0 = %[[LO]] to %[[HI]] step %[[ST]] {
// CHECK-NEXT:      %[[COL:.*]] = affine.apply
// CHECK-NEXT:      sync.wait %sems_c1[%x, %[[COL]]] epoch %epoch policy #sync.policy<Conv2DTileSync (d0, d1) -> (d0 * 4 + d1 floordiv 2), posts = 2> : memref<?xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.load_point operand 0 [%x, %y] {sync.filled}
// CHECK-LABEL: gpu.func @c3(
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    %[[COL:.*]] = affine.apply affine_map<(d0, d1) -> ((d1 * 2))> (%x, %y)
// CHECK-NEXT:    sync.wait %sems_c1[%x, %[[COL]]] epoch %epoch policy #sync.policy<Conv2DTileSync (d0, d1) -> (d0 * 4 + d1 floordiv 2), posts = 2> : memref<?xi32>
// CHECK-NEXT:    sync.load_point operand 0 [%x, %y] {sync.filled}

// -----

// Two produced operands (P·V): both get their waits, on their own producers' arrays; a
// kernel shared by two stages is cloned per stage; a kernel of no dependency keeps no hook
// and gets no parameter.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      sync.load_point operand 1 [%x, %y]
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @lonely(%a: memref<?xf32>) kernel {
      %t = sync.tile : index
      sync.load_point operand 0 [%t]
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @softmax {kernel = @k::@gemm, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @v_proj {kernel = @k::@gemm, grid = array<i64: 8, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @pv {kernel = @k::@gemm, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @alone {kernel = @k::@lonely, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64>}
  sync.dependency @softmax -> @pv operand 0 tiles (d0, d1) -> (d0, 0)
  sync.dependency @v_proj -> @pv operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 8)
}

// CHECK-LABEL: gpu.func @gemm(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %sems_softmax: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@softmax", "epoch"]} {
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    sync.post %sems_softmax[%x, %y] epoch %epoch
// CHECK-NEXT:    gpu.return
// CHECK-LABEL: gpu.func @gemm_pv(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %sems_softmax: memref<?xi32>, %sems_v_proj: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@softmax", "sems:@v_proj", "epoch"]} {
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    sync.wait %sems_softmax[%x, %[[ZERO]]] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>
// CHECK-NEXT:    sync.load_point operand 0 [%x, %y] {sync.filled}
// CHECK-NEXT:    %[[S0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    sync.wait %sems_v_proj[%[[S0]], %y] epoch %epoch policy #sync.policy<Custom (d0, d1) -> (d1), posts = 8>
// CHECK-NEXT:    sync.load_point operand 1 [%x, %y] {sync.filled}
// CHECK-NEXT:    gpu.return
// CHECK-LABEL: gpu.func @gemm_v_proj(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %sems_v_proj: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@v_proj", "epoch"]} {
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    sync.post %sems_v_proj[%x, %y]
// CHECK-LABEL: gpu.func @lonely(%a: memref<?xf32>) kernel {
// CHECK-NEXT:    %t = sync.tile : index
// CHECK-NEXT:    gpu.return
// CHECK:       sync.stage @softmax {num_semaphores = 4 : i64, kernel = @k::@gemm,
// CHECK-NEXT:  sync.stage @v_proj {num_semaphores = 2 : i64, kernel = @k::@gemm_v_proj,
// CHECK-NEXT:  sync.stage @pv {kernel = @k::@gemm_pv,
// CHECK-NEXT:  sync.stage @alone {kernel = @k::@lonely,
