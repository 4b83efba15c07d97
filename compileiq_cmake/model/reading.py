"""Reading a file someone else may have written (a compileiq.toml, a suite, an imported prior, a landscape):
regular files only (a named pipe must not block, a device such as /dev/zero must not be read forever), and
bounded by the bytes actually read (at most cap + 1: a file's stated size is not trusted). Anything else is
one line naming the file ("<what>: <path> ...", or "<path> ..." when `what` is "")."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import CompileIQError, UsageError

BOM = "\ufeff"


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a named pipe", "a device")."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular(
    path: Path | str, max_bytes: int, what: str, error: type[CompileIQError] = UsageError, noun: str = "file"
) -> bytes:
    """The bytes of `path`, a regular file of at most max_bytes; else error("<what>: ...") in one line. The file
    is opened without blocking (a named pipe with no writer) and checked on the open descriptor; at most
    max_bytes + 1 bytes are read, whatever its stated size."""
    path = Path(path)
    what = f"{what}: " if what else ""  # "" : the message starts with the path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"{what}cannot read {path} (it does not exist)") from None
    except OSError as exc:
        raise error(f"{what}cannot read {path} ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{what}{path} is {kind_of(mode)}, not a regular file; give a {noun}")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise error(f"{what}cannot read {path} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise error(
            f"{what}{path} is more than {max_bytes} bytes; at most {max_bytes} are read: is it the right {noun}?"
        )
    return data


def read_regular_text(
    path: Path | str, max_bytes: int, what: str, error: type[CompileIQError] = UsageError, noun: str = "file"
) -> str:
    """read_regular as UTF-8 text, a leading byte-order mark (which editors on Windows write) removed."""
    data = read_regular(path, max_bytes, what, error, noun)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what}{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text.removeprefix(BOM)
