// RUN: tilesync-opt %s --split-input-file -p sync-verify --verify-diagnostics | filecheck %s

// The proof counts the posts each stage's own tiles make, and proves progress for declared
// dependencies. @c waits for @p's tile and then also posts @p's semaphore: each semaphore
// receives 2 posts a launch where the waits expect 1, so in launch 2 a wait for 2 passes on
// launch 1's posts, before @p has stored the tile.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@p", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      %z = arith.constant 0.0 : f32
      memref.store %z, %out[%g] : memref<128xf32>
      sync.post %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%in: memref<128xf32>, %out: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@p", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      sync.wait %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %v = memref.load %in[%g] : memref<128xf32>
      memref.store %v, %out[%g] : memref<128xf32>
      sync.post %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p {stream = 0 : i64, priority = -1 : i64}
  sync.launch @c {stream = 0 : i64, pdl = true}
}

// CHECK: verify_semaphore_roles_invalid.mlir:{{[0-9]+}}:7: sync-verify: stage @c's kernel posts the semaphores of @p ('sems:@p'): only @p's tiles post them, and every wait on them counts @p's posts per launch

// -----

// @c's kernel waits on @q's semaphores with no sync.dependency @q -> @c: @c runs first on
// stream 0 and @q only after it ends, so @c waits forever.
builtin.module {
  gpu.module @k {
    gpu.func @q(%out: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@q", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      %z = arith.constant 0.0 : f32
      memref.store %z, %out[%g] : memref<128xf32>
      sync.post %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%out: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@q", "epoch"]} {
      %i = sync.tile : index
      sync.wait %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @d(%in: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@q", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      sync.wait %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %v = memref.load %in[%g] : memref<128xf32>
      gpu.return
    }
  }
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>}
  sync.stage @q {kernel = @k::@q, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @d {kernel = @k::@d, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>}
  sync.dependency @q -> @d operand 0 tiles (d0) -> (d0)
  sync.launch @c {stream = 0 : i64}
  sync.launch @q {stream = 0 : i64}
  sync.launch @d {stream = 0 : i64}
}

// CHECK: verify_semaphore_roles_invalid.mlir:{{[0-9]+}}:7: sync-verify: stage @c's kernel waits on the semaphores of @q ('sems:@q'), but no sync.dependency @q -> @c declares it: only declared dependencies are proved to make progress

// -----

// The same where @c is the declared consumer of another stage (its kernel is evaluated, but
// only its declared producers' waits were checked for progress).
builtin.module {
  gpu.module @k {
    gpu.func @q(%out: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@q", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      %z = arith.constant 0.0 : f32
      memref.store %z, %out[%g] : memref<128xf32>
      sync.post %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @x(%out: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@x", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      %z = arith.constant 0.0 : f32
      memref.store %z, %out[%g] : memref<128xf32>
      sync.post %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%in: memref<128xf32>, %sems: memref<?xi32>, %sx: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@q", "sems:@x", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      sync.wait %sx[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %v = memref.load %in[%g] : memref<128xf32>
      sync.wait %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @d(%in: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@q", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      sync.wait %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %v = memref.load %in[%g] : memref<128xf32>
      gpu.return
    }
  }
  sync.stage @x {kernel = @k::@x, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>}
  sync.stage @q {kernel = @k::@q, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @d {kernel = @k::@d, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>}
  sync.dependency @x -> @c operand 0 tiles (d0) -> (d0)
  sync.dependency @q -> @d operand 0 tiles (d0) -> (d0)
  sync.launch @x {stream = 0 : i64}
  sync.launch @c {stream = 0 : i64}
  sync.launch @q {stream = 0 : i64}
  sync.launch @d {stream = 0 : i64}
}

// CHECK: verify_semaphore_roles_invalid.mlir:{{[0-9]+}}:7: sync-verify: stage @c's kernel waits on the semaphores of @q ('sems:@q'), but no sync.dependency @q -> @c declares it: only declared dependencies are proved to make progress

// -----

// A wait on a memref that is no sync parameter: its count cannot be proved.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<128xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@p", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      %z = arith.constant 0.0 : f32
      memref.store %z, %out[%g] : memref<128xf32>
      sync.post %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%in: memref<128xf32>, %out: memref<128xf32>, %sems: memref<?xi32>, %sems0: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, sync.args = ["sems:@p", "epoch"]} {
      %i = sync.tile : index
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b = arith.muli %i, %c32 : index
      %g = arith.addi %b, %tid : index
      sync.wait %sems[%i] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %v = memref.load %in[%g] : memref<128xf32>
      memref.store %v, %out[%g] : memref<128xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 32>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p {stream = 0 : i64, priority = -1 : i64}
  sync.launch @c {stream = 0 : i64, pdl = true}
}

// CHECK: verify_semaphore_roles_invalid.mlir:{{[0-9]+}}:7: sync-verify: stage @c's kernel waits on a memref that is no sync parameter ('sems:@stage' in its sync.args): no one can tell who posts it
