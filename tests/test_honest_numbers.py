"""Issue 36: numbers a user can bet on. Rounds whose noise carries over are allowed for (the paired t-test
alone accepted 8.9% of A/A tunes at a per-build lag-1 correlation of 0.5); each variant's first run after its
re-build is a warm-up; the written speed-up comes from a confirmation that decided nothing; flags the time box
left untested are said in the headline of the console, the report and `show`; never "nan" where a person reads."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from compileiq_cmake.decide.correlation import (
    RHO_PRIOR,
    RHO_PRIOR_SD,
    correlated_rounds,
    rounds_correlation,
    rounds_posterior,
)
from compileiq_cmake.decide.decided import Limits, ValidationContext
from compileiq_cmake.decide.procedure import _decide
from compileiq_cmake.decide.rounds import interleave
from compileiq_cmake.decide.stats import compare_paired, gain_test
from compileiq_cmake.decide.validation import NOT_ABLATED, untested_flags
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.measure.runner import RunResult
from compileiq_cmake.model.events import recording
from compileiq_cmake.model.records import BuildResult, Contribution, FlagSet, Status
from compileiq_cmake.model.wording import untested_line

from test_hardening_validation import FakeRunner, _setup


def _ar1(rng: np.random.Generator, rho: float, n: int) -> np.ndarray:
    x = np.empty(n)
    x[0] = rng.normal()
    for t in range(1, n):
        x[t] = rho * x[t - 1] + math.sqrt(1 - rho * rho) * rng.normal()
    return x


def _variants(rng: np.random.Generator, rho: float, n: int, variants: int = 4, workloads: int = 2, sigma: float = 0.01):
    return [[list(10.0 * (1 + sigma * _ar1(rng, rho, n))) for _ in range(workloads)] for _ in range(variants)]


@pytest.mark.unit
def test_the_rounds_correlation_is_found_where_a_builds_noise_carries_over_and_not_where_it_does_not():
    rng = np.random.default_rng(7)
    carried = [rounds_correlation(_variants(rng, 0.5, 12)) for _ in range(200)]
    fresh = [rounds_correlation(_variants(rng, 0.0, 12)) for _ in range(200)]
    long_carried = [rounds_correlation(_variants(rng, 0.5, 30, variants=6, workloads=3)) for _ in range(100)]
    assert 0.3 < float(np.median(carried)) < 0.7, np.median(carried)
    assert float(np.median(fresh)) < 0.12 and min(fresh) == 0.0  # never negative: no narrower than independent
    assert 0.4 < float(np.median(long_carried)) < 0.6  # much data: the data's own estimate, not the prior
    # what hits every variant alike (drift, a machine-wide slow phase) cancels in the paired ratios: no correlation
    drift = [
        [[v * (1 + 0.003 * t) for t, v in enumerate(series)] for series in variant]
        for variant in _variants(rng, 0.0, 12)
    ]
    assert rounds_correlation(drift) == pytest.approx(
        rounds_correlation([[[v / (1 + 0.003 * t) for t, v in enumerate(s)] for s in var] for var in drift])
    )
    assert rounds_correlation(_variants(rng, 0.9, 3)) == RHO_PRIOR  # too few rounds to tell: the prior


@pytest.mark.unit
def test_a_few_rounds_of_one_comparison_move_the_correlation_little_from_its_prior():
    """CI: a 20x gain measured over 6 rounds at 30% noise (one finalist, one workload) was withheld because
    the correlation was read as 0.6 from 6 values (its estimate is noise of +-0.9 there). Now those rounds
    move it little from the prior, and the gain test finds the gain at the level the validation needs."""
    rng = np.random.default_rng(11)
    rhos, p_values = [], []
    for _ in range(300):
        base = [list(175.0 * (1 + 0.3 * rng.standard_normal(6)).clip(0.05))]
        cand = [list(8.7 * (1 + 0.3 * rng.standard_normal(6)).clip(0.05))]
        rho = rounds_correlation([base, cand])
        rhos.append(rho)
        p_values.append(gain_test(base, cand, rho=rho).p_value)
    assert max(rhos) < RHO_PRIOR + 0.1 and min(rhos) > RHO_PRIOR - 0.1, (min(rhos), max(rhos))
    assert (
        float(np.mean([p < 0.003 for p in p_values])) > 0.94
    )  # the level of a 6-round box's last look: 0.005 * 36 / 61


@pytest.mark.unit
def test_correlated_rounds_widen_the_variance_and_cut_the_degrees_of_freedom():
    assert correlated_rounds(0.0, 10) == (1.0, 9.0)
    factor, dof = correlated_rounds(0.5, 10)
    assert factor > 3.0 and dof < 9.0  # (1 + rho) / (1 - rho) = 3 for long series, more for short ones
    assert correlated_rounds(0.95, 10) == correlated_rounds(0.8, 10)  # capped


@pytest.mark.unit
def test_the_written_interval_allows_for_how_little_a_few_rounds_tell_of_the_correlation():
    """Issue 51: one finalist's 6 rounds cannot tell a correlation of 0.5 from the prior's 0.2, and the interval
    at 0.2 covered a true gain in 90-92% of written tunes at 0.5 (docs/benchmarks/statistics.md). The interval
    is now the posterior mean half-width: wider than at the mean correlation while the sd is large, the same
    once many rounds tell it."""
    rng = np.random.default_rng(5)
    base = list(100.0 * (1 + 0.01 * rng.standard_normal(6)))
    cand = list(95.0 * (1 + 0.01 * rng.standard_normal(6)))
    mean, sd = rounds_posterior([[base], [cand]])
    assert (mean, sd) == (RHO_PRIOR, RHO_PRIOR_SD) or sd > 0.15  # 6 rounds of two variants: near the prior
    at_mean, averaged = compare_paired(base, cand, rho=mean), compare_paired(base, cand, rho=mean, rho_sd=sd)
    assert averaged.speedup == at_mean.speedup
    assert averaged.ci.low < at_mean.ci.low and averaged.ci.high > at_mean.ci.high
    assert compare_paired(base, cand, rho=mean, rho_sd=0.0).ci == at_mean.ci
    many = [[list(100.0 * (1 + 0.01 * rng.standard_normal(40)))] for _ in range(6)]
    assert rounds_posterior(many)[1] < 0.1  # 40 rounds of six variants: the data's own estimate
    assert compare_paired(many[0][0], many[1][0], rho=0.2, rho_sd=1e-6).ci.low == pytest.approx(
        compare_paired(many[0][0], many[1][0], rho=0.2).ci.low, rel=1e-6
    )


@pytest.mark.unit
def test_the_gain_test_keeps_near_its_level_when_a_builds_noise_carries_over():
    """A/A, per-build AR(1) at rho 0.5, one comparison of 30 rounds: the paired t-test alone rejects three
    times as often as its level; with the correlation allowed for it stays near it (the whole procedure's 1%,
    with its looks and its share of the level, is the simulator's: tests/test_statistics_sim.py)."""
    rng = np.random.default_rng(3)
    plain = guarded = 0
    trials = 600
    for _ in range(trials):
        base, cand = _variants(rng, 0.5, 30, variants=2)
        rho = rounds_correlation([base, cand])
        plain += gain_test(base, cand).p_value < 0.05
        guarded += gain_test(base, cand, rho=rho).p_value < 0.05
    assert plain / trials > 0.12, plain  # the audit's failure, reproduced
    assert guarded / trials < 0.08 and guarded < plain / 2, (guarded, plain)


@dataclass
class ByFlags(FakeRunner):
    """Each tree's time from the flags it holds (flag -> factor); `cold`: the first run after a build is this
    much slower (a JIT, a cold cache)."""

    effect: dict[str, float] = field(default_factory=dict)
    built: dict[str, FlagSet] = field(default_factory=dict)
    fresh: set = field(default_factory=set)
    cold: float = 1.0

    def build(self, tree, flagset) -> BuildResult:
        self.built[tree.path.name] = flagset
        self.fresh.add(tree.path.name)
        return BuildResult(ok=True, seconds=0.0)

    def run(self, tree, workload) -> RunResult:
        t = 10.0 * math.prod(self.effect.get(f, 1.0) for f in self.built[tree.path.name].flags)
        if tree.path.name in self.fresh:
            self.fresh.discard(tree.path.name)
            t *= self.cold
        return RunResult(Status.OK, "", t * (1 + self.rng.gauss(0, 0.002)), 0.0)


def _tune(tmp_path, effect: dict[str, float], limits: Limits | None = None, cold: float = 1.0):
    fake, trees = _setup(tmp_path, {f"t{i}": 1.0 for i in range(4)})
    runner = ByFlags(fake.spec, fake.times, effect=effect, cold=cold)
    space = FlagSpace("gcc", tuple(Dimension(n, "", ((), (f"-{n}",))) for n in "abc"))
    context = ValidationContext(trees=trees, space=space, seed=fake.spec.seed)
    events, recorder = recording()
    winner, contributions = _decide(
        context, runner.build, runner, [space.flagset({"a": 1, "b": 1, "c": 1})], 0.01, events, None, limits or Limits()
    )
    return winner, contributions, recorder


@pytest.mark.unit
def test_the_written_numbers_come_from_a_confirmation_that_decided_nothing(tmp_path):
    winner, _, recorder = _tune(tmp_path, {"-a": 0.8})
    assert winner is not None and winner.flagset.flags == ("-a",) and winner.estimate == "confirmation"
    said = [e for e in recorder if e.text.startswith("confirmation of")]
    assert len(said) == 1 and "used for nothing else" in said[0].text
    assert said[0].data["speedup"] == winner.geomean_speedup and winner.geomean_ci_low <= 1.25 <= winner.geomean_ci_high
    assert {len(w.baseline) for w in winner.workloads} == {3}  # exactly the plan's rounds: no look stopped them


@pytest.mark.unit
def test_no_time_for_a_confirmation_keeps_the_deciding_rounds_and_says_so(tmp_path):
    winner, _, recorder = _tune(tmp_path, {"-a": 0.8}, Limits(confirm_continue=lambda seconds: False))
    assert winner is not None and winner.estimate == ""
    assert any("no time left; the numbers written are the deciding rounds'" in e.text for e in recorder)


@pytest.mark.unit
def test_validation_runs_a_warm_up_round_whose_values_are_discarded(tmp_path):
    """Every re-built variant's first run is 30% slow: without the warm-up the baseline's cold first run made the
    comparison noisier; with it no cold run is among the values."""
    fake, trees = _setup(tmp_path, {"t0": 1.0, "t1": 1.0})
    runner = ByFlags(fake.spec, fake.times, cold=1.3)
    runner.build(trees[0], FlagSet((), ()))
    runner.build(trees[1], FlagSet((), ()))
    inter = interleave(runner, {"a": trees[0], "b": trees[1]}, 3, 3, 0, lambda s: False)
    values = [v for s in inter.samples.values() for w in s.values() for v in w]
    assert inter.rounds == 3 and max(values) < 10.0 * 1.05, values


@pytest.mark.unit
def test_flags_the_box_left_unablated_are_said_in_the_headline(tmp_path):
    winner, contributions, _ = _tune(tmp_path, {"-a": 0.8}, Limits(ablation_start=lambda: False))
    assert winner is not None and winner.flagset.flags == ("-a", "-b", "-c")
    assert all(c.reason == NOT_ABLATED for c in contributions)
    assert untested_flags(winner.flagset, contributions) == ("-a", "-b", "-c")
    assert untested_flags(FlagSet((("a", 1),), ("-a",)), ()) == ()  # one flag: its own validation tested it
    assert untested_flags(FlagSet((("a", 1), ("b", 1)), ("-a", "-b")), ()) == ("-a", "-b")  # banked, never ablated
    decided = (
        Contribution("a", ("-a",), 1.2, 1.1, 1.3, True, "removing it is significantly slower"),
        Contribution("b", ("-b",), math.nan, math.nan, math.nan, True, NOT_ABLATED),
    )
    assert untested_flags(FlagSet((("a", 1), ("b", 1)), ("-a", "-b")), decided) == ("-b",)
    line = untested_line(("-b", "-c"), {"-c": (0.705, 0.69, 0.72)})
    assert line.startswith("kept untested: -b -c") and "-c at 0.705x [0.690..0.720]" in line and "nan" not in line


@pytest.mark.unit
def test_show_says_the_untested_flags_and_where_the_numbers_come_from(tmp_path, capsys):
    from compileiq_cmake.results.toml_io import write_entry
    from compileiq_cmake.ui.inspect import show_command as _show

    from test_result_file import make_entry  # noqa: PLC0415

    toml = tmp_path / "compileiq.toml"
    flags = ("--use_fast_math", "-Xptxas=-O1", "--restrict")
    write_entry(toml, make_entry(flags=flags, untested_flags=flags[1:], speedup_from="deciding rounds"))
    _show(toml)
    out = capsys.readouterr().out
    assert (
        "kept untested: -Xptxas=-O1 --restrict" in out
        and "(the rounds that accepted it: not confirmed)" in out
        and "nan" not in out
    )
    write_entry(toml, make_entry(speedup_from="confirmation"), replace=True)
    _show(toml)
    out = capsys.readouterr().out
    assert "(a confirmation's rounds)" in out and "kept untested" not in out


@pytest.mark.cmake
def test_the_report_and_the_console_say_the_untested_flags(tmp_path):
    """A replayed tune's summary with its ablation left out: the report's headline names the flags."""
    import json  # noqa: PLC0415
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from compileiq_cmake.results.report import render

    from conftest import replay_args  # noqa: PLC0415

    summary = tmp_path / "summary.json"
    tune = subprocess.run(
        [
            sys.executable,
            "-m",
            "compileiq_cmake",
            *replay_args(tmp_path, "--budget", "10", "--json-summary", str(summary), "--seed", "1"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COMPILEIQ_SIMULATE_GPUS": "1"},
    )
    assert tune.returncode == 0, tune.stdout[-3000:] + tune.stderr[-3000:]
    doc = json.loads(summary.read_text())
    assert doc["winner"]["numbers"] == "confirmation" and doc["winner"]["untested_line"] == ""
    flags = doc["winner"]["flags"]
    doc["winner"] |= {"numbers": "deciding rounds", "untested_flags": flags, "untested_line": untested_line(flags)}
    html = render(doc)
    assert re.search(r'id="untested-flags">kept untested: ' + re.escape(" ".join(flags)), html)
    text = re.sub(r'src="data:[^"]*"', "", html)  # the words a person reads, not the plots' bytes
    assert "not confirmed" in text and not re.search(r"\bnan\b", text, re.I)


@dataclass
class Noisy(ByFlags):
    """ByFlags with a larger run-to-run spread (`sigma`) in the confirmation's rounds than in the validation's
    (`quiet` runs first): the confirmation's few rounds then tell little on their own."""

    sigma: float = 0.03
    quiet: int = 0

    def run(self, tree, workload) -> RunResult:
        t = 10.0 * math.prod(self.effect.get(f, 1.0) for f in self.built[tree.path.name].flags)
        self.quiet -= 1
        spread = 0.002 if self.quiet > 0 else self.sigma
        return RunResult(Status.OK, "", t * (1 + self.rng.gauss(0, spread)), 0.0)


def _noisy_confirmation(tmp_path, seed: int, limits: Limits, store=None, sigma: float = 0.015):
    """One finalist 3% faster, validated over quiet rounds (0.2% noise), confirmed over loud ones (`sigma`)."""
    fake, trees = _setup(tmp_path / str(seed), {f"t{i}": 1.0 for i in range(4)})
    runner = Noisy(fake.spec, fake.times, effect={"-a": 0.97}, quiet=10**6, sigma=sigma)
    runner.rng.seed(seed)
    space = FlagSpace("gcc", (Dimension("a", "", ((), ("-a",))),))
    context = ValidationContext(trees=trees, space=space, seed=seed)
    events, recorder = recording()
    original = runner.run

    def switching(tree, workload, _orig=original, _rec=recorder, runner=runner):  # loud once validated
        if any(e.text.startswith("validation:") for e in _rec):
            runner.quiet = 0
        return _orig(tree, workload)

    runner.run = switching  # type: ignore[method-assign]
    winner, _ = _decide(context, runner.build, runner, [space.flagset({"a": 1})], 0.005, events, store, limits)
    return winner, recorder


@pytest.mark.unit
def test_a_written_interval_means_faster_a_short_confirmation_goes_on_with_fresh_rounds(tmp_path):
    """Issue 51: the confirmation's interval (3 rounds) held 1 for most written true winners. Pooling it with the
    rounds that accepted the winner wrote intervals that covered the truth in 70-91% of tunes where the rounds'
    noise carries over (those rounds stopped at a lucky look). Now a confirmation that cannot show the winner
    faster on its own goes on, once, to as many rounds as the validation measured (said in one line): the
    numbers written are its own rounds' only, and a winner is written only with an interval above 1."""
    went_on = written = 0
    for seed in range(12):
        winner, recorder = _noisy_confirmation(tmp_path, seed, Limits(ablation_start=lambda: False))
        validated = [e.data["rounds"] for e in recorder if e.text.startswith("validation:") and "rounds" in e.data]
        said = [e for e in recorder if "cannot show it faster on their own" in e.text]
        confirmed = [e for e in recorder if e.text.startswith("confirmation of")]
        assert len(said) <= 1 and len(confirmed) == 1
        assert confirmed[0].data["rounds"] == (validated[0] if said else 3)
        went_on += bool(said)
        if winner is None:
            assert "not written" in confirmed[0].text
            continue
        written += 1
        assert winner.estimate == "confirmation" and winner.geomean_ci_low > 1.0, (seed, winner)
        assert {len(w.baseline) for w in winner.workloads} == {confirmed[0].data["rounds"]}  # no deciding round
    assert went_on >= 3 and written >= 3, (went_on, written)


class _Store:
    def __init__(self) -> None:
        self.saved: dict[str, object] = {}

    def load_validations(self, name):
        return self.saved.get(name)

    def save_validations(self, name, values) -> None:
        self.saved[name] = values

    def load_ablation(self, name):
        return None

    def load_ablation_steps(self, name):
        return {}

    def save_ablation_step(self, name, step, c) -> None:
        pass

    def save_ablation(self, name, minimal, contributions) -> None:
        pass


@pytest.mark.unit
def test_a_confirmation_the_box_ends_before_it_shows_the_winner_faster_is_undecided_not_a_rejection(tmp_path):
    """The box has room for the plan's rounds but not for more: a winner whose rounds hold 1 is not written,
    and the confirmation is not stored (a rerun with more time confirms it again)."""
    for seed in range(12):
        asked = []

        def room(seconds: float, asked=asked) -> bool:  # the plan's 3 rounds (asked before rounds 2 and 3), no more
            asked.append(seconds)
            return len(asked) <= 3

        store = _Store()
        winner, recorder = _noisy_confirmation(
            tmp_path, seed, Limits(ablation_start=lambda: False, confirm_continue=room), store
        )
        if not any("cannot show it faster on their own" in e.text for e in recorder):
            continue
        assert winner is None
        (confirmed,) = [e for e in recorder if e.text.startswith("confirmation of")]
        assert confirmed.data["rounds"] == 3 and "not written" in confirmed.text
        assert not any(name.startswith("confirmation:") for name in store.saved), store.saved.keys()
        return
    pytest.fail("no seed needed more confirmation rounds")
