// RUN: tilesync-opt %s -p 'convert-sync-to-nvvm{default_timeout_ns=5000 backoff_ns=32}' | filecheck %s

// A probe of the 8 TileSync semaphores of a row, at k-step columns 0, 2, 4, 6 (the loop's
// step 2) and clipped to a 4 x 8 grid: thread t of the block tests points t, t + threads, ...
// (one acquire load each, no spin), `bar.red.or` tells every thread whether any was short;
// the wait that names the answer runs only where it is false.
gpu.module @kernels {
  gpu.func @consumer(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x, %y = sync.tile : index, index
    %ready = sync.probe %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0 - 1, s0)>] over [array<i64: 0, 8, 2>] clipped_to array<i64: 4, 8> : memref<?xi32>
    sync.wait %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> unless %ready : memref<?xi32>
    gpu.return
  }
}

// CHECK-LABEL: gpu.func @consumer
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[TARGET:.*]] = arith.muli %epoch, %[[ONE]] : i32
// The block's linear thread index and its number of threads:
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
// CHECK-NEXT:    %[[NONE:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[POINTS:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[SHORT:.*]] = scf.for %[[P:.*]] = %[[THREAD]] to %[[POINTS]] step %[[THREADS]] iter_args(%[[ACC:.*]] = %[[NONE]]) -> (i32) {
// CHECK-NEXT:      %[[STEP:.*]] = arith.constant 2 : index
// CHECK-NEXT:      %[[SCALED:.*]] = arith.muli %[[P]], %[[STEP]] : index
// CHECK-NEXT:      %[[LO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[S0:.*]] = arith.addi %[[SCALED]], %[[LO]] : index
// CHECK-NEXT:      %[[ROW:.*]] = affine.apply affine_map<(d0, d1)[s0] -> ((d0 + -1))> (%{{.*}}, %{{.*}})[%[[S0]]]
// CHECK-NEXT:      %[[COL:.*]] = affine.apply affine_map<(d0, d1)[s0] -> (s0)> (%{{.*}}, %{{.*}})[%[[S0]]]
// A row above the grid is read by nobody: it counts as ready, without a load.
// CHECK-NEXT:      %[[T:.*]] = arith.constant true
// CHECK-NEXT:      %[[Z0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[ROW_LOW:.*]] = arith.cmpi sge, %[[ROW]], %[[Z0]] : index
// CHECK-NEXT:      %[[ROWS:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[ROW_HIGH:.*]] = arith.cmpi slt, %[[ROW]], %[[ROWS]] : index
// CHECK-NEXT:      %[[ROW_IN:.*]] = arith.andi %[[ROW_LOW]], %[[ROW_HIGH]] : i1
// CHECK-NEXT:      %[[IN_ROW:.*]] = arith.andi %[[T]], %[[ROW_IN]] : i1
// CHECK-NEXT:      %[[Z1:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[COL_LOW:.*]] = arith.cmpi sge, %[[COL]], %[[Z1]] : index
// CHECK-NEXT:      %[[COLS:.*]] = arith.constant 8 : index
// CHECK-NEXT:      %[[COL_HIGH:.*]] = arith.cmpi slt, %[[COL]], %[[COLS]] : index
// CHECK-NEXT:      %[[COL_IN:.*]] = arith.andi %[[COL_LOW]], %[[COL_HIGH]] : i1
// CHECK-NEXT:      %[[INSIDE:.*]] = arith.andi %[[IN_ROW]], %[[COL_IN]] : i1
// CHECK-NEXT:      %[[MISS:.*]] = scf.if %[[INSIDE]] -> (i32) {
// CHECK:             %[[SEEN:.*]] = nvvm.ld acquire, gpu %{{.*}} : !llvm.ptr<1> -> i32
// CHECK-NEXT:        %[[AHEAD:.*]] = arith.subi %[[SEEN]], %[[TARGET]] : i32
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:        %[[LESS:.*]] = arith.cmpi slt, %[[AHEAD]], %[[ZERO]] : i32
// CHECK-NEXT:        %[[LESS32:.*]] = arith.extui %[[LESS]] : i1 to i32
// CHECK-NEXT:        scf.yield %[[LESS32]] : i32
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:        scf.yield %[[ZERO]] : i32
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[OR:.*]] = arith.ori %[[ACC]], %[[MISS]] : i32
// CHECK-NEXT:      scf.yield %[[OR]] : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[ANY:.*]] = nvvm.barrier0.or %[[SHORT]]
// CHECK-NEXT:    %[[NO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[READY:.*]] = arith.cmpi eq, %[[ANY]], %[[NO]] : i32
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT:    %[[NOT_READY:.*]] = arith.xori %[[READY]], %[[TRUE]] : i1
// CHECK-NEXT:    scf.if %[[NOT_READY]] {
// CHECK:           nvvm.ld acquire, gpu
// CHECK:           nvvm.barrier0
// CHECK:         }
// CHECK-NEXT:    gpu.return
