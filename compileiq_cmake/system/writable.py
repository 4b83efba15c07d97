"""Whether a file could be written at a path, checked before a tune spends time (its TOML, its summary)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..model.errors import CompileIQError

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
            f"cannot write in {directory} ({exc.strerror or exc}), so {path} could not be written "
            f"after the tune; choose another {option} or fix the permissions"
        ) from None
