"""Baseline runs shared between trials (issue 54, measure.shared_reference): on a noisy machine each trial run is
paired with a run of the project's own build; a trial measured right after another on the same GPU pairs its
first run with the baseline run that ended the other, and only then."""

from __future__ import annotations

import itertools
import json
import sqlite3
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from compileiq_cmake.execute.shared import Lease, SharedSlots
from compileiq_cmake.measure.runner import BenchCommand, Runner, RunResult
from compileiq_cmake.measure.shared_reference import SHARE_GAP, ReferenceRuns
from compileiq_cmake.model.records import FlagSet, Status, Trial
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.results.store import TrialStore

from conftest import REPO, replay_args, run_cli, scripted_spec


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class _Logged(Runner):
    """Each run logs (tree, workload) and gives the next value of a counter: every run's value is its own."""

    log: list[tuple[str, str]] = field(default_factory=list)
    count: itertools.count = field(default_factory=lambda: itertools.count(1))

    def run(self, tree: VariantTree, workload: tuple[str, ...]) -> RunResult:
        with self.holding():
            self.log.append((tree.path.name, workload[0] if workload else ""))
            return RunResult(Status.OK, "", float(next(self.count)), seconds=0.01)


def _setup(tmp_path: Path, workloads=((),), race=True, clock=None) -> tuple[_Logged, dict[str, VariantTree]]:
    spec = scripted_spec(tmp_path, workloads, race=race)
    trees = {n: VariantTree(tmp_path / "build" / "compileiq", n, "cmake") for n in ("a", "b", "c", "ref")}
    runner = _Logged(spec, BenchCommand(spec.benchmark, (), tmp_path / "build"), shared=ReferenceRuns(clock or Clock()))
    return runner, trees


@pytest.mark.unit
def test_a_trial_measured_next_on_the_gpu_pairs_its_first_run_with_the_baseline_run_before_it(tmp_path):
    runner, t = _setup(tmp_path)
    a = runner.measure(t["a"], 1, 0, t["ref"])
    b = runner.measure(t["b"], 1, 0, t["ref"])
    c = runner.measure(t["c"], 1, 0, t["ref"])
    d = runner.measure(t["a"], 1, 0, t["ref"])
    # a: its run, then the baseline's; b shares that one; c runs its own again (b ended with b's run); d shares c's
    assert [n for n, _ in runner.log] == ["a", "ref", "b", "c", "ref", "a"]
    (ma,), (mb,), (mc,), (md,) = (x.measurements for x in (a, b, c, d))
    assert (ma.samples, ma.reference, ma.shared) == ((1.0,), (2.0,), 0)
    assert (mb.samples, mb.reference, mb.shared) == ((3.0,), (2.0,), 1)  # the same baseline run's value
    assert (mc.shared, md.shared, md.reference) == (0, 1, mc.reference)
    # four trials of one pair each: 6 runs instead of 8


@pytest.mark.unit
def test_within_one_trial_every_pair_has_a_baseline_run_of_its_own(tmp_path):
    runner, t = _setup(tmp_path)
    runner.measure(t["a"], 3, 0, t["ref"])
    b = runner.measure(t["b"], 3, 0, t["ref"])
    names = [n for n, _ in runner.log]
    assert names == ["a", "ref", "ref", "a", "a", "ref"] + ["b", "ref", "b", "b", "ref"]
    (mb,) = b.measurements
    assert mb.shared == 1 and len(set(mb.reference)) == 3 and mb.reference[0] == 6.0
    more = runner.extend(t["b"], b.measurements, 2, t["ref"])  # more runs of b: their own baseline runs
    (mb,) = more.measurements
    assert mb.shared == 1 and len(set(mb.reference)) == 5 and len(mb.samples) == 5


@pytest.mark.unit
def test_nothing_is_shared_across_a_warm_up_another_run_or_an_idle_gpu(tmp_path):
    clock = Clock()
    runner, t = _setup(tmp_path, clock=clock)

    def ends_with_a_baseline_run() -> None:  # a trial that shares nothing: its one pair ends with the baseline's
        runner.run(t["c"], ())
        (m,) = runner.measure(t["a"], 1, 0, t["ref"]).measurements
        assert m.shared == 0 and runner.log[-1][0] == "ref"

    ends_with_a_baseline_run()
    (mb,) = runner.measure(t["b"], 1, 1, t["ref"]).measurements  # b's warm-up ran between
    assert mb.shared == 0
    ends_with_a_baseline_run()
    runner.run(t["c"], ())  # any other run on the GPU (a validation round, VERIFY, kernel times)
    (md,) = runner.measure(t["b"], 1, 0, t["ref"]).measurements
    assert md.shared == 0
    ends_with_a_baseline_run()
    clock.now += SHARE_GAP + 0.01  # the GPU idled longer than SHARE_GAP and twice the baseline run (0.01 s)
    (mf,) = runner.measure(t["b"], 1, 0, t["ref"]).measurements
    assert mf.shared == 0
    ends_with_a_baseline_run()
    clock.now += SHARE_GAP - 0.01
    (mg,) = runner.measure(t["b"], 1, 0, t["ref"]).measurements
    assert mg.shared == 1
    (mh,) = runner.measure(t["c"], 1, 0, t["ref"]).measurements  # b ended with its own run
    assert mh.shared == 0


@pytest.mark.unit
def test_without_racing_every_pair_runs_the_baseline_as_before(tmp_path):
    runner, t = _setup(tmp_path, race=False)
    for tree in ("a", "b", "c"):
        (m,) = runner.measure(t[tree], 1, 0, t["ref"]).measurements
        assert m.shared == 0
    assert [n for n, _ in runner.log] == ["ref", "a", "ref", "b", "ref", "c"]


@pytest.mark.unit
def test_a_trial_starts_with_the_workload_whose_baseline_run_it_can_share(tmp_path):
    runner, t = _setup(tmp_path, workloads=(("x",), ("y",)))
    runner.measure(t["a"], 1, 0, t["ref"])
    b = runner.measure(t["b"], 1, 0, t["ref"])
    assert runner.log == [("a", "x"), ("ref", "x"), ("a", "y"), ("ref", "y"), ("b", "y"), ("b", "x"), ("ref", "x")]
    assert [(m.workload, m.shared) for m in b.measurements] == [(("x",), 0), (("y",), 1)]  # stored in their order


@pytest.mark.unit
def test_in_a_suite_another_tunes_run_on_the_gpu_between_two_trials_stops_the_sharing(tmp_path):
    slots = SharedSlots({})
    runner, t = _setup(tmp_path)
    runner = replace(runner, lease=Lease(slots, "one"))
    runner.measure(t["a"], 1, 0, t["ref"])
    (mb,) = runner.measure(t["b"], 1, 0, t["ref"]).measurements
    assert mb.shared == 1  # the suite's slots count the runs: nothing else ran
    (mc,) = runner.measure(t["c"], 1, 0, t["ref"]).measurements  # ends with its baseline run
    assert mc.shared == 0
    with Lease(slots, "other").run(""):  # another target's run on the same GPU
        pass
    (md,) = runner.measure(t["a"], 1, 0, t["ref"]).measurements
    assert md.shared == 0


@dataclass
class _Contended(_Logged):
    """Another tune's run takes the GPU the moment this tune's baseline run gives it back, before this tune has
    even looked at the run's result (the window in which a suite's waiting target wakes)."""

    other: Lease | None = None

    def run(self, tree: VariantTree, workload: tuple[str, ...]) -> RunResult:
        res = super().run(tree, workload)
        if tree.path.name == "ref" and self.other is not None:
            with self.other.run(""):
                self.log.append(("other", ""))
        return res


@pytest.mark.unit
def test_a_run_of_another_tune_right_after_the_baseline_run_is_seen_however_soon_it_came(tmp_path):
    slots = SharedSlots({})
    runner, t = _setup(tmp_path)
    runner = _Contended(
        runner.spec, runner.bench, lease=Lease(slots, "one"), shared=runner.shared, other=Lease(slots, "other")
    )
    runner.measure(t["a"], 1, 0, t["ref"])
    b = runner.measure(t["b"], 1, 0, t["ref"])
    assert [n for n, _ in runner.log] == ["a", "ref", "other", "b", "ref", "other"]
    assert b.measurements[0].shared == 0


@pytest.mark.unit
def test_a_stored_trial_says_which_of_its_baseline_runs_was_shared(tmp_path):
    runner, t = _setup(tmp_path)
    runner.measure(t["a"], 1, 0, t["ref"])
    b = runner.measure(t["b"], 2, 0, t["ref"])
    trial = Trial(1, FlagSet((), ("-O2",)), Status.OK, measurements=b.measurements)
    store = TrialStore(tmp_path / "trials.sqlite", "spec")
    store.save(trial)
    (back,) = [x for x in store.load() if x.index == 1]
    assert back.measurements == b.measurements and back.measurements[0].shared == 1
    assert trial.as_dict()["measurements"][0]["shared"] == 1


@pytest.mark.unit
def test_a_runner_sent_to_another_process_takes_an_empty_record(tmp_path):
    import pickle

    runner, t = _setup(tmp_path)
    runner.measure(t["a"], 1, 0, t["ref"])
    copy = pickle.loads(pickle.dumps(runner.shared))
    assert isinstance(copy, ReferenceRuns) and copy.last_workload("") is None and runner.shared.last_workload("") == ()


@pytest.mark.unit
def test_a_replayed_tune_on_a_noisy_machine_shares_baseline_runs_and_a_host_landscape_writes_a_cxx_entry(tmp_path):
    """The host kernels' landscapes were recorded with 3-20% noise: the tune pairs every trial's runs, shares
    baseline runs between neighbouring trials, and (a gcc landscape replays a C++ target) writes a CXX entry."""
    landscape = REPO / "benchmarks" / "landscapes" / "host" / "kahan_sum_f32.json"
    args = replay_args(tmp_path, "--budget", "30", "--seed", "0", landscape=landscape)
    proc = run_cli(*args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "every trial is measured next to runs of the project's own build" in proc.stdout + proc.stderr
    db = sqlite3.connect(tmp_path / "build" / "compileiq" / "trials.sqlite")
    rows = [json.loads(m) for (m,) in db.execute("SELECT measurements FROM trials WHERE same_code_as IS NULL")]
    db.close()
    paired = [m for ms in rows for m in ms if m.get("reference")]
    assert paired and any(m.get("shared") == 1 for m in paired), rows
    assert all(m.get("shared", 0) <= 1 and len(m["reference"]) == len(m["samples"]) for m in paired)
    entries = tomllib.loads((tmp_path / "compileiq.toml").read_text())["entry"]
    assert [e["language"] for e in entries] == ["CXX"], entries


@pytest.mark.unit
def test_a_long_baseline_run_may_be_shared_after_a_gap_of_up_to_twice_its_length():
    clock = Clock()
    kept = ReferenceRuns(clock)
    tree = Path("/b/ref")

    def baseline_run(device: str, value: float, seconds: float) -> None:
        kept.began(device, kept.count_start(device))
        clock.now += seconds
        kept.keep(device, tree, (), value, seconds)

    def trial_run(device: str, after: float) -> None:
        clock.now += after
        kept.began(device, kept.count_start(device))

    baseline_run("0", 5.0, 0.8)
    trial_run("0", 1.5)  # under 2 x 0.8 s
    assert kept.take("0", tree, ()) == 5.0
    assert kept.take("0", tree, ()) is None  # paired twice already
    baseline_run("0", 6.0, 0.8)
    trial_run("0", 1.7)
    assert kept.take("0", tree, ()) is None
    baseline_run("1", 7.0, 0.1)
    trial_run("1", 0.0)
    assert kept.take("1", Path("/b/other"), ()) is None  # another baseline tree's
    assert kept.take("1", tree, ("x",)) is None  # another workload's
    assert kept.take("1", tree, ()) == 7.0
    baseline_run("1", 8.0, 0.1)
    trial_run("1", 0.0)
    trial_run("1", 0.0)  # a second run since the baseline's
    assert kept.take("1", tree, ()) is None
    assert kept.take("2", tree, ()) is None  # a GPU with no baseline run
