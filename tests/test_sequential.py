"""Issue 37: the sequential gain test is a class of decide/ driven with arrays: no runner, no tree, no build.
The 1% claim is a property of it (A/A data of several noise shapes, each round fed as a stage feeds it), and
its looks, spending and close are checked one by one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compileiq_cmake.decide.sequential import SequentialGainTest
from compileiq_cmake.model.records import FlagSet
from compileiq_cmake.model.spec import MetricSpec, TuneSpec

pytestmark = pytest.mark.unit

WORKLOADS = (("--n", "1"), ("--n", "2"))


def _spec(tmp_path) -> TuneSpec:
    return TuneSpec(
        source_dir=tmp_path,
        build_dir=tmp_path / "b",
        target="t",
        benchmark=("x",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=tmp_path / "o.toml",
        workloads=WORKLOADS,
    )


def _drive(test: SequentialGainTest, data: dict[str, np.ndarray], max_rounds: int) -> tuple[dict, int]:
    """Feed `data[label]` (workloads x rounds) round by round, looking at the schedule's rounds, as the stage does;
    returns the verdicts and the rounds used."""
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        samples = {
            label: {w: list(values[i, :rounds]) for i, w in enumerate(WORKLOADS)} for label, values in data.items()
        }
        if rounds in test.schedule and test.look(samples):
            break
    test.close(samples, rounds)
    return test.verdicts(samples, {label: FlagSet(((label, 1),), (f"-{label}",)) for label in test.labels}), rounds


def _noise(rng: np.random.Generator, shape: str, rounds: int) -> np.ndarray:
    if shape == "gaussian":
        e = rng.normal(0.0, 0.01, (len(WORKLOADS), rounds))
    elif shape == "heavy":
        e = 0.01 * rng.standard_t(3, (len(WORKLOADS), rounds)) / math.sqrt(3.0)
    else:  # ar1: a build's noise carries over from round to round
        e = np.empty((len(WORKLOADS), rounds))
        e[:, 0] = rng.normal(0.0, 0.01, len(WORKLOADS))
        for t in range(1, rounds):
            e[:, t] = 0.5 * e[:, t - 1] + math.sqrt(0.75) * rng.normal(0.0, 0.01, len(WORKLOADS))
    return 10.0 * (1.0 + e)


@pytest.mark.parametrize("shape", ["gaussian", "heavy", "ar1"])
def test_identical_candidates_are_accepted_in_at_most_one_percent_of_tests(tmp_path, shape):
    spec = _spec(tmp_path)
    rng = np.random.default_rng({"gaussian": 1, "heavy": 2, "ar1": 3}[shape])
    tests, false = 600, 0
    for _ in range(tests):
        test = SequentialGainTest.planned(spec, ("c0", "c1"), 0.002, 5, 30, 0.005)
        data = {label: _noise(rng, shape, 30) for label in ("baseline", "c0", "c1")}
        verdicts, _ = _drive(test, data, 30)
        false += any(v.accepted for v in verdicts.values())
    assert false <= 0.01 * tests, f"{false} of {tests} A/A tests accepted a candidate under {shape} noise"


def test_a_true_gain_is_accepted_at_an_early_look_and_a_slower_candidate_rejected(tmp_path):
    spec = _spec(tmp_path)
    rng = np.random.default_rng(5)
    test = SequentialGainTest.planned(spec, ("fast", "slow"), 0.01, 5, 30, 0.005)
    data = {
        "baseline": _noise(rng, "gaussian", 30),
        "fast": _noise(rng, "gaussian", 30) / 1.5,
        "slow": _noise(rng, "gaussian", 30) * 1.1,
    }
    verdicts, rounds = _drive(test, data, 30)
    assert test.schedule == (5, 8, 12, 18, 27, 30)
    # the first look spends 1.1% of the budget (a 1.5x gain at 1% noise: p = 3e-5 after 5 rounds, adjusted 0.0026
    # against 0.0025); the second decides both and the rounds end there, not at 30
    assert test.decided_at == rounds == 8
    assert verdicts["fast"].accepted and verdicts["fast"].geomean_speedup == pytest.approx(1.5, rel=0.02)
    assert not verdicts["slow"].accepted and verdicts["slow"].reason.startswith("significantly slower")


def test_rounds_ended_between_looks_spend_the_next_looks_share_and_no_more(tmp_path):
    spec = _spec(tmp_path)
    rng = np.random.default_rng(9)
    data = {"baseline": _noise(rng, "gaussian", 6), "c0": _noise(rng, "gaussian", 6) / 1.05}
    samples = {label: {w: list(v[i]) for i, w in enumerate(WORKLOADS)} for label, v in data.items()}
    test = SequentialGainTest.planned(spec, ("c0",), 0.001, 5, 30, 0.005)
    test.close(samples, 6)  # the box ended the rounds after 6: look 8's share, 64 / 2186 of the budget
    assert test.next_look(6) == 8
    p = test.tests["c0"].p_value
    assert test.adjusted["c0"] == pytest.approx(p / (64 / sum(n * n for n in test.schedule)))
    placed = SequentialGainTest.planned(spec, ("c0",), 0.001, 5, 6, 0.005)  # looks placed within the 6 rounds
    assert placed.look(samples)  # round 6 is a look of its own: the stage looks, nothing is left to close
    assert placed.schedule == (5, 6) and placed.adjusted["c0"] == pytest.approx(p / (36 / 61))
    assert placed.adjusted["c0"] < test.adjusted["c0"] / 10
