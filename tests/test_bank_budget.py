"""Issue 51: the bank's validations are looks of the one procedure and spend a stated share of its error budget
(decide.stats.BANK_SHARE): its j-th validation runs at bank_alpha(j), and the finalists' validation at what is
left (after_bank), so that a false winner, banked or not, stays within the budget (union bound)."""

from __future__ import annotations

import math
import types

import pytest

from compileiq_cmake.decide.stats import (
    BANK_RHO_FLOOR,
    BANK_SHARE,
    FALSE_ACCEPTANCE,
    TAIL_SAFETY,
    after_bank,
    bank_alpha,
)
from compileiq_cmake.model.records import FlagSet, Status, Trial, Validation
from compileiq_cmake.tune import bank as bank_module

pytestmark = pytest.mark.unit
ALPHA = FALSE_ACCEPTANCE * TAIL_SAFETY


@pytest.mark.parametrize("j", [0, 1, 2, 5, 20, 200])
def test_the_bank_and_the_finalists_together_spend_at_most_the_budget(j):
    spent = sum(bank_alpha(i) for i in range(j))
    assert spent < BANK_SHARE * ALPHA
    assert math.isclose(spent + after_bank(j), ALPHA, rel_tol=1e-12)
    assert after_bank(0) == ALPHA and after_bank(j) >= (1 - BANK_SHARE) * ALPHA


class _Store:
    def __init__(self) -> None:
        self.results: dict[str, object] = {}

    def load_result(self, name: str):
        return self.results.get(name)

    def save_result(self, name: str, value: object) -> None:
        self.results[name] = value

    def save_validations(self, name: str, values) -> None:
        pass


def test_each_bank_validation_runs_at_its_share_and_is_counted_in_the_store(monkeypatch):
    levels: list[float] = []
    floors: list[float] = []

    def fake_validate(runner, build, trees, baseline, candidates, min_gain, seed, log, **kw):
        levels.append(kw["alpha"])
        floors.append(kw["rho_floor"])
        return [Validation(candidates[0], (), 1.2, 1.1, 1.3, False, "rejected here")]

    monkeypatch.setattr(bank_module, "validate", fake_validate)
    spec = types.SimpleNamespace(seed=1, lower_is_better=True)
    space = types.SimpleNamespace(baseline=lambda: FlagSet((), ()))
    setup = types.SimpleNamespace(spec=spec, space=space, trees_for=lambda n: ("t0", "t1"))
    base = types.SimpleNamespace(runner=None, min_gain=0.01, base_of=lambda t: None, references={})
    budget = types.SimpleNamespace(bounded=False)
    store = _Store()
    bank = bank_module.Bank(
        setup, types.SimpleNamespace(build=None), store, lambda line: None, base, budget, lambda v, n: True
    )
    monkeypatch.setattr(bank_module, "loss", lambda trial, base, lower: -0.2)
    for i in range(3):
        trial = Trial(index=i, flagset=FlagSet((("a", i + 1),), (f"-a{i}",)), status=Status.OK)
        assert bank.validate(trial, {}) is None
    assert levels == [bank_alpha(0), bank_alpha(1), bank_alpha(2)]
    assert floors == [BANK_RHO_FLOOR] * 3  # one candidate's rounds tell little of the correlation: at least this
    assert bank.validations == 3 and store.results[bank_module.LOOKS] == 3
    resumed = bank_module.Bank(
        setup, types.SimpleNamespace(build=None), store, lambda line: None, base, budget, lambda v, n: True
    )
    assert resumed.validations == 3  # a resumed tune goes on spending from where the killed one was


def test_the_finalists_validation_runs_at_the_level_the_bank_left(tmp_path, monkeypatch):
    from compileiq_cmake.decide import decided
    from compileiq_cmake.decide.decided import Limits, ValidationContext
    from compileiq_cmake.decide.procedure import _decide
    from compileiq_cmake.flags.space import Dimension, FlagSpace
    from compileiq_cmake.model.events import recording

    from test_hardening_validation import _setup

    seen: list = []
    real = decided.validate

    def spy(*args, **kw):
        seen.append(kw.get("alpha"))
        return real(*args, **kw)

    monkeypatch.setattr(decided, "validate", spy)
    fake, trees = _setup(tmp_path, {"t0": 1.0, "t1": 0.9})
    space = FlagSpace("gcc", (Dimension("a", "", ((), ("-a",))),))
    context = ValidationContext(trees=trees, space=space, seed=1)
    events, _ = recording()

    def build(tree, flagset):
        from compileiq_cmake.model.records import BuildResult

        return BuildResult(ok=True, seconds=0.0)

    _decide(context, build, fake, [space.flagset({"a": 1})], 0.01, events, None, Limits(alpha=after_bank(2)))
    assert seen and seen[0] == after_bank(2)


def test_a_validation_with_a_correlation_floor_allows_for_at_least_it():
    """The bank's validations compare one candidate: the rounds' correlation read from 2 variants came out low
    where the truth was 0.5, and those were the validations that accepted. With the floor the tests allow for
    at least stats.BANK_RHO_FLOOR, whatever the rounds say."""
    import random

    from compileiq_cmake.decide.sequential import SequentialGainTest

    from test_hardening_validation import _setup

    fake, _ = _setup(__import__("pathlib").Path("/tmp"), {"t0": 1.0})
    rng = random.Random(3)
    samples = {
        label: {w: [10.0 * (1 + 0.01 * rng.gauss(0, 1)) for _ in range(12)] for w in fake.spec.workloads}
        for label in ("baseline", "c0")
    }
    plain = SequentialGainTest.planned(fake.spec, ("c0",), 0.01, 5, 12, 0.005)
    floored = SequentialGainTest.planned(fake.spec, ("c0",), 0.01, 5, 12, 0.005, rho_floor=BANK_RHO_FLOOR)
    plain.look(samples)
    floored.look(samples)
    assert plain.rho < BANK_RHO_FLOOR and floored.rho == BANK_RHO_FLOOR
    assert floored.tests["c0"].rho == BANK_RHO_FLOOR and plain.tests["c0"].rho == plain.rho


def test_a_bank_validates_in_trees_that_are_not_the_paired_runs_reference_trees(tmp_path):
    """On a noisy machine the search pairs each trial with runs of the project's own build in a reference tree
    (trees[workers:workers+GPUs]); a bank's validation builds its candidate into its trees, so it must take two
    others (once it took trees[1], the one reference of a --workers 1 tune: the next trials were paired with the
    candidate's runs and measured 2.5x where they were 8.9x). The tune makes a tree more for it."""
    from compileiq_cmake.project.cmake_project import VariantTree
    from compileiq_cmake.tune.bank import clear_of

    trees = tuple(VariantTree(tmp_path, f"worker-{i}", "cmake") for i in range(5))
    assert [t.path.name for t in clear_of(trees, [trees[1]], 2)] == ["worker-0", "worker-2"]
    assert [t.path.name for t in clear_of(trees, trees[1:4], 2)] == ["worker-0", "worker-4"]
    assert clear_of(trees, [], 2) == trees[:2]  # a quiet machine: no reference tree, the first two as before


def test_after_a_bank_every_trial_is_still_paired_with_runs_of_the_projects_own_build(tmp_path):
    """The same defect end to end: a replayed tune on a landscape whose runs spread 3% (so every trial is measured
    next to runs of the project's own build) banks --use_fast_math (about 1.25x) early; every trial after it
    must still be paired with the project's own build (about 1.0 ms here), never with the banked candidate's
    runs (about 0.8 ms), which made the later trials' speed-ups 1.25x too small."""
    import json
    import statistics

    from conftest import SAMPLE_LANDSCAPE, replay_args, run_cli

    doc = json.loads(SAMPLE_LANDSCAPE.read_text())
    doc["meta"]["noise"]["rel_sd"] = 0.03
    landscape = tmp_path / "noisy_small.json"
    landscape.write_text(json.dumps(doc))
    proc = run_cli(*replay_args(tmp_path, "--budget", "20", "--seed", "1", landscape=landscape))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "every trial is measured next to runs of the project's own build" in out
    assert "bank: accepted" in out, out  # the case: a bank validation in the middle of the search
    listing = run_cli("trials", "-B", str(tmp_path / "build"), "--json")
    trials = next(iter(json.loads(listing.stdout).values()))
    base = statistics.median(trials[0]["measurements"][0]["samples"])
    refs = [statistics.fmean(m["reference"]) for t in trials for m in t["measurements"] if m.get("reference")]
    assert len(refs) >= 5
    assert all(abs(r / base - 1) < 0.12 for r in refs), [round(r / base, 3) for r in refs]
