// RUN: tilesync-opt %s --split-input-file -p 'sync-select-policy{policy=tile},sync-insert-post-wait{probe_until_ready=true},sync-verify' | filecheck %s

// insert_post_wait_probe.mlir's pipelined GEMM2 with `probe_until_ready`: the probe of the
// row's 8 GEMM1 tiles waits for them all (`until_ready`) in front of the first prologue load,
// and the waits it guards stay (sync-verify checks them against it; they never run).
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm1(%a: memref<?xf16>, %h: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @gemm2(%h: memref<?xf16>, %y2: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      sync.load_point operand 0 [%x, %y] step %c0
      sync.load_point operand 0 [%x, %y] step %c1
      scf.for %kt = %c0 to %c8 step %c1 {
        %next = arith.addi %kt, %c2 : index
        %more = arith.cmpi ult, %next, %c8 : index
        scf.if %more {
          sync.load_point operand 0 [%x, %y] step %next
        }
      }
      gpu.return
    }
  }
  sync.stage @gemm1 {kernel = @k::@gemm1, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @gemm2 {kernel = @k::@gemm2, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @gemm1
  sync.launch @gemm2 {pdl = true}
}

// CHECK-LABEL: gpu.func @gemm2(
// CHECK:         %c8 = arith.constant 8 : index
// CHECK-NEXT:    %ready_gemm1 = sync.probe %sems_gemm1[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: 0, 8, 1>] until_ready : memref<?xi32>
// CHECK-NEXT:    sync.wait %sems_gemm1[%x, %c0] {{.*}} unless %ready_gemm1 : memref<?xi32>
// CHECK:         sync.stage @gemm2 {{.*}}sync.verified = "proved"

// -----

// Five halo rows read back to back before the tile's first load, fewer than 16 semaphores: a
// testing probe would add a round trip to the waits where it fails (no probe there), but one
// that waits replaces them, so it goes in; clipped to the producer's rows.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @conv1(%x1: memref<?xf16>, %h: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @conv2(%h: memref<?xf16>, %y: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c18 = arith.constant 18 : index
      scf.for %kt = %c0 to %c18 step %c1 {
        sync.load_point operand 0 [%r, %c] step %kt
      }
      gpu.return
    }
  }
  sync.stage @conv1 {kernel = @k::@conv1, grid = array<i64: 16, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @conv2 {kernel = @k::@conv2, grid = array<i64: 16, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 - 2, 0) forall s0 in [0, 18), s1 in [0, 5) clipped
  sync.launch @conv1
  sync.launch @conv2 {pdl = true}
}

// CHECK-LABEL: gpu.func @conv2(
// CHECK:         %ready_conv1 = sync.probe %sems_conv1[%r, %c] {{.*}} clipped_to array<i64: 16, 1> until_ready : memref<?xi32>
// CHECK-NEXT:    scf.for %kt = %c0 to %c18 step %c1 {
// CHECK:           sync.wait %sems_conv1[{{.*}}] {{.*}} unless %ready_conv1 : memref<?xi32>
// CHECK:         sync.stage @conv2 {{.*}}sync.verified = "proved"
