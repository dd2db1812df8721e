// RUN: tilesync-opt %s -p 'sync-select-policy{policy=tile},sync-insert-post-wait,sync-verify' | filecheck %s

// Two consumers of one GEMM's rows, each reading a row's 8 tiles a k-step at a time: @marked
// is `sync.wait_at_probe`, so its probe waits (`until_ready`); @plain's only tests (@marked keeps
// the kernel, @plain gets a clone of its own).
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
      %c8 = arith.constant 8 : index
      scf.for %kt = %c0 to %c8 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
      }
      gpu.return
    }
  }
  sync.stage @gemm1 {kernel = @k::@gemm1, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @marked {kernel = @k::@gemm2, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, sync.wait_at_probe}
  sync.stage @plain {kernel = @k::@gemm2, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @gemm1 -> @marked operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @gemm1 -> @plain operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @gemm1
  sync.launch @marked {pdl = true}
  sync.launch @plain
}

// CHECK-LABEL: gpu.func @gemm2(
// CHECK:         %ready_gemm1 = sync.probe %sems_gemm1[%x, %y] {{.*}} over [array<i64: 0, 8, 1>] until_ready : memref<?xi32>
// CHECK-LABEL: gpu.func @gemm2_plain(
// CHECK:         %ready_gemm1 = sync.probe %sems_gemm1[%x, %y] {{.*}} over [array<i64: 0, 8, 1>] : memref<?xi32>
// CHECK:       sync.stage @marked {{.*}}sync.verified = "proved"
// CHECK:       sync.stage @plain {{.*}}sync.verified = "proved"
