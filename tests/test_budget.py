"""Issue 33: one budget owns every second of a tune and of a suite, and a win that is found is never thrown
away. Unit tests of the budget's parts (the plan's fallback, waits a suite's target is not charged, a
validation the box cut, the conveyor's cancellation) and replayed tunes (no GPU, runs paced to take time):
a banked win survives a kill, a box too small for the baseline's runs stops at once and says what it needs,
a killed time-boxed tune resumes with what it had spent, a suite stops within seconds on Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from compileiq_cmake.decide import decided
from compileiq_cmake.decide.decided import ValidationContext
from compileiq_cmake.decide.validation import CUT, validate
from compileiq_cmake.execute.pipeline import Pipeline
from compileiq_cmake.execute.shared import Lease, SharedSlots
from compileiq_cmake.measure.runner import RunResult
from compileiq_cmake.model.records import BuildResult, FlagSet, Measurement, Status, Trial
from compileiq_cmake.model.timebox import Stop, TimeBox
from compileiq_cmake.results.toml_io import read_entries
from compileiq_cmake.tune.plan import Costs, plan_tune

from conftest import REPO, replay_args

SAMPLE = REPO / "benchmarks" / "landscapes" / "sample_small.json"  # runs of ~1 ms: pace 1000 -> ~1 s a run
BLACKSCHOLES = REPO / "benchmarks" / "landscapes" / "blackscholes.json"


@pytest.mark.unit
def test_the_plans_fallback_takes_the_one_trial_that_fits_and_else_says_the_limit_it_needs():
    """Where even one finalist needs more than the finalists' share, the one trial that fits with its
    validation is planned (no margin refuses it); where none fits, the plan says the --time-limit it needs."""
    # a trial 21 s; one finalist at the fewest rounds (3 and a warm-up round) without a confirmation 44 s
    costs = Costs(build=5.0, run=4.0, workloads=1, warmup=1, repeats=3)
    one_trial = plan_tune(80.0, 10.0, costs, 3, 5, 2, reserve=30.0)
    assert not one_trial.finish.confirm and "not confirmed" in one_trial.finish.cut[-1]
    assert one_trial.search_trials == 1 and one_trial.finish.finalists == 1 and one_trial.needed == 0.0
    assert one_trial.search_open(0, costs) and not one_trial.search_open(1, costs)
    none = plan_tune(40.0, 10.0, costs, 3, 5, 2, reserve=15.0)
    assert none.search_trials == 0 and none.finish.finalists == 0
    assert none.needed > 40.0 and "no search trial fits" in none.describe()


@pytest.mark.unit
def test_a_wait_for_a_slot_another_target_holds_is_not_charged_to_the_box():
    slots = SharedSlots({"build": 1})
    holder, waiter = Lease(slots, "a"), Lease(slots, "b")
    clock = [100.0]
    box = TimeBox(60.0, clock=lambda: clock[0], waited=waiter.waited)
    entered = threading.Event()

    def hold() -> None:
        with holder.build():
            entered.set()
            time.sleep(0.6)

    t = threading.Thread(target=hold)
    t.start()
    entered.wait(5)
    with waiter.build():
        pass
    t.join()
    assert 0.4 < waiter.waited() < 3.0 and holder.waited() == 0.0
    clock[0] += 10.0  # ten seconds of the box's clock: the wait is not charged
    assert box.elapsed() == pytest.approx(10.0 - waiter.waited(), abs=1e-6)
    outer = TimeBox(60.0, clock=lambda: clock[0], deadline=clock[0] + 5.0)  # a suite's end comes first
    assert outer.remaining() == pytest.approx(5.0)


@pytest.mark.unit
def test_waits_are_not_charged_up_to_the_targets_own_limit_and_its_shared_setup_never_is():
    """H200, --suite-jobs 4 on one GPU: a target with a 32 s share waited 92 s and lived 120 s, and the suite's
    last targets got 10 s. Waits beyond a target's own limit are charged; the suite's shared setup never is."""
    from compileiq_cmake.tune.budget import not_charged

    waited, shared = [0.0], [3.0]
    credit = not_charged(lambda: waited[0], lambda: shared[0], 32.0)
    clock = [0.0]
    box = TimeBox(32.0, clock=lambda: clock[0], waited=credit)
    waited[0], clock[0] = 20.0, 30.0
    assert box.elapsed() == pytest.approx(30.0 - 20.0 - 3.0)  # 20 s of waits and the shared 3 s: not charged
    waited[0], clock[0] = 92.0, 120.0
    assert box.elapsed() == pytest.approx(120.0 - 32.0 - 3.0) and box.remaining() == 0.0  # beyond 32 s: charged
    assert not_charged(lambda: 92.0, lambda: 0.0, None)() == 92.0  # no limit: no cap


class _Runner:
    """Runs answered from fixed per-tree medians with noise, one label per tree (a fake of Runner's interface)."""

    def __init__(self, medians: dict[str, float], noise: float) -> None:
        import random

        self.medians, self.noise, self.rng = medians, noise, random.Random(1)
        self.spec = SimpleNamespace(
            workloads=[()],
            metric=SimpleNamespace(lower_is_better=True),
            lower_is_better=True,
            min_rounds=5,
            max_rounds=30,
        )

    def run(self, tree, workload) -> RunResult:
        return RunResult(Status.OK, "", self.medians[tree] * (1 + self.rng.gauss(0, self.noise)), 0.01)


@pytest.mark.unit
def test_a_validation_the_box_cut_is_undecided_never_rejected_and_never_stored(tmp_path):
    from compileiq_cmake.results.store import TrialStore

    runner = _Runner({"base": 1.0, "cand": 0.996}, 0.01)  # 0.4% faster at 1% noise: undecided after 2 rounds
    build = lambda tree, fs: BuildResult(ok=True, seconds=0.0)  # noqa: E731
    rounds = []
    cut = lambda seconds: len(rounds.append(seconds) or rounds) < 2  # noqa: E731  (two rounds, then the box ends)
    candidate = FlagSet((("ftz", 1),), ("--ftz=true",))
    (v,) = validate(
        runner, build, ("base", "cand"), FlagSet((), ()), [candidate], 0.002, 3, lambda line: None, may_continue=cut
    )
    assert not v.accepted and v.reason.startswith(CUT), v.reason
    assert re.search(r"about \d+ s more \(\d+ rounds?\) would decide it", v.reason), v.reason
    store = TrialStore(tmp_path / "trials.sqlite", "spec")
    space = SimpleNamespace(baseline=lambda: FlagSet((), ()))
    rounds.clear()
    context = ValidationContext(("base", "cand"), space, 3)
    (again,) = decided.validated(
        context, build, runner, [candidate], 0.002, 3, lambda line: None, store, may_continue=cut
    )
    assert again.reason.startswith(CUT)
    name = decided.result_name("validation", [candidate.key], 0.002, 3)
    assert store.load_validations(name) is None, "a verdict the box cut is no decision: a rerun makes it"
    store.close()


@pytest.mark.unit
def test_the_conveyor_cancels_queued_trials_and_never_measures_them():
    gate = threading.Event()
    measured: list[int] = []

    def build(tree, flagset, log=None) -> BuildResult:
        return BuildResult(ok=True, seconds=0.0)

    def measure(index, tree, flagset, build_result, runner, known) -> Trial:
        measured.append(index)
        gate.wait(10)
        return Trial(index, flagset, Status.OK, "", (Measurement((), (1.0, 1.0, 1.0)),), 0.0, 0.1, 0.1)

    stop = Stop()
    with Pipeline(("t0", "t1", "t2"), build, [SimpleNamespace(gpu=None)], measure, lambda line: None, stop) as pipe:
        for i in range(3):
            pipe.submit(i, FlagSet(((f"d{i}", 1),), (f"-f{i}",)), {})
        deadline = time.monotonic() + 10
        while not measured and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pipe.cancel(1) == 2  # the first is measured on the one GPU; the two waiting for it are cancelled
        gate.set()
        done = [pipe.next() for _ in range(3)]
    assert [d.trial.status for d in done] == [Status.OK, Status.CANCELLED, Status.CANCELLED]
    assert measured == [0] and not stop.reason()


def _replay_tune(tmp_path: Path, *extra: str, landscape: Path = SAMPLE) -> list[str]:
    return [sys.executable, "-m", "compileiq_cmake", *replay_args(tmp_path, "--seed", "2", *extra, landscape=landscape)]


def _until(proc: subprocess.Popen, log: Path, needle: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        text = log.read_text()
        if needle in text:
            return text
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} never came:\n" + log.read_text()[-3000:])


@pytest.mark.unit
def test_a_banked_win_survives_a_kill_and_the_rerun_restores_it(tmp_path):
    """sample_small's fast math is 1.24x: banked (validated next, written at once) in the search; a SIGKILL
    right after leaves it in the TOML, and the rerun (same box) restores it and what it spent of the box."""
    env = {**os.environ, "COMPILEIQ_REPLAY_PACE": "60"}
    argv = _replay_tune(tmp_path, "--budget", "25", "--time-limit", "300", "--workers", "2")
    log = tmp_path / "first.log"
    toml = tmp_path / "compileiq.toml"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            argv, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _until(proc, log, "bank: wrote", 240)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    (entry,) = read_entries(toml)
    assert entry.flags and entry.speedup > 1.1 and any("banked during the search" in u for u in entry.untested)
    again = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr
    assert "validated by the earlier run of this tune: restored" in again.stdout, again.stdout[-3000:]
    spent = re.search(r"time box: resuming a tune of --time-limit 300 s that had spent (\d+) s", again.stdout)
    assert spent and int(spent.group(1)) > 0, again.stdout[:3000]
    (final,) = read_entries(toml)
    assert final.speedup >= 0.97 * entry.speedup  # a later candidate replaced it only through its own validation


@pytest.mark.unit
def test_a_box_too_small_for_the_baselines_runs_stops_after_the_first_run_and_says_what_it_needs(tmp_path):
    """Runs of ~3 s in a 10 s box: the first run prices the rest (baseline, one trial, one validation), the
    tune ends at once (exit 2: nothing measured; nothing written) with the --time-limit it would need."""
    env = {**os.environ, "COMPILEIQ_REPLAY_PACE": "3000"}
    proc = subprocess.run(
        _replay_tune(tmp_path, "--budget", "8", "--time-limit", "10"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "nothing was measured" in proc.stderr, proc.stdout[-2000:] + proc.stderr
    needed = re.search(r"stopped at once: give at least --time-limit (\d+)", proc.stdout)
    assert needed and int(needed.group(1)) > 10, proc.stdout[-2000:]
    assert not (tmp_path / "compileiq.toml").exists()
    # the tool's own accounting, not this test's clock (load stretches both alike): the whole tune took less
    # than 2.5 of its runs, so the baseline's four runs were not all measured
    run = re.search(r"a run of the project's own build took ([0-9.]+) s", proc.stdout)
    whole = re.search(r"the whole tune took ([0-9.]+) s of --time-limit 10 s", proc.stdout)
    assert run and whole and float(whole.group(1)) < 2.5 * float(run.group(1)), proc.stdout[-2000:]


@pytest.mark.unit
def test_ctrl_c_stops_a_suite_within_seconds_and_nothing_is_written_after_it(tmp_path):
    """Two replayed targets in flight with ~1 s runs: SIGINT once both have trials; the suite exits 130 within
    10 s, and the TOML is not written after the interrupt."""
    (tmp_path / "src").mkdir()
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[suite]\nsource_dir = "src"\nbuild_dir = "build"\noutput = "all.toml"\n'
        + "".join(f'\n[[target]]\nname = "c{i}"\nreplay = "{BLACKSCHOLES}"\nbudget = 20\n' for i in range(3))
    )
    env = {**os.environ, "COMPILEIQ_REPLAY_PACE": "4000"}
    argv = [sys.executable, "-m", "compileiq_cmake", "tune", "--suite", str(suite), "--seed", "4", "--suite-jobs", "2"]
    log = tmp_path / "suite.log"
    toml = tmp_path / "all.toml"
    with open(log, "w") as out:
        # SIGINT as a terminal delivers it: a runner started in the background (a non-interactive shell's `&`)
        # hands its children SIGINT ignored, and Python then never raises KeyboardInterrupt
        proc = subprocess.Popen(
            argv,
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            _until(proc, log, "[c1] [  2/", 240)
            before = toml.read_bytes() if toml.exists() else None
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                raise AssertionError("no exit 30 s after SIGINT:\n" + log.read_text()[-4000:]) from None
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rc == 130, log.read_text()[-3000:]
    assert took < 10.0, f"the suite took {took:.1f} s to stop"
    assert (toml.read_bytes() if toml.exists() else None) == before, "an entry was written after the interrupt"
    state = next((tmp_path / "build" / "compileiq").glob("suite-*.json"), None)
    finished = json.loads(state.read_text())["finished"] if state is not None else []
    assert not any(t["target"] in ("c0", "c1") for t in finished), "an interrupted target was recorded as finished"
