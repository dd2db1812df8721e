"""tilesync.compile: the whole pipeline from MLIR text to PTX that nvJitLink accepts."""

import re
from importlib import resources

import pytest

import tilesync
from tilesync.api import CompileError
from tilesync.contract import TARGETS
from tilesync.lowering.ptx import validate_ptx

EXAMPLES = ["copy_chain.mlir", "synthetic_chain.mlir"]


def example(name: str) -> str:
    return resources.files("tilesync").joinpath("examples", name).read_text()


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("target", TARGETS)
def test_examples_compile_and_assemble(name, target):
    program = tilesync.compile(example(name), target=target)
    assert set(program.kernels) == {"producer", "consumer"}
    ptx = program.ptx
    assert re.search(rf"\.target {target}\b", ptx)
    assert ".entry producer" in ptx and ".entry consumer" in ptx
    validate_ptx(ptx, target)  # raises on PTX that does not assemble


def test_memory_model_in_ptx():
    ptx = tilesync.compile(example("copy_chain.mlir")).ptx
    producer, consumer = ptx.split(".entry consumer")
    # post: barrier, then gpu-scope release fence and the atomic add, in that order
    post = producer[producer.index("bar.sync"):]
    assert post.index("fence.acq_rel.gpu") < post.index("red.relaxed.gpu.global.add")
    # wait: acquire loads in a loop with backoff, a timeout that traps, then a barrier
    assert "ld.acquire.gpu.global" in consumer
    assert "nanosleep" in consumer and "trap" in consumer and "globaltimer" in consumer
    assert "bar.sync" in consumer  # (block layout in PTX need not follow program order)
    # synchronized data must never be read through the non-coherent path
    assert "ld.global.nc" not in ptx


def test_signatures_and_launch_bounds():
    program = tilesync.compile(example("synthetic_chain.mlir"))
    sig = program.kernels["consumer"]
    assert sig.params == ("ptr", "ptr", "ptr", "i32", "i32", "i64")
    assert sig.block == (1024, 1, 1)
    assert re.search(r"\.maxntid 1024, 1, 1", program.ptx)
    assert re.search(r"\.minnctapersm 2", program.ptx)


def test_ir_after_each_pass_and_timing():
    program = tilesync.compile(example("copy_chain.mlir"), keep_ir=True)
    assert "sync.wait" not in program.ir_after["convert-sync-to-nvvm"]
    assert "nvvm.ld acquire" in program.ir_after["convert-sync-to-nvvm"]
    final = program.ir_after["reconcile-unrealized-casts"]
    assert "unrealized_conversion_cast" not in final and "llvm.func" in final
    assert all(sec >= 0 for sec in program.pass_seconds.values())


def test_the_first_pass_is_not_charged_with_building_the_pipeline(monkeypatch):
    """Parsing the spec and importing the passes happen before the first pass's clock."""
    import time

    import tilesync.api as api

    build = api.build_pipeline

    def slow_build(*args, **kwargs):
        time.sleep(0.5)
        return build(*args, **kwargs)

    monkeypatch.setattr(api, "build_pipeline", slow_build)
    program = tilesync.compile(example("copy_chain.mlir"))
    first = next(iter(program.pass_seconds))
    assert program.pass_seconds[first] < 0.5, program.pass_seconds


def test_the_compiles_garbage_is_collected_while_llvm_runs(monkeypatch):
    """compile pauses the collector and collects what the passes left beside LLVM, once
    ("gc" in pass_seconds); a collector the caller turned off stays off and does not run."""
    import gc

    generations = []
    collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda generation=2: generations.append(generation)
                        or collect(generation))
    assert gc.isenabled()
    program = tilesync.compile(example("copy_chain.mlir"))
    assert generations == [1] and "gc" in program.pass_seconds and gc.isenabled()
    generations.clear()
    gc.disable()
    try:
        program = tilesync.compile(example("copy_chain.mlir"))
        assert generations == [] and "gc" not in program.pass_seconds and not gc.isenabled()
    finally:
        gc.enable()


def test_a_compile_inside_a_callers_pause_still_collects_beside_llvm(monkeypatch):
    """Inside an enclosing gc_paused (the torch front end's), the collector is off but was on
    before it: compile collects beside LLVM as it would alone, and leaves it off; the outer
    pause turns it back on. Inside a caller's own gc.disable() nothing collects."""
    import gc

    from tilesync.api import gc_paused

    generations = []
    collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda generation=2: generations.append(generation)
                        or collect(generation))
    with gc_paused() as outer:
        assert outer is not None and not gc.isenabled()
        program = tilesync.compile(example("copy_chain.mlir"))
        assert generations == [1] and "gc" in program.pass_seconds and not gc.isenabled()
    assert gc.isenabled()
    generations.clear()
    gc.disable()
    try:
        with gc_paused() as outer:
            assert outer is None
            tilesync.compile(example("copy_chain.mlir"))
        assert generations == [] and not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "text, message",
    [
        ("builtin.module { func.func @f( }", "Expected argument"),
        ("builtin.module { %x = arith.constant 1 : i32 %y = arith.addi %x : i32 }", ""),
    ],
)
def test_bad_input_raises_compile_error_with_location(text, message):
    with pytest.raises(CompileError) as info:
        tilesync.compile(text)
    assert "<input>:1:" in str(info.value)
    assert message in str(info.value)


def test_unknown_target_and_pass():
    with pytest.raises(CompileError, match="unknown target 'sm_75'"):
        tilesync.compile(example("copy_chain.mlir"), target="sm_75")
    with pytest.raises(CompileError, match="unknown pass 'no-such-pass'"):
        tilesync.compile(example("copy_chain.mlir"), pipeline="no-such-pass")


def test_verifier_failure_is_a_compile_error():
    bad = example("copy_chain.mlir").replace("posts = 1>", "posts = 3>", 1)
    with pytest.raises(CompileError, match="TileSync"):
        tilesync.compile(bad)


def test_stage_program_with_unfilled_hooks_gets_the_sync_passes_by_default():
    from tilesync.api import SYNC_PASSES, WAIT_KERNEL_PASS, default_pipeline

    text = example("gpt3_mlp_sync.mlir")
    by_default = tilesync.compile(text)
    # its plan declares a wait-kernel: the default passes make it work before sync-verify
    passes = [*SYNC_PASSES[:-1], WAIT_KERNEL_PASS, SYNC_PASSES[-1]]
    explicit = tilesync.compile(text, pipeline=[*passes, *default_pipeline()])
    assert "tilesync_wait_kernel" in by_default.ptx
    assert by_default.ptx_by_module == explicit.ptx_by_module
    assert "ld.acquire.gpu" in by_default.ptx
    # the lowering alone would erase the hooks and synchronize nothing: it refuses
    with pytest.raises(CompileError, match="was never filled: lowering would drop"):
        tilesync.compile(text, pipeline=default_pipeline())
    # a program without hooks to fill keeps the plain lowering
    assert tilesync.compile(example("copy_chain.mlir")).ptx == \
        tilesync.compile(example("copy_chain.mlir"), pipeline=default_pipeline()).ptx


_PIPELINE = """
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel
        attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index, %keep: i1) kernel
        attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        RELEASE
      }
      gpu.return
    }
  }
  dataflow.pipeline @chain {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64,
                       inputs = [], outputs = [@q], tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64,
                       inputs = [@q], outputs = [], tiles = 16 : i64}
  }
}
"""
_RELEASE = "dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>"


def test_a_hand_written_pipeline_has_its_tickets_checked_by_default():
    from tilesync.api import dataflow_passes_for, parse
    from tilesync.transforms.dataflow.verify import LAUNCH_TICKETS, TICKETS_ONLY

    good = _PIPELINE.replace("RELEASE", _RELEASE)
    assert dataflow_passes_for(parse(good)) == (TICKETS_ONLY,)
    compiled = tilesync.compile(good)
    (pipeline,) = [op for op in compiled.module.walk() if op.name == "dataflow.pipeline"]
    # the kernels loop n times, n a launch argument: the balance is the launch's
    assert pipeline.attributes["dataflow.verified"].data.startswith(
        f"co-resident: left to the launch; {LAUNCH_TICKETS}")
    # with the counts in the kernels the balance is proved, and a kernel that takes fewer
    # tickets than its stage declares is refused
    counted = good.replace(", %n: index", "").replace(
        "%c0 = arith.constant 0 : index", "%c0 = arith.constant 0 : index\n"
        "      %n = arith.constant 16 : index")
    compiled = tilesync.compile(counted)
    (pipeline,) = [op for op in compiled.module.walk() if op.name == "dataflow.pipeline"]
    assert pipeline.attributes["dataflow.verified"].data == \
        "co-resident: left to the launch; tickets balanced on 1 queue(s)"
    with pytest.raises(CompileError, match=r"acquires 8 ticket\(s\) of @q a launch, but the "
                       "stage declares 16 'tiles'"):
        tilesync.compile(counted.replace("constant 16", "constant 8", 1))
    # released only where a flag holds: the other path keeps the entry, and the producer's
    # third ticket waits for it forever; refused where it is written, before any lowering
    bad = _PIPELINE.replace("RELEASE", f"scf.if %keep {{\n          {_RELEASE}\n        }}")
    with pytest.raises(CompileError, match="releases a ticket acquired outside it") as err:
        tilesync.compile(bad, filename="chain.mlir")
    assert (err.value.location.line, err.value.location.column) == (21, 11)
