// RUN: tilesync-opt %s -p convert-dataflow-to-nvvm --split-input-file --verify-diagnostics | filecheck %s

// A kernel with a queue argument that no pipeline stage runs: nothing says which queue it is.
gpu.module @kernels {
  gpu.func @orphan(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
    %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
    gpu.return
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:5:3: convert-dataflow-to-nvvm: kernel @orphan takes queues but no dataflow.stage runs it

// -----

// The stage produces @q, but its kernel waits for a full entry of it.
builtin.module {
  gpu.module @kernels {
    gpu.func @wrong_end(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@wrong_end, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:19:7: convert-dataflow-to-nvvm: 'dataflow.acquire_full': the stage produces queue @q, so its kernel uses acquire_empty / release_full

// -----

// One kernel run by two stages that bind it to different queues.
builtin.module {
  gpu.module @kernels {
    gpu.func @relay(%in: !dataflow.queue<2 x memref<64xf32>>, %out: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @x : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @y : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @z : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@x]}
    dataflow.stage @r1 {kernel = @kernels::@relay, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@x], outputs = [@y]}
    dataflow.stage @r2 {kernel = @kernels::@relay, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@y], outputs = [@z]}
    dataflow.stage @t {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@z], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:55:5: convert-dataflow-to-nvvm: kernel @relay runs in stages @r1 and @r2 with different queues; give each stage its own kernel

// -----

// Groups of 128 threads do not tile a block of 192.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 192, 1, 1>} {
      %t = dataflow.acquire_empty %q threads 128 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t threads 128 : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:67:7: convert-dataflow-to-nvvm: 'dataflow.acquire_empty' threads 128: the block of @source (192 threads) is not a whole number of groups

// -----

// 14 groups of one warp: each needs a named barrier, and only 13 are left for them.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 448, 1, 1>} {
      %t = dataflow.acquire_full %q threads 32 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %t threads 32 : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:92:7: convert-dataflow-to-nvvm: 'dataflow.acquire_full' threads 32: the block of @sink (448 threads) makes 14 groups, more than the 13 named barriers left for them

// -----

// Groups need the block size to be counted.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      %t = dataflow.acquire_empty %q threads 128 : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:111:7: convert-dataflow-to-nvvm: 'dataflow.acquire_empty' threads 128: @source declares no block size (gpu.known_block_size), so its groups cannot be counted

// -----

// Groups are consecutive thread ids of a one-dimensional block.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 2, 1>} {
      %t = dataflow.acquire_empty %q threads 128 : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:132:7: convert-dataflow-to-nvvm: 'dataflow.acquire_empty' threads 128: groups of threads need a one-dimensional block, @source has 128 x 2 x 1

// -----

// A group acquires the ticket, so the group (not the block) must release it.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %t = dataflow.acquire_empty %q threads 128 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:154:7: convert-dataflow-to-nvvm: 'dataflow.release_full' is run by the block but 'dataflow.acquire_empty' by groups of 128 threads: a kernel's queue ops have one kind of worker (it releases the tickets it acquired)

// -----

// A worker draws ahead only the tickets it takes before it holds an entry: a stage that consumes
// @x holds its input entry when it takes an output ticket, so that one must not be drawn ahead.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%x: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
    gpu.func @relay(%x: !dataflow.queue<2 x memref<64xf32>>, %y: !dataflow.queue<2 x memref<64xf32>>) kernel {
      %d = dataflow.draw_empty %y : !dataflow.queue<2 x memref<64xf32>>
      %t = dataflow.acquire_full %x : !dataflow.queue<2 x memref<64xf32>>
      %u = dataflow.acquire_empty %y at %d : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @sink(%y: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @x : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @y : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@x]}
    dataflow.stage @b {kernel = @kernels::@relay, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@x], outputs = [@y]}
    dataflow.stage @c {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@y], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:181:7: convert-dataflow-to-nvvm: 'dataflow.acquire_empty' takes a ticket drawn ahead, but the kernel also consumes a queue: a worker holding its input entries would wait for an output ticket drawn out of order (draw ahead only the input tickets)

// -----

// ... and only those of its tile's first acquire: here @y's, after @x's entry is held.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%x: !dataflow.queue<2 x memref<64xf32>>, %y: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
    gpu.func @join(%x: !dataflow.queue<2 x memref<64xf32>>, %y: !dataflow.queue<2 x memref<64xf32>>) kernel {
      %d = dataflow.draw_full %y : !dataflow.queue<2 x memref<64xf32>>
      %t = dataflow.acquire_full %x : !dataflow.queue<2 x memref<64xf32>>
      %u = dataflow.acquire_full %y at %d : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @x : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @y : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@x, @y]}
    dataflow.stage @b {kernel = @kernels::@join, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@x, @y], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:209:7: convert-dataflow-to-nvvm: 'dataflow.acquire_full' takes a ticket drawn ahead after 'dataflow.acquire_full' acquired an entry: a worker may draw ahead only the tickets of its tile's first acquire

// -----

// ... on one queue end: @join draws ahead on @x and on @y.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%x: !dataflow.queue<2 x memref<64xf32>>, %y: !dataflow.queue<2 x memref<64xf32>>) kernel {
      gpu.return
    }
    gpu.func @join(%x: !dataflow.queue<2 x memref<64xf32>>, %y: !dataflow.queue<2 x memref<64xf32>>) kernel {
      %d = dataflow.draw_full %x : !dataflow.queue<2 x memref<64xf32>>
      %t = dataflow.acquire_full %x at %d : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %x, %t : !dataflow.queue<2 x memref<64xf32>>
      %e = dataflow.draw_full %y : !dataflow.queue<2 x memref<64xf32>>
      %u = dataflow.acquire_full %y at %e : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @x : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @y : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@x, @y]}
    dataflow.stage @b {kernel = @kernels::@join, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@x, @y], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:235:7: convert-dataflow-to-nvvm: 'dataflow.acquire_full': the kernel draws ahead on 2 queue ends; a worker may draw ahead only the tickets of its tile's first acquire

// -----

// A cluster queue has one worker a CTA at each end: no `threads`.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_empty %q threads 32 : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      dataflow.release_full %q, %t threads 32 : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q cluster : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:254:7: convert-dataflow-to-nvvm: 'dataflow.acquire_empty': cluster queue @q has one worker a CTA at each end (no `threads`)

// -----

// Its tickets are taken in order as its ends acquire them: no `at`.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %t = dataflow.acquire_empty %q at %c0 : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q cluster : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:277:7: convert-dataflow-to-nvvm: 'dataflow.acquire_empty': cluster queue @q takes its tickets in order as it acquires them (no `at`)

// -----

// Its entry is the consumer's shared memory by its generic address, not global memory.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xi32, 0 : i64>> -> memref<64xi32>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q cluster : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:300:7: convert-dataflow-to-nvvm: 'dataflow.entry': the entry of cluster queue @q is its consumer's shared memory by its generic address: its memref takes memory space 0 (memref<..., 0 : i64>), got memref<64xi32>

// -----

// A cluster queue's barriers count the warps of a block: the kernel must declare one.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel {
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q cluster : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
    dataflow.stage @a {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @b {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = []}
  }
}
// CHECK: dataflow_to_nvvm_invalid.mlir:321:5: convert-dataflow-to-nvvm: kernel @source uses cluster queue @q, whose barriers count its warps: it declares a block of whole warps (gpu.known_block_size)
