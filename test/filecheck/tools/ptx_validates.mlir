// RUN: not tilesync-opt %s -p tilesync-lower-to-llvm -t ptx 2>&1 | filecheck %s
// RUN: tilesync-opt %s -p tilesync-lower-to-llvm -t ptx --no-validate | filecheck %s --check-prefix=SKIP
// RUN: tilesync-opt %s -p tilesync-lower-to-llvm -t 'ptx{validate=false}' | filecheck %s --check-prefix=SKIP
// RUN: not tilesync compile %s 2>&1 | filecheck %s --check-prefix=CLI
// RUN: tilesync compile %s --no-validate | filecheck %s --check-prefix=SKIP
// -t ptx assembles the PTX with nvJitLink before printing it: 64 KiB of static shared memory
// is over the 48 KiB ptxas accepts, and the exit status says so (it used to be 0).
builtin.module attributes {gpu.container_module} {
  gpu.module @big {
    "memref.global"() <{sym_name = "buffer", sym_visibility = "private", type = memref<16384xf32, 3>, initial_value}> : () -> ()
    gpu.func @f(%out: memref<16384xf32>) kernel {
      %t = gpu.thread_id x
      %s = memref.get_global @buffer : memref<16384xf32, 3>
      %x = memref.load %out[%t] : memref<16384xf32>
      memref.store %x, %s[%t] : memref<16384xf32, 3>
      gpu.barrier
      %c1 = arith.constant 1 : index
      %u = arith.addi %t, %c1 : index
      %v = memref.load %s[%u] : memref<16384xf32, 3>
      memref.store %v, %out[%t] : memref<16384xf32>
      gpu.return
    }
  }
}
// CHECK: tilesync-opt: error: the PTX of gpu.module @big does not assemble: nvJitLink rejected the PTX for sm_90: {{.*}}uses too much shared data{{.*}}(-t ptx{validate=false} or --no-validate skips this check)
// SKIP: .shared .align {{[0-9]+}} .b8 buffer[65536];
// CLI: tilesync compile: error: gpu.module @big: nvJitLink rejected the PTX for sm_90: {{.*}}uses too much shared data
