// RUN: tilesync-opt %s -p convert-gpu-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-gpu-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=LLVM

// With convert-nvvm-to-llvm after it, the registers are intrinsic calls:
// LLVM:      gpu.func @ids
// LLVM-NEXT:   %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// LLVM-NEXT:   %{{.*}} = arith.index_cast %{{.*}} : i32 to index
// LLVM:        llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.laneid"() : () -> i32
// LLVM:      gpu.func @global_id_and_barrier
// LLVM:        llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
// LLVM-NOT:  nvvm.read

// CHECK-LABEL: gpu.module @kernels
"gpu.module"() <{sym_name = "kernels"}> ({
  // CHECK: gpu.func @ids
  "gpu.func"() <{function_type = () -> (), kernel}> ({
    %tx = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %ty = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
    %tz = "gpu.thread_id"() <{dimension = #gpu<dim z>}> : () -> index
    %bx = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
    %by = "gpu.block_id"() <{dimension = #gpu<dim y>}> : () -> index
    %bz = "gpu.block_id"() <{dimension = #gpu<dim z>}> : () -> index
    %dx = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
    %dy = "gpu.block_dim"() <{dimension = #gpu<dim y>}> : () -> index
    %dz = "gpu.block_dim"() <{dimension = #gpu<dim z>}> : () -> index
    %gx = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
    %gy = "gpu.grid_dim"() <{dimension = #gpu<dim y>}> : () -> index
    %gz = "gpu.grid_dim"() <{dimension = #gpu<dim z>}> : () -> index
    %lane = "gpu.lane_id"() : () -> index
    "test.op"(%tx, %ty, %tz, %bx, %by, %bz, %dx, %dy, %dz, %gx, %gy, %gz, %lane) : (index, index, index, index, index, index, index, index, index, index, index, index, index) -> ()
    "gpu.return"() : () -> ()
  }) {sym_name = "ids"} : () -> ()

  // CHECK-NEXT:   %[[TX:.*]] = nvvm.read.ptx.sreg.tid.x : i32
  // CHECK-NEXT:   %[[TXI:.*]] = arith.index_cast %[[TX]] : i32 to index
  // CHECK-NEXT:   %[[TY:.*]] = nvvm.read.ptx.sreg.tid.y : i32
  // CHECK-NEXT:   %[[TYI:.*]] = arith.index_cast %[[TY]] : i32 to index
  // CHECK-NEXT:   %[[TZ:.*]] = nvvm.read.ptx.sreg.tid.z : i32
  // CHECK-NEXT:   %[[TZI:.*]] = arith.index_cast %[[TZ]] : i32 to index
  // CHECK-NEXT:   %[[BX:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
  // CHECK-NEXT:   %[[BXI:.*]] = arith.index_cast %[[BX]] : i32 to index
  // CHECK-NEXT:   %{{.*}} = nvvm.read.ptx.sreg.ctaid.y : i32
  // CHECK-NEXT:   %[[BYI:.*]] = arith.index_cast
  // CHECK-NEXT:   %{{.*}} = nvvm.read.ptx.sreg.ctaid.z : i32
  // CHECK-NEXT:   %[[BZI:.*]] = arith.index_cast
  // CHECK-NEXT:   %{{.*}} = nvvm.read.ptx.sreg.ntid.x : i32
  // CHECK-NEXT:   %[[DXI:.*]] = arith.index_cast
  // CHECK-NEXT:   %{{.*}} = nvvm.read.ptx.sreg.ntid.y : i32
  // CHECK-NEXT:   %[[DYI:.*]] = arith.index_cast
  // CHECK-NEXT:   %{{.*}} = nvvm.read.ptx.sreg.ntid.z : i32
  // CHECK-NEXT:   %[[DZI:.*]] = arith.index_cast
  // CHECK-NEXT:   %{{.*}} = nvvm.read.ptx.sreg.nctaid.x : i32
  // CHECK-NEXT:   %[[GXI:.*]] = arith.index_cast
  // CHECK-NEXT:   %{{.*}} = nvvm.read.ptx.sreg.nctaid.y : i32
  // CHECK-NEXT:   %[[GYI:.*]] = arith.index_cast
  // CHECK-NEXT:   %{{.*}} = nvvm.read.ptx.sreg.nctaid.z : i32
  // CHECK-NEXT:   %[[GZI:.*]] = arith.index_cast
  // CHECK-NEXT:   %[[L:.*]] = nvvm.read.ptx.sreg.laneid : i32
  // CHECK-NEXT:   %[[LI:.*]] = arith.index_cast %[[L]] : i32 to index
  // CHECK-NEXT:   "test.op"(%[[TXI]], %[[TYI]], %[[TZI]], %[[BXI]], %[[BYI]], %[[BZI]], %[[DXI]], %[[DYI]], %[[DZI]], %[[GXI]], %[[GYI]], %[[GZI]], %[[LI]])
  // CHECK-NEXT:   gpu.return

  // CHECK: gpu.func @global_id_and_barrier
  "gpu.func"() <{function_type = () -> (), kernel}> ({
    %g = "gpu.global_id"() <{dimension = #gpu<dim y>}> : () -> index
    "gpu.barrier"() : () -> ()
    "test.op"(%g) : (index) -> ()
    "gpu.return"() : () -> ()
  }) {sym_name = "global_id_and_barrier"} : () -> ()
  // CHECK-NEXT:   %[[B:.*]] = nvvm.read.ptx.sreg.ctaid.y : i32
  // CHECK-NEXT:   %[[BI:.*]] = arith.index_cast %[[B]] : i32 to index
  // CHECK-NEXT:   %[[D:.*]] = nvvm.read.ptx.sreg.ntid.y : i32
  // CHECK-NEXT:   %[[DI:.*]] = arith.index_cast %[[D]] : i32 to index
  // CHECK-NEXT:   %[[T:.*]] = nvvm.read.ptx.sreg.tid.y : i32
  // CHECK-NEXT:   %[[TI:.*]] = arith.index_cast %[[T]] : i32 to index
  // CHECK-NEXT:   %[[M:.*]] = arith.muli %[[BI]], %[[DI]] : index
  // CHECK-NEXT:   %[[G:.*]] = arith.addi %[[M]], %[[TI]] : index
  // CHECK-NEXT:   nvvm.barrier0
  // CHECK-NEXT:   "test.op"(%[[G]]) : (index) -> ()
  // CHECK-NEXT:   gpu.return
  // CHECK-NOT: gpu.thread_id
  // CHECK-NOT: gpu.barrier
}) : () -> ()
