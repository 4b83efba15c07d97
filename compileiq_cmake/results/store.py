"""The trial store: every finished trial is written to SQLite at once, so a killed tune resumes without
repeating or losing work; an exclusive lock keeps two tunes off one build tree. A damaged store is moved
aside with a note (never a silent restart), and validation and ablation results are kept beside the
trials."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..model.errors import CompileIQError, one_line
from ..model.records import (
    Contribution,
    FlagSet,
    KernelResources,
    Measurement,
    Status,
    Trial,
    Validation,
    WorkloadComparison,
)
from ..system.lock import TuneLock  # noqa: F401 (named here too: the store's lock)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    spec TEXT NOT NULL,
    key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    choices TEXT NOT NULL,
    flags TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    measurements TEXT NOT NULL,
    build_seconds REAL NOT NULL,
    bench_seconds REAL NOT NULL,
    wall_seconds REAL NOT NULL,
    compile_command TEXT NOT NULL,
    fingerprint TEXT NOT NULL DEFAULT '',
    same_code_as INTEGER,
    kernels TEXT NOT NULL DEFAULT '[]',
    gpu TEXT NOT NULL DEFAULT '',
    binary_bytes INTEGER NOT NULL DEFAULT 0,
    device_bytes INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (spec, key)
);
CREATE TABLE IF NOT EXISTS results (
    spec TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (spec, name)
)
"""


_DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)  # what a damaged file gives (not: locked, busy)
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)  # another connection holds the lock: wait, retry
WRITE_DEADLINE = 300.0  # seconds a write keeps retrying while another program holds the store locked
_SIDECARS = ("-journal", "-wal", "-shm")  # moved with the store: a new store must not pick them up


class _Damaged(Exception):
    """The store file is damaged; the message says how."""


def _open_checked(path: Path, timeout: float) -> sqlite3.Connection:
    """The store with its schema; _Damaged when the file fails PRAGMA quick_check or is not a database;
    CompileIQError when it cannot be opened for another reason (locked, unreadable)."""
    db = sqlite3.connect(path, timeout=timeout)
    try:
        rows = db.execute("PRAGMA quick_check").fetchall()
        if rows != [("ok",)]:
            raise _Damaged("; ".join(str(r[0]) for r in rows[:3]))
        try:  # readers (a `trials` or `report` run, a DB browser) then never block the tune's writes
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if _errorcode(exc) not in _BUSY_CODES:
                raise
        db.executescript(_SCHEMA)
        _add_columns(db)
        db.commit()
        return db
    except sqlite3.DatabaseError as exc:
        db.close()
        if _errorcode(exc) in _DAMAGE_CODES:
            raise _Damaged(str(exc)) from None
        raise CompileIQError(f"cannot open the trial store {path}: {exc}; is another compileiq using it?") from None
    except _Damaged:
        db.close()
        raise


def _add_columns(db: sqlite3.Connection) -> None:
    """The columns a store written by an earlier version lacks, added with their defaults."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(trials)")}
    if "fingerprint" not in columns:  # a store written by compileiq_cmake 0.1.0 before fingerprints
        db.execute("ALTER TABLE trials ADD COLUMN fingerprint TEXT NOT NULL DEFAULT ''")
        db.execute("ALTER TABLE trials ADD COLUMN same_code_as INTEGER")
    if "kernels" not in columns:
        db.execute("ALTER TABLE trials ADD COLUMN kernels TEXT NOT NULL DEFAULT '[]'")
    if "gpu" not in columns:  # before several GPUs per tune
        db.execute("ALTER TABLE trials ADD COLUMN gpu TEXT NOT NULL DEFAULT ''")
    if "binary_bytes" not in columns:  # before the co-objectives
        db.execute("ALTER TABLE trials ADD COLUMN binary_bytes INTEGER NOT NULL DEFAULT 0")
    if "device_bytes" not in columns:  # before the device code's size
        db.execute("ALTER TABLE trials ADD COLUMN device_bytes INTEGER NOT NULL DEFAULT 0")


def _errorcode(exc: sqlite3.Error) -> int:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF


def _aside_name(path: Path, label: str) -> Path:
    """<name>.<label>-<UTC time>[-n] beside `path`, a name not taken yet."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    dest = path.with_name(f"{path.name}.{label}-{stamp}")
    n = 1
    while dest.exists():
        n += 1
        dest = path.with_name(f"{path.name}.{label}-{stamp}-{n}")
    return dest


def move_aside(path: Path, label: str) -> Path:
    """Rename a store (and its journal files) to <name>.<label>-<UTC time>[-n], kept beside it; the new path.
    Raises OSError when it cannot be moved."""
    dest = _aside_name(path, label)
    os.replace(path, dest)
    for suffix in _SIDECARS:
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, dest.with_name(dest.name + suffix))
    return dest


def _damaged(path: Path, why: str, reader: bool) -> str:
    """A damaged store: a read command says so and leaves it (CompileIQError); a tune moves it aside (the note)."""
    if reader:
        raise CompileIQError(
            f"the trial store {path} is damaged ({one_line(why)}); left as it is: the next tune with this build "
            "tree moves it aside and starts a new one"
        )
    return _move_aside(path, why)


def _move_aside(path: Path, why: str) -> str:
    """Rename a damaged store (and its journal files) to <name>.damaged-<UTC time>; the note to print."""
    try:
        dest = move_aside(path, "damaged")
    except OSError as exc:
        raise CompileIQError(
            f"the trial store {path} is damaged ({why}) and could not be moved aside ({exc}); move or delete it by hand"
        ) from None
    return (
        f"the trial store {path} was damaged ({why}); moved it to {dest.name} and started a new one: "
        "earlier trials are not reused"
    )


def _validation_from(raw: dict) -> Validation:
    fs = raw["flagset"]
    rows = tuple(
        WorkloadComparison(
            **{
                **w,
                "workload": tuple(w["workload"]),
                "baseline": tuple(w["baseline"]),
                "candidate": tuple(w["candidate"]),
            }
        )
        for w in raw["workloads"]
    )
    return Validation(**{**raw, "flagset": _flagset_from(fs), "workloads": rows})


def _contribution_from(raw: dict) -> Contribution:
    return Contribution(**{**raw, "flags": tuple(raw["flags"])})


def _flagset_from(raw: dict) -> FlagSet:
    return FlagSet(choices=tuple(tuple(c) for c in raw["choices"]), flags=tuple(raw["flags"]))


def _trial(row: tuple) -> Trial:
    """A trial from its row (raises ValueError, TypeError or KeyError when the row is not one)."""
    idx, choices, flags, status, reason, meas, bsec, rsec, wsec, cmd, fp, same, kern, gpu, size, device = row
    flagset = FlagSet(
        choices=tuple(tuple(c) for c in json.loads(choices)), flags=tuple(str(f) for f in json.loads(flags))
    )
    measurements = tuple(
        Measurement(
            workload=tuple(str(w) for w in m["workload"]),
            samples=tuple(float(x) for x in m["samples"]),
            throttled=bool(m.get("throttled", False)),
            numbers=tuple(m.get("numbers", ())),
            reference=tuple(m.get("reference", ())),
            joules=tuple(float(x) for x in m.get("joules", ())),
            metric=tuple(float(x) for x in m.get("metric", ())),
            shared=int(m.get("shared", 0)),
        )
        for m in json.loads(meas)
    )
    if not all(math.isfinite(x) for m in measurements for x in (*m.samples, *m.joules, *m.metric)):
        raise ValueError("a sample is not a finite number")
    if not isinstance(idx, int) or not all(isinstance(v, (int, float)) or v is None for v in (bsec, rsec, wsec)):
        raise ValueError("a number column holds something else")
    return Trial(
        idx,
        flagset,
        Status(status),
        str(reason or ""),
        measurements,
        bsec,
        rsec,
        wsec,
        cmd,
        fp,
        same,
        tuple(KernelResources(**k) for k in json.loads(kern)),
        gpu,
        binary_bytes=int(size or 0),
        device_bytes=int(device or 0),
    )


class TrialStore:
    """`note` is "" or one line to print: the store was damaged and moved aside. `reader`: opened by a read
    command (`trials`, `report`), which never moves or changes a damaged store: CompileIQError in one line."""

    def __init__(
        self,
        path: Path,
        spec_identity: str,
        timeout: float = 5.0,
        write_deadline: float = WRITE_DEADLINE,
        reader: bool = False,
    ) -> None:
        if not reader:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.spec = spec_identity
        self.write_deadline = write_deadline
        self.note = ""
        self.skipped_rows = 0  # rows load_all left out (not trials)
        if path.exists() and path.stat().st_size == 0:  # not brand new: a store that lost its content
            self.note = _damaged(path, "the file is empty", reader)
        try:
            self._db = _open_checked(path, timeout)
        except _Damaged as exc:
            self.note = _damaged(path, str(exc), reader)
            self._db = _open_checked(path, timeout)

    def close(self) -> None:
        self._db.close()

    def load(self) -> list[Trial]:
        """The trials of this store's tune (spec identity)."""
        return self.load_all().get(self.spec, [])

    def load_all(self) -> dict[str, list[Trial]]:
        """Every stored trial, grouped by tune (spec identity). A row that is not a trial (edited or damaged
        by something else: an unknown status, broken JSON, a sample that is not a finite number) is left out
        and counted in `skipped_rows` (the commands say so), never a traceback."""
        rows = self._db.execute(
            "SELECT spec, idx, choices, flags, status, reason, measurements, build_seconds, bench_seconds, "
            "wall_seconds, compile_command, fingerprint, same_code_as, kernels, gpu, binary_bytes, device_bytes "
            "FROM trials "
            "ORDER BY spec, idx",
        ).fetchall()
        groups: dict[str, list[Trial]] = {}
        self.skipped_rows = 0
        for row in rows:
            try:
                groups.setdefault(row[0], []).append(_trial(row[1:]))
            except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
                self.skipped_rows += 1
        return groups

    def _write(self, what: str, statements: list[tuple[str, tuple]]) -> None:
        """Run `statements` as one transaction. While another program holds the store locked, retry until
        write_deadline; then (or on any other database error) one line that names what was not saved where."""
        deadline = time.monotonic() + self.write_deadline
        while True:
            try:
                with self._db:  # commits, or rolls back on an error
                    for sql, params in statements:
                        self._db.execute(sql, params)
                return
            except sqlite3.Error as exc:
                busy = _errorcode(exc) in _BUSY_CODES
                if busy and time.monotonic() < deadline:
                    time.sleep(0.25)
                    continue
                why = f"another program held it locked for {self.write_deadline:.0f} s ({exc})" if busy else str(exc)
                if _errorcode(exc) == sqlite3.SQLITE_FULL:
                    why = f"the disk is full ({exc}): free some space"
                raise CompileIQError(
                    f"{what} was not saved in the trial store {self.path}: {why}; what was saved before is kept "
                    "there: free the store and run the same command again to resume"
                ) from None

    def save_result(self, name: str, value: object) -> None:
        """Results derived from the trials (e.g. the flag-effects model), stored beside them as JSON."""
        self._write(
            f"the result {name!r}",
            [("INSERT OR REPLACE INTO results VALUES (?,?,?)", (self.spec, name, json.dumps(value)))],
        )

    def archive(self, label: str) -> tuple[Path, int]:
        """Move this tune's trials and results (its spec identity's rows only; the other tunes' stay) into a
        store of their own beside this one, <name>.<label>-<UTC time>, where TrialStore(path, spec) reads
        them. Returns that path and the number of trials moved."""
        dest = _aside_name(self.path, label)
        TrialStore(dest, self.spec).close()  # the schema
        columns = ", ".join(row[1] for row in self._db.execute("PRAGMA table_info(trials)"))
        self._db.execute("ATTACH DATABASE ? AS aside", (str(dest),))
        try:
            moved = self._db.execute("SELECT COUNT(*) FROM trials WHERE spec = ?", (self.spec,)).fetchone()[0]
            self._write(
                f"moving the stale trials of {self.spec} to {dest.name}",
                [
                    (
                        f"INSERT INTO aside.trials ({columns}) SELECT {columns} FROM main.trials WHERE spec = ?",
                        (self.spec,),
                    ),
                    ("INSERT INTO aside.results SELECT * FROM main.results WHERE spec = ?", (self.spec,)),
                    ("DELETE FROM main.trials WHERE spec = ?", (self.spec,)),
                    ("DELETE FROM main.results WHERE spec = ?", (self.spec,)),
                ],
            )
        finally:
            self._db.execute("DETACH DATABASE aside")
        return dest, moved

    def load_result(self, name: str) -> Any:
        """The JSON value kept under name; None when there is none."""
        row = self._db.execute("SELECT value FROM results WHERE spec = ? AND name = ?", (self.spec, name)).fetchone()
        return json.loads(row[0]) if row else None

    def save_validations(self, name: str, validations: list[Validation]) -> None:
        """A validation's outcome (every candidate's comparison with the baseline), kept under name."""
        self.save_result(name, [asdict(v) for v in validations])

    def load_validations(self, name: str) -> list[Validation] | None:
        raw = self.load_result(name)
        return None if raw is None else [_validation_from(v) for v in raw]

    def save_ablation(self, name: str, minimal: FlagSet, contributions: tuple[Contribution, ...]) -> None:
        """An ablation's outcome (the minimal flag set and what each flag is worth), kept under name."""
        self.save_result(name, {"minimal": asdict(minimal), "contributions": [asdict(c) for c in contributions]})

    def load_ablation(self, name: str) -> tuple[FlagSet, tuple[Contribution, ...]] | None:
        raw = self.load_result(name)
        if raw is None:
            return None
        contributions = tuple(_contribution_from(c) for c in raw["contributions"])
        return _flagset_from(raw["minimal"]), contributions

    def save_ablation_step(self, name: str, step: str, contribution: Contribution) -> None:
        """One finished step of an ablation (`step`: what was removed from which flag set), kept as soon as
        it is decided, so that a rerun after a kill resumes the ablation after it."""
        steps = self.load_result(name + ":steps") or {}
        self.save_result(name + ":steps", {**steps, step: asdict(contribution)})

    def load_ablation_steps(self, name: str) -> dict[str, Contribution]:
        raw = self.load_result(name + ":steps") or {}
        return {step: _contribution_from(c) for step, c in raw.items()}

    def save(self, trial: Trial) -> None:
        meas = json.dumps(
            [
                {
                    "workload": list(m.workload),
                    "samples": list(m.samples),
                    "throttled": m.throttled,
                    "numbers": list(m.numbers),
                    "reference": list(m.reference),
                    **({"joules": list(m.joules)} if m.joules else {}),
                    **({"metric": list(m.metric)} if m.metric else {}),
                    **({"shared": m.shared} if m.shared else {}),
                }
                for m in trial.measurements
            ]
        )
        self._write(
            f"trial {trial.index} ({trial.flagset.describe()})",
            [
                (
                    "INSERT OR REPLACE INTO trials (spec, key, idx, choices, flags, status, reason, measurements, "
                    "build_seconds, bench_seconds, wall_seconds, compile_command, fingerprint, same_code_as, "
                    "kernels, gpu, "
                    "binary_bytes, device_bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        self.spec,
                        trial.flagset.key,
                        trial.index,
                        json.dumps(trial.flagset.choices),
                        json.dumps(list(trial.flagset.flags)),
                        trial.status.value,
                        trial.reason,
                        meas,
                        trial.build_seconds,
                        trial.bench_seconds,
                        trial.wall_seconds,
                        trial.compile_command,
                        trial.fingerprint,
                        trial.same_code_as,
                        json.dumps([k.__dict__ for k in trial.kernels]),
                        trial.gpu,
                        trial.binary_bytes,
                        trial.device_bytes,
                    ),
                )
            ],
        )
