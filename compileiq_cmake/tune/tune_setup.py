"""What setup makes of a tune, in typed parts: the tuned target as CMake builds it (ProjectModel), what the
trials measure besides the flags (CodeIdentity), where the benchmarks run (Devices), how the trials' device code
is told apart (DeviceCode), the external programs (Tools), the variant trees, the flag space and the benchmark.
Each stage takes the parts it uses; the properties hand the executors and the per-file stage their own
contexts."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..execute.build import BuildContext, CoreShare
from ..execute.executor import ExecutionPlan
from ..execute.replay import ReplayRunner
from ..execute.step_cache import StepCache
from ..flags import FlagSpace
from ..flags.acf import Candidates
from ..flags.fingerprint import FingerprintCache, find_tool
from ..measure.energy import EnergyMeter
from ..measure.gpu import GpuMonitor, GpuSlot
from ..measure.kernel_times import FileShare
from ..measure.runs import BenchCommand
from ..model.spec import TuneSpec
from ..project.cmake_project import VariantTree
from ..project.file_api import Target, Toolchain
from ..project.user_tree import host_compiler_of
from ..project.variant_settings import VariantSettings
from ..search.per_file import PerFileContext

FINALISTS = 3  # candidates validated against the baseline at the end (a tune has a variant tree for each)


@dataclass(frozen=True)
class ProjectModel:
    """The tuned target as the project's own build makes it (File API, compile_commands.json)."""

    target: Target
    language: str
    toolchain: Toolchain
    build_targets: tuple[str, ...] = ()  # what a variant build builds (the target, the benchmark's owner, or all)
    build_type: str = ""  # the configuration tuned (recorded in the TOML; empty for a replay)
    artifacts: tuple[Path, ...] = ()  # the tuned target's files, relative to a variant tree
    objects: tuple[Path, ...] = ()  # the target's object files, relative to a variant tree
    own_commands: dict[str, frozenset[str]] = field(default_factory=dict)  # source -> its own compile flags
    device_link: tuple[str, ...] = ()  # a static/object library: the consumer whose device link is measured


@dataclass(frozen=True)
class CodeIdentity:
    """What the trials measure besides the flags: the target's sources and the project headers they include
    (depscan), hashed as the apply does at configure; the project's flags; the target's compile commands."""

    sources_sha256: str = ""
    headers: tuple[str, ...] = ()  # those headers, relative to the source directory
    commands_sha256: str = ""  # the target's compile commands in the project's own build (the trial store's key)
    flags_sha256: str = ""  # CMAKE_<LANG>_FLAGS[_<CONFIG>] as _compileiq_flags_sha256 hashes them (the apply checks it)


@dataclass(frozen=True)
class DeviceCode:
    """CUDA: how the trials' device code is told apart: the device-code fingerprints (None when cuobjdump is
    missing, a note said so) and, from the static screening, per kept (dimension, value) the kernels whose device
    code it changes (as the fingerprints name them; empty when screening did not run). The per-file stage
    proposes a value for a file only when it changes one of that file's kernels."""

    fingerprints: FingerprintCache | None = None
    screen_kernels: dict[tuple[str, tuple[str, ...]], frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Focus:
    """The hot-file focus of a CUDA target of many files (tune.focus): the files whose flags are tuned, with
    their shares of the kernel time (averaged over the workloads)."""

    files: tuple[FileShare, ...]
    of_files: int  # the target's CUDA files
    unmapped: float  # share of kernel time in kernels of no file of the target

    @property
    def share(self) -> float:
        return sum(f.share for f in self.files)

    def as_dict(self) -> dict:
        return {
            "files": [{"path": f.path, "share": round(f.share, 4), "kernels": list(f.kernels)} for f in self.files],
            "of_files": self.of_files,
            "share": round(self.share, 4),
            "unmapped_share": round(self.unmapped, 4),
        }


@dataclass(frozen=True)
class Devices:
    """Where the benchmarks run: the CUDA architecture built, the device's name and compute capability, the
    GPU monitor (CUDA), and the GPUs measured on (one run per GPU at a time; several: in parallel)."""

    cuda_arch: str = ""
    device: str = ""
    compute_capability: str = ""
    monitor: GpuMonitor | None = None
    gpus: tuple[GpuSlot, ...] = ()
    meter: EnergyMeter | None = None  # the GPU's energy counter (None: energy not measured)


@dataclass(frozen=True)
class Tools:
    """The external programs of one tune, found once in setup and handed to what runs them: cmake (with its
    version, so no configure asks it again), the tuned language's compiler, cuobjdump (the device-code
    fingerprints; None when it is not installed), the host compiler nvcc uses and the compile-step cache of the
    variant trees' CUDA compiles (None: off, said)."""

    cmake: str
    cmake_version: tuple[int, int]
    compiler: str = ""  # the tuned language's compiler (nvcc for CUDA)
    cuobjdump: Path | None = None  # CUDA: beside nvcc or on PATH; None: not found (fingerprints are off, said)
    host_compiler: str = ""  # CUDA: CMAKE_CUDA_HOST_COMPILER, else PATH's g++ or c++ ("" when none)
    step_cache: StepCache | None = None  # CUDA: sccache as the trees' compiler launcher
    step_cache_started: bool = False  # this tune started its server (and stops it; a suite's: the suite)
    acf: Candidates | None = None  # CUDA: the Advanced Control File candidates and their source (None: none)

    @staticmethod
    def found(
        cmake: str,
        cmake_version: tuple[int, int],
        language: str,
        compiler: str,
        cache: dict[str, tuple[str, str]],
        step_cache: StepCache | None = None,
        started: bool = False,
    ) -> Tools:
        """The tools of a tune of `language` built by `compiler`, from the variant tree's CMake cache."""
        if language != "CUDA":
            return Tools(cmake, cmake_version, compiler)
        return Tools(
            cmake,
            cmake_version,
            compiler,
            find_tool("cuobjdump", compiler),
            host_compiler_of(cache),
            step_cache,
            started,
        )

    @property
    def programs(self) -> tuple[str, ...]:
        """The programs a build runs (cmake, the compiler), by absolute path: every node that builds needs them."""
        cache = self.step_cache.program if self.step_cache is not None else ""
        return tuple(t for t in (self.cmake, self.compiler, cache) if t and os.path.isabs(t))


class OnDemandTrees:
    """A tune's variant trees, trees[:ready] configured: setup configures the search's own, the rest are
    configured the first time the finalists need them (a tune whose validation has fewer candidates, or
    none, never configures them)."""

    def __init__(
        self,
        trees: tuple[VariantTree, ...],
        ready: int,
        settings: VariantSettings,
        target: str,
        language: str,
        one_at_a_time: bool,
    ) -> None:
        self._trees, self._ready = trees, ready
        self._configure = lambda t: t.prepare(settings, target, language)
        self._workers = 1 if one_at_a_time else 0  # a configure that writes into the source tree: one at a time
        self._lock = threading.Lock()

    def configure(self, n: int) -> None:
        """Configure trees[ready:n] (those not configured yet)."""
        with self._lock:
            todo = self._trees[self._ready : n]
            if not todo:
                return
            with ThreadPoolExecutor(max_workers=self._workers or len(todo)) as pool:
                list(pool.map(self._configure, todo))
            self._ready = max(self._ready, n)


@dataclass(frozen=True)
class TuneSetup:
    """What setup made of a tune (tune.setup, tune.replay_setup), in typed parts; the state folder is the spec's."""

    spec: TuneSpec
    trees: tuple[VariantTree, ...]
    project: ProjectModel
    devices: Devices
    space: FlagSpace
    bench: BenchCommand
    code: CodeIdentity = CodeIdentity()
    replay: ReplayRunner | None = None  # answers builds and runs from a recorded landscape
    device_code: DeviceCode = field(default_factory=DeviceCode)  # CUDA: the fingerprints, the screened kernels
    later: OnDemandTrees | None = None  # configures the trees only the finalists need when they do
    tools: Tools | None = None  # the external programs, found once (None: a replay runs none)
    focus: Focus | None = None  # a target of many files: the hot files whose flags are tuned (tune.focus)
    cores: CoreShare = field(default_factory=CoreShare)  # the machine's cores, shared by the tune's builds
    base: VariantTree | None = None  # a suite's target: the tree of the suite's one baseline build holding its own

    @property
    def state_dir(self) -> Path:
        """The tune's state folder (<build>/compileiq, or --state-dir): the spec's."""
        return self.spec.state_dir

    @property
    def baseline_tree(self) -> VariantTree:
        """The tree that holds the project's own build of the target once the baseline stage ran: the suite's
        one baseline build, else the first variant tree (the baseline is built there)."""
        return self.base if self.base is not None else self.trees[0]

    def trees_for(self, n: int) -> tuple[VariantTree, ...]:
        """The first `n` variant trees, each configured (the finalists' validation needs one per candidate
        and one for the baseline; the search configured only its own)."""
        if self.later is not None:
            self.later.configure(n)
        return self.trees[:n]

    @property
    def programs(self) -> tuple[str, ...]:
        """The programs a build runs (cmake, the compiler): every node that builds needs them (Ray)."""
        return () if self.replay is not None or self.tools is None else self.tools.programs

    @property
    def build_context(self) -> BuildContext:
        """What a build of a flag set needs (execute.build), and nothing else of the tune."""
        return BuildContext(
            target=self.spec.target,
            language=self.project.language,
            cuda_arch=self.devices.cuda_arch,
            build_targets=self.project.build_targets,
            sources=self.project.target.sources,
            source_dir=self.spec.source_dir,
            trees=len(self.trees),
            timeout=self.spec.timeout,
            own_commands=self.project.own_commands,
            fingerprints=self.device_code.fingerprints,
            objects=self.project.objects,
            artifacts=self.project.artifacts,
            device_link=self.project.device_link,
            cores=self.cores,
        )

    @property
    def per_file_context(self) -> PerFileContext:
        """What the per-file stage (search.per_file) needs of this tune."""
        return PerFileContext(
            target=self.spec.target,
            language=self.project.language,
            source_dir=self.spec.source_dir,
            cuda_sources=self.project.target.sources_in("CUDA"),
            workloads=self.spec.workloads,
            space=self.space,
            nvcc=self.project.toolchain.path,
            state_dir=self.state_dir,
            fingerprints=self.device_code.fingerprints,
            screen_kernels=self.device_code.screen_kernels,
            replay=self.replay is not None,
            focused=self.focus is not None,
        )

    @property
    def execution_plan(self) -> ExecutionPlan:
        """What an executor of this tune needs (execute.factory)."""
        return ExecutionPlan(
            spec=self.spec,
            bench=self.bench,
            build=None if self.replay else self.build_context,
            replay=self.replay,
            monitor=self.devices.monitor,
            gpus=self.devices.gpus,
            state_dir=self.state_dir,
            meter=self.devices.meter,
        )
