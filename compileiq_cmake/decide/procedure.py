"""The decision procedure over the finalists (the tune's finalists stage, tune/finalists.py, picks them and
sizes the stage): validation against the baseline, ablation of the best, validation of the minimal set and
the winner's confirmation (fresh rounds whose numbers are written), on one GPU; with several GPUs the winner is
then confirmed on each other one, all at the same time (decide/confirmation.py). Every outcome is kept in the
trial store as soon as it is decided (decide/decided.py)."""

from __future__ import annotations

from collections.abc import Callable

from ..model.events import EventStream, Lines, as_stream
from ..model.records import Contribution, FlagSet, Validation
from .ablation import ablate
from .confirmation import confirmed
from .decided import NO_LIMITS, Limits, ValidationContext, result_name, validated
from .ports import Build, DecisionStore, Measures
from .validation import CUT, NOT_ABLATED, UNDECIDED, verdict

Log = EventStream | Lines


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
    return _decide(context, build, runner, finalists, min_gain, log, store, limits, confirm_on)


def _decide(
    context: ValidationContext,
    build: Build,
    runner: Measures,
    finalists: list[FlagSet],
    min_gain: float,
    log: EventStream,
    store: DecisionStore | None,
    limits: Limits = NO_LIMITS,
    others: tuple[Measures, ...] = (),
) -> tuple[Validation | None, tuple[Contribution, ...]]:
    if not finalists:
        return None, ()

    def against_baseline(
        candidates: list[FlagSet], seed: int, may_continue: Callable[[float], bool] | None
    ) -> list[Validation]:
        return validated(
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

    results = against_baseline(finalists, context.seed, limits.validation_continue)
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
        (final,) = against_baseline([minimal], context.seed + 2, limits.final_continue)
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
    final_winner = confirmed(context, build, runner, others, winner, min_gain, log, store, limits)
    return (final_winner, contributions) if final_winner is not None else (None, ())


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
    name = result_name("ablation", best.flagset.key, min_gain, context.seed + 1)
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
