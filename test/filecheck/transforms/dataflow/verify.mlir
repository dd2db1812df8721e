// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' | filecheck %s

// 132 producer CTAs (80 registers x 256 threads: 3 per SM) and 264 consumer CTAs (32
// registers: 8 per SM) fit at once, whatever SMs the hardware puts them on; each launch fills
// and takes 1024 tickets of @h, each CTA striding over the tiles by the grid.
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

// The kernels are held to the tiles their stages declare: CTAs taking one ticket each take 132
// of the 1024 a launch is balanced on (the consumers' next launch would find tickets of this
// one); a stride over 2048 tiles waits for tickets no launch of the producer fills; a loop
// whose bounds vary with the thread within a worker leaves some of its threads short of the
// worker's barriers (and its tickets could not be counted either).
// RUN: sed -e 's/scf.for %i = %cta to %count step %ctas {/scf.if %yes {/' -e 's/%count = arith.constant 1024 : index/%yes = arith.constant true/' %s | tilesync-opt -p 'dataflow-verify{sms=132}' --verify-diagnostics | filecheck %s --check-prefix=ONE-EACH
// ONE-EACH: dataflow-verify: stage @gemm: its kernel, launched with 132 CTA(s), acquires 132 ticket(s) of @h a launch, but the stage declares 1024 'tiles' (1024 ticket(s)): a launch would leave 892 of them
// RUN: sed -e 's/arith.constant 1024 : index/arith.constant 2048 : index/' %s | tilesync-opt -p 'dataflow-verify{sms=132}' --verify-diagnostics | filecheck %s --check-prefix=TWICE
// TWICE: dataflow-verify: stage @gemm: its kernel, launched with 132 CTA(s), acquires 2048 ticket(s) of @h a launch, but the stage declares 1024 'tiles' (1024 ticket(s)): a launch would wait forever for 1024 of them
// RUN: sed -e 's/%cta = gpu.block_id x/%cta = gpu.thread_id x/' %s | tilesync-opt -p 'dataflow-verify{sms=132}' --verify-diagnostics | filecheck %s --check-prefix=UNCOUNTED
// UNCOUNTED: dataflow-verify: stage @gemm: 'dataflow.acquire_empty' waits for every thread of the block, but it is inside a loop whose bounds depend on the thread index: threads that run fewer iterations stop arriving
