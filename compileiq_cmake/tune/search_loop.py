"""Tune stage, the search loop: the search asks flag sets, the conveyor (execute.pipeline) builds and measures
them on every GPU, each finished trial is stored at once and told to the search; once the global search is
over, the per-file stage (search.per_file) proposes per-file flags on top of its best trial and those run
through the same conveyor. Stops at the budget, the time limit, or when the space is exhausted."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..execute.executor import Executor
from ..execute.pipeline import Pipeline, finished_trial, lookahead
from ..flags.space import FlagSpace
from ..measure.runner import Runner
from ..model.errors import CompileIQError
from ..model.events import Log, as_stream
from ..model.records import BuildResult, FlagSet, Status, Trial
from ..model.wording import plural
from ..project.cmake_project import VariantTree
from ..results.store import TrialStore
from ..results.toml_io import read_entries
from ..search import per_file
from ..search.prior import SpacePrior
from ..search.search import FlagSearch
from .acf_engine import AcfEngine
from .bank import Bank
from .baseline import Baselines
from .budget import BOX_RESULT, Budget
from .lines import progress
from .plan import Plan
from .trial import loss, measure_more_if_promising, noise_of_pairs, race_look, run_trial
from .tune_setup import FINALISTS, TuneSetup


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
    space: FlagSpace | None = None  # the space the search ended with (control files an engine added: tune.acf_engine)


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
        lower = self.setup.spec.lower_is_better
        best = min(trials.values(), key=lambda t: loss(t, self.base.base_of(t), lower))
        steps = len(best.flagset.choices) or min(3, len(self.setup.space.dimensions))
        return self.budget.replan(trials, FINALISTS, steps, confirmations)

    def _candidate(self, trials: dict[str, Trial]) -> bool:
        """Whether some trial beat the project's own build (a finalist exists)."""
        lower = self.setup.spec.lower_is_better
        return any(
            t.valid and not t.flagset.is_baseline and loss(t, self.base.base_of(t), lower) < 0 for t in trials.values()
        )

    def run(self) -> SearchOutcome:
        setup, log, base = self.setup, self.log, self.base
        spec = setup.spec
        trials: dict[str, Trial] = {base.baseline.flagset.key: base.baseline, **base.restored}
        search = FlagSearch(
            setup.space, spec.budget, spec.seed, spec.workers, warm_start=warm_start(setup, log), prior=self.prior
        )
        for trial in trials.values():
            search.tell(trial.flagset, self._loss(trial))
        state = _Loop(
            trials,
            search,
            spec.budget,
            len(trials),
            max(0, len(base.runners) - 1),
            per_file_due=spec.per_file_budget > 0,
            per_file_possible=spec.per_file_budget > 0
            and setup.project.language == "CUDA"
            and len(setup.project.target.sources_in("CUDA")) > 1,
            acf=AcfEngine.of(setup.tools.acf if setup.tools is not None else None, log),
        )
        self.budget.measured_by(len(base.runners), bool(base.references), base.warmup)
        state.plan = self._replan(trials, state.confirmations)
        if state.plan is not None:
            as_stream(log).info(f"{state.plan.describe()}")
        progress(setup, log, base.baseline, base.baseline, trials, self.started, budget=self.budget)
        measuring = list(base.runners.values()) if len(base.runners) > 1 else [base.runner]
        loop_started = time.perf_counter()
        with Pipeline(
            setup.trees[: spec.workers], self.executor.build, measuring, self._measure, log, self.budget.stop
        ) as pipeline:
            while True:
                self.budget.check()
                self._fill(state, pipeline, lookahead(trials.values(), len(measuring), spec.workers))
                if not pipeline.pending:
                    if self._idle(state):
                        continue
                    break
                self._finished(state, pipeline)
            if state.exhausted and not isinstance(state.search, per_file.Proposals):
                as_stream(log).info("every point of the flag space has been tried")
        if state.cancelled:
            self.budget.cut(f"{plural(state.cancelled, 'search trial')} cancelled in flight (no room left in the plan)")
        timings = LoopTimings(
            time.perf_counter() - self.started,
            time.perf_counter() - loop_started,
            state.loop_trials,
            state.overhead,
            tuple(state.step_seconds.items()),
        )
        self._said(trials, timings)
        return SearchOutcome(trials, state.per_file_plan, timings, state.needed, search.space)

    def _loss(self, trial: Trial) -> float:
        return loss(trial, self.base.base_of(trial), self.setup.spec.lower_is_better)

    def _measure(
        self,
        index: int,
        tree: VariantTree,
        flagset: FlagSet,
        build: BuildResult,
        on: Runner | None,
        known: dict[str, Trial],
    ) -> Trial:
        """A built trial measured on `on` (None for a failed build: nothing runs), with more runs when close
        to the best of the trials finished when it was submitted (the conveyor's measuring step)."""
        setup, base, log = self.setup, self.base, self.log
        if on is None:
            return run_trial(base.runner, setup, tree, index, flagset, build, None, log)
        device = on.gpu.device if on.gpu is not None else ""
        reference = base.references.get(device)  # this GPU's paired build
        floor = base.noise
        if reference is not None:  # once 3 paired trials show it, the noise pairing leaves
            paired, n = noise_of_pairs(known.values())
            floor = paired if n >= 3 else base.noise
        race = race_look(setup, base.of_gpu(device), known, base.base_of, base.min_gain, floor)
        trial = run_trial(on, setup, tree, index, flagset, build, reference, log, race=race, warmup=base.warmup)
        if len(base.runners) > 1:
            assert on.gpu is not None  # (each of several runners has its GPU)
            trial = replace(trial, gpu=on.gpu.device)
        return measure_more_if_promising(
            on,
            setup,
            tree,
            trial,
            base.base_of,
            known,
            floor,
            reference,
            self.budget.may_extend if self.budget.bounded else None,
            race,
        )

    def _fill(self, state: _Loop, pipeline: Pipeline, ahead: int) -> None:
        """Submit proposals while a tree is free and the conveyor holds fewer than `ahead` (asked as late as the
        GPUs allow), the budget's plan has room and the source has more; says why the search stops."""
        log, budget, spec, trials = self.log, self.budget, self.setup.spec, state.trials
        while (
            state.banking is None
            and not (state.exhausted or state.stopped)
            and pipeline.has_free_tree
            and pipeline.pending < ahead
            and len(trials) + pipeline.pending < state.trial_budget
        ):
            if spec.objective == "time" and nothing_to_gain(
                spec.flat_stop, self.prior, trials.values(), self.base, spec.lower_is_better
            ):  # the prior predicts time
                as_stream(log).info(
                    f"suite: nothing to gain: the prior predicted no value faster and none of "
                    f"{plural(len(trials), 'trial')} beat the project's own build by {100 * self.base.min_gain:.2f}%; "
                    "the search stops early (its time goes to the suite's other targets)"
                )
                state.stopped = True
                return
            candidate = self._candidate(trials)
            if not budget.search_open(pipeline.pending, trials, candidate):
                if len(trials) + pipeline.pending == len(self.base.restored) + 1 and budget.needed:
                    state.needed = budget.needed
                dropped = pipeline.cancel(budget.queued_fit(trials, candidate))
                under_way = pipeline.pending - dropped
                as_stream(log).info(
                    f"time box: the search stops after {plural(len(trials) - 1 + under_way, 'trial')}"
                    + (f" ({dropped} queued cancelled: the plan has no room for them)" if dropped else "")
                    + f": the rest of {budget.limit_text()} ({budget.remaining():.0f} s) is kept for "
                    + (
                        f"the finalists ({state.plan.finish.describe()})"
                        if candidate and state.plan is not None
                        else "the trials under way and the validation of what they find (no candidate yet)"
                    )
                )
                state.stopped = True
                return
            flagset = state.deferred.pop(0) if state.deferred else state.search.ask()
            if flagset is None:
                state.exhausted = True
                return
            why = state.search.proposed_by(flagset) if isinstance(state.search, FlagSearch) else None
            if why:
                as_stream(log).info(
                    f"trial {state.next_index} ({flagset.describe()}) is proposed by {why}",
                    prior=True,
                    trial=state.next_index,
                    flags=list(flagset.flags),
                )
            pipeline.submit(state.next_index, flagset, trials)
            state.next_index += 1

    def _idle(self, state: _Loop) -> bool:
        """The conveyor is empty: a win waiting is validated (and written) now, or the global search's source is
        drained and the per-file stage's proposals become the next source. Whether the loop goes on."""
        setup, log, spec = self.setup, self.log, self.setup.spec
        if state.banking is not None:
            assert self.bank is not None  # (only a bank banks a trial)
            self.bank.validate(state.banking, state.trials)
            state.banking = None
            state.plan = self._replan(state.trials, state.confirmations)
            return True
        if state.per_file_due and not state.stopped:  # the global search is over: per-file flags on top of its best
            state.per_file_due = False
            if state.exhausted:
                as_stream(log).info("every point of the flag space has been tried")
            state.exhausted = False
            state.per_file_plan = per_file.plan(
                replace(setup.per_file_context, prior=self.prior),
                setup.trees[0],
                self.executor.build,
                self.base.runner,
                state.trials,
                self._loss,
                spec.per_file_budget,
                log,
            )
            if state.per_file_plan is not None and state.per_file_plan.proposals:
                self.store.save_result("per_file", state.per_file_plan.as_dict())
                state.search = per_file.Proposals(list(state.per_file_plan.proposals))
                state.trial_budget = len(state.trials) + len(state.search)
                return True
        elif state.per_file_due and state.per_file_possible:
            as_stream(log).note("per-file stage skipped: the time limit was reached during the search")
        return False

    def _finished(self, state: _Loop, pipeline: Pipeline) -> None:
        """The conveyor's next finished trial: stored at once, told to the search, the plan and the progress
        line brought up to date; an obvious win holds the queue back for the bank."""
        spec, trials = self.setup.spec, state.trials
        done = pipeline.next()
        trial = finished_trial(done)
        if trial.status is Status.CANCELLED:  # says nothing of its flags: not stored, not told
            state.cancelled += 1
            if state.banking is not None and not self.budget.stop.reason():
                state.deferred.append(trial.flagset)
            return
        self.store.save(trial)
        trials[trial.flagset.key] = trial
        self.store.save_result(BOX_RESULT, self.budget.record())
        state.search.tell(trial.flagset, self._loss(trial))
        if state.acf is not None and isinstance(state.search, FlagSearch):
            state.acf.after(state.search, trials, self._loss)
        state.plan = self._replan(trials, state.confirmations)
        progress(
            self.setup,
            self.log,
            trial,
            self.base.base_of(trial),
            trials,
            self.started,
            pipeline.in_flight.describe(),
            state.trial_budget + (spec.per_file_budget if state.per_file_due and state.per_file_possible else 0),
            budget=self.budget,
        )
        state.overhead += done.driver_seconds
        for step, seconds in done.build.steps:
            state.step_seconds[step] = state.step_seconds.get(step, 0.0) + seconds
        state.loop_trials += 1
        if self.bank is not None and state.banking is None and not state.stopped and self.bank.due(trial, trials):
            state.banking = trial
            held = pipeline.cancel(0)
            if held:
                as_stream(self.log).info(f"bank: {plural(held, 'queued trial')} held back until the win is validated")

    def _said(self, trials: dict[str, Trial], timings: LoopTimings) -> None:
        """The search's stage result: trials, valid ones, seconds and the best before validation."""
        valid = [t for t in trials.values() if t.valid]
        best = min(valid, key=self._loss) if valid else None
        speedup = math.exp(-self._loss(best)) if best is not None else None
        as_stream(self.log).stage_result(
            "search",
            f"search: {plural(len(trials), 'trial')} ({len(valid)} valid) in {timings.search_seconds:.1f} s"
            + (
                f"; best {speedup:.3f}x before validation ({best.flagset.describe()})"
                if best is not None and not best.flagset.is_baseline
                else "; only the project's own build was measured"
                if len(trials) <= 1
                else "; none was faster than the project's own build"
            ),
            trials=len(trials),
            valid=len(valid),
            seconds=timings.search_seconds,
            best=list(best.flagset.flags) if best is not None else None,
            speedup=speedup,
        )


@dataclass
class _Loop:
    """The search loop's own state while it runs (mutable; one per run): the trials, the source of proposals
    (the global search, then the per-file stage's proposals) and how many it may give, the loop's flags and
    counters."""

    trials: dict[str, Trial]
    search: FlagSearch | per_file.Proposals
    trial_budget: int
    next_index: int
    confirmations: int
    per_file_due: bool = False
    per_file_possible: bool = False
    plan: Plan | None = None
    exhausted: bool = False
    stopped: bool = False
    needed: float = 0.0
    cancelled: int = 0
    loop_trials: int = 0
    overhead: float = 0.0
    step_seconds: dict[str, float] = field(default_factory=dict)
    per_file_plan: per_file.Plan | None = None
    deferred: list[FlagSet] = field(default_factory=list)  # asked, then cancelled for a bank's validation: first again
    banking: Trial | None = None  # an obvious win waiting for the conveyor to drain, then validated
    acf: AcfEngine | None = None  # the ACF candidate source's own engine, asked when its candidates are measured


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
                as_stream(log).info(
                    f"warm start from {entry.target}: {plural(len(entry.flags) - len(known), 'flag')} outside this "
                    "space ignored"
                )
    if seeds:
        as_stream(log).info(
            f"warm start: {plural(len(seeds), 'flag set')} from earlier tunes {'is' if len(seeds) == 1 else 'are'} "
            "tried first"
        )
    return tuple(dict.fromkeys(seeds))
