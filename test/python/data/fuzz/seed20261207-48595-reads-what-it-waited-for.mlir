// seed20261207-48595.mlir with its copy reading the column it waited for (column 0, not (k + 1) * 64, whose ops are dropped): every read is covered, so the 65,536 distinct waits run the proof out of steps (@p has a tile, and so a semaphore, for each: none waits past the end of @p's semaphores)
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %tid = gpu.thread_id x
    %c256 = arith.constant 256 : index
    %consumer = arith.cmpi ult, %tid, %c256 : index
    scf.if %consumer {
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> threads 256 : memref<?xi32>
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
    %c3 = arith.constant 65536 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %issuer = arith.cmpi eq, %tid, %c256 : index
    scf.if %issuer {
      %row = arith.muli %x, %c128 : index
      scf.for %k = %c0 to %c3 step %c1 {
        sync.wait %sp[%k, %x] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
        sync.load_point operand 0 [%x, %y] step %k single_thread async_proxy
        tile.tma_load %a[%row, %c0], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<128x64xf16, swizzle 128>, memref<128x64xf16, 3>, memref<1xi64, 3>
      }
    }
    gpu.return
  }
  "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<128x64xf16, 3>, initial_value}> : () -> ()
  "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 65536, 1>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 1, 3>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 128>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (s0, d0) forall s0 in [0, 3)
sync.launch @p
sync.launch @c {pdl = true}
