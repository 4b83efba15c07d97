"""Tune stage, the finalists: the flag effects over every valid trial, the finalists picked from the ranked
trials (one flag set per device code, the one with the fewest flags; none with the baseline's code), the
smallest gain that counts from the paired runs' noise when trials were paired, then decide.finalists
validates them against the baseline, ablates the best and confirms the winner on every other GPU."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

from ..decide.finalists import NO_LIMITS, Limits, ValidationContext, validate_and_ablate
from ..decide.validation import NOT_ABLATED, UNDECIDED
from ..flags.space import FlagSpace
from ..model.timebox import TimeBox
from ..decide.stats import FlagEffect, auto_min_gain, flag_effects
from ..execute.executor import Executor
from ..model.records import Contribution, FlagSet, Trial, Validation
from ..model.wording import plural
from ..project import build_flags
from ..results.store import TrialStore
from .baseline import Baselines
from .plan import WRITE_SECONDS, Costs, FinishPlan, plan_finish, tune_costs
from .setup import FINALISTS, TuneSetup
from .trial import loss, noise_of_pairs

Log = Callable[[str], None]


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


@dataclass(frozen=True)
class Finalists:
    """The finalists stage of one tune: `run()` picks, validates and ablates, and returns the Decision."""

    setup: TuneSetup
    executor: Executor
    store: TrialStore
    log: Log
    base: Baselines
    trials: dict[str, Trial]
    box: TimeBox | None = None  # the tune's time box (None or unbounded: no limit)

    def run(self) -> Decision:
        setup, store, log, base, trials = self.setup, self.store, self.log, self.base, self.trials
        spec = setup.spec
        lower = spec.metric.lower_is_better
        base_of = base.base_of
        effects = flag_effects([(t.flagset.flags, loss(t, base_of(t), lower)) for t in trials.values() if t.valid])
        store.save_result("flag_effects", [
            {"flag": e.flag, "speedup": e.speedup, "ci": [e.ci.low, e.ci.high], "trials_with": e.trials_with}
            for e in effects
        ])
        finalists = pick(trials, base, lower)
        min_gain = base.min_gain
        if base.references and spec.min_gain is None:
            paired_noise, n = noise_of_pairs(trials.values())
            if n:
                min_gain = auto_min_gain(paired_noise)
                log(f"compileiq: noise of paired runs (median over {plural(n, 'trial')}): {100 * paired_noise:.2f}%; "
                    f"smallest gain that counts: {100 * min_gain:.2f}%")
        runners = base.runners
        confirm = tuple(r for dev, r in runners.items() if dev != setup.gpus[0].device) if len(runners) > 1 else ()
        started = time.perf_counter()
        # the trees the candidates and the baseline are built in, configured before the plan counts the time left
        context = ValidationContext(setup.trees_for(len(finalists) + 1) if finalists else setup.trees[:2],
                                    setup.space, spec.seed)
        limits, untested = NO_LIMITS, ()
        box = self.box
        if box is not None and box.bounded and finalists:
            costs = tune_costs(trials.values(), spec, len(runners), paired=bool(base.references))
            steps = len(finalists[0].choices) + len(_files_of(finalists[0]))
            finish = plan_finish(box.remaining(), costs, len(finalists), spec.min_rounds, steps, len(confirm))
            untested = finish.cut
            log(f"compileiq: time box: {box.remaining():.0f} s of --time-limit {spec.time_limit:g} s left for the "
                f"finalists: {finish.describe()} (~{finish.seconds:.0f} s)"
                + (f"; left out: {'; '.join(finish.cut)}" if finish.cut else ""))
            if finish.finalists == 0:
                return Decision(tuple(effects), finalists, min_gain, None, (), 0.0, untested)
            finalists = finalists[:finish.finalists]
            confirm = confirm[:finish.confirmations]
            limits = _limits(box, costs, finish, setup.space, finalists[0], effects)
        winner, contributions = validate_and_ablate(context, self.executor.build, base.runner, list(finalists),
                                                    min_gain, log, store, confirm, limits)
        untested += tuple(f"{' '.join(c.flags) or c.dimension}: {c.reason}" for c in contributions
                          if c.reason in (UNDECIDED, NOT_ABLATED))
        return Decision(tuple(effects), finalists, min_gain, winner, contributions, time.perf_counter() - started,
                        untested)


def _files_of(flagset: FlagSet) -> tuple[str, ...]:
    return tuple(path for path, _ in build_flags.split(flagset.flags).sources)


def _limits(box: TimeBox, costs: Costs, finish: FinishPlan, space: FlagSpace, best: FlagSet,
            effects) -> Limits:
    """The questions the finalists' stage asks the box before more work, each keeping the time of what must
    still follow: validation keeps the ablation's, the minimal set's and the write's; an ablation step the
    minimal set's and the write's; the minimal set and the confirmations the write's."""
    one = costs.validation(1, finish.rounds)
    after_validation = finish.seconds - costs.validation(finish.finalists, finish.rounds)
    # an ablation step, planned or in time the validation left over, keeps the minimal set's validation (a
    # removal nobody validates is lost: on the H200 an unplanned step left the minimal set one round, 0..inf)
    tail = one + finish.confirmations * one + WRITE_SECONDS
    return Limits(
        min_rounds=finish.rounds,
        validation_continue=lambda seconds: box.fits(seconds, after_validation),
        ablation_start=lambda: box.fits(one, tail),
        ablation_continue=lambda seconds: box.fits(seconds, tail),
        final_continue=lambda seconds: box.fits(seconds, WRITE_SECONDS),
        expected=_expected(space, best, effects),
        ablation_steps=finish.ablation_steps)


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


def pick(trials: dict[str, Trial], base: Baselines, lower_is_better: bool) -> tuple[FlagSet, ...]:
    """The finalists: the best trials that beat their baseline, one flag set per device code (the one with the
    fewest flags), none with the baseline's code, at most FINALISTS."""
    def loss_of(t: Trial) -> float:
        return loss(t, base.base_of(t), lower_is_better)

    ranked = sorted((t for t in trials.values() if t.valid and not t.flagset.is_baseline),
                    key=lambda t: (loss_of(t), len(t.flagset.flags)))
    finalists: list[FlagSet] = []
    codes = {base.baseline.fingerprint} - {""}
    for t in ranked:
        if loss_of(t) >= 0 or len(finalists) == FINALISTS:
            break
        if t.fingerprint and t.fingerprint in codes:
            continue
        codes.add(t.fingerprint)
        finalists.append(t.flagset)
    return tuple(finalists)
