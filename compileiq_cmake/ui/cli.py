"""The command line: `main`, the dispatch of each command to its module (parser: the argument tables; inspect:
show, space, trials, prior; suite_command: tune --suite), and the exit codes (0 ok, 2 bad input or environment).

A command's modules are imported when it runs, not here: every configure of a project with a flags file runs
`cmake-entries`, and every tune is a process of its own; neither should pay for the others' imports (the
tuner, the check's re-measuring, the report's plots)."""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from ..model.errors import CompileIQError, MeasurementError, ProjectCommandError, ResultFileError, UsageError, one_line
from ..model.events import EventStream
from ..model.records import TuneResult
from ..model.spec import TuneSpec
from ..system.resources import cmake_dir
from ..system.writable import disk_full_error
from .console import Console, Visible
from .parser import PROG, _spec_from_args, build_parser

# Exit status per kind of error (the first class the error is an instance of). Every kind exits 2 as the
# README documents ("exit status 2 and one line on stderr"); `check` exits 1 on its own (a gate that fails).
EXIT_CODES: tuple[tuple[type[CompileIQError], int], ...] = (
    (UsageError, 2),
    (ResultFileError, 2),
    (ProjectCommandError, 2),
    (MeasurementError, 2),
    (CompileIQError, 2),
)


def exit_code(exc: CompileIQError) -> int:
    """The exit status of the CLI for this error."""
    return next(code for kind, code in EXIT_CODES if isinstance(exc, kind))


def render(exc: CompileIQError) -> str:
    """The one line on stderr for an error: every error is rendered here (a message that has several lines
    is joined into one; a failed command's full output is in the log it names)."""
    return f"{PROG}: error: {one_line(str(exc)) or type(exc).__name__}"


def _events(args: argparse.Namespace) -> EventStream:
    """The one event stream of a command, its console printing what --quiet/--verbose let through: on stdout, on
    stderr when stdout carries a JSON document."""
    return EventStream(
        Console(getattr(args, "verbosity", "normal"), sys.stderr if getattr(args, "json", False) else None)
    )


def _one_tune(args: argparse.Namespace) -> None:
    """`tune -S -B --target` (with --toolkit: on a tree of the project built by that toolkit)."""
    missing = [
        name
        for name, value in (("-S", args.source_dir), ("-B", args.build_dir), ("--target", args.target))
        if not value
    ]
    if missing:
        raise UsageError(f"tune needs {', '.join(missing)} (or --suite FILE)")
    from ..tune.orchestration import run_ray_tune, run_tune
    from ..tune.with_toolkit import with_toolkit

    spec = _spec_from_args(args)
    events = _events(args)
    if args.toolkit:
        spec = with_toolkit(spec, args.toolkit, Path(args.toolkit_prefix) if args.toolkit_prefix else None, events)
    elif args.toolkit_prefix:
        raise UsageError("--toolkit-prefix goes with --toolkit X.Y")
    results = run_ray_tune(spec, events) if spec.executor == "ray" else [run_tune(spec, events)]
    _check_measured(spec, results)


def _check_measured(spec: TuneSpec, results: list[TuneResult]) -> None:
    """A tune that measured no flag set is no success: CompileIQError in one line (exit 2), which says why."""
    box = f" within --time-limit {spec.time_limit:g} s" if spec.time_limit is not None else ""
    for result in results:
        if not isinstance(result, TuneResult):  # (a stand-in tune of a test)
            continue
        if result.needed:  # the box held not even the baseline, one trial and its validation
            raise CompileIQError(
                f"{result.target}: nothing was measured{box}, nothing written; give at least "
                f"--time-limit {math.ceil(result.needed)}"
            )
        untried = not any(t.index != result.baseline.index for t in result.trials)
        if untried and result.winner is None and result.unchanged is None and result.toml_path is None:
            raise CompileIQError(
                f"{result.target}: no flag set was measured{box}, only the project's own build: nothing "
                "compared, nothing written (the line above says what time it needs)"
            )


def main(argv: list[str] | None = None) -> int:
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Visible(sys.stdout), Visible(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = saved


def _tune(args: argparse.Namespace) -> int:
    """tune: a suite (--suite-args, the CMake route's; --suite FILE) or one target."""
    if (args.suite_args or args.suite) and (args.toolkit or args.toolkit_prefix):
        raise UsageError(
            "--toolkit tunes one target (-S -B --target); for a suite, configure its build tree with the "
            "-DCMAKE_CUDA_COMPILER= that `compileiq-cmake toolkit X.Y` prints"
        )
    from .suite_command import suite_args, suite_command

    if args.suite_args:
        return suite_args(args, _events(args))
    if args.suite:
        return suite_command(args, _events(args))
    _one_tune(args)
    return 0


def _check(args: argparse.Namespace) -> int:
    """check: the applied entries of a build checked (and with --remeasure measured again); the exit status."""
    from ..results.check import run_check
    from ..results.check_remeasure import BenchOverride, ctest_gpu
    from ..results.check_report import checks_document, report_checks

    src = Path(args.source_dir).resolve()
    if args.bench and args.bench_arg:
        raise UsageError("give the benchmark as --bench or as --bench-arg, not both")
    try:
        bench = tuple(args.bench_arg) or tuple(shlex.split(args.bench or ""))
    except ValueError as exc:
        raise UsageError(f"cannot split --bench {args.bench!r}: {exc}") from None
    ctest_gpu()  # run by CTest with a GPU of its resource spec: that GPU only
    override = BenchOverride(bench, args.metric, args.lower_is_better, args.pass_regex, args.run_recorded)
    events = _events(args)
    checks = run_check(
        Path(args.file) if args.file else src / "compileiq.toml",
        src,
        Path(os.path.abspath(args.build_dir)),
        remeasure=args.remeasure,
        override=override,
        rounds=args.rounds,
        min_gain=args.min_gain,
        max_workloads=args.max_workloads,
        build_timeout=args.build_timeout,
        events=events,
        only_target=args.only_target,
        if_present=args.if_present,
    )
    if args.json:
        doc = checks_document(checks, args.strict)
        print(json.dumps(doc, indent=1))
        return 0 if doc["passed"] else 1
    return report_checks(checks, events, args.strict)


def _report(args: argparse.Namespace) -> None:
    from ..results.report import report_command, summaries_json

    if args.json:
        print(summaries_json(Path(args.build_dir)))
    else:
        report_command(Path(args.build_dir), Path(args.output).resolve() if args.output else None, _events(args))


def _cmake_entries(args: argparse.Namespace) -> None:
    """cmake-entries (run by the CMake module at configure): the entries' CMake code written to --out."""
    from ..flags.portability import HostFeatures
    from ..results.cmake_entries import cmake_entries
    from ..results.toml_io import read_entries

    text = cmake_entries(
        read_entries(Path(args.file)),
        Path(args.file).resolve().parent,
        HostFeatures(dict(args.compiler), args.host_features),
        dict(args.compiler).get("CUDA", ""),
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


def _inspect() -> ModuleType:
    """ui.inspect (toolkit, show, space, prior, trials), imported when one of its commands runs."""
    from . import inspect

    return inspect


# the commands whose exit status is 0 when they return (tune and check say their own)
_COMMANDS: dict[str, Callable[[argparse.Namespace], object]] = {
    "toolkit": lambda args: _inspect().toolkit_command(args.version, Path(args.prefix) if args.prefix else None),
    "show": lambda args: _inspect().show_command(Path(args.file)),
    "space": lambda args: _inspect().space_command(args.family, args.compiler_version, args, _events(args)),
    "report": _report,
    "prior": lambda args: _inspect().prior_command(args),
    "trials": lambda args: _inspect().trials_command(Path(args.build_dir), args.json, args.csv),
    "cmake-entries": _cmake_entries,
}


def _main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.cmake_dir:
            print(cmake_dir())
            return 0
        if args.command == "tune":
            return _tune(args)
        if args.command == "check":
            return _check(args)
        command = _COMMANDS.get(args.command)
        if command is None:
            parser.print_help()
            return 2
        command(args)
    except CompileIQError as exc:
        print(render(exc), file=sys.stderr)
        return exit_code(exc)
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("compileiq_cmake"):
            raise
        lacking = UsageError(
            f"{sys.executable} lacks the package '{exc.name}' that compileiq_cmake needs; install "
            "compileiq-cmake into this Python (pip install compileiq-cmake) or set COMPILEIQ_PYTHON"
        )
        print(render(lacking), file=sys.stderr)
        return exit_code(lacking)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; finished trials are stored, rerun to resume", file=sys.stderr)
        return 130
    except OSError as exc:
        return _os_error(exc)
    return 0


def _os_error(exc: OSError) -> int:
    """The exit status for an OSError that reached the command line: `trials --json | head` (the reader left):
    0, no traceback; a full disk (state, results, a report): one line naming the file, 2; any other: raised."""
    if isinstance(exc, BrokenPipeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout at exit: let that go nowhere
        return 0
    full = disk_full_error(exc)
    if full is None:
        raise exc
    print(render(full), file=sys.stderr)
    return exit_code(full)
