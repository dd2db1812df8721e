// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

// Kernel hooks: where a kernel loads a produced operand and where its output tile is stored.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm(%a: memref<?xf16>, %b: memref<?xf16>, %c: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      sync.load_point operand 1 [%x, %y]
      scf.for %k = %c0 to %c4 step %c1 {
        sync.load_point operand 0 [%x, %y] step %k
        sync.load_point operand 1 [%x, %y] step %k {note = "B"}
      }
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @copy(%a: memref<?xf32>) kernel {
      %t = sync.tile : index
      sync.load_point operand 0 [%t]
      sync.store_point [%t] {last}
      gpu.return
    }
  }
  // A stage carries the policy that sync-generate-policies chose for its output.
  sync.stage @g1 {kernel = @k::@gemm, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
}

// CHECK:      sync.load_point operand 1 [%x, %y]{{$}}
// CHECK:      scf.for %k = %c0 to %c4 step %c1 {
// CHECK-NEXT:   sync.load_point operand 0 [%x, %y] step %k{{$}}
// CHECK-NEXT:   sync.load_point operand 1 [%x, %y] step %k {note = "B"}
// CHECK-NEXT: }
// CHECK-NEXT: sync.store_point [%x, %y]{{$}}
// CHECK:      sync.load_point operand 0 [%t]{{$}}
// CHECK-NEXT: sync.store_point [%t] {last}
// CHECK:      sync.stage @g1 {kernel = @k::@gemm, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
