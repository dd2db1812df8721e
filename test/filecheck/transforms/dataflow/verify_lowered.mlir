// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{debug=false},dataflow-verify{residency=false}' --verify-diagnostics | filecheck %s --check-prefix=UNCHECKED
// RUN: tilesync-opt %s -p 'dataflow-verify{residency=false},convert-dataflow-to-nvvm{debug=false},dataflow-verify{residency=false}' | filecheck %s --check-prefix=PROVED

// Once lowered, a kernel's queues are ring parameters its tickets cannot be followed through:
// a pipeline lowered before it was proved is refused, not stamped verified; one proved before
// its kernels were lowered keeps that proof.
builtin.module {
  gpu.module @kernels {
    gpu.func @prod(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 8 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %h : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %h, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @cons(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 4 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_full %h : !dataflow.queue<2 x memref<64xf32>>
        %b = dataflow.acquire_full %h : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %h, %a : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %h, %b : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@prod, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @b {kernel = @kernels::@cons, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}

// UNCHECKED: verify_lowered.mlir:34:5: dataflow-verify: stage @a: its kernel @kernels::@prod does not take its queues as queue arguments (lowered already, or not a gpu.func with a body), so the tickets it takes cannot be followed: dataflow-verify proves a pipeline before convert-dataflow-to-nvvm lowers its kernels

// PROVED: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: left to the launch; tickets balanced on 1 queue(s)"}
