"""Issue 54, decisions per GPU-second: with several GPUs the winner is confirmed on each other GPU at the same
time (each comparison paired on its own GPU), the builds of the shared trees one at a time, the trial store
used from the tune's thread only, and the plan prices the confirmations as one validation (fake runners: no
CMake, no processes)."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compileiq_cmake.decide.procedure import ValidationContext, validate_and_ablate
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.measure.gpu import GpuSlot
from compileiq_cmake.measure.runner import RunResult
from compileiq_cmake.model.events import recording as recording_stream
from compileiq_cmake.model.records import BuildResult, FlagSet, Status, Validation
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.tune.plan import Costs, finish_cost

RUN_SECONDS = 0.01
WINNER = FlagSet((("use_fast_math", 1),), ("--use_fast_math",))


@dataclass
class Gpus:
    """What every fake GPU shares: which flag set each tree holds, the runs' (GPU, start, end), builds at once."""

    built: dict[str, FlagSet] = field(default_factory=dict)
    spans: list[tuple[str, float, float]] = field(default_factory=list)
    building: dict[str, int] = field(default_factory=dict)  # per tree, its builds under way
    most_building: int = 0  # the most builds under way in one tree at one moment
    lock: threading.Lock = field(default_factory=threading.Lock)

    def build(self, tree: VariantTree, flagset: FlagSet) -> BuildResult:
        name = tree.path.name
        with self.lock:
            self.building[name] = self.building.get(name, 0) + 1
            self.most_building = max(self.most_building, self.building[name])
        time.sleep(0.002)
        with self.lock:
            self.built[name] = flagset
            self.building[name] -= 1
        return BuildResult(ok=True, seconds=0.002)


@dataclass
class OnGpu:
    """One GPU's runner: the baseline 10 s, the winner `winner_time` s, a little noise; each run sleeps."""

    spec: TuneSpec
    gpu: GpuSlot
    gpus: Gpus
    winner_time: float = 8.0
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def run(self, tree: VariantTree, workload) -> RunResult:
        start = time.perf_counter()
        time.sleep(RUN_SECONDS)
        value = self.winner_time if self.gpus.built[tree.path.name].flags else 10.0
        with self.gpus.lock:
            self.gpus.spans.append((self.gpu.device, start, time.perf_counter()))
        return RunResult(Status.OK, "", value * (1 + self.rng.gauss(0, 0.002)), 0.0)


class MainThreadStore:
    """A decision store that, like the sqlite trial store, may only be used from the thread that made it."""

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.validations: dict[str, list[Validation]] = {}
        self.ablations: dict[str, tuple] = {}

    def _here(self) -> None:
        assert threading.get_ident() == self.owner, "the trial store was used from another thread"

    def save_validations(self, name, validations):
        self._here()
        self.validations[name] = list(validations)

    def load_validations(self, name):
        self._here()
        return self.validations.get(name)

    def save_ablation(self, name, minimal, contributions):
        self._here()
        self.ablations[name] = (minimal, contributions)

    def load_ablation(self, name):
        self._here()
        return self.ablations.get(name)

    def save_ablation_step(self, name, step, contribution):
        self._here()

    def load_ablation_steps(self, name):
        self._here()
        return {}


def _setup(tmp_path: Path, winner_times: tuple[float, ...]) -> tuple[ValidationContext, Gpus, list[OnGpu]]:
    spec = TuneSpec(
        source_dir=tmp_path,
        build_dir=tmp_path / "b",
        target="t",
        benchmark=("x",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=tmp_path / "o.toml",
        min_rounds=3,
        max_rounds=8,
    )
    trees = tuple(VariantTree(tmp_path / "b" / "compileiq", f"worker-{i}", "cmake") for i in range(3))
    space = FlagSpace("nvcc", (Dimension("use_fast_math", "", ((), ("--use_fast_math",))),))
    gpus = Gpus()
    runners = [
        OnGpu(spec, GpuSlot(i, str(i), "fake GPU"), gpus, t, random.Random(i)) for i, t in enumerate(winner_times)
    ]
    return ValidationContext(trees, space, 0), gpus, runners


def _most_at_once(spans: list[tuple[str, float, float]], devices: set[str]) -> int:
    """The most runs of `devices` that were under way at one moment."""
    edges = sorted((t, step) for d, a, b in spans if d in devices for t, step in ((a, 1), (b, -1)))
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@pytest.mark.unit
def test_the_other_gpus_confirm_the_winner_at_the_same_time_and_the_store_stays_on_the_tunes_thread(tmp_path):
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 8.0))
    store = MainThreadStore()
    events, recorder = recording_stream()
    winner, _ = validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))
    assert winner is not None and winner.flagset == WINNER
    texts = [e.text for e in recorder.of("info")]
    assert any(t.startswith("confirmed on GPU 1 (fake GPU)") for t in texts), texts
    assert any(t.startswith("confirmed on GPU 2 (fake GPU)") for t in texts), texts
    # both other GPUs measured, and at the same time: their runs overlap (one after the other they never do)
    assert {d for d, _, _ in gpus.spans} == {"0", "1", "2"}
    assert _most_at_once(gpus.spans, {"1", "2"}) == 2, "the confirmations on the other GPUs ran one after another"
    assert gpus.most_building == 1, "two builds ran at once in one tree"
    confirmations = store.validations["confirmations"]
    assert [c.accepted for c in confirmations] == [True, True]


@pytest.mark.unit
def test_a_gpu_that_does_not_confirm_the_winner_keeps_it_from_being_written(tmp_path):
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 10.0))  # GPU 2: the winner is no faster
    events, recorder = recording_stream()
    winner, contributions = validate_and_ablate(
        context, gpus.build, first, [WINNER], 0.01, events, MainThreadStore(), tuple(others)
    )
    assert winner is None and contributions == ()
    texts = [e.text for e in recorder.of("info")]
    assert any(t.startswith("confirmed on GPU 1 (fake GPU)") for t in texts), texts
    assert any("is not confirmed on GPU 2 (fake GPU)" in t for t in texts), texts


@pytest.mark.unit
def test_a_gpus_confirmation_kept_in_the_store_is_not_measured_again(tmp_path):
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 8.0))
    store = MainThreadStore()
    events, _ = recording_stream()
    validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))
    measured = len(gpus.spans)
    gpus.spans.clear()
    events, recorder = recording_stream()  # a rerun after a kill: every decision restored
    winner, _ = validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))
    assert winner is not None and measured > 0 and gpus.spans == []
    assert sum("restored from the trial store" in e.text for e in recorder.of("info")) >= 3


@pytest.mark.unit
def test_the_plan_prices_the_confirmations_on_other_gpus_as_one_validation():
    costs = Costs(build=1.0, run=0.5, workloads=2)
    none = finish_cost(costs, 1, 5, 0, 0)
    one = finish_cost(costs, 1, 5, 0, 1)
    seven = finish_cost(costs, 1, 5, 0, 7)
    assert one > none and seven == pytest.approx(one)
    assert one - none == pytest.approx(costs.validation(1, 5))
