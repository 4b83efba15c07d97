"""A configure or build step of the project that failed, as one error: the variant trees' configure
(project/cmake_project.py), `check`'s trees (results/check_trees.py) and the --toolkit tree
(tune/with_toolkit.py) all raise `step_error`'s. Like scikit-build-core's errors, it keeps the failing
command's output: the whole of it in a log on disk (its command line first), its most telling line in the
one-line message, with the command, its exit status (or why compileiq stopped it) and what to do about it."""

from __future__ import annotations

from pathlib import Path

from ..model.errors import CommandFailure, ProjectCommandError, first_error_line, write_log
from ..system.processes import ProcessResult


def stopped_reason(proc: ProcessResult, timeout: float) -> str:
    """How a configure or build that compileiq stopped ended: "timed out after N s" or "stopped: printed too
    much output", and whether some of its processes could not be ended."""
    still = "" if proc.ended else "; some of its processes could not be ended"
    why = f"timed out after {timeout:.0f} s" if proc.timed_out else "stopped: printed too much output"
    return why + still


def step_error(
    what: str,
    cmd: list[str],
    proc: ProcessResult,
    log_path: Path,
    timeout: float,
    *,
    stopped: str = "",
    hint: str = "",
) -> ProjectCommandError:
    """The error of a step (`what`: "configuring the variant tree worker-0", ...) whose command `cmd` ended
    `proc` without success: its whole output written to `log_path`, its first error line, its exit status or,
    when compileiq stopped it (after `timeout` seconds, or for too much output), why: `stopped` when given,
    else `stopped_reason`. `hint`: what to do about it, after the message."""
    why = (stopped or stopped_reason(proc, timeout)) if proc.returncode is None else ""
    failure = CommandFailure(
        what,
        tuple(cmd),
        proc.returncode,
        first_error_line(proc.output),
        write_log(log_path, cmd, proc.output),
        why,
    )
    return ProjectCommandError(failure, hint)
