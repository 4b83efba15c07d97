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
    """The CI failure: a 20x gain at 30% run-to-run noise, 6 rounds. Before: written in 78% of tunes; with the
    correlation read from the rounds and a prior, 190 of these 200. Since the written interval allows for how
    little 5 or 6 rounds tell of the correlation (issue 51: it covered the truth in 90-92% of written tunes at a
    true 0.5), 187: the same 9 undecided by the validation, and 4 confirmations of 5 rounds (was 1) whose
    interval holds 1 (values clipped at a twentieth of the truth: e.g. [0.86..458]). Not writing those is what
    lets "faster" in the TOML be bet on; a larger box writes them."""
    tunes = 200
    found = sum(sim.one_tune(("gaussian", 0.3, 19.0, 40_000 + i, SHORT))[1] for i in range(tunes))
    assert found >= 0.92 * tunes, f"a 20x gain was written in {found} of {tunes} tunes"


def test_the_looks_and_their_shares_are_fixed_and_add_up():
    from compileiq_cmake.decide.stats import holm, look_weights, looks

    assert looks(5, 30) == (5, 8, 12, 18, 27, 30) and looks(5, 5) == (5,) and looks(3, 5) == (3, 5)
    weights = look_weights(looks(5, 30))
    assert sum(weights) == pytest.approx(1.0) and list(weights) == sorted(weights)
    assert holm([0.001, 0.02, 0.004], 0.01) == [True, False, True]
    assert holm([0.02, 0.02], 0.01) == [False, False]


def test_the_written_interval_covers_the_true_gain_where_a_builds_noise_carries_over():
    """Issue 51, third pass: a confirmation too short to show the winner faster was pooled with the rounds that
    accepted it; at a per-build correlation of 0.5 those rounds stopped at a lucky look, and the written interval
    covered a true 1% gain in 91% of written tunes (70% at 0.5%; simulator, 1,000 tunes per gain). Now the
    confirmation goes on with fresh rounds: 97-98%. Here 300 seeded tunes (before: 73 of 78 written covered,
    93.6%; now 66 of 67); every written interval lies above 1."""
    tunes, gain = 300, 0.01
    results = [sim.one_tune(("ar1-build-0.5", 0.01, gain, 50_000 + i, sim.Shape())) for i in range(tunes)]
    right = [r for r in results if r[1]]
    covered = sum(1 for r in right if r[4] <= 1.0 + gain <= r[5])
    assert len(right) >= 50, f"only {len(right)} of {tunes} tunes wrote the faster flag"
    assert covered >= 0.95 * len(right), f"the written interval covered the truth in {covered} of {len(right)}"
    assert all(r[4] > 1.0 for r in results if r[0])


def test_fifteen_bank_validations_against_a_baseline_measured_slow_keep_the_budget():
    """Issue 51: a baseline measured 12% slow at first (offset-12) made the bank validate about 15 trials per
    tune, each at the whole level: 1.95-2.73% false winners. At their share (stats.bank_alpha) the simulator
    shows 0.10-0.15% (docs/benchmarks/statistics.md); here a seeded handful writes none."""
    tunes = 25
    false = sum(sim.one_tune(("offset-12", 0.01, 0.0, 60_000 + i, sim.Shape(bank=15)))[0] for i in range(tunes))
    assert false == 0, f"{false} of {tunes} A/A tunes with 15 bank validations wrote a winner"


def test_the_offset_model_slows_the_baseline_s_first_runs_after_each_build():
    import random
    import tempfile
    from pathlib import Path

    from compileiq_cmake.model.records import FlagSet
    from compileiq_cmake.project.cmake_project import VariantTree

    tmp = Path(tempfile.gettempdir())
    spec = sim._spec(tmp, sim.Shape())
    runner = sim.NoiseRunner(spec, "offset-12", 0.0, {}, random.Random(1))
    base, cand = VariantTree(tmp / "b", "t0", "cmake"), VariantTree(tmp / "b", "t1", "cmake")
    workload = spec.workloads[0]
    runner.build(base, FlagSet((), ()))
    runner.build(cand, FlagSet((("a", 1),), ("-fa",)))
    first = [runner.run(base, workload).value for _ in range(4)]  # the tune's first measurement of it: 3 slow
    assert first == pytest.approx([11.2, 11.2, 11.2, 10.0])
    assert {runner.run(cand, workload).value for _ in range(3)} == {10.0}
    runner.build(base, FlagSet((), ()))
    later = [runner.run(base, workload).value for _ in range(3)]  # a later build: its warm-up and one more
    assert later == pytest.approx([11.2, 11.2, 10.0])
