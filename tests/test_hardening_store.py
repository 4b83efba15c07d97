"""Issue 10, the trial store: a damaged trials.sqlite (empty, garbage, truncated) is moved aside with a
note, never a traceback and never a silent restart; validation and ablation results are kept."""

from __future__ import annotations

import math
import sqlite3

import pytest

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.model.records import (
    Contribution,
    FlagSet,
    Measurement,
    Status,
    Trial,
    Validation,
    WorkloadComparison,
)
from compileiq_cmake.results.store import TrialStore


def _trial(i: int) -> Trial:
    fs = FlagSet(choices=(("opt_level", i),), flags=(f"-O{i}", "x" * 2000))
    return Trial(i, fs, Status.OK, "", (Measurement(("--n", "8"), (1.0, 1.1, 0.9)),), 1.5, 0.3, 1.9, "g++ -O3 x.c")


def _damaged(tmp_path):
    return sorted(tmp_path.glob("trials.sqlite.damaged-*"))


@pytest.mark.unit
def test_brand_new_store_and_a_healthy_one_have_no_note(tmp_path):
    db = tmp_path / "trials.sqlite"
    store = TrialStore(db, "s")
    assert store.note == ""
    store.save(_trial(1))
    store.close()
    again = TrialStore(db, "s")
    assert again.note == "" and len(again.load()) == 1
    again.close()


@pytest.mark.unit
def test_existing_empty_store_is_moved_aside_not_silently_restarted(tmp_path):
    db = tmp_path / "trials.sqlite"
    db.write_bytes(b"")
    store = TrialStore(db, "s")
    (moved,) = _damaged(tmp_path)
    assert "damaged" in store.note and moved.name in store.note and "\n" not in store.note
    store.save(_trial(1))  # the new store works
    assert len(store.load()) == 1
    store.close()


@pytest.mark.unit
def test_garbage_store_is_moved_aside_with_a_note_not_a_traceback(tmp_path):
    db = tmp_path / "trials.sqlite"
    db.write_bytes(b"this is not a database at all\n" * 300)
    store = TrialStore(db, "s")
    (moved,) = _damaged(tmp_path)
    assert moved.read_bytes().startswith(b"this is not") and str(db) in store.note
    assert store.load() == []
    store.close()


@pytest.mark.unit
def test_half_truncated_store_is_moved_aside(tmp_path):
    db = tmp_path / "trials.sqlite"
    store = TrialStore(db, "s")
    for i in range(60):
        store.save(_trial(i))
    store.close()
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.truncate(size // 2)
    store = TrialStore(db, "s")
    assert store.note and len(_damaged(tmp_path)) == 1
    assert store.load() == []
    store.close()


@pytest.mark.unit
def test_a_damaged_store_that_cannot_be_moved_is_one_clear_error(tmp_path, monkeypatch):
    db = tmp_path / "trials.sqlite"
    db.write_bytes(b"garbage" * 1000)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("compileiq_cmake.results.store.os.replace", refuse)
    with pytest.raises(CompileIQError, match="damaged.*move or delete it"):
        TrialStore(db, "s")
    assert db.read_bytes().startswith(b"garbage")


@pytest.mark.unit
def test_a_locked_store_is_not_taken_for_damaged(tmp_path):
    db = tmp_path / "trials.sqlite"
    TrialStore(db, "s").close()
    holder = sqlite3.connect(db, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")  # a WAL store (issue 19): readable while another program writes
    try:
        store = TrialStore(db, "s", timeout=0.1)
        assert store.note == "" and store.load() == []
        store.close()
    finally:
        holder.rollback()
        holder.close()
    db.unlink()
    with sqlite3.connect(db) as old:  # a store in the rollback-journal mode (written before issue 19)
        old.execute("CREATE TABLE trials (spec TEXT)")
    old.close()
    holder = sqlite3.connect(db, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(CompileIQError, match="cannot open the trial store"):
            TrialStore(db, "s", timeout=0.1)
    finally:
        holder.rollback()
        holder.close()
    assert _damaged(tmp_path) == []


@pytest.mark.unit
def test_validation_and_ablation_results_round_trip(tmp_path):
    db = tmp_path / "trials.sqlite"
    store = TrialStore(db, "s")
    fs = FlagSet((("fast_math", 1),), ("--use_fast_math",))
    row = WorkloadComparison(("--n", "8"), (2.0, 2.1), (1.0, 1.1), 1.9, 1.8, 2.0, 0.001)
    validations = [
        Validation(fs, (row,), 1.9, 1.8, 2.0, True),
        Validation(fs, (), 0.0, 0.0, 0.0, False, "re-build failed"),
    ]
    contributions = (
        Contribution("fast_math", ("--use_fast_math",), 1.9, 1.8, 2.0, True, "needed"),
        Contribution("rdc", ("-rdc=true",), math.nan, math.nan, math.nan, True, "re-build failed; kept"),
    )
    store.save_validations("validation", validations)
    store.save_ablation("ablation", fs, contributions)
    store.close()
    store = TrialStore(db, "s")
    assert store.load_validations("validation") == validations
    minimal, got = store.load_ablation("ablation")
    assert (
        minimal == fs
        and got[0] == contributions[0]
        and math.isnan(got[1].speedup)
        and got[1].reason == contributions[1].reason
    )
    assert store.load_validations("other") is None and store.load_ablation("other") is None
    store.close()
