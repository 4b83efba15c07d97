"""Measuring one variant tree: the benchmark command mapped into the tree, every validity check of a run
(exit status, PASS_REGEX, metric, output comparison with the baseline, VERIFY), warm-up runs, and the GPU
state around the runs."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
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

Workload = tuple[str, ...]


@dataclass(frozen=True)
class BenchCommand:
    """The benchmark (and VERIFY) command, with paths of the user's build tree mapped into a variant tree."""

    argv: tuple[str, ...]
    verify: tuple[str, ...]
    user_build_dir: Path

    def _map(self, arg: str, tree: VariantTree) -> str:
        prefix = str(self.user_build_dir)
        if arg == prefix or arg.startswith(prefix + "/"):
            return str(tree.path) + arg[len(prefix) :]
        return arg

    def for_tree(self, tree: VariantTree, workload: Workload) -> list[str]:
        return [self._map(a, tree) for a in self.argv] + list(workload)

    def verify_for_tree(self, tree: VariantTree) -> list[str]:
        return [self._map(a, tree) for a in self.verify]

    def relative(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """argv with paths in the user's build tree made relative to it ("./bin/nbody"), as an entry records
        the command: every run has its tree as the working directory, so it runs in any tree of the project."""
        prefix = str(self.user_build_dir)
        return tuple(
            "./" + a[len(prefix) + 1 :] if a.startswith(prefix + "/") else "." if a == prefix else a for a in argv
        )


@dataclass(frozen=True)
class RunResult:
    status: Status
    reason: str
    value: float | None = None
    seconds: float = 0.0
    numbers: tuple[float, ...] = ()
    printed: str = ""  # the metric as the program printed it (regex metrics)
    throttled: bool = False
    warnings: tuple[str, ...] = ()  # e.g. the metric printed with different values; same text every run
    failure: CommandFailure | None = None  # a failed run: its command, exit status and the log of its output
    joules: float | None = None  # the GPU's energy over the run (None: not measured)
    metric: float | None = None  # the program's metric (= value unless the objective is energy)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


@dataclass
class _Runs:
    """What the measured runs of one workload gave: the objective's values, the paired baseline's, and the
    co-objectives of each candidate run (energy, the metric)."""

    samples: list[float] = field(default_factory=list)
    paired: list[float] = field(default_factory=list)
    joules: list[float | None] = field(default_factory=list)
    metric: list[float] = field(default_factory=list)

    def add(self, res: RunResult) -> None:
        assert res.value is not None  # (only valid runs are added)
        self.samples.append(res.value)
        self.joules.append(res.joules)
        self.metric.append(res.metric if res.metric is not None else res.value)

    def measurement(
        self, workload: Workload, throttled: bool, numbers: tuple[float, ...], energy_objective: bool
    ) -> Measurement:
        joules = tuple(j for j in self.joules if j is not None)
        joules = joules if self.joules and len(joules) == len(self.joules) else ()
        return Measurement(
            workload,
            tuple(self.samples),
            throttled,
            numbers,
            tuple(self.paired),
            joules,
            tuple(self.metric) if energy_objective else (),
        )

    @staticmethod
    def of(m: Measurement) -> _Runs:
        return _Runs(
            list(m.samples),
            list(m.reference),
            list(m.joules) if m.joules else [None] * len(m.samples),
            list(m.metric or m.samples),
        )


@dataclass(frozen=True)
class TrialMeasurement:
    status: Status
    reason: str
    measurements: tuple[Measurement, ...]
    seconds: float
    warnings: tuple[str, ...] = ()  # each distinct warning of its runs, once
    failure: CommandFailure | None = None  # the failed run (benchmark or VERIFY) that made it invalid
    stopped: str = ""  # why the runs stopped before `repeats` (racing: measure's `race`); "" when they did not
    warm: tuple[float, ...] = ()  # each workload's first warm-up run's value (when all were measured)


RaceLook = Callable[[tuple[Measurement, ...], int], str]  # racing's look after each round: a reason stops the runs


def _exit_code(outcome: RunOutcome) -> int | None:
    """The exit status of a failed run as bench.py words it ("exit code 3", "killed by signal 9": -9); None
    when it did not exit by itself (timed out, stopped) or exited 0 (metric or PASS_REGEX missing)."""
    code = re.search(r"exit code (-?\d+)", outcome.reason)
    signal = re.search(r"killed by signal (\d+)", outcome.reason)
    return int(code.group(1)) if code else -int(signal.group(1)) if signal else None


class RunLease(Protocol):
    """A hold on the device a run uses, shared with other tunes (execute.shared.Lease: a suite's targets)."""

    def run(self, device: str) -> AbstractContextManager: ...


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

    def holding(self) -> AbstractContextManager:
        """The device's slot for one run (nothing to hold outside a suite)."""
        return self.lease.run(self.gpu.device if self.gpu is not None else "") if self.lease else nullcontext()

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
        runs: _Runs,
        warnings: dict[str, None],
    ) -> tuple[RunResult | None, float, bool, tuple[float, ...]]:
        """`repeats` more runs of `tree` added to `runs` (and, when `reference` is given, a run of the baseline
        build in it next to each, alternating which goes first, added to its paired values); the runs'
        warnings are added to `warnings` (an ordered set).
        Returns (the first failed run or None, seconds, throttled, numbers printed by the first run)."""
        seconds, throttled, numbers = 0.0, False, None
        start = len(runs.samples)
        for i in range(repeats):
            order = [tree] if reference is None else ([reference, tree] if (start + i) % 2 == 0 else [tree, reference])
            for which in order:
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
                if which is reference:
                    assert res.value is not None  # (a valid run)
                    runs.paired.append(res.value)
                else:
                    runs.add(res)
                    numbers = res.numbers if numbers is None else numbers
                throttled = throttled or res.throttled
        return None, seconds, throttled, numbers or ()

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
        runs = {w: _Runs() for w in workloads}
        firsts: dict[Workload, tuple[float, ...] | None] = dict.fromkeys(workloads)
        hot = dict.fromkeys(workloads, False)
        warm: list[float] = []
        batches = [1] * repeats if race is not None else [repeats]
        stopped = ""
        for done, batch in enumerate(batches, start=1):
            for workload in workloads:
                if done == 1 and warmup:
                    bad, spent, numbers = self._warmups(tree, workload, warmup, after_first if not seconds else None)
                    seconds += spent
                    warnings.update(dict.fromkeys(w for r in bad for w in r.warnings))
                    if bad and not bad[-1].ok:
                        res = bad[-1]
                        return TrialMeasurement(res.status, res.reason, (), seconds, tuple(warnings), res.failure)
                    firsts[workload] = numbers
                    warm.append(bad[0].value if bad[0].value is not None else math.nan)
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
        warmed = tuple(warm) if len(warm) == len(workloads) else ()
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
        self, runs: dict[Workload, _Runs], hot: dict[Workload, bool], firsts: dict[Workload, tuple[float, ...] | None]
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
            runs = _Runs.of(m)
            failed, more, hot, _ = self._paired_samples(
                tree, m.workload, repeats, reference if m.paired else None, runs, warnings
            )
            seconds += more
            if failed is not None:
                return TrialMeasurement(failed.status, failed.reason, (), seconds, tuple(warnings), failed.failure)
            out.append(runs.measurement(m.workload, m.throttled or hot, m.numbers, self.spec.objective == "energy"))
        return TrialMeasurement(Status.OK, "", tuple(out), seconds, tuple(warnings))
