"""The command line's argument tables: the parser of every command (argparse, no abbreviations, a
did-you-mean for a misspelt option) and its defaults."""

from __future__ import annotations

import argparse
import difflib
import shlex
from pathlib import Path

from .. import __version__
from ..model.errors import UsageError
from ..model.spec import MetricSpec, TuneSpec
from ..results.check_defaults import BUILD_TIMEOUT, MAX_WORKLOADS, ROUNDS
from .defaults import default_workers
from .tune_options import add_tune, add_verbosity, split

PROG = "compileiq-cmake"
EPILOG = """\
routes:
  opt-in:      find_package(compileiq_cmake CONFIG REQUIRED) + compileiq_tune(<target> ...) in CMakeLists.txt,
               then cmake -B build -DCOMPILEIQ_TUNE=ON && cmake --build build --target compileiq_tune
  unmodified:  compileiq-cmake tune -S src -B build --target T --bench "prog args" --metric "time_ms=([0-9.]+)"
               release build: cmake -S src -B rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=$(compileiq-cmake --cmake-dir)/compileiq_apply.cmake
exit status: 0 success, 2 bad input (one line on stderr says what and how to fix it).
"""  # noqa: E501 (the release command is one line to copy)
FLAT_STOP = 6  # a suite's target stops its search after this many trials when nothing is to be gained


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
                name = token.split("=")[0]
                close = difflib.get_close_matches(name, self._options(), 1, 0.75)
                hints.append(
                    f"{name} is an option of another command, not of this one"
                    if close and close[0] == name
                    else f"{token}: did you mean {close[0]}?"
                    if close
                    else ""
                )
            said = "; ".join(h for h in hints if h) or (
                "a benchmark's own arguments go inside the quotes of --bench: --bench 'program --n 100'"
                if options
                else ""
            )
            message = f"unrecognized arguments: {unknown}" + (f" ({said})" if said else "")
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Find the fastest safe compiler flags for CMake targets and apply them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--cmake-dir", action="store_true", help="print the CMake package directory and exit")
    sub = parser.add_subparsers(dest="command")
    add_tune(sub)
    toolkit = sub.add_parser(
        "toolkit",
        help="install NVIDIA's CUDA toolkit X.Y from PyPI (e.g. 13.3, whose ptxas "
        "has the Advanced Controls) and print the -DCMAKE_CUDA_COMPILER= to configure with",
    )
    toolkit.add_argument("version", help="CUDA version, e.g. 13.3 (any 13.3 release) or 13.3.1")
    toolkit.add_argument("--prefix", help="install here instead of the tool's cache (<cache>/toolkits/cuda-X.Y)")
    show = sub.add_parser("show", help="print what a compileiq.toml holds")
    show.add_argument("file", nargs="?", default="compileiq.toml")
    space = sub.add_parser(
        "space",
        help="print a flag space, or the screened space of a CUDA target",
        description="'space nvcc|gcc|clang' prints a catalogue (clang: the gcc space as Clang gets it); "
        "'space -S src -B build --target T' configures <build>/compileiq/worker-0 and prints the target's "
        "screened CUDA space.",
    )
    space.add_argument("family", nargs="?", choices=["nvcc", "gcc", "clang"])
    space.add_argument("--compiler-version", default="99")
    space.add_argument("-S", dest="source_dir", help="project source directory (with --target)")
    space.add_argument("-B", dest="build_dir", help="build directory (with --target)")
    space.add_argument("--target", help="screen this CUDA target: drop flag values that change none of its device code")
    space.add_argument("--cuda-arch", default="", help="CUDA architecture (e.g. 90) instead of the detected GPU's")
    space.add_argument(
        "--include-flags", action="append", help="only these dimensions (or unsafe_numerics, experimental)"
    )
    space.add_argument(
        "--exclude-flags", action="append", help="never these dimensions (or unsafe_numerics, experimental)"
    )
    space.add_argument("--jobs", type=int, default=None, help="parallel compiles (default: CPU count)")
    add_verbosity(space)
    prior = sub.add_parser(
        "prior",
        help="the learned prior: show it, refit it with your tunes, export or import what your tunes learned",
        description="The shipped prior plus your local prior data (one observation per tuned "
        "target, in <cache>/prior; COMPILEIQ_CACHE_DIR sets <cache>).",
    )
    what = prior.add_mutually_exclusive_group()
    what.add_argument("--show", action="store_true", help="(default) the observations and hyper-parameters")
    what.add_argument("--refit", action="store_true", help="choose the hyper-parameters again with your tunes' data")
    what.add_argument("--export", metavar="FILE", help="write your local observations to FILE (to share them)")
    what.add_argument("--import", dest="import_file", metavar="FILE", help="add the observations of FILE (an export)")
    trials = sub.add_parser("trials", help="print (or dump as JSON) the trials stored in a build tree")
    trials.add_argument("-B", dest="build_dir", required=True)
    shape = trials.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="one JSON document with every stored trial")
    shape.add_argument(
        "--csv",
        action="store_true",
        help="one CSV table (RFC 4180, a header row) with a row per trial and workload, for "
        "spreadsheets and dashboards",
    )
    report = sub.add_parser(
        "report", help="the HTML report of the tunes stored in a build tree (or their summaries as JSON)"
    )
    report.add_argument("-B", dest="build_dir", required=True)
    report.add_argument(
        "-o",
        dest="output",
        help="HTML file to write (default <build>/compileiq/report.html); with "
        "several tunes stored, one file per tune beside it: <name>-<target>-<sm_ARCH or compiler>.html, "
        "plus what tells two tunes apart where they would share a name (the output says the rule)",
    )
    report.add_argument(
        "--json",
        action="store_true",
        help="print the summary document (schema compileiq-summary/1) instead of writing HTML",
    )
    add_verbosity(report)
    check = sub.add_parser(
        "check",
        help="CI gate: does each entry of a compileiq.toml apply to this build, is it stale, "
        "and (--remeasure) is the tuned release build still significantly faster",
    )
    check.add_argument("file", nargs="?", default=None, help="the flags file (default <src>/compileiq.toml)")
    check.add_argument("-S", dest="source_dir", required=True)
    check.add_argument(
        "-B",
        dest="build_dir",
        required=True,
        help="a configured build tree of the project (its "
        "cache settings are used; the check's own trees go to <build>/compileiq/check/)",
    )
    check.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 also when an entry does not apply to this build or is stale (its reason is printed)",
    )
    check.add_argument(
        "--remeasure",
        action="store_true",
        help="per applying entry, build a plain tree and one with only "
        "that entry applied and run the entry's own benchmark (recorded by its tune) interleaved on its "
        "workloads: exit 1 when one is no longer significantly faster by the minimum gain (or is slower)",
    )
    check.add_argument(
        "--bench",
        help="with --remeasure: the benchmark command for every entry (first word may be a "
        "target); the TOML's recorded commands run only with --run-recorded",
    )
    check.add_argument(
        "--bench-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="with --remeasure: the benchmark command one argument at a time (repeat; instead of --bench: "
        "no quoting, as the CTest gate passes it)",
    )
    check.add_argument(
        "--target",
        dest="only_target",
        metavar="TARGET",
        help="check only this target's entries (the CTest gate: one test per target)",
    )
    check.add_argument(
        "--if-present",
        action="store_true",
        help="a missing flags file passes (nothing applied, nothing to re-measure: said) instead of an error",
    )
    check.add_argument(
        "--run-recorded",
        action="store_true",
        help="with --remeasure and no --bench: run each entry's "
        "benchmark and VERIFY commands as the TOML records them (printed before anything runs); a "
        "TOML is data: without this nothing written in it is run",
    )
    check.add_argument(
        "--metric",
        help="with --remeasure: the metric instead of the recorded ones (a regex with one "
        "group, or GBENCH, NVBENCH, WALLTIME)",
    )
    check_direction = check.add_mutually_exclusive_group()
    check_direction.add_argument(
        "--lower-is-better",
        dest="lower_is_better",
        action="store_true",
        default=None,
        help="with --remeasure: instead of the recorded direction",
    )
    check_direction.add_argument(
        "--higher-is-better",
        dest="lower_is_better",
        action="store_false",
        help="with --remeasure: instead of the recorded direction",
    )
    check.add_argument(
        "--pass-regex", help="with --remeasure: a run counts only if its output matches (instead of the recorded one)"
    )
    check.add_argument(
        "--rounds", type=int, default=ROUNDS, help="interleaved rounds per workload (default %(default)s)"
    )
    check.add_argument(
        "--max-workloads",
        type=int,
        default=MAX_WORKLOADS,
        help="distinct workloads re-measured per entry at most (default %(default)s; repeats are measured once)",
    )
    check.add_argument("--min-gain", type=float, help="default: from the plain build's noise, as a tune decides")
    check.add_argument(
        "--build-timeout",
        type=float,
        default=BUILD_TIMEOUT,
        help="seconds for each configure and build of the check's trees before it is stopped with "
        f"everything it started (default {BUILD_TIMEOUT:g})",
    )
    check.add_argument("--json", action="store_true", help="one JSON document on stdout (the other lines: stderr)")
    add_verbosity(check)
    entries = sub.add_parser("cmake-entries", help="(used by the CMake modules) validated TOML -> CMake code")
    entries.add_argument("file")
    entries.add_argument("out")
    entries.add_argument(
        "--compiler",
        nargs=2,
        action="append",
        default=[],
        metavar=("LANG", "PATH"),
        help="a compiler of the project (LANG: C, CXX or CUDA_HOST), asked for this host's ISA features",
    )
    entries.add_argument("--host-features", help="for tests: this host's ISA features (simulates another host)")
    return parser


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
        source_dir=source,
        build_dir=Path(args.build_dir).resolve(),
        target=args.target,
        benchmark=bench,
        metric=MetricSpec.parse(args.metric, lower_is_better=not args.higher),
        output=Path(args.output).resolve() if args.output else source / "compileiq.toml",
        pass_regex=args.pass_regex,
        verify=verify,
        workloads=workloads,
        budget=args.budget,
        per_file_budget=args.per_file_budget,
        time_limit=args.time_limit,
        include_flags=split(args.include_flags),
        exclude_flags=split(args.exclude_flags),
        seed=args.seed,
        workers=args.workers if args.workers is not None else default_workers(),
        repeats=args.repeats,
        timeout=args.timeout,
        min_gain=args.min_gain,
        cuda_arch=args.cuda_arch,
        config=args.config or None,
        compare_output=args.compare_output,
        compare_file=args.compare_file,
        rtol=args.rtol,
        atol=args.atol,
        warmup=args.warmup,
        max_repeats=max(args.max_repeats, args.repeats),
        race=args.race,
        max_rounds=max(args.max_rounds, 5),
        screen=args.screen,
        prior=args.prior,
        learn=args.learn,
        acf_files=tuple(str(Path(f).resolve()) for f in args.acf),
        replay=args.replay,
        acf_candidates=args.acf_candidates,
        acf_space=args.acf_space,
        warm_start=tuple(str(Path(f).resolve()) for f in args.warm_start),
        replace=args.replace,
        gpus=args.gpus,
        executor=args.executor,
        ray_address=args.ray_address,
        portable=args.portable,
        arch_scope=args.arch_scope,
        step_cache=args.step_cache,
        max_compile_slowdown=args.max_compile_slowdown,
        objective=args.objective,
        json_summary=str(Path(args.json_summary).resolve()) if args.json_summary else None,
    )
