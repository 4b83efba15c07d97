"""What flows out of measuring: the benchmark command mapped into a variant tree, one run's result, the runs of
one workload as they accumulate (samples, paired baseline runs, co-objectives), and a trial's measurement."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..model.errors import CommandFailure
from ..model.records import Measurement, Status
from ..project.cmake_project import VariantTree

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
class WorkloadRuns:
    """What the measured runs of one workload gave: the objective's values, the paired baseline's, and the
    co-objectives of each candidate run (energy, the metric)."""

    samples: list[float] = field(default_factory=list)
    paired: list[float] = field(default_factory=list)
    joules: list[float | None] = field(default_factory=list)
    metric: list[float] = field(default_factory=list)
    shared: int = 0  # paired values taken from the baseline run before the trial (measure.shared_reference)

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
            self.shared,
        )

    @staticmethod
    def of(m: Measurement) -> WorkloadRuns:
        return WorkloadRuns(
            list(m.samples),
            list(m.reference),
            list(m.joules) if m.joules else [None] * len(m.samples),
            list(m.metric or m.samples),
            m.shared,
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
