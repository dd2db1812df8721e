// RUN: tilesync-opt %s -p sync-verify --split-input-file --verify-diagnostics | filecheck %s

// Reference fault (R + RowSync never blocks): the row wait is guarded by the consumer's own
// column being 0 (cuSync's `if (col == 0)` fed B's column after reordering): block (0, 1)
// never waits.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
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
      sync.load_point operand 0 [%x, %y] step %k
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

// CHECK: verify_invalid.mlir:23:7: sync-verify: consumer tile (0, 1) of @c: sync.load_point operand 0, which reads producer tile (0, 0) of @p (semaphore 0), but no wait on that semaphore precedes it

// -----

// Reference fault (TileSync waits once): one wait on the first tile of the row, before the
// k-loop; step 1 reads tile (0, 1) unguarded.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sp: memref<?xi32>, %sq: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "sems:@q", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    sync.wait %sp[%x, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    scf.for %k = %c0 to %c4 step %c1 {
      sync.load_point operand 0 [%x, %y] step %k
      %v = memref.load %a[%k] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 0, which reads producer tile (0, 1) of @p (semaphore 1), but no wait on that semaphore precedes it

// -----

// Reference fault (waits only on operand A): operand 1 is produced by @q too, but only
// operand 0 is waited for.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @p_q(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@q", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sp: memref<?xi32>, %sq: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "sems:@q", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    scf.for %k = %c0 to %c4 step %c1 {
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
      %v = memref.load %a[%k] : memref<?xf32>
      sync.load_point operand 1 [%x, %y] step %k
      %w = memref.load %b[%k] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @q {kernel = @k::@p_q, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.dependency @q -> @c operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 4)
sync.launch @q
sync.launch @p
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 1, which reads producer tile (0, 0) of @q (semaphore 0), but no wait on that semaphore precedes it

// -----

// Reference fault (conv ignores the halo): consumer row r reads producer rows r..r+2 (a 3x3
// window over a padded producer) but waits only for the centre row r+1.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
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
    %mid = arith.addi %x, %c1 : index
    sync.wait %sp[%mid, %c0] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s0, s1) forall s0 in [0, 3), s1 in [0, 4)
sync.launch @p
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 0, which reads producer tile (0, 0) of @p (semaphore 0), but no wait on that semaphore precedes it

// -----

// Reference fault (attention never waits on K/V): head y reads Q, K, V tiles y, y + 2,
// y + 4 of the QKV GEMM; TileSync, and only Q's tile is waited for.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 6 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sp: memref<?xi32>, %sq: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "sems:@q", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    sync.wait %sp[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 6 + d1), posts = 1> : memref<?xi32>
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 6>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 6 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 2) forall s0 in [0, 3)
sync.launch @p
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 0, which reads producer tile (0, 2) of @p (semaphore 2), but no wait on that semaphore precedes it

// -----

// A wait loop that covers fewer tiles than read: s0 in [0, 2) waited, [0, 4) read.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sp: memref<?xi32>, %sq: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "sems:@q", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    scf.for %s = %c0 to %c2 step %c1 {
      sync.wait %sp[%x, %s] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    }
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 0, which reads producer tile (0, 2) of @p (semaphore 2), but no wait on that semaphore precedes it

// -----

// Wrong expected count, too low: the row semaphore gets 4 posts per launch, the wait is
// content with 2 and may pass while half the row is still being computed.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
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
    sync.wait %sp[%x, %c0] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 2> : memref<?xi32>
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 0, which reads producer tile (0, 0) of @p (semaphore 0), but the wait expects 2 posts per launch and the semaphore receives 4: it may pass before the tile is stored

// -----

// Wrong expected count, too high: 8 posts never arrive on a 4-tile row.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
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
    sync.wait %sp[%x, %c0] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8> : memref<?xi32>
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: consumer tile (0, 0) of @c waits for 8 posts per launch on semaphore 0 of @p, which receives 4: the wait never passes

// -----

// The wait comes after the load (a reordering that moved the load above its wait).
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
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
sync.wait_kernel @p {stream = 1 : i64}
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: consumer tile (0, 0) of @c: 'memref.load' reads operand 0 with no sync.load_point before it, which reads producer tile (0, 0) of @p (semaphore 0), but no wait on that semaphore precedes it

// -----

// A producer whose post is conditional: its semaphore may never fill.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %n = arith.constant 0 : i32
    %maybe = arith.cmpi sgt, %epoch, %n : i32
    scf.if %maybe {
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
    }
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sp: memref<?xi32>, %sq: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "sems:@q", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    scf.for %k = %c0 to %c4 step %c1 {
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
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

// CHECK: sync-verify: producer @p, tile (0, 0): this sync.post may or may not run; cannot count the posts its semaphore receives

// -----

// A producer that posts twice per tile: the row would fill after half its tiles.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
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
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
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

// CHECK: sync-verify: producer @p, tile (0, 0) posts 2 times per launch; each tile must post exactly once

// -----

// No forward-progress guarantee: two streams, no wait-kernel, no PDL, no co-residency.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
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
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
      %e = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %k)
      %v = memref.load %a[%e] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {stream = 1 : i64}

// CHECK: verify_invalid.mlir:394:1: sync-verify: no forward-progress guarantee for @c waiting on @p: launch a sync.wait_kernel @p before @c on its stream, launch @c with pdl = true right after @p on its stream, or show that all stages are co-resident (coresident, or blocks_per_sm on every stage and sms=N)

// -----

// PDL does not help a consumer launched before its producer.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
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
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
      %e = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %k)
      %v = memref.load %a[%e] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @c {pdl = true}
sync.launch @p

// CHECK: sync-verify: no forward-progress guarantee for @c waiting on @p: the launch of @p cannot start before @c progresses: @p follows @c on stream 0

// -----

// PDL orders a launch only after the previous launch on its own stream: @c, launched with
// pdl = true on stream 1, is not ordered after @p on stream 0. No guarantee.
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
    %c4 = arith.constant 4 : index
    scf.for %k = %c0 to %c4 step %c1 {
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
      %e = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %k)
      %v = memref.load %a[%e] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {stream = 1 : i64, pdl = true}

// CHECK: verify_invalid.mlir:458:1: sync-verify: no forward-progress guarantee for @c waiting on @p

// -----

// Also found: diagnostics depended on PYTHONHASHSEED (the waits were a set; which of two
// never-passing waits was named changed). The first in program order is named, always.
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
    gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>, %sq: memref<?xi32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@q", "sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sq[%t] epoch %epoch policy #sync.policy<Custom (d0) -> (d0 floordiv 2), posts = 2> : memref<?xi32>
      sync.wait %sp[%t] epoch %epoch policy #sync.policy<Custom (d0) -> (d0 floordiv 2), posts = 2> : memref<?xi32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 64>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @q {kernel = @k::@q, grid = array<i64: 4>, block = array<i64: 64>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.dependency @q -> @c operand 1 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @q
  sync.launch @c
}
// CHECK: sync-verify: consumer tile (0,) of @c waits for 2 posts per launch on semaphore 0 of @q, which receives 1: the wait never passes

// -----

// A wait guarded by the step's phase, every fourth k-step, where a producer tile spans two
// steps (s0 floordiv 2): step 2 is the first to read tile (0, 1), and it does not wait.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    scf.for %k = %c0 to %c8 step %c1 {
      %phase = arith.remui %k, %c4 : index
      %first = arith.cmpi eq, %phase, %c0 : index
      scf.if %first {
        %col = arith.divui %k, %c2 : index
        sync.wait %sp[%x, %col] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
      }
      sync.load_point operand 0 [%x, %y] step %k
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0 floordiv 2) forall s0 in [0, 8)
sync.launch @p
sync.launch @c {stream = 1 : i64}

// CHECK: verify_invalid.mlir:520:7: sync-verify: consumer tile (0, 0) of @c: sync.load_point operand 0, which reads producer tile (0, 1) of @p (semaphore 1), but no wait on that semaphore precedes it

// -----

// A probe of the row's first two tiles skips the waits of all four k-steps: at steps 2 and 3
// nothing acquired the tile read.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %ready = sync.probe %sp[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: 0, 2, 1>] : memref<?xi32>
    scf.for %k = %c0 to %c4 step %c1 {
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> unless %ready : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
      %v = memref.load %a[%k] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_invalid.mlir:{{[0-9]+}}:7: sync-verify: consumer tile (0, 0) of @c skips this wait on semaphore 2 of sems:@p `unless` a sync.probe that did not test that semaphore

// -----

// A probe that only the first warp reaches: its block barrier would wait for the others.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %tid = gpu.thread_id x
    %first = arith.cmpi ult, %tid, %c32 : index
    scf.if %first {
      %ready = sync.probe %sp[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: 0, 4, 1>] : memref<?xi32>
    }
    scf.for %k = %c0 to %c4 step %c1 {
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
      %v = memref.load %a[%k] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_invalid.mlir:{{[0-9]+}}:7: sync-verify: a sync.probe inside a branch on the thread index: its block barrier needs every thread of the block
