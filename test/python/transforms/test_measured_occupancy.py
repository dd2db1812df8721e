"""W and T decide from the compiled kernels' real resources (annotate_resources), not guesses."""

from importlib import resources

from tilesync.api import annotate_resources, lower, parse
from tilesync.dialects import sync


def mlp_after_sync_passes():
    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    module = parse(text)
    lower(module, ["sync-generate-policies", "sync-insert-post-wait", "sync-insert-wait-kernel"])
    return module


def test_stage_resources_come_from_nvjitlink():
    module = mlp_after_sync_passes()
    usage = annotate_resources(module)
    stages = {op.sym_name.data: op for op in module.walk() if isinstance(op, sync.StageOp)}
    for name, kernel in (("gemm1", "gemm1"), ("gemm2", "gemm2")):
        registers, shared = usage[kernel]
        assert stages[name].attributes["registers"].value.data == registers > 32
        # two 32×32 f32 tiles; nvJitLink's count may include the 1 KiB the system reserves
        assert stages[name].attributes["shared_bytes"].value.data == shared
        assert 2 * 32 * 32 * 4 <= shared <= 2 * 32 * 32 * 4 + 1024


def test_w_keeps_the_wait_kernel_when_real_occupancy_forbids_dropping_it():
    # With more than 32 registers per thread, a 1024-thread block runs alone on its SM:
    # GEMM1 then takes 2.9 waves and the wait-kernel must stay (a 32-register guess said 2
    # blocks per SM, 1.94 waves in all, and would have dropped it).
    module = mlp_after_sync_passes()
    annotate_resources(module)
    lower(module, ["sync-annotate-occupancy", "sync-drop-wait-kernel", "sync-verify{sms=132}"])
    stages = {op.sym_name.data: op for op in module.walk() if isinstance(op, sync.StageOp)}
    assert stages["gemm1"].attributes["blocks_per_sm"].value.data == 1
    assert any(isinstance(op, sync.WaitKernelOp) for op in module.walk())
    assert stages["gemm2"].attributes["sync.progress"].data == "@gemm1: wait-kernel"


def test_compile_measures_the_registers_before_annotating_occupancy():
    # tilesync.compile records the kernels' registers before sync-annotate-occupancy (the
    # driver's job): W keeps the wait-kernel, where the 32-register default would drop it
    import tilesync
    from tilesync.api import default_pipeline

    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    compiled = tilesync.compile(text, pipeline=default_pipeline(before=(
        "sync-generate-policies", "sync-insert-post-wait", "sync-insert-wait-kernel",
        "sync-annotate-occupancy", "sync-drop-wait-kernel", "sync-verify{sms=132}")))
    stages = {op.sym_name.data: op for op in compiled.module.walk()
              if isinstance(op, sync.StageOp)}
    assert stages["gemm1"].attributes["registers"].value.data > 32
    assert stages["gemm1"].attributes["blocks_per_sm"].value.data == 1
    assert stages["gemm2"].attributes["sync.progress"].data == "@gemm1: wait-kernel"


def test_compile_keeps_the_registers_the_pass_is_given():
    import tilesync
    from tilesync.api import default_pipeline

    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    compiled = tilesync.compile(text, pipeline=default_pipeline(before=(
        "sync-generate-policies", "sync-insert-post-wait", "sync-insert-wait-kernel",
        "sync-annotate-occupancy{regs_per_thread=32}", "sync-drop-wait-kernel",
        "sync-verify{sms=132}")))
    stages = {op.sym_name.data: op for op in compiled.module.walk()
              if isinstance(op, sync.StageOp)}
    assert "registers" not in stages["gemm1"].attributes
    assert stages["gemm1"].attributes["blocks_per_sm"].value.data == 2
    assert "sync.wait_kernel" not in str(compiled.module)
