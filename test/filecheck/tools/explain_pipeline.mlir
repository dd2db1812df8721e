// RUN: tilesync explain %s | filecheck %s
// RUN: sed -e 's/ctas = 264/ctas = 600/' %s | tilesync explain /dev/stdin | filecheck %s --check-prefix=OVER
// RUN: sed -e 's/, bsp_rate = 4.0e+06//' %s | tilesync explain /dev/stdin | filecheck %s --check-prefix=NORATE

// A producer GEMM and a SIMT consumer joined by one queue, each with its measured
// bulk-synchronous rate: the producer (2e6 tiles/s on the whole GPU, all of its 132 CTAs)
// bounds the pipeline at 512 us a launch of 1024 tickets at most; one stage after the other
// would take 512 + 256 us.
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
    dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 132 : i64, inputs = [], outputs = [@h], registers = 80 : i64, shared_bytes = 0 : i64, tiles = 1024 : i64, bsp_rate = 2.0e+06}
    dataflow.stage @act {kernel = @kernels::@act, resource = #dataflow.resource<simt>, ctas = 264 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1024 : i64, bsp_rate = 4.0e+06}
  }
}

// CHECK:      dataflow pipeline @mlp on 132 SMs (sm_90): 2 stages, 1 queue, 396 CTAs
// CHECK-NEXT:   queue @h: 4 entries of memref<128x64xf16> (16384 bytes, 66048 bytes in all), pinned in L2
// CHECK-NEXT:   stage @gemm: tensor, 132 CTAs, 1024 tickets a launch; reads -, writes @h; bulk-synchronous 2e+06 tiles/s on the whole GPU, so 2e+06 with 132 CTAs of 132: 512 us a launch
// CHECK-NEXT:   stage @act: simt, 264 CTAs, 1024 tickets a launch; reads @h, writes -; bulk-synchronous 4e+06 tiles/s on the whole GPU, so 8e+06 with 264 CTAs of 132: 128 us a launch
// CHECK-NEXT:   allotment model: 512 us a launch at most, bound by @gemm; the stages one after another on all SMs 768 us (x1.50)
// CHECK-NEXT:   co-residency: co-resident: all 396 blocks are co-resident (at most 396 = 132 SMs x 3 blocks per SM); tickets balanced on 1 queue(s)

// OVER: co-residency: not proved: dataflow-verify: pipeline @mlp cannot run: not all 732 blocks are co-resident

// NORATE: stage @act: simt, 264 CTAs, 1024 tickets a launch; reads @h, writes -{{$}}
// NORATE: allotment model: none without every stage's bsp_rate and tiles
