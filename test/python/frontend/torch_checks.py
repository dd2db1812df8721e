"""Checks shared by the front end's GPU tests."""

from __future__ import annotations


def relative_error(out, ref) -> float:
    """|out - ref| / |ref| in fp32, after checking the shapes agree and out is finite."""
    assert out.shape == ref.shape and out.isfinite().all()
    return float((out.float() - ref.float()).norm() / ref.float().norm())


def assert_chosen_by_measurement(piece) -> None:
    """An auto-mode piece runs our way only where it measured faster than torch's path; else
    it stays with torch for the measurement or the cost model."""
    if piece.choice == "tilesync":
        assert piece.measured is not None and piece.measured[0] < piece.measured[1]
    else:
        assert piece.reason in ("measured", "the cost model")
