"""tilesync.tools.compile_time runs and prints its table (it asserts no duration)."""

import io

from tilesync.tools import compile_time


def test_report_prints_each_config():
    configs = {"small": dict(M=256, N=256, K=64, tile=(64, 64, 32), stages=2)}
    out = io.StringIO()
    results = compile_time.compile_time_report(runs=1, configs=configs, out=out)
    text = out.getvalue()
    assert "import tilesync" in text and "small" in text
    assert set(results) == {"small"}
    assert results["small"]["median_s"] > 0 and results["small"]["pass_seconds"]


def test_default_configs_are_valid():
    from tilesync.kernels.config import gemm_config

    for arguments in compile_time.CONFIGS.values():
        gemm_config(**arguments)  # raises for a config the generator rejects
