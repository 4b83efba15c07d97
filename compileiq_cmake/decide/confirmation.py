"""The last step of the finalists' stage (decide/procedure.py): the winner's confirmation on the first GPU (fresh
rounds whose numbers are written) and, with several GPUs, its validation against the baseline on each other
GPU, all at the same time, one on each GPU (issue 54: on 8 GPUs they took 8 validations end to end while the
other GPUs idled). Each comparison is paired on its own GPU, so the statistics are those of one GPU at a time.

What the GPUs share: the two variant trees (the project's own build and the winner), built once here before any
run; each GPU then runs in them. A benchmark that writes its --compare-file into the tree cannot share a tree
with a run on another GPU, so with --compare-file the GPUs take their turns (said once). The trial store is
used from the calling thread only: each GPU's decision is kept as soon as it is made, so that a rerun after a
kill restores it. An interrupt or a failure on one GPU stops the others at their next round, and so does one
GPU's rejection of the winner (it is not written whatever the others find: their rounds would be time lost)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from functools import partial

from ..model.events import EventStream
from ..model.records import BuildResult, FlagSet, Validation
from ..model.timebox import Interrupted
from .decided import Limits, ValidationContext, result_name, validated, validation_name
from .ports import Build, DecisionStore, Measures, Tree
from .validation import ROUNDS_FLOOR, confirm, undecided

SEED_STEP = 7919  # each other GPU's rounds in an order of their own (a variant is not run on every GPU at once)


def confirmed(
    context: ValidationContext,
    build: Build,
    runner: Measures,
    others: tuple[Measures, ...],
    winner: Validation,
    min_gain: float,
    log: EventStream,
    store: DecisionStore | None,
    limits: Limits,
) -> Validation | None:
    """The winner with the confirmation's numbers (the deciding rounds' where none could be made: the box, a
    baseline that cannot be measured), None when its fresh rounds or one of the `others` GPUs does not
    confirm it."""
    own_name, own, rounds = _own_confirmation(context, runner, winner, log, store, limits)
    if own is None:  # (restored: its fresh rounds did not confirm it)
        return None
    devices = [other.gpu.device if other.gpu is not None else "" for other in others]
    seeds = [context.seed + 3 + SEED_STEP * i for i in range(len(others))]
    names = [validation_name([winner.flagset], min_gain, s, d) for s, d in zip(seeds, devices, strict=True)]
    checks = _kept_elsewhere(others, names, log, store)
    if store is not None and any(c is not None for c in checks):  # (the summary's list, as before the kill)
        store.save_validations("confirmations", [c for c in checks if c is not None])
    if not rounds and all(c is not None for c in checks):
        return own if _said(winner, others, checks, "", log) else None
    refused = next((i for i, c in enumerate(checks) if c is not None and _rejects(c)), None)
    if refused is not None:  # (restored: a GPU did not confirm it, so nothing more would decide anything)
        _said(winner, others, checks, f"{_where(others[refused])} did not confirm it", log)
        return None
    built = _built_once(context, build, winner.flagset)
    kept = _Kept(store, own_name, own, names, checks, runner, others)
    gate = kept.gate

    def on(i: int) -> Validation:
        horizon = limits.elsewhere_rounds() if limits.elsewhere_rounds is not None else None
        (check,) = validated(
            context, built, others[i], [winner.flagset], min_gain, seeds[i], log, None, devices[i],
            limits.min_rounds, gate(limits.elsewhere_continue), horizon,
        )  # fmt: skip
        return check

    turns = runner.spec.compare_file is not None and bool(others)
    if turns:
        log.info(
            f"confirmation: one GPU after another (the benchmark writes --compare-file {runner.spec.compare_file} "
            "into the tree every GPU runs in)",
            stage="finalists",
        )
    tasks: dict[int, Callable[[], Validation | None]] = {}  # -1: the first GPU's confirmation, i: others[i]
    if rounds:
        args = (runner, built, context.trees, context.space.baseline(), winner, rounds, context.seed + 4, log)
        tasks[-1] = lambda: confirm(*args, gate(limits.confirm_continue))
    tasks |= {i: partial(on, i) for i in range(len(others)) if checks[i] is None}
    _at_once(tasks, 1 if turns else len(tasks), kept)
    stopped = kept.stopped()
    if kept.interrupted():
        raise Interrupted(stopped)
    return kept.own if _said(winner, others, checks, stopped or kept.rejected, log) else None


class _Kept:
    """What the stage decided so far (the first GPU's winner, each other GPU's verdict), kept in the store as
    each ends (`done`, on the tune's thread: the store is used there only); the stop of the other GPUs' rounds
    (`gate`) and of the tune's runs under way (`failed`). The tune's stop tokens are the runners' `stop`
    (decide/ does not import measure/): set from outside (a suite's Ctrl-C, the box's end) they cancel runs,
    whose verdicts are then no decisions and are not kept."""

    def __init__(
        self,
        store: DecisionStore | None,
        own_name: str,
        own: Validation | None,
        names: list[str],
        checks: list[Validation | None],
        runner: Measures,
        others: tuple[Measures, ...],
    ) -> None:
        self.store, self.own_name, self.own, self.names, self.checks = store, own_name, own, names, checks
        runners = (runner, *others)
        self.tokens = list({id(t): t for r in runners if (t := getattr(r, "stop", None)) is not None}.values())
        self.stop = threading.Event()  # a failure, an interrupt or a rejection: the others stop at their next round
        self.rejected = ""  # which GPU did not confirm the winner (then the others' rounds would decide nothing)
        self.where = [_where(runner, "the first GPU"), *(_where(o) for o in others)]

    def gate(self, may: Callable[[float], bool] | None) -> Callable[[float], bool]:
        return lambda seconds: not self.stop.is_set() and (may is None or may(seconds))

    def stopped(self) -> str:
        return next((t.reason() for t in self.tokens if t.reason()), "")

    def interrupted(self) -> bool:
        return any(t.interrupted for t in self.tokens)

    def done(self, i: int, outcome: Validation | None) -> None:
        """One GPU's outcome kept; a decided rejection stops the others (the winner is not written whatever they
        find), whose verdicts the stop cut are then none (not kept: a rerun decides them if it must)."""
        if self.stopped():  # runs cancelled: no verdict, nothing kept (a rerun measures it)
            return
        if outcome is not None and self.rejected and (i < 0 or undecided([outcome])):
            outcome = None  # (cut by the stop: the first GPU's fixed rounds too, even where they decided)
        if i < 0:
            self.own = _keep_own(self.own_name, self.own, outcome, self.store)
        elif outcome is not None:
            self.checks[i] = outcome
            _keep_elsewhere(self.names[i], outcome, self.checks, self.store)
        if outcome is not None and _rejects(outcome) and not self.rejected:
            self.rejected = f"{self.where[i + 1]} did not confirm it"
            self.stop.set()

    def failed(self, exc: BaseException) -> None:
        self.stop.set()
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"cancelled: {type(exc).__name__}"
        for token in self.tokens:
            token.cancel(why)


def _at_once(tasks: dict[int, Callable[[], Validation | None]], workers: int, kept: _Kept) -> None:
    """Each task on a thread (`workers` at a time) and `kept.done(key, outcome)` on this thread as each ends
    (what ended well before a failure first). A failure or an interrupt stops the others (`kept.failed`: at
    their next round, the runs under way at once) and is raised once they have ended; a task that would start
    after the stop (a turn after another GPU did not confirm the winner) has nothing to decide: None."""
    pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="compileiq-confirm")

    def unless_stopped(task: Callable[[], Validation | None]) -> Validation | None:
        return None if kept.stop.is_set() else task()

    pending = {pool.submit(unless_stopped, task): key for key, task in tasks.items()}
    try:
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            bad = [f for f in finished if f.exception() is not None]
            for future in (f for f in finished if f not in bad):
                kept.done(pending.pop(future), future.result())
            if bad:
                bad[0].result()  # (raises the task's failure)
    except BaseException as exc:
        kept.failed(exc)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _own_confirmation(
    context: ValidationContext,
    runner: Measures,
    winner: Validation,
    log: EventStream,
    store: DecisionStore | None,
    limits: Limits,
) -> tuple[str, Validation | None, int]:
    """What the winner's confirmation on the first GPU needs: its store name, the winner as it stands without
    it, the rounds to measure (0 when restored or when no time is left). Its numbers are from fresh rounds:
    the rounds that accepted it stopped at the look that accepted it and it was picked as the best of the
    finalists, so their speed-up is a little high and their interval too narrow (docs/benchmarks/statistics.md).
    The confirmation (validation.confirm) measures the plan's interleaved rounds (after a warm-up), and as many
    as the validation measured when those cannot show it faster, used for nothing but the numbers written; a
    winner they find slower than the baseline, or do not show faster, is not written. When the box leaves fewer
    than ROUNDS_FLOOR rounds, the deciding rounds' numbers stay, marked as such."""
    name = result_name("confirmation", winner.flagset.key, context.seed + 4)
    kept = store.load_validations(name) if store is not None else None
    if kept:
        log.info("confirmation: restored from the trial store", stage="finalists", restored=True)
        return name, kept[0] if kept[0].accepted else None, 0
    may = limits.confirm_continue
    if may is not None and not may(0.0):
        log.info(
            "confirmation: no time left; the numbers written are the deciding rounds' (a little optimistic)",
            stage="finalists",
            confirmed=False,
        )
        return name, winner, 0
    return name, winner, max(ROUNDS_FLOOR, limits.min_rounds or runner.spec.min_rounds)


def _built_once(context: ValidationContext, build: Build, winner: FlagSet) -> Build:
    """The project's own build and the winner built in the first two trees now, once for every GPU; the
    returned build hands those results back (a build of anything else builds it, one at a time)."""
    baseline = context.space.baseline()
    results = {0: build(context.trees[0], baseline), 1: build(context.trees[1], winner)}
    wanted = {0: baseline.key, 1: winner.key}
    lock = threading.Lock()

    def built(tree: Tree, flagset: FlagSet) -> BuildResult:
        for i in (0, 1):
            if tree is context.trees[i] and flagset.key == wanted[i]:
                return results[i]
        with lock:
            return build(tree, flagset)

    return built


def _keep_own(
    name: str, own: Validation | None, outcome: Validation | None, store: DecisionStore | None
) -> Validation | None:
    """The winner after its first GPU's confirmation (None: no numbers from it, the deciding rounds' stay),
    kept in the store once decided (one the box cut holding 1 is not: a rerun confirms it again)."""
    if outcome is None:
        return own
    if store is not None and not undecided([outcome]):
        store.save_validations(name, [outcome])
    return outcome if outcome.accepted else None


def _keep_elsewhere(name: str, check: Validation, checks: list[Validation | None], store: DecisionStore | None) -> None:
    """One other GPU's decision kept as soon as it is made, and the confirmations so far (GPU order)."""
    if store is None:
        return
    if not undecided([check]):  # (as decided.validated keeps a decided one)
        store.save_validations(name, [check])
    store.save_validations("confirmations", [c for c in checks if c is not None])


def _kept_elsewhere(
    others: tuple[Measures, ...], names: list[str], log: EventStream, store: DecisionStore | None
) -> list[Validation | None]:
    """Per GPU of `others`, the winner's validation there that a run before a kill kept (None: to measure)."""
    kept: list[Validation | None] = []
    for other, name in zip(others, names, strict=True):
        restored = store.load_validations(name) if store is not None else None
        kept.append(restored[0] if restored else None)
        if restored:
            log.info(
                f"confirmation on {_where(other)}: restored from the trial store", stage="finalists", restored=True
            )
    return kept


def _rejects(outcome: Validation) -> bool:
    """A decided verdict that does not confirm the winner (one the box cut is no verdict)."""
    return not outcome.accepted and not undecided([outcome])


def _where(runner: Measures, unnamed: str = "another GPU") -> str:
    gpu = getattr(runner, "gpu", None)  # (a runner may have none)
    return gpu.describe() if gpu is not None else unnamed


def _said(
    winner: Validation, others: tuple[Measures, ...], checks: list[Validation | None], stopped: str, log: EventStream
) -> bool:
    """One line per other GPU of the winner's validation there (None: its runs were stopped, no verdict);
    whether every one confirmed it."""
    everywhere = True
    for other, check in zip(others, checks, strict=True):
        where = _where(other)
        if check is None:
            everywhere = False
            log.info(
                f"{winner.flagset.describe()} is not confirmed on {where}: its validation was stopped "
                f"({stopped or 'no verdict'})",
                stage="finalists",
                gpu=where,
                confirmed=False,
            )
            continue
        interval = f"{check.geomean_speedup:.4f}x [{check.geomean_ci_low:.4f}..{check.geomean_ci_high:.4f}]"
        line = (
            f"confirmed on {where}: {interval}"
            if check.accepted
            else f"{winner.flagset.describe()} is not confirmed on {where}: {interval}; "
            f"{check.reason or 'not significant'}"
        )
        log.info(line, stage="finalists", gpu=where, confirmed=check.accepted, speedup=check.geomean_speedup)
        everywhere = everywhere and check.accepted
    return everywhere
