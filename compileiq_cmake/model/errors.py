"""User-facing errors: one line that says what is wrong and how to fix it.

CompileIQError is the base every caller catches; its kinds say what went wrong (ui/cli.py maps each to an
exit status and prints the one line):
  UsageError           bad input: an option, a regex, a missing target or benchmark
  ProjectCommandError  a command of the project failed (configure, build, benchmark, VERIFY): it names the
                       command's exit status, its first error line and the log on disk with its full output
  MeasurementError     a benchmark ran but cannot be measured (metric missing, no GPU, collector failed)
  ResultFileError      a compileiq.toml that is invalid, cannot be read or cannot be written
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path


class CompileIQError(Exception):
    """A problem with the user's input, project or environment, reported as one line."""


class UsageError(CompileIQError):
    """Bad input: an option out of range, a regex that does not compile, a missing target or benchmark."""


class MeasurementError(CompileIQError):
    """A benchmark or metric problem: the command ran, but what it printed (or the GPU) gives no measurement."""


class ResultFileError(CompileIQError):
    """A compileiq.toml (or its lock) that is invalid, cannot be read or cannot be written."""


def one_line(text: str) -> str:
    """`text` on one line: its lines stripped and joined with ' | ' (empty lines dropped)."""
    return " | ".join(ln.strip() for ln in text.splitlines() if ln.strip())


@dataclass(frozen=True)
class CommandFailure:
    """A project command that failed: what it was for, its argv, exit status (None: stopped by compileiq, see
    `stopped`), the most telling line of its output and the log file that holds all of it."""

    what: str  # e.g. "configuring the variant tree worker-0"
    command: tuple[str, ...]
    exit_code: int | None
    first_error: str
    log: Path | None = None
    stopped: str = ""  # why compileiq stopped it when exit_code is None ("timed out after 60 s", ...)

    def message(self) -> str:
        """One line: what failed, how (exit status), the first error line and where the full log is."""
        how = f"exit {self.exit_code}" if self.exit_code is not None else (self.stopped or "stopped")
        line = f"{self.what} failed ({how})"
        if self.first_error:
            line += f": {one_line(self.first_error)}"
        if self.log is not None:
            line += f" (full log: {self.log})"
        return line


class ProjectCommandError(CompileIQError):
    """A command of the project failed; the message is CommandFailure.message() (one line)."""

    def __init__(self, failure: CommandFailure, hint: str = "") -> None:
        self.failure = failure
        self.hint = hint  # what to do about it, appended after '; '
        super().__init__(failure.message() + (f"; {hint}" if hint else ""))

    def __reduce__(
        self,
    ) -> tuple[
        type[ProjectCommandError], tuple[CommandFailure, str]
    ]:  # pickled across processes (Ray): rebuilt from its fields, not from the message
        return (type(self), (self.failure, self.hint))

    @property
    def command(self) -> tuple[str, ...]:
        return self.failure.command

    @property
    def exit_code(self) -> int | None:
        return self.failure.exit_code

    @property
    def log(self) -> Path | None:
        return self.failure.log

    @property
    def first_error(self) -> str:
        return self.failure.first_error


def first_error_line(output: str) -> str:
    """The most telling line of a failed command's output: a CMake error's message (with its file:line),
    else the first line that mentions an error, else the last line; at most 400 characters."""
    cmake_error = re.search(r"CMake Error(?: at ([^\n]*?)(?: \([^)\n]*\))?)?:\n((?:  .*\n?)+)", output)
    if cmake_error:
        where = f"{cmake_error.group(1)}: " if cmake_error.group(1) else ""
        message = " ".join(ln.strip() for ln in cmake_error.group(2).splitlines() if ln.strip())
        return (where + message)[:400]
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln[:400]
    return lines[-1][:400] if lines else "no output"


def write_log(path: Path, command: tuple[str, ...] | list[str], output: str) -> Path | None:
    """The full output of a command written to `path` (its command line first); None when it cannot be
    written (the error then names no log rather than failing on the log)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"$ {shlex.join(command)}\n{output}")
    except OSError:
        return None
    return path
