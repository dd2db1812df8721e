// Three stages in clusters of 3, the forms a cluster's one-worker rings allow: @fork draws a
// ticket of @p and one of @q on its own for each of its 36 tiles (p's word: 1000 t + thread;
// q's: 2000 t + thread + 7), @final adds @p's partials four at a time (`dataflow.reads`, 9
// tiles of 4 tickets, taken one at a time), @side sums @q's. Each writes its sums by thread.
builtin.module {
  gpu.module @kernels {
    gpu.func @fork(%p: !dataflow.queue<4 x memref<256xi32, 0 : i64>>, %q: !dataflow.queue<2 x memref<256xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c7 = arith.constant 7 : index
      %c36 = arith.constant 36 : index
      %c1000 = arith.constant 1000 : index
      %c2000 = arith.constant 2000 : index
      %tid = gpu.thread_id x
      scf.for %i = %c0 to %c36 step %c1 {
        %t = dataflow.acquire_empty %p : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        %u = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
        %ep = dataflow.entry %p, %t : !dataflow.queue<4 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %eq = dataflow.entry %q, %u : !dataflow.queue<2 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %bp = arith.muli %t, %c1000 : index
        %wp = arith.addi %bp, %tid : index
        %vp = arith.index_cast %wp : index to i32
        memref.store %vp, %ep[%tid] : memref<256xi32, 0 : i64>
        %bq = arith.muli %u, %c2000 : index
        %tq = arith.addi %tid, %c7 : index
        %wq = arith.addi %bq, %tq : index
        %vq = arith.index_cast %wq : index to i32
        memref.store %vq, %eq[%tid] : memref<256xi32, 0 : i64>
        dataflow.release_full %p, %t : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        dataflow.release_full %q, %u : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
      }
      gpu.return
    }
    gpu.func @final(%p: !dataflow.queue<4 x memref<256xi32, 0 : i64>>, %sums: memref<?xi32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c9 = arith.constant 9 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0 : i32
      %tid = gpu.thread_id x
      %cta = gpu.block_id x
      %total = scf.for %i = %c0 to %c9 step %c1 iter_args(%acc = %zero) -> (i32) {
        %a = dataflow.acquire_full %p : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        %b = dataflow.acquire_full %p : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        %c = dataflow.acquire_full %p : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        %d = dataflow.acquire_full %p : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        %ea = dataflow.entry %p, %a : !dataflow.queue<4 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %eb = dataflow.entry %p, %b : !dataflow.queue<4 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %ec = dataflow.entry %p, %c : !dataflow.queue<4 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %ed = dataflow.entry %p, %d : !dataflow.queue<4 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %xa = memref.load %ea[%tid] : memref<256xi32, 0 : i64>
        %xb = memref.load %eb[%tid] : memref<256xi32, 0 : i64>
        %xc = memref.load %ec[%tid] : memref<256xi32, 0 : i64>
        %xd = memref.load %ed[%tid] : memref<256xi32, 0 : i64>
        %ab = arith.addi %xa, %xb : i32
        %cd = arith.addi %xc, %xd : i32
        %tile = arith.addi %ab, %cd : i32
        %next = arith.addi %acc, %tile : i32
        dataflow.release_empty %p, %a : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        dataflow.release_empty %p, %b : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        dataflow.release_empty %p, %c : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        dataflow.release_empty %p, %d : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
        scf.yield %next : i32
      }
      %row = arith.muli %cta, %c256 : index
      %slot = arith.addi %row, %tid : index
      memref.store %total, %sums[%slot] : memref<?xi32>
      gpu.return
    }
    gpu.func @side(%q: !dataflow.queue<2 x memref<256xi32, 0 : i64>>, %sums: memref<?xi32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c36 = arith.constant 36 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0 : i32
      %tid = gpu.thread_id x
      %cta = gpu.block_id x
      %total = scf.for %i = %c0 to %c36 step %c1 iter_args(%acc = %zero) -> (i32) {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<256xi32, 0 : i64>> -> memref<256xi32, 0 : i64>
        %x = memref.load %e[%tid] : memref<256xi32, 0 : i64>
        %next = arith.addi %acc, %x : i32
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
        scf.yield %next : i32
      }
      %row = arith.muli %cta, %c256 : index
      %slot = arith.addi %row, %tid : index
      memref.store %total, %sums[%slot] : memref<?xi32>
      gpu.return
    }
  }
  dataflow.pipeline @split_fork {
    dataflow.queue @p cluster : !dataflow.queue<4 x memref<256xi32, 0 : i64>>
    dataflow.queue @q cluster : !dataflow.queue<2 x memref<256xi32, 0 : i64>>
    dataflow.stage @src {kernel = @kernels::@fork, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [], outputs = [@p, @q], tiles = 1584 : i64}
    dataflow.stage @fin {kernel = @kernels::@final, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [@p], outputs = [], tiles = 396 : i64, dataflow.reads = {p = 4 : i64}}
    dataflow.stage @aside {kernel = @kernels::@side, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [@q], outputs = [], tiles = 1584 : i64}
  }
}
