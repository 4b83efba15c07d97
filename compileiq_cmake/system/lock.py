"""The tune lock: one tune (or screening) at a time on a build tree, held as an flock on <state>/tune.lock
that names the holder's pid."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..model.errors import CompileIQError


class TuneLock:
    """An flock on <state>/tune.lock; a second tune on the same build tree is refused."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "tune.lock"
        self._fd: int | None = None

    def __enter__(self) -> TuneLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise CompileIQError(
                f"cannot write in the build tree {self.path.parent.parent} ({exc.strerror or exc}): a tune keeps its "
                f"trial store and variant trees in {self.path.parent}; give a writable build directory (-B)"
            ) from None
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
