"""Tune stage, the baseline: the project's own build measured (or restored from the store) on the first GPU,
at the same time on every other GPU (each trial is compared with the baseline of the GPU it ran on), checked
(it passes; an output comparison compares something), and what follows from it: the noise of its runs, the
smallest gain that counts, and on a noisy machine the reference trees measured next to every trial."""

from __future__ import annotations

import math
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace

from ..decide.racing import cold_first_run
from ..decide.stats import auto_min_gain, coarse_metric_warning, relative_spread
from ..execute.executor import Executor
from ..measure.runner import Runner
from ..model.errors import CompileIQError
from ..model.events import Log, as_stream
from ..model.records import BuildResult, FlagSet, Status, Trial
from ..model.spec import TuneSpec
from ..model.timebox import Interrupted
from ..model.wording import plural
from ..project.cmake_project import VariantTree
from ..results.store import TrialStore
from .budget import Budget
from .trial import baseline_error, reference_trees, run_trial
from .tune_setup import TuneSetup


@dataclass(frozen=True)
class Baselines:
    """The baseline stage's outcome: the first GPU's baseline and every GPU's (empty with one GPU), the
    trials restored from the store (a resume), the runners (the first GPU's measures the baseline, the
    validation and the ablation), the noise and smallest gain that counts, and the reference trees (per GPU,
    empty on a quiet machine)."""

    baseline: Trial
    per_gpu: dict[str, Trial]
    restored: dict[str, Trial]
    runner: Runner
    runners: dict[str, Runner]
    noise: float
    min_gain: float
    references: dict[str, VariantTree]
    warmup: int  # the search trials' warm-up runs (search_warmup: the spec's, or 0 when a first run is not cold)

    def of_gpu(self, device: str) -> Trial:
        """The baseline measured on the GPU `device` ("": the one GPU, or no GPU)."""
        return self.per_gpu.get(device, self.baseline)

    def base_of(self, trial: Trial) -> Trial:
        """The baseline a trial is compared with: the one measured on the GPU it ran on."""
        return self.of_gpu(trial.gpu)


@dataclass(frozen=True)
class Baseline:
    """The baseline stage of one tune: `run()` measures or restores it and returns Baselines."""

    setup: TuneSetup
    executor: Executor
    store: TrialStore
    log: Log
    budget: Budget | None = None  # the tune's seconds: the first run prices the rest (None: no box)

    def run(self) -> Baselines:
        with ExitStack() as resources:  # the other GPUs' pool is closed on every path, also when a step raises
            return self._run(resources)

    def _run(self, resources: ExitStack) -> Baselines:
        setup, executor, store, log = self.setup, self.executor, self.store, self.log
        spec = setup.spec
        runner = executor.runner
        runners = executor.gpu_runners() if setup.devices.gpus else {}
        if runners:  # the baseline, validation and ablation run on the first GPU
            runner = runners[setup.devices.gpus[0].device]
        restored = self._restored()
        baseline_set = setup.space.baseline()
        baseline = restored.get(baseline_set.key)
        early: dict[str, Future] = {}  # the other GPUs' baselines, measured while the first GPU measures its own
        others = (
            resources.enter_context(ThreadPoolExecutor(len(runners) - 1, thread_name_prefix="compileiq-baseline"))
            if len(runners) > 1
            else None
        )
        if baseline is None:
            baseline, early = self._measured(baseline_set, runner, runners, others)
            store.save(baseline)
        elif not baseline.valid:
            raise baseline_error(baseline, setup)
        check_comparison(spec, baseline)
        runner.reference.update({m.workload: m.numbers for m in baseline.measurements})
        noise = max(relative_spread(m.samples) for m in baseline.measurements)
        min_gain = spec.min_gain if spec.min_gain is not None else auto_min_gain(noise)
        as_stream(log).stage_result(
            "baseline",
            f"baseline noise (robust spread of {plural(spec.repeats, 'run')} per workload): {100 * noise:.2f}%; "
            "smallest gain that counts: "
            f"{100 * min_gain:.2f}%{'' if spec.min_gain is not None else ' (from the noise)'}",
            medians=list(baseline.medians()),
            noise=noise,
            min_gain=min_gain,
            restored=len(restored),
        )
        first = baseline.measurements[0]
        coarse = coarse_metric_warning(list(first.samples), min_gain)
        if coarse:
            as_stream(log).warning(f"{coarse}")
        references = reference_trees(setup, executor.build, baseline_set, noise, list(runners) or [""], log)
        per_gpu: dict[str, Trial] = {}
        if len(runners) > 1:
            try:
                per_gpu = other_baselines(setup, runners, baseline, log, early)
            finally:
                assert others is not None  # (made for more than one runner)
                others.shutdown(wait=True)
            baseline = per_gpu[setup.devices.gpus[0].device]
        warmup = search_warmup(spec, baseline, noise, log)
        return Baselines(baseline, per_gpu, restored, runner, runners, noise, min_gain, references, warmup)

    def _restored(self) -> dict[str, Trial]:
        """The trials of an earlier run of this tune, by flag-set key (said when there are any)."""
        store, log = self.store, self.log
        restored = {t.flagset.key: t for t in store.load()}
        if store.skipped_rows:
            as_stream(log).warning(
                f"{plural(store.skipped_rows, 'row')} of {store.path} are not trials (edited or "
                "damaged by something else): left out, their trials are measured again"
            )
        if restored:
            as_stream(log).info(f"resuming: {plural(len(restored), 'finished trial')} restored from {store.path}")
        return restored

    def _measured(
        self, baseline_set: FlagSet, runner: Runner, runners: dict[str, Runner], others: ThreadPoolExecutor | None
    ) -> tuple[Trial, dict[str, Future[Trial]]]:
        """The project's own build, built and measured on the first GPU (the other GPUs' baselines started on
        `others` meanwhile); raises when it is interrupted, cut by the box, or not valid."""
        setup, log = self.setup, self.log
        tree = setup.baseline_tree  # (a suite's target: its one baseline build; the build here does nothing)
        built = self.executor.build(tree, baseline_set)
        early: dict[str, Future[Trial]] = {}
        # (a benchmark that writes its --compare-file into the tree cannot run there on two GPUs at once: the
        # other GPUs' baselines then come after the first's, one after another, in other_baselines)
        if others is not None and built.ok and setup.spec.compare_file is None:
            early = {
                g.device: others.submit(
                    run_trial,
                    runners[g.device],
                    setup,
                    tree,
                    0,
                    baseline_set,
                    BuildResult(ok=True, seconds=0.0),
                    None,
                    log,
                )
                for g in setup.devices.gpus[1:]
            }
        check = self.budget.first_run_check(built.seconds) if self.budget is not None else None
        baseline = run_trial(runner, setup, tree, 0, baseline_set, built, log=log, after_first=check)
        if baseline.status is Status.CANCELLED or built.cancelled:  # interrupted, or the box ended its runs
            if others is not None:
                others.shutdown(wait=True)
            if self.budget is None:
                raise Interrupted(baseline.reason)
            self.budget.check()
            raise self.budget.too_short(baseline)
        if not baseline.valid:
            if others is not None:
                others.shutdown(wait=True)
            raise baseline_error(baseline, setup)
        return baseline, early


def check_comparison(spec: TuneSpec, baseline: Trial) -> None:
    """An output comparison that compares nothing is no check: the baseline's output must match
    --compare-output and yield numbers (--compare-file: the baseline must write it, with numbers)."""
    if not (spec.compare_output or spec.compare_file):
        return
    empty = [" ".join(m.workload) or "(default)" for m in baseline.measurements if not m.numbers]
    if empty:
        what = (
            f"--compare-output {spec.compare_output!r} matched no line with numbers in"
            if spec.compare_output
            else f"--compare-file {spec.compare_file} holds no numbers after"
        )
        raise CompileIQError(
            f"{what} the output of the project's own build (workload {empty[0]}); nothing would be "
            "compared: fix the regex or the file name"
        )


def other_baselines(
    setup: TuneSetup, runners: dict[str, Runner], baseline: Trial, log: Log, early: dict[str, Future] | None = None
) -> dict[str, Trial]:
    """The baseline measured on every other GPU too (GPUs of one model differ by a few percent): each trial is
    compared with the baseline of the GPU it ran on. The first GPU's is the stored one. `early`: those
    measured already, at the same time as the first GPU's (the same build, one run per GPU at a time)."""
    first = setup.devices.gpus[0].device
    baselines = {first: replace(baseline, gpu=first)}
    built = BuildResult(ok=True, seconds=0.0)
    for g in setup.devices.gpus[1:]:
        measured = (
            early[g.device].result()
            if early and g.device in early
            else run_trial(runners[g.device], setup, setup.baseline_tree, 0, baseline.flagset, built, None, log)
        )
        other = replace(measured, gpu=g.device)
        if not other.valid:
            raise CompileIQError(
                f"the project's own build does not pass on {g.describe()}: {other.reason}; "
                "leave that GPU out with --gpus"
            )
        ratio = " / ".join(f"{o / b:.4f}" for o, b in zip(other.medians(), baseline.medians(), strict=False))
        as_stream(log).info(
            f"baseline on {g.describe()}: {' / '.join(f'{m:.4g}' for m in other.medians())} "
            f"({ratio} of GPU {first}'s); each trial is compared with the baseline of the GPU it ran on"
        )
        baselines[g.device] = other
    return baselines


def search_warmup(spec: TuneSpec, baseline: Trial, noise: float, log: Log) -> int:
    """The search trials' warm-up runs: the spec's, unless racing is on and the project's own build, measured
    after its build as every trial is, showed a first run no slower than its others (decide.racing.
    cold_first_run) on every workload; then none. Said once. Validation and ablation keep their warm-up round."""
    if not spec.warmup or not spec.race:
        return spec.warmup
    pairs = list(zip(baseline.warm, baseline.measurements, strict=False))
    cold = [cold_first_run(w, m.samples, noise, spec.lower_is_better) for w, m in pairs]
    if len(pairs) != len(baseline.measurements) or any(c is not None and math.isnan(c) for c in cold):
        return spec.warmup  # not known (restored from the store): kept
    worst = max((c for c in cold if c is not None), default=None)
    if worst is not None:
        as_stream(log).info(
            f"warm-up: the project's first run after a build was {100 * worst:.1f}% slower than its others: "
            f"search trials keep {plural(spec.warmup, 'warm-up run')}"
        )
        return spec.warmup
    as_stream(log).info(
        "warm-up: the project's first run after a build measured like its others (within the noise): search "
        "trials run without a warm-up run (validation keeps its warm-up round)"
    )
    return 0
