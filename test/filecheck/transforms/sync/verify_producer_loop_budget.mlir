// RUN: tilesync-opt %s -p 'sync-select-policy{policy=tile},sync-insert-post-wait{probe=false},sync-verify{steps=1000}' | filecheck %s

// @mid consumes @first a k-step at a time over 256 steps and produces for @last. Its proof
// runs the k-loop unrolled as a consumer (a wait and a load point each step) and once, abstractly,
// as a producer (no post in it; unrolled there too, the proof took more than 1000 steps).
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @first(%a: memref<?xf16>, %h: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @mid(%h: memref<?xf16>, %o: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c256 = arith.constant 256 : index
      scf.for %kt = %c0 to %c256 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
        %a = arith.addi %kt, %c1 : index
        %b = arith.muli %a, %a : index
        %c = arith.addi %b, %kt : index
        %d = arith.muli %c, %c : index
      }
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @last(%o: memref<?xf16>, %y2: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      gpu.return
    }
  }
  sync.stage @first {kernel = @k::@first, grid = array<i64: 4, 256>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @mid {kernel = @k::@mid, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @last {kernel = @k::@last, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @first -> @mid operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 256)
  sync.dependency @mid -> @last operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @first
  sync.launch @mid {pdl = true}
  sync.launch @last {pdl = true}
}

// CHECK: sync.stage @first {{.*}}sync.verified = "proved"
// CHECK: sync.stage @mid {{.*}}sync.verified = "proved"
// CHECK: sync.stage @last {{.*}}sync.verified = "proved"
