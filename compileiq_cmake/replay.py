"""The replay backend: trials answered from a recorded landscape instead of builds and benchmark runs,
with noise drawn at the level measured when the landscape was recorded. Everything else of a tune (search,
validation, ablation, TOML) runs as usual; results are labelled REPLAY and never applied by a configure."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from .cmake_project import VariantTree
from .landscape import Landscape
from .measure import RunResult, Runner, Workload
from .records import BuildResult, FlagSet, KernelResources, Status


@dataclass
class ReplayRunner(Runner):
    """A Runner whose runs come from the landscape point of the flag set 'built' in each tree."""

    landscape: Landscape | None = None
    seed: int = 0
    placed: dict[Path, FlagSet] = field(default_factory=dict)
    _rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def build(self, tree: VariantTree, flagset: FlagSet) -> BuildResult:
        self.placed[tree.path] = flagset
        point = self.landscape.lookup(flagset.flags)
        if point is None:
            return BuildResult(ok=False, seconds=0.0, log_tail="replay: the landscape has no point for these flags")
        if point.status == "build_failed":
            return BuildResult(ok=False, seconds=0.0, log_tail=f"replay: recorded build failure: {point.code.message}")
        kernels = ()
        if point.code.registers is not None:
            kernels = (KernelResources(self.landscape.kernel or "kernel", point.code.registers,
                                       point.code.spill_bytes or 0, 0, 0),)
        return BuildResult(ok=True, seconds=0.0, compile_command="(replay) " + " ".join(flagset.flags),
                           fingerprint=point.digest or "", kernels=kernels)

    def run(self, tree: VariantTree, workload: Workload) -> RunResult:
        point = self.landscape.lookup(self.placed[tree.path].flags)
        if point is None or not point.time_us:
            return RunResult(Status.RUN_FAILED, "replay: no recorded time for these flags")
        if not point.valid:
            return RunResult(Status.NUMERICS_CHANGED, f"replay: recorded as {point.status}"
                             + (f" (rel. error {point.code.error:.1e})" if point.code.error is not None else ""))
        value = point.code.median_us * math.exp(self._rng.gauss(0.0, self.landscape.noise)) / 1000.0
        return RunResult(Status.OK, "", value, 0.0)
