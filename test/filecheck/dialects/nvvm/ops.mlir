// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

func.func @all_ops(%g: !llvm.ptr<1>, %s: !llvm.ptr<3>, %p: !llvm.ptr, %i: i32, %l: i64,
                   %f: f32) {
  // CHECK: %{{.*}} = nvvm.read.ptx.sreg.tid.x : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.tid.y : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.tid.z : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.ntid.x : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.ntid.y : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.ntid.z : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.ctaid.x : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.ctaid.y : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.ctaid.z : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.nctaid.x : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.nctaid.y : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.nctaid.z : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.laneid : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.warpid : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.smid : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.nsmid : i32
  // CHECK-NEXT: %{{.*}} = nvvm.read.ptx.sreg.globaltimer : i64
  %0 = nvvm.read.ptx.sreg.tid.x : i32
  %1 = nvvm.read.ptx.sreg.tid.y : i32
  %2 = nvvm.read.ptx.sreg.tid.z : i32
  %3 = nvvm.read.ptx.sreg.ntid.x : i32
  %4 = nvvm.read.ptx.sreg.ntid.y : i32
  %5 = nvvm.read.ptx.sreg.ntid.z : i32
  %6 = nvvm.read.ptx.sreg.ctaid.x : i32
  %7 = nvvm.read.ptx.sreg.ctaid.y : i32
  %8 = nvvm.read.ptx.sreg.ctaid.z : i32
  %9 = nvvm.read.ptx.sreg.nctaid.x : i32
  %10 = nvvm.read.ptx.sreg.nctaid.y : i32
  %11 = nvvm.read.ptx.sreg.nctaid.z : i32
  %12 = nvvm.read.ptx.sreg.laneid : i32
  %13 = nvvm.read.ptx.sreg.warpid : i32
  %14 = nvvm.read.ptx.sreg.smid : i32
  %15 = nvvm.read.ptx.sreg.nsmid : i32
  %16 = nvvm.read.ptx.sreg.globaltimer : i64

  // CHECK-NEXT: nvvm.barrier0
  // CHECK-NEXT: nvvm.griddepcontrol.wait
  // CHECK-NEXT: nvvm.griddepcontrol.launch_dependents
  // CHECK-NEXT: nvvm.nanosleep %{{.*}} : i32
  // CHECK-NEXT: nvvm.trap
  nvvm.barrier0
  nvvm.griddepcontrol.wait
  nvvm.griddepcontrol.launch_dependents
  nvvm.nanosleep %i : i32
  nvvm.trap

  // CHECK-NEXT: nvvm.fence acq_rel, gpu
  // CHECK-NEXT: nvvm.fence sc, sys
  // CHECK-NEXT: nvvm.fence acq_rel, cta
  // CHECK-NEXT: nvvm.fence sc, cluster
  // CHECK-NEXT: nvvm.fence.proxy.async "shared::cta"
  // CHECK-NEXT: nvvm.fence.proxy.async "shared::cluster"
  // CHECK-NEXT: nvvm.fence.proxy.async global
  // CHECK-NEXT: nvvm.fence.proxy.async all
  nvvm.fence acq_rel, gpu
  nvvm.fence sc, sys
  nvvm.fence acq_rel, cta
  nvvm.fence sc, cluster
  nvvm.fence.proxy.async "shared::cta"
  nvvm.fence.proxy.async "shared::cluster"
  nvvm.fence.proxy.async global
  nvvm.fence.proxy.async all

  // CHECK-NEXT: %{{.*}} = nvvm.ld acquire, gpu %{{.*}} : !llvm.ptr<1> -> i32
  // CHECK-NEXT: %{{.*}} = nvvm.ld relaxed, sys %{{.*}} : !llvm.ptr<1> -> i64
  // CHECK-NEXT: %{{.*}} = nvvm.ld volatile %{{.*}} : !llvm.ptr<3> -> f32
  // CHECK-NEXT: %{{.*}} = nvvm.ld weak %{{.*}} : !llvm.ptr -> i32
  // CHECK-NEXT: %{{.*}} = nvvm.ld weak %{{.*}} cta %{{.*}} : !llvm.ptr<3> -> f32
  %20 = nvvm.ld acquire, gpu %g : !llvm.ptr<1> -> i32
  %21 = nvvm.ld relaxed, sys %g : !llvm.ptr<1> -> i64
  %22 = nvvm.ld volatile %s : !llvm.ptr<3> -> f32
  %23 = nvvm.ld weak %p : !llvm.ptr -> i32
  %peer = nvvm.ld weak %s cta %i : !llvm.ptr<3> -> f32

  // CHECK-NEXT: nvvm.st release, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: nvvm.st relaxed, cta %{{.*}}, %{{.*}} : !llvm.ptr<3>, i64
  // CHECK-NEXT: nvvm.st volatile %{{.*}}, %{{.*}} : !llvm.ptr<1>, f32
  // CHECK-NEXT: nvvm.st weak %{{.*}}, %{{.*}} : !llvm.ptr, i32
  nvvm.st release, gpu %g, %i : !llvm.ptr<1>, i32
  nvvm.st relaxed, cta %s, %l : !llvm.ptr<3>, i64
  nvvm.st volatile %g, %f : !llvm.ptr<1>, f32
  nvvm.st weak %p, %i : !llvm.ptr, i32

  // CHECK-NEXT: %{{.*}} = nvvm.atom add relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: %{{.*}} = nvvm.atom exch acq_rel, sys %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64
  // CHECK-NEXT: %{{.*}} = nvvm.atom max acquire, cta %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
  // CHECK-NEXT: %{{.*}} = nvvm.atom min release, gpu %{{.*}}, %{{.*}} : !llvm.ptr, i64
  // CHECK-NEXT: %{{.*}} = nvvm.atom inc relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: %{{.*}} = nvvm.atom dec relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: %{{.*}} = nvvm.atom and relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: %{{.*}} = nvvm.atom or relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64
  // CHECK-NEXT: %{{.*}} = nvvm.atom xor relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: %{{.*}} = nvvm.atom add relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, f32
  // CHECK-NEXT: %{{.*}} = nvvm.atom smax relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: %{{.*}} = nvvm.atom smin acquire, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64
  %30 = nvvm.atom add relaxed, gpu %g, %i : !llvm.ptr<1>, i32
  %31 = nvvm.atom exch acq_rel, sys %g, %l : !llvm.ptr<1>, i64
  %32 = nvvm.atom max acquire, cta %s, %i : !llvm.ptr<3>, i32
  %33 = nvvm.atom min release, gpu %p, %l : !llvm.ptr, i64
  %34 = nvvm.atom inc relaxed, gpu %g, %i : !llvm.ptr<1>, i32
  %35 = nvvm.atom dec relaxed, gpu %g, %i : !llvm.ptr<1>, i32
  %36 = nvvm.atom and relaxed, gpu %g, %i : !llvm.ptr<1>, i32
  %37 = nvvm.atom or relaxed, gpu %g, %l : !llvm.ptr<1>, i64
  %38 = nvvm.atom xor relaxed, gpu %g, %i : !llvm.ptr<1>, i32
  %39 = nvvm.atom add relaxed, gpu %g, %f : !llvm.ptr<1>, f32
  %42 = nvvm.atom smax relaxed, gpu %g, %i : !llvm.ptr<1>, i32
  %43 = nvvm.atom smin acquire, gpu %g, %l : !llvm.ptr<1>, i64

  // CHECK-NEXT: %{{.*}} = nvvm.atom.cas acq_rel, gpu %{{.*}}, %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: %{{.*}} = nvvm.atom.cas relaxed, cta %{{.*}}, %{{.*}}, %{{.*}} : !llvm.ptr<3>, i64
  %40 = nvvm.atom.cas acq_rel, gpu %g, %i, %i : !llvm.ptr<1>, i32
  %41 = nvvm.atom.cas relaxed, cta %s, %l, %l : !llvm.ptr<3>, i64

  // CHECK-NEXT: nvvm.red add release, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i32
  // CHECK-NEXT: nvvm.red max relaxed, sys %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64
  // CHECK-NEXT: nvvm.red add relaxed, cta %{{.*}}, %{{.*}} : !llvm.ptr<3>, f32
  nvvm.red add release, gpu %g, %i : !llvm.ptr<1>, i32
  nvvm.red max relaxed, sys %g, %l : !llvm.ptr<1>, i64
  nvvm.red add relaxed, cta %s, %f : !llvm.ptr<3>, f32
  func.return
}
