"""Measuring one variant tree: the benchmark command mapped into the tree, every validity check of a run
(exit status, PASS_REGEX, metric, output comparison with the baseline, VERIFY), warm-up runs, and the GPU
state around the runs."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from ..model.errors import CommandFailure, write_log
from ..model.records import Measurement, Status
from ..model.spec import TuneSpec
from ..model.timebox import Stop
from ..project.cmake_project import VariantTree
from .bench import RunOutcome, run_benchmark, run_verify
from .energy import EnergyMeter, measure_run
from .gpu import GpuMonitor, GpuSlot
from .numerics import extract_numbers, numerics_changed, read_file_numbers
from .runs import BenchCommand, RaceLook, RunResult, TrialMeasurement, Workload, WorkloadRuns
from .shared_reference import ReferenceRuns


def _exit_code(outcome: RunOutcome) -> int | None:
    """The exit status of a failed run as bench.py words it ("exit code 3", "killed by signal 9": -9); None
    when it did not exit by itself (timed out, stopped) or exited 0 (metric or PASS_REGEX missing)."""
    code = re.search(r"exit code (-?\d+)", outcome.reason)
    signal = re.search(r"killed by signal (\d+)", outcome.reason)
    return int(code.group(1)) if code else -int(signal.group(1)) if signal else None


class RunLease(Protocol):
    """A hold on the device a run uses, shared with other tunes (execute.shared.Lease: a suite's targets)."""

    def run(self, device: str) -> AbstractContextManager: ...

    def started(self, device: str) -> int: ...


@dataclass
class Runner:
    """Runs the benchmark of one tune. `reference` holds, per workload, the numbers the baseline build
    printed; runs of other builds must reproduce them within rtol/atol."""

    spec: TuneSpec
    bench: BenchCommand
    monitor: GpuMonitor | None = None
    reference: dict[Workload, tuple[float, ...]] = field(default_factory=dict)
    pid_file: Path | None = None  # records the running benchmark for bench.kill_leftovers
    gpu: GpuSlot | None = None  # the GPU its runs use (CUDA_VISIBLE_DEVICES); None: the process's own
    extra_env: tuple[tuple[str, str], ...] = ()  # e.g. the CUPTI collector of kernel_times
    lease: RunLease | None = None  # each run holds its device's slot (a suite's tunes share the GPUs)
    stop: Stop | None = None  # the tune's stop token: a run under way when it is set (or the box ends) is killed
    meter: EnergyMeter | None = None  # the GPU's energy counter, read around each run (None: energy not measured)
    # the baseline runs a trial may share with the one measured before it on its GPU (kept by every copy)
    shared: ReferenceRuns = field(default_factory=ReferenceRuns)

    @property
    def _device(self) -> str:
        return self.gpu.device if self.gpu is not None else ""

    @contextmanager
    def holding(self) -> Iterator[None]:
        """The device's slot for one run (nothing to hold outside a suite), the run counted once it holds it (a
        suite's lease counts every tune's runs; measure.shared_reference)."""
        device = self._device
        with self.lease.run(device) if self.lease is not None else nullcontext():
            count = self.lease.started(device) if self.lease is not None else self.shared.count_start(device)
            self.shared.began(device, count)
            yield

    @property
    def env(self) -> dict[str, str] | None:
        env = dict(self.extra_env)
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu.device
        return env or None

    def with_env(self, env: dict[str, str]) -> Runner:
        """The same runner, its runs with `env` added to their environment."""
        return replace(self, extra_env=tuple(sorted(env.items())))

    def on_gpu(
        self, gpu: GpuSlot, pid_file: Path | None, monitor: GpuMonitor | None, meter: EnergyMeter | None = None
    ) -> Runner:
        """The same runner (same reference numbers) for runs on one GPU of several."""
        return replace(self, gpu=gpu, pid_file=pid_file, monitor=monitor, meter=meter)

    @property
    def compares(self) -> bool:
        return bool(self.spec.compare_output or self.spec.compare_file)

    def _failure(self, tree: VariantTree, step: str, argv: list[str], outcome: RunOutcome) -> CommandFailure:
        """A failed benchmark or VERIFY run, its whole output kept in <build>/compileiq/logs/<tree>-<step>.log
        (one log per GPU when several run in the same tree): the last failed run there."""
        log = write_log(
            tree.log_path(step + (f"-gpu{self.gpu.device}" if self.gpu is not None else "")), argv, outcome.output
        )
        code = _exit_code(outcome)
        what = "the VERIFY command" if step == "verify" else "the benchmark"
        return CommandFailure(
            f"{what} '{shlex.join(argv)}' in the variant tree {tree.path.name}",
            tuple(argv),
            code,
            outcome.last_line(),
            log,
            "" if code is not None else outcome.reason,
        )

    def _compare_file(self, tree: VariantTree) -> Path | None:
        return tree.path / self.spec.compare_file if self.spec.compare_file else None

    def run(self, tree: VariantTree, workload: Workload) -> RunResult:
        """One run in the tree; every check of its validity. The --compare-file is removed first, so that a
        run that does not write it is never compared with an earlier run's."""
        spec = self.spec
        where = f" with '{' '.join(workload)}'" if workload else ""
        compare_file = self._compare_file(tree)
        if compare_file is not None:
            try:
                compare_file.unlink(missing_ok=True)
            except OSError as exc:
                return RunResult(Status.RUN_FAILED, f"cannot remove {spec.compare_file} before the run: {exc}")
        argv = self.bench.for_tree(tree, workload)
        outcome, joules = self._benchmark(tree, argv)
        if outcome.status is Status.CANCELLED:  # says nothing of the build: no failure log
            return RunResult(Status.CANCELLED, outcome.reason, seconds=outcome.seconds)
        if outcome.status is not Status.OK:
            return RunResult(
                outcome.status,
                f"{outcome.reason}{where}; last output line: {outcome.last_line()}",
                seconds=outcome.seconds,
                warnings=outcome.warnings,
                failure=self._failure(tree, "benchmark", argv, outcome),
            )
        numbers: tuple[float, ...] = ()
        if spec.compare_output:
            numbers = extract_numbers(outcome.output, spec.compare_output)
        elif compare_file is not None:
            found = read_file_numbers(compare_file)
            if not isinstance(found, tuple):
                return RunResult(
                    Status.NUMERICS_CHANGED,
                    f"did not write {spec.compare_file}{where}" if found is None else f"{found}{where}",
                    seconds=outcome.seconds,
                    warnings=outcome.warnings,
                )
            numbers = found
        return self._checked(workload, where, outcome, joules, numbers)

    def _benchmark(self, tree: VariantTree, argv: list[str]) -> tuple[RunOutcome, float | None]:
        """The benchmark run once (with the energy objective: once more when the counter could not be read), and
        the joules it used (None: not measured)."""
        spec = self.spec
        energy = spec.objective == "energy"
        for _attempt in range(2 if energy else 1):  # a counter that could not be read: the run once more
            with self.holding():  # the energy counter is read while the run holds its GPU
                outcome, joules, waited = measure_run(
                    self.meter,
                    lambda: run_benchmark(
                        argv, tree.path, spec.metric, spec.pass_regex, spec.timeout, self.pid_file, self.env, self.stop
                    ),
                    aligned=energy,
                )
            outcome = replace(outcome, seconds=outcome.seconds + waited) if waited else outcome
            if joules is not None or outcome.status is not Status.OK:
                break
        return outcome, joules

    def _checked(
        self, workload: Workload, where: str, outcome: RunOutcome, joules: float | None, numbers: tuple[float, ...]
    ) -> RunResult:
        """A run that passed, checked: its numbers against the reference's, its energy read; the result."""
        spec = self.spec
        reference = self.reference.get(workload)
        if self.compares and reference is not None:
            changed = numerics_changed(reference, numbers, spec.rtol, spec.atol)
            if changed:
                return RunResult(
                    Status.NUMERICS_CHANGED, changed + where, seconds=outcome.seconds, warnings=outcome.warnings
                )
        state = self.monitor.sample() if self.monitor else None
        value = outcome.value
        if spec.objective == "energy":
            if joules is None:
                return RunResult(
                    Status.METRIC_MISSING,
                    f"the GPU's energy counter could not be read around the "
                    f"run{where} (twice): {self.meter.describe() if self.meter else 'no counter'}",
                    seconds=outcome.seconds,
                    warnings=outcome.warnings,
                )
            value = joules
        return RunResult(
            Status.OK,
            "",
            value,
            outcome.seconds,
            numbers,
            outcome.printed,
            bool(state and state.throttled),
            outcome.warnings,
            joules=joules,
            metric=outcome.value,
        )

    def _paired_samples(
        self,
        tree: VariantTree,
        workload: Workload,
        repeats: int,
        reference: VariantTree | None,
        runs: WorkloadRuns,
        warnings: dict[str, None],
    ) -> tuple[RunResult | None, float, bool, tuple[float, ...]]:
        """`repeats` more runs of `tree` added to `runs` (and, when `reference` is given, a run of the baseline
        build in it next to each, alternating which goes first, added to its paired values); the runs'
        warnings are added to `warnings` (an ordered set). With racing on, a new trial's first run may be paired
        with the baseline run just before it on the GPU (measure.shared_reference), and each unshared trial
        starts with its own run, so that a trial of one or three pairs ends with a baseline run the next may share.
        Returns (the first failed run or None, seconds, throttled, numbers printed by the first run)."""
        seconds, throttled, numbers = 0.0, False, None
        start = len(runs.samples)
        for i in range(repeats):
            pair = start + i
            for which in self._pair_order(tree, pair, reference):
                res = self.run(which, workload)
                seconds += res.seconds
                warnings.update(dict.fromkeys(res.warnings))
                if not res.ok:
                    if which is reference:
                        res = RunResult(
                            Status.RUN_FAILED,
                            f"the project's own build failed next to this trial: {res.reason}",
                            seconds=res.seconds,
                            failure=res.failure,
                        )
                    return res, seconds, throttled, ()
                throttled = throttled or res.throttled
                assert res.value is not None  # (a valid run)
                if which is reference:
                    runs.paired.append(res.value)
                    if self.spec.race:
                        self.shared.keep(self._device, which.path, workload, res.value, res.seconds)
                    continue
                runs.add(res)
                numbers = res.numbers if numbers is None else numbers
                shared = self._shared_before(reference, workload) if pair == 0 else None
                if shared is not None:  # the pair is whole: the baseline run just before this one
                    runs.paired.append(shared)
                    runs.shared += 1
                    break
        return None, seconds, throttled, numbers or ()

    def _shared_before(self, reference: VariantTree | None, workload: Workload) -> float | None:
        """The baseline run just before a trial's first run (just made), when it may pair with it (racing only)."""
        if reference is None or not self.spec.race:
            return None
        return self.shared.take(self._device, reference.path, workload)

    def _pair_order(self, tree: VariantTree, pair: int, reference: VariantTree | None) -> list[VariantTree]:
        """The runs of a trial's pair `pair` in their order. With racing a trial starts with its own run (whose
        pair may then take the baseline run before it instead of the one after)."""
        if reference is None:
            return [tree]
        if not self.spec.race:  # as before racing: the baseline first in even pairs
            return [reference, tree] if pair % 2 == 0 else [tree, reference]
        return [tree, reference] if pair % 2 == 0 else [reference, tree]

    def measure(
        self,
        tree: VariantTree,
        repeats: int,
        warmup: int,
        reference: VariantTree | None = None,
        after_first: Callable[[float], None] | None = None,
        race: RaceLook | None = None,
    ) -> TrialMeasurement:
        """Every workload: `warmup` discarded runs, then `repeats` measured ones (each next to a run of the
        baseline build in `reference`, when given); VERIFY at the end. The first invalid run ends the
        measurement with its reason. `after_first(seconds)`: called after the very first run with its
        seconds (the time box's check that the runs fit; it may raise). `race(measurements, rounds)`: the
        runs go in rounds of one per workload, and after each round a non-empty answer (its reason) stops the
        runs (the trial keeps what it has; TrialMeasurement.stopped); without it each workload's runs come
        together, as before racing."""
        seconds, warnings = 0.0, {}
        workloads = list(self.spec.workloads)
        runs = {w: WorkloadRuns() for w in workloads}
        firsts: dict[Workload, tuple[float, ...] | None] = dict.fromkeys(workloads)
        hot = dict.fromkeys(workloads, False)
        warm: dict[Workload, float] = {}  # each workload's first warm-up run's value
        batches = [1] * repeats if race is not None else [repeats]
        stopped = ""
        last = self.shared.last_workload(self._device) if reference is not None and self.spec.race else None
        turn = workloads.index(last) if last in workloads else 0  # first the workload whose baseline run may be shared
        for done, batch in enumerate(batches, start=1):
            for workload in workloads[turn:] + workloads[:turn]:
                if done == 1 and warmup:
                    bad, spent, numbers = self._warmups(tree, workload, warmup, after_first if not seconds else None)
                    seconds += spent
                    warnings.update(dict.fromkeys(w for r in bad for w in r.warnings))
                    if bad and not bad[-1].ok:
                        res = bad[-1]
                        return TrialMeasurement(res.status, res.reason, (), seconds, tuple(warnings), res.failure)
                    firsts[workload] = numbers
                    warm[workload] = bad[0].value if bad[0].value is not None else math.nan
                failed, more, throttled, first = self._paired_samples(
                    tree, workload, batch, reference, runs[workload], warnings
                )
                seconds += more
                if failed is not None:
                    return TrialMeasurement(failed.status, failed.reason, (), seconds, tuple(warnings), failed.failure)
                hot[workload] = hot[workload] or throttled
                firsts[workload] = first if firsts[workload] is None else firsts[workload]
            if race is not None and done < len(batches):
                stopped = race(self._measurements(runs, hot, firsts), done)
                if stopped:
                    break
        verify_failed, spent = self._verify(tree)
        if verify_failed is not None:
            return replace(verify_failed, seconds=seconds + spent, warnings=tuple(warnings))
        measurements = self._measurements(runs, hot, firsts)
        warmed = tuple(warm[w] for w in workloads) if len(warm) == len(workloads) else ()
        return TrialMeasurement(Status.OK, "", measurements, seconds + spent, tuple(warnings), None, stopped, warmed)

    def _warmups(
        self, tree: VariantTree, workload: Workload, warmup: int, after_first: Callable[[float], None] | None
    ) -> tuple[list[RunResult], float, tuple[float, ...] | None]:
        """`warmup` discarded runs of the workload (`after_first`: called after the first with its seconds); the
        first failed run ends them (the last returned). Returns (the runs, seconds, the first's numbers)."""
        done: list[RunResult] = []
        seconds = 0.0
        for _ in range(warmup):
            res = self.run(tree, workload)
            if after_first is not None and not done and res.ok:
                after_first(res.seconds)
            done.append(res)
            seconds += res.seconds
            if not res.ok:
                break
        return done, seconds, done[0].numbers if done and done[0].ok else None

    def _verify(self, tree: VariantTree) -> tuple[TrialMeasurement | None, float]:
        """VERIFY in the tree when the tune has one: (the failed measurement or None, seconds)."""
        if not self.spec.verify:
            return None, 0.0
        argv = self.bench.verify_for_tree(tree)
        with self.holding():
            outcome = run_verify(argv, tree.path, self.spec.timeout, self.pid_file, self.env, self.stop)
        if outcome.status is Status.OK:
            return None, outcome.seconds
        failure = self._failure(tree, "verify", argv, outcome)
        return TrialMeasurement(outcome.status, outcome.reason, (), outcome.seconds, (), failure), outcome.seconds

    def _measurements(
        self,
        runs: dict[Workload, WorkloadRuns],
        hot: dict[Workload, bool],
        firsts: dict[Workload, tuple[float, ...] | None],
    ) -> tuple[Measurement, ...]:
        energy = self.spec.objective == "energy"
        return tuple(r.measurement(w, hot[w], firsts[w] or (), energy) for w, r in runs.items())

    def extend(
        self,
        tree: VariantTree,
        measurements: tuple[Measurement, ...],
        repeats: int,
        reference: VariantTree | None = None,
    ) -> TrialMeasurement:
        """More samples for an already valid trial (same build still in the tree), paired again with the
        baseline build in `reference` when the trial's samples are paired."""
        seconds, out = 0.0, []
        warnings: dict[str, None] = {}
        for m in measurements:
            runs = WorkloadRuns.of(m)
            failed, more, hot, _ = self._paired_samples(
                tree, m.workload, repeats, reference if m.paired else None, runs, warnings
            )
            seconds += more
            if failed is not None:
                return TrialMeasurement(failed.status, failed.reason, (), seconds, tuple(warnings), failed.failure)
            out.append(runs.measurement(m.workload, m.throttled or hot, m.numbers, self.spec.objective == "energy"))
        return TrialMeasurement(Status.OK, "", tuple(out), seconds, tuple(warnings))
