// The whole pipeline on the §V-D example, from our dialects to PTX for sm_90.
// RUN: tilesync-opt %S/../../../examples/copy_chain.mlir -p tilesync-lower-to-llvm -t 'ptx{arch=sm_90}' | filecheck %s

// CHECK:       .target sm_90
// CHECK-LABEL: .visible .entry producer(
// CHECK:       .maxntid 256, 1, 1
// CHECK:       bar.sync 0;
// CHECK:       fence.acq_rel.gpu;
// CHECK:       red.relaxed.gpu.global.add.u32
// CHECK-LABEL: .visible .entry consumer(
// CHECK:       mov.u64 %rd{{[0-9]+}}, %globaltimer;
// CHECK:       ld.acquire.gpu.global.u32
// CHECK:       nanosleep.u32
// CHECK:       trap;
// CHECK-NOT:   ld.global.nc
