// Three stages in clusters of 3: @source fills @a, @relay adds 1 to every word of each entry of
// @a into an entry of @b, @sink sums what it reads. Both queues are rings in the shared memory
// of their consumer's CTA; @relay's CTA holds a ring (@a's) and fills its peer's (@b's).
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%a: !dataflow.queue<2 x memref<256xi32, 0 : i64>>, %iters: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c1000 = arith.constant 1000 : index
      %tid = gpu.thread_id x
      scf.for %i = %c0 to %iters step %c1 {
        %t = dataflow.acquire_empty %a : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
        %e = dataflow.entry %a, %t : !dataflow.queue<2 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %base = arith.muli %t, %c1000 : index
        %word = arith.addi %base, %tid : index
        %v = arith.index_cast %word : index to i32
        memref.store %v, %e[%tid] : memref<256xi32, 0 : i64>
        dataflow.release_full %a, %t : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
      }
      gpu.return
    }
    gpu.func @relay(%a: !dataflow.queue<2 x memref<256xi32, 0 : i64>>, %b: !dataflow.queue<3 x memref<256xi32, 0 : i64>>, %iters: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %one = arith.constant 1 : i32
      %tid = gpu.thread_id x
      scf.for %i = %c0 to %iters step %c1 {
        %t = dataflow.acquire_full %a : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
        %u = dataflow.acquire_empty %b : !dataflow.queue<3 x memref<256xi32, 0 : i64>>
        %in = dataflow.entry %a, %t : !dataflow.queue<2 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %out = dataflow.entry %b, %u : !dataflow.queue<3 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %x = memref.load %in[%tid] : memref<256xi32, 0 : i64>
        %y = arith.addi %x, %one : i32
        memref.store %y, %out[%tid] : memref<256xi32, 0 : i64>
        dataflow.release_empty %a, %t : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
        dataflow.release_full %b, %u : !dataflow.queue<3 x memref<256xi32, 0 : i64>>
      }
      gpu.return
    }
    gpu.func @sink(%b: !dataflow.queue<3 x memref<256xi32, 0 : i64>>, %sums: memref<?xi32>, %iters: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0 : i32
      %tid = gpu.thread_id x
      %cta = gpu.block_id x
      %total = scf.for %i = %c0 to %iters step %c1 iter_args(%acc = %zero) -> (i32) {
        %t = dataflow.acquire_full %b : !dataflow.queue<3 x memref<256xi32, 0 : i64>>
        %e = dataflow.entry %b, %t : !dataflow.queue<3 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %x = memref.load %e[%tid] : memref<256xi32, 0 : i64>
        %next = arith.addi %acc, %x : i32
        dataflow.release_empty %b, %t : !dataflow.queue<3 x memref<256xi32, 0 : i64>>
        scf.yield %next : i32
      }
      %row = arith.muli %cta, %c256 : index
      %slot = arith.addi %row, %tid : index
      memref.store %total, %sums[%slot] : memref<?xi32>
      gpu.return
    }
  }
  dataflow.pipeline @chain {
    dataflow.queue @a cluster : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
    dataflow.queue @b cluster : !dataflow.queue<3 x memref<256xi32, 0 : i64>>
    dataflow.stage @fill {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [], outputs = [@a]}
    dataflow.stage @add {kernel = @kernels::@relay, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [@a], outputs = [@b]}
    dataflow.stage @sum {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [@b], outputs = []}
  }
}
