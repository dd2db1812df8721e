// RUN: tilesync-opt %s -p 'dataflow-verify{residency=false}' --split-input-file --verify-diagnostics | filecheck %s

// No stage declares its tiles (the compile driver's check of a hand-written pipeline), but the
// kernels' counts are constants: the producer fills 1024 tickets a launch, the consumer takes
// 1100. Balanced on what the kernels do, not left to the launch.
builtin.module {
  gpu.module @kernels {
    gpu.func @gemm(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %count = arith.constant 1024 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %count step %ctas {
        %t = dataflow.acquire_empty %h : !dataflow.queue<4 x memref<128x64xf16>>
        dataflow.release_full %h, %t : !dataflow.queue<4 x memref<128x64xf16>>
      }
      gpu.return
    }
    gpu.func @act(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %count = arith.constant 1100 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %count step %ctas {
        %t = dataflow.acquire_full %h : !dataflow.queue<4 x memref<128x64xf16>>
        dataflow.release_empty %h, %t : !dataflow.queue<4 x memref<128x64xf16>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.queue @h pin_l2 : !dataflow.queue<4 x memref<128x64xf16>>
    dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 132 : i64, inputs = [], outputs = [@h], registers = 80 : i64, shared_bytes = 0 : i64}
    dataflow.stage @act {kernel = @kernels::@act, resource = #dataflow.resource<simt>, ctas = 264 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64}
  }
}

// CHECK: verify_untiled_tickets.mlir:32:5: dataflow-verify: queue @h: the kernel of stage @gemm fills 1024 tickets per launch but that of stage @act takes 1100: a launch would wait forever for 76 ticket(s)

// -----

// The same kernels taking 1024 each: balanced.
builtin.module {
  gpu.module @kernels {
    gpu.func @gemm(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %count = arith.constant 1024 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %count step %ctas {
        %t = dataflow.acquire_empty %h : !dataflow.queue<4 x memref<128x64xf16>>
        dataflow.release_full %h, %t : !dataflow.queue<4 x memref<128x64xf16>>
      }
      gpu.return
    }
    gpu.func @act(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %count = arith.constant 1024 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %count step %ctas {
        %t = dataflow.acquire_full %h : !dataflow.queue<4 x memref<128x64xf16>>
        dataflow.release_empty %h, %t : !dataflow.queue<4 x memref<128x64xf16>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.queue @h pin_l2 : !dataflow.queue<4 x memref<128x64xf16>>
    dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 132 : i64, inputs = [], outputs = [@h], registers = 80 : i64, shared_bytes = 0 : i64}
    dataflow.stage @act {kernel = @kernels::@act, resource = #dataflow.resource<simt>, ctas = 264 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64}
  }
}

// CHECK: dataflow.pipeline @mlp attributes {dataflow.verified = "co-resident: left to the launch; tickets balanced on 1 queue(s), as its kernels take them"}

// -----

// A count a kernel argument decides stays the launch's.
builtin.module {
  gpu.module @kernels {
    gpu.func @gemm(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %count = arith.constant 1024 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %count step %ctas {
        %t = dataflow.acquire_empty %h : !dataflow.queue<4 x memref<128x64xf16>>
        dataflow.release_full %h, %t : !dataflow.queue<4 x memref<128x64xf16>>
      }
      gpu.return
    }
    gpu.func @act(%h: !dataflow.queue<4 x memref<128x64xf16>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %count = arith.constant 1100 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %n step %ctas {
        %t = dataflow.acquire_full %h : !dataflow.queue<4 x memref<128x64xf16>>
        dataflow.release_empty %h, %t : !dataflow.queue<4 x memref<128x64xf16>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.queue @h pin_l2 : !dataflow.queue<4 x memref<128x64xf16>>
    dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 132 : i64, inputs = [], outputs = [@h], registers = 80 : i64, shared_bytes = 0 : i64}
    dataflow.stage @act {kernel = @kernels::@act, resource = #dataflow.resource<simt>, ctas = 264 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64}
  }
}

// CHECK: dataflow.pipeline @mlp attributes {dataflow.verified = "co-resident: left to the launch; tickets a launch: its arguments' (1 queue(s))"}
