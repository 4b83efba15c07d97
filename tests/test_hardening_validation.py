"""Issue 10, validation and ablation: a finalist whose runs fail is rejected at once with its reason and
does not keep the other comparisons running to --max-rounds (a fake runner: no CMake, no processes)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compileiq_cmake.decide.rounds import interleave
from compileiq_cmake.decide.validation import validate
from compileiq_cmake.measure.runner import RunResult
from compileiq_cmake.model.events import recording as recording_stream
from compileiq_cmake.model.records import BuildResult, FlagSet, Status
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.project.cmake_project import VariantTree


@dataclass
class FakeRunner:
    """Times per tree name (None: every run of that tree fails), with a little noise; counts runs."""

    spec: TuneSpec
    times: dict[str, float | None]
    runs: dict[str, int] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(1))

    def run(self, tree: VariantTree, workload) -> RunResult:
        name = tree.path.name
        self.runs[name] = self.runs.get(name, 0) + 1
        t = self.times[name]
        if t is None:
            return RunResult(Status.NUMERICS_CHANGED, "numerics changed: max rel err 3e-01 > 1e-05")
        return RunResult(Status.OK, "", t * (1 + self.rng.gauss(0, 0.002)), 0.0)


def _setup(tmp_path: Path, times: dict[str, float | None]) -> tuple[FakeRunner, tuple[VariantTree, ...]]:
    spec = TuneSpec(
        source_dir=tmp_path,
        build_dir=tmp_path / "b",
        target="t",
        benchmark=("x",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=tmp_path / "o.toml",
        workloads=(("--n", "1"), ("--n", "2")),
        min_rounds=3,
        max_rounds=15,
    )
    trees = tuple(VariantTree(tmp_path / "b" / "compileiq", name, "cmake") for name in times)
    return FakeRunner(spec, times), trees


def _build(tree: VariantTree, flagset: FlagSet) -> BuildResult:
    return BuildResult(ok=True, seconds=0.0)


@pytest.mark.unit
def test_failing_finalist_is_rejected_at_once_and_the_others_decide(tmp_path):
    runner, trees = _setup(tmp_path, {"base": 10.0, "broken": None, "fast": 8.0})
    base, broken, fast = FlagSet((), ()), FlagSet((("a", 1),), ("-a",)), FlagSet((("b", 1),), ("-b",))
    events, recorder = recording_stream()
    results = validate(runner, _build, trees, base, [broken, fast], 0.01, 0, events)
    assert not results[0].accepted and "numerics changed" in results[0].reason
    # the summary line (a progress line "round n ... done" comes too when a round takes 5 s on a loaded machine)
    (said,) = [e for e in recorder.of("info") if "round" not in e.data]
    assert said.stage == "finalists" and said.data["candidates"] == 2 and 3 <= said.data["rounds"] <= 15
    assert said.text == f"validation: 2 candidates and the baseline, {said.data['rounds']} interleaved rounds"
    assert results[1].accepted, results[1].reason
    assert runner.runs["broken"] == 1, "a failed finalist was run again"
    assert runner.runs["base"] < 15 * 2, "the failed finalist kept validation going to --max-rounds"


@pytest.mark.unit
def test_interleave_stops_when_a_required_variant_fails(tmp_path):
    runner, trees = _setup(tmp_path, {"with": 10.0, "without": None})
    variants = {"with": trees[0], "without": trees[1]}
    inter = interleave(runner, variants, 3, 15, 0, lambda samples: False, required=("with", "without"))
    assert inter.rounds == 0 and "without" in inter.failures  # the warm-up round's failure counts
    assert runner.runs.get("with", 0) <= len(runner.spec.workloads) and runner.runs["without"] == 1


@pytest.mark.unit
def test_ablation_keeps_per_file_flags_through_every_step_and_drops_those_that_gain_nothing(tmp_path):
    """Issue 13: the per-file stage's `[path]flag` tokens are not dimensions of the space. Ablation must keep
    them while it removes the global dimensions (the "without" build used to lose them), and test each file's
    own flags like a dimension: kept only if removing them is significantly slower (on the H200 a per-file
    -Xptxas=-O1 of 0.4% was written without such a test)."""
    from compileiq_cmake.decide.ablation import ablate
    from compileiq_cmake.flags.space import Dimension, FlagSpace

    effect = {"--use_fast_math": 0.80, "[src/gemm.cu]-Xptxas=-O1": 0.95, "[src/stream.cu]-Xptxas=-O1": 1.0}
    built: dict[str, FlagSet] = {}

    @dataclass
    class ByFlags(FakeRunner):
        def run(self, tree: VariantTree, workload) -> RunResult:
            t = 10.0
            for flag in built[tree.path.name].flags:
                t *= effect[flag]
            return RunResult(Status.OK, "", t * (1 + self.rng.gauss(0, 0.002)), 0.0)

    def build(tree: VariantTree, flagset: FlagSet) -> BuildResult:
        built[tree.path.name] = flagset
        return BuildResult(ok=True, seconds=0.0)

    fake, trees = _setup(tmp_path, {"t0": 1.0, "t1": 1.0})
    runner = ByFlags(fake.spec, {})
    space = FlagSpace("gcc", (Dimension("use_fast_math", "", ((), ("--use_fast_math",))),))
    winner = FlagSet(
        (("use_fast_math", 1),), ("--use_fast_math", "[src/gemm.cu]-Xptxas=-O1", "[src/stream.cu]-Xptxas=-O1")
    )
    seen: list[tuple[str, ...]] = []

    def recording(tree, flagset):
        seen.append(flagset.flags)
        return build(tree, flagset)

    events, recorder = recording_stream()
    minimal, contributions = ablate(runner, recording, trees, space, winner, 0.01, 0, events)
    steps = {" ".join(e.data["flags"]): e.data["kept"] for e in recorder.of("info")}  # one event per step, typed
    assert steps == {"--use_fast_math": True, "[src/gemm.cu]-Xptxas=-O1": True, "[src/stream.cu]-Xptxas=-O1": False}
    by_dim = {c.dimension: c for c in contributions}
    assert set(by_dim) == {"use_fast_math", "per-file src/gemm.cu", "per-file src/stream.cu"}
    assert by_dim["use_fast_math"].kept and by_dim["per-file src/gemm.cu"].kept
    assert not by_dim["per-file src/stream.cu"].kept
    assert by_dim["per-file src/gemm.cu"].flags == ("[src/gemm.cu]-Xptxas=-O1",)
    assert minimal.flags == ("--use_fast_math", "[src/gemm.cu]-Xptxas=-O1")
    assert minimal.choices == (("use_fast_math", 1),)
    # removing the global flag kept both files' own flags
    assert ("[src/gemm.cu]-Xptxas=-O1", "[src/stream.cu]-Xptxas=-O1") in seen
