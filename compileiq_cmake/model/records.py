"""Typed records for the data that flows through a tune (frozen dataclasses, no behaviour beyond views)."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from . import build_flags
from .errors import CommandFailure


@dataclass(frozen=True)
class FlagSet:
    """One point of a flag space: the chosen value index per dimension (0 = the project's own default)."""

    choices: tuple[tuple[str, int], ...]
    flags: tuple[str, ...]

    @property
    def key(self) -> str:
        return json.dumps(sorted(self.flags))

    @property
    def is_baseline(self) -> bool:
        return not self.flags

    def describe(self) -> str:
        return " ".join(build_flags.shown(f) for f in self.flags) if self.flags else "(project's own flags)"


class Status(str, Enum):  # noqa: UP042 (a StrEnum's str() and f-string give the value, this one's 'Status.OK')
    OK = "ok"
    BUILD_FAILED = "build_failed"
    RUN_FAILED = "run_failed"
    TIMEOUT = "timeout"
    METRIC_MISSING = "metric_missing"
    PASS_MISSING = "pass_missing"
    VERIFY_FAILED = "verify_failed"
    NUMERICS_CHANGED = "numerics_changed"
    # stopped by the tune's Stop token (interrupt, the plan, the box): says nothing of the flags
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Measurement:
    """Metric samples of one workload (argument set) of the benchmark."""

    workload: tuple[str, ...]
    samples: tuple[float, ...]
    throttled: bool = False  # the GPU reported a thermal/power slowdown during these runs
    numbers: tuple[float, ...] = ()  # numbers compared with the baseline's output (first run)
    # Paired runs of the project's own build, one next to each sample (noisy machines): the
    # comparison with the baseline is then the median of the per-pair ratios, so drift cancels.
    reference: tuple[float, ...] = ()
    # the GPU's energy of each measured run, joules, in the order of samples (() where not measured)
    joules: tuple[float, ...] = ()
    # the metric of each measured run when the samples are not the metric (--objective energy), else ()
    metric: tuple[float, ...] = ()
    # how many of `reference` were the baseline run just before the trial on its GPU, shared with the trial
    # measured before it (measure.shared_reference): the first pair's, 0 or 1
    shared: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def metric_median(self) -> float:
        """The median of the program's metric (the samples themselves unless the objective was energy)."""
        return statistics.median(self.metric or self.samples)

    @property
    def runs(self) -> int:
        """The benchmark runs these samples took: each sample's and each paired baseline run this trial made
        (not the shared one, which the trial before it made)."""
        return len(self.samples) + len(self.reference) - self.shared

    @property
    def paired(self) -> bool:
        return len(self.reference) == len(self.samples) > 0

    def ratios(self) -> tuple[float, ...]:
        """sample / paired baseline sample, for each pair."""
        return tuple(s / r for s, r in zip(self.samples, self.reference, strict=False) if r > 0)


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    seconds: float
    log_tail: str = ""
    compile_command: str = ""
    fingerprint: str = ""  # device-code digest of the tuned target (CUDA targets)
    kernels: tuple[KernelResources, ...] = ()
    failure: CommandFailure | None = None  # a build that ran and failed: its command, exit status and log
    # the driver's own work around the build, in seconds by step (prepare, check, fingerprint): the overhead
    steps: tuple[tuple[str, float], ...] = ()
    cancelled: str = ""  # stopped by the tune's Stop token (its reason): says nothing of the flags
    binary_bytes: int = 0  # the tuned target's built files (executable or library), summed; 0: not known
    device_bytes: int = 0  # the device code in them (their fatbinary sections), summed; 0: none or not known


@dataclass(frozen=True)
class KernelResources:
    """Per kernel of a CUDA trial's build (cuobjdump -res-usage / -elf)."""

    name: str
    registers: int
    spill_bytes: int
    shared_bytes: int
    instructions: int


RACED = "raced: "  # the reason of a valid trial whose runs racing stopped (decide.racing)


@dataclass(frozen=True)
class Trial:
    """One built and benchmarked flag set; invalid trials keep their reason and are never chosen."""

    index: int
    flagset: FlagSet
    status: Status
    reason: str = ""
    measurements: tuple[Measurement, ...] = ()
    build_seconds: float = 0.0
    bench_seconds: float = 0.0
    wall_seconds: float = 0.0
    compile_command: str = ""
    fingerprint: str = ""  # digest of the tuned target's machine code (CUDA), "" when not taken
    same_code_as: int | None = None  # index of the trial whose device code (and measurement) this shares
    kernels: tuple[KernelResources, ...] = ()
    gpu: str = ""  # the GPU its runs used (CUDA_VISIBLE_DEVICES entry) when a tune uses several; "" otherwise
    binary_bytes: int = 0  # the tuned target's built files, summed (a co-objective beside time); 0: not known
    device_bytes: int = 0  # the device code in those files (fatbinary sections), summed; 0: none or not known
    # an invalid trial's failed command (build, benchmark or VERIFY) with the log of its output; not stored
    failure: CommandFailure | None = field(default=None, compare=False)
    # each workload's first warm-up run's value (the baseline's tells whether a first run is cold); not stored
    warm: tuple[float, ...] = field(default=(), compare=False)

    @property
    def valid(self) -> bool:
        return self.status is Status.OK

    @property
    def raced(self) -> bool:
        """A valid trial whose runs racing stopped early (its reason says after how many and why): told to
        the search, never a finalist unless measured again."""
        return self.valid and self.reason.startswith(RACED)

    def medians(self) -> tuple[float, ...]:
        return tuple(m.median for m in self.measurements)

    def joules_per_run(self) -> float | None:
        """The geometric mean over the workloads of the mean energy per run (joules); None unless every
        workload's runs were measured. The mean, not the median: read before and after a run (a time tune), the
        counter's 100 ms steps make each run's energy one of two values around the true one, at a phase that
        differs from run to run, and only their mean converges to it."""
        if not self.measurements or not all(m.joules for m in self.measurements):
            return None
        means = [statistics.fmean(m.joules) for m in self.measurements]
        if min(means) <= 0:
            return None
        return statistics.geometric_mean(means)

    def metric_per_run(self) -> float | None:
        """The geometric mean over the workloads of the median metric (the program's own number)."""
        medians = [m.metric_median for m in self.measurements]
        return statistics.geometric_mean(medians) if medians and min(medians) > 0 else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "flags": list(self.flagset.flags),
            "status": self.status.value,
            "reason": self.reason,
            "build_seconds": round(self.build_seconds, 3),
            "bench_seconds": round(self.bench_seconds, 3),
            "wall_seconds": round(self.wall_seconds, 3),
            "measurements": [
                {
                    "workload": list(m.workload),
                    "samples": list(m.samples),
                    "throttled": m.throttled,
                    **({"reference": list(m.reference)} if m.reference else {}),
                    **({"joules": list(m.joules)} if m.joules else {}),
                    **({"metric": list(m.metric)} if m.metric else {}),
                    **({"shared": m.shared} if m.shared else {}),
                }
                for m in self.measurements
            ],
            "compile_command": self.compile_command,
            "fingerprint": self.fingerprint,
            "same_code_as": self.same_code_as,
            "kernels": [k.__dict__ for k in self.kernels],
            "gpu": self.gpu,
            "binary_bytes": self.binary_bytes,
            "device_bytes": self.device_bytes,
        }


@dataclass(frozen=True)
class WorkloadComparison:
    """Baseline and candidate measured interleaved on one workload; speedup > 1: the candidate is better."""

    workload: tuple[str, ...]
    baseline: tuple[float, ...]
    candidate: tuple[float, ...]
    speedup: float
    ci_low: float
    ci_high: float
    p_value: float


@dataclass(frozen=True)
class Validation:
    """A candidate re-measured against the baseline on every workload, in a fresh interleaved order."""

    flagset: FlagSet
    workloads: tuple[WorkloadComparison, ...]
    geomean_speedup: float
    geomean_ci_low: float
    geomean_ci_high: float
    accepted: bool
    reason: str = ""
    # where the numbers come from: "" the rounds that decided it (the accepting look and the pick of the best
    # make them a little optimistic); "confirmation" fresh rounds of the winner, not used to decide anything
    estimate: str = ""
    rho: float = 0.0  # the rounds' serial correlation its tests allowed for (decide.correlation.rounds_correlation)
    rho_sd: float = 0.0  # how well the rounds told it (decide.correlation.rounds_posterior): its intervals allow for it


@dataclass(frozen=True)
class Contribution:
    """What removing one flag (dimension) of the winner costs: speedup of keeping it, with its interval."""

    dimension: str
    flags: tuple[str, ...]
    speedup: float
    ci_low: float
    ci_high: float
    kept: bool
    reason: str


@dataclass(frozen=True)
class TuneResult:
    target: str
    trials: tuple[Trial, ...]
    baseline: Trial
    winner: Validation | None
    toml_path: str | None
    wall_seconds: float
    notes: tuple[str, ...] = field(default=())
    contributions: tuple[Contribution, ...] = field(default=())
    language: str = ""  # the tuned target's (CUDA, CXX, C)
    needed: float = 0.0  # the box could not hold the baseline, one trial and its validation: the limit it needs
    unchanged: tuple[float, tuple[str, ...]] | None = None  # not tuned: its entry holds (speedup, flags)
