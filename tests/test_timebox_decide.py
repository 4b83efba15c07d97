"""Issue 21, the finalists' stage inside the time box: validation rounds stop when the box says so, ablation
removes the flags expected to matter least together (split only when the group matters), stops at the box
and keeps what it did not test; an undecided step is kept and not stored (fake runner: no CMake, no processes)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from compileiq_cmake.decide.ablation import ablate
from compileiq_cmake.decide.rounds import interleave
from compileiq_cmake.decide.validation import UNDECIDED
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.measure.runner import RunResult
from compileiq_cmake.model.records import BuildResult, FlagSet, Status
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.project.cmake_project import VariantTree

pytestmark = pytest.mark.unit

EFFECT = {"-fa": 1.0, "-fb": 1.0, "-fc": 1.0, "-fd": 0.8}  # only -fd makes it faster


@dataclass
class ByFlags:
    spec: TuneSpec
    built: dict[str, FlagSet]
    runs: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(3))

    def run(self, tree: VariantTree, workload) -> RunResult:
        self.runs += 1
        t = 10.0
        for flag in self.built[tree.path.name].flags:
            t *= EFFECT[flag]
        return RunResult(Status.OK, "", t * (1 + self.rng.gauss(0, 0.002)), 0.0)


def _world(tmp_path: Path):
    spec = TuneSpec(
        source_dir=tmp_path,
        build_dir=tmp_path / "b",
        target="t",
        benchmark=("x",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=tmp_path / "o.toml",
        min_rounds=3,
        max_rounds=15,
    )
    trees = tuple(VariantTree(tmp_path / "b" / "compileiq", name, "cmake") for name in ("t0", "t1"))
    built: dict[str, FlagSet] = {}
    builds: list[tuple[str, ...]] = []

    def build(tree: VariantTree, flagset: FlagSet) -> BuildResult:
        built[tree.path.name] = flagset
        builds.append(flagset.flags)
        return BuildResult(ok=True, seconds=0.0)

    space = FlagSpace("gcc", tuple(Dimension(f[1:], "", ((), (f,))) for f in EFFECT))
    winner = space.flagset({f[1:]: 1 for f in EFFECT})
    return ByFlags(spec, built), build, builds, trees, space, winner


def test_flags_expected_to_matter_least_go_together_and_one_step_drops_them(tmp_path):
    runner, build, builds, trees, space, winner = _world(tmp_path)
    expected = {"fa": 1.0, "fb": 1.001, "fc": 0.999, "fd": 1.25}
    minimal, contributions = ablate(runner, build, trees, space, winner, 0.01, 0, lambda _: None, expected=expected)
    assert minimal.flags == ("-fd",)
    dims = [c.dimension for c in contributions]
    assert dims == ["fc+fa+fb", "fd"], dims  # one group step for the three useless flags, fd alone
    assert [c.kept for c in contributions] == [False, True]
    assert len(builds) == 4  # two steps x (with, without): one-by-one would have built 8


def test_a_group_that_matters_is_split_until_the_flag_that_matters_is_alone(tmp_path):
    runner, build, builds, trees, space, winner = _world(tmp_path)
    wrong = {"fa": 1.0, "fb": 1.0, "fc": 1.0, "fd": 1.0}  # the estimate misses that fd matters
    minimal, contributions = ablate(runner, build, trees, space, winner, 0.01, 0, lambda _: None, expected=wrong)
    assert minimal.flags == ("-fd",)
    by_dim = {c.dimension: c for c in contributions}
    assert by_dim["fd"].kept and not any(c.kept for d, c in by_dim.items() if d != "fd")
    assert all("+" not in d or not by_dim[d].kept for d in by_dim)  # no kept group: it was split


def test_with_room_for_fewer_steps_than_flags_the_first_step_keeps_only_the_most_expected(tmp_path):
    """Issue 21 (H200, slow runs): a winner of 8 flags and time for 2 steps tried one flag of 8 and kept
    the other 7 unablated. With fewer steps than dimensions, one step removes every dimension but the one
    expected to matter most; here it is enough, and the rest were not needed."""
    runner, build, builds, trees, space, winner = _world(tmp_path)
    expected = {"fa": 1.02, "fb": 1.03, "fc": 1.04, "fd": 1.25}  # every one above min_gain: no group of its own
    minimal, contributions = ablate(
        runner, build, trees, space, winner, 0.01, 0, lambda _: None, expected=expected, steps=1
    )
    assert [c.dimension for c in contributions] == ["fa+fb+fc", "fd"] and minimal.flags == ("-fd",)
    assert [c.kept for c in contributions] == [False, True]
    everyone = ablate(runner, build, trees, space, winner, 0.01, 0, lambda _: None, expected=expected, steps=4)
    assert [c.dimension for c in everyone[1]] == ["fa", "fb", "fc", "fd"]  # room for each: one at a time


def test_the_time_box_stops_ablation_and_keeps_the_untested_flags(tmp_path):
    runner, build, builds, trees, space, winner = _world(tmp_path)
    allowed = iter([True])  # one step fits
    stored: dict[str, object] = {}
    lines: list[str] = []
    minimal, contributions = ablate(
        runner,
        build,
        trees,
        space,
        winner,
        0.01,
        0,
        lines.append,
        on_step=stored.__setitem__,
        may_start=lambda: next(allowed, False),
    )
    assert [c.kept for c in contributions] == [False, True, True, True]  # fa dropped; the rest untested, kept
    assert all("not ablated: the time limit" in c.reason for c in contributions[1:])
    assert minimal.flags == ("-fb", "-fc", "-fd")
    assert len(stored) == 1 and any("not ablated" in line for line in lines)


def test_validation_rounds_stop_at_the_box_and_an_undecided_step_is_kept_and_not_stored(tmp_path):
    runner, build, builds, trees, space, winner = _world(tmp_path)
    build(trees[0], FlagSet((), ()))
    build(trees[1], FlagSet((("fd", 1),), ("-fd",)))
    inter = interleave(
        runner, {"a": trees[0], "b": trees[1]}, 5, 15, 0, lambda s: False, may_continue=lambda seconds: False
    )
    assert inter.rounds == 1 and inter.cut_short
    stored: dict[str, object] = {}
    only_fd = space.flagset({"fd": 1})
    minimal, contributions = ablate(
        runner,
        build,
        trees,
        space,
        only_fd,
        0.01,
        0,
        lambda _: None,
        on_step=stored.__setitem__,
        may_continue=lambda seconds: False,
    )
    assert contributions[0].kept and contributions[0].reason == UNDECIDED
    assert not stored and minimal == only_fd


def test_one_run_each_decides_nothing():
    """A round cut to one run per side used to give a zero-width interval and p=0 ("certain")."""
    from compileiq_cmake.decide.stats import compare, compare_paired, geomean_comparison

    for c in (compare([10.0], [8.0]), compare_paired([10.0], [8.0])):
        assert c.p_value == 1.0 and c.ci.low == 0.0 and c.ci.high == float("inf")
        assert not c.faster(0.0) and not c.slower()
    speedup, ci = geomean_comparison([compare([10.0], [8.0]), compare([10.0, 10.1, 9.9], [8.0, 8.1, 7.9])])
    assert ci.low == 0.0 and ci.high == float("inf") and speedup > 1


def test_an_advanced_controls_file_is_ablated_first_and_alone_and_dropped_when_it_does_not_matter(tmp_path):
    """Issue 50 (H100, gemm_app in a 120 s box): the box ended the ablation before the winner's control file was
    tried, so an ACF nobody had shown to matter was written. An opaque dimension (Dimension.ablated_first, the
    Advanced Controls) now has the first step of its own, whatever the estimates and the room say."""
    runner, build, builds, trees, space, winner = _world(tmp_path)
    opaque = FlagSpace(
        space.family, tuple(replace(d, ablated_first=d.name == "fa") for d in space.dimensions)
    )  # -fa does nothing (EFFECT): the ACF that does not matter
    winner = opaque.flagset({f[1:]: 1 for f in EFFECT})
    expected = {"fa": 1.3, "fb": 1.02, "fc": 1.03, "fd": 1.25}  # the search thought fa mattered most
    allowed = iter([True])  # room for one step only
    minimal, contributions = ablate(
        runner,
        build,
        trees,
        opaque,
        winner,
        0.01,
        0,
        lambda _: None,
        expected=expected,
        steps=1,
        may_start=lambda: next(allowed, False),
    )
    assert contributions[0].dimension == "fa" and not contributions[0].kept  # measured first, alone, dropped
    assert "-fa" not in minimal.flags and all(c.kept for c in contributions[1:])  # the rest: not ablated, kept
    plain = ablate(runner, build, trees, space, winner, 0.01, 0, lambda _: None, expected=expected, steps=1)
    assert [c.dimension for c in plain[1]][-1] == "fa"  # without the mark: expected to matter most, so last
