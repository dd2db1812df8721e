// Plain xdsl-opt sees tilesync's dialects and passes through the xdsl.universe entry point.
// RUN: xdsl-opt %s -p convert-sync-to-nvvm | filecheck %s

func.func @consumer(%sems: memref<?xi32>, %epoch: i32) {
  %t = sync.tile : index
  sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
  func.return
}

// CHECK:     nvvm.ld acquire, gpu
// CHECK-NOT: sync.wait
