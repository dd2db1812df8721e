// A kernel whose mbarrier wait never returns: the barrier expects two arrivals and gets one.
builtin.module attributes {gpu.container_module} {
  gpu.module @m {
    "memref.global"() <{sym_name = "full_bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
    gpu.func @stuck() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %bars = memref.get_global @full_bars : memref<1xi64, 3>
      %zero = arith.constant 0 : index
      %tid = gpu.thread_id x
      %first = arith.cmpi eq, %tid, %zero : index
      scf.if %first {
        tile.mbarrier_init %bars[%zero] count 2 : memref<1xi64, 3>
        tile.mbarrier_arrive %bars[%zero] : memref<1xi64, 3>
      }
      gpu.barrier
      %parity = arith.constant false
      tile.mbarrier_wait %bars[%zero], %parity : memref<1xi64, 3>
      gpu.return
    }
  }
  sync.stage @stuck {kernel = @m::@stuck, grid = array<i64: 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 1>}
}
