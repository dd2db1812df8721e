"""dataflow-allot-ctas refuses bandwidths that are no positive number of bytes a second."""

import math

import pytest

from tilesync.transforms.dataflow.allot_ctas import AllotCTAsPass


@pytest.mark.parametrize("option", ["dram_bytes_per_s", "l2_bytes_per_s"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_bandwidth_that_is_no_finite_number_is_refused(option, value):
    # nan compares false to everything: a `<= 0` check alone lets it through
    with pytest.raises(ValueError, match=f"bandwidth options must be finite numbers, got "
                                         f"{option}={value}"):
        AllotCTAsPass(**{option: value})


@pytest.mark.parametrize("option", ["dram_bytes_per_s", "l2_bytes_per_s"])
@pytest.mark.parametrize("value", [0.0, -1.0])
def test_a_bandwidth_that_is_not_positive_is_refused(option, value):
    with pytest.raises(ValueError, match="bandwidth options must be positive"):
        AllotCTAsPass(**{option: value})


def test_measured_bandwidths_are_taken():
    AllotCTAsPass(dram_bytes_per_s=3e12, l2_bytes_per_s=7e12)
