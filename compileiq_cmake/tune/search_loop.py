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
from ..model.timebox import TimeBox
from ..model.records import BuildResult, FlagSet, Trial
from ..model.wording import plural
from ..project.cmake_project import VariantTree
from ..results.toml_io import read_entries
from ..results.store import TrialStore
from ..search import per_file
from ..search.prior import SpacePrior
from ..search.search import FlagSearch
from .baseline import Baselines
from .lines import progress
from .plan import Plan, finish_reserve, plan_tune, tune_costs
from .setup import FINALISTS, TuneSetup
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
    """The search loop of one tune, after its baselines: `run()` returns the trials and timings."""

    setup: TuneSetup
    executor: Executor
    store: TrialStore
    log: Log
    started: float  # the tune's start (perf_counter): the time limit and the ETA count from it
    base: Baselines
    box: TimeBox | None = None  # the whole tune's time box (None or unbounded: no limit)
    prior: SpacePrior | None = None  # the learned prior's predictions (tune/prior_use.py); None: --no-prior

    def run(self) -> SearchOutcome:
        setup, executor, store, log, base, started = self.setup, self.executor, self.store, self.log, self.base, self.started
        spec = setup.spec
        lower = spec.metric.lower_is_better
        base_of = base.base_of
        runner, runners, references, noise = base.runner, base.runners, base.references, base.noise
        trials: dict[str, Trial] = {base.baseline.flagset.key: base.baseline, **base.restored}
        search = FlagSearch(setup.space, spec.budget, spec.seed, spec.workers, warm_start=warm_start(setup, log),
                            prior=self.prior)
        for trial in trials.values():
            search.tell(trial.flagset, loss(trial, base_of(trial), lower))
        box = self.box if self.box is not None and self.box.bounded else None
        confirmations = max(0, len(runners) - 1)

        def costs_of(known: dict[str, Trial]):
            return tune_costs(known.values(), spec, len(runners), paired=bool(references))

        def replan() -> Plan | None:
            """The plan from now, with the costs the trials so far measured (None without a time box)."""
            if box is None:
                return None
            costs = costs_of(trials)
            best = min(trials.values(), key=lambda t: loss(t, base_of(t), lower))
            steps = len(best.flagset.choices) or min(3, len(setup.space.dimensions))
            return plan_tune(spec.time_limit, box.elapsed(), costs, FINALISTS, spec.min_rounds, steps, confirmations,
                             reserve)

        reserve = finish_reserve(spec.time_limit, box.elapsed()) if box is not None else None
        plan = replan()
        if plan is not None:
            log(f"compileiq: {plan.describe()}")
        progress(setup, log, base.baseline, base.baseline, trials, started, plan=plan)

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
            may_extend = None
            if box is not None:  # more runs only while they leave the finalists' planned time
                may_extend = lambda seconds: plan is None or box.fits(seconds, plan.finish.seconds)  # noqa: E731
            return measure_more_if_promising(on, setup, tree, trial, base_of, known, floor, reference, may_extend)

        needed = 0.0
        step_seconds: dict[str, float] = {}
        overhead = 0.0
        loop_trials = 0
        loop_started = time.perf_counter()
        measuring = list(runners.values()) if len(runners) > 1 else [runner]
        per_file_plan: per_file.Plan | None = None
        with Pipeline(setup.trees[:spec.workers], executor.build, measuring, measure, log) as pipeline:
            exhausted = stopped = False
            per_file_due = spec.per_file_budget > 0
            per_file_possible = per_file_due and setup.language == "CUDA" and len(setup.target.sources_in("CUDA")) > 1
            budget = spec.budget
            next_index = len(trials)
            while True:
                ahead = lookahead(trials.values(), len(measuring), spec.workers)  # asks as late as the GPUs allow
                while not (exhausted or stopped) and pipeline.has_free_tree and pipeline.pending < ahead \
                        and len(trials) + pipeline.pending < budget:
                    if nothing_to_gain(spec.flat_stop, self.prior, trials.values(), base, lower):
                        log(f"compileiq: suite: nothing to gain: the prior predicted no value faster and none of "
                            f"{plural(len(trials), 'trial')} beat the project's own build by {100 * base.min_gain:.2f}%; "
                            "the search stops early (its time goes to the suite's other targets)")
                        stopped = True
                        break
                    if plan is not None and not plan.search_open(pipeline.pending, costs_of(trials)):
                        if len(trials) + pipeline.pending == len(base.restored) + 1 and not plan.search_trials:
                            needed = plan.needed
                        log(f"compileiq: time box: the search stops after {plural(len(trials) - 1 + pipeline.pending, 'trial')}: "
                            f"the rest of --time-limit {spec.time_limit:g} s ({box.remaining():.0f} s) is kept for "
                            f"the finalists ({plan.finish.describe()})")
                        stopped = True
                        break
                    flagset = search.ask()
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
                            budget = len(trials) + len(search)
                            exhausted = False
                            continue
                        exhausted = False  # said above
                    elif per_file_due and per_file_possible:
                        log("compileiq: note: per-file stage skipped: the time limit was reached during the search")
                    break
                done = pipeline.next()
                trial = finished_trial(done)
                store.save(trial)
                trials[trial.flagset.key] = trial
                search.tell(trial.flagset, loss(trial, base_of(trial), lower))
                plan = replan()
                progress(setup, log, trial, base_of(trial), trials, started, pipeline.in_flight.describe(),
                         budget + (spec.per_file_budget if per_file_due and per_file_possible else 0), plan=plan)
                overhead += done.driver_seconds
                for step, seconds in done.build.steps:
                    step_seconds[step] = step_seconds.get(step, 0.0) + seconds
                loop_trials += 1
            if exhausted and not isinstance(search, per_file.Proposals):
                log("compileiq: every point of the flag space has been tried")
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
            if entry.language != setup.language:
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
