"""The execution interface: the tune builds and runs through an Executor; replay and local are two
implementations of one protocol, chosen from the setup, and the search never branches on which."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from compileiq_cmake.decide import procedure
from compileiq_cmake.execute.executor import LocalExecutor, ReplayExecutor
from compileiq_cmake.execute.factory import make_executor
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.search.landscape import Landscape
from compileiq_cmake.tune import baseline, publish, search_loop, trial
from compileiq_cmake.tune import finalists as finalists_stage
from compileiq_cmake.tune import orchestration as tune
from compileiq_cmake.tune.replay_setup import replay_setup

from conftest import replay_spec

SAMPLE = Path(__file__).resolve().parents[1] / "benchmarks" / "landscapes" / "sample_small.json"


def _replay_spec(tmp_path: Path, seed: int = 0) -> TuneSpec:
    return replay_spec(tmp_path, SAMPLE, seed=seed)


@pytest.mark.unit
def test_replay_setup_gets_the_replay_executor_and_it_answers_builds_and_runs(tmp_path):
    spec = _replay_spec(tmp_path)
    ts = replay_setup(spec, lambda line: None)
    executor = make_executor(ts.execution_plan)
    assert isinstance(executor, ReplayExecutor) and executor.name == "replay"
    best = Landscape.load(SAMPLE).best_valid()
    built = executor.build(ts.trees[0], ts.space.flagset_from_flags(list(best.flags)))
    assert built.ok and built.compile_command.startswith("(replay)")
    run = executor.runner.run(ts.trees[0], ())
    assert run.value and run.value > 0


@pytest.mark.unit
def test_a_replays_noise_stream_can_be_another_than_its_seeds(tmp_path, monkeypatch):
    """COMPILEIQ_REPLAY_NOISE_SEED: the same search seed measured with other noise (benchmarks: how often a tune
    agrees with itself); unset, the seed's stream; not an integer, a usage error naming it."""
    from compileiq_cmake.model.errors import UsageError
    from compileiq_cmake.tune.replay_setup import NOISE_VARIABLE

    spec = _replay_spec(tmp_path, seed=3)

    def runs() -> list[float]:
        ts = replay_setup(spec, lambda line: None)
        executor = make_executor(ts.execution_plan)
        best = Landscape.load(SAMPLE).best_valid()
        assert executor.build(ts.trees[0], ts.space.flagset_from_flags(list(best.flags))).ok
        return [executor.runner.run(ts.trees[0], ()).value for _ in range(4)]

    first = runs()
    assert runs() == first  # the seed's stream, again
    monkeypatch.setenv(NOISE_VARIABLE, "3")
    assert runs() == first
    monkeypatch.setenv(NOISE_VARIABLE, "10003")
    other = runs()
    assert other != first and len(set(other)) == 4
    monkeypatch.setenv(NOISE_VARIABLE, "x")
    with pytest.raises(UsageError, match="COMPILEIQ_REPLAY_NOISE_SEED='x' is not an integer"):
        replay_setup(spec, lambda line: None)


@pytest.mark.unit
def test_local_executor_wraps_the_variant_trees():
    executor = LocalExecutor(context=None, runner=None)
    assert executor.name == "local" and callable(executor.build)


@pytest.mark.unit
def test_the_search_stages_do_not_branch_on_the_backend():
    for module in (tune, trial, procedure, baseline, search_loop, finalists_stage, publish):
        source = inspect.getsource(module)
        assert ".replay.build" not in source and "setup.replay or" not in source, module.__name__


@pytest.mark.unit
def test_eta_counts_the_finalists_and_invalid_reasons_are_whole(tmp_path):
    """The progress line's ETA covers the whole tune (validation and ablation took 23 s of a 36 s tune that
    the old ETA left out), and an invalid trial's reason is printed whole."""
    from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
    from compileiq_cmake.model.timebox import TimeBox
    from compileiq_cmake.tune.budget import Budget
    from compileiq_cmake.tune.lines import progress

    spec = replay_spec(tmp_path, SAMPLE, workloads=(("--n", "1"), ("--n", "2")), repeats=3, workers=1)
    ts = replay_setup(spec, lambda line: None)
    base = Trial(
        0,
        FlagSet((), ()),
        Status.OK,
        "",
        (Measurement(("--n", "1"), (1.0, 1.0, 1.0)), Measurement(("--n", "2"), (2.0, 2.0, 2.0))),
        10.0,
        8.0,
        18.0,
        "",
    )
    # 2 workloads x (3 samples + 1 warm-up) = 8 runs in 8 s: 1 s per run, 10 s per build; the budget's one cost
    # model: 3 finalists and the baseline re-built and a warm-up round and 5 rounds, 3 ablation steps, the minimal
    # set's validation and the winner's confirmation (each: 2 builds and 1 + 5 rounds of 2 variants)
    expected = 10.0 * 4 + (1 + 5) * 4 * 2 * 1.0 + 5 * (2 * 10.0 + (1 + 5) * 2 * 2 * 1.0)
    _, finish = Budget(spec, TimeBox(None)).eta({"b": base}, 30)
    assert abs(finish - expected) < 1e-9
    reason = "build failed: src/kernel.cu(12): error: identifier 'foo' is undefined, and the rest of a long line " * 2
    bad = Trial(1, FlagSet((("restrict", 1),), ("--restrict",)), Status.BUILD_FAILED, reason, (), 10.0, 0.0, 10.0, "")
    lines: list[str] = []
    import time

    progress(ts, lines.append, bad, base, {"b": base, "x": bad}, time.perf_counter() - 20)
    assert " ".join(reason.split()) in lines[0] and "+ finalists ~" in lines[0], lines[0]


@pytest.mark.unit
def test_the_finalists_limits_place_the_validations_looks_within_the_rounds_the_box_holds(tmp_path):
    """CI: a 150 s box held 6 validation rounds, but the looks were placed for 30 (5, 8, 12, ...): at round 6
    the validation could spend 2.9% of its error budget and a 20x gain stayed undecided. The limits now say
    how many rounds fit (the validation's looks are placed within them): that many fit, one more does not."""
    from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
    from compileiq_cmake.model.timebox import TimeBox
    from compileiq_cmake.tune.budget import Budget

    spec = TuneSpec(
        source_dir=tmp_path,
        build_dir=tmp_path / "build",
        target="sample_small",
        benchmark=("replay",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=tmp_path / "compileiq.toml",
        replay=str(SAMPLE),
        workloads=(("--n", "1"), ("--n", "2")),
        repeats=3,
        workers=1,
        time_limit=150.0,
    )
    base = Trial(
        0,
        FlagSet((), ()),
        Status.OK,
        "",
        (Measurement(("--n", "1"), (1.0, 1.0, 1.0)), Measurement(("--n", "2"), (2.0, 2.0, 2.0))),
        10.0,
        8.0,
        18.0,
        "",
    )
    now = [0.0]
    for spent, rounds in ((60.0, (5, 5)), (40.0, (10, 10)), (140.0, (None, None))):
        now[0] = spent
        budget = Budget(spec, TimeBox(150.0, clock=lambda: now[0], started=0.0))
        finish = budget.finish({"b": base}, 1, 0, 0, record=False)
        if finish.finalists == 0:
            assert rounds == (None, None), spent
            continue
        limits = budget.gates({"b": base}, finish, {})
        costs = budget.costs([base])
        after = finish.seconds - costs.validation(1, finish.rounds)
        assert limits.max_rounds >= finish.rounds
        assert costs.validation(1, limits.max_rounds) + after <= budget.remaining() + 1e-9
        assert costs.validation(1, limits.max_rounds + 1) + after > budget.remaining()
        assert rounds[0] <= limits.max_rounds <= rounds[1], limits.max_rounds
        # another GPU's validation of the winner: the rounds left when it starts (after the builds, before the write)
        from compileiq_cmake.decide.rounds import WARMUP  # noqa: PLC0415
        from compileiq_cmake.tune.plan import WRITE_SECONDS  # noqa: PLC0415

        held, pair = limits.elsewhere_rounds(), costs.round(2)
        assert held >= finish.rounds
        if held > finish.rounds:
            room = budget.remaining() - WRITE_SECONDS
            assert pair * (held + WARMUP) <= room + 1e-9 < pair * (held + 1 + WARMUP), (held, room, pair)
        now[0] += 20.0  # later: fewer
        assert limits.elsewhere_rounds() < held or held == finish.rounds
    assert Budget(spec, TimeBox(None)).gates({"b": base}, finish, {}).max_rounds is None  # no box: the spec's


@pytest.mark.unit
def test_lookahead_keeps_the_gpus_fed_and_no_more():
    """Issue 13: trials in flight are asked blind; the conveyor keeps per GPU the trial on it plus what builds
    in the time of a benchmark, and one spare (H200 multi-file tune: build ~10 s, benchmark ~9 s -> 4 of 8)."""
    from compileiq_cmake.execute.pipeline import lookahead
    from compileiq_cmake.model.records import FlagSet, Status, Trial

    def t(i, build, bench, twin=None):
        return Trial(
            i, FlagSet((), (f"-f{i}",)), Status.OK, build_seconds=build, bench_seconds=bench, same_code_as=twin
        )

    assert lookahead([], 1, 8) == 8  # nothing measured yet: every tree
    h200 = [t(0, 9.3, 3.8), t(1, 10.1, 9.4), t(2, 10.0, 10.0), t(3, 11.0, 9.6), t(4, 10.0, 0.0, twin=1)]
    assert lookahead(h200, 1, 8) == 1 * (1 + 2) + 1
    assert lookahead(h200, 2, 8) == 2 * (1 + 2) + 1
    assert lookahead(h200, 2, 6) == 6  # never more than the build trees
    quick_runs = [t(0, 10.0, 0.01), t(1, 10.0, 0.02)]  # builds dominate: every tree builds
    assert lookahead(quick_runs, 1, 8) == 8
    slow_runs = [t(0, 2.0, 60.0)]
    assert lookahead(slow_runs, 1, 8) == 3
