// RUN: tilesync-opt %s -p 'convert-sync-to-nvvm{default_timeout_ns=5000 backoff_ns=32}' | filecheck %s

// Rows of a 2-D grid share one semaphore (RowSync): the index is the row, readiness needs
// 4 posts per launch, so the wait compares against epoch * 4.
gpu.module @kernels {
  gpu.func @consumer(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x, %y = sync.tile : index, index
    sync.wait %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
    gpu.return
  }
  gpu.func @producer(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
    gpu.return
  }
  gpu.func @explicit_timeout(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x = sync.tile : index
    sync.wait %sems[%x] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> timeout_ns 777 : memref<?xi32>
    gpu.return
  }
}

// CHECK-LABEL: gpu.func @consumer
// CHECK:         %[[X:.*]] = gpu.block_id x
// CHECK-NEXT:    %[[Y:.*]] = gpu.block_id y
// CHECK:         %[[POSTS:.*]] = arith.constant 4 : i32
// CHECK-NEXT:    %[[TARGET:.*]] = arith.muli %epoch, %[[POSTS]] : i32
// CHECK:         %[[LEADER:.*]] = arith.cmpi eq
// CHECK-NEXT:    scf.if %[[LEADER]] {
// CHECK-NEXT:      %[[IDX:.*]] = affine.apply affine_map<(d0, d1) -> (d0)> (%[[X]], %[[Y]])
// CHECK-NEXT:      %[[IDX64:.*]] = arith.index_cast %[[IDX]] : index to i64
// CHECK-NEXT:      %[[BASE:.*]] = builtin.unrealized_conversion_cast %sems : memref<?xi32> to !llvm.ptr<1>
// CHECK-NEXT:      %[[PTR:.*]] = llvm.getelementptr %[[BASE]][%[[IDX64]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// One acquire load first: a semaphore already there costs no timer read and no loop.
// CHECK-NEXT:      %[[FIRST:.*]] = nvvm.ld acquire, gpu %[[PTR]] : !llvm.ptr<1> -> i32
// Counts compare modulo 2^32 (seen - target < 0 as a signed i32): right across the wrap of
// epoch * posts, which epochs reach after 2^31 / posts runs or replays.
// CHECK-NEXT:      %[[FIRST_AHEAD:.*]] = arith.subi %[[FIRST]], %[[TARGET]] : i32
// CHECK-NEXT:      %[[ZERO0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[NOT_YET:.*]] = arith.cmpi slt, %[[FIRST_AHEAD]], %[[ZERO0]] : i32
// CHECK-NEXT:      scf.if %[[NOT_YET]] {
// CHECK-NEXT:        %[[START:.*]] = nvvm.read.ptx.sreg.globaltimer : i64
// CHECK-NEXT:        scf.while () : () -> () {
// CHECK-NEXT:          %[[SEEN:.*]] = nvvm.ld acquire, gpu %[[PTR]] : !llvm.ptr<1> -> i32
// CHECK-NEXT:          %[[AHEAD:.*]] = arith.subi %[[SEEN]], %[[TARGET]] : i32
// CHECK-NEXT:          %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:          %[[AGAIN:.*]] = arith.cmpi slt, %[[AHEAD]], %[[ZERO]] : i32
// CHECK-NEXT:          %[[NOW:.*]] = nvvm.read.ptx.sreg.globaltimer : i64
// CHECK-NEXT:          %[[ELAPSED:.*]] = arith.subi %[[NOW]], %[[START]] : i64
// CHECK-NEXT:          %[[LIMIT:.*]] = arith.constant 5000 : i64
// CHECK-NEXT:          %[[LATE:.*]] = arith.cmpi sgt, %[[ELAPSED]], %[[LIMIT]] : i64
// CHECK-NEXT:          scf.if %[[LATE]] {
// CHECK-NEXT:            nvvm.trap
// CHECK-NEXT:          }
// CHECK-NEXT:          scf.condition(%[[AGAIN]])
// CHECK-NEXT:        } do {
// CHECK-NEXT:          %[[NS:.*]] = arith.constant 32 : i32
// CHECK-NEXT:          nvvm.nanosleep %[[NS]]
// CHECK-NEXT:          scf.yield
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    nvvm.barrier0
// CHECK-NEXT:    gpu.return
// CHECK-NOT:     sync.

// CHECK-LABEL: gpu.func @producer
// CHECK:         nvvm.barrier0
// CHECK:         %[[LEADER:.*]] = arith.cmpi eq
// CHECK-NEXT:    scf.if %[[LEADER]] {
// CHECK-NEXT:      affine.apply affine_map<(d0, d1) -> (d0)>
// CHECK:           %[[PTR:.*]] = llvm.getelementptr
// CHECK-NEXT:      nvvm.fence acq_rel, gpu
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:      nvvm.red add relaxed, gpu %[[PTR]], %[[ONE]] : !llvm.ptr<1>, i32
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.return

// CHECK-LABEL: gpu.func @explicit_timeout
// CHECK:         arith.constant 777 : i64
// CHECK-NOT:     sync.
