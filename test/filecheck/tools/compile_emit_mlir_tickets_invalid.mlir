// RUN: not tilesync compile %s --emit mlir 2>&1 | filecheck %s
// RUN: not tilesync compile %s -o /dev/null 2>&1 | filecheck %s
// --emit mlir runs the passes compile's default pipeline runs: a hand-written pipeline whose
// producer never gives its tickets back is refused by dataflow-verify's ticket check before it
// is lowered, as it is for PTX (--emit mlir printed the lowered IR and exited 0).
builtin.module {
  gpu.module @kernels {
    gpu.func @fill(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %count = arith.constant 1024 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %count step %ctas {
        %t = dataflow.acquire_empty %h : !dataflow.queue<4 x memref<128x64xf16>>
      }
      gpu.return
    }
    gpu.func @drain(%h: !dataflow.queue<4 x memref<128x64xf16>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
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
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<4 x memref<128x64xf16>>
    dataflow.stage @fill {kernel = @kernels::@fill, resource = #dataflow.resource<simt>, ctas = 132 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1024 : i64}
    dataflow.stage @drain {kernel = @kernels::@drain, resource = #dataflow.resource<simt>, ctas = 132 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1024 : i64}
  }
}
// CHECK: compile_emit_mlir_tickets_invalid.mlir:30:5: error: dataflow-verify: stage @fill: its kernel @kernels::@fill never runs 'dataflow.release_full' on @h
