// RUN: tilesync-opt %s -p sync-reorder-loads | filecheck %s
// RUN: tilesync-opt %s -p 'sync-generate-policies,sync-select-policy{policy=tile},sync-reorder-loads,sync-insert-post-wait,sync-verify' | filecheck %s --check-prefix=WAITS

// R in its Hopper form: a warp-specialized GEMM's producer thread, after the buffer's barrier
// expects both copies' bytes, copies A (produced by @g1) and then B (weights), each after its
// hook. B's copy moves ahead of A's hook, so it is in flight while the thread waits for A.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    "memref.global"() <{sym_name = "sa", sym_visibility = "private", type = memref<4x64x64xf16, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "sb", sym_visibility = "private", type = memref<4x64x64xf16, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "full", sym_visibility = "private", type = memref<4xi64, 3>, initial_value}> : () -> ()
    gpu.func @g1(%c: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @g2(%a: !tile.tensor_map<64x64xf16, swizzle 128>, %b: !tile.tensor_map<64x64xf16, swizzle 128>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      %sa = memref.get_global @sa : memref<4x64x64xf16, 3>
      %sb = memref.get_global @sb : memref<4x64x64xf16, 3>
      %full = memref.get_global @full : memref<4xi64, 3>
      %m0 = arith.muli %x, %c64 : index
      %n0 = arith.muli %y, %c64 : index
      scf.for %kt = %c0 to %c8 step %c1 {
        %s = arith.remui %kt, %c4 : index
        tile.mbarrier_arrive %full[%s] expect_tx 16384 : memref<4xi64, 3>
        %k0 = arith.muli %kt, %c64 : index
        sync.load_point operand 0 [%x, %y] step %kt single_thread async_proxy
        tile.tma_load %a[%m0, %k0], %sa[%s, %c0, %c0], %full[%s] : !tile.tensor_map<64x64xf16, swizzle 128>, memref<4x64x64xf16, 3>, memref<4xi64, 3>
        sync.load_point operand 1 [%x, %y] step %kt single_thread async_proxy
        tile.tma_load %b[%n0, %k0], %sb[%s, %c0, %c0], %full[%s] : !tile.tensor_map<64x64xf16, swizzle 128>, memref<4x64x64xf16, 3>, memref<4xi64, 3>
      }
      gpu.return
    }
  }
  sync.stage @g1 {kernel = @k::@g1, grid = array<i64: 2, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @g2 {kernel = @k::@g2, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @g1 -> @g2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @g1
  sync.launch @g2 {pdl = true}
}

// CHECK-LABEL: gpu.func @g2(
// CHECK:         scf.for %kt = %c0 to %c8 step %c1 {
// CHECK-NEXT:      %s = arith.remui %kt, %c4 : index
// CHECK-NEXT:      tile.mbarrier_arrive %full[%s] expect_tx 16384
// CHECK-NEXT:      %k0 = arith.muli %kt, %c64 : index
// CHECK-NEXT:      sync.load_point operand 1 [%x, %y] step %kt single_thread async_proxy
// CHECK-NEXT:      tile.tma_load %b[%n0, %k0]
// CHECK-NEXT:      sync.load_point operand 0 [%x, %y] step %kt single_thread async_proxy {sync.reordered}
// CHECK-NEXT:      tile.tma_load %a[%m0, %k0]
// CHECK-NEXT:    }

// TileSync: each step's wait (one thread, the async proxy fenced after it) comes after B's copy
// and before A's; the program is proved.
// WAITS-LABEL: gpu.func @g2(
// WAITS:         scf.for %kt = %c0 to %c8 step %c1 {
// WAITS:           tile.mbarrier_arrive %full[%s] expect_tx 16384
// WAITS:           tile.tma_load %b[%n0, %k0]
// WAITS-NEXT:      sync.wait %sems_g1[%x, %kt] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> single_thread async_proxy
// WAITS-NEXT:      sync.load_point operand 0
// WAITS-NEXT:      tile.tma_load %a[%m0, %k0]
// WAITS:       sync.stage @g2 {{{.*}}sync.verified = "proved"
