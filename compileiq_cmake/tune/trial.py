"""Tune stage 2, one trial: build a flag set in a variant tree (checked against what would be written,
fingerprinted), run its workloads, and score it against the baseline; more runs for close candidates;
the reference tree of a noisy machine."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ..decide.racing import Race
from ..decide.stats import relative_spread
from ..execute.build import build_variant as _build_variant
from ..execute.build import (
    command_problem,
    same_code,  # noqa: F401 (named here too)
)
from ..execute.build import device_code as _device_code
from ..flags.fingerprint import DeviceFingerprint
from ..measure.runner import Runner
from ..measure.runs import RaceLook
from ..model.errors import CommandFailure, CompileIQError, MeasurementError, ProjectCommandError, UsageError
from ..model.events import Log, as_stream
from ..model.records import BuildResult, FlagSet, Measurement, Status, Trial
from ..project.cmake_project import VariantTree
from ..search.search import INVALID_LOSS
from .tune_setup import TuneSetup

PAIRED_NOISE = 0.01  # above this spread of the baseline's runs, trials are measured next to baseline runs


def _command_problem(setup: TuneSetup, tree: VariantTree, entries: list[dict], flagset: FlagSet) -> str:
    """Why the trial's compile commands are not the project's own plus the trial's flags (execute.build)."""
    return command_problem(setup.build_context, tree, entries, flagset)


def build_variant(setup: TuneSetup, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
    """The flag set built in one of the setup's trees (execute.build.build_variant)."""
    return _build_variant(setup.build_context, tree, flagset, log)


def device_code(setup: TuneSetup, tree: VariantTree) -> DeviceFingerprint:
    """The fingerprint of the tuned target's device code in the tree (execute.build.device_code)."""
    return _device_code(setup.build_context, tree)


def run_trial(
    runner: Runner,
    setup: TuneSetup,
    tree: VariantTree,
    index: int,
    flagset: FlagSet,
    build: BuildResult,
    reference: VariantTree | None = None,
    log: Log | None = None,
    after_first: Callable[[float], None] | None = None,
    race: RaceLook | None = None,
    warmup: int | None = None,
) -> Trial:
    """A built flag set measured (`after_first`, `race`: see Runner.measure; a raced trial's reason says why
    its runs stopped). A build or run the tune's stop token ended gives a CANCELLED trial: it says nothing of
    the flags, and is neither stored nor told to the search."""
    start = time.perf_counter()
    if build.cancelled:
        return Trial(
            index, flagset, Status.CANCELLED, build.cancelled, build_seconds=build.seconds, wall_seconds=build.seconds
        )
    if not build.ok:
        return Trial(
            index,
            flagset,
            Status.BUILD_FAILED,
            f"build failed: {build.log_tail}",
            build_seconds=build.seconds,
            wall_seconds=build.seconds,
            failure=build.failure,
        )
    warm = setup.spec.warmup if warmup is None else warmup  # the search's: Baselines.warmup
    m = runner.measure(tree, setup.spec.repeats, warm, reference, after_first, race)
    if log is not None:
        stream = as_stream(log)  # the tune's stream: each warning once per tune
        for warning in getattr(m, "warnings", ()):
            stream.warning_once(warning)
    wall = build.seconds + (time.perf_counter() - start)
    return Trial(
        index,
        flagset,
        m.status,
        m.reason or m.stopped,
        m.measurements,
        build.seconds,
        m.seconds,
        wall,
        build.compile_command,
        build.fingerprint,
        kernels=build.kernels,
        failure=getattr(m, "failure", None),
        binary_bytes=build.binary_bytes,
        device_bytes=build.device_bytes,
        warm=m.warm,
    )


def typical_build(trials: dict[str, Trial]) -> float:
    """The (lower) median build seconds of the tune's valid trials, the project's own build included: what a
    build of this target takes here, under the same conditions as a trial's (a tree's first build, a build beside
    others on the cores, one served by the step cache are all among them); 0.0 when none is known."""
    seconds = [t.build_seconds for t in trials.values() if t.valid and t.build_seconds > 0]
    return statistics.median_low(seconds) if seconds else 0.0  # of two, the faster (the bank asks early)


def compile_slowdown(trial: Trial, typical: float) -> float:
    """How many times longer the trial's build took than a typical build of the tune (typical_build; 1.0 when
    either is unknown: a replay, a restored trial without times)."""
    if trial.build_seconds <= 0 or typical <= 0:
        return 1.0
    return trial.build_seconds / typical


def build_too_slow(trial: Trial, typical: float, limit: float | None) -> bool:
    """Whether the trial's build took more than --max-compile-slowdown (`limit`; None: no limit) times a typical
    build: such a trial is never a finalist (tune/finalists.pick), never banked and never the best a search trial
    races against."""
    return limit is not None and compile_slowdown(trial, typical) > limit


def loss(trial: Trial, baseline: Trial, lower_is_better: bool) -> float:
    """Mean log ratio against the baseline over the workloads (negative = better): per workload the median
    of the per-pair ratios when the trial was measured next to the baseline build, else the ratio of the
    medians."""
    if not trial.valid:
        return INVALID_LOSS
    ratios = [
        statistics.median(m.ratios()) if m.paired else m.median / b
        for m, b in zip(trial.measurements, baseline.medians(), strict=False)
        if b > 0
    ]
    logs = [math.log(r) for r in ratios if r > 0]
    if len(logs) != len(baseline.medians()):
        return INVALID_LOSS
    mean = sum(logs) / len(logs)
    return mean if lower_is_better else -mean


def baseline_error(trial: Trial, setup: TuneSetup) -> CompileIQError:
    """Why the project's own build cannot be the baseline: its build, benchmark or VERIFY failed (with the
    command, exit status and log when it ran in this tune), or its output gives no measurement."""
    spec = setup.spec
    failure = trial.failure
    log = f" (full log: {failure.log})" if failure is not None and failure.log is not None else ""
    if trial.status is Status.BUILD_FAILED:
        return ProjectCommandError(
            replace(failure, what=f"with the project's own flags, {failure.what}")
            if failure is not None
            else CommandFailure(
                f"with the project's own flags, the build of '{spec.target}'",
                (),
                None,
                trial.reason.removeprefix("build failed: "),
                stopped="did not build",
            )
        )
    if trial.status is Status.METRIC_MISSING and "energy counter" in trial.reason:
        return MeasurementError(
            f"--objective energy: {trial.reason} with the project's own flags; tune with "
            "--objective time, or on a GPU whose counter NVML reads"
        )
    if trial.status is Status.METRIC_MISSING and spec.metric.kind == "regex":
        return MeasurementError(
            f"--metric regex {spec.metric.pattern!r} never matched the benchmark's output with the project's own "
            "flags; "
            f"{trial.reason.split('; ', 1)[-1]}{log}"
        )
    if trial.status is Status.RUN_FAILED and ("exit code 127" in trial.reason or "cannot start" in trial.reason):
        return UsageError(f"benchmark '{spec.benchmark[0]}' could not be started after the build: {trial.reason}{log}")
    if failure is not None and (
        failure.exit_code is not None or trial.status in (Status.TIMEOUT, Status.VERIFY_FAILED)
    ):
        return ProjectCommandError(replace(failure, what=f"with the project's own flags, {failure.what}"))
    return MeasurementError(f"the benchmark does not pass with the project's own flags: {trial.reason}{log}")


def reference_trees(
    setup: TuneSetup,
    build: Callable[[VariantTree, FlagSet], BuildResult],
    baseline: FlagSet,
    noise: float,
    devices: list[str],
    log: Log,
) -> dict[str, VariantTree]:
    """On a noisy machine (the baseline's runs spread more than PAIRED_NOISE), one tree per GPU (`devices`)
    holding the project's own build, whose runs are taken next to every trial's on that GPU, so that drift and
    bursts of load hit both. {} on a quiet machine or when the baseline does not re-build."""
    spec = setup.spec
    if noise <= PAIRED_NOISE or spec.budget <= 1:
        return {}
    trees = dict(zip(devices, setup.trees[spec.workers :], strict=False))
    with ThreadPoolExecutor(max_workers=len(trees)) as pool:
        built = list(pool.map(lambda tree: build(tree, baseline), trees.values()))
    failed = next((b for b in built if not b.ok), None)
    if failed is not None:
        as_stream(log).warning(
            f"the baseline did not re-build for paired runs ({failed.log_tail[-200:]}); "
            "trials are compared with the baseline's first measurement"
        )
        return {}
    as_stream(log).info(
        f"the baseline's runs spread {100 * noise:.1f}% (> {100 * PAIRED_NOISE:.0f}%): every trial is "
        "measured next to runs of the project's own build"
        + (" on the same GPU" if len(trees) > 1 else "")
        + ", and compared with those"
    )
    return trees


def noise_of_pairs(trials) -> tuple[float, int]:
    """The run-to-run noise that paired comparisons actually see: the spread of the trials' per-pair ratios
    (divided by sqrt 2, as each ratio holds two runs' noise), the median over the trials, and how many
    trials it comes from (0: none yet, noise nan). Drift that pairing cancels does not count."""
    spreads = sorted(
        max(relative_spread(m.ratios()) for m in t.measurements) / math.sqrt(2)
        for t in trials
        if t.valid
        and t.same_code_as is None
        and t.measurements
        and all(m.paired and len(m.samples) >= 3 for m in t.measurements)
    )
    return (statistics.median(spreads), len(spreads)) if spreads else (math.nan, 0)


def trial_spread(trial: Trial, noise: float) -> float:
    """A measured trial's relative noise: the largest spread of its workloads' samples (their per-pair ratios
    when paired), at least `noise`."""
    return max(noise, max(relative_spread(m.ratios() if m.paired else m.samples) for m in trial.measurements))


def measure_more_if_promising(
    runner: Runner,
    setup: TuneSetup,
    tree: VariantTree,
    trial: Trial,
    base_of: Callable[[Trial], Trial],
    trials: dict[str, Trial],
    noise: float,
    reference: VariantTree | None = None,
    may_extend: Callable[[float], bool] | None = None,
    race: RaceLook | None = None,
) -> Trial:
    """A trial whose median is within the noise of the best so far gets more runs (up to max_repeats),
    so that the search's ranking of close candidates is not left to chance; one clearly slower or clearly
    faster than the best gets none (on the H200 a trial measured 12.8x got 9 more paired runs, 67 s), nor one
    that racing's look (`race`) shows unable to beat the best by the smallest gain that counts (a tie with the
    best: more runs would only rank it below what validation can tell apart). `base_of` gives the baseline a
    trial is compared with (the one of the GPU it ran on): the best so far is judged the same way.
    `may_extend(seconds)`: the time box, asked before each batch of more runs with what the batch will take."""
    spec = setup.spec
    lower = spec.lower_is_better
    if not trial.valid or trial.raced:  # a raced trial's place is clear: out of reach of the best
        return trial
    baseline = base_of(trial)
    best = min(loss(t, base_of(t), lower) for t in trials.values())
    current = trial
    while len(current.measurements[0].samples) < spec.max_repeats:
        spread = trial_spread(current, noise)
        if abs(loss(current, baseline, lower) - best) > 2 * spread:  # its place in the ranking is clear
            break
        done = len(current.measurements[0].samples)
        if race is not None and race(current.measurements, done):
            break
        batch = 1 if spec.race else spec.repeats  # racing: a look after every run, not after every 3
        if may_extend is not None and not may_extend(current.bench_seconds / max(1, done) * batch):
            break
        more = runner.extend(tree, current.measurements, batch, reference)
        if more.status is Status.CANCELLED:  # the box or an interrupt: the trial keeps the runs it has
            break
        if more.status is not Status.OK:
            return replace(current, status=more.status, reason=more.reason, measurements=())
        current = replace(
            current,
            measurements=more.measurements,
            bench_seconds=current.bench_seconds + more.seconds,
            wall_seconds=current.wall_seconds + more.seconds,
        )
    return current


def race_look(
    setup: TuneSetup,
    baseline: Trial,
    known: dict[str, Trial],
    base_of: Callable[[Trial], Trial],
    min_gain: float,
    noise: float,
) -> RaceLook | None:
    """Racing's look for a search trial measured against `baseline` (decide.racing): the best so far among the
    `known` trials that may be finalists (not raced, a build within --max-compile-slowdown; the baseline's loss,
    0, when none beat it), its runs, and the smallest gain that counts.
    None when racing is off (--no-race) or a trial's runs are a single round anyway."""
    spec = setup.spec
    if not spec.race or spec.repeats < 2:
        return None
    lower = spec.lower_is_better
    limit, typical = spec.max_compile_slowdown, typical_build(known)
    eligible = [
        t for t in known.values() if t.valid and not t.raced and not build_too_slow(t, typical, limit)
    ]  # a trial whose build is too slow is never a finalist (tune/finalists.pick): nothing to beat
    scored = [(loss(t, base_of(t), lower), t) for t in eligible]
    best_loss, best = min(scored, key=lambda x: x[0], default=(0.0, baseline))
    if best_loss > 0.0:
        best_loss, best = 0.0, baseline
    runs = min((len(m.samples) for m in best.measurements), default=0)
    spreads = sorted(
        relative_spread(m.ratios() if m.paired else m.samples) / (math.sqrt(2) if m.paired else 1.0)
        for t in known.values()
        if t.valid and t.same_code_as is None
        for m in t.measurements
        if len(m.samples) >= 3
    )  # the noise the trials so far showed (with the baseline's): a 3-run baseline alone can look too quiet
    rule = Race(best_loss, runs, min_gain, max(noise, spreads[len(spreads) // 2] if spreads else 0.0))

    def look(measurements: tuple[Measurement, ...], rounds: int) -> str:
        partial = Trial(-1, baseline.flagset, Status.OK, measurements=measurements)
        value = loss(partial, baseline, lower)
        return rule.reason(value, rounds) if rule.hopeless(value, rounds) else ""

    return look
