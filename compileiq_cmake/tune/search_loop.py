"""Tune stage, the search loop: the search asks flag sets, the conveyor (execute.pipeline) builds and measures
them on every GPU, each finished trial is stored at once and told to the search; once the global search is
over, the per-file stage (search.per_file) proposes per-file flags on top of its best trial and those run
through the same conveyor. Stops at the budget, the time limit, or when the space is exhausted."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from ..execute.executor import Executor
from ..execute.pipeline import Pipeline, finished_trial, lookahead
from ..measure.runner import Runner
from ..model.errors import CompileIQError
from ..model.events import as_stream
from ..model.records import BuildResult, FlagSet, Status, Trial
from ..model.wording import plural
from ..project.cmake_project import VariantTree
from ..results.toml_io import read_entries
from ..results.store import TrialStore
from ..search import per_file
from ..search.prior import SpacePrior
from ..search.search import FlagSearch
from .baseline import Baselines
from .lines import progress
from .bank import Bank
from .budget import BOX_RESULT, Budget
from .plan import Plan
from .setup import FINALISTS
from .tune_setup import TuneSetup
from .trial import loss, measure_more_if_promising, noise_of_pairs, run_trial

Log = Callable[[str], None]


@dataclass(frozen=True)
class LoopTimings:
    """Where the search's time went: the whole search (from the tune's start), the loop after the setup and
    the baselines, the trials the loop measured, and the driver's own seconds over them."""

    search_seconds: float
    loop_seconds: float
    loop_trials: int
    overhead: float
    steps: tuple[tuple[str, float], ...] = ()  # the overhead's known parts (execute.build's steps), summed


@dataclass(frozen=True)
class SearchOutcome:
    """The search loop's outcome: every trial by its flag set's key (the baseline and the restored ones
    included), the per-file stage's plan (None when it did not run) and the timings."""

    trials: dict[str, Trial]
    per_file: per_file.Plan | None
    timings: LoopTimings
    needed: float = 0.0  # the time box fitted no trial: the --time-limit one trial and its validation need


@dataclass(frozen=True)
class SearchLoop:
    """The search loop of one tune, after its baselines: `run()` returns the trials and timings. Every second
    it spends is asked of `budget` (tune.budget); an obvious win is validated and written at once by `bank`
    (tune.bank; None: no banking) before the search goes on."""

    setup: TuneSetup
    executor: Executor
    store: TrialStore
    log: Log
    started: float  # the tune's start (perf_counter): the ETA counts from it
    base: Baselines
    budget: Budget
    prior: SpacePrior | None = None  # the learned prior's predictions (tune/prior_use.py); None: --no-prior
    bank: Bank | None = None

    def _replan(self, trials: dict[str, Trial], confirmations: int) -> Plan | None:
        """The plan from now, with the costs the trials so far measured (None without a time box)."""
        lower = self.setup.spec.metric.lower_is_better
        best = min(trials.values(), key=lambda t: loss(t, self.base.base_of(t), lower))
        steps = len(best.flagset.choices) or min(3, len(self.setup.space.dimensions))
        return self.budget.replan(trials, FINALISTS, steps, confirmations)

    def _candidate(self, trials: dict[str, Trial]) -> bool:
        """Whether some trial beat the project's own build (a finalist exists)."""
        lower = self.setup.spec.metric.lower_is_better
        return any(t.valid and not t.flagset.is_baseline and loss(t, self.base.base_of(t), lower) < 0
                   for t in trials.values())

    def run(self) -> SearchOutcome:
        setup, executor, store, log, base, started = self.setup, self.executor, self.store, self.log, self.base, self.started
        spec, budget = setup.spec, self.budget
        lower = spec.metric.lower_is_better
        base_of = base.base_of
        runner, runners, references, noise = base.runner, base.runners, base.references, base.noise
        trials: dict[str, Trial] = {base.baseline.flagset.key: base.baseline, **base.restored}
        search = FlagSearch(setup.space, spec.budget, spec.seed, spec.workers, warm_start=warm_start(setup, log),
                            prior=self.prior)
        for trial in trials.values():
            search.tell(trial.flagset, loss(trial, base_of(trial), lower))
        confirmations = max(0, len(runners) - 1)
        budget.measured_by(len(runners), bool(references))
        plan = self._replan(trials, confirmations)
        if plan is not None:
            log(f"compileiq: {plan.describe()}")
        progress(setup, log, base.baseline, base.baseline, trials, started, budget=budget)

        def measure(index: int, tree: VariantTree, flagset: FlagSet, build: BuildResult, on: Runner | None,
                    known: dict[str, Trial]) -> Trial:
            """A built trial measured on `on` (None for a failed build: nothing runs), with more runs when close
            to the best of the trials finished when it was submitted."""
            if on is None:
                return run_trial(runner, setup, tree, index, flagset, build, None, log)
            reference = references.get(on.gpu.device if on.gpu is not None else "")  # this GPU's paired build
            trial = run_trial(on, setup, tree, index, flagset, build, reference, log)
            trial = replace(trial, gpu=on.gpu.device) if len(runners) > 1 else trial
            floor = noise
            if reference is not None:  # once 3 paired trials show it, the noise pairing leaves
                paired, n = noise_of_pairs(known.values())
                floor = paired if n >= 3 else noise
            return measure_more_if_promising(on, setup, tree, trial, base_of, known, floor, reference,
                                             budget.may_extend if budget.bounded else None)

        needed = 0.0
        step_seconds: dict[str, float] = {}
        overhead = 0.0
        loop_trials = cancelled = 0
        loop_started = time.perf_counter()
        measuring = list(runners.values()) if len(runners) > 1 else [runner]
        per_file_plan: per_file.Plan | None = None
        deferred: list[FlagSet] = []  # asked, then cancelled for a bank's validation: submitted again first
        banking: Trial | None = None  # an obvious win waiting for the conveyor to drain, then validated
        with Pipeline(setup.trees[:spec.workers], executor.build, measuring, measure, log, budget.stop) as pipeline:
            exhausted = stopped = False
            per_file_due = spec.per_file_budget > 0
            per_file_possible = per_file_due and setup.project.language == "CUDA" and len(setup.project.target.sources_in("CUDA")) > 1
            trial_budget = spec.budget
            next_index = len(trials)
            while True:
                budget.check()
                ahead = lookahead(trials.values(), len(measuring), spec.workers)  # asks as late as the GPUs allow
                while banking is None and not (exhausted or stopped) and pipeline.has_free_tree \
                        and pipeline.pending < ahead and len(trials) + pipeline.pending < trial_budget:
                    if nothing_to_gain(spec.flat_stop, self.prior, trials.values(), base, lower):
                        log(f"compileiq: suite: nothing to gain: the prior predicted no value faster and none of "
                            f"{plural(len(trials), 'trial')} beat the project's own build by {100 * base.min_gain:.2f}%; "
                            "the search stops early (its time goes to the suite's other targets)")
                        stopped = True
                        break
                    candidate = self._candidate(trials)
                    if not budget.search_open(pipeline.pending, trials, candidate):
                        if len(trials) + pipeline.pending == len(base.restored) + 1 and budget.needed:
                            needed = budget.needed
                        dropped = pipeline.cancel(budget.queued_fit(trials, candidate))
                        under_way = pipeline.pending - dropped
                        log(f"compileiq: time box: the search stops after {plural(len(trials) - 1 + under_way, 'trial')}"
                            + (f" ({dropped} queued cancelled: the plan has no room for them)" if dropped else "")
                            + f": the rest of {budget.limit_text()} ({budget.remaining():.0f} s) is kept for "
                            + (f"the finalists ({plan.finish.describe()})" if candidate and plan is not None else
                               "the trials under way and the validation of what they find (no candidate yet)"))
                        stopped = True
                        break
                    flagset = deferred.pop(0) if deferred else search.ask()
                    if flagset is None:
                        exhausted = True
                        break
                    why = search.proposed_by(flagset) if isinstance(search, FlagSearch) else None
                    if why:
                        as_stream(log).info(f"trial {next_index} ({flagset.describe()}) is proposed by {why}",
                                            prior=True, trial=next_index, flags=list(flagset.flags))
                    pipeline.submit(next_index, flagset, trials)
                    next_index += 1
                if not pipeline.pending:
                    if banking is not None:  # the conveyor is idle: the win is validated (and written) now
                        self.bank.validate(banking, trials)
                        banking = None
                        plan = self._replan(trials, confirmations)
                        continue
                    if per_file_due and not stopped:  # the global search is over: per-file flags on top of its best
                        per_file_due = False
                        if exhausted:
                            log("compileiq: every point of the flag space has been tried")
                        per_file_plan = per_file.plan(replace(setup.per_file_context, prior=self.prior), setup.trees[0],
                                                      executor.build, runner,
                                                      trials, lambda t: loss(t, base_of(t), lower), spec.per_file_budget, log)
                        if per_file_plan is not None and per_file_plan.proposals:
                            store.save_result("per_file", per_file_plan.as_dict())
                            search = per_file.Proposals(list(per_file_plan.proposals))
                            trial_budget = len(trials) + len(search)
                            exhausted = False
                            continue
                        exhausted = False  # said above
                    elif per_file_due and per_file_possible:
                        log("compileiq: note: per-file stage skipped: the time limit was reached during the search")
                    break
                done = pipeline.next()
                trial = finished_trial(done)
                if trial.status is Status.CANCELLED:  # says nothing of its flags: not stored, not told
                    cancelled += 1
                    if banking is not None and not budget.stop.reason():
                        deferred.append(trial.flagset)
                    continue
                store.save(trial)
                trials[trial.flagset.key] = trial
                store.save_result(BOX_RESULT, budget.record())
                search.tell(trial.flagset, loss(trial, base_of(trial), lower))
                plan = self._replan(trials, confirmations)
                progress(setup, log, trial, base_of(trial), trials, started, pipeline.in_flight.describe(),
                         trial_budget + (spec.per_file_budget if per_file_due and per_file_possible else 0), budget=budget)
                overhead += done.driver_seconds
                for step, seconds in done.build.steps:
                    step_seconds[step] = step_seconds.get(step, 0.0) + seconds
                loop_trials += 1
                if self.bank is not None and banking is None and not stopped and self.bank.due(trial):
                    banking = trial
                    held = pipeline.cancel(0)
                    if held:
                        log(f"compileiq: bank: {plural(held, 'queued trial')} held back until the win is validated")
            if exhausted and not isinstance(search, per_file.Proposals):
                log("compileiq: every point of the flag space has been tried")
        if cancelled:
            budget.cut(f"{plural(cancelled, 'search trial')} cancelled in flight (no room left in the plan)")
        timings = LoopTimings(time.perf_counter() - started, time.perf_counter() - loop_started, loop_trials, overhead,
                              tuple(step_seconds.items()))
        valid = [t for t in trials.values() if t.valid]
        best = min(valid, key=lambda t: loss(t, base_of(t), lower)) if valid else None
        speedup = math.exp(-loss(best, base_of(best), lower)) if best is not None else None
        as_stream(log).stage_result(
            "search", f"search: {plural(len(trials), 'trial')} ({len(valid)} valid) in {timings.search_seconds:.1f} s"
            + (f"; best {speedup:.3f}x before validation ({best.flagset.describe()})" if best is not None and
               not best.flagset.is_baseline else "; only the project's own build was measured" if len(trials) <= 1
               else "; none was faster than the project's own build"),
            trials=len(trials), valid=len(valid), seconds=timings.search_seconds,
            best=list(best.flagset.flags) if best is not None else None, speedup=speedup)
        return SearchOutcome(trials, per_file_plan, timings, needed)


def nothing_to_gain(after: int, prior: SpacePrior | None, trials, base: Baselines, lower: bool = True) -> bool:
    """A suite's early stop: at least `after` trials (0: never), a prior that proposed no combination
    (predicted no value confidently faster), and no valid trial faster than the baseline by min_gain."""
    trials = list(trials)
    if not after or prior is None or prior.first or len(trials) < after:
        return False
    if not any(p.known for p in prior.predictions.values()):
        return False  # a prior that knows nothing of this space says nothing
    best = min((loss(t, base.base_of(t), lower) for t in trials if t.valid), default=0.0)
    return best > -math.log1p(base.min_gain)


def warm_start(setup: TuneSetup, log: Log) -> tuple[FlagSet, ...]:
    """Flag sets of earlier tunes (compileiq.toml files) that fit this space, tried first by the search."""
    seeds: list[FlagSet] = []
    for path in setup.spec.warm_start:
        for entry in read_entries(Path(path)):
            if entry.language != setup.project.language:
                continue
            known = [f for f in entry.flags if any(f in v for d in setup.space.dimensions for v in d.values)]
            try:
                seeds.append(setup.space.flagset_from_flags(known))
            except CompileIQError:
                continue
            if len(known) < len(entry.flags):
                log(f"compileiq: warm start from {entry.target}: {plural(len(entry.flags) - len(known), 'flag')} outside this space ignored")
    if seeds:
        log(f"compileiq: warm start: {plural(len(seeds), 'flag set')} from earlier tunes {'is' if len(seeds) == 1 else 'are'} tried first")
    return tuple(dict.fromkeys(seeds))
