"""Issue 22, quantized metrics: a metric printed with few digits (`Time= 2.371 msec`) made every difference
look certain: identical printed values gave a zero-width interval and p=0. The comparison now reads the
printed resolution off the values and knows each side only to within one step: a difference below one step
is never significant and intervals are never narrower than a step."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from compileiq_cmake.decide.stats import compare, compare_paired, decimals, quantum
from compileiq_cmake.decide.validation import validate
from compileiq_cmake.measure.runner import RunResult
from compileiq_cmake.model.events import recording
from compileiq_cmake.model.records import FlagSet, Status

from test_hardening_validation import _build, _setup

pytestmark = pytest.mark.unit


@dataclass
class Printed:
    """Times per tree printed with 3 decimals, as a benchmark's `%.3f` would print them."""

    spec: object
    times: dict[str, float]
    noise: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def run(self, tree, workload) -> RunResult:
        value = self.times[tree.path.name] * (1 + self.rng.gauss(0, self.noise))
        return RunResult(Status.OK, "", round(value, 3), 0.0)


def test_the_printed_resolution_is_read_off_the_values():
    assert [decimals(x) for x in (2.371, 2.37, 1.0, 120.0, 1.23456e-3)] == [3, 2, 0, 0, 8]
    # digits after the point are not the step of whole numbers printed in exponent form ('%.2g': 1.3e+02)
    assert quantum([120.0, 130.0]) == pytest.approx(10 / 120)
    assert decimals(2.0 / 3.0) == 15 and quantum([2.0 / 3.0, 0.7]) == 0.0  # computed values: nothing to widen
    assert quantum([0.450, 0.451], [0.452]) == pytest.approx(0.001 / 0.450)


def test_identical_printed_values_are_not_certain_and_one_step_is_never_significant():
    same = compare_paired([0.450] * 5, [0.450] * 5)
    assert same.p_value == 1.0 and same.ci.low < 1.0 < same.ci.high  # was: [1.0..1.0], certain
    one_step = compare([0.451] * 5, [0.450] * 5)  # old: 1.0022x, p=0
    assert one_step.p_value == 1.0 and one_step.ci.low < 1.0 and not one_step.faster(0.002)
    many = compare([0.461] * 5, [0.450] * 5)  # 11 steps apart: rounding cannot explain it
    assert many.faster(0.002) and many.ci.low > 1.0 and many.ci.high - many.ci.low >= 2 * 0.001 / 0.450 * 0.99


def test_identical_builds_of_a_3_decimal_metric_accept_nothing(tmp_path):
    """Three finalists whose code is the baseline's: their true times straddle a rounding boundary, so each
    prints one step (0.22%) from the baseline, above the 0.2% min_gain. Before: p=0 and accepted."""
    fake, trees = _setup(tmp_path, {"base": 1, "f1": 1, "f2": 1, "f3": 1})
    runner = Printed(fake.spec, {"base": 0.45051, "f1": 0.45049, "f2": 0.45049, "f3": 0.45051})
    events, _ = recording()
    finalists = [FlagSet(((n, 1),), (f"-{n}",)) for n in ("a", "b", "c")]
    results = validate(runner, _build, trees, FlagSet((), ()), finalists, 0.002, 0, events)
    assert not any(v.accepted for v in results), [(v.geomean_speedup, v.reason) for v in results]
    assert all(v.geomean_ci_low < 1.0 for v in results)


def test_a_real_gain_of_several_steps_is_still_accepted(tmp_path):
    fake, trees = _setup(tmp_path, {"base": 1, "fast": 1})
    runner = Printed(fake.spec, {"base": 0.4505, "fast": 0.4400}, noise=0.001)  # 2.4%: ten steps, 0.1% noise
    events, _ = recording()
    (result,) = validate(runner, _build, trees, FlagSet((), ()), [FlagSet((("a", 1),), ("-a",))], 0.002, 0, events)
    assert result.accepted, result.reason
    assert 1.015 < result.geomean_ci_low <= result.geomean_speedup <= result.geomean_ci_high < 1.035
