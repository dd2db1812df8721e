// RUN: tilesync-opt %s --split-input-file -p 'sync-use-pdl,sync-verify' --verify-diagnostics | filecheck %s
// Class 2 of issue 13: PDL makes a launch a dependent of the previous launch on its own stream
// only. A consumer of two producers on two streams cannot be ordered after both by PDL;
// sync-use-pdl once moved it to each producer's stream in turn (the last won), erased its
// wait-kernels, and sync-verify proved the result, which deadlocks.

// Its wait-kernels stay, made to work (start flags, the wait-kernel function): proved.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @q(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@q", "epoch"]} {
      %t = sync.tile : index
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sp: memref<?xi32>, %sq: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "sems:@q", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sp[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.wait %sq[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.load_point operand 0 [%t]
      sync.load_point operand 1 [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @q {kernel = @k::@q, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.dependency @q -> @c operand 1 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @q {stream = 1 : i64}
  sync.wait_kernel @p {stream = 2 : i64}
  sync.wait_kernel @q {stream = 2 : i64}
  sync.launch @c {stream = 2 : i64}
}
// CHECK:      gpu.func @p({{.*}}) kernel attributes {sync.args = ["sems:@p", "epoch", "start_flag"]}
// CHECK:      gpu.func @q({{.*}}) kernel attributes {sync.args = ["sems:@q", "epoch", "start_flag"]}
// CHECK:      gpu.func @tilesync_wait_kernel(
// CHECK:      sync.stage @c {sync.progress = "@p: wait-kernel; @q: wait-kernel", sync.verified = "proved"
// CHECK:      sync.launch @p
// CHECK-NEXT: sync.launch @q {stream = 1 : i64}
// CHECK-NEXT: sync.wait_kernel @p {stream = 2 : i64}
// CHECK-NEXT: sync.wait_kernel @q {stream = 2 : i64}
// CHECK-NEXT: sync.launch @c {stream = 2 : i64}

// -----

// Without wait-kernels nothing orders @c after @p: sync-use-pdl leaves the plan, and
// sync-verify says so (it used to prove a PDL edge from the wrong stream).
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @q(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@q", "epoch"]} {
      %t = sync.tile : index
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sp: memref<?xi32>, %sq: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "sems:@q", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sp[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.wait %sq[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.load_point operand 0 [%t]
      sync.load_point operand 1 [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @q {kernel = @k::@q, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.dependency @q -> @c operand 1 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @q {stream = 1 : i64}
  sync.launch @c {stream = 2 : i64}
}
// CHECK: use_pdl_two_streams.mlir:82:3: sync-verify: no forward-progress guarantee for @c waiting on @p: launch a sync.wait_kernel @p before @c on its stream
