"""The replay backend: trials answered from a recorded landscape instead of builds and benchmark runs,
with noise drawn at the level measured when the landscape was recorded. Everything else of a tune (search,
validation, ablation, TOML) runs as usual; results are labelled REPLAY and never applied by a configure."""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..measure.runner import Runner
from ..measure.runs import RunResult, Workload
from ..model.records import BuildResult, FlagSet, KernelResources, Status
from ..project.cmake_project import VariantTree
from ..search.landscape import Landscape

PLACED = "replay-build.json"  # the flag set a replay 'build' put into a tree


@dataclass
class ReplayRunner(Runner):
    """A Runner whose runs come from the landscape point of the flag set 'built' in each tree."""

    landscape: Landscape | None = None
    seed: int = 0
    pace: float = 0.0  # each run sleeps its recorded time x pace (simulations of GPU time: COMPILEIQ_REPLAY_PACE)
    placed: dict[Path, FlagSet] = field(default_factory=dict)
    _rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    @property
    def _replayed(self) -> Landscape:
        assert self.landscape is not None  # (execute.factory gives each replay runner its landscape)
        return self.landscape

    def build(self, tree: VariantTree, flagset: FlagSet) -> BuildResult:
        """'Builds' the flag set in the tree: remembered here and written into the tree (PLACED), so that a run
        in another process (a Ray GPU worker) finds what the tree holds, as it would find a real binary."""
        self.placed[tree.path] = flagset
        tree.path.mkdir(parents=True, exist_ok=True)
        (tree.path / PLACED).write_text(json.dumps(list(flagset.flags)))
        point = self._replayed.lookup(flagset.flags)
        if point is None:
            return BuildResult(ok=False, seconds=0.0, log_tail="replay: the landscape has no point for these flags")
        if point.status == "build_failed":
            return BuildResult(ok=False, seconds=0.0, log_tail=f"replay: recorded build failure: {point.code.message}")
        kernels: tuple[KernelResources, ...] = ()
        if point.code.registers is not None:
            kernels = (
                KernelResources(
                    self._replayed.kernel or "kernel", point.code.registers, point.code.spill_bytes or 0, 0, 0
                ),
            )
        return BuildResult(
            ok=True,
            seconds=0.0,
            compile_command="(replay) " + " ".join(flagset.flags),
            fingerprint=point.digest or "",
            kernels=kernels,
        )

    def run(self, tree: VariantTree, workload: Workload) -> RunResult:
        with self.holding():
            return self._answer(tree)

    def _answer(self, tree: VariantTree) -> RunResult:
        placed = self.placed.get(tree.path)
        flags = placed.flags if placed is not None else tuple(json.loads((tree.path / PLACED).read_text()))
        point = self._replayed.lookup(flags)
        if point is None or not point.time_us:
            return RunResult(Status.RUN_FAILED, "replay: no recorded time for these flags")
        if not point.valid:
            return RunResult(
                Status.NUMERICS_CHANGED,
                f"replay: recorded as {point.status}"
                + (f" (rel. error {point.code.error:.1e})" if point.code.error is not None else ""),
            )
        median = point.code.median_us
        assert median is not None  # (point.time_us)
        value = median * math.exp(self._rng.gauss(0.0, self._replayed.noise)) / 1000.0
        if self.pace > 0:
            if self.stop is not None:
                if self.stop.wait(value / 1000.0 * self.pace):
                    return RunResult(Status.CANCELLED, self.stop.reason())
            else:
                time.sleep(value / 1000.0 * self.pace)
        return RunResult(Status.OK, "", value, value / 1000.0 * self.pace)
