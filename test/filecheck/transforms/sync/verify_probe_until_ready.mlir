// RUN: tilesync-opt %s --split-input-file -p sync-verify --verify-diagnostics | filecheck %s

// A probe `until_ready` waited for every semaphore it names: the loads after it need no wait
// of their own. Here rows d0 - 1 .. d0 + 1 of the producer, clipped to its 4 rows (the first
// and last tiles probe a row outside it, which nobody posts and nothing waits for).
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %ready = sync.probe %sp[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0 + s0 - 1, 0)>] over [array<i64: 0, 3, 1>] clipped_to array<i64: 4, 1> until_ready : memref<?xi32>
    scf.for %k = %c0 to %c3 step %c1 {
      sync.load_point operand 0 [%x, %y] step %k
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0 + s0 - 1, 0) forall s0 in [0, 3) clipped
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: sync.stage @c {sync.progress = "@p: programmatic dependent launch", sync.verified = "proved"

// -----

// The same probe without `until_ready` only tests: the loads are not waited for.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %ready = sync.probe %sp[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0 + s0 - 1, 0)>] over [array<i64: 0, 3, 1>] clipped_to array<i64: 4, 1> : memref<?xi32>
    scf.for %k = %c0 to %c3 step %c1 {
      sync.load_point operand 0 [%x, %y] step %k
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0 + s0 - 1, 0) forall s0 in [0, 3) clipped
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_probe_until_ready.mlir:{{[0-9]+}}:7: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 0, which reads producer tile (0, 0) of @p (semaphore 0), but no wait on that semaphore precedes it

// -----

// A probe `until_ready` of rows d0 and d0 + 1 only: the load of row d0 + 2 is not covered.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %ready = sync.probe %sp[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0 + s0, 0)>] over [array<i64: 0, 2, 1>] clipped_to array<i64: 4, 1> until_ready : memref<?xi32>
    scf.for %k = %c0 to %c3 step %c1 {
      sync.load_point operand 0 [%x, %y] step %k
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0 + s0, 0) forall s0 in [0, 3) clipped
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_probe_until_ready.mlir:{{[0-9]+}}:7: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 0, which reads producer tile (2, 0) of @p (semaphore 2), but no wait on that semaphore precedes it
