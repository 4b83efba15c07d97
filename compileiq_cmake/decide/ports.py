"""What the decision procedure needs of the rest of the tune, as protocols: a runner that measures one
workload of one variant tree, and a tree it is given (opaque to the procedure: it is only handed back to the
runner and the build), and the trial store the decisions are kept in. The live runner (measure.runner.Runner),
the simulator's (benchmarks/evaluation/statistics_sim.py) and the tests' fakes all fit; decide/ imports
neither project/ nor measure/ nor results/."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..model.records import BuildResult, Contribution, FlagSet, Validation
from ..model.spec import TuneSpec

Workload = tuple[str, ...]  # one workload's arguments (measure.runs.Workload)
Tree = Any  # a variant tree (project.cmake_project.VariantTree): where one flag set is built and run


class Measured(Protocol):
    """One run's outcome: valid or not (with why), and the metric's value."""

    @property
    def ok(self) -> bool: ...

    @property
    def reason(self) -> str: ...

    @property
    def value(self) -> float | None: ...  # a float when ok


class Measures(Protocol):
    """A runner: the tune's spec (workloads, metric, rounds) and one run of a workload in a tree; `gpu`: the
    device it measures on (None: the only one), for the lines of a confirmation on another GPU."""

    @property
    def spec(self) -> TuneSpec: ...

    @property
    def gpu(self) -> Any: ...

    def run(self, tree: Tree, workload: Workload) -> Measured: ...


Build = Callable[[Tree, FlagSet], BuildResult]


class DecisionStore(Protocol):
    """Where each decision is kept as soon as it is made (results.store.TrialStore), so that a rerun after a
    kill does not measure it again."""

    def save_validations(self, name: str, validations: list[Validation]) -> None: ...

    def load_validations(self, name: str) -> list[Validation] | None: ...

    def save_ablation(self, name: str, minimal: FlagSet, contributions: tuple[Contribution, ...]) -> None: ...

    def load_ablation(self, name: str) -> tuple[FlagSet, tuple[Contribution, ...]] | None: ...

    def save_ablation_step(self, name: str, step: str, contribution: Contribution) -> None: ...

    def load_ablation_steps(self, name: str) -> dict[str, Contribution]: ...
