"""A win in hand is banked: when a search trial beats the project's own build (and the best result banked
so far) by a margin its noise makes obvious, it is validated next, before more search, and once accepted
its entry is written to the TOML at once (atomically). The box ending, a kill or Ctrl-C after that never
loses it; a later, better candidate replaces it only through its own validation (the finalists' stage,
tune.finalists). The banked validation is kept in the trial store: a resumed tune starts from it.

Measured cause (docs/benchmarks/time-box.md): on the H200 a one-file benchmark with 4.7 s runs measured
4.926x at its second trial in a 150 s box; the trials in flight then ate the finalists' time and nothing was
written."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..decide.decided import ValidationContext
from ..decide.stats import BANK_RHO_FLOOR, bank_alpha
from ..decide.validation import CUT, validate, verdict
from ..execute.executor import Executor
from ..model.events import Log, as_stream
from ..model.records import Trial, Validation
from ..project.cmake_project import VariantTree
from ..results.store import TrialStore
from .baseline import Baselines
from .budget import Budget
from .plan import least_finish
from .trial import build_too_slow, loss, trial_spread, typical_build
from .tune_setup import TuneSetup

BANK_GAIN = 0.05  # banked: at least this much faster than the baseline and than the banked result, past the noise
NOISE_MARGIN = 4.0  # ... by this many times the trial's (or the baseline's) relative spread, on the log scale
STORED = "banked"  # the trial store's name of the banked validation
LOOKS = "bank validations"  # the trial store's count of this tune's bank validations (each spends its share)

# the winner's entry written (tune.publish.BankWrite), with the trial count; False: not written (the file holds a
# better entry of the same identity, kept)
Write = Callable[[Validation, int], bool]


@dataclass
class Bank:
    """The banked winner of one tune (None until one is accepted)."""

    setup: TuneSetup
    executor: Executor
    store: TrialStore
    log: Log
    base: Baselines
    budget: Budget
    write: Write
    banked: Validation | None = None
    tried: set[str] = field(default_factory=set)  # flag sets validated here already (accepted or not)

    @property
    def validations(self) -> int:
        """The bank validations this tune (resumed ones included) has run: each spent a share of the error
        budget (stats.bank_alpha), which the finalists' validation no longer has (stats.after_bank)."""
        return int(self.store.load_result(LOOKS) or 0)

    @staticmethod
    def restored(store: TrialStore) -> Validation | None:
        kept = store.load_validations(STORED)
        return kept[0] if kept else None

    def due(self, trial: Trial, trials: dict[str, Trial]) -> bool:
        """Whether `trial` is an obvious win worth validating now: valid, measured on its own, faster than the
        baseline and than the banked result by BANK_GAIN beyond NOISE_MARGIN x its noise; one GPU measures
        (with several, a winner must be confirmed on each before it is written: the finalists do that); and
        one validation of it fits the box."""
        if (
            not trial.valid
            or trial.flagset.is_baseline
            or trial.same_code_as is not None
            or trial.flagset.key in self.tried
        ):
            return False
        if len(self.base.runners) > 1:
            return False
        if build_too_slow(trial, typical_build(trials), self.setup.spec.max_compile_slowdown):
            return False  # never written (the finalists say why)
        lower = self.setup.spec.lower_is_better
        gain = -loss(trial, self.base.base_of(trial), lower)  # log speedup
        spread = trial_spread(trial, self.base.noise)
        floor = math.log1p(max(BANK_GAIN, self.base.min_gain))
        bar = floor + (math.log(self.banked.geomean_speedup) if self.banked is not None else 0.0)
        if gain - NOISE_MARGIN * spread < bar:
            return False
        return self.budget.fits(
            least_finish(self.budget.costs([trial, self.base.baseline]), self.setup.spec.min_rounds)
        )

    def validate(self, trial: Trial, trials: dict[str, Trial]) -> Validation | None:
        """Validate `trial` against the baseline now (the search's conveyor is idle); accepted: banked, stored
        and written. Returns the banked validation (None: not accepted, or cut by the box)."""
        setup, spec = self.setup, self.setup.spec
        self.tried.add(trial.flagset.key)
        stream = as_stream(self.log)
        stream.info(
            f"bank: {trial.flagset.describe()} measured "
            f"{math.exp(-loss(trial, self.base.base_of(trial), spec.lower_is_better)):.3f}x "
            "in the search, far past its noise: validated now, before more search",
            stage="search",
        )
        limits = (
            self.budget.gates(trials, self.budget.finish(trials, 1, 0, 0, record=False), {})
            if self.budget.bounded
            else None
        )
        refs = list(self.base.references.values())  # (they hold the project's own build the search pairs with)
        context = ValidationContext(clear_of(setup.trees_for(2 + len(refs)), refs, 2), setup.space, spec.seed + 11)
        looks = self.validations
        self.store.save_result(LOOKS, looks + 1)  # spent before it runs: a kill meanwhile keeps the count
        (v,) = validate(
            self.base.runner,
            self.executor.build,
            context.trees,
            setup.space.baseline(),
            [trial.flagset],
            self.base.min_gain,
            context.seed,
            stream,
            min_rounds=limits.min_rounds if limits is not None else None,
            may_continue=limits.validation_continue if limits is not None else None,
            max_rounds=limits.max_rounds if limits is not None else None,
            alpha=bank_alpha(looks),
            rho_floor=BANK_RHO_FLOOR,
        )
        stream.info(
            f"bank: {verdict(v)} {v.flagset.describe()}: {v.geomean_speedup:.4f}x "
            f"[{v.geomean_ci_low:.4f}..{v.geomean_ci_high:.4f}]"
            + (f"; {v.reason.removeprefix(CUT)}" if v.reason else ""),
            stage="search",
            banked=v.accepted,
            speedup=v.geomean_speedup,
        )
        if not v.accepted or (self.banked is not None and v.geomean_speedup <= self.banked.geomean_speedup):
            return None
        self.budget.check()  # interrupted meanwhile: nothing is written after it
        if not self.write(v, len(trials)):
            return None  # a better entry of the same identity stays (said): nothing of this tune is banked
        self.banked = v
        self.store.save_validations(STORED, [v])
        return v


def clear_of(trees: Sequence[VariantTree], references: Iterable[VariantTree], n: int) -> tuple[VariantTree, ...]:
    """The first `n` of `trees` that are no reference tree: a validation builds its candidates into its trees, and
    a reference tree must keep the project's own build that the search's trials are paired with (a bank that
    built its candidate there once made the next trials' paired runs those of the candidate)."""
    held = list(references)
    return tuple(t for t in trees if all(t is not r for r in held))[:n]
