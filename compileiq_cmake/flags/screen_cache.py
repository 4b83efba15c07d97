"""The screening cache, shared by every tune of the user and every build tree: per (translation unit, flag
value), what static screening found (the device-code fingerprint of the unit's cubin, or the compiler's
error), so that a second tune of the same code compiles nothing.

Key: the cubin compile command as run (output and dependency-file paths already dropped by the rewrite;
the build tree's directory written as <tree>, so every variant tree and build tree compares alike), the
compiler's version, and the content of the compiled source and of every file its compile reads (the
compiler's dependency scan, -M, as project/depscan.py runs it). A header edit thus changes the key of
exactly the units that include it.

Store: one SQLite file in the user cache directory (flags/probe.py's user_cache_dir); each write is one
transaction, so two tunes writing at once both land and a reader never sees half a record. Beside the
outcomes it remembers each unit's dependency scan (InputHasher), so a warm screening runs no compiler at all."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..project import depscan
from ..project.nvcc_command import tokens
from .fingerprint import DeviceFingerprint, KernelFingerprint

SCHEMA = 2  # bump when the key or the stored record changes meaning (2: fingerprints of the machine code words)
FILE_NAME = f"screen-v{SCHEMA}.sqlite"
TREE = "<tree>"


@dataclass(frozen=True)
class Outcome:
    """One (unit, flag value) compile's screening outcome: its fingerprint, or the compiler's error."""

    fingerprint: DeviceFingerprint | None
    error: str = ""
    transient: bool = False  # a failure of this run (timeout, no compiler), not of the code: never stored

    def to_json(self) -> str:
        kernels = (
            [
                [k.name, k.sass_sha256, k.registers, k.stack_bytes, k.local_bytes, k.shared_bytes, k.instructions]
                for k in self.fingerprint.kernels
            ]
            if self.fingerprint is not None
            else None
        )
        return json.dumps({"kernels": kernels, "error": self.error}, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> Outcome:
        data = json.loads(text)
        if data.get("kernels") is None:
            return Outcome(fingerprint=None, error=str(data.get("error", "")))
        return Outcome(
            fingerprint=DeviceFingerprint.of(
                [
                    KernelFingerprint(
                        name=k[0],
                        sass_sha256=k[1],
                        registers=int(k[2]),
                        stack_bytes=int(k[3]),
                        local_bytes=int(k[4]),
                        shared_bytes=int(k[5]),
                        instructions=int(k[6]),
                    )
                    for k in data["kernels"]
                ]
            )
        )


def outcome_key(command: list[str], directory: str, compiler_version: str, inputs_sha256: str) -> str:
    """The cache key of one compile: `command` is the cubin command with a placeholder output path."""
    tree = directory.rstrip("/")
    written = [tok.replace(tree, TREE) if tree else tok for tok in command]
    text = json.dumps({"command": written, "compiler": compiler_version, "inputs": inputs_sha256})
    return hashlib.sha256(text.encode()).hexdigest()


class InputHasher:
    """The content digest of what one compile reads: its source and every prerequisite the compiler's
    dependency scan lists (system headers too: an updated toolkit changes them). Each file is read once per
    hasher (one per screening). With `store`, a unit's scan is remembered with each file's (mtime, size,
    sha256): while none of those files changed, the scan is not run again and no file is read (a new header
    that would shadow a listed one on the include path goes unseen, as in ccache's direct mode)."""

    def __init__(self, store: ScreenCache | None = None, timeout: float = 300.0) -> None:
        self.store = store
        self.timeout = timeout
        self._files: dict[tuple[str, int, int], str] = {}

    def _file(self, path: str) -> tuple[int, int, str]:
        """(mtime_ns, size, sha256) of a file; (0, -1, "missing") when it cannot be read."""
        try:
            st = os.stat(path)
        except OSError:
            return 0, -1, "missing"
        stamp = (path, st.st_mtime_ns, st.st_size)
        found = self._files.get(stamp)
        if found is None:
            try:
                found = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                found = "unreadable"
            self._files[stamp] = found
        return st.st_mtime_ns, st.st_size, found

    def _scan(self, entry: dict[str, Any]) -> list[str] | None:
        cwd = entry.get("directory") or "."
        try:
            proc = subprocess.run(
                depscan.scan_command(tokens(entry)),
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode != 0:
            return None
        source = os.path.realpath(os.path.join(cwd, entry["file"]))
        return sorted({os.path.realpath(os.path.join(cwd, p)) for p in depscan.parse_make_rule(proc.stdout)} | {source})

    def _remembered(self, key: str) -> list[list[Any]] | None:
        if self.store is None:
            return None
        try:
            files = self.store.get_scan(key)
        except (sqlite3.Error, OSError, ValueError):
            return None
        if files is None:
            return None
        for path, mtime, size, _ in files:
            try:
                st = os.stat(path)
            except OSError:
                return None
            if (st.st_mtime_ns, st.st_size) != (mtime, size):
                return None
        return files

    def digest(self, entry: dict[str, Any]) -> str | None:
        """None when the dependency scan fails (that unit is then compiled and not cached)."""
        cwd = entry.get("directory") or "."
        key = hashlib.sha256(json.dumps([cwd, tokens(entry)]).encode()).hexdigest()
        files = self._remembered(key)
        if files is None:
            paths = self._scan(entry)
            if paths is None:
                return None
            files = [[p, *self._file(p)] for p in paths]
            if self.store is not None and all(f[3] not in ("missing", "unreadable") for f in files):
                try:
                    self.store.put_scan(key, files)
                except (sqlite3.Error, OSError):
                    pass  # only the scan is run again next time
        tree = cwd.rstrip("/")
        lines = sorted(f"{p.replace(tree, TREE) if tree else p}\t{sha}" for p, _, _, sha in files)
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()


class ScreenCache:
    """The SQLite file of screening outcomes. Every call opens its own connection (threads and processes
    alike); writers wait for each other (busy timeout), never overwrite a record half-way."""

    def __init__(self, path: Path, timeout: float = 60.0) -> None:
        self.path = path
        self.timeout = timeout
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS outcome (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS scan (key TEXT PRIMARY KEY, files TEXT NOT NULL)")

    @staticmethod
    def in_dir(directory: Path) -> ScreenCache:
        return ScreenCache(directory / FILE_NAME)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=self.timeout, isolation_level="DEFERRED")

    def get_many(self, keys: list[str]) -> dict[str, Outcome]:
        out: dict[str, Outcome] = {}
        wanted = list(dict.fromkeys(keys))
        db = self._connect()
        try:
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                rows = db.execute(f"SELECT key, value FROM outcome WHERE key IN ({','.join('?' * len(chunk))})", chunk)
                for key, value in rows:
                    try:
                        out[key] = Outcome.from_json(value)
                    except (ValueError, KeyError, IndexError, TypeError):
                        continue  # a record this version cannot read: compiled again, then replaced
        finally:
            db.close()
        return out

    def put_many(self, outcomes: dict[str, Outcome]) -> None:
        if not outcomes:
            return
        db = self._connect()
        try:
            with db:  # one transaction: all of these records or none
                db.executemany(
                    "INSERT OR REPLACE INTO outcome (key, value) VALUES (?, ?)",
                    [(k, o.to_json()) for k, o in outcomes.items()],
                )
        finally:
            db.close()

    def get_scan(self, key: str) -> list[list[Any]] | None:
        """The files of a unit's last dependency scan: [path, mtime_ns, size, sha256] each; None if not seen."""
        db = self._connect()
        try:
            row = db.execute("SELECT files FROM scan WHERE key = ?", (key,)).fetchone()
        finally:
            db.close()
        return json.loads(row[0]) if row else None

    def put_scan(self, key: str, files: list[list[Any]]) -> None:
        db = self._connect()
        try:
            with db:
                db.execute("INSERT OR REPLACE INTO scan (key, files) VALUES (?, ?)", (key, json.dumps(files)))
        finally:
            db.close()

    def __len__(self) -> int:
        db = self._connect()
        try:
            return int(db.execute("SELECT COUNT(*) FROM outcome").fetchone()[0])
        finally:
            db.close()
