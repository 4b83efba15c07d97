"""Reading and writing the optimal-flags TOML: a strict read (size cap, schema_version, every [[entry]]
checked by schema.check_entry), writes that lose nothing (a lock on <file>.lock, re-read and merged under it,
atomic replace, written through a symlink, a fallback copy when the write fails), the replacement policy for
entries guarded by numerics checks, and the check that a tune will be able to write its entry."""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import tomli_w

from ..model.errors import CompileIQError, ResultFileError
from ..model.events import as_stream
from ..model.reading import read_regular_text
from ..system.writable import check_output
from .schema import NUMERICS_CHECKS, SCHEMA_VERSION, FlagsEntry, check_entry, numerics_checked
from .schema_types import plain, short_repr

MAX_FILE_BYTES = 4 << 20
_TOP_LEVEL = ("schema_version", "entry")
LOCK_WAIT_SECONDS = 120.0  # how long a write waits for another writer's lock on <file>.lock
_HEADER = "# Written by compileiq_cmake: tuned compiler flags. Commit it; configures apply it.\n"


def _load_document(path: Path) -> dict:
    text = read_regular_text(path, MAX_FILE_BYTES, "", ResultFileError, "compileiq.toml")
    try:
        return tomllib.loads(text)  # a leading byte-order mark removed by read_regular_text
    except tomllib.TOMLDecodeError as exc:
        raise ResultFileError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ResultFileError(
            f"{path} nests arrays or tables too deeply to be read; a compileiq.toml nests a few "
            "levels: is it the right file?"
        ) from None
    except OSError as exc:
        raise ResultFileError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_entries(path: Path) -> list[FlagsEntry]:
    if not path.exists():
        raise ResultFileError(f"{path} does not exist; run a tune first or point to the file")
    data = _load_document(path)
    if "schema_version" not in data:
        raise ResultFileError(
            f"{path}: schema_version is missing (a compileiq.toml starts with schema_version = {SCHEMA_VERSION}): "
            "was it written by compileiq_cmake?"
        )
    version = data.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:  # not `true`, which equals 1 in Python
        newer = type(version) is int and version > SCHEMA_VERSION
        raise ResultFileError(
            f"{path}: schema_version must be {SCHEMA_VERSION}; "
            + (
                f"it is {version}: written by a newer compileiq_cmake? upgrade it"
                if newer
                else f"it is {short_repr(version)}: was it written by compileiq_cmake?"
            )
        )
    unknown = sorted(data.keys() - set(_TOP_LEVEL))
    if unknown:
        raise ResultFileError(
            f"{path}: unknown top-level key {', '.join(repr(k) for k in unknown)}; a compileiq.toml "
            "holds only schema_version and [[entry]] tables"
        )
    raw_entries = data.get("entry", [])
    if not isinstance(raw_entries, list):
        raise ResultFileError(f"{path}: 'entry' must be an array of tables ([[entry]])")
    return [check_entry(raw, str(path)) for raw in raw_entries]


@dataclass(frozen=True)
class Replacement:
    """What writing a new entry does to the entry with the same key (target, language, arch)."""

    replaces: FlagsEntry | None
    allowed: bool
    message: str  # one line: old vs new (flags, speedup, checks), or why it is not replaced
    kept: bool = False  # not replaced because the old entry is the better one of the same identity (no error)


def _describe(e: FlagsEntry) -> str:
    gain = "energy gain" if e.objective == "energy" else "speedup"
    return (
        f"flags '{' '.join(e.flags) or '(the project own)'}', {gain} {e.speedup:.2f}x, "
        f"checked by {', '.join(e.checks) or 'nothing recorded'}"
    )


def replacement(existing: list[FlagsEntry], new: FlagsEntry, replace: bool) -> Replacement:
    """Whether `new` replaces an entry of `existing`: an entry whose tune compared the program's numbers
    (numerics_checked) is replaced by one whose tune did not only with replace=True (--replace); an entry of
    another build type only with replace=True too (a tune of a Debug build, or of a misspelt --config, never
    replaces a Release result silently). More than one entry of the key (schema.duplicate_entries, which no
    configure applies): each is asked as above, and unless one refuses, the new entry replaces them all, said."""
    olds = [e for e in existing if e.key == new.key]
    old = olds[0] if olds else None
    where = f"{new.target} ({new.language} {new.arch or new.compiler_id})"
    if len(olds) > 1:
        refused = [d for d in (replacement([o], new, replace) for o in olds) if not d.allowed and not d.kept]
        if refused:
            return refused[0]
        return Replacement(
            old,
            True,
            f"replacing the {len(olds)} entries for {where}, which applied none of them (one set of flags per "
            f"target and language): {'; '.join(f'old: {_describe(o)}' for o in olds)}; new: {_describe(new)}",
        )
    if old is None:
        return Replacement(None, True, f"new entry for {where}")
    change = f"{where} (old: {_describe(old)}; new: {_describe(new)})"
    if old.build_type and old.build_type != new.build_type and not replace:
        return Replacement(
            old,
            False,
            (
                f"not replacing the entry for {where}: it was tuned for the {old.build_type} build type and this tune "
                f"for {new.build_type or 'no build type'}; tune --config {old.build_type}, or pass --replace to "
                "replace "
                "it anyway"
            ),
        )
    if old.objective != new.objective and not replace:
        return Replacement(
            old,
            False,
            (
                f"not replacing the entry for {where}: it was tuned for {old.objective} and this tune for "
                f"{new.objective}; write this tune to another file (-o), or pass --replace to replace it"
            ),
        )
    if numerics_checked(old) and not numerics_checked(new) and not replace:
        checked = ", ".join(c for c in old.checks if c in NUMERICS_CHECKS)
        return Replacement(
            old,
            False,
            (
                f"not replacing the entry for {change}: the old one was checked for numerics ({checked}) and this tune "
                "was not; tune with --compare-output or --compare-file, or pass --replace to replace it anyway"
            ),
        )
    if not replace and same_identity(old, new) and new.speedup < old.speedup:
        return Replacement(
            old,
            False,
            (
                f"kept the entry for {change}: the old one was validated faster on the same sources, compile flags, "
                "compiler, build type and GPU; pass --replace to write this tune's instead"
            ),
            kept=True,
        )
    return Replacement(old, True, f"replacing the entry for {change}")


def same_identity(a: FlagsEntry, b: FlagsEntry) -> bool:
    """Whether two entries were tuned on the same thing (FlagsEntry.identity)."""
    return a.identity == b.identity


def _document(entries: list[FlagsEntry]) -> str:
    return _HEADER + tomli_w.dumps({"schema_version": SCHEMA_VERSION, "entry": [plain(asdict(e)) for e in entries]})


def _resolve(path: Path) -> Path:
    """The file a write must replace: a symlink's target (written through the link), else path."""
    if not path.is_symlink():
        return path
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:
        raise ResultFileError(f"{path} is a symbolic link that cannot be followed ({exc}); fix or remove it") from None


def _temp_prefix(target: Path) -> str:
    return f".compileiq-{target.name}-"


def _lock_path(target: Path) -> Path:
    return target.with_name(target.name + ".lock")


@contextmanager
def _locked(target: Path, wait: float, log: Callable[[str], None] | None) -> Iterator[None]:
    """An exclusive flock on <target>.lock (left in place: removing it would race with other writers). Held
    by another process: says so once and waits up to `wait` seconds, then CompileIQError."""
    lock = _lock_path(target)
    if lock.is_dir():
        raise ResultFileError(f"the lock file {lock} is a directory; remove it (compileiq_cmake creates it as a file)")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise ResultFileError(f"cannot open the lock file {lock}: {exc.strerror or exc}") from None
    try:
        deadline, said = time.monotonic() + wait, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ResultFileError(
                        f"{lock} stayed locked by another process for {wait:.0f} s (a writer that "
                        f"hangs? 'fuser {lock}' names it)"
                    ) from None
                if log is not None and not said:
                    as_stream(log).info(
                        f"waiting for another process's lock on {lock} (at most {wait:.0f} s)",
                        lock=str(lock),
                        wait=wait,
                    )
                    said = True
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask  # a normal file for the repository, not mkstemp's 0600


def _replace_atomically(target: Path, text: str) -> None:
    """Write a temporary file beside target and rename it over target; no temporary file is left."""
    own = re.compile(re.escape(_temp_prefix(target)) + r"[a-z0-9_]+\.toml")  # mkstemp's random part: no "." or "-"
    for stray in target.parent.glob(_temp_prefix(target) + "*.toml"):  # of a writer killed under the lock
        if own.fullmatch(stray.name):  # not the temporary file of compileiq.toml-x.toml's writer
            stray.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".toml", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            os.fchmod(fh.fileno(), _file_mode())
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _failure(path: Path, exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"could not write {path}: {exc.strerror or exc}"
    if isinstance(exc, CompileIQError):
        return f"could not add the entry to {path}: {exc}"
    return f"could not write {path}: {type(exc).__name__}: {exc}"


def _save_fallback(
    path: Path, exc: Exception, entry: FlagsEntry, text: str, fallback_dir: Path | None
) -> ResultFileError:
    """Keep the result when path cannot be written: the document in fallback_dir; the error to raise."""
    why = _failure(path, exc)
    flags = f"the tuned flags of {entry.target} were: {' '.join(entry.flags) or '(none)'}"
    if fallback_dir is None or not text:
        return ResultFileError(f"{why}; {flags}")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", entry.target)
    saved = fallback_dir / f"compileiq-{name}-{stamp}.toml"
    try:
        fallback_dir.mkdir(parents=True, exist_ok=True)
        saved.write_text(text)
    except OSError as exc2:
        return ResultFileError(f"{why}; saving it to {saved} failed too ({exc2.strerror or exc2}); {flags}")
    return ResultFileError(
        f"{why}; the entry for {entry.target} was saved to {saved}: copy that file over {path} "
        "(or merge its [[entry]]) once the problem is fixed"
    )


def write_entry(
    path: Path,
    entry: FlagsEntry,
    fallback_dir: Path | None = None,
    replace: bool = True,
    log: Callable[[str], None] | None = None,
    lock_wait: float | None = None,
) -> Replacement:
    """Merge the entry into the file (replacing one with the same target/language/arch). Under an flock on
    <file>.lock (another holder: `log` says so, and the write waits up to lock_wait seconds, default
    LOCK_WAIT_SECONDS), the file is re-read, merged and atomically replaced, so concurrent writers lose
    nothing; a symlink is written through (its target is replaced). With replace=False, a numerics-checked
    entry is not replaced by an unchecked one, and one of the same identity validated faster is kept (`kept`:
    nothing written; see replacement). Whatever fails (the file cannot be written,
    a full disk, the file was damaged meanwhile, an entry refused), the document is saved in fallback_dir (if
    given; the merged one, else this entry alone) and a CompileIQError names it."""
    text = ""
    try:
        text = _document([entry])
        check_entry(plain(asdict(entry)), f"{path} (entry to write)")  # never write what cannot be read back
        target = _resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target, LOCK_WAIT_SECONDS if lock_wait is None else lock_wait, log):
            entries = read_entries(target) if target.exists() else []
            decision = replacement(entries, entry, replace)
            if decision.kept:  # the old entry is the better one: nothing to write, said by the caller
                return decision
            if not decision.allowed:
                raise ResultFileError(decision.message)
            text = _document([e for e in entries if e.key != entry.key] + [entry])
            _replace_atomically(target, text)
    except Exception as exc:  # every failure: the result is kept, and the message says where
        raise _save_fallback(path, exc, entry, text, fallback_dir) from None
    return decision


def check_output_writable(path: Path, inputs: Iterable[Path] = ()) -> None:
    """Before a tune spends time: CompileIQError unless its entry could be written to path. An existing file
    must be a valid compileiq.toml (not half-written, empty or of another schema), and its directory (a
    symlink's target's; the nearest existing one for a new path) must let a file be created. Never a device, a
    named pipe or one of this run's `inputs` (system/writable.check_output)."""
    target = _resolve(path)
    if target.is_dir():
        raise ResultFileError(f"--output {path} is a directory; give a file name such as compileiq.toml")
    try:
        check_output(path, "--output", lambda _p, _head: True, "a compileiq.toml", inputs, follow_link=True)
    except CompileIQError as exc:
        raise ResultFileError(str(exc)) from None
    if target.exists():
        try:
            read_entries(target)
        except CompileIQError as exc:
            raise ResultFileError(f"{exc}; fix or remove {path} before tuning: its entry could not be added") from None
    lock = _lock_path(target)
    if lock.is_dir():
        raise ResultFileError(
            f"the lock file {lock} is a directory, so {path} could not be written after the tune; remove it"
        )
