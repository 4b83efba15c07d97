"""Tune stage, the finalists: the flag effects over every valid trial, the finalists picked from the ranked
trials (one flag set per device code, the one with the fewest flags; none with the baseline's code), the
smallest gain that counts from the paired runs' noise when trials were paired, then decide.procedure
validates them against the baseline, ablates the best and confirms the winner on every other GPU."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from ..decide.decided import NO_LIMITS, Limits, ValidationContext
from ..decide.procedure import validate_and_ablate
from ..decide.stats import FlagEffect, after_bank, auto_min_gain, flag_effects
from ..decide.validation import CUT, NOT_ABLATED, UNDECIDED
from ..execute.executor import Executor
from ..flags.space import FlagSpace
from ..model import build_flags
from ..model.events import Log, as_stream
from ..model.records import Contribution, FlagSet, Trial, Validation
from ..model.wording import plural
from ..results.store import TrialStore
from .baseline import Baselines
from .budget import Budget
from .trial import build_too_slow, compile_slowdown, loss, noise_of_pairs, typical_build
from .tune_setup import FINALISTS, TuneSetup


@dataclass(frozen=True)
class Decision:
    """The finalists stage's outcome: the flag effects, the finalists, the smallest gain that counted, the
    winner (None: no flag set beat the baseline significantly) with its flags' contributions, and the
    seconds the validation, ablation and confirmation took."""

    effects: tuple[FlagEffect, ...]
    finalists: tuple[FlagSet, ...]
    min_gain: float
    winner: Validation | None
    contributions: tuple[Contribution, ...]
    seconds: float
    untested: tuple[str, ...] = ()  # what the time box left out (finalists, rounds, ablation steps, ...)
    banked: Validation | None = None  # a winner this tune banked (and wrote) during the search


@dataclass(frozen=True)
class Finalists:
    """The finalists stage of one tune: `run()` picks, validates and ablates, and returns the Decision."""

    setup: TuneSetup
    executor: Executor
    store: TrialStore
    log: Log
    base: Baselines
    trials: dict[str, Trial]
    budget: Budget
    banked: Validation | None = None  # the winner banked during the search (tune.bank), already written
    bank_validations: int = 0  # the bank's validations in this tune: their share of the error budget is spent

    def run(self) -> Decision:
        setup, store, log, base, trials = self.setup, self.store, self.log, self.base, self.trials
        spec = setup.spec
        lower = spec.lower_is_better
        base_of = base.base_of
        effects = flag_effects([(t.flagset.flags, loss(t, base_of(t), lower)) for t in trials.values() if t.valid])
        store.save_result(
            "flag_effects",
            [
                {"flag": e.flag, "speedup": e.speedup, "ci": [e.ci.low, e.ci.high], "trials_with": e.trials_with}
                for e in effects
            ],
        )
        finalists, slow = pick(trials, base, lower, spec.max_compile_slowdown)
        for t, ratio in slow:
            as_stream(log).note(
                f"{t.flagset.describe()} kept out of the finalists: its build took {ratio:.1f}x a "
                f"typical build of this tune ({t.build_seconds:.1f} s; --max-compile-slowdown "
                f"{spec.max_compile_slowdown:g})",
                flags=list(t.flagset.flags),
                slowdown=ratio,
            )
        min_gain = base.min_gain
        if base.references and spec.min_gain is None:
            paired_noise, n = noise_of_pairs(trials.values())
            if n:
                min_gain = auto_min_gain(paired_noise)
                as_stream(log).info(
                    f"noise of paired runs (median over {plural(n, 'trial')}): {100 * paired_noise:.2f}%; "
                    f"smallest gain that counts: {100 * min_gain:.2f}%"
                )
        runners = base.runners
        confirm = (
            tuple(r for dev, r in runners.items() if dev != setup.devices.gpus[0].device) if len(runners) > 1 else ()
        )
        started = time.perf_counter()
        # the trees the candidates and the baseline are built in, configured before the plan counts the time left
        context = ValidationContext(
            setup.trees_for(len(finalists) + 1) if finalists else setup.trees[:2], setup.space, spec.seed
        )
        budget = self.budget
        limits = self._share(NO_LIMITS)
        if budget.bounded and finalists:
            steps = len(finalists[0].choices) + len(_files_of(finalists[0]))
            finish = budget.finish(trials, len(finalists), steps, len(confirm))
            as_stream(log).info(
                f"time box: {budget.remaining():.0f} s of --time-limit {spec.time_limit:g} s left for the "
                f"finalists: {finish.describe()} (~{finish.seconds:.0f} s)"
                + (f"; left out: {'; '.join(finish.cut)}" if finish.cut else "")
            )
            if finish.finalists == 0:
                return self._banked(Decision(tuple(effects), finalists, min_gain, None, (), 0.0, budget.untested))
            finalists = finalists[: finish.finalists]
            confirm = confirm[: finish.confirmations]
            limits = self._share(budget.gates(trials, finish, _expected(setup.space, finalists[0], effects)))
        winner, contributions = validate_and_ablate(
            context, self.executor.build, base.runner, list(finalists), min_gain, log, store, confirm, limits
        )
        budget.cut(
            *(
                f"{' '.join(c.flags) or c.dimension}: {c.reason}"
                for c in contributions
                if c.reason in (UNDECIDED, NOT_ABLATED)
            )
        )
        for v in store.load_validations("finalists") or []:
            if v.reason.startswith(CUT):
                budget.cut(f"validation of {v.flagset.describe()}: {v.reason}")
        return self._banked(
            Decision(
                tuple(effects),
                finalists,
                min_gain,
                winner,
                contributions,
                time.perf_counter() - started,
                budget.untested,
            )
        )

    def _share(self, limits: Limits) -> Limits:
        """The limits with the error budget the bank's validations left (stats.after_bank)."""
        return replace(limits, alpha=after_bank(self.bank_validations)) if self.bank_validations else limits

    def _banked(self, decision: Decision) -> Decision:
        """The decision with the banked winner (validated during the search, already written) kept where the
        finalists' stage found none, or none that is not significantly worse than it: a later candidate
        replaces the banked one only through its own validation."""
        banked = self.banked
        if banked is None:
            return decision
        decision = replace(decision, banked=banked)
        winner = decision.winner
        if winner is not None and winner.geomean_ci_high >= banked.geomean_ci_low:
            return decision
        why = (
            "no finalist was accepted"
            if winner is None
            else f"the finalists' winner ({winner.geomean_speedup:.4f}x) is significantly slower than it"
        )
        as_stream(self.log).info(
            f"the winner banked during the search stays: {banked.flagset.describe()} "
            f"{banked.geomean_speedup:.4f}x [{banked.geomean_ci_low:.4f}..{banked.geomean_ci_high:.4f}] ({why})"
        )
        self.budget.cut(f"{banked.flagset.describe()}: banked during the search, not ablated")
        return replace(decision, winner=banked, contributions=(), untested=self.budget.untested)


def _files_of(flagset: FlagSet) -> tuple[str, ...]:
    return tuple(path for path, _ in build_flags.split(flagset.flags).sources)


def _expected(space: FlagSpace, best: FlagSet, effects) -> dict[str, float]:
    """Per dimension of `best`, the search's estimate of the speedup of keeping its value: the product of its
    flags' effects (flag_effects); a dimension with an unestimated flag is left out (tried alone, last)."""
    by_flag = {e.flag: e.speedup for e in effects}
    out = {}
    for dim, value in best.choices:
        flags = space.flagset({dim: value}).flags
        if flags and all(f in by_flag for f in flags):
            out[dim] = math.prod(by_flag[f] for f in flags)
    return out


def pick(
    trials: dict[str, Trial], base: Baselines, lower_is_better: bool, max_slowdown: float | None = None
) -> tuple[tuple[FlagSet, ...], tuple[tuple[Trial, float], ...]]:
    """The finalists: the best trials that beat their baseline, one flag set per device code (the one with the
    fewest flags), none with the baseline's code and none whose runs racing stopped (its few runs showed it out
    of reach of the best), at most FINALISTS; and the better ones kept out because their build took more than
    `max_slowdown` x a typical build of the tune (trial.typical_build)."""

    def loss_of(t: Trial) -> float:
        return loss(t, base.base_of(t), lower_is_better)

    ranked = sorted(
        (t for t in trials.values() if t.valid and not t.raced and not t.flagset.is_baseline),
        key=lambda t: (loss_of(t), len(t.flagset.flags)),
    )
    finalists: list[FlagSet] = []
    slow: list[tuple[Trial, float]] = []
    typical = typical_build(trials)
    codes = {base.baseline.fingerprint} - {""}
    for t in ranked:
        if loss_of(t) >= 0 or len(finalists) == FINALISTS:
            break
        if t.fingerprint and t.fingerprint in codes:
            continue
        if build_too_slow(t, typical, max_slowdown):
            slow.append((t, compile_slowdown(t, typical)))
            continue
        codes.add(t.fingerprint)
        finalists.append(t.flagset)
    return tuple(finalists), tuple(slow)
