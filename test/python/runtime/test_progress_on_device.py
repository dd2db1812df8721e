"""A loaded program re-checks forward progress with the device's SMs and its kernels' real
blocks per SM: sync-verify's proof is only as good as the counts it was given."""

from importlib import resources

import pytest

import tilesync
from tilesync.api import default_pipeline, lower, parse
from tilesync.runtime.program import (
    DeviceCounts,
    NoProgressOnDeviceError,
    check_progress_on_device,
)

MLP = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
SYNC = ("sync-generate-policies", "sync-insert-post-wait", "sync-insert-wait-kernel")


def compiled_mlp(*passes: str):
    return tilesync.compile(MLP, pipeline=default_pipeline(before=(*SYNC, *passes)))


@pytest.fixture(scope="module")
def wave_model_mlp():
    """The GPT-3 MLP whose wait-kernel W dropped on 32 registers a thread (the pass's default
    where none are recorded, which `lower` keeps; tilesync.compile would measure them): 2
    blocks of 1024 threads per SM, 1.94 waves in all on 132 SMs."""
    module = parse(MLP)
    lower(module, [*SYNC, "sync-annotate-occupancy", "sync-drop-wait-kernel",
                   "sync-verify{sms=132}"])
    compiled = tilesync.compile(module)
    assert "sync.wait_kernel" not in str(compiled.module)
    return compiled


def test_the_counts_it_was_proved_with_pass(wave_model_mlp):
    check_progress_on_device(wave_model_mlp, lambda: DeviceCounts(132, lambda stage: 2))


def test_fewer_blocks_per_sm_than_proved_are_refused(wave_model_mlp):
    # the real kernels use more than 32 registers: one 1024-thread block an SM
    with pytest.raises(NoProgressOnDeviceError) as err:
        check_progress_on_device(wave_model_mlp,
                                 lambda: DeviceCounts(132, lambda stage: 1, "an H100"))
    message = str(err.value)
    assert "@gemm2 waiting on @gemm1" in message and "an H100 (132 SMs" in message
    assert "1 per SM" in message and "sync-verify proved it by @gemm1: wave model" in message


def test_fewer_sms_than_proved_are_refused(wave_model_mlp):
    with pytest.raises(NoProgressOnDeviceError, match=r"\(114 SMs"):
        check_progress_on_device(wave_model_mlp, lambda: DeviceCounts(114, lambda stage: 2))


def unasked() -> DeviceCounts:
    raise AssertionError("the device was asked for counts no guarantee needs")


def test_a_kept_wait_kernel_needs_no_count():
    compiled = compiled_mlp("sync-verify")
    assert 'sync.progress = "@gemm1: wait-kernel"' in str(compiled.module)
    check_progress_on_device(compiled, unasked)


def test_stream_order_needs_no_count():
    # without its launches both GEMMs run on stream 0 in program order
    text = MLP.replace("  sync.wait_kernel @gemm1 {stream = 1 : i64}\n", "")
    compiled = tilesync.compile(text.replace("{stream = 1 : i64}", "{stream = 0 : i64}"))
    assert 'sync.progress = "@gemm1: stream order"' in str(compiled.module)
    check_progress_on_device(compiled, unasked)


def test_an_unverified_program_is_not_checked():
    module = parse(MLP)
    lower(module, [*SYNC, "sync-annotate-occupancy", "sync-drop-wait-kernel"])
    check_progress_on_device(tilesync.compile(module, pipeline=default_pipeline()), unasked)


def test_a_coresident_declaration_is_checked_against_the_counts():
    # 384 + 128 blocks, 4 an SM: all resident on 132 SMs (528 slots), not on 16
    text = MLP.replace("sync.stage @gemm2 {", "sync.stage @gemm2 {coresident, ", 1) \
        .replace("  sync.wait_kernel @gemm1 {stream = 1 : i64}\n", "")
    assert "coresident" in text and "sync.wait_kernel @gemm1" not in text
    compiled = tilesync.compile(text, pipeline=default_pipeline(
        before=(*SYNC[:2], "sync-verify")))
    assert "co-resident (declared)" in str(compiled.module)
    check_progress_on_device(compiled, lambda: DeviceCounts(132, lambda stage: 4))
    with pytest.raises(NoProgressOnDeviceError, match="declared coresident"):
        check_progress_on_device(compiled, lambda: DeviceCounts(16, lambda stage: 4))
