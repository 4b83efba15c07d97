"""The decisions of the finalists' stage as the trial store keeps them (decide/procedure.py runs the stage,
decide/confirmation.py its last step): what deciding needs of the tune (`ValidationContext`), the time box as
the stage sees it (`Limits`), the store's name of each decision, and a validation restored from the store or
measured and kept as soon as it is decided (so that a rerun after a kill does not measure it again)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from ..flags.space import FlagSpace
from ..model.events import EventStream
from ..model.records import FlagSet, Validation
from .ports import Build, DecisionStore, Measures, Tree
from .validation import undecided, validate


@dataclass(frozen=True)
class ValidationContext:
    """What deciding the finalists needs of the tune: the variant trees the candidates are built in, the
    searched space (its baseline, the ablation's dimensions) and the tune's seed."""

    trees: tuple[Tree, ...]
    space: FlagSpace
    seed: int


@dataclass(frozen=True)
class Limits:
    """The time box as the finalists' stage sees it (all None: no limit): the interleaved rounds at least
    (fewer than the spec's when the plan says so), and the questions asked before more work starts: another
    validation round (its seconds so far), another ablation step, another ablation round, another round of the
    minimal set's validation, another round of the winner's confirmation, another round of its validation on
    another GPU (beside the confirmation). `expected`: per dimension, the search's estimate of the speedup of
    keeping it (the ablation's order and first group)."""

    min_rounds: int | None = None
    validation_continue: Callable[[float], bool] | None = None
    ablation_start: Callable[[], bool] | None = None
    ablation_continue: Callable[[float], bool] | None = None
    final_continue: Callable[[float], bool] | None = None
    confirm_continue: Callable[[float], bool] | None = None  # the winner's confirmation (its numbers are written)
    expected: dict[str, float] | None = None
    ablation_steps: int | None = None  # the steps the plan has time for (None: as many as the winner needs)
    # the validation rounds the box can hold (None: the spec's --max-rounds): its looks are placed within them,
    # so a short box spends its error budget where its rounds are, not on looks it never reaches
    max_rounds: int | None = None
    # the finalists' validation's share of the error budget (None: all of it; less after the bank's validations,
    # stats.after_bank)
    alpha: float | None = None
    # the winner's validation on the other GPUs, beside its confirmation (only the write follows them)
    elsewhere_continue: Callable[[float], bool] | None = None
    # the rounds such a validation can hold when it starts (None: the spec's --max-rounds): its looks are placed
    # within them, as the finalists' are within max_rounds
    elsewhere_rounds: Callable[[], int | None] | None = None


NO_LIMITS = Limits()


def result_name(kind: str, *parts: object) -> str:
    """The store's name of a validation or ablation result: what was decided, on what, with which threshold."""
    return kind + ":" + hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def validation_name(
    candidates: list[FlagSet], min_gain: float, seed: int, gpu: str = "", alpha: float | None = None
) -> str:
    extra = (*((gpu,) if gpu else ()), *((f"alpha={alpha:.3g}",) if alpha is not None else ()))
    return result_name("validation", [c.key for c in candidates], min_gain, seed, *extra)


def validated(
    context: ValidationContext,
    build: Build,
    runner: Measures,
    candidates: list[FlagSet],
    min_gain: float,
    seed: int,
    log: EventStream,
    store: DecisionStore | None,
    gpu: str = "",
    min_rounds: int | None = None,
    may_continue: Callable[[float], bool] | None = None,
    max_rounds: int | None = None,
    alpha: float | None = None,
) -> list[Validation]:
    """The candidates validated against the baseline on `runner` (decide.validation.validate), or restored from
    the store where a run before a kill decided them; kept in the store once decided. `gpu`: the device of a
    validation on another GPU than the first (in its store name and its lines)."""
    name = validation_name(candidates, min_gain, seed, gpu, alpha)
    kept = store.load_validations(name) if store is not None else None
    if kept is not None:
        log.info(
            f"validation of {', '.join(c.describe() for c in candidates)}: restored from the trial store",
            stage="finalists",
            restored=True,
        )
        return kept
    results = validate(
        runner,
        build,
        context.trees,
        context.space.baseline(),
        candidates,
        min_gain,
        seed,
        log,
        min_rounds=min_rounds,
        may_continue=may_continue,
        max_rounds=max_rounds,
        where=f" on {runner.gpu.describe()}" if gpu and runner.gpu is not None else "",
        **({"alpha": alpha} if alpha is not None else {}),
    )
    if store is not None and not undecided(results):  # a verdict the box cut is no decision: a rerun makes it
        store.save_validations(name, results)
    return results
