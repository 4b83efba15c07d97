import math

import pytest

from compileiq_cmake.measure.numerics import extract_numbers, numerics_changed


@pytest.mark.unit
def test_extract_numbers_from_matching_lines_and_groups():
    text = "time_ms=3.5\nchecksum=1.572883500e+06 err -2e-3\nresult: nan inf\n"
    assert extract_numbers(text, r"^checksum") == (1.5728835e6, -2e-3)
    assert extract_numbers(text, r"checksum=(\S+)") == (1.5728835e6,)
    nums = extract_numbers(text, r"^result")
    assert math.isnan(nums[0]) and nums[1] == math.inf


@pytest.mark.unit
def test_numerics_changed_tolerances_and_messages():
    assert numerics_changed((1.0, 2.0), (1.0, 2.0), 0.0, 0.0) is None
    assert numerics_changed((1.0, 2.0), (1.0000001, 2.0), 1e-6, 0.0) is None
    msg = numerics_changed((100.0,), (103.0,), 1e-4, 0.0)
    assert msg == "numerics changed in 1 of 1 number: relative error up to 3.0e-02 (allowed: 1e-04, --rtol/--atol)"
    # a baseline of zero: the relative error says nothing (it printed "max rel err 0.0e+00 > 1e-09")
    zero = numerics_changed((0.0,), (1e-3,), 1e-9, 1e-6)
    assert "absolute error up to 1.0e-03 (allowed: 1e-06 + 1e-09 x |baseline|" in zero and "0.0e+00" not in zero
    assert numerics_changed((0.0,), (1e-12,), 0.0, 1e-9) is None
    assert "2 numbers in the output" in numerics_changed((1.0,), (1.0, 2.0), 1e-3, 0.0)
    assert "nan" in numerics_changed((1.0,), (math.nan,), 1e-3, 0.0)
