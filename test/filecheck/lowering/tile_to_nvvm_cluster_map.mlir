// RUN: tilesync-opt %s | tilesync-opt | filecheck %s --check-prefix=ROUND
// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=PTX

// tile.cluster_map: this CTA's shared buffer as CTA 1's, by generic address: its
// shared::cluster address (mapa) cast to generic, which a plain store then writes through.
builtin.module {
  gpu.module @k {
    "memref.global"() <{sym_name = "ring", type = memref<256xi128, 3 : i64>, initial_value, sym_visibility = "private", alignment = 128 : i64}> {tilesync.dynamic_shared} : () -> ()
    gpu.func @producer(%v: i128) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %ring = memref.get_global @ring : memref<256xi128, 3 : i64>
      %peer = tile.cluster_map %ring cta %c1 : memref<256xi128, 3 : i64> -> memref<256xi128, 0 : i64>
      memref.store %v, %peer[%c0] : memref<256xi128, 0 : i64>
      gpu.return
    }
  }
}

// ROUND: %peer = tile.cluster_map %ring cta %c1 : memref<256xi128, 3 : i64> -> memref<256xi128, 0 : i64>

// CHECK:      %[[CTA:.*]] = builtin.unrealized_conversion_cast %c1 : index to i64
// CHECK:      %[[RANK:.*]] = llvm.trunc %[[CTA]] : i64 to i32
// CHECK:      %[[LOCAL:.*]] = builtin.unrealized_conversion_cast %ring : memref<256xi128, 3 : i64> to !llvm.ptr<3>
// CHECK-NEXT: %[[REMOTE:.*]] = nvvm.mapa %[[LOCAL]], %[[RANK]] : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT: %[[GENERIC:.*]] = llvmx.addrspacecast %[[REMOTE]] : !llvm.ptr<7> to !llvm.ptr
// CHECK-NEXT: %peer = builtin.unrealized_conversion_cast %[[GENERIC]] : !llvm.ptr to memref<256xi128, 0 : i64>
// CHECK-NEXT: memref.store %{{.*}}, %peer[%c0] : memref<256xi128, 0 : i64>

// PTX:        "mapa.shared::cluster.u64 $0, $1, $2;"
