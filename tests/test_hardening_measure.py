"""Issue 10, measuring a tree: the --compare-file of an earlier run is never read as this run's, and
metric warnings reach the caller once per trial."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compileiq_cmake.measure.runner import BenchCommand, Runner
from compileiq_cmake.model.records import Status
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.project.cmake_project import VariantTree

# writes result.txt only on its first run; exits 0 every time
WRITES_ONCE = """
import pathlib, sys
count = pathlib.Path(sys.argv[1])
runs = int(count.read_text()) if count.exists() else 0
count.write_text(str(runs + 1))
if runs == 0:
    pathlib.Path("result.txt").write_text("1.5 2.5\\n")
print("time_ms=3.0")
"""

TWICE = """
print("time_ms=9.0")
print("time_ms=3.0")
"""


def _runner(tmp_path: Path, body: str, **spec_kw) -> tuple[Runner, VariantTree]:
    tool = tmp_path / "tool"
    tool.mkdir()
    script = tool / "bench.py"
    script.write_text(body)
    build = tmp_path / "build"
    spec = TuneSpec(
        source_dir=tmp_path,
        build_dir=build,
        target="t",
        benchmark=(sys.executable, str(script), str(tool / "count")),
        metric=MetricSpec.parse(r"time_ms=(\S+)", True),
        output=tmp_path / "o.toml",
        **spec_kw,
    )
    tree = VariantTree(build / "compileiq", "trial", "cmake")
    tree.path.mkdir(parents=True)
    return Runner(spec, BenchCommand(spec.benchmark, (), build)), tree


@pytest.mark.unit
def test_compare_file_of_an_earlier_run_is_not_read_again(tmp_path):
    runner, tree = _runner(tmp_path, WRITES_ONCE, compare_file="result.txt")
    first = runner.run(tree, ())
    assert first.ok and first.numbers == (1.5, 2.5)
    runner.reference[()] = first.numbers
    second = runner.run(tree, ())
    assert not second.ok, "a run that wrote no result.txt was compared with the previous run's file"
    assert "did not write result.txt" in second.reason


@pytest.mark.unit
def test_compare_file_removed_before_the_run(tmp_path):
    runner, tree = _runner(tmp_path, "print('time_ms=3.0')", compare_file="result.txt")
    (tree.path / "result.txt").write_text("7 8 9\n")  # left over from another build in this tree
    res = runner.run(tree, ())
    assert not res.ok and "did not write result.txt" in res.reason
    assert not (tree.path / "result.txt").exists()


@pytest.mark.unit
def test_metric_warnings_reach_the_trial_once(tmp_path):
    runner, tree = _runner(tmp_path, TWICE)
    res = runner.run(tree, ())
    assert res.ok and res.value == 3.0 and res.printed == "3.0"
    assert len(res.warnings) == 1 and "different values" in res.warnings[0]
    m = runner.measure(tree, repeats=3, warmup=1)
    assert m.status is Status.OK and len(m.warnings) == 1


@pytest.mark.unit
def test_negative_metric_makes_the_trial_invalid(tmp_path):
    runner, tree = _runner(tmp_path, "print('time_ms=-3.2')")
    m = runner.measure(tree, repeats=2, warmup=0)
    assert m.status is not Status.OK and "metric is -3.2: not a positive time" in m.reason
