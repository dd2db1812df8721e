// RUN: tilesync-opt %s -p sync-verify --verify-diagnostics | filecheck %s

// Waits that run at a tile's step 0 only cover a kernel whose loads start there: this one's
// k-loop starts at step 1, so the guarded wait never runs, and sync-verify refuses the program.
// (sync-insert-post-wait no longer guards such a loop: insert_post_wait_step_late.mlir.)
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @conv1(%x: memref<?xf16>, %h: memref<?xf16>, %sems_conv1: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@conv1", "epoch"]} {
      %r, %c = sync.tile : index, index
      sync.post %sems_conv1[%r, %c] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @conv2(%h: memref<?xf16>, %y: memref<?xf16>, %sems_conv1: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@conv1", "epoch"]} {
      %r, %c = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c8 = arith.constant 8 : index
      %c36 = arith.constant 36 : index
      scf.for %kt = %c1 to %c36 step %c1 {
        %first = arith.cmpi slt, %kt, %c1 : index
        scf.if %first {
          scf.for %s1 = %c0 to %c3 step %c1 {
            %row = affine.apply affine_map<(d0, d1)[s0, s1] -> (d0 + s1 - 1)> (%r, %c)[%kt, %s1]
            %low = arith.cmpi sge, %row, %c0 : index
            %high = arith.cmpi slt, %row, %c8 : index
            %inside = arith.andi %low, %high : i1
            scf.if %inside {
              sync.wait %sems_conv1[%row, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> : memref<?xi32>
            }
          }
        }
        sync.load_point operand 0 [%r, %c] step %kt {sync.filled}
      }
      gpu.return
    }
  }
  sync.stage @conv1 {num_semaphores = 8 : i64, kernel = @k::@conv1, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 256>, policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
  sync.stage @conv2 {kernel = @k::@conv2, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 256>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 - 1, 0) forall s0 in [0, 36), s1 in [0, 3) clipped
  sync.launch @conv1 {priority = -1 : i64}
  sync.launch @conv2 {pdl = true}
}

// CHECK: verify_step_guard_invalid.mlir:[[# @LINE - 12]]:9: sync-verify: consumer tile (0, 0) of @conv2: sync.load_point operand 0, which reads producer tile (0, 0) of @conv1 (semaphore 0), but no wait on that semaphore precedes it
