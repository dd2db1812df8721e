// RUN: tilesync-opt %s -p convert-nvvm-to-llvm | filecheck %s
// RUN: tilesync-opt %s -p convert-nvvm-to-llvm | tilesync-opt | filecheck %s
// Every nvvm op becomes an llvm.call_intrinsic or a side-effecting llvm.inline_asm with the
// exact PTX (each string also assembles with ptxas: test/python/dialects/test_nvvm_ptx.py).

// CHECK: func.func @all_ops(%[[G:[a-z0-9_]+]]: !llvm.ptr<1>, %[[S:[a-z0-9_]+]]: !llvm.ptr<3>, %[[P:[a-z0-9_]+]]: !llvm.ptr, %[[I:[a-z0-9_]+]]: i32, %[[L:[a-z0-9_]+]]: i64, %[[F:[a-z0-9_]+]]: f32)
func.func @all_ops(%g: !llvm.ptr<1>, %s: !llvm.ptr<3>, %p: !llvm.ptr, %i: i32, %l: i64,
                   %f: f32) {
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

  nvvm.barrier0
  nvvm.barrier.sync 3, 128
  nvvm.barrier.sync %i, 128
  nvvm.griddepcontrol.wait
  nvvm.griddepcontrol.launch_dependents
  nvvm.nanosleep %i : i32
  nvvm.trap

  nvvm.fence acq_rel, gpu
  nvvm.fence sc, sys
  nvvm.fence acq_rel, cta
  nvvm.fence sc, cluster
  nvvm.fence.proxy.async "shared::cta"
  nvvm.fence.proxy.async "shared::cluster"
  nvvm.fence.proxy.async global
  nvvm.fence.proxy.async all

  %20 = nvvm.ld acquire, gpu %g : !llvm.ptr<1> -> i32
  %21 = nvvm.ld relaxed, sys %g : !llvm.ptr<1> -> i64
  %22 = nvvm.ld volatile %s : !llvm.ptr<3> -> f32
  %23 = nvvm.ld weak %p : !llvm.ptr -> i32

  nvvm.st release, gpu %g, %i : !llvm.ptr<1>, i32
  nvvm.st relaxed, cta %s, %l : !llvm.ptr<3>, i64
  nvvm.st volatile %g, %f : !llvm.ptr<1>, f32
  nvvm.st weak %p, %i : !llvm.ptr, i32

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
  nvvm.red smax release, gpu %g, %i : !llvm.ptr<1>, i32

  %40 = nvvm.atom.cas acq_rel, gpu %g, %i, %i : !llvm.ptr<1>, i32
  %41 = nvvm.atom.cas relaxed, cta %s, %l, %l : !llvm.ptr<3>, i64

  nvvm.red add release, gpu %g, %i : !llvm.ptr<1>, i32
  nvvm.red max relaxed, sys %g, %l : !llvm.ptr<1>, i64
  nvvm.red add relaxed, cta %s, %f : !llvm.ptr<3>, f32
  func.return
}

// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.y"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.z"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ntid.x"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ntid.y"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ntid.z"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.x"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.y"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.z"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.nctaid.x"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.nctaid.y"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.nctaid.z"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.laneid"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.warpid"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.smid"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.nsmid"() : () -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.globaltimer"() : () -> i64
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
// A named barrier's id and count are constant arguments, or the id is the op's operand.
// CHECK-NEXT: %[[ID:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[COUNT:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"(%[[ID]], %[[COUNT]]) : (i32, i32) -> ()
// CHECK-NEXT: %[[COUNT:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"(%[[I]], %[[COUNT]]) : (i32, i32) -> ()
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.griddepcontrol.wait"() : () -> ()
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.griddepcontrol.launch.dependents"() : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "nanosleep.u32 $0;", "r" %[[I]] : (i32) -> ()
// CHECK-NEXT: llvm.call_intrinsic "llvm.trap"() : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.acq_rel.gpu;", "~{memory}" : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.sc.sys;", "~{memory}" : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.acq_rel.cta;", "~{memory}" : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.sc.cluster;", "~{memory}" : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", "~{memory}" : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cluster;", "~{memory}" : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.global;", "~{memory}" : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async;", "~{memory}" : () -> ()
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "ld.acquire.gpu.global.u32 $0, [$1];", "=r,l,~{memory}" %[[G]] : (!llvm.ptr<1>) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "ld.relaxed.sys.global.u64 $0, [$1];", "=l,l,~{memory}" %[[G]] : (!llvm.ptr<1>) -> i64
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "ld.volatile.shared.f32 $0, [$1];", "=f,l,~{memory}" %[[S]] : (!llvm.ptr<3>) -> f32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "ld.u32 $0, [$1];", "=r,l,~{memory}" %[[P]] : (!llvm.ptr) -> i32
// CHECK-NEXT: llvm.inline_asm has_side_effects "st.release.gpu.global.u32 [$0], $1;", "l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "st.relaxed.cta.shared.u64 [$0], $1;", "l,l,~{memory}" %[[S]], %[[L]] : (!llvm.ptr<3>, i64) -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "st.volatile.global.f32 [$0], $1;", "l,f,~{memory}" %[[G]], %[[F]] : (!llvm.ptr<1>, f32) -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "st.u32 [$0], $1;", "l,r,~{memory}" %[[P]], %[[I]] : (!llvm.ptr, i32) -> ()
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.gpu.global.add.u32 $0, [$1], $2;", "=r,l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.acq_rel.sys.global.exch.b64 $0, [$1], $2;", "=l,l,l,~{memory}" %[[G]], %[[L]] : (!llvm.ptr<1>, i64) -> i64
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.acquire.cta.shared.max.u32 $0, [$1], $2;", "=r,l,r,~{memory}" %[[S]], %[[I]] : (!llvm.ptr<3>, i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.release.gpu.min.u64 $0, [$1], $2;", "=l,l,l,~{memory}" %[[P]], %[[L]] : (!llvm.ptr, i64) -> i64
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.gpu.global.inc.u32 $0, [$1], $2;", "=r,l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.gpu.global.dec.u32 $0, [$1], $2;", "=r,l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.gpu.global.and.b32 $0, [$1], $2;", "=r,l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.gpu.global.or.b64 $0, [$1], $2;", "=l,l,l,~{memory}" %[[G]], %[[L]] : (!llvm.ptr<1>, i64) -> i64
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.gpu.global.xor.b32 $0, [$1], $2;", "=r,l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.gpu.global.add.f32 $0, [$1], $2;", "=f,l,f,~{memory}" %[[G]], %[[F]] : (!llvm.ptr<1>, f32) -> f32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.gpu.global.max.s32 $0, [$1], $2;", "=r,l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.acquire.gpu.global.min.s64 $0, [$1], $2;", "=l,l,l,~{memory}" %[[G]], %[[L]] : (!llvm.ptr<1>, i64) -> i64
// CHECK-NEXT: llvm.inline_asm has_side_effects "red.release.gpu.global.max.s32 [$0], $1;", "l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> ()
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.acq_rel.gpu.global.cas.b32 $0, [$1], $2, $3;", "=r,l,r,r,~{memory}" %[[G]], %[[I]], %[[I]] : (!llvm.ptr<1>, i32, i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "atom.relaxed.cta.shared.cas.b64 $0, [$1], $2, $3;", "=l,l,l,l,~{memory}" %[[S]], %[[L]], %[[L]] : (!llvm.ptr<3>, i64, i64) -> i64
// CHECK-NEXT: llvm.inline_asm has_side_effects "red.release.gpu.global.add.u32 [$0], $1;", "l,r,~{memory}" %[[G]], %[[I]] : (!llvm.ptr<1>, i32) -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "red.relaxed.sys.global.max.u64 [$0], $1;", "l,l,~{memory}" %[[G]], %[[L]] : (!llvm.ptr<1>, i64) -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "red.relaxed.cta.shared.add.f32 [$0], $1;", "l,f,~{memory}" %[[S]], %[[F]] : (!llvm.ptr<3>, f32) -> ()
// CHECK-NEXT: func.return
// CHECK-NOT: nvvm.
