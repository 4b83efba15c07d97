"""The finalists' sequential gain test, pure: fed the rounds' values, it says when the comparison is decided
and what each candidate's verdict is. It holds the whole error control that carries the 1% claim
(docs/statistics.md): the looks fixed before the first round, each spending its share of the error budget,
Holm across the candidates, the smallest gain and effect that count, and the "slower somewhere" rule. The
stage (validation.validate) builds the trees and runs the rounds; the simulator and the property tests
drive this class with arrays.

Samples are `label -> workload -> values, round by round`; "baseline" is the reference every candidate is
compared with (paired: the i-th values of a round)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.records import FlagSet, Validation, WorkloadComparison
from ..model.spec import TuneSpec
from .correlation import rounds_posterior
from .ports import Workload
from .stats import (
    EFFECT_FLOOR,
    FALSE_ACCEPTANCE,
    TAIL_SAFETY,
    Comparison,
    GainTest,
    compare_paired,
    gain_test,
    geomean_comparison,
    holm,
    look_weights,
    looks,
)

Samples = dict[str, dict[Workload, list[float]]]


def comparisons(
    spec: TuneSpec,
    base: dict[Workload, list[float]],
    cand: dict[Workload, list[float]],
    rho: float = 0.0,
    rho_sd: float = 0.0,
) -> list[Comparison]:
    """Each workload's paired comparison of `cand` with `base` (the rounds' correlation `rho` +- `rho_sd`
    allowed for)."""
    return [compare_paired(base[w], cand[w], spec.lower_is_better, rho=rho, rho_sd=rho_sd) for w in spec.workloads]


def rounds_rho(spec: TuneSpec, samples: Samples) -> float:
    """The rounds' serial correlation over every variant measured (correlation.rounds_correlation)."""
    return rounds_posterior_of(spec, samples)[0]


def rounds_posterior_of(spec: TuneSpec, samples: Samples) -> tuple[float, float]:
    """(mean, sd) of the rounds' serial correlation over every variant measured (correlation.rounds_posterior)."""
    return rounds_posterior([[s[w] for w in spec.workloads] for s in samples.values()])


def workload_rows(
    spec: TuneSpec, base: dict[Workload, list[float]], cand: dict[Workload, list[float]], comps: list[Comparison]
) -> tuple[WorkloadComparison, ...]:
    """Each workload's values and comparison, as a Validation records them."""
    return tuple(
        WorkloadComparison(w, tuple(base[w]), tuple(cand[w]), c.speedup, c.ci.low, c.ci.high, c.p_value)
        for w, c in zip(spec.workloads, comps, strict=False)
    )


def _out_of_reach(comps: list[Comparison], ci_high: float, min_gain: float) -> bool:
    """Decided against: the interval cannot reach min_gain, or some workload is significantly slower."""
    return ci_high < 1.0 + min_gain or any(c.slower() for c in comps)


def hopeless(spec: TuneSpec, samples: Samples, label: str, min_gain: float, rho: float = 0.0) -> bool:
    """A candidate that can no longer reach min_gain or is significantly slower: decided, whatever the box."""
    comps = comparisons(spec, samples["baseline"], samples[label], rho)
    return _out_of_reach(comps, geomean_comparison(comps)[1].high, min_gain)


@dataclass
class SequentialGainTest:
    """The candidates `labels` against "baseline", looked at after the rounds of `schedule` only; the look
    after n rounds spends `look_weights` of the error budget `alpha`, so a candidate's adjusted p-value is the
    smallest p/weight over its looks, and Holm across the candidates keeps the chance that any candidate
    without a real gain is accepted at `alpha`. The rounds may end at a look where every candidate is decided:
    accepted at alpha/k (Bonferroni), or unable to reach min_gain, or slower somewhere."""

    spec: TuneSpec
    labels: tuple[str, ...]
    min_gain: float
    schedule: tuple[int, ...]
    alpha: float = FALSE_ACCEPTANCE * TAIL_SAFETY
    adjusted: dict[str, float] = field(default_factory=dict)  # label -> smallest p/weight so far
    tests: dict[str, GainTest] = field(default_factory=dict)  # label -> the last look's test
    rho: float = 0.0  # the last look's correlation estimate
    rho_sd: float = 0.0  # and its posterior sd (the written intervals allow for it)
    decided_at: int | None = None  # the look that decided every candidate (None: not decided)
    rounds: int = 0  # rounds seen by the last look or close
    rho_floor: float = 0.0  # the least correlation the tests allow for (the bank's validations: stats.BANK_RHO_FLOOR)

    @classmethod
    def planned(
        cls,
        spec: TuneSpec,
        labels: tuple[str, ...],
        min_gain: float,
        min_rounds: int,
        max_rounds: int,
        alpha: float,
        rho_floor: float = 0.0,
    ) -> SequentialGainTest:
        """The test with its looks fixed before the first round: `looks(min_rounds, max_rounds)`."""
        return cls(
            spec,
            labels,
            min_gain,
            looks(min_rounds, max_rounds),
            alpha,
            adjusted={label: 1.0 for label in labels},
            rho_floor=rho_floor,
        )

    @property
    def weights(self) -> dict[int, float]:
        return dict(zip(self.schedule, look_weights(self.schedule), strict=False))

    def _correlation(self, samples: Samples) -> None:
        mean, self.rho_sd = rounds_posterior_of(self.spec, samples)
        self.rho = max(self.rho_floor, mean)

    def _spend(self, samples: Samples, weight: float) -> None:
        self._correlation(samples)
        for label in self.adjusted:
            if label in samples:
                test = gain_test(
                    [samples["baseline"][w] for w in self.spec.workloads],
                    [samples[label][w] for w in self.spec.workloads],
                    self.spec.lower_is_better,
                    self.rho,
                )
                self.tests[label] = test
                self.adjusted[label] = min(self.adjusted[label], test.p_value / weight)

    def look(self, samples: Samples) -> bool:
        """A look after one of the schedule's rounds (the samples' rounds): spends its share and says whether
        every candidate still measured is decided. `samples` holds only the variants still in."""
        self.rounds = min(len(v) for v in samples["baseline"].values())
        self._spend(samples, self.weights[self.rounds])
        level = self.alpha / max(1, len(self.labels))
        for label in self.adjusted:
            if label not in samples:
                continue
            comps = comparisons(self.spec, samples["baseline"], samples[label], self.rho)
            geo, geo_ci = geomean_comparison(comps)
            accepted = self.adjusted[label] <= level and geo >= 1.0 + self.min_gain
            if not (accepted or _out_of_reach(comps, geo_ci.high, self.min_gain)):
                return False
        self.decided_at = self.rounds
        return True

    def close(self, samples: Samples, rounds: int) -> None:
        """The rounds ended after `rounds` (the time box, or --max-rounds): ended between looks, the next
        look's share is spent on them (one look more, never more than the schedule gave)."""
        self.rounds = rounds
        self._correlation(samples)
        if rounds not in self.schedule:
            unspent = [n for n in self.schedule if n > rounds]
            if unspent:
                self._spend(samples, self.weights[unspent[0]])

    def next_look(self, rounds: int) -> int:
        """The first look after `rounds` (the schedule's last when none is left)."""
        return next((n for n in self.schedule if n > rounds), self.schedule[-1])

    def verdicts(self, samples: Samples, flagsets: dict[str, FlagSet]) -> dict[str, Validation]:
        """Each candidate of `flagsets` measured in `samples`: accepted when Holm across the candidates rejects
        "not faster" at alpha (from the looks' adjusted p-values), the gain is at least min_gain and its effect
        at least EFFECT_FLOOR, and no workload is significantly slower; the reason otherwise."""
        significant = dict(
            zip(self.labels, holm([self.adjusted.get(label, 1.0) for label in self.labels], self.alpha), strict=False)
        )
        return {
            label: self._verdict(
                fs,
                samples["baseline"],
                samples[label],
                significant[label],
                self.adjusted.get(label, 1.0),
                self.tests.get(label, GainTest(1.0, 0.0, 0)),
            )
            for label, fs in flagsets.items()
            if label in samples
        }

    def _verdict(
        self,
        flagset: FlagSet,
        base: dict[Workload, list[float]],
        cand: dict[Workload, list[float]],
        significant: bool,
        p_adjusted: float,
        test: GainTest,
    ) -> Validation:
        spec, min_gain = self.spec, self.min_gain
        comps = comparisons(spec, base, cand, self.rho, self.rho_sd)
        geo, geo_ci = geomean_comparison(comps)
        rows = workload_rows(spec, base, cand, comps)
        slower = [" ".join(w) or "default" for w, c in zip(spec.workloads, comps, strict=False) if c.slower()]
        if slower:
            reason = f"significantly slower than the baseline on: {', '.join(slower)}"
        elif geo < 1.0 + min_gain:
            reason = f"gain {100 * (geo - 1):+.2f}% is below the minimum {100 * min_gain:.2f}%"
        elif not significant:
            reason = (
                f"gain {100 * (geo - 1):+.2f}% is not significant at the {100 * FALSE_ACCEPTANCE:g}% "
                f"false-acceptance rate (adjusted p={min(1.0, p_adjusted):.2g} for the looks and the finalists; "
                f"95% CI {geo_ci.low:.4f}..{geo_ci.high:.4f})"
            )
        elif test.effect < EFFECT_FLOOR:
            reason = f"effect size d={test.effect:.2f} is below {EFFECT_FLOOR:g} (the gain is small next to the noise)"
        else:
            reason = ""
        return Validation(
            flagset, rows, geo, geo_ci.low, geo_ci.high, not reason, reason, rho=self.rho, rho_sd=self.rho_sd
        )
