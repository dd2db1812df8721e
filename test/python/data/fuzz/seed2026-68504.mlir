// input 68504 of seed 2026: test/filecheck/transforms/sync/reorder_loads.mlir#1; integer
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @g1(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @g2(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %kt = %c0 to %c8 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
        %i = arith.addi %kt, %c1 : index
        %ia = affine.apply affine_map<(d0, d1) -> (d0 * 32768 + d1 * 64)>(%x, %kt)
        %av = memref.load %a[%ia] : memref<?xf32>
        sync.load_point operand 1 [%x, %y] step %kt
        %bv = memref.load %b[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  sync.stage @g1 {kernel = @k::@g1, grid = array<i64: 2, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 9223372036854775807, 64>}
  sync.stage @g2 {kernel = @k::@g2, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @g1 -> @g2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @g1
  sync.launch @g2 {pdl = true}
}
