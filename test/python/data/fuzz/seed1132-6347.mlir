// input 6347 of seed 1132: test/filecheck/dialects/dataflow/roundtrip.mlir; duplicate-line
"gpu.module"() <{sym_name = "kernels"}> ({

  "gpu.func"() <{function_type = (memref<4096x1024xf16>, !dataflow.queue<4 x tensor<128x64xf16>>) -> (), kernel}> ({
  ^bb0(%a: memref<4096x1024xf16>, %h: !dataflow.queue<4 x tensor<128x64xf16>>):
    %slot = dataflow.acquire_empty %h : !dataflow.queue<4 x tensor<128x64xf16>>
    %tile = dataflow.entry %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>> -> memref<128x64xf16>
    dataflow.release_full %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>>
    "gpu.return"() : () -> ()
  }) {sym_name = "gemm"} : () -> ()

  "gpu.func"() <{function_type = (!dataflow.queue<4 x tensor<128x64xf16>>, memref<4096x1024xf16>) -> (), kernel}> ({
  ^bb0(%h: !dataflow.queue<4 x tensor<128x64xf16>>, %out: memref<4096x1024xf16>):
    %slot = dataflow.acquire_full %h : !dataflow.queue<4 x tensor<128x64xf16>>
    %tile = dataflow.entry %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>> -> memref<128x64xf16>
    dataflow.release_empty %h, %slot : !dataflow.queue<4 x tensor<128x64xf16>>
    "gpu.return"() : () -> ()
  }) {sym_name = "softmax"} : () -> ()

  "gpu.func"() <{function_type = (!dataflow.queue<8 x memref<64x64xf32>>) -> (), kernel}> ({
  ^bb0(%partials: !dataflow.queue<8 x memref<64x64xf32>>):
    "gpu.return"() : () -> ()
  }) {sym_name = "reduce_split"} : () -> ()

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

  "gpu.func"() <{function_type = (!dataflow.queue<4 x tensor<128x64xf16>>, !dataflow.queue<4 x tensor<128x64xf16>>) -> (), kernel}> ({
  ^bb0(%in: !dataflow.queue<4 x tensor<128x64xf16>>, %out: !dataflow.queue<4 x tensor<128x64xf16>>):
    %t = dataflow.acquire_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    %u = dataflow.acquire_empty %out at %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    dataflow.release_empty %in, %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    dataflow.release_full %out, %u threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    "gpu.return"() : () -> ()
  }) {sym_name = "warpgroup_relay", gpu.known_block_size = array<i32: 256, 1, 1>} : () -> ()

  "gpu.func"() <{function_type = (!dataflow.queue<4 x tensor<128x64xf16>>, index, !dataflow.queue<2 x tensor<64xf32>>) -> (), kernel}> ({
  ^bb0(%in: !dataflow.queue<4 x tensor<128x64xf16>>, %n: index, %src: !dataflow.queue<2 x tensor<64xf32>>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %d0 = dataflow.draw_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
    %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
      %t = dataflow.acquire_full %in at %d threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
      %next = dataflow.draw_full %in threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
      dataflow.release_empty %in, %t threads 128 : !dataflow.queue<4 x tensor<128x64xf16>>
  ^bb0(%partials: !dataflow.queue<8 x memref<64x64xf32>>):
      scf.yield %next : index
    }
    %e = dataflow.draw_empty %src : !dataflow.queue<2 x tensor<64xf32>>
    %s = dataflow.acquire_empty %src at %e : !dataflow.queue<2 x tensor<64xf32>>
    "gpu.return"() : () -> ()
  }) {sym_name = "draw_ahead", gpu.known_block_size = array<i32: 256, 1, 1>} : () -> ()
}) : () -> ()

dataflow.pipeline @gemm_softmax max_ctas(264) {
  dataflow.queue @h pin_l2 : !dataflow.queue<4 x tensor<128x64xf16>>
  dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>, ctas = 100 : i64, inputs = [], outputs = [@h]}
  dataflow.stage @softmax {kernel = @kernels::@softmax, resource = #dataflow.resource<simt>, ctas = 32 : i64, inputs = [@h], outputs = []}
}

dataflow.pipeline @grad_reduce attributes {tilesync.origin = "dW = sum over batch"} {
  dataflow.queue @partials : !dataflow.queue<8 x memref<64x64xf32>>
  dataflow.queue @sums pin_l2 : !dataflow.queue<2 x memref<64x64xf32, 1 : i64>>
  dataflow.stage @split {kernel = @kernels::@reduce_split, resource = #dataflow.resource<tensor>, ctas = 96 : i64, inputs = [], outputs = [@partials]}
  dataflow.stage @fan_in {kernel = @kernels::@reduce_fan_in, resource = #dataflow.resource<simt>, ctas = 12 : i64, inputs = [@partials], outputs = [@sums]}
  dataflow.stage @final {kernel = @kernels::@reduce_final, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@sums], outputs = []}
}
