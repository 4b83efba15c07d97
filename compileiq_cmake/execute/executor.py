"""The execution contract of a tune: "build a flag set in a variant tree" and "run the workloads of a built
trial" behind one small protocol, so that the search, the statistics and the finalists never know what
executes them. Implementations: `LocalExecutor` (the variant trees and subprocesses of this machine),
`ReplayExecutor` (a recorded landscape answers both, no compiler and no GPU) and the Ray executor
(execute.ray.RayExecutor: either one's builds as Ray tasks, the runs on a cluster's GPUs); execute.factory
picks one. An executor whose worker goes away raises WorkerLost: the conveyor re-queues that measurement."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from ..measure.energy import EnergyMeter
from ..measure.gpu import GpuMonitor, GpuSlot
from ..measure.runner import Runner
from ..measure.runs import BenchCommand
from ..model.errors import CompileIQError
from ..model.events import Log
from ..model.records import BuildResult, FlagSet
from ..model.spec import TuneSpec
from ..project.cmake_project import VariantTree
from .build import BuildContext, build_variant
from .replay import ReplayRunner


class WorkerLost(CompileIQError):
    """The worker that ran a build or a benchmark went away (its process or node died) before answering."""


@dataclass(frozen=True)
class ExecutionPlan:
    """What an executor of a tune needs: how to build (None for a replay), the replay's runner (or None), the
    benchmark and its spec, this machine's GPU monitor, the GPUs the runs use and the tune's state folder."""

    spec: TuneSpec
    bench: BenchCommand
    build: BuildContext | None
    replay: ReplayRunner | None
    monitor: GpuMonitor | None
    gpus: tuple[GpuSlot, ...]
    state_dir: Path
    meter: EnergyMeter | None = None  # the GPU's energy counter, read around each run (None: not measured)


class Executor(Protocol):
    """Builds flag sets and runs built trials. `runner` measures a tree's workloads (Runner's interface:
    measure, extend, run, reference); `build` never raises for a failing build (ok=False, reason); either
    may raise WorkerLost when the worker that ran it went away."""

    @property
    def name(self) -> str: ...

    @property
    def runner(self) -> Runner: ...

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult: ...

    def gpu_runners(self) -> dict[str, Runner]:
        """One runner per GPU of the plan (by its label), each running only there."""
        ...


@dataclass
class LocalExecutor:
    """Variant trees of this machine: CMake builds (build.build_variant) and benchmark subprocesses."""

    context: BuildContext | None
    runner: Runner
    gpus: tuple[GpuSlot, ...] = ()
    state_dir: Path | None = None
    name: str = "local"

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
        assert self.context is not None  # (execute.factory makes one without a build plan only for no builds)
        return build_variant(self.context, tree, flagset, log)

    def gpu_runners(self) -> dict[str, Runner]:
        return local_gpu_runners(self.gpus, self.state_dir, self.runner)

    def __getstate__(self) -> dict:
        """What a build task on another node needs (Ray): the context and a runner without this process's GPU
        handles."""
        return {
            "context": self.context,
            "runner": replace(self.runner, monitor=None),
            "gpus": (),
            "state_dir": self.state_dir,
            "name": self.name,
        }


@dataclass
class ReplayExecutor:
    """Builds and runs answered from a recorded landscape (labelled REPLAY; never applied)."""

    runner: ReplayRunner
    gpus: tuple[GpuSlot, ...] = ()
    state_dir: Path | None = None
    name: str = "replay"

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
        return self.runner.build(tree, flagset)

    def gpu_runners(self) -> dict[str, Runner]:
        return local_gpu_runners(self.gpus, self.state_dir, self.runner)


def local_gpu_runners(gpus: tuple[GpuSlot, ...], state_dir: Path | None, runner: Runner) -> dict[str, Runner]:
    """With several GPUs: one runner per GPU (its own CUDA_VISIBLE_DEVICES, pid file and NVML handle by PCI
    bus id); with one, the one runner on it; with none, none."""
    if not gpus:
        return {}
    assert state_dir is not None  # (a plan with GPUs has its state directory)
    return {
        g.device: runner.on_gpu(
            g,
            state_dir / f"bench-gpu{g.device}.pid",
            GpuMonitor(g.ordinal, g.pci_bus_id) if g.pci_bus_id else runner.monitor,
            runner.meter.for_gpu(g) if runner.meter is not None else None,
        )
        for g in gpus
    }
