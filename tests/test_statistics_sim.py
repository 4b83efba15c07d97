"""Issue 22: the whole decision procedure's error rate, checked on CI with a seeded, small version of
benchmarks/evaluation/statistics_sim.py (the real decide/ code fed by noise-model runners; the full table with 10,000
A/A tunes per model is docs/benchmarks/statistics.md). Seeded: the same tunes every run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "evaluation" / "statistics_sim.py"
_spec = importlib.util.spec_from_file_location("statistics_sim", _PATH)
sim = importlib.util.module_from_spec(_spec)
sys.modules["statistics_sim"] = sim  # its dataclasses look their module up
_spec.loader.exec_module(sim)


@pytest.mark.parametrize("model", ["gaussian", "bimodal", "quantized"])
def test_identical_finalists_are_accepted_in_at_most_one_percent_of_tunes(model):
    """A/A: three finalists with the baseline's code; a written winner is a false acceptance. Before this
    design: 6.2% at min_gain 0.2%, 2.8% with the automatic min_gain (the issue's review)."""
    tunes = 400
    false = sum(sim.one_tune((model, 0.01, 0.0, 10_000 + i, sim.Shape()))[0] for i in range(tunes))
    assert false <= 0.01 * tunes, f"{false} of {tunes} A/A tunes wrote a winner under {model} noise"


def test_a_true_gain_of_two_and_five_percent_is_found_under_one_percent_noise():
    for gain, share in ((0.02, 0.95), (0.05, 0.99)):
        tunes = 100
        found = sum(sim.one_tune(("gaussian", 0.01, gain, 20_000 + i, sim.Shape()))[1] for i in range(tunes))
        assert found >= share * tunes, f"a true {gain:.0%} gain was written in {found} of {tunes} tunes"


# the shape where the rounds' correlation is estimated from least: one finalist on one workload whose
# validation a time box ends after 6 rounds (CI: a 20x gain at 30% noise was withheld there)
SHORT = sim.Shape(finalists=1, workloads=1, cut=6)


def test_a_short_validation_of_one_finalist_keeps_one_percent_where_a_builds_noise_carries_over():
    """A/A at a per-build round-to-round correlation of 0.5: the correlation read off 6 rounds alone let
    1.5% through (2.5% where a low reading counted as 0); updating a prior keeps it (simulator: 0.55%)."""
    tunes = 1000
    false = sum(sim.one_tune(("ar1-build-0.5", 0.01, 0.0, 30_000 + i, SHORT))[0] for i in range(tunes))
    assert false <= 0.01 * tunes, f"{false} of {tunes} A/A tunes wrote a winner"


def test_a_large_gain_at_large_noise_is_delivered_from_a_short_validation():
    """The CI failure: a 20x gain at 30% run-to-run noise, 6 rounds. Before: written in 78% of tunes."""
    tunes = 200
    found = sum(sim.one_tune(("gaussian", 0.3, 19.0, 40_000 + i, SHORT))[1] for i in range(tunes))
    assert found >= 0.95 * tunes, f"a 20x gain was written in {found} of {tunes} tunes"


def test_the_looks_and_their_shares_are_fixed_and_add_up():
    from compileiq_cmake.decide.stats import holm, look_weights, looks

    assert looks(5, 30) == (5, 8, 12, 18, 27, 30) and looks(5, 5) == (5,) and looks(3, 5) == (3, 5)
    weights = look_weights(looks(5, 30))
    assert sum(weights) == pytest.approx(1.0) and list(weights) == sorted(weights)
    assert holm([0.001, 0.02, 0.004], 0.01) == [True, False, True]
    assert holm([0.02, 0.02], 0.01) == [False, False]
