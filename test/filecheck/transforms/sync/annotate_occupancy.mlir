// RUN: tilesync-opt %s -p sync-annotate-occupancy | filecheck %s
// RUN: tilesync-opt %s -p 'sync-annotate-occupancy{sms=108 arch=sm_80}' | filecheck %s --check-prefix=A100
// RUN: tilesync-opt %s -p 'sync-annotate-occupancy{regs_per_thread=64 smem_per_block=49152}' | filecheck %s --check-prefix=OPTS

builtin.module {
  // Registers and shared memory as the driver records them from nvJitLink: 256 threads x 128
  // registers allow 2 blocks (4 warps per sub-partition), and 96 KB + 1 KB reserved also 2.
  sync.stage @mlp1 {kernel = @kernels::@gemm, grid = array<i64: 4, 48>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, registers = 128 : i64, shared_bytes = 98304 : i64}
  // CHECK:      sync.stage @mlp1 {registers = 128 : i64, shared_bytes = 98304 : i64, blocks_per_sm = 2 : i64, waves = 0.72727272727{{[0-9]*}} : f64, limiter = "registers+shared_memory",
  // On sm_80 (164 KB per SM) only one 97 KB block fits; 192 blocks on 108 SMs.
  // A100:       sync.stage @mlp1 {registers = 128 : i64, shared_bytes = 98304 : i64, blocks_per_sm = 1 : i64, waves = 1.77777777777{{[0-9]*}} : f64, limiter = "shared_memory",
  // The stage's own attributes win over the options.
  // OPTS:       sync.stage @mlp1 {{.*}} blocks_per_sm = 2 : i64, {{.*}} limiter = "registers+shared_memory",

  // No registers recorded: 32 per thread. 1024 threads: 2 blocks by threads and registers;
  // 317 blocks on 264 slots = 1.2 waves.
  sync.stage @synthetic {kernel = @kernels::@gemm, grid = array<i64: 317>, block = array<i64: 1024>, tile = array<i64: 1>}
  // CHECK:      sync.stage @synthetic {blocks_per_sm = 2 : i64, waves = 1.20075757575{{[0-9]*}} : f64, limiter = "threads+registers",
  // 64 registers from the option: 32 warps x 2048 registers fill the SM, 1 block; the
  // option's 48 KB of static shared memory alone would allow 4.
  // OPTS:       sync.stage @synthetic {blocks_per_sm = 1 : i64, waves = 2.40151515151{{[0-9]*}} : f64, limiter = "registers",

  // Dynamic shared memory adds to the static part: 40 KB + 8 KB + 1 KB reserved = 49 KB per
  // block, 4 per SM on sm_90 (228 KB).
  sync.stage @smem {kernel = @kernels::@gemm, grid = array<i64: 8, 66>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, registers = 64 : i64, shared_bytes = 40960 : i64, dynamic_shared_bytes = 8192 : i64}
  // CHECK:      sync.stage @smem {registers = 64 : i64, shared_bytes = 40960 : i64, dynamic_shared_bytes = 8192 : i64, blocks_per_sm = 4 : i64, waves = 1.000000e+00 : f64, limiter = "shared_memory",
  // OPTS:       sync.stage @smem {{.*}} blocks_per_sm = 4 : i64, {{.*}} limiter = "shared_memory",

  // Small blocks: the 32-blocks-per-SM limit.
  sync.stage @tiny {kernel = @kernels::@gemm, grid = array<i64: 8448>, block = array<i64: 32>, tile = array<i64: 1>, registers = 16 : i64}
  // CHECK:      sync.stage @tiny {registers = 16 : i64, blocks_per_sm = 32 : i64, waves = 2.000000e+00 : f64, limiter = "blocks",
  // Its recorded registers stay, but without 'shared_bytes' the option's 48 KB apply.
  // OPTS:       sync.stage @tiny {registers = 16 : i64, blocks_per_sm = 4 : i64, waves = 1.600000e+01 : f64, limiter = "shared_memory",
}
