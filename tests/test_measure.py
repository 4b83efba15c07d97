"""Runner: measuring one variant tree, and pairing its runs with runs of the baseline build (real
processes: a script that logs which tree it ran in and prints a time that depends on the tree)."""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compileiq_cmake.measure.runner import BenchCommand, Runner
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.project.cmake_project import VariantTree

SCRIPT = """
import os, pathlib, sys
log = pathlib.Path(sys.argv[1])
runs = len(log.read_text().split()) if log.exists() else 0
with log.open("a") as f:
    f.write(os.path.basename(os.getcwd()) + "\\n")
drift = 1.0 + 0.1 * runs            # the machine slows down with every run
work = 8.0 if os.path.basename(os.getcwd()) == "trial" else 10.0
print(f"time_ms={work * drift}")
print("PASS")
"""


def _runner(tmp_path: Path) -> tuple[Runner, VariantTree, VariantTree, Path]:
    tool = tmp_path / "tool"  # outside the build dir, so that the command is not mapped into the trees
    tool.mkdir()
    script = tool / "bench.py"
    script.write_text(SCRIPT)
    log = tool / "runs.log"
    build = tmp_path / "build"
    spec = TuneSpec(
        source_dir=tmp_path,
        build_dir=build,
        target="t",
        benchmark=(sys.executable, str(script), str(log)),
        metric=MetricSpec.parse(r"time_ms=([0-9.eE+-]+)", True),
        output=tmp_path / "o.toml",
        pass_regex="PASS",
    )
    trees = []
    for name in ("trial", "reference"):
        tree = VariantTree(build / "compileiq", name, "cmake")
        tree.path.mkdir(parents=True)
        trees.append(tree)
    return Runner(spec, BenchCommand(spec.benchmark, (), build)), trees[0], trees[1], log


@pytest.mark.unit
@pytest.mark.parametrize(
    ("race", "first", "then"),
    [
        (  # racing (the default): each trial starts with its own run, so that one of 1 or 3 pairs ends with the
            # baseline's, which the next trial on the GPU may share (measure.shared_reference)
            True,
            ["trial", "trial", "reference", "reference", "trial", "trial", "reference", "reference", "trial"],
            ["trial", "reference", "reference", "trial"],
        ),
        (  # --no-race: the order of before
            False,
            ["trial", "reference", "trial", "trial", "reference", "reference", "trial", "trial", "reference"],
            ["reference", "trial", "trial", "reference"],
        ),
    ],
)
def test_paired_runs_alternate_which_goes_first_and_cancel_drift(tmp_path, race, first, then):
    runner, trial, reference, log = _runner(tmp_path)
    runner = replace(runner, spec=replace(runner.spec, race=race))
    m = runner.measure(trial, repeats=4, warmup=1, reference=reference)
    assert m.status.value == "ok", m.reason
    assert log.read_text().split() == first
    (meas,) = m.measurements
    assert meas.paired and len(meas.samples) == len(meas.reference) == 4 and meas.shared == 0
    # unpaired, drift makes the trial look like anything; paired ratios stay near the true 0.8
    assert 0.75 < statistics.median(meas.ratios()) < 0.85
    more = runner.extend(trial, m.measurements, 2, reference)
    (meas,) = more.measurements
    assert len(meas.samples) == len(meas.reference) == 6
    assert log.read_text().split()[9:] == then


@pytest.mark.unit
def test_unpaired_measurement_runs_only_the_trial(tmp_path):
    runner, trial, _, log = _runner(tmp_path)
    m = runner.measure(trial, repeats=3, warmup=1)
    (meas,) = m.measurements
    assert not meas.paired and meas.reference == () and len(meas.samples) == 3
    assert log.read_text().split() == ["trial"] * 4
