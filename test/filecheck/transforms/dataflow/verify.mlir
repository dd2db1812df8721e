// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' | filecheck %s

// 132 producer CTAs (80 registers x 256 threads: 3 per SM) and 264 consumer CTAs (32
// registers: 8 per SM) fit at once, whatever SMs the hardware puts them on; each launch fills and takes 1024 tickets of @h.
builtin.module {
  gpu.module @kernels {
    gpu.func @gemm(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %t = dataflow.acquire_empty %h : !dataflow.queue<4 x memref<128x64xf16>>
      dataflow.release_full %h, %t : !dataflow.queue<4 x memref<128x64xf16>>
      gpu.return
    }
    gpu.func @act(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %t = dataflow.acquire_full %h : !dataflow.queue<4 x memref<128x64xf16>>
      dataflow.release_empty %h, %t : !dataflow.queue<4 x memref<128x64xf16>>
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.queue @h pin_l2 : !dataflow.queue<4 x memref<128x64xf16>>
    dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 132 : i64, inputs = [], outputs = [@h], registers = 80 : i64, shared_bytes = 0 : i64, tiles = 1024 : i64}
    dataflow.stage @act {kernel = @kernels::@act, resource = #dataflow.resource<simt>, ctas = 264 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1024 : i64}
  }
}

// CHECK: dataflow.pipeline @mlp attributes {dataflow.verified = "co-resident: all 396 blocks are co-resident (at most 396 = 132 SMs x 3 blocks per SM); tickets balanced on 1 queue(s)"}

// With 600 consumer CTAs some SM may be left without room for a producer CTA.
// RUN: sed -e 's/ctas = 264/ctas = 600/' %s | tilesync-opt -p 'dataflow-verify{sms=132}' --verify-diagnostics | filecheck %s --check-prefix=OVER
// OVER: dataflow-verify: pipeline @mlp cannot run: not all 732 blocks are co-resident (3/8 blocks per SM on 132 SMs) (@gemm 132 x 1/3 SM, @act 600 x 1/8 SM)

// residency=false (the compile driver's check of a hand-written pipeline): the queues and the
// kernels' tickets only; co-residency is the cooperative launch's, so 600 consumer CTAs pass.
// RUN: sed -e 's/ctas = 264/ctas = 600/' %s | tilesync-opt -p 'dataflow-verify{residency=false}' | filecheck %s --check-prefix=TICKETS
// TICKETS: dataflow.pipeline @mlp attributes {dataflow.verified = "co-resident: left to the launch; tickets balanced on 1 queue(s)"}
