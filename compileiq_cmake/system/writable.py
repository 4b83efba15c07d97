"""Whether a file could be written at a path, checked before a tune spends time (its TOML, its summary)."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from ..model.errors import CompileIQError
from ..model.reading import kind_of

PROBE_PREFIX = ".compileiq-probe-"  # no writer's temporary or stray file has this prefix (results/toml_io.py)


def check_creatable(path: Path, option: str) -> None:
    """CompileIQError naming `option` unless a file could be written at path (replaced whole, through a
    temporary file beside it): path is not a directory, and the nearest existing directory on its way
    lets a file be created (a probe file, removed at once)."""
    if path.is_dir():
        raise CompileIQError(f"{option} {path} is a directory; give a file name")
    directory = path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    if not directory.is_dir():
        raise CompileIQError(f"cannot write {path}: {directory} is not a directory; choose another {option}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=PROBE_PREFIX, suffix=".probe", dir=directory)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise CompileIQError(
            f"cannot write {path}: cannot write in {directory} ({exc.strerror or exc}); choose another {option} "
            "or fix the permissions"
        ) from None


OWNED_HEAD_BYTES = 64 << 10  # what is read of an existing output to see whether the tool wrote it


def _head(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        return os.read(fd, OWNED_HEAD_BYTES)
    finally:
        os.close(fd)


def _link_target(path: Path, option: str, follow_link: bool) -> Path:
    """The file a write at path replaces: path itself, or (follow_link) the file a symbolic link names."""
    if not path.is_symlink():
        return path
    if not follow_link:
        raise CompileIQError(
            f"{option} {path} is a symbolic link; the tool writes only regular files: give the file's own path"
        )
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise CompileIQError(f"{option} {path} is a symbolic link to nothing; give a regular file's path") from None


def _mode(path: Path, option: str) -> int | None:
    """The file type and mode at path; None for a new path (check_creatable says what is in its way)."""
    try:
        return path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise CompileIQError(f"{option} {path}: cannot look at it ({exc.strerror or exc})") from None


def _check_replaceable(
    path: Path, target: Path, option: str, owned: Callable[[Path, bytes], bool], kind: str, inputs: Iterable[Path]
) -> None:
    """An existing regular file `target` (written at `path`): none of the run's inputs, and the tool's own."""
    for each in inputs:
        try:
            same = os.path.samefile(target, each)
        except OSError:
            same = False
        if same:
            raise CompileIQError(
                f"{option} {path} is also an input of this run ({each}): refusing to replace it; give another file"
            )
    try:
        head = _head(target)
    except OSError as exc:
        raise CompileIQError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from None
    if head.strip() and not owned(target, head):
        raise CompileIQError(
            f"{option} {path} exists and is not {kind} written by compileiq_cmake: refusing to replace it; "
            "give another file, or remove it first"
        )


def check_output(
    path: Path,
    option: str,
    owned: Callable[[Path, bytes], bool],
    kind: str,
    inputs: Iterable[Path] = (),
    follow_link: bool = False,
) -> None:
    """CompileIQError naming `option` unless the tool may write its output (`kind`, e.g. "a JSON summary") at
    path: a new path, or a regular file that the tool wrote (owned(path, its first bytes): the tool's own
    marker; an empty file too) and that is none of this run's `inputs`; never a device, a named pipe or a
    socket, never through a symbolic link (follow_link: a link to such a file is written through, the TOML's
    way); then check_creatable. Nothing is written."""
    path = Path(path)
    target = _link_target(path, option, follow_link)
    mode = _mode(target, option)
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise CompileIQError(f"{option} {path} is a directory; give a file name")
        if not stat.S_ISREG(mode):
            raise CompileIQError(
                f"{option} {path} is {kind_of(mode)}, not a regular file: the tool writes only regular files; "
                "give a file name"
            )
        _check_replaceable(path, target, option, owned, kind, inputs)
    check_creatable(target, option)


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)  # what a write to a full disk (or a spent quota) gives
LOW_SPACE_BYTES = 64 << 20  # below this a configure, build or write fails for want of space


def free_bytes(path: Path) -> int | None:
    """The bytes free to this user on the file system holding path (its nearest existing folder); None when
    that cannot be asked."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def disk_full_words(path: Path) -> str:
    """Empty unless the file system holding path is (nearly) full: then the words saying so, with what is free."""
    free = free_bytes(path)
    if free is None or free >= LOW_SPACE_BYTES:
        return ""
    return f"the disk holding {path} is full ({free >> 20} MiB free)"


def disk_full_error(exc: OSError, kept: Path | None = None) -> CompileIQError | None:
    """The one line for a write that failed because the disk is full (None for any other OSError): the file it
    was writing, and what was kept."""
    if exc.errno not in DISK_FULL:
        return None
    where = exc.filename or kept or "a file"
    free = free_bytes(Path(str(where)))
    space = f" ({free >> 20} MiB free)" if free is not None else ""
    keep = f"; the state and logs in {kept} are kept" if kept is not None else ""
    return CompileIQError(
        f"the disk is full{space}: could not write {where} ({exc.strerror or 'no space left on device'}); "
        f"free some space and run the same command again{keep}"
    )
