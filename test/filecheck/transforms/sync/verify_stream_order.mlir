// RUN: tilesync-opt %s -p sync-generate-policies,sync-insert-post-wait,sync-verify | filecheck %s
// Two stages on one stream without PDL: the consumer starts after the producer finished, so
// its waits pass at once. That is a forward-progress guarantee (stream sync, same kernels).

builtin.module {
  gpu.module @m {
    gpu.func @copy(%src: memref<?xf32>, %dst: memref<?xf32>) kernel {
      %x = sync.tile : index
      sync.load_point operand 0 [%x]
      %v = memref.load %src[%x] : memref<?xf32>
      memref.store %v, %dst[%x] : memref<?xf32>
      sync.store_point [%x]
      gpu.return
    }
  }
  sync.stage @first {kernel = @m::@copy, grid = array<i64: 64>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.stage @second {kernel = @m::@copy, grid = array<i64: 64>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.dependency @first -> @second operand 0 tiles (d0) -> (d0)
  sync.launch @first
  sync.launch @second
}

// CHECK: sync.stage @second {sync.progress = "@first: stream order", sync.verified = "proved"
