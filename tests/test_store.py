import multiprocessing

import pytest

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
from compileiq_cmake.results.store import TrialStore, TuneLock


def _trial(i: int, flags: tuple[str, ...], status=Status.OK) -> Trial:
    fs = FlagSet(choices=(("opt_level", i),) if flags else (), flags=flags)
    meas = (Measurement(("--n", "8"), (1.0 + i, 1.1 + i, 0.9 + i)),) if status is Status.OK else ()
    return Trial(
        i, fs, status, "" if status is Status.OK else "build failed: x.c:1: error", meas, 1.5, 0.3, 1.9, "g++ -O3 x.c"
    )


@pytest.mark.unit
def test_trials_survive_a_reopen_and_other_specs_are_separate(tmp_path):
    db = tmp_path / "trials.sqlite"
    store = TrialStore(db, "spec-a")
    trials = [_trial(0, ()), _trial(1, ("-O2",)), _trial(2, ("-O3",), Status.BUILD_FAILED)]
    for t in trials:
        store.save(t)
    store.close()
    assert TrialStore(db, "spec-a").load() == trials
    assert TrialStore(db, "spec-b").load() == []


def _hold_lock(state_dir, ready, release):
    with TuneLock(state_dir):
        ready.set()
        release.wait(20)


@pytest.mark.unit
def test_second_tune_on_the_same_tree_is_refused(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(tmp_path, ready, release))
    holder.start()
    try:
        assert ready.wait(20)
        with pytest.raises(CompileIQError, match=rf"another compileiq tune \(pid {holder.pid}\) is running"):
            with TuneLock(tmp_path):
                pass
    finally:
        release.set()
        holder.join(20)
    with TuneLock(tmp_path):  # free again once the first tune ended
        pass


@pytest.mark.unit
def test_trials_of_other_sources_or_another_compiler_are_not_reused(tmp_path):
    """A resumed tune whose sources or compiler changed starts a fresh store; the old one is kept aside."""
    from compileiq_cmake.tune.orchestration import _open_store

    db = tmp_path / "trials.sqlite"
    lines: list[str] = []
    store = _open_store(db, "spec-a", "NVIDIA 13.0.88", "aaa", lines.append)
    store.save(_trial(0, ()))
    store.close()
    same = _open_store(db, "spec-a", "NVIDIA 13.0.88", "aaa", lines.append)
    assert len(same.load()) == 1 and lines == []  # unchanged: resumed
    same.close()
    edited = _open_store(db, "spec-a", "NVIDIA 13.0.88", "bbb", lines.append)
    assert (
        edited.load() == []
        and len(lines) == 1
        and "the target's sources or the headers they include changed" in lines[0]
    )
    aside = sorted(tmp_path.glob("trials.sqlite.stale-*"))
    assert len(aside) == 1 and str(aside[0]) in lines[0]
    assert TrialStore(aside[0], "spec-a").load() == [_trial(0, ())], "the old measurements are kept, not lost"
    edited.save(_trial(0, ()))
    edited.close()
    upgraded = _open_store(db, "spec-a", "NVIDIA 13.1.20", "bbb", lines.append)
    assert upgraded.load() == [] and "the compiler changed (NVIDIA 13.0.88 -> NVIDIA 13.1.20)" in lines[-1]
    upgraded.close()
