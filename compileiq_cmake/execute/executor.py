"""The execution interface of a tune: "build a flag set in a variant tree" and "run the workloads of a built
trial" behind one small protocol, so that the search, the statistics and the finalists never know what
executes them. Implementations: `LocalExecutor` (the variant trees and subprocesses of this machine) and
`ReplayExecutor` (a recorded landscape answers both, no compiler and no GPU); the Ray executor
(ray_executor.RayExecutor) runs either one's builds as Ray tasks and the runs on the cluster's GPUs."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Protocol

from ..project.cmake_project import VariantTree
from ..measure.gpu import GpuMonitor
from ..measure.runner import Runner
from ..model.records import BuildResult, FlagSet
from .replay import ReplayRunner

Log = Callable[[str], None]


class Executor(Protocol):
    """Builds flag sets and runs built trials. `runner` measures a tree's workloads (Runner's interface:
    measure, extend, run, reference); `build` never raises for a failing build (ok=False, reason)."""

    name: str
    runner: Runner

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult: ...

    def gpu_runners(self, setup) -> dict[str, Runner]:
        """One runner per GPU of setup.gpus (by its label), each running only there."""
        ...


def local_gpu_runners(setup, runner: Runner) -> dict[str, Runner]:
    """With several GPUs: one runner per GPU (its own CUDA_VISIBLE_DEVICES, pid file and NVML handle by PCI
    bus id); with one, the one runner on it."""
    state = setup.state_dir
    return {g.device: runner.on_gpu(g, state / f"bench-gpu{g.device}.pid",
                                    GpuMonitor(g.ordinal, g.pci_bus_id) if g.pci_bus_id else runner.monitor)
            for g in setup.gpus}


@dataclass
class LocalExecutor:
    """Variant trees of this machine: CMake builds (trial.build_variant) and benchmark subprocesses."""

    setup: object  # tune_setup.TuneSetup (not imported: trial imports tune_setup)
    runner: Runner
    name: str = "local"

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
        from ..tune.trial import build_variant

        return build_variant(self.setup, tree, flagset, log)

    def gpu_runners(self, setup) -> dict[str, Runner]:
        return local_gpu_runners(setup, self.runner)

    def __getstate__(self) -> dict:
        """What a build task on another node needs (Ray): the setup without this process's GPU handles."""
        return {"setup": replace(self.setup, monitor=None), "runner": replace(self.runner, monitor=None), "name": self.name}


@dataclass
class ReplayExecutor:
    """Builds and runs answered from a recorded landscape (labelled REPLAY; never applied)."""

    runner: ReplayRunner
    name: str = "replay"

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
        return self.runner.build(tree, flagset)

    def gpu_runners(self, setup) -> dict[str, Runner]:
        return local_gpu_runners(setup, self.runner)


def make_executor(setup, pid_file: Path | None = None) -> Executor:
    """The executor of a tune's setup: its replay runner when it replays, else the local trees."""
    if setup.replay is not None:
        return ReplayExecutor(setup.replay)
    return LocalExecutor(setup, Runner(setup.spec, setup.bench, setup.monitor, pid_file=pid_file))
