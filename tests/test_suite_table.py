"""benchmarks/evaluation/suite_table.py on the raw folders committed with docs/benchmarks/suite.md: the table's
numbers are the ones the doc quotes (a change that miscounts trials or trial builds fails here)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("suite_table", _ROOT / "benchmarks" / "evaluation" / "suite_table.py")
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)
pytestmark = pytest.mark.unit
RAW = _ROOT / "docs" / "benchmarks" / "raw"


def test_the_h200_runs_give_the_numbers_quoted_in_suite_md() -> None:
    new = table.column(RAW / "real-size-6" / "suite-mix")
    old = table.column(RAW / "real-size-6" / "suite-oldmix")
    assert new["trials"] == old["trials"] == "62"
    assert new["targets that ran trials"] == "17 of 22" and old["targets that ran trials"] == "15 of 22"
    assert new["a trial's build (trial stores, with flags)"].startswith("3.56 s (2.93-3.99, n=45)")
    assert old["a trial's build (trial stores, with flags)"].startswith("3.82 s")
    geomean = "geometric mean (the suite's: tuned or without a gain)"
    assert new[geomean] == "1.206x" and old[geomean] == "1.086x"
    assert old["trials per minute of the search stages"] == "-"  # that code recorded no phases
    doc = (_ROOT / "docs" / "benchmarks" / "suite.md").read_text()
    assert "**3.56 s** (2.93-3.99, n=45)" in doc and "**1.206x** | 1.086x" in doc


def test_trials_without_flags_and_failed_builds_are_not_counted(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(RAW / "real-size-6" / "suite-mix", folder)
    before = table.trial_builds(folder)
    with closing(sqlite3.connect(folder / "poly_eval-trials.sqlite")) as db, db:  # closed: its WAL written back
        row = db.execute("SELECT * FROM trials LIMIT 1").fetchone()
        cols = [d[0] for d in db.execute("SELECT * FROM trials LIMIT 1").description]
        doc = dict(zip(cols, row, strict=False))
        for key, flags, seconds in (("x-own", "", 99.0), ("x-fail", "-O3", 0.0), ("x-new", '["-O3"]', 77.0)):
            doc.update(key=key, flags=flags, build_seconds=seconds)
            db.execute(
                f"INSERT INTO trials ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})", list(doc.values())
            )
    after = table.trial_builds(folder)
    assert sorted(after) == sorted(before + [77.0])
    summary = json.loads((folder / "suite.json").read_text())
    assert table.column(folder)["trials"] == str(sum(t["trials"] for t in summary["targets"]))
