// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s

// 264 consumer CTAs that fit 1 per SM beside 132 producers: consumers dispatched first could
// take every slot and spin.
builtin.module {
  gpu.module @kernels {
    gpu.func @k(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 1024, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 132 : i64, inputs = [], outputs = [@h], registers = 64 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @b {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 264 : i64, inputs = [@h], outputs = [], registers = 64 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: verify_invalid.mlir:11:3: dataflow-verify: pipeline @p cannot run: not all 396 blocks are co-resident (at most 132 = 132 SMs x 1 blocks per SM) (@a 132 x 1/1 SM, @b 264 x 1/1 SM); a CTA spinning on a queue holds the slot its producer needs

// -----

// The consumer takes more tickets per launch than the producer fills.
builtin.module {
  gpu.module @kernels {
    gpu.func @k(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @b {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 9 : i64}
  }
}
// CHECK: verify_invalid.mlir:31:5: dataflow-verify: queue @h: stage @a fills 8 tickets per launch but stage @b takes 9: a launch would wait forever for 1 ticket(s)

// -----

// Occupancy that was never measured proves nothing.
builtin.module {
  gpu.module @kernels {
    gpu.func @k(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@h], tiles = 8 : i64}
    dataflow.stage @b {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: verify_invalid.mlir:47:5: dataflow-verify: stage @a: occupancy unknown: the stage needs the 'registers' and 'shared_bytes' of its compiled kernel (tilesync.api.annotate_resources records them)

// -----

// A stage whose kernel does not take its queues yet (dataflow-insert-queues designed it) runs
// nothing that uses them.
builtin.module {
  gpu.module @kernels {
    gpu.func @k() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64, dataflow.unbound}
    dataflow.stage @b {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64, dataflow.unbound}
  }
}
// CHECK: verify_invalid.mlir:65:5: dataflow-verify: stage @a: its kernel does not take its queues yet, so nothing it runs uses them

// -----

// A final stage adding 4 partials per tile holds 4 entries at once: a 2-entry ring cannot.
builtin.module {
  gpu.module @kernels {
    gpu.func @k(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @fanin {kernel = @kernels::@k, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 32 : i64}
    dataflow.stage @final {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64, dataflow.reads = {h = 4 : i64}}
  }
}
// CHECK: verify_invalid.mlir:81:5: dataflow-verify: queue @h has 2 entries but a tile of @final holds 4 at once: it could never hold them all

// -----

// No tiles a launch: 0 = 0 balances the tickets, but a stage with queues moves at least one.
builtin.module {
  gpu.module @kernels {
    gpu.func @k(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 0 : i64}
    dataflow.stage @b {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 0 : i64}
  }
}
// CHECK: verify_invalid.mlir:[[# @LINE - 4]]:5: dataflow-verify: stage @a declares 0 'tiles' per launch: a stage with queues moves at least one

// -----

// A negative register count (a hand-edited annotation): refused, not an internal error.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.stage @a {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], registers = -1 : i64, shared_bytes = 0 : i64}
  }
}
// CHECK: verify_invalid.mlir:[[# @LINE - 3]]:5: dataflow-verify: stage @a: 'registers' and 'shared_bytes' must not be negative, got -1 and 0
