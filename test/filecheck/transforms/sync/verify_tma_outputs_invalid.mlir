// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132}' --verify-diagnostics | filecheck %s
// Producer tiles written or read through TMA are placed like any other: a memref the producer
// stores to is the buffer a consumer's tensor map reads (same elements), and a tile.tma_store
// writes its box, each held against the producer tile's region.

// @p declares output_map (d0, d1 + 64), but its memref.store writes tile (0, y) at columns
// [64y, 64y + 64); @c reads columns [64, 128) through a tensor map waiting for tile (0, 0).
gpu.module @k {
  gpu.func @p(%in: memref<16x128xf16>, %out: memref<16x192xf16>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %tid = gpu.thread_id x
    %c64 = arith.constant 64 : index
    %r = arith.divui %tid, %c64 : index
    %c = arith.remui %tid, %c64 : index
    %y64 = arith.muli %y, %c64 : index
    %n = arith.addi %y64, %c : index
    %v = memref.load %in[%r, %n] : memref<16x128xf16>
    memref.store %v, %out[%r, %n] : memref<16x192xf16>
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
    %c256 = arith.constant 256 : index
    %issuer = arith.cmpi eq, %tid, %c256 : index
    scf.if %issuer {
      sync.wait %sp[%c0, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
      sync.load_point operand 0 [%x] single_thread async_proxy
      tile.tma_load %a[%c0, %c64], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
    }
    gpu.return
  }
  "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<16x64xf16, 3>, initial_value}> : () -> ()
  "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 1, 2>, block = array<i64: 1024, 1, 1>, tile = array<i64: 16, 64>, output_map = affine_map<(d0, d1) -> (d0, d1 + 64)>, policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 288, 1, 1>, tile = array<i64: 16>}
sync.dependency @p -> @c operand 0 tiles (d0) -> (0, 0)
sync.launch @p
sync.launch @c {pdl = true}
// CHECK: verify_tma_outputs_invalid.mlir:18:5: sync-verify: producer tile (0, 0) of @p: 'memref.store' writes argument 1 at [0, 15], [0, 63], outside [0, 16) x [64, 128)

// -----

// tile.tma_store: tile (0, y) stores its box at column 64 - 64y (the tiles swapped); @c waits
// for tile (0, 0) and reads columns [0, 64), which tile (0, 1) stores.
gpu.module @k {
  gpu.func @p(%out: !tile.tensor_map<16x64xf16, swizzle 128>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %smem = memref.get_global @stage : memref<16x64xf16, 3>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %y64 = arith.muli %y, %c64 : index
    %col = arith.subi %c64, %y64 : index
    %issuer = arith.cmpi eq, %tid, %c0 : index
    scf.if %issuer {
      tile.tma_store %smem[%c0, %c0], %out[%c0, %col] : memref<16x64xf16, 3>, !tile.tensor_map<16x64xf16, swizzle 128>
      tile.tma_store_commit
      tile.tma_store_wait 0
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
      sync.load_point operand 0 [%x] single_thread async_proxy
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
// CHECK: verify_tma_outputs_invalid.mlir:63:7: sync-verify: producer tile (0, 0) of @p: 'tile.tma_store' writes argument 0 at [0, 15], [64, 127], outside [0, 16) x [0, 64)
