"""Issue 19, the trial store: a busy store (another program holding it) never crashes a tune or loses the
trial in flight; one tune's stale trials are set aside without touching the other tunes' in the same file;
ablation steps are kept one by one; headers and compile flags are part of what makes trials reusable."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
from compileiq_cmake.results.store import TrialStore

from conftest import replay_args


def _trial(i: int) -> Trial:
    fs = FlagSet(choices=(("opt_level", i),), flags=(f"-O{i}",) if i else ())
    return Trial(
        i, fs, Status.OK, "", (Measurement(("--n", "8"), (1.0 + i, 1.1 + i, 0.9 + i)),), 1.5, 0.3, 1.9, "g++ x.c"
    )


def _keys(db, spec: str) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT key FROM trials WHERE spec = ?", (spec,))}


@pytest.mark.unit
def test_a_reader_holding_a_transaction_does_not_block_saving_a_trial(tmp_path):
    """A `trials` run or a DB browser holding a read transaction made the tune's next write fail with
    'database is locked' after the busy timeout (rollback journal); with WAL the write goes through."""
    db = tmp_path / "trials.sqlite"
    store = TrialStore(db, "s", timeout=0.2)
    store.save(_trial(0))
    reader = sqlite3.connect(db, timeout=0)
    reader.execute("BEGIN")
    assert reader.execute("SELECT COUNT(*) FROM trials").fetchone() == (1,)  # holds a read transaction
    try:
        started = time.monotonic()
        store.save(_trial(1))
        assert time.monotonic() - started < 5, "the write waited for the reader"
    finally:
        reader.rollback()
        reader.close()
    assert _keys(db, "s") == {_trial(0).flagset.key, _trial(1).flagset.key}
    store.close()


@pytest.mark.unit
def test_a_write_lock_held_for_a_while_is_waited_for_and_the_trial_is_saved(tmp_path):
    db = tmp_path / "trials.sqlite"
    store = TrialStore(db, "s", timeout=0.1, write_deadline=60)
    writer = sqlite3.connect(db, timeout=0, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")  # another program's write transaction, held 1.5 s (> the busy timeout)
    release = threading.Timer(1.5, writer.rollback)
    release.start()
    try:
        store.save(_trial(3))
    finally:
        release.join()
        writer.close()
    assert _keys(db, "s") == {_trial(3).flagset.key}
    store.close()


@pytest.mark.unit
def test_a_store_locked_past_the_deadline_is_one_line_naming_the_trial_and_the_store(tmp_path):
    db = tmp_path / "trials.sqlite"
    store = TrialStore(db, "s", timeout=0.1, write_deadline=1.0)
    store.save(_trial(0))
    writer = sqlite3.connect(db, timeout=0)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(CompileIQError) as err:
            store.save(_trial(2))
    finally:
        writer.rollback()
        writer.close()
    message = str(err.value)
    assert "\n" not in message and "trial 2 (-O2) was not saved in the trial store" in message
    assert str(db) in message and "locked" in message and "resume" in message
    assert _keys(db, "s") == {_trial(0).flagset.key}, "what was saved before stays"
    store.save(_trial(2))  # the store works again once it is free
    store.close()


@pytest.mark.unit
def test_stale_trials_of_one_tune_leave_the_other_tunes_trials_in_place(tmp_path):
    """One target's changed sources moved the whole trials.sqlite aside (shared by every target and
    architecture): now only that tune's rows move, into a store of their own, and the others resume."""
    from compileiq_cmake.tune.orchestration import _open_store

    db = tmp_path / "trials.sqlite"
    lines: list[str] = []
    a = _open_store(db, "target-a-90", "GNU 12.2", "aaa", lines.append)
    a.save(_trial(0))
    a.save(_trial(1))
    a.save_result("finalists", [1])
    a.close()
    b = _open_store(db, "target-b-90", "GNU 12.2", "bbb", lines.append)
    b.save(_trial(0))
    b.close()
    assert lines == []
    a = _open_store(db, "target-a-90", "GNU 12.2", "a-edited", lines.append)
    assert a.load() == [] and a.load_result("finalists") is None
    (aside,) = sorted(tmp_path.glob("trials.sqlite.stale-*"))
    assert len(lines) == 1 and str(aside) in lines[0] and "2 trials are kept" in lines[0] and "stay" in lines[0]
    kept = TrialStore(aside, "target-a-90")
    assert kept.load() == [_trial(0), _trial(1)] and kept.load_result("finalists") == [1], "retrievable"
    assert list(kept.load_all()) == ["target-a-90"]
    kept.close()
    a.close()
    b = _open_store(db, "target-b-90", "GNU 12.2", "bbb", lines.append)
    assert b.load() == [_trial(0)] and len(lines) == 1, "the other tune's trials are resumed"
    b.close()


@pytest.mark.unit
def test_other_compile_flags_make_trials_stale(tmp_path):
    from compileiq_cmake.tune.orchestration import _open_store

    db = tmp_path / "trials.sqlite"
    lines: list[str] = []
    store = _open_store(db, "t", "GNU 12.2", "aaa", lines.append, commands_sha256="f1")
    store.save(_trial(0))
    store.close()
    store = _open_store(db, "t", "GNU 12.2", "aaa", lines.append, commands_sha256="f2")
    assert store.load() == [] and "the flags that reach the target's compile commands changed" in lines[0]
    store.close()


@pytest.mark.unit
def test_a_killed_ablation_resumes_after_its_finished_steps(tmp_path):
    """Ablation was stored only as a whole: a kill during it measured every finished step again. Each step
    is now kept as it finishes; the rerun measures only the steps left."""
    from dataclasses import dataclass

    from compileiq_cmake.decide.decided import ValidationContext
    from compileiq_cmake.decide.procedure import _decide
    from compileiq_cmake.flags.space import Dimension, FlagSpace
    from compileiq_cmake.measure.runner import RunResult
    from compileiq_cmake.model.events import recording
    from compileiq_cmake.model.records import BuildResult

    from test_hardening_validation import FakeRunner, _setup

    effect = {"-a": 0.80, "-b": 1.0, "-c": 0.90}
    built: dict[str, FlagSet] = {}

    @dataclass
    class ByFlags(FakeRunner):
        def run(self, tree, workload) -> RunResult:
            t = 10.0
            for flag in built[tree.path.name].flags:
                t *= effect[flag]
            return RunResult(Status.OK, "", t * (1 + self.rng.gauss(0, 0.002)), 0.0)

    class Killed(Exception):
        pass

    fake, trees = _setup(tmp_path, {"t0": 1.0, "t1": 1.0, "t2": 1.0, "t3": 1.0})
    space = FlagSpace("gcc", tuple(Dimension(n, "", ((), (f"-{n}",))) for n in "abc"))
    stand_in = ValidationContext(trees=trees, space=space, seed=fake.spec.seed)
    winner = space.flagset({"a": 1, "b": 1, "c": 1})

    def builder(kill_at: int | None, seen: list[FlagSet]):
        def build(tree, flagset):
            if kill_at is not None and len(seen) == kill_at:
                raise Killed()
            seen.append(flagset)
            built[tree.path.name] = flagset
            return BuildResult(ok=True, seconds=0.0)

        return build

    db = tmp_path / "trials.sqlite"
    store = TrialStore(db, "s")
    first: list[FlagSet] = []
    events, _ = recording()
    # validation of the winner: 2 builds (baseline, winner); each ablation step: 2; killed in the third step
    with pytest.raises(Killed):
        _decide(stand_in, builder(2 + 2 * 2, first), ByFlags(fake.spec, {}), [winner], 0.01, events, store)
    store.close()
    steps_first = first[2:]  # (with, without) of the two finished steps
    assert [fs.flags for fs in steps_first[1::2]] == [("-b", "-c"), ("-a", "-c")], "a kept, then b dropped"

    store = TrialStore(db, "s")
    second: list[FlagSet] = []
    runner = ByFlags(fake.spec, {})
    events, recorder = recording()
    final, contributions = _decide(stand_in, builder(None, second), runner, [winner], 0.01, events, store)
    store.close()
    assert [e.data["restored_steps"] for e in recorder if "restored_steps" in e.data] == [2], recorder.texts()
    # built again: the third step (c, from -a -c), the validation of the minimal set (baseline, -a -c) and its
    # confirmation (baseline, -a -c); not the two finished steps, nor the finalists' validation
    assert [fs.flags for fs in second[:2]] == [("-a", "-c"), ("-a",)], "the first build is the third step's"
    assert len(second) == 6 and sorted(fs.flags for fs in second[2:4]) == [(), ("-a", "-c")], second
    assert sorted(fs.flags for fs in second[4:]) == [(), ("-a", "-c")], second
    assert [(c.dimension, c.kept) for c in contributions] == [("a", True), ("b", False), ("c", True)]
    assert final is not None and final.flagset.flags == ("-a", "-c")


@pytest.mark.cmake
def test_a_replayed_tune_runs_on_while_another_program_reads_its_store(tmp_path):
    """The issue's run: a reader holding a transaction on trials.sqlite (a `trials` call, a DB browser)
    crashed the running tune with `sqlite3.OperationalError: database is locked` and lost the trial in
    flight. A replayed tune (no compiler, no GPU) resumes and adds trials while a reader holds one open."""
    import subprocess
    import sys

    args = [sys.executable, "-m", "compileiq_cmake", *replay_args(tmp_path)]
    first = subprocess.run([*args, "--budget", "6"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    db = tmp_path / "build" / "compileiq" / "trials.sqlite"
    reader = sqlite3.connect(db, timeout=0)
    reader.execute("BEGIN")
    assert reader.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 6  # a read transaction, held
    try:
        second = subprocess.run([*args, "--budget", "12"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    finally:
        reader.rollback()
        reader.close()
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stdout[-2000:] + second.stderr[-2000:]
    assert "resuming: 6 finished trials restored" in second.stdout
    assert len(_keys(db, next(iter(TrialStore(db, "").load_all())))) == 12
