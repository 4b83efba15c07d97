"""The execution interface: the tune builds and runs through an Executor; replay and local are two
implementations of one protocol, chosen from the setup, and the search never branches on which."""

from __future__ import annotations

import inspect
from pathlib import Path

from compileiq_cmake import finalists, trial, tune
from compileiq_cmake.executor import LocalExecutor, ReplayExecutor, make_executor
from compileiq_cmake.landscape import Landscape
from compileiq_cmake.spec import MetricSpec, TuneSpec
from compileiq_cmake.tune_setup import replay_setup

SAMPLE = Path(__file__).resolve().parents[1] / "benchmarks" / "landscapes" / "sample_small.json"


def test_replay_setup_gets_the_replay_executor_and_it_answers_builds_and_runs(tmp_path):
    spec = TuneSpec(source_dir=tmp_path, build_dir=tmp_path / "build", target="sample_small", benchmark=("replay",),
                    metric=MetricSpec.parse("WALLTIME", True), output=tmp_path / "compileiq.toml",
                    replay=str(SAMPLE))
    ts = replay_setup(spec, lambda line: None)
    executor = make_executor(ts)
    assert isinstance(executor, ReplayExecutor) and executor.name == "replay"
    best = Landscape.load(SAMPLE).best_valid()
    built = executor.build(ts.trees[0], ts.space.flagset_from_flags(list(best.flags)))
    assert built.ok and built.compile_command.startswith("(replay)")
    run = executor.runner.run(ts.trees[0], ())
    assert run.value and run.value > 0


def test_local_executor_wraps_the_variant_trees():
    executor = LocalExecutor(setup=None, runner=None)
    assert executor.name == "local" and callable(executor.build)


def test_the_search_stages_do_not_branch_on_the_backend():
    for module in (tune, trial, finalists):
        source = inspect.getsource(module)
        assert ".replay.build" not in source and "setup.replay or" not in source, module.__name__
