// input 33557 of seed 2026: test/filecheck/transforms/sync/verify_invalid.mlir#0; duplicate-line, punctuation, delete-lines
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems@p", "epoch"]} {
    %x, %y = sync.tile : index, index
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sp: memref<?xi32>, %sq: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "sems:@q", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    scf.for %k = %c0 to %c4 step %c1 {
      %first = arith.cmpi eq, %y, %c0 : index
      scf.if %first {
        sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
  }
      %v = memref.load %a[%k] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}
