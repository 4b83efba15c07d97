"""The decision procedure over the finalists (the tune's finalists stage, tune/finalists.py, picks them and
sizes the stage): validation against the baseline, ablation of the best, validation of the minimal set and
the winner's confirmation (fresh rounds whose numbers are written), on one GPU; with several GPUs the winner is
then confirmed on each other one, all at the same time. Every outcome is kept in the trial store as soon as it
is decided."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..flags.space import FlagSpace
from ..model.events import EventStream, Lines, as_stream
from ..model.records import BuildResult, Contribution, FlagSet, Validation
from .ablation import ablate
from .ports import Build, DecisionStore, Measures, Tree
from .validation import CUT, NOT_ABLATED, ROUNDS_FLOOR, UNDECIDED, confirm, undecided, validate, verdict

Log = EventStream | Lines


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
    minimal set's validation or a confirmation on another GPU, another round of the winner's confirmation.
    `expected`: per dimension, the search's estimate of the speedup
    of keeping it (the ablation's order and first group)."""

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


NO_LIMITS = Limits()


def _result_name(kind: str, *parts: object) -> str:
    """The store's name of a validation or ablation result: what was decided, on what, with which threshold."""
    return kind + ":" + hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def validate_and_ablate(
    context: ValidationContext,
    build: Build,
    runner: Measures,
    finalists: list[FlagSet],
    min_gain: float,
    log: Log,
    store: DecisionStore | None = None,
    confirm_on: tuple[Measures, ...] = (),
    limits: Limits = NO_LIMITS,
) -> tuple[Validation | None, tuple[Contribution, ...]]:
    """Validation of the finalists, ablation of the best, validation of the minimal set, on `runner`'s GPU;
    then the winner is confirmed on each GPU of `confirm_on` (validated there against the baseline, all at
    the same time): a winner that is not is not written. Each outcome is kept in the trial store as soon as it
    is decided, so that a rerun (after a kill) does not measure it again. `log`: the tune's event stream (or a
    function of a line)."""
    log = as_stream(log)
    if store is not None:
        store.save_validations("finalists", [])
        store.save_validations("confirmations", [])
    winner, contributions = _decide(context, build, runner, finalists, min_gain, log, store, limits)
    if winner is None or not confirm_on:
        return winner, contributions
    if not _confirmed_elsewhere(context, build, confirm_on, winner, min_gain, log, store, limits):
        return None, ()
    return winner, contributions


def _confirmed_elsewhere(
    context: ValidationContext,
    build: Build,
    others: tuple[Measures, ...],
    winner: Validation,
    min_gain: float,
    log: EventStream,
    store: DecisionStore | None,
    limits: Limits,
) -> bool:
    """The winner validated against the baseline on each GPU of `others`, all at the same time (each
    comparison paired on its own GPU, so the stage takes one confirmation's time, not one per GPU: issue 54).
    The trees are shared: the winner's confirmation left both builds in them, and a build here takes a lock
    (one tree, one build at a time; a re-build of what a tree holds only checks it). Whether every GPU
    confirmed it; each GPU's outcome said and kept in GPU order. The trial store is used from this thread only
    (what a GPU decided before a kill is restored, not measured again)."""
    lock = threading.Lock()
    devices = [other.gpu.device if other.gpu is not None else "" for other in others]
    names = [_validation_name([winner.flagset], min_gain, context.seed + 3, device) for device in devices]
    kept = [store.load_validations(name) if store is not None else None for name in names]
    for other, restored in zip(others, kept, strict=True):
        if restored:
            where = other.gpu.describe() if other.gpu is not None else "another GPU"
            log.info(f"confirmation on {where}: restored from the trial store", stage="finalists", restored=True)

    def one_at_a_time(tree: Tree, flagset: FlagSet) -> BuildResult:
        with lock:
            return build(tree, flagset)

    def on(i: int) -> Validation:
        restored = kept[i]
        if restored:
            return restored[0]
        (check,) = _validated(
            context,
            one_at_a_time,
            others[i],
            [winner.flagset],
            min_gain,
            context.seed + 3,
            log,
            None,
            devices[i],
            limits.min_rounds,
            limits.final_continue,
        )
        return check

    with ThreadPoolExecutor(len(others), thread_name_prefix="compileiq-confirm") as pool:
        checks = list(pool.map(on, range(len(others))))
    if store is not None:
        for name, restored, check in zip(names, kept, checks, strict=True):
            if not restored and not undecided([check]):  # (as _validated keeps a decided one)
                store.save_validations(name, [check])
        store.save_validations("confirmations", checks)
    return all([_say_confirmation(winner, other, check, log) for other, check in zip(others, checks, strict=True)])


def _say_confirmation(winner: Validation, other: Measures, check: Validation, log: EventStream) -> bool:
    """One line of the winner's confirmation on another GPU; whether it confirmed it."""
    where = other.gpu.describe() if other.gpu is not None else "another GPU"
    interval = f"{check.geomean_speedup:.4f}x [{check.geomean_ci_low:.4f}..{check.geomean_ci_high:.4f}]"
    said = (
        f"confirmed on {where}: {interval}"
        if check.accepted
        else (
            f"{winner.flagset.describe()} is not confirmed on {where}: {interval}; {check.reason or 'not significant'}"
        )
    )
    log.info(said, stage="finalists", gpu=where, confirmed=check.accepted, speedup=check.geomean_speedup)
    return check.accepted


def _validation_name(
    candidates: list[FlagSet], min_gain: float, seed: int, gpu: str = "", alpha: float | None = None
) -> str:
    extra = (*((gpu,) if gpu else ()), *((f"alpha={alpha:.3g}",) if alpha is not None else ()))
    return _result_name("validation", [c.key for c in candidates], min_gain, seed, *extra)


def _validated(
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
    name = _validation_name(candidates, min_gain, seed, gpu, alpha)
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
        **({"alpha": alpha} if alpha is not None else {}),
    )
    if store is not None and not undecided(results):  # a verdict the box cut is no decision: a rerun makes it
        store.save_validations(name, results)
    return results


def _decide(
    context: ValidationContext,
    build: Build,
    runner: Measures,
    finalists: list[FlagSet],
    min_gain: float,
    log: EventStream,
    store: DecisionStore | None,
    limits: Limits = NO_LIMITS,
) -> tuple[Validation | None, tuple[Contribution, ...]]:
    if not finalists:
        return None, ()

    def validated(
        candidates: list[FlagSet], seed: int, may_continue: Callable[[float], bool] | None
    ) -> list[Validation]:
        return _validated(
            context,
            build,
            runner,
            candidates,
            min_gain,
            seed,
            log,
            store,
            "",
            limits.min_rounds,
            may_continue,
            limits.max_rounds,
            limits.alpha,
        )

    results = validated(finalists, context.seed, limits.validation_continue)
    if store is not None:  # the last tune's finalists, for its summary and report
        store.save_validations("finalists", results)
    _say_finalists(results, log)
    accepted = sorted((v for v in results if v.accepted), key=lambda v: -v.geomean_speedup)
    if not accepted:
        return None, ()
    best = accepted[0]
    log.phase("ablation")
    minimal, contributions = _ablation(context, build, runner, best, min_gain, log, store, limits)
    winner = best
    if minimal != best.flagset:
        (final,) = validated([minimal], context.seed + 2, limits.final_continue)
        log.info(
            f"minimal flag set {minimal.describe()}: {final.geomean_speedup:.4f}x "
            f"[{final.geomean_ci_low:.4f}..{final.geomean_ci_high:.4f}]{'; ' + final.reason if final.reason else ''}",
            stage="finalists",
            flags=minimal.describe(),
            accepted=final.accepted,
            speedup=final.geomean_speedup,
        )
        if final.accepted:
            winner = final
        else:
            log.info("the minimal set did not validate; keeping the full validated winner", stage="finalists")
    log.phase("confirmation")
    confirmed = _confirmed(context, build, runner, winner, log, store, limits)
    return confirmed, contributions if confirmed is not None else ()


def _say_finalists(results: list[Validation], log: EventStream) -> None:
    """One line per validated finalist: its verdict, speed-up and interval, and each workload's."""
    for v in results:
        per = ", ".join(f"{w.speedup:.4f}x (p={w.p_value:.2g})" for w in v.workloads)
        log.info(
            f"  {verdict(v)} {v.flagset.describe()}: "
            f"{v.geomean_speedup:.4f}x [{v.geomean_ci_low:.4f}..{v.geomean_ci_high:.4f}] {per}"
            f"{'; ' + v.reason.removeprefix(CUT) if v.reason else ''}",
            stage="finalists",
            flags=v.flagset.describe(),
            accepted=v.accepted,
            undecided=v.reason.startswith(CUT),
            speedup=v.geomean_speedup,
        )


def _ablation(
    context: ValidationContext,
    build: Build,
    runner: Measures,
    best: Validation,
    min_gain: float,
    log: EventStream,
    store: DecisionStore | None,
    limits: Limits,
) -> tuple[FlagSet, tuple[Contribution, ...]]:
    """The ablation of the best finalist (restored whole from the trial store, or resumed after its stored
    steps); each step kept as soon as it is decided, the whole once no step was cut."""
    name = _result_name("ablation", best.flagset.key, min_gain, context.seed + 1)
    kept = store.load_ablation(name) if store is not None else None
    if kept is not None:
        log.info("ablation: restored from the trial store", stage="finalists", restored=True)
        return kept
    steps: dict[str, Contribution] = {}
    on_step = None
    if store is not None:  # each step is kept as soon as it is decided: a killed ablation resumes after it
        steps = store.load_ablation_steps(name)
        on_step = lambda step, c: store.save_ablation_step(name, step, c)  # noqa: E731
    if steps:
        log.info(
            f"ablation: {len(steps)} step(s) of an interrupted ablation restored from the trial store",
            stage="finalists",
            restored_steps=len(steps),
        )
    minimal, contributions = ablate(
        runner,
        build,
        context.trees,
        context.space,
        best.flagset,
        min_gain,
        context.seed + 1,
        log,
        steps,
        on_step,
        expected=limits.expected,
        may_start=limits.ablation_start,
        may_continue=limits.ablation_continue,
        steps=limits.ablation_steps,
    )
    whole = not any(c.reason in (UNDECIDED, NOT_ABLATED) for c in contributions)
    if store is not None and whole:  # one the time box cut is not kept whole: a rerun goes on from its steps
        store.save_ablation(name, minimal, contributions)
    return minimal, contributions


def _confirmed(
    context: ValidationContext,
    build: Build,
    runner: Measures,
    winner: Validation,
    log: EventStream,
    store: DecisionStore | None,
    limits: Limits,
) -> Validation | None:
    """The winner's numbers from fresh rounds: the rounds that accepted it stopped at the look that
    accepted it and it was picked as the best of the finalists, so their speed-up is a little high and their
    interval too narrow (docs/benchmarks/statistics.md). The confirmation re-builds the winner and the
    baseline and measures the plan's interleaved rounds (after a warm-up), and as many as the validation
    measured when those cannot show it faster, used for nothing but the numbers written; a winner they find
    slower than the baseline, or do not show faster, is not written. When the box leaves fewer than
    ROUNDS_FLOOR rounds, the deciding rounds' numbers stay, marked as such."""
    name = _result_name("confirmation", winner.flagset.key, context.seed + 4)
    kept = store.load_validations(name) if store is not None else None
    if kept:
        log.info("confirmation: restored from the trial store", stage="finalists", restored=True)
        return kept[0] if kept[0].accepted else None
    rounds = max(ROUNDS_FLOOR, limits.min_rounds or runner.spec.min_rounds)
    may = limits.confirm_continue
    if may is not None and not may(0.0):
        log.info(
            "confirmation: no time left; the numbers written are the deciding rounds' (a little optimistic)",
            stage="finalists",
            confirmed=False,
        )
        return winner
    outcome = confirm(
        runner, build, context.trees, context.space.baseline(), winner, rounds, context.seed + 4, log, may
    )
    if outcome is None:
        return winner
    if store is not None and not undecided([outcome]):  # one the box cut holding 1: a rerun confirms it again
        store.save_validations(name, [outcome])
    return outcome if outcome.accepted else None
