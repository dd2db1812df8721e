// RUN: tilesync-opt %s -p sync-annotate-occupancy | filecheck %s
// RUN: tilesync-opt %s -p 'sync-annotate-occupancy{smem_per_block=100000}' | filecheck %s --check-prefix=OPTS

// No 'shared_bytes' recorded, but the kernel uses a 48 KB shared-memory global: it holds at
// least that, so 4 blocks of it fit in an SM's 228 KB (with 1 KB reserved each), not the 8
// that threads and registers alone allow. Claiming 8 would let sync-drop-wait-kernel count
// 1056 slots for 1056 blocks that have 528.
builtin.module {
  gpu.module @m {
    "memref.global"() <{sym_name = "tile_buffer", sym_visibility = "private", type = memref<12288xf32, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "unused", sym_visibility = "private", type = memref<65536xf32, 3>, initial_value}> : () -> ()
    gpu.func @k(%out: memref<?xf32>) kernel {
      %buffer = memref.get_global @tile_buffer : memref<12288xf32, 3>
      gpu.return
    }
  }
  sync.stage @s {kernel = @m::@k, grid = array<i64: 528>, block = array<i64: 256>, tile = array<i64: 1>}
}
// CHECK: sync.stage @s {blocks_per_sm = 4 : i64, waves = 1.000000e+00 : f64, limiter = "shared_memory",
// An option asking for more than the globals: the option.
// OPTS:  sync.stage @s {blocks_per_sm = 2 : i64, {{.*}} limiter = "shared_memory",
