// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132}' --verify-diagnostics | filecheck %s

// Bulk tensor copies run in the async proxy, which a generic acquire or release does not
// order (DESIGN.md, memory model). @p stores its tile with tile.tma_store and posts with a
// plain sync.post: the release may be seen before the bulk writes land.
gpu.module @k {
  gpu.func @p(%out: !tile.tensor_map<16x64xf16, swizzle 128>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %y64 = arith.muli %y, %c64 : index
    %col = arith.addi %y64, %c0 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      tile.tma_store %smem[%c0, %c0], %out[%c0, %col] : memref<16x64xf16, 3>, !tile.tensor_map<16x64xf16, swizzle 128>
    }
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: !tile.tensor_map<16x64xf16, swizzle 128>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x = sync.tile : index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %bars = memref.get_global @bars : memref<1xi64, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      sync.wait %sp[%c0, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
      tile.tma_load %a[%c0, %c0], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
    }
    gpu.return
  }
  "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<16x64xf16, 3>, initial_value}> : () -> ()
  "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 1, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 16, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 16>}
sync.dependency @p -> @c operand 0 tiles (d0) -> (0, 0)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_tma_proxy_invalid.mlir:{{[0-9]+}}:5: sync-verify: producer tile (0, 0) of @p: its 'tile.tma_store' writes the tile in the async proxy, and this sync.post neither waits for those writes nor orders them before its release: mark it async_proxy

// -----

// The same after `tile.tma_store_wait 0 writes`: the writes are complete in the async proxy,
// but nothing orders them before the generic release.
gpu.module @k {
  gpu.func @p(%out: !tile.tensor_map<16x64xf16, swizzle 128>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %y64 = arith.muli %y, %c64 : index
    %col = arith.addi %y64, %c0 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      tile.tma_store %smem[%c0, %c0], %out[%c0, %col] : memref<16x64xf16, 3>, !tile.tensor_map<16x64xf16, swizzle 128>
      tile.tma_store_commit
      tile.tma_store_wait 0 writes
    }
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: !tile.tensor_map<16x64xf16, swizzle 128>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x = sync.tile : index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %bars = memref.get_global @bars : memref<1xi64, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      sync.wait %sp[%c0, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> single_thread : memref<?xi32>
      tile.tma_load %a[%c0, %c0], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
    }
    gpu.return
  }
  "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<16x64xf16, 3>, initial_value}> : () -> ()
  "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 1, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 16, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 16>}
sync.dependency @p -> @c operand 0 tiles (d0) -> (0, 0)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_tma_proxy_invalid.mlir:{{[0-9]+}}:5: sync-verify: producer tile (0, 0) of @p: its 'tile.tma_store' writes the tile in the async proxy, and this sync.post neither waits for those writes nor orders them before its release: mark it async_proxy

// -----

// @c's issuing thread waits without async_proxy, then reads the tile with tile.tma_load: no
// proxy fence orders the bulk read after the acquire.
gpu.module @k {
  gpu.func @p(%out: !tile.tensor_map<16x64xf16, swizzle 128>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %y64 = arith.muli %y, %c64 : index
    %col = arith.addi %y64, %c0 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      tile.tma_store %smem[%c0, %c0], %out[%c0, %col] : memref<16x64xf16, 3>, !tile.tensor_map<16x64xf16, swizzle 128>
      tile.tma_store_commit
      tile.tma_store_wait 0 writes
    }
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> async_proxy : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: !tile.tensor_map<16x64xf16, swizzle 128>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x = sync.tile : index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %bars = memref.get_global @bars : memref<1xi64, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      sync.wait %sp[%c0, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> single_thread : memref<?xi32>
      tile.tma_load %a[%c0, %c0], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
    }
    gpu.return
  }
  "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<16x64xf16, 3>, initial_value}> : () -> ()
  "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 1, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 16, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 16>}
sync.dependency @p -> @c operand 0 tiles (d0) -> (0, 0)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: verify_tma_proxy_invalid.mlir:{{[0-9]+}}:7: sync-verify: consumer tile (0,) of @c: 'tile.tma_load' reads operand 0 in the async proxy, which the waits' generic acquire does not order: mark the wait async_proxy (or put a tile.fence_proxy_async global after it in the thread issuing the copy)

// -----

// A tile.fence_proxy_async global after the plain wait, in the issuing thread, orders it:
// proved.
gpu.module @k {
  gpu.func @p(%out: !tile.tensor_map<16x64xf16, swizzle 128>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %y64 = arith.muli %y, %c64 : index
    %col = arith.addi %y64, %c0 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      tile.tma_store %smem[%c0, %c0], %out[%c0, %col] : memref<16x64xf16, 3>, !tile.tensor_map<16x64xf16, swizzle 128>
      tile.tma_store_commit
      tile.tma_store_wait 0 writes
    }
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> async_proxy : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: !tile.tensor_map<16x64xf16, swizzle 128>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x = sync.tile : index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %bars = memref.get_global @bars : memref<1xi64, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      sync.wait %sp[%c0, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> single_thread : memref<?xi32>
      tile.fence_proxy_async global
      tile.tma_load %a[%c0, %c0], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
    }
    gpu.return
  }
  "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<16x64xf16, 3>, initial_value}> : () -> ()
  "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 1, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 16, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 16>}
sync.dependency @p -> @c operand 0 tiles (d0) -> (0, 0)
sync.launch @p
sync.launch @c {pdl = true}

// CHECK: sync.stage @p {{.*}}sync.verified = "proved"
// CHECK: sync.stage @c {{.*}}sync.verified = "proved"
