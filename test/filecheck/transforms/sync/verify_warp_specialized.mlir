// RUN: tilesync-opt %s -p 'sync-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s

// Warp-specialized kernels: the roles are branches on the thread index. Each side that some
// thread takes is the block's (the post of the consumer warpgroups, `threads 256`, is counted,
// once per tile), a side's waits cover only that side, and a wait or post there must name the
// threads that run it (the last three cases). The consumer's operand is a tensor
// map: its copies read the box at their coordinates (prefetching the map, or a box into L2
// ahead of its wait, reads nothing: L2 is where the producer's writes land).
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %tid = gpu.thread_id x
    %c256 = arith.constant 256 : index
    %consumer = arith.cmpi ult, %tid, %c256 : index
    scf.if %consumer {
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> threads 256 async_proxy : memref<?xi32>
    }
    gpu.return
  }
  gpu.func @c(%a: !tile.tensor_map<128x64xf16, swizzle 128>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %smem = memref.get_global @stage : memref<128x64xf16, 3>
    %bars = memref.get_global @bars : memref<1xi64, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    tile.prefetch_tensor_map %a : !tile.tensor_map<128x64xf16, swizzle 128>
    %issuer = arith.cmpi eq, %tid, %c256 : index
    scf.if %issuer {
      %row = arith.muli %x, %c128 : index
      scf.for %k = %c0 to %c4 step %c1 {
        %next = arith.addi %k, %c1 : index
        %ahead = arith.muli %next, %c64 : index
        tile.tma_prefetch %a[%row, %ahead] : !tile.tensor_map<128x64xf16, swizzle 128>
        sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
        sync.load_point operand 0 [%x, %y] step %k single_thread async_proxy
        %col = arith.muli %k, %c64 : index
        tile.tma_load %a[%row, %col], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<128x64xf16, swizzle 128>, memref<128x64xf16, 3>, memref<1xi64, 3>
      }
    }
    gpu.return
  }
  "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<128x64xf16, 3>, initial_value}> : () -> ()
  "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 3>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 128>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: sync.stage @p {sync.verified = "proved"
// CHECK: sync.stage @c {sync.progress = "@p: programmatic dependent launch", sync.verified = "proved"

// -----

// The copies of the last k-step read past what its wait covers: the box at column 64 k + 64
// reaches into the next producer tile.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %tid = gpu.thread_id x
    %c256 = arith.constant 256 : index
    %consumer = arith.cmpi ult, %tid, %c256 : index
    scf.if %consumer {
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> threads 256 : memref<?xi32>
    }
    gpu.return
  }
  gpu.func @c(%a: !tile.tensor_map<128x64xf16, swizzle 128>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %smem = memref.get_global @stage : memref<128x64xf16, 3>
    %bars = memref.get_global @bars : memref<1xi64, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %issuer = arith.cmpi eq, %tid, %c256 : index
    scf.if %issuer {
      %row = arith.muli %x, %c128 : index
      scf.for %k = %c0 to %c3 step %c1 {
        sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
        sync.load_point operand 0 [%x, %y] step %k single_thread async_proxy
        %k1 = arith.addi %k, %c1 : index
        %col = arith.muli %k1, %c64 : index
        tile.tma_load %a[%row, %col], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<128x64xf16, swizzle 128>, memref<128x64xf16, 3>, memref<1xi64, 3>
      }
    }
    gpu.return
  }
  "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<128x64xf16, 3>, initial_value}> : () -> ()
  "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 3>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 128>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 3)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_warp_specialized.mlir:93:9: sync-verify: consumer tile (0, 0) of @c: 'tile.tma_load' reads operand 0 at [0, 127], [64, 127], where producer tile (0, 1) of @p wrote [0, 128) x [64, 128) (semaphore 1), but no wait on that semaphore precedes it

// -----

// A post in a branch no thread takes (thread index below 0) is never made: its tiles' waits
// would never pass.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %never = arith.cmpi ult, %tid, %c0 : index
    scf.if %never {
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> threads 256 : memref<?xi32>
    }
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.wait %sp[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_warp_specialized.mlir:131:1: sync-verify: producer @p, tile (0, 0) posts 0 times per launch; each tile must post exactly once

// -----

// A block-wide post that only thread 0 reaches: its block barrier would hang the others.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %leader = arith.cmpi eq, %tid, %c0 : index
    scf.if %leader {
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    }
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.wait %sp[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_warp_specialized.mlir:149:7: sync-verify: producer @p, tile (0, 0): a sync.post that 1 thread (0..0) reach must be `threads N` for exactly the block's first N threads: its named barrier waits for N, thread 0 releases

// -----

// A post of `threads 256` that the first 128 threads reach: its barrier counts 256.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %tid = gpu.thread_id x
    %c128 = arith.constant 128 : index
    %half = arith.cmpi ult, %tid, %c128 : index
    scf.if %half {
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> threads 256 : memref<?xi32>
    }
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.wait %sp[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_warp_specialized.mlir:178:7: sync-verify: producer @p, tile (0, 0): a sync.post that 128 threads (0..127) reach must be `threads N` for exactly the block's first N threads: its named barrier waits for N, thread 0 releases

// -----

// A post of `threads 256` that all 288 threads reach.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %tid = gpu.thread_id x
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> threads 256 : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.wait %sp[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_warp_specialized.mlir:204:5: sync-verify: producer @p, tile (0, 0): every thread of the block (288) reaches this sync.post of `threads 256`: its named barrier would not count them (put it where only those threads go)
