// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=PTX
// RUN: tilesync-opt %s -p tilesync-lower-to-llvm | filecheck %s --check-prefix=LLVM

// A barrier is the i64 at bars[s]; the copy lands at the unswizzled address of smem[s, 0, 0]
// (the copy engine swizzles), its coordinates go innermost first (column, then row), and the
// map is the parameter's generic address. The wait is a try_wait.parity, then, if it failed,
// a timed loop of them (tile_to_nvvm_mbarrier_wait.mlir).
// CHECK-LABEL: func.func @tma_load
// CHECK:       %[[MAP:.*]] = builtin.unrealized_conversion_cast %map : !tile.tensor_map<128x64xf16, swizzle 128> to !llvm.ptr
// CHECK:       %[[BAR:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i64
// CHECK-NEXT:  nvvm.mbarrier.init %[[BAR]], %{{.*}} : !llvm.ptr<3>
// CHECK-NEXT:  nvvm.fence.mbarrier_init
// CHECK-NEXT:  nvvm.mbarrier.arrive %[[BAR]] expect_tx %{{.*}} : !llvm.ptr<3>
// CHECK:       %[[DST:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f16
// CHECK-NEXT:  nvvm.cp.async.bulk.tensor.shared.global %[[DST]], %[[MAP]][%[[COL:.*]], %[[ROW:.*]]], %[[BAR]] : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
// CHECK:       %[[PARITY:.*]] = llvm.zext %parity : i1 to i32
// CHECK-NEXT:  %[[DONE:.*]] = nvvm.mbarrier.try_wait.parity %[[BAR]], %[[PARITY]] : !llvm.ptr<3>
// CHECK-NEXT:  %[[FAILED:.*]] = arith.cmpi eq, %[[DONE]], %{{.*}} : i32
// CHECK-NEXT:  scf.if %[[FAILED]] {
// CHECK:           scf.while
// CHECK-NEXT:        nvvm.mbarrier.try_wait.parity %[[BAR]], %[[PARITY]] : !llvm.ptr<3>
// CHECK:       nvvm.mbarrier.arrive %[[BAR]] : !llvm.ptr<3>
// CHECK-NOT:   tile.
// PTX:         "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "l,r,~{memory}"
// PTX:         "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$2, {$3, $4}], [$1];", "l,l,l,r,r,~{memory}"
// PTX:         "{\0A.reg .pred p;\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\0Aselp.b32 $0, 1, 0, p;\0A}", "=r,l,r,~{memory}"
// PTX:         "mbarrier.arrive.shared::cta.b64 _, [$0];", "l,~{memory}"
func.func @tma_load(%map: !tile.tensor_map<128x64xf16, swizzle 128>, %smem: memref<4x128x64xf16, 3>,
                    %bars: memref<8xi64, 3>, %s: index, %row: index, %col: index, %parity: i1) {
  %z = arith.constant 0 : index
  tile.mbarrier_init %bars[%s] count 2 : memref<8xi64, 3>
  tile.mbarrier_arrive %bars[%s] expect_tx 16384 : memref<8xi64, 3>
  tile.tma_load %map[%row, %col], %smem[%s, %z, %z], %bars[%s] : !tile.tensor_map<128x64xf16, swizzle 128>, memref<4x128x64xf16, 3>, memref<8xi64, 3>
  tile.mbarrier_wait %bars[%s], %parity : memref<8xi64, 3>
  tile.mbarrier_arrive %bars[%s] : memref<8xi64, 3>
  func.return
}

// An L2 prefetch: the box's coordinates innermost first, as a load's; no barrier.
// CHECK-LABEL: func.func @tma_prefetch
// CHECK:       %[[MAP:.*]] = builtin.unrealized_conversion_cast %map : !tile.tensor_map<96x64xf16, swizzle 128> to !llvm.ptr
// CHECK:       nvvm.cp.async.bulk.prefetch.tensor.l2.global %[[MAP]][%{{.*}}, %{{.*}}] : !llvm.ptr
// CHECK-NOT:   tile.
// PTX-LABEL:   func.func @tma_prefetch
// PTX:         "cp.async.bulk.prefetch.tensor.2d.L2.global.tile [$0, {$1, $2}];", "l,r,r,~{memory}"
func.func @tma_prefetch(%map: !tile.tensor_map<96x64xf16, swizzle 128>, %row: index, %col: index) {
  tile.tma_prefetch %map[%row, %col] : !tile.tensor_map<96x64xf16, swizzle 128>
  func.return
}

// The store side: the box from shared memory to (row, col), its bulk group, the named barrier
// of the consumers, the register reallocation and the map's prefetch.
// CHECK-LABEL: func.func @tma_store
// CHECK:       nvvm.prefetch.tensormap %{{.*}} : !llvm.ptr
// CHECK-NEXT:  nvvm.setmaxnreg inc 232
// CHECK-NEXT:  nvvm.barrier.sync 1, 256
// CHECK:       nvvm.cp.async.bulk.tensor.global.shared %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !llvm.ptr, !llvm.ptr<3>
// CHECK-NEXT:  nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:  nvvm.cp.async.bulk.wait.group.read 0
// PTX:         "prefetch.tensormap [$0];", "l,~{memory}"
// PTX:         "setmaxnreg.inc.sync.aligned.u32 232;", "~{memory}"
// PTX:         llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"(%{{.*}}, %{{.*}}) : (i32, i32) -> ()
// PTX:         "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [$0, {$1, $2}], [$3];", "l,r,r,l,~{memory}"
// PTX:         "cp.async.bulk.commit_group;", "~{memory}"
// PTX:         "cp.async.bulk.wait_group.read 0;", "~{memory}"
func.func @tma_store(%map: !tile.tensor_map<128x64xf16, swizzle 128>, %smem: memref<4x128x64xf16, 3>,
                     %s: index, %row: index, %col: index) {
  %z = arith.constant 0 : index
  tile.prefetch_tensor_map %map : !tile.tensor_map<128x64xf16, swizzle 128>
  tile.setmaxnreg inc 232
  tile.named_barrier 1, 256
  tile.tma_store %smem[%s, %z, %z], %map[%row, %col] : memref<4x128x64xf16, 3>, !tile.tensor_map<128x64xf16, swizzle 128>
  tile.tma_store_commit
  tile.tma_store_wait 0
  func.return
}

// A barrier id computed at run time (a group of threads on a barrier of its own) stays an
// operand of bar.sync.
// CHECK-LABEL: func.func @group_barrier
// CHECK:       nvvm.barrier.sync %id, 128
// PTX:         llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"(%{{.*}}, %{{.*}}) : (i32, i32) -> ()
func.func @group_barrier(%id: i32) {
  tile.named_barrier %id, 128
  func.return
}

// A kernel's tensor map is a blob passed by value and read in place (__grid_constant__).
// LLVM: llvm.func ptx_kernel @kernel(%{{.*}}: !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant}, %{{.*}}: !llvm.ptr<1>)
gpu.module @kernels {
  gpu.func @kernel(%map: !tile.tensor_map<128x64xf16, swizzle 128>, %out: memref<4xf32>) kernel {
    tile.prefetch_tensor_map %map : !tile.tensor_map<128x64xf16, swizzle 128>
    gpu.return
  }
}

// A cluster: the multicast mask is an i16 register, the remote arrival maps the barrier into
// the peer CTA, the cluster barrier is arrive + wait; the cluster shape becomes the kernel's
// `.reqnctapercluster` (nvvm.cluster_dim).
// CHECK-LABEL: func.func @cluster
// CHECK:       nvvm.cp.async.bulk.tensor.shared.global %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} multicast %{{.*}} : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
// CHECK:       nvvm.mbarrier.arrive %{{.*}} cta %{{.*}} : !llvm.ptr<3>
// CHECK-NEXT:  nvvm.cluster.arrive
// CHECK-NEXT:  nvvm.cluster.wait
// PTX:         "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [$0], [$2, {$3, $4}], [$1], $5;", "l,l,l,r,r,h,~{memory}"
// PTX:         "{\0A.reg .b32 a, r;\0Acvt.u32.u64 a, $0;\0Amapa.shared::cluster.u32 r, a, $1;\0Ambarrier.arrive.shared::cluster.b64 _, [r];\0A}", "l,r,~{memory}"
// PTX:         llvm.call_intrinsic "llvm.nvvm.barrier.cluster.arrive"() : () -> ()
// PTX-NEXT:    llvm.call_intrinsic "llvm.nvvm.barrier.cluster.wait"() : () -> ()
func.func @cluster(%b: !tile.tensor_map<64x64xf16, swizzle 128>, %smem: memref<4x128x64xf16, 3>,
                   %bars: memref<4xi64, 3>, %s: index, %r: index) {
  tile.tma_load %b[%r, %s], %smem[%s, %r, %s], %bars[%s] multicast 3 : !tile.tensor_map<64x64xf16, swizzle 128>, memref<4x128x64xf16, 3>, memref<4xi64, 3>
  tile.mbarrier_arrive %bars[%s] cta %r : memref<4xi64, 3>
  tile.cluster_barrier
  func.return
}

// LLVM: llvm.func ptx_kernel @clustered() attributes {passthrough = {{\[}}["nvvm.maxntid", "64,1,1"], ["nvvm.cluster_dim", "2,1,1"]]}
gpu.module @clusters {
  gpu.func @clustered() kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>, tilesync.cluster_dims = array<i32: 2, 1, 1>} {
    tile.cluster_barrier
    gpu.return
  }
}

// im2col: the coordinates go innermost first (channel, w, h, n) and so do the filter offsets
// (s, then r), as 16-bit operands of the `.im2col` load mode.
// CHECK-LABEL: func.func @im2col_load
// CHECK:       %[[RI:.*]] = builtin.unrealized_conversion_cast %r : index to i64
// CHECK-NEXT:  %[[R:.*]] = llvm.trunc %[[RI]] : i64 to i16
// CHECK-NEXT:  %[[SI:.*]] = builtin.unrealized_conversion_cast %s : index to i64
// CHECK-NEXT:  %[[S:.*]] = llvm.trunc %[[SI]] : i64 to i16
// CHECK:       %[[NI:.*]] = builtin.unrealized_conversion_cast %n : index to i64
// CHECK-NEXT:  %[[N:.*]] = llvm.trunc %[[NI]] : i64 to i32
// CHECK-NEXT:  %[[HI:.*]] = builtin.unrealized_conversion_cast %h : index to i64
// CHECK-NEXT:  %[[H:.*]] = llvm.trunc %[[HI]] : i64 to i32
// CHECK-NEXT:  %[[WI:.*]] = builtin.unrealized_conversion_cast %w : index to i64
// CHECK-NEXT:  %[[W:.*]] = llvm.trunc %[[WI]] : i64 to i32
// CHECK-NEXT:  %[[CI:.*]] = builtin.unrealized_conversion_cast %c : index to i64
// CHECK-NEXT:  %[[C:.*]] = llvm.trunc %[[CI]] : i64 to i32
// CHECK:       nvvm.cp.async.bulk.tensor.shared.global %{{.*}}, %{{.*}}[%[[C]], %[[W]], %[[H]], %[[N]]] im2col[%[[S]], %[[R]]], %{{.*}} : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
// PTX-LABEL:   @im2col_load
// PTX:         "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [$0], [$2, {$3, $4, $5, $6}], [$1], {$7, $8};", "l,l,l,r,r,r,r,h,h,~{memory}"
func.func @im2col_load(%map: !tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 16, 16, 64]>,
                       %smem: memref<4x128x64xf16, 3>, %bars: memref<8xi64, 3>,
                       %n: index, %h: index, %w: index, %c: index, %r: index, %s: index) {
  %z = arith.constant 0 : index
  tile.tma_load %map[%n, %h, %w, %c] im2col [%r, %s], %smem[%z, %z, %z], %bars[%z] : !tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 16, 16, 64]>, memref<4x128x64xf16, 3>, memref<8xi64, 3>
  func.return
}
