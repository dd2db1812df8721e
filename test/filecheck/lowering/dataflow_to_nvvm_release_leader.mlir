// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{default_timeout_ns=5000 backoff_ns=16 debug=false}' | filecheck %s

// A worker's release is led by another warp than its acquire (RELEASE_LEADER, thread 32), so the
// release's fence and the next acquire's spin stall different warps: in a block worker whose
// block is known one-dimensional and wider than a warp (@wide). A block of one warp (@narrow) or
// of more than one dimension (@square) keeps thread 0.
builtin.module {
  gpu.module @kernels {
    gpu.func @wide(%x: !dataflow.queue<4 x memref<256xf32>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %t = dataflow.acquire_empty %x : !dataflow.queue<4 x memref<256xf32>>
      dataflow.release_full %x, %t : !dataflow.queue<4 x memref<256xf32>>
      gpu.return
    }
    gpu.func @narrow(%x: !dataflow.queue<4 x memref<256xf32>>) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>} {
      %t = dataflow.acquire_full %x : !dataflow.queue<4 x memref<256xf32>>
      dataflow.release_empty %x, %t : !dataflow.queue<4 x memref<256xf32>>
      gpu.return
    }
    gpu.func @square(%x: !dataflow.queue<4 x memref<256xf32>>) kernel attributes {gpu.known_block_size = array<i32: 64, 2, 1>} {
      %t = dataflow.acquire_full %x : !dataflow.queue<4 x memref<256xf32>>
      dataflow.release_empty %x, %t : !dataflow.queue<4 x memref<256xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @x : !dataflow.queue<4 x memref<256xf32>>
    dataflow.stage @src {kernel = @kernels::@wide, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@x]}
    dataflow.stage @a {kernel = @kernels::@narrow, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@x], outputs = []}
    dataflow.stage @b {kernel = @kernels::@square, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@x], outputs = []}
  }
}

// @wide acquires in thread 0 (every thread id is 0) ...
// CHECK-LABEL: gpu.func @wide
// CHECK:         arith.ori
// CHECK-NEXT:    %[[OR:.*]] = arith.ori
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.cmpi eq, %[[OR]], %[[ZERO]] : index
// CHECK-NEXT:    scf.if %[[FIRST]] {
// CHECK:           nvvm.atom add relaxed, gpu
// ... hands the ticket out at the block's barrier, and releases in thread 32 after another.
// CHECK:         nvvm.barrier0
// CHECK:         nvvm.barrier0
// CHECK-NEXT:    %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[R:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[LEADER:.*]] = arith.cmpi eq, %[[TID]], %[[R]] : index
// CHECK-NEXT:    scf.if %[[LEADER]] {
// CHECK:           nvvm.fence acq_rel, gpu
// CHECK:           nvvm.red add relaxed, gpu
// CHECK:         gpu.return

// CHECK-LABEL: gpu.func @narrow
// CHECK:         nvvm.barrier0
// CHECK:         nvvm.barrier0
// CHECK-NEXT:    gpu.thread_id x
// CHECK-NEXT:    gpu.thread_id y
// CHECK-NEXT:    gpu.thread_id z
// CHECK-NOT:     arith.constant 32 : index
// CHECK:         nvvm.fence acq_rel, gpu
// CHECK:         gpu.return

// CHECK-LABEL: gpu.func @square
// CHECK:         nvvm.barrier0
// CHECK:         nvvm.barrier0
// CHECK-NEXT:    gpu.thread_id x
// CHECK-NEXT:    gpu.thread_id y
// CHECK-NEXT:    gpu.thread_id z
// CHECK-NOT:     arith.constant 32 : index
// CHECK:         nvvm.fence acq_rel, gpu
// CHECK:         gpu.return
