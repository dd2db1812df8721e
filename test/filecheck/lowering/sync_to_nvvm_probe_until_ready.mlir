// RUN: tilesync-opt %s -p 'convert-sync-to-nvvm{default_timeout_ns=5000 backoff_ns=32}' | filecheck %s
// RUN: tilesync-opt %s -p 'convert-sync-to-nvvm{default_timeout_ns=5000 backoff_ns=32 debug=true}' | filecheck %s --check-prefix=DEBUG

// The probe of sync_to_nvvm_probe.mlir `until_ready`: thread t of the block spins on points
// t, t + threads, ... (a wait's spin: one acquire load decides, then the timed loop with
// backoff), a block barrier follows, and the answer is true, so the wait it guards never runs.
gpu.module @kernels {
  gpu.func @consumer(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x, %y = sync.tile : index, index
    %ready = sync.probe %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0 - 1, s0)>] over [array<i64: 0, 8, 2>] clipped_to array<i64: 4, 8> until_ready : memref<?xi32>
    sync.wait %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> unless %ready : memref<?xi32>
    gpu.return
  }
}

// CHECK-LABEL: gpu.func @consumer
// CHECK:         %[[TARGET:.*]] = arith.muli %epoch, %{{.*}} : i32
// CHECK-NEXT:    %[[TX:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[TY:.*]] = gpu.thread_id y
// CHECK-NEXT:    %[[TZ:.*]] = gpu.thread_id z
// CHECK-NEXT:    %[[NX:.*]] = gpu.block_dim x
// CHECK-NEXT:    %[[NY:.*]] = gpu.block_dim y
// CHECK-NEXT:    %[[NZ:.*]] = gpu.block_dim z
// CHECK-NEXT:    %[[A:.*]] = arith.muli %[[NY]], %[[TZ]] : index
// CHECK-NEXT:    %[[PLANE:.*]] = arith.addi %[[TY]], %[[A]] : index
// CHECK-NEXT:    %[[B:.*]] = arith.muli %[[NX]], %[[PLANE]] : index
// CHECK-NEXT:    %[[THREAD:.*]] = arith.addi %[[TX]], %[[B]] : index
// CHECK-NEXT:    %[[C:.*]] = arith.muli %[[NY]], %[[NZ]] : index
// CHECK-NEXT:    %[[THREADS:.*]] = arith.muli %[[NX]], %[[C]] : index
// CHECK-NEXT:    %[[POINTS:.*]] = arith.constant 4 : index
// CHECK-NEXT:    scf.for %[[P:.*]] = %[[THREAD]] to %[[POINTS]] step %[[THREADS]] {
// CHECK:           %[[ROW:.*]] = affine.apply affine_map<(d0, d1)[s0] -> ((d0 + -1))>
// CHECK:           arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK:           arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK:           %[[COL_IN:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:      %[[INSIDE:.*]] = arith.andi %{{.*}}, %[[COL_IN]] : i1
// A row above the grid is read by nobody: no spin there.
// CHECK-NEXT:      scf.if %[[INSIDE]] {
// CHECK:             %[[PTR:.*]] = llvm.getelementptr
// CHECK-NEXT:        %[[SEEN:.*]] = nvvm.ld acquire, gpu %[[PTR]] : !llvm.ptr<1> -> i32
// CHECK-NEXT:        %[[AHEAD:.*]] = arith.subi %[[SEEN]], %[[TARGET]] : i32
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:        %[[SHORT:.*]] = arith.cmpi slt, %[[AHEAD]], %[[ZERO]] : i32
// CHECK-NEXT:        scf.if %[[SHORT]] {
// CHECK-NEXT:          %[[START:.*]] = nvvm.read.ptx.sreg.globaltimer : i64
// CHECK-NEXT:          scf.while () : () -> () {
// CHECK-NEXT:            nvvm.ld acquire, gpu %[[PTR]] : !llvm.ptr<1> -> i32
// CHECK:                 %[[LIMIT:.*]] = arith.constant 5000 : i64
// CHECK:                 scf.if %{{.*}} {
// CHECK-NEXT:              nvvm.trap
// CHECK-NEXT:            }
// CHECK-NEXT:            scf.condition
// CHECK-NEXT:          } do {
// CHECK-NEXT:            %[[SLEEP:.*]] = arith.constant 32 : i32
// CHECK-NEXT:            nvvm.nanosleep %[[SLEEP]] : i32
// CHECK:               }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    nvvm.barrier0
// CHECK-NEXT:    %ready = arith.constant true
// CHECK-NOT:     nvvm.barrier0.or
// The guarded wait is skipped by the constant answer (LLVM folds it away).
// CHECK:         %[[NOT_READY:.*]] = arith.xori %ready, %{{.*}} : i1
// CHECK-NEXT:    scf.if %[[NOT_READY]] {

// With debug, a spin that times out names its semaphore in the record before the trap.
// DEBUG-LABEL: gpu.func @consumer
// DEBUG-SAME:    (%sems: memref<?xi32>, %epoch: i32, %[[RECORD:.*]]: memref<?xi32>) kernel attributes {sync.args = ["debug_record"]}
// DEBUG:         scf.for
// DEBUG:           scf.while
// DEBUG:             builtin.unrealized_conversion_cast %[[RECORD]]
// DEBUG:             nvvm.atom.cas
// DEBUG:             nvvm.trap
