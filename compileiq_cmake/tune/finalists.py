"""Tune stage, the finalists: the flag effects over every valid trial, the finalists picked from the ranked
trials (one flag set per device code, the one with the fewest flags; none with the baseline's code), the
smallest gain that counts from the paired runs' noise when trials were paired, then decide.finalists
validates them against the baseline, ablates the best and confirms the winner on every other GPU."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from ..decide.finalists import ValidationContext, validate_and_ablate
from ..decide.stats import FlagEffect, auto_min_gain, flag_effects
from ..execute.executor import Executor
from ..model.records import Contribution, FlagSet, Trial, Validation
from ..model.wording import plural
from ..results.store import TrialStore
from .baseline import Baselines
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


@dataclass(frozen=True)
class Finalists:
    """The finalists stage of one tune: `run()` picks, validates and ablates, and returns the Decision."""

    setup: TuneSetup
    executor: Executor
    store: TrialStore
    log: Log
    base: Baselines
    trials: dict[str, Trial]

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
        context = ValidationContext(setup.trees, setup.space, spec.seed)
        winner, contributions = validate_and_ablate(context, self.executor.build, base.runner, list(finalists),
                                                    min_gain, log, store, confirm)
        return Decision(tuple(effects), finalists, min_gain, winner, contributions, time.perf_counter() - started)


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
