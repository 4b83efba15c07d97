"""The command line: argument parsing and exit codes only (0 ok, 2 bad input or environment)."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from .. import __version__
from ..model.events import EventStream
from ..model.errors import (CompileIQError, MeasurementError, ProjectCommandError, ResultFileError, UsageError,
                            one_line)
from ..system.resources import cmake_dir
from ..model.wording import plural, untested_line
from ..model.spec import MetricSpec, TuneSpec
from ..flags import load_space
from ..results.prior_store import LocalPrior, prior_dir
from ..flags.features import command_features
from ..search.prior import space_prior
from ..flags.catalogue import added_dimensions, applies_when
from ..flags.portability import HostFeatures
from ..flags.screening import format_screen, screen_target
from ..measure.gpu import detect_gpu
from ..results.check import BUILD_TIMEOUT, MAX_WORKLOADS, ROUNDS, BenchOverride, checks_document, report_checks, run_check
from ..results.report import report_command, summaries_json
from ..results.cmake_entries import cmake_entries
from ..results.toml_io import read_entries
from ..results.store import TrialStore
from ..tune.orchestration import run_ray_tune, run_tune
from ..tune.suite import run_suite
from ..model.suite import Suite, SuiteTarget, load_suite
from .console import Console

PROG = "compileiq-cmake"
# Exit status per kind of error (the first class the error is an instance of). Every kind exits 2 as the
# README documents ("exit status 2 and one line on stderr"); `check` exits 1 on its own (a gate that fails).
EXIT_CODES: tuple[tuple[type[CompileIQError], int], ...] = (
    (UsageError, 2), (ResultFileError, 2), (ProjectCommandError, 2), (MeasurementError, 2), (CompileIQError, 2),
)


def exit_code(exc: CompileIQError) -> int:
    """The exit status of the CLI for this error."""
    return next(code for kind, code in EXIT_CODES if isinstance(exc, kind))


def render(exc: CompileIQError) -> str:
    """The one line on stderr for an error: every error is rendered here (a message that has several lines
    is joined into one; a failed command's full output is in the log it names)."""
    return f"{PROG}: error: {one_line(str(exc)) or type(exc).__name__}"
EPILOG = """\
routes:
  opt-in:      find_package(compileiq_cmake CONFIG REQUIRED) + compileiq_tune(<target> ...) in CMakeLists.txt,
               then cmake -B build -DCOMPILEIQ_TUNE=ON && cmake --build build --target compileiq_tune
  unmodified:  compileiq-cmake tune -S src -B build --target T --bench "prog args" --metric "time_ms=([0-9.]+)"
               release build: cmake -S src -B rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=$(compileiq-cmake --cmake-dir)/compileiq_apply.cmake
exit status: 0 success, 2 bad input (one line on stderr says what and how to fix it).
"""


def _split(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out.extend(x for x in v.replace(",", " ").split() if x)
    return tuple(out)


def _add_verbosity(p: argparse.ArgumentParser) -> None:
    """--quiet / --verbose of a command that talks (its product: the TOML, a listing, JSON, is printed either way)."""
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("--quiet", dest="verbosity", action="store_const", const="quiet",
                      help="print only warnings and each stage's result (errors always, on stderr)")
    talk.add_argument("--verbose", dest="verbosity", action="store_const", const="verbose",
                      help="print the details too")
    p.set_defaults(verbosity="normal")


def _events(args: argparse.Namespace) -> EventStream:
    """The one event stream of a command, its console printing what --quiet/--verbose let through: on stdout, on
    stderr when stdout carries a JSON document."""
    return EventStream(Console(getattr(args, "verbosity", "normal"), sys.stderr if getattr(args, "json", False) else None))


def _add_tune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune", help="tune the flags of one target and write compileiq.toml",
        description="Build the target in variant trees under <build>/compileiq/ with flag sets chosen by a "
        "nevergrad portfolio, benchmark every workload, and write the fastest valid flags that beat the "
        "project's own build (re-measured) to the TOML.",
    )
    p.add_argument("-S", dest="source_dir", help="project source directory (required; with --suite: or the suite's)")
    p.add_argument("-B", dest="build_dir", help="build directory (variant trees go to <build>/compileiq/; required, "
                   "with --suite: or the suite's)")
    p.add_argument("--target", help="the target whose flags are tuned (CUDA or C/C++; required without --suite)")
    p.add_argument("--suite", help="tune every target of this suite file in one command (docs: model/suite.py, "
                   "README); the other options apply to every target")
    p.add_argument("--suite-args", help=argparse.SUPPRESS)  # (used by CMake) every compileiq_tune() call's arguments
    p.add_argument("--suite-jobs", type=int, default=None,
                   help="with --suite: targets tuned at the same time, sharing the build slots and every GPU through "
                   "one scheduler (default: the GPUs + 1, at least 2; 1: one after another)")
    p.add_argument("--bench", help="benchmark command line; its first word may be a target of the project")
    p.add_argument("--bench-arg", action="append", default=[], help="one benchmark argument (repeatable; used by CMake)")
    p.add_argument("--metric", help="regex with one group around the number, or GBENCH, NVBENCH, WALLTIME")
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--lower-is-better", dest="higher", action="store_false", help="default: times")
    direction.add_argument("--higher-is-better", dest="higher", action="store_true", help="throughputs")
    p.set_defaults(higher=False)
    p.add_argument("--pass-regex", help="a trial is valid only if the output matches this regex")
    p.add_argument("--verify", help="command run in the variant tree after the benchmark; must exit 0")
    p.add_argument("--verify-arg", action="append", default=[], help="one VERIFY argument (repeatable)")
    p.add_argument("--compare-output", help="regex of output lines whose numbers must equal the baseline build's "
                   "within --rtol/--atol (otherwise: 'numerics changed', the trial is invalid)")
    p.add_argument("--compare-file", help="a file the benchmark writes whose numbers must equal the baseline's")
    p.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance of the output comparison (default 1e-5)")
    p.add_argument("--atol", type=float, default=0.0, help="absolute tolerance of the output comparison (default 0)")
    p.add_argument("--workload", action="append", default=[], help="extra argument set appended to the benchmark (repeatable); every one is measured")
    p.add_argument("--budget", type=int, default=30, help="unique builds at most, the baseline included (default 30)")
    p.add_argument("--per-file-budget", type=int, default=0,
                   help="CUDA targets with several translation units: trials of per-file flags for the files that "
                   "hold most of the kernel time (CUPTI), after the search (default 0: off; it gained nothing "
                   "significant where measured, docs/benchmarks/more-speed.md; 8-12 is a useful size)")
    p.add_argument("--time-limit", type=float, help="wall seconds for the whole tune (setup, screening, baseline, search, validation, ablation, the write); the plan sizes each stage to fit and says what it left untested")
    p.add_argument("--include-flags", action="append", help="only these flag dimensions (names from 'space', or unsafe_numerics)")
    p.add_argument("--exclude-flags", action="append", help="never these flag dimensions; 'unsafe_numerics' forbids fast-math and the like")
    p.add_argument("--output", help="TOML to write (default <src>/compileiq.toml)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (default %(default)s)")
    p.add_argument("--workers", type=int, default=None,
                   help="variant trees built in parallel (at most; no more trials are kept in flight than keep the GPUs "
                   "fed); benchmarks run one at a time per GPU (--gpus) "
                   "(default: $COMPILEIQ_WORKERS, else 1 per 4 CPU cores, at most 4)")
    p.add_argument("--repeats", type=int, default=3, help="runs per workload and trial in the search (median taken); "
                   "promising trials get more, up to --max-repeats (default %(default)s)")
    p.add_argument("--max-repeats", type=int, default=9, help="runs per workload and trial at most in the search (default %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="runs per workload discarded before measuring (default 1)")
    p.add_argument("--max-rounds", type=int, default=30,
                   help="validation: interleaved rounds at most per candidate (stops earlier once decided; default %(default)s)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a benchmark run is killed (default %(default)s)")
    p.add_argument("--min-gain", type=float, default=None,
                   help="smallest re-measured gain that counts, e.g. 0.01 = 1%% (default: max(0.2%%, half the "
                   "baseline's run-to-run spread))")
    p.add_argument("--cuda-arch", help="CUDA architecture to build for instead of the detected GPU's (e.g. 90)")
    p.add_argument("--config", help="configuration (build type) to tune, e.g. Release; default: the build tree's "
                   "CMAKE_BUILD_TYPE, else Release (multi-config generators: Release). The TOML records it and a "
                   "configure applies the flags to that configuration only")
    p.add_argument("--replay", metavar="LANDSCAPE",
                   help="answer builds and benchmarks from a recorded landscape (benchmarks/landscapes/*.json) "
                   "instead of running them; output and TOML are labelled REPLAY and never applied")
    p.add_argument("--warm-start", action="append", default=[], metavar="TOML",
                   help="compileiq.toml of an earlier tune (another architecture, an earlier version of the target): "
                   "its flag sets are tried first (repeatable)")
    p.add_argument("--acf", action="append", default=[], metavar="FILE",
                   help="an NVIDIA Advanced Control File to try as one more choice (nvcc >= 13.3; repeatable)")
    p.add_argument("--gpus", metavar="all|0,2,...",
                   help="GPUs to benchmark on, one run per GPU at a time (default: every visible GPU of the same "
                   "model as the first; CUDA_VISIBLE_DEVICES is honoured)")
    p.add_argument("--json-summary", metavar="FILE",
                   help="also write the tune's result as one JSON document (schema compileiq-summary/1: winner, "
                   "per-workload speedups and intervals, finalists, ablation, every trial, notes, timings)")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: this machine (default); ray: builds as tasks on the nodes of a Ray cluster, benchmarks "
                   "on its GPUs, each GPU type tuned for its architecture (pip install 'compileiq-cmake[ray]'; the "
                   "build directory must be on a filesystem every node mounts at the same path)")
    p.add_argument("--ray-address", metavar="auto|ray://HOST:PORT",
                   help="with --executor ray: the cluster to join ('auto': the one 'ray start' began on this node; "
                   "default: a new local cluster of this machine)")
    p.add_argument("--replace", action="store_true",
                   help="replace the target's entry even when it was checked more strictly (output comparison) "
                   "than this tune checks")
    p.add_argument("--portable", action="store_true",
                   help="leave out flags whose code runs only on CPUs like this one (-march=native: the group cpu_specific)")
    p.add_argument("--arch-scope", choices=("all", "tuned"), default="all",
                   help="CUDA, recorded in the entry: all (default): every architecture the target builds gets the flags "
                   "(unmeasured ones too); tuned: only builds of the tuned architecture alone")
    p.add_argument("--no-screen", dest="screen", action="store_false",
                   help="CUDA: search the whole space, without dropping values that change no device code")
    p.add_argument("--no-prior", dest="prior", action="store_false",
                   help="the search without the learned prior's predictions (the order it has without one)")
    p.add_argument("--no-learn", dest="learn", action="store_false",
                   help="do not add this tune's results to your local prior data (also: COMPILEIQ_NO_LEARN=1)")
    _add_verbosity(p)


class _Parser(argparse.ArgumentParser):
    """argparse with no abbreviations (an unquoted benchmark argument such as --n must not be taken for
    --no-screen) and errors in one line: an unknown option gets the known one it resembles, or the hint to
    quote a benchmark's arguments."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def _options(self) -> list[str]:
        found = [o for a in self._actions for o in a.option_strings]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found += [o for a in sub._actions for o in a.option_strings]
        return sorted(set(found))

    def error(self, message: str):
        unknown = message.removeprefix("unrecognized arguments: ")
        if unknown != message:
            options = [t for t in unknown.split() if t.startswith("-")]
            hints = []
            for token in options:
                close = difflib.get_close_matches(token.split("=")[0], self._options(), 1, 0.75)
                hints.append(f"{token}: did you mean {close[0]}?" if close else "")
            said = "; ".join(h for h in hints if h) or (
                "a benchmark's own arguments go inside the quotes of --bench: --bench 'program --n 100'"
                if options else "")
            message = f"unrecognized arguments: {unknown}" + (f" ({said})" if said else "")
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG, description="Find the fastest safe compiler flags for CMake targets and apply them.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--cmake-dir", action="store_true", help="print the CMake package directory and exit")
    sub = parser.add_subparsers(dest="command")
    _add_tune(sub)
    show = sub.add_parser("show", help="print what a compileiq.toml holds")
    show.add_argument("file", nargs="?", default="compileiq.toml")
    space = sub.add_parser("space", help="print a flag space, or the screened space of a CUDA target",
                           description="'space nvcc|gcc' prints a catalogue; 'space -S src -B build --target T' "
                           "configures <build>/compileiq/worker-0 and prints the target's screened CUDA space.")
    space.add_argument("family", nargs="?", choices=["nvcc", "gcc"])
    space.add_argument("--compiler-version", default="99")
    space.add_argument("-S", dest="source_dir", help="project source directory (with --target)")
    space.add_argument("-B", dest="build_dir", help="build directory (with --target)")
    space.add_argument("--target", help="screen this CUDA target: drop flag values that change none of its device code")
    space.add_argument("--cuda-arch", default="", help="CUDA architecture (e.g. 90) instead of the detected GPU's")
    space.add_argument("--include-flags", action="append", help="only these dimensions (or unsafe_numerics, experimental)")
    space.add_argument("--exclude-flags", action="append", help="never these dimensions (or unsafe_numerics, experimental)")
    space.add_argument("--jobs", type=int, default=None, help="parallel compiles (default: CPU count)")
    _add_verbosity(space)
    prior = sub.add_parser("prior", help="the learned prior: show it, refit it with your tunes, export or import "
                           "what your tunes learned",
                           description="The shipped prior plus your local prior data (one observation per tuned "
                           "target, in <cache>/prior; COMPILEIQ_CACHE_DIR sets <cache>).")
    what = prior.add_mutually_exclusive_group()
    what.add_argument("--show", action="store_true", help="(default) the observations and hyper-parameters")
    what.add_argument("--refit", action="store_true", help="choose the hyper-parameters again with your tunes' data")
    what.add_argument("--export", metavar="FILE", help="write your local observations to FILE (to share them)")
    what.add_argument("--import", dest="import_file", metavar="FILE", help="add the observations of FILE (an export)")
    trials = sub.add_parser("trials", help="print (or dump as JSON) the trials stored in a build tree")
    trials.add_argument("-B", dest="build_dir", required=True)
    trials.add_argument("--json", action="store_true", help="one JSON document with every stored trial")
    report = sub.add_parser("report", help="the HTML report of the tunes stored in a build tree (or their summaries as JSON)")
    report.add_argument("-B", dest="build_dir", required=True)
    report.add_argument("-o", dest="output", help="HTML file to write (default <build>/compileiq/report.html); with "
                        "several tunes stored, one file per tune beside it: <name>-<target>-<sm_ARCH or compiler>.html, "
                        "plus what tells two tunes apart where they would share a name (the output says the rule)")
    report.add_argument("--json", action="store_true",
                        help="print the summary document (schema compileiq-summary/1) instead of writing HTML")
    _add_verbosity(report)
    check = sub.add_parser("check", help="CI gate: does each entry of a compileiq.toml apply to this build, is it stale, "
                           "and (--remeasure) is the tuned release build still significantly faster")
    check.add_argument("file", nargs="?", default=None, help="the flags file (default <src>/compileiq.toml)")
    check.add_argument("-S", dest="source_dir", required=True)
    check.add_argument("-B", dest="build_dir", required=True, help="a configured build tree of the project (its "
                       "cache settings are used; the check's own trees go to <build>/compileiq/check/)")
    check.add_argument("--strict", action="store_true", help="exit 1 also when an entry does not apply to this build "
                       "or is stale (its reason is printed)")
    check.add_argument("--remeasure", action="store_true", help="per applying entry, build a plain tree and one with only "
                       "that entry applied and run the entry's own benchmark (recorded by its tune) interleaved on its "
                       "workloads: exit 1 when one is no longer significantly faster by the minimum gain (or is slower)")
    check.add_argument("--bench", help="with --remeasure: the benchmark command for every entry (first word may be a "
                       "target); the TOML's recorded commands run only with --run-recorded")
    check.add_argument("--run-recorded", action="store_true", help="with --remeasure and no --bench: run each entry's "
                       "benchmark and VERIFY commands as the TOML records them (printed before anything runs); a "
                       "TOML is data: without this nothing written in it is run")
    check.add_argument("--metric", help="with --remeasure: the metric instead of the recorded ones (a regex with one "
                       "group, or GBENCH, NVBENCH, WALLTIME)")
    check_direction = check.add_mutually_exclusive_group()
    check_direction.add_argument("--lower-is-better", dest="lower_is_better", action="store_true", default=None,
                                 help="with --remeasure: instead of the recorded direction")
    check_direction.add_argument("--higher-is-better", dest="lower_is_better", action="store_false",
                                 help="with --remeasure: instead of the recorded direction")
    check.add_argument("--pass-regex", help="with --remeasure: a run counts only if its output matches (instead of "
                       "the recorded one)")
    check.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds per workload (default %(default)s)")
    check.add_argument("--max-workloads", type=int, default=MAX_WORKLOADS,
                       help="distinct workloads re-measured per entry at most (default %(default)s; repeats are measured once)")
    check.add_argument("--min-gain", type=float, help="default: from the plain build's noise, as a tune decides")
    check.add_argument("--build-timeout", type=float, default=BUILD_TIMEOUT,
                       help="seconds for each configure and build of the check's trees before it is stopped with "
                       f"everything it started (default {BUILD_TIMEOUT:g})")
    check.add_argument("--json", action="store_true", help="one JSON document on stdout (the other lines: stderr)")
    _add_verbosity(check)
    entries = sub.add_parser("cmake-entries", help="(used by the CMake modules) validated TOML -> CMake code")
    entries.add_argument("file")
    entries.add_argument("out")
    entries.add_argument("--compiler", nargs=2, action="append", default=[], metavar=("LANG", "PATH"),
                         help="a compiler of the project (LANG: C, CXX or CUDA_HOST), asked for this host's ISA features")
    entries.add_argument("--host-features", help="for tests: this host's ISA features (simulates another host)")
    return parser


def _default_workers() -> int:
    env = os.environ.get("COMPILEIQ_WORKERS", "")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise UsageError(f"COMPILEIQ_WORKERS={env!r} must be a whole number >= 1")
        return int(env)
    return max(1, min(4, (os.cpu_count() or 1) // 4))


def _spec_from_args(args: argparse.Namespace):
    if args.replay:
        args.metric = args.metric or "WALLTIME"
        args.bench = args.bench or "replay"
    elif not args.metric:
        raise UsageError("--metric is required: a regex with one group around the number, or GBENCH, NVBENCH, WALLTIME")
    if args.bench and args.bench_arg:
        raise UsageError("give the benchmark either with --bench or with --bench-arg, not both")
    try:
        bench = tuple(shlex.split(args.bench)) if args.bench else tuple(args.bench_arg)
        verify = tuple(shlex.split(args.verify)) if args.verify else tuple(args.verify_arg)
        workloads = tuple(tuple(shlex.split(w)) for w in args.workload) or ((),)
    except ValueError as exc:
        raise UsageError(f"cannot split a command line: {exc}") from None
    source = Path(args.source_dir).resolve()
    return TuneSpec(
        source_dir=source, build_dir=Path(args.build_dir).resolve(), target=args.target, benchmark=bench,
        metric=MetricSpec.parse(args.metric, lower_is_better=not args.higher),
        output=Path(args.output).resolve() if args.output else source / "compileiq.toml",
        pass_regex=args.pass_regex, verify=verify, workloads=workloads, budget=args.budget, per_file_budget=args.per_file_budget,
        time_limit=args.time_limit, include_flags=_split(args.include_flags), exclude_flags=_split(args.exclude_flags),
        seed=args.seed, workers=args.workers if args.workers is not None else _default_workers(), repeats=args.repeats, timeout=args.timeout, min_gain=args.min_gain,
        cuda_arch=args.cuda_arch, config=args.config or None, compare_output=args.compare_output, compare_file=args.compare_file,
        rtol=args.rtol, atol=args.atol, warmup=args.warmup, max_repeats=max(args.max_repeats, args.repeats),
        max_rounds=max(args.max_rounds, 5), screen=args.screen, prior=args.prior, learn=args.learn,
        acf_files=tuple(str(Path(f).resolve()) for f in args.acf), replay=args.replay,
        warm_start=tuple(str(Path(f).resolve()) for f in args.warm_start), replace=args.replace, gpus=args.gpus,
        executor=args.executor, ray_address=args.ray_address, portable=args.portable, arch_scope=args.arch_scope,
        json_summary=str(Path(args.json_summary).resolve()) if args.json_summary else None,
    )


FLAT_STOP = 6  # a suite's target stops its search after this many trials when nothing is to be gained


def _suite(args: argparse.Namespace, events: EventStream) -> int:
    """tune --suite: every target's options through the command line's own checks (_spec_from_args)."""
    suite = load_suite(Path(args.suite))
    source = Path(args.source_dir).resolve() if args.source_dir else suite.source_dir
    build = Path(args.build_dir).resolve() if args.build_dir else suite.build_dir
    if source is None or build is None:
        raise UsageError(f"--suite {args.suite}: give -S and -B, or source_dir and build_dir in its [suite] table")
    if args.target:
        raise UsageError("--target and --suite exclude each other: the suite file names its targets")
    output = args.output or (str(suite.output) if suite.output else None)

    def make_spec(target, time_limit: float | None):
        ns = argparse.Namespace(**{**vars(args), "source_dir": str(source), "build_dir": str(build),
                                   "target": target.name, "output": output, "json_summary": None,
                                   "include_flags": None, "exclude_flags": None, "workload": []})
        for dest, value in target.options.items():
            setattr(ns, dest, value)
        if args.include_flags and not target.options.get("include_flags"):
            ns.include_flags = args.include_flags
        if args.exclude_flags and not target.options.get("exclude_flags"):
            ns.exclude_flags = args.exclude_flags
        if time_limit is not None:
            ns.time_limit = time_limit
        try:
            return replace(_spec_from_args(ns), flat_stop=FLAT_STOP).validate()
        except UsageError as exc:
            raise UsageError(f"--suite {args.suite} target {target.name}: {exc}") from None

    time_limit = args.time_limit if args.time_limit is not None else suite.time_limit
    json_summary = Path(args.json_summary).resolve() if args.json_summary else suite.json_summary
    return suite_status(run_suite(suite, make_spec, events, time_limit, build, json_summary=json_summary,
                                  jobs=args.suite_jobs, gpus=args.gpus, on_ray=args.executor == "ray",
                                  ray_address=args.ray_address), events)


def _suite_args(args: argparse.Namespace, events: EventStream) -> int:
    """tune --suite-args FILE (the CMake route): each "[target]" block of FILE is one compileiq_tune() call's
    tune arguments, parsed as the command line would; they run as one suite."""
    path = Path(args.suite_args)
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read the suite of compileiq_tune() calls {path} ({exc.strerror or exc}); "
                         "configure the project again with -DCOMPILEIQ_TUNE=ON") from None
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line == "[target]":
            blocks.append([])
        elif blocks:
            blocks[-1].append(line)
    if not blocks:
        raise UsageError(f"{path} names no compileiq_tune() call; configure the project again with -DCOMPILEIQ_TUNE=ON")
    parser = build_parser()
    targets, namespaces = [], {}
    for argv in blocks:
        ns = parser.parse_args(["tune", *argv])
        namespaces[ns.target] = ns
        targets.append(SuiteTarget(name=ns.target, options={}))
    first = namespaces[targets[0].name]
    suite = Suite(path=path.resolve(), targets=tuple(targets), source_dir=Path(first.source_dir).resolve(),
                  build_dir=Path(first.build_dir).resolve())

    def make_spec(target, time_limit: float | None):
        ns = argparse.Namespace(**vars(namespaces[target.name]))
        if time_limit is not None:
            ns.time_limit = min(time_limit, ns.time_limit) if ns.time_limit else time_limit
        try:
            return replace(_spec_from_args(ns), flat_stop=FLAT_STOP).validate()
        except UsageError as exc:
            raise UsageError(f"compileiq_tune({target.name}): {exc}") from None

    on_ray = {ns.ray_address for ns in namespaces.values() if ns.executor == "ray"}
    if on_ray and (len(on_ray) > 1 or len(on_ray) * len(namespaces) != sum(ns.executor == "ray" for ns in namespaces.values())):
        raise UsageError("the compileiq_tune() calls of one suite run either all on one Ray cluster (EXECUTOR ray, one "
                         "RAY_ADDRESS) or all on this machine; give every call the same EXECUTOR and RAY_ADDRESS")
    return suite_status(run_suite(suite, make_spec, events, args.time_limit, suite.build_dir,
                                  json_summary=Path(args.json_summary).resolve() if args.json_summary else None,
                                  jobs=args.suite_jobs, gpus=args.gpus, on_ray=bool(on_ray),
                                  ray_address=next(iter(on_ray), None)), events)


def suite_status(outcomes, events: EventStream) -> int:
    """A suite's exit status: 1 when a target failed, or when no target was tuned at all (every one skipped
    or failed: nothing was measured to a decision); 0 otherwise ("no gain" is a decision)."""
    failed = [o.target for o in outcomes if o.status == "failed"]
    decided = [o for o in outcomes if o.status in ("tuned", "no gain")]
    if failed:
        events.warning(f"suite: {plural(len(failed), 'target')} failed ({', '.join(failed)}): exit status 1")
        return 1
    if not decided and any(o.status != "excluded" for o in outcomes):
        events.warning("suite: no target was tuned (each was skipped or failed): exit status 1")
        return 1
    return 0


def _predictions(ts, jobs: int | None) -> list[str]:
    """What the prior predicts for each value of a screened space, and the features behind it."""
    tf = command_features(list(ts.commands), ts.cuda_arch, ts.nvcc or None, ts.relocatable, jobs or os.cpu_count() or 1)
    features = tf.vector()
    model = LocalPrior(prior_dir()).model()
    space = ts.result.space
    sp = space_prior(model, space, features, ts.cuda_arch)
    n = sum(1 for o in model.observations if o.family == space.family)
    top = ", ".join(f"{name} {100 * share:.0f}%" for name, share in tf.top(5))
    lines = [f"prior ({plural(n, 'observation')} of {space.family} flags): predicted effect of each value alone "
             f"(+ faster, +/- one sd) from the features of {plural(len(tf.kernels), 'function')} in "
             f"{plural(tf.units, 'unit')}: instructions {top}; registers {255 * features['registers']:.0f}, "
             f"occupancy {100 * features['occupancy']:.0f}%, spills {2 ** features['spills'] - 1:.0f} bytes"
             + (", relocatable" if tf.relocatable else "")]
    h = model.hyper.get(space.family)
    if h is not None:
        lines.append(f"  similarity by: {', '.join(h.features) or 'none (every observation alike)'}")
    for d_index, d in enumerate(space.dimensions):
        for i in range(1, len(d.values)):
            p = sp.of(d_index, i)
            mark = "  [tried last]" if p.harmful else ""
            lines.append(f"  {d.name:<26} {' '.join(d.values[i]):<36} {p.describe()}{mark}")
    for c in sp.first:
        fs = space.flagset({d.name: v for d, v in zip(space.dimensions, c)})
        lines.append(f"  proposed first: {fs.describe()}")
    return lines


def _prior(args: argparse.Namespace) -> None:
    local = LocalPrior(prior_dir())
    if args.export:
        n = local.export(Path(args.export))
        print(f"wrote {plural(n, 'observation')} of your tunes to {args.export}")
        return
    if args.import_file:
        added, updated, same = local.import_file(Path(args.import_file))
        print(f"{args.import_file}: {plural(added, 'observation')} added, {updated} replaced an older one of the same "
              f"id, {same} already there as they are ({local.observations_dir})")
        return
    if args.refit:  # a fit by leave-one-out over every observation: tens of seconds; say so first
        print(f"prior --refit: fitting on {plural(len(local.model().observations), 'observation')} (shipped and "
              "yours) by leave-one-out; this takes a while (about 30 s on 2 cores)...", flush=True)
        for family, r in local.refit().items():
            print(f"{family}: refit on {plural(r['observations'], 'observation')} ({plural(r['values'], 'value')}): "
                  f"bandwidth {'unbounded' if r['bandwidth'] is None else format(r['bandwidth'], '.3g')}, "
                  f"shrink {r['shrink']:.3g}, features {', '.join(r['features']) or 'none'} "
                  f"(leave-one-out loss {r['loo_score']:.4g})")
        print(f"saved in {local.refit_path}")
        return
    model = local.model()
    mine = local.observations()
    print(f"prior: {plural(len(model.observations), 'observation')} ({len(mine)} from your tunes, in {local.observations_dir})")
    made = model.provenance
    if made:
        print(f"  shipped: {made.get('made_by', '?')}, {made.get('date', '?')}, commit {str(made.get('commit', ''))[:12] or '?'}")
    for family in model.families():
        h = model.hyper.get(family)
        obs = [o for o in model.observations if o.family == family]
        print(f"  {family}: {plural(len(obs), 'observation')}; "
              + (f"bandwidth {'unbounded' if h.bandwidth == float('inf') else format(h.bandwidth, '.3g')}, "
                 f"shrink {h.shrink:.3g}, features {', '.join(h.features) or 'none'}" if h
                 else "not fitted (prior --refit)"))
    for o in mine:
        print(f"  yours: {o.id} ({o.family}, {plural(len(o.effects), 'value')} measured)")


def _show(path: Path) -> None:
    entries = read_entries(path)
    print(f"{path}: {plural(len(entries), 'entry', 'entries')}")
    for e in entries:
        where = f"sm_{e.arch}" if e.arch else "host"
        replay = "  [REPLAY: never applied]" if e.replay else ""
        print(f"- {e.target} ({e.language}, {where}, {e.compiler_id} {e.compiler_version}, {e.build_type or 'no build type'}){replay}")
        print(f"    flags:    {' '.join(e.flags) or '(none)'}")
        print(f"    device:   {e.device}{' cc ' + e.compute_capability if e.compute_capability else ''}")
        if e.tuned_cpu:
            print(f"    cpu:      tuned on {e.tuned_cpu}; needs {', '.join(e.cpu_features) or 'no recorded ISA features'}")
        if e.arch_scope != "all":
            print(f"    archs:    arch_scope {e.arch_scope}: applied only to builds of sm_{e.arch} alone")
        print(f"    metric:   {e.metric} ({'lower' if e.lower_is_better else 'higher'} is better)")
        for w, b, t in zip(e.workloads or ("",), e.baseline, e.tuned):
            print(f"    workload {w or '(default)'}: baseline {b:.6g} -> tuned {t:.6g}")
        print(f"    speedup:  {e.speedup:.3f}x over {plural(e.trials, 'trial')}, {e.date}, compileiq_cmake {e.tool_version}"
              + {"confirmation": " (a confirmation's rounds)", "deciding rounds": " (the rounds that accepted it: not confirmed)"}
              .get(e.speedup_from, ""))
        if e.untested_flags:
            print(f"    {untested_line(e.untested_flags)}")


def _space(family: str | None, version: str, args: argparse.Namespace | None = None,
           events: EventStream | None = None) -> None:
    if args is not None and args.target:
        if not args.source_dir or not args.build_dir:
            raise UsageError("space --target needs -S <source dir> and -B <build dir>")
        ts = screen_target(Path(args.source_dir).resolve(), Path(args.build_dir).resolve(), args.target, args.cuda_arch,
                           _split(args.include_flags), _split(args.exclude_flags), args.jobs,
                           gpu_arch=lambda: detect_gpu().arch)
        print("\n".join(format_screen(ts, notes=events is None)))
        for note in ts.notes if events is not None else ():
            events.note(note.removeprefix("note: "), stage="space")
        print("\n".join(_predictions(ts, args.jobs)))
        return
    if family is None:
        raise UsageError("give a family (space nvcc|gcc) or a target (space -S src -B build --target T)")
    compiler = "NVIDIA" if family == "nvcc" else "GNU"
    space = load_space(family, compiler, version, _split(args.include_flags) if args else (), _split(args.exclude_flags) if args else ())
    print(f"{family} flag space: {plural(len(space.dimensions), 'dimension')}, {plural(space.size, 'point')}")
    when = applies_when(family)
    for d in space.dimensions:
        unsafe = "  [unsafe numerics]" if d.unsafe_numerics else ""
        unsafe += "  [experimental]" if d.experimental else ""
        unsafe += f"  [{when[d.name]}]" if when.get(d.name) else ""
        print(f"  {d.name:<26} {' | '.join(d.labels())}{unsafe}")
    for note in space.dropped:
        print(f"  dropped: {note}")
    added = added_dimensions(family)
    if added:
        print("added by a tune where they apply:")
        for name, values, condition in added:
            print(f"  {name:<26} {values}  [{condition}]")


def _trials(build_dir: Path, as_json: bool) -> None:
    """Every stored trial of a build tree: the tune's own store and a suite's (the CMake route's compileiq_tune
    keeps one per target under <build>/compileiq/suite/); each tune named by its target where its summary or
    suite folder says it."""
    path = build_dir / "compileiq" / "trials.sqlite"
    stores = ([path] if path.is_file() else []) + sorted((build_dir / "compileiq" / "suite").glob("*/trials.sqlite"))
    if not stores:
        raise UsageError(f"{build_dir} holds no tune results ({path} does not exist); run a tune with -B {build_dir}")
    groups: dict[str, list] = {}
    effects: dict[str, list] = {}
    names: dict[str, str] = {}
    for each in stores:
        store = TrialStore(each, "")
        if store.note:  # a damaged store was moved aside: say so instead of a traceback or an empty answer
            raise CompileIQError(store.note)
        try:
            found = store.load_all()
            if store.skipped_rows:
                print(f"{PROG}: warning: {store.skipped_rows} row(s) of {each} are not trials (edited or damaged by "
                      "something else): left out", file=sys.stderr)
            for spec, trials in found.items():
                store.spec = spec
                groups[spec] = trials
                effects[spec] = store.load_result("flag_effects") or []
                summary = store.load_result("summary")
                target = summary.get("target") if isinstance(summary, dict) else None
                names[spec] = target or (each.parent.name if each != path else "")
        finally:
            store.close()
    if as_json:
        print(json.dumps({spec: [t.as_dict() for t in trials] for spec, trials in groups.items()}, indent=1))
        return
    for spec, trials in groups.items():
        named = f"{names[spec]} ({spec[:12]})" if names[spec] else spec
        print(f"tune {named}: {plural(len(trials), 'trial')}")
        for t in trials:
            medians = " / ".join(f"{m:.4g}" for m in t.medians())
            state = medians if t.valid else f"{t.status.value}: {' '.join(t.reason.split())}"  # whole, one line
            same = f" (same device code as #{t.same_code_as})" if t.same_code_as is not None else ""
            print(f"  #{t.index:<3} {state:<40} {t.flagset.describe()}{same}")
            for k in t.kernels:
                print(f"        {k.name.split(':', 1)[-1][:40]:<40} regs {k.registers}, spills {k.spill_bytes} B, "
                      f"shared {k.shared_bytes} B, {k.instructions} instructions")
        if effects[spec]:
            print("  flag effects (least squares over the valid trials, 95% CI):")
            for e in effects[spec]:
                print(f"    {e['flag']:<40} {e['speedup']:.3f}x [{e['ci'][0]:.3f}..{e['ci'][1]:.3f}] in {plural(e['trials_with'], 'trial')}")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class _Visible:
    """A text stream that writes control characters (an escape sequence of a file's name or id, a NUL, a
    carriage return) as \\xNN: what the tool prints comes partly from files others wrote, and none of it
    may move the cursor, recolour the terminal or forge a line. Newlines and tabs pass."""

    def __init__(self, out) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))

    def __getattr__(self, name: str):
        return getattr(self._out, name)


def main(argv: list[str] | None = None) -> int:
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Visible(sys.stdout), _Visible(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = saved


def _main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.cmake_dir:
            print(cmake_dir())
            return 0
        if args.command == "tune" and args.suite_args:
            return _suite_args(args, _events(args))
        elif args.command == "tune" and args.suite:
            return _suite(args, _events(args))
        elif args.command == "tune":
            missing = [name for name, value in (("-S", args.source_dir), ("-B", args.build_dir),
                                                 ("--target", args.target)) if not value]
            if missing:
                raise UsageError(f"tune needs {', '.join(missing)} (or --suite FILE)")
            spec = _spec_from_args(args)
            if spec.executor == "ray":
                run_ray_tune(spec, _events(args))
            else:
                run_tune(spec, _events(args))
        elif args.command == "show":
            _show(Path(args.file))
        elif args.command == "space":
            _space(args.family, args.compiler_version, args, _events(args))
        elif args.command == "check":
            src = Path(args.source_dir).resolve()
            try:
                bench = tuple(shlex.split(args.bench or ""))
            except ValueError as exc:
                raise UsageError(f"cannot split --bench {args.bench!r}: {exc}") from None
            override = BenchOverride(bench, args.metric, args.lower_is_better, args.pass_regex, args.run_recorded)
            events = _events(args)
            checks = run_check(Path(args.file) if args.file else src / "compileiq.toml", src,
                               Path(args.build_dir).resolve(), remeasure=args.remeasure, override=override,
                               rounds=args.rounds, min_gain=args.min_gain, max_workloads=args.max_workloads,
                               build_timeout=args.build_timeout, events=events)
            if args.json:
                doc = checks_document(checks, args.strict)
                print(json.dumps(doc, indent=1))
                return 0 if doc["passed"] else 1
            return report_checks(checks, events, args.strict)
        elif args.command == "report":
            if args.json:
                print(summaries_json(Path(args.build_dir)))
            else:
                report_command(Path(args.build_dir), Path(args.output).resolve() if args.output else None,
                               _events(args))
        elif args.command == "prior":
            _prior(args)
        elif args.command == "trials":
            _trials(Path(args.build_dir), args.json)
        elif args.command == "cmake-entries":
            text = cmake_entries(read_entries(Path(args.file)), Path(args.file).resolve().parent,
                                 HostFeatures(dict(args.compiler), args.host_features))
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text)
        else:
            parser.print_help()
            return 2
    except CompileIQError as exc:
        print(render(exc), file=sys.stderr)
        return exit_code(exc)
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("compileiq_cmake"):
            raise
        missing = UsageError(f"{sys.executable} lacks the package '{exc.name}' that compileiq_cmake needs; install "
                             "compileiq-cmake into this Python (pip install compileiq-cmake) or set COMPILEIQ_PYTHON")
        print(render(missing), file=sys.stderr)
        return exit_code(missing)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; finished trials are stored, rerun to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `trials --json | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout at exit: let that go nowhere
        return 0
    return 0
