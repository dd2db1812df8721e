// RUN: tilesync-opt %s -p 'convert-tile-to-nvvm{default_timeout_ns=1000}' | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s --check-prefix=DEFAULT
// RUN: tilesync-opt %s -p 'convert-tile-to-nvvm{default_timeout_ns=1000 debug=true}' | filecheck %s --check-prefix=DEBUG

// An mbarrier wait: one try_wait before any timer read (a wait that does not wait costs what
// it did); once a try has failed, the start time, then a loop of tries that traps twice the
// semaphore timeout (mbarrier_timeout_ns: 2 x 1000 ns) after the first failure.
// CHECK-LABEL: func.func @wait
// CHECK-NOT:   globaltimer
// CHECK:       %[[BAR:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i64
// CHECK-NEXT:  %[[PARITY:.*]] = llvm.zext %parity : i1 to i32
// CHECK-NEXT:  %[[DONE:.*]] = nvvm.mbarrier.try_wait.parity %[[BAR]], %[[PARITY]] : !llvm.ptr<3>
// CHECK-NEXT:  %[[FAILED:.*]] = arith.cmpi eq, %[[DONE]], %{{.*}} : i32
// CHECK-NEXT:  scf.if %[[FAILED]] {
// CHECK-NEXT:    %[[START:.*]] = nvvm.read.ptx.sreg.globaltimer : i64
// CHECK-NEXT:    scf.while () : () -> () {
// CHECK-NEXT:      %[[AGAIN:.*]] = nvvm.mbarrier.try_wait.parity %[[BAR]], %[[PARITY]] : !llvm.ptr<3>
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[STILL:.*]] = arith.cmpi eq, %[[AGAIN]], %[[ZERO]] : i32
// CHECK-NEXT:      scf.condition(%[[STILL]])
// CHECK-NEXT:    } do {
// CHECK-NEXT:      %[[NOW:.*]] = nvvm.read.ptx.sreg.globaltimer : i64
// CHECK-NEXT:      %[[ELAPSED:.*]] = arith.subi %[[NOW]], %[[START]] : i64
// CHECK-NEXT:      %[[LIMIT:.*]] = arith.constant 2000 : i64
// CHECK-NEXT:      %[[TIMED_OUT:.*]] = arith.cmpi sgt, %[[ELAPSED]], %[[LIMIT]] : i64
// CHECK-NEXT:      scf.if %[[TIMED_OUT]] {
// CHECK-NEXT:        nvvm.trap
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return
// The default: twice convert-sync-to-nvvm's DEFAULT_TIMEOUT_NS (10 s).
// DEFAULT-LABEL: func.func @wait
// DEFAULT:       arith.constant 20000000000 : i64
func.func @wait(%bars: memref<8xi64, 3>, %s: index, %parity: i1) {
  tile.mbarrier_wait %bars[%s], %parity : memref<8xi64, 3>
  func.return
}

// A warpgroup with wgmma groups in flight waits for them before it traps: ptxas would otherwise
// put that wait there itself, on a path it cannot prove warp-uniform, and make every wgmma of
// the kernel synchronous.
// CHECK-LABEL: func.func @wait_in_flight
// CHECK:       arith.cmpi sgt
// CHECK-NEXT:  scf.if %{{.*}} {
// CHECK-NEXT:    nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT:    nvvm.trap
// CHECK-NEXT:  }
func.func @wait_in_flight(%bars: memref<8xi64, 3>, %s: index, %parity: i1) {
  tile.mbarrier_wait %bars[%s], %parity wgmma_in_flight : memref<8xi64, 3>
  func.return
}

// Without debug there is no record: a kernel keeps its parameters.
// CHECK-LABEL: gpu.func @consumer(%s: index, %parity: i1) kernel {
// CHECK-NOT:   nvvm.st volatile
// CHECK:       nvvm.trap
// With debug a kernel takes the debug record, and a timed-out wait claims it and writes the
// kernel's tag (kernel_tag("consumer")), the barrier array's (kernel_tag("full_bars")), the
// barrier's index, the parity, the block and the site (SPIN_SITE_MBARRIER = 3), then, after a
// system fence, 1 into its last word ("complete"), before trapping. A wait that lost the claim
// waits for that word (1 ms of %globaltimer at most) before its own trap, which would stop
// the grid with the claiming block half-way through the fields.
// DEBUG-LABEL: gpu.module @kernels
// DEBUG:       gpu.func @consumer(%s: index, %parity: i1, %[[RECORD:.*]]: memref<?xi32>) kernel attributes {sync.args = ["debug_record"]} {
// DEBUG:         %[[INDEX:.*]] = llvm.trunc %{{.*}} : i64 to i32
// DEBUG:         %[[PARITY:.*]] = llvm.zext %parity : i1 to i32
// DEBUG:         scf.if %{{.*}} {
// DEBUG:           arith.cmpi sgt
// DEBUG-NEXT:      scf.if %{{.*}} {
// DEBUG:             %[[TAG:.*]] = arith.constant 1885026087 : i32
// DEBUG-NEXT:        %[[ARRAY:.*]] = arith.constant 681338803 : i32
// DEBUG-NEXT:        %[[SITE:.*]] = arith.constant 3 : i32
// DEBUG-NEXT:        %[[BASE:.*]] = builtin.unrealized_conversion_cast %[[RECORD]] : memref<?xi32> to !llvm.ptr<1>
// DEBUG:             nvvm.atom.cas relaxed, sys %[[BASE]], %{{.*}}, %[[ONE:[^ ]*]] :
// DEBUG:             nvvm.st volatile %{{.*}}, %[[TAG]] : !llvm.ptr<1>, i32
// DEBUG:             nvvm.st volatile %{{.*}}, %[[ARRAY]] : !llvm.ptr<1>, i32
// DEBUG:             nvvm.st volatile %{{.*}}, %[[INDEX]] : !llvm.ptr<1>, i32
// DEBUG:             nvvm.st volatile %{{.*}}, %[[PARITY]] : !llvm.ptr<1>, i32
// DEBUG:             nvvm.st volatile %{{.*}}, %[[SITE]] : !llvm.ptr<1>, i32
// DEBUG-NEXT:        nvvm.fence sc, sys
// DEBUG-NEXT:        %[[COMPLETE:.*]] = llvm.getelementptr %[[BASE]][10] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
// DEBUG-NEXT:        nvvm.st volatile %[[COMPLETE]], %[[ONE]] : !llvm.ptr<1>, i32
// DEBUG-NEXT:        nvvm.fence sc, sys
// DEBUG-NEXT:      } else {
// DEBUG-NEXT:        %[[WAITED:.*]] = llvm.getelementptr %[[BASE]][10] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
// DEBUG-NEXT:        %[[START:.*]] = nvvm.read.ptx.sreg.globaltimer : i64
// DEBUG-NEXT:        scf.while () : () -> () {
// DEBUG-NEXT:          %[[WORD:.*]] = nvvm.ld volatile %[[WAITED]] : !llvm.ptr<1> -> i32
// DEBUG-NEXT:          %[[PENDING:.*]] = arith.cmpi eq, %[[WORD]], %{{.*}} : i32
// DEBUG-NEXT:          %[[NOW:.*]] = nvvm.read.ptx.sreg.globaltimer : i64
// DEBUG-NEXT:          %[[ELAPSED:.*]] = arith.subi %[[NOW]], %[[START]] : i64
// DEBUG-NEXT:          %[[LIMIT:.*]] = arith.constant 1000000 : i64
// DEBUG-NEXT:          %[[IN_TIME:.*]] = arith.cmpi slt, %[[ELAPSED]], %[[LIMIT]] : i64
// DEBUG-NEXT:          %[[WAITING:.*]] = arith.andi %[[PENDING]], %[[IN_TIME]] : i1
// DEBUG-NEXT:          scf.condition(%[[WAITING]])
// DEBUG-NEXT:        } do {
// DEBUG-NEXT:          scf.yield
// DEBUG-NEXT:        }
// DEBUG-NEXT:      }
// DEBUG-NEXT:      nvvm.trap
gpu.module @kernels {
  "memref.global"() <{sym_name = "full_bars", sym_visibility = "private", type = memref<4xi64, 3>, initial_value}> : () -> ()
  gpu.func @consumer(%s: index, %parity: i1) kernel {
    %bars = memref.get_global @full_bars : memref<4xi64, 3>
    tile.mbarrier_wait %bars[%s], %parity : memref<4xi64, 3>
    gpu.return
  }
}
