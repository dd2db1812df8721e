// RUN: tilesync-opt %s -p 'sync-verify{steps=1000}' --verify-diagnostics | filecheck %s

// Every consumer tile reads @p's output in the first iteration of a 65,536-iteration loop
// before any wait: the refusal names that read, found in the first iteration, not the step
// budget that running out the loop would exhaust (found by the front-door fuzzer, where it
// took 13.6 s to refuse with the default budget).
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 65536 : index
    scf.for %k = %c0 to %n step %c1 {
      %v = memref.load %a[%k] : memref<?xf32>
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_first_failure.mlir:19:7: sync-verify: consumer tile (0, 0) of @c: 'memref.load' reads operand 0 with no sync.load_point before it, which reads producer tile (0, 0) of @p (semaphore 0), but no wait on that semaphore precedes it
