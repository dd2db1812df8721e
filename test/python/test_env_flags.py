"""Every TILESYNC_* switch is read by contract.env_flag: the same words mean on and off for all
of them, and anything else is an error naming the variable."""

from __future__ import annotations

import contextlib
import io

import pytest

from tilesync.contract import TilesyncError, env_flag
from tilesync.tools import cli

SWITCH = "TILESYNC_TEST_SWITCH"


@pytest.mark.parametrize("value", ["1", "true", "YES", "On", " on "])
def test_on(monkeypatch, value):
    monkeypatch.setenv(SWITCH, value)
    assert env_flag(SWITCH) is True and env_flag(SWITCH, default=True) is True


@pytest.mark.parametrize("value", ["0", "false", "No", "OFF"])
def test_off(monkeypatch, value):
    monkeypatch.setenv(SWITCH, value)
    assert env_flag(SWITCH) is False and env_flag(SWITCH, default=True) is False


@pytest.mark.parametrize("value", [None, "", "  "])
def test_unset_or_empty_is_the_default(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(SWITCH, raising=False)
    else:
        monkeypatch.setenv(SWITCH, value)
    assert env_flag(SWITCH) is False and env_flag(SWITCH, default=True) is True


def test_anything_else_names_the_variable(monkeypatch):
    monkeypatch.setenv(SWITCH, "maybe")
    with pytest.raises(TilesyncError, match=f"{SWITCH}='maybe' is not a switch"):
        env_flag(SWITCH)


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(argv)
    return status, err.getvalue()


@pytest.mark.parametrize("value", ["0", "no", "off", "false"])
def test_traceback_off_means_off(monkeypatch, tmp_path, value):
    """TILESYNC_TRACEBACK=0 had turned tracebacks on (any non-empty value did)."""
    monkeypatch.setenv("TILESYNC_TRACEBACK", value)
    status, err = _cli(["compile", str(tmp_path / "missing.mlir")])
    assert status == 1 and err.startswith("tilesync compile: error: cannot read")


def test_traceback_on_reraises(monkeypatch, tmp_path):
    monkeypatch.setenv("TILESYNC_TRACEBACK", "yes")
    with pytest.raises(TilesyncError, match="cannot read"):
        cli.main(["compile", str(tmp_path / "missing.mlir")])


def test_a_bad_switch_is_refused_up_front(monkeypatch, tmp_path):
    monkeypatch.setenv("TILESYNC_TRACEBACK", "maybe")
    status, err = _cli(["compile", str(tmp_path / "missing.mlir")])
    assert status == 1 and err.count("\n") == 1
    assert err.startswith("tilesync compile: error: TILESYNC_TRACEBACK='maybe' is not a switch")


def test_disable_gpu_false_leaves_the_gpu(monkeypatch):
    from tilesync.runtime import device

    reason = f"{device.DISABLE_GPU_ENV} is set"
    try:
        for value, disabled in [("false", False), ("0", False), ("1", True), ("on", True)]:
            monkeypatch.setenv(device.DISABLE_GPU_ENV, value)
            device._probe.cache_clear()
            assert (device.gpu_available() == (False, reason)) == disabled, value
        monkeypatch.setenv(device.DISABLE_GPU_ENV, "perhaps")
        device._probe.cache_clear()
        ok, why = device.gpu_available()  # never raises: the reason names the variable
        assert not ok and "TILESYNC_DISABLE_GPU='perhaps' is not a switch" in why
        with pytest.raises(TilesyncError, match="TILESYNC_DISABLE_GPU='perhaps'"):
            device.require_gpu()
    finally:
        monkeypatch.undo()
        device._probe.cache_clear()


@pytest.mark.parametrize("value, enabled", [("off", False), ("no", False), ("1", True),
                                            ("", True)])
def test_disk_cache(monkeypatch, value, enabled):
    from tilesync.runtime.module import DISK_CACHE_ENV, disk_cache_enabled

    monkeypatch.setenv(DISK_CACHE_ENV, value)
    assert disk_cache_enabled() is enabled


def test_torch_front_end_switches(monkeypatch):
    pytest.importorskip("torch")
    from tilesync.frontend.torch.compiler import LOG_ENV, TUNE_ENV, Options

    monkeypatch.setenv(LOG_ENV, "false")
    monkeypatch.setenv(TUNE_ENV, "yes")
    options = Options.make()
    assert options.log is False and options.tune is True
    monkeypatch.setenv(LOG_ENV, "sometimes")
    with pytest.raises(TilesyncError, match="TILESYNC_LOG='sometimes'"):
        Options.make()
