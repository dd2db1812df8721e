// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

// Kitsune-style pipelines: stages run at the same time in their own CTAs and hand tiles over
// through queues. The kernels live in a gpu.module (xDSL prints it in generic form); each takes
// its queues as arguments, the stage's inputs first, then its outputs. The CHECK lines match the
// gpu ops whether they print in generic or in upstream form.

// CHECK:      gpu.module
"gpu.module"() <{sym_name = "kernels"}> ({

  // GEMM producer: fill one 128x64 tile per acquired entry and publish it.
  // CHECK:        (%a: memref<4096x1024xf16>, %h: !dataflow.queue<4 x tensor<128x64xf16>>)
  // CHECK-NEXT:     %slot = dataflow.acquire_empty %h : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:     %tile = dataflow.entry %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>> -> memref<128x64xf16>
  // CHECK-NEXT:     dataflow.release_full %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:     gpu.return
  "gpu.func"() <{function_type = (memref<4096x1024xf16>, !dataflow.queue<4 x tensor<128x64xf16>>) -> (), kernel}> ({
  ^bb0(%a: memref<4096x1024xf16>, %h: !dataflow.queue<4 x tensor<128x64xf16>>):
    %slot = dataflow.acquire_empty %h : !dataflow.queue<4 x tensor<128x64xf16>>
    %tile = dataflow.entry %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>> -> memref<128x64xf16>
    dataflow.release_full %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>>
    "gpu.return"() : () -> ()
  }) {sym_name = "gemm"} : () -> ()

  // Softmax consumer: take filled entries in ticket order, read them, give them back.
  // CHECK:        (%h: !dataflow.queue<4 x tensor<128x64xf16>>, %out: memref<4096x1024xf16>)
  // CHECK-NEXT:     %slot = dataflow.acquire_full %h : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:     %tile = dataflow.entry %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>> -> memref<128x64xf16>
  // CHECK-NEXT:     dataflow.release_empty %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:     gpu.return
  "gpu.func"() <{function_type = (!dataflow.queue<4 x tensor<128x64xf16>>, memref<4096x1024xf16>) -> (), kernel}> ({
  ^bb0(%h: !dataflow.queue<4 x tensor<128x64xf16>>, %out: memref<4096x1024xf16>):
    %slot = dataflow.acquire_full %h : !dataflow.queue<4 x tensor<128x64xf16>>
    %tile = dataflow.entry %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>> -> memref<128x64xf16>
    dataflow.release_empty %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>>
    "gpu.return"() : () -> ()
  }) {sym_name = "softmax"} : () -> ()

  // Split reduction (e.g. a weight gradient reduced over the batch): many CTAs compute
  // partial sums, a fan-in stage adds groups of them, one final CTA adds the rest.
  "gpu.func"() <{function_type = (!dataflow.queue<8 x memref<64x64xf32>>) -> (), kernel}> ({
  ^bb0(%partials: !dataflow.queue<8 x memref<64x64xf32>>):
    "gpu.return"() : () -> ()
  }) {sym_name = "reduce_split"} : () -> ()

  // The fan-in stage forwards between two queues: the entry of one, a free entry of the other.
  // CHECK:        (%partials: !dataflow.queue<8 x memref<64x64xf32>>, %sums: !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>)
  // CHECK-NEXT:     %in = dataflow.acquire_full %partials : !dataflow.queue<8 x memref<64x64xf32>>
  // CHECK-NEXT:     %out = dataflow.acquire_empty %sums : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>
  // CHECK-NEXT:     %src = dataflow.entry %partials, %in : !dataflow.queue<8 x memref<64x64xf32>> -> memref<64x64xf32>
  // CHECK-NEXT:     %dst = dataflow.entry %sums, %out : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>> -> memref<64x64xf32, 1 : i64>
  // CHECK-NEXT:     dataflow.release_empty %partials, %in : !dataflow.queue<8 x memref<64x64xf32>>
  // CHECK-NEXT:     dataflow.release_full %sums, %out : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>
  "gpu.func"() <{function_type = (!dataflow.queue<8 x memref<64x64xf32>>, !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>) -> (), kernel}> ({
  ^bb0(%partials: !dataflow.queue<8 x memref<64x64xf32>>, %sums: !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>):
    %in = dataflow.acquire_full %partials : !dataflow.queue<8 x memref<64x64xf32>>
    %out = dataflow.acquire_empty %sums : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>
    %src = dataflow.entry %partials, %in : !dataflow.queue<8 x memref<64x64xf32>> -> memref<64x64xf32>
    %dst = dataflow.entry %sums, %out : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>> -> memref<64x64xf32, 1 : i64>
    dataflow.release_empty %partials, %in : !dataflow.queue<8 x memref<64x64xf32>>
    dataflow.release_full %sums, %out : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>
    "gpu.return"() : () -> ()
  }) {sym_name = "reduce_fan_in"} : () -> ()

  "gpu.func"() <{function_type = (!dataflow.queue<2 x memref<64x64xf32, 1 : i64>>, memref<64x64xf32>) -> (), kernel}> ({
  ^bb0(%sums: !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>, %grad: memref<64x64xf32>):
    "gpu.return"() : () -> ()
  }) {sym_name = "reduce_final"} : () -> ()

  // Two warpgroups, two queue workers per CTA (`threads 128`): each acquires, relays and
  // releases tickets of its own.
  // CHECK:        (%in: !dataflow.queue<4 x tensor<128x64xf16>>, %out: !dataflow.queue<4 x tensor<128x64xf16>>)
  // CHECK-NEXT:     %t = dataflow.acquire_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:     %u = dataflow.acquire_empty %out at %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:     dataflow.release_empty %in, %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:     dataflow.release_full %out, %u threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  "gpu.func"() <{function_type = (!dataflow.queue<4 x tensor<128x64xf16>>, !dataflow.queue<4 x tensor<128x64xf16>>) -> (), kernel}> ({
  ^bb0(%in: !dataflow.queue<4 x tensor<128x64xf16>>, %out: !dataflow.queue<4 x tensor<128x64xf16>>):
    %t = dataflow.acquire_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    %u = dataflow.acquire_empty %out at %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    dataflow.release_empty %in, %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    dataflow.release_full %out, %u threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    "gpu.return"() : () -> ()
  }) {sym_name = "warpgroup_relay", gpu.known_block_size = array<i32: 256, 1, 1>} : () -> ()

  // Drawing ahead: the next ticket drawn while the current one is in use, waited for later.
  // CHECK:        @draw_ahead(%in: !dataflow.queue<4 x tensor<128x64xf16>>, %n: index,
  // CHECK:          %d0 = dataflow.draw_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:     %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
  // CHECK-NEXT:       %t = dataflow.acquire_full %in at %d threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:       %next = dataflow.draw_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:       dataflow.release_empty %in, %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  // CHECK-NEXT:       scf.yield %next : index
  // CHECK:          %e = dataflow.draw_empty %src : !dataflow.queue<2 x tensor<64xf32>>
  // CHECK-NEXT:     %s = dataflow.acquire_empty %src at %e : !dataflow.queue<2 x tensor<64xf32>>
  "gpu.func"() <{function_type = (!dataflow.queue<4 x tensor<128x64xf16>>, index, !dataflow.queue<2 x tensor<64xf32>>) -> (), kernel}> ({
  ^bb0(%in: !dataflow.queue<4 x tensor<128x64xf16>>, %n: index, %src: !dataflow.queue<2 x tensor<64xf32>>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %d0 = dataflow.draw_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
      %t = dataflow.acquire_full %in at %d threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
      %next = dataflow.draw_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
      dataflow.release_empty %in, %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
      scf.yield %next : index
    }
    %e = dataflow.draw_empty %src : !dataflow.queue<2 x tensor<64xf32>>
    %s = dataflow.acquire_empty %src at %e : !dataflow.queue<2 x tensor<64xf32>>
    "gpu.return"() : () -> ()
  }) {sym_name = "draw_ahead", gpu.known_block_size = array<i32: 256, 1, 1>} : () -> ()
}) : () -> ()

// GEMM on the tensor cores feeding softmax on the SIMT cores; 132 SMs x 2 CTAs per SM.
// CHECK:      dataflow.pipeline @gemm_softmax max_ctas(264) {
// CHECK-NEXT:   dataflow.queue @h pin_l2 : !dataflow.queue<4 x tensor<128x64xf16>>
// CHECK-NEXT:   dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 100 : i64, inputs = [], outputs = [@h]}
// CHECK-NEXT:   dataflow.stage @softmax {kernel = @kernels::@softmax, resource = #dataflow.resource<simt>, ctas = 32 : i64, inputs = [@h], outputs = []}
// CHECK-NEXT: }
dataflow.pipeline @gemm_softmax max_ctas(264) {
  dataflow.queue @h pin_l2 : !dataflow.queue<4 x tensor<128x64xf16>>
  dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 100 : i64, inputs = [], outputs = [@h]}
  dataflow.stage @softmax {kernel = @kernels::@softmax, resource = #dataflow.resource<simt>, ctas = 32 : i64, inputs = [@h], outputs = []}
}

// Split reduction with fan-in and final stages; no max_ctas, so no co-residency bound here.
// CHECK:      dataflow.pipeline @grad_reduce attributes {tilesync.origin = "dW = sum over batch"} {
// CHECK-NEXT:   dataflow.queue @partials : !dataflow.queue<8 x memref<64x64xf32>>
// CHECK-NEXT:   dataflow.queue @sums pin_l2 : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>
// CHECK-NEXT:   dataflow.stage @split {kernel = @kernels::@reduce_split, resource = #dataflow.resource<tensor>, ctas = 96 : i64, inputs = [], outputs = [@partials]}
// CHECK-NEXT:   dataflow.stage @fan_in {kernel = @kernels::@reduce_fan_in, resource = #dataflow.resource<simt>, ctas = 12 : i64, inputs = [@partials], outputs = [@sums]}
// CHECK-NEXT:   dataflow.stage @final {kernel = @kernels::@reduce_final, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@sums], outputs = []}
// CHECK-NEXT: }
dataflow.pipeline @grad_reduce attributes {tilesync.origin = "dW = sum over batch"} {
  dataflow.queue @partials : !dataflow.queue<8 x memref<64x64xf32>>
  dataflow.queue @sums pin_l2 : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>
  dataflow.stage @split {kernel = @kernels::@reduce_split, resource = #dataflow.resource<tensor>, ctas = 96 : i64, inputs = [], outputs = [@partials]}
  dataflow.stage @fan_in {kernel = @kernels::@reduce_fan_in, resource = #dataflow.resource<simt>, ctas = 12 : i64, inputs = [@partials], outputs = [@sums]}
  dataflow.stage @final {kernel = @kernels::@reduce_final, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@sums], outputs = []}
}

// The same two stages in clusters: CTA c of each stage shares cluster c, the queue is one ring
// per cluster in the softmax CTA's shared memory.
// CHECK:      dataflow.pipeline @gemm_softmax_in_clusters {
// CHECK-NEXT:   dataflow.queue @h cluster : !dataflow.queue<4 x tensor<128x64xf16>>
// CHECK-NEXT:   dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 66 : i64, inputs = [], outputs = [@h]}
// CHECK-NEXT:   dataflow.stage @softmax {kernel = @kernels::@softmax, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [@h], outputs = []}
// CHECK-NEXT: }
dataflow.pipeline @gemm_softmax_in_clusters {
  dataflow.queue @h cluster : !dataflow.queue<4 x tensor<128x64xf16>>
  dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 66 : i64, inputs = [], outputs = [@h]}
  dataflow.stage @softmax {kernel = @kernels::@softmax, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [@h], outputs = []}
}

// The same stages in clusters without a cluster queue (kernels that reach each other's shared
// memory by tile.cluster_map): `cluster` on the pipeline.
// CHECK:      dataflow.pipeline @in_clusters cluster {
// CHECK-NEXT:   dataflow.stage @send {kernel = @exchange, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @receive {kernel = @exchange, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [], outputs = []}
// CHECK-NEXT: }
func.func private @exchange()
dataflow.pipeline @in_clusters cluster {
  dataflow.stage @send {kernel = @exchange, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [], outputs = []}
  dataflow.stage @receive {kernel = @exchange, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [], outputs = []}
}
