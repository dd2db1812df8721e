"""bench/row_profile.py without a GPU: its table, and one line with status 1 where no GPU is
present (its GPU run is the result of record, bench/results/row-profile-*)."""

from __future__ import annotations

import pytest

from tilesync.bench import row_profile


def test_the_table_sums_each_sides_kernels_per_run():
    result = {"rows": [
        {"bench": "mlp", "key": ["gpt3", 1024],
         "ours": {"gemm1": {"ms": 0.2, "calls": 1.0}, "gemm2": {"ms": 0.25, "calls": 1.0}},
         "library": {"nvjet": {"ms": 0.2, "calls": 2.0}, "gelu": {"ms": 0.01, "calls": 1.0}}},
        {"bench": "conv", "key": [8, 56, 256], "error": "compile: boom"},
    ]}
    lines = row_profile.row_table(result).splitlines()
    assert lines[0] == "mlp ('gpt3', 1024)"
    assert lines[1].split()[:2] == ["ours", "0.2500"] and lines[1].endswith("gemm2")
    assert lines[3].split()[:2] == ["ours", "0.4500"] and "in all" in lines[3]
    assert lines[4].split()[:4] == ["library", "0.2000", "ms", "x2"]
    assert lines[6].split()[:2] == ["library", "0.4100"]
    assert lines[7:] == ["conv (8, 56, 256)", "   FAILED: compile: boom"]


def test_without_a_gpu_it_says_so_in_one_line(capsys):
    from tilesync.runtime.device import gpu_available

    if gpu_available()[0]:
        pytest.skip("a GPU is present")
    assert row_profile.main([]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("python -m tilesync.bench.row_profile: error:")
