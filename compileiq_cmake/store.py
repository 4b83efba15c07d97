"""The trial store: every finished trial is written to SQLite at once, so a killed tune resumes without
repeating or losing work; an exclusive lock keeps two tunes off one build tree."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from pathlib import Path

from .errors import CompileIQError
from .records import FlagSet, KernelResources, Measurement, Status, Trial

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
    PRIMARY KEY (spec, key)
);
CREATE TABLE IF NOT EXISTS results (
    spec TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (spec, name)
)
"""


class TuneLock:
    """An flock on <state>/tune.lock; a second tune on the same build tree is refused."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "tune.lock"
        self._fd: int | None = None

    def __enter__(self) -> "TuneLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise CompileIQError(
                f"another compileiq tune (pid {holder}) is running on {self.path.parent.parent}; "
                "wait for it to finish or use another build directory"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class TrialStore:
    def __init__(self, path: Path, spec_identity: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.spec = spec_identity
        self._db = sqlite3.connect(path)
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(trials)")}
        if "fingerprint" not in columns:  # a store written by compileiq_cmake 0.1.0 before fingerprints
            self._db.execute("ALTER TABLE trials ADD COLUMN fingerprint TEXT NOT NULL DEFAULT ''")
            self._db.execute("ALTER TABLE trials ADD COLUMN same_code_as INTEGER")
        if "kernels" not in columns:
            self._db.execute("ALTER TABLE trials ADD COLUMN kernels TEXT NOT NULL DEFAULT '[]'")
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    def load(self) -> list[Trial]:
        """The trials of this store's tune (spec identity)."""
        return self.load_all().get(self.spec, [])

    def load_all(self) -> dict[str, list[Trial]]:
        """Every stored trial, grouped by tune (spec identity)."""
        rows = self._db.execute(
            "SELECT spec, idx, choices, flags, status, reason, measurements, build_seconds, bench_seconds, "
            "wall_seconds, compile_command, fingerprint, same_code_as, kernels FROM trials ORDER BY spec, idx",
        ).fetchall()
        groups: dict[str, list[Trial]] = {}
        for spec, idx, choices, flags, status, reason, meas, bsec, rsec, wsec, cmd, fp, same, kern in rows:
            flagset = FlagSet(choices=tuple(tuple(c) for c in json.loads(choices)), flags=tuple(json.loads(flags)))
            measurements = tuple(
                Measurement(workload=tuple(m["workload"]), samples=tuple(m["samples"]),
                            throttled=m.get("throttled", False), numbers=tuple(m.get("numbers", ())),
                            reference=tuple(m.get("reference", ())))
                for m in json.loads(meas)
            )
            groups.setdefault(spec, []).append(
                Trial(idx, flagset, Status(status), reason, measurements, bsec, rsec, wsec, cmd, fp, same,
                      tuple(KernelResources(**k) for k in json.loads(kern)))
            )
        return groups

    def save_result(self, name: str, value: object) -> None:
        """Results derived from the trials (e.g. the flag-effects model), stored beside them as JSON."""
        self._db.execute("INSERT OR REPLACE INTO results VALUES (?,?,?)", (self.spec, name, json.dumps(value)))
        self._db.commit()

    def load_result(self, name: str) -> object | None:
        row = self._db.execute("SELECT value FROM results WHERE spec = ? AND name = ?", (self.spec, name)).fetchone()
        return json.loads(row[0]) if row else None

    def save(self, trial: Trial) -> None:
        meas = json.dumps([
            {"workload": list(m.workload), "samples": list(m.samples), "throttled": m.throttled, "numbers": list(m.numbers),
             "reference": list(m.reference)}
            for m in trial.measurements
        ])
        self._db.execute(
            "INSERT OR REPLACE INTO trials VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                self.spec, trial.flagset.key, trial.index, json.dumps(trial.flagset.choices),
                json.dumps(list(trial.flagset.flags)), trial.status.value, trial.reason, meas,
                trial.build_seconds, trial.bench_seconds, trial.wall_seconds, trial.compile_command,
                trial.fingerprint, trial.same_code_as, json.dumps([k.__dict__ for k in trial.kernels]),
            ),
        )
        self._db.commit()
