// RUN: tilesync-opt %s -p convert-scf-to-cf,convert-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s
// The result translates to PTX, a kernel entry with its launch bounds.
// RUN: tilesync-opt %s -p convert-scf-to-cf,convert-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts -t ptx | filecheck %s --check-prefix=PTX
// The passes commute: function signatures and branches first gives the same result.
// RUN: tilesync-opt %s -p convert-scf-to-cf,convert-func-to-llvm,convert-cf-to-llvm,convert-index-to-llvm,convert-arith-to-llvm,convert-memref-to-llvm,reconcile-unrealized-casts | filecheck %s

// A kernel that stages each element through shared memory and doubles it.
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    "memref.global"() <{sym_name = "staging", sym_visibility = "private", type = memref<256xf32, 3>, initial_value}> : () -> ()

    gpu.func @copy(%src: memref<4096xf32>, %dst: memref<4096xf32>) kernel
        attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %c256 = arith.constant 256 : index
      %tid = arith.constant 3 : index
      %two = arith.constant 2.0 : f32
      %stage = memref.get_global @staging : memref<256xf32, 3>
      scf.for %i = %c0 to %c16 step %c1 {
        %base = arith.muli %i, %c256 : index
        %g = arith.addi %base, %tid : index
        %v = memref.load %src[%g] : memref<4096xf32>
        memref.store %v, %stage[%tid] : memref<256xf32, 3>
        %w = memref.load %stage[%tid] : memref<256xf32, 3>
        %x = arith.mulf %w, %two : f32
        memref.store %x, %dst[%g] : memref<4096xf32>
      }
      gpu.return
    }
  }
}

// CHECK:      gpu.module @kernels {
// CHECK-NEXT:   llvm.mlir.global internal @staging() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
// CHECK-NEXT:   llvm.func ptx_kernel @copy(%[[SRC:.*]]: !llvm.ptr<1>, %[[DST:.*]]: !llvm.ptr<1>)
// CHECK-SAME:     passthrough = {{\[}}["nvvm.maxntid", "256,1,1"]]
// CHECK-DAG:      %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-DAG:      %[[C16:.*]] = llvm.mlir.constant(16) : i64
// CHECK-DAG:      %[[C256:.*]] = llvm.mlir.constant(256) : i64
// CHECK-DAG:      %[[TID:.*]] = llvm.mlir.constant(3) : i64
// CHECK-DAG:      %[[TWO:.*]] = llvm.mlir.constant(2.000000e+00 : f32) : f32
// CHECK-DAG:      %[[STAGE:.*]] = llvm.mlir.addressof @staging : !llvm.ptr<3>
// CHECK:          llvm.br ^[[HEADER:.*]](%[[C0]] : i64)
// CHECK:        ^[[HEADER]](%[[I:.*]]: i64):
// CHECK-NEXT:     %[[MORE:.*]] = llvm.icmp "slt" %[[I]], %[[C16]] : i64
// CHECK-NEXT:     llvm.cond_br %[[MORE]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK:        ^[[BODY]]:
// CHECK:          %[[BASE:.*]] = llvm.mul %[[I]], %[[C256]] : i64
// CHECK-NEXT:     %[[G:.*]] = llvm.add %[[BASE]], %[[TID]] : i64
// CHECK-NEXT:     %[[PSRC:.*]] = llvm.getelementptr inbounds %[[SRC]][%[[G]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:     %[[V:.*]] = llvm.load %[[PSRC]] {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NEXT:     %[[PSH:.*]] = llvm.getelementptr inbounds %[[STAGE]][%[[TID]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK-NEXT:     llvm.store %[[V]], %[[PSH]] {alignment = 4 : i64} : f32, !llvm.ptr<3>
// CHECK:          %[[W:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// CHECK-NEXT:     %[[X:.*]] = llvm.fmul %[[W]], %[[TWO]] : f32
// CHECK-NEXT:     %[[PDST:.*]] = llvm.getelementptr inbounds %[[DST]][%[[G]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:     llvm.store %[[X]], %[[PDST]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK:          llvm.br ^[[HEADER]](%{{.*}} : i64)
// CHECK:        ^[[EXIT]]:
// CHECK-NEXT:     llvm.return
// CHECK-NOT:  unrealized_conversion_cast
// CHECK-NOT:  memref.
// CHECK-NOT:  arith.
// CHECK-NOT:  cf.
// CHECK-NOT:  scf.
// CHECK-NOT:  gpu.func
// CHECK-NOT:  gpu.return

// PTX: .visible .entry copy(
// PTX: .maxntid 256, 1, 1
// PTX: ld.global
// PTX: st.global
// PTX: ret;
