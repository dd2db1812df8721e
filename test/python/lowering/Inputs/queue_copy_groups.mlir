builtin.module {
  gpu.module @kernels {
    gpu.func @producer(%src: memref<?xf32>, %q: !dataflow.queue<4 x memref<128xf32>>, %tiles: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c128 = arith.constant 128 : index
      %tid = gpu.thread_id x
      %lane = arith.remui %tid, %c128 : index
      scf.for %i = %c0 to %tiles step %c1 {
        %t = dataflow.acquire_empty %q threads 128 : !dataflow.queue<4 x memref<128xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<4 x memref<128xf32>> -> memref<128xf32>
        %base = arith.muli %t, %c128 : index
        %g = arith.addi %base, %lane : index
        %v = memref.load %src[%g] : memref<?xf32>
        memref.store %v, %e[%lane] : memref<128xf32>
        dataflow.release_full %q, %t threads 128 : !dataflow.queue<4 x memref<128xf32>>
      }
      gpu.return
    }
    gpu.func @consumer(%q: !dataflow.queue<4 x memref<128xf32>>, %dst: memref<?xf32>, %tiles: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c128 = arith.constant 128 : index
      %tid = gpu.thread_id x
      %lane = arith.remui %tid, %c128 : index
      scf.for %i = %c0 to %tiles step %c1 {
        %t = dataflow.acquire_full %q threads 128 : !dataflow.queue<4 x memref<128xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<4 x memref<128xf32>> -> memref<128xf32>
        %base = arith.muli %t, %c128 : index
        %g = arith.addi %base, %lane : index
        %v = memref.load %e[%lane] : memref<128xf32>
        memref.store %v, %dst[%g] : memref<?xf32>
        dataflow.release_empty %q, %t threads 128 : !dataflow.queue<4 x memref<128xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @copy {
    dataflow.queue @q pin_l2 : !dataflow.queue<4 x memref<128xf32>>
    dataflow.stage @produce {kernel = @kernels::@producer, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @consume {kernel = @kernels::@consumer, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = []}
  }
}
