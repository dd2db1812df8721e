"""Checks shared by the front end's GPU tests."""

from __future__ import annotations


def relative_error(out, ref) -> float:
    """|out - ref| / |ref| in fp32, after checking the shapes agree and out is finite."""
    assert out.shape == ref.shape and out.isfinite().all()
    return float((out.float() - ref.float()).norm() / ref.float().norm())
