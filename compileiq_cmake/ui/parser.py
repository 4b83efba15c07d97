"""The command line's argument tables: the parser of every command (argparse, no abbreviations, a
did-you-mean for a misspelt option) and its defaults."""

from __future__ import annotations

import argparse
import difflib
import shlex
from pathlib import Path

from .. import __version__
from ..flags import acf
from ..model.errors import UsageError
from ..model.spec import OBJECTIVES, MetricSpec, TuneSpec
from ..results.check import BUILD_TIMEOUT, MAX_WORKLOADS, ROUNDS
from .defaults import default_workers

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


def _split(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out.extend(x for x in v.replace(",", " ").split() if x)
    return tuple(out)


def _add_verbosity(p: argparse.ArgumentParser) -> None:
    """--quiet / --verbose of a command that talks (its product: the TOML, a listing, JSON, is printed either way)."""
    talk = p.add_mutually_exclusive_group()
    talk.add_argument(
        "--quiet",
        dest="verbosity",
        action="store_const",
        const="quiet",
        help="print only warnings and each stage's result (errors always, on stderr)",
    )
    talk.add_argument(
        "--verbose", dest="verbosity", action="store_const", const="verbose", help="print the details too"
    )
    p.set_defaults(verbosity="normal")


def _add_tune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="tune the flags of one target and write compileiq.toml",
        description="Build the target in variant trees under <build>/compileiq/ with flag sets chosen by a "
        "nevergrad portfolio, benchmark every workload, and write the fastest valid flags that beat the "
        "project's own build (re-measured) to the TOML.",
    )
    p.add_argument("-S", dest="source_dir", help="project source directory (required; with --suite: or the suite's)")
    p.add_argument(
        "-B",
        dest="build_dir",
        help="build directory (variant trees go to <build>/compileiq/; required, with --suite: or the suite's)",
    )
    p.add_argument("--target", help="the target whose flags are tuned (CUDA or C/C++; required without --suite)")
    p.add_argument(
        "--suite",
        help="tune every target of this suite file in one command (docs: model/suite.py, "
        "README); the other options apply to every target",
    )
    p.add_argument("--suite-args", help=argparse.SUPPRESS)  # (used by CMake) every compileiq_tune() call's arguments
    p.add_argument(
        "--suite-jobs",
        type=int,
        default=None,
        help="with --suite: targets tuned at the same time, sharing the build slots and every GPU through "
        "one scheduler (default: the GPUs + 1, at least 2; 1: one after another)",
    )
    p.add_argument("--bench", help="benchmark command line; its first word may be a target of the project")
    p.add_argument(
        "--bench-arg", action="append", default=[], help="one benchmark argument (repeatable; used by CMake)"
    )
    p.add_argument("--metric", help="regex with one group around the number, or GBENCH, NVBENCH, WALLTIME")
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--lower-is-better", dest="higher", action="store_false", help="default: times")
    direction.add_argument("--higher-is-better", dest="higher", action="store_true", help="throughputs")
    p.set_defaults(higher=False)
    p.add_argument("--pass-regex", help="a trial is valid only if the output matches this regex")
    p.add_argument("--verify", help="command run in the variant tree after the benchmark; must exit 0")
    p.add_argument("--verify-arg", action="append", default=[], help="one VERIFY argument (repeatable)")
    p.add_argument(
        "--compare-output",
        help="regex of output lines whose numbers must equal the baseline build's "
        "within --rtol/--atol (otherwise: 'numerics changed', the trial is invalid)",
    )
    p.add_argument("--compare-file", help="a file the benchmark writes whose numbers must equal the baseline's")
    p.add_argument(
        "--rtol", type=float, default=1e-5, help="relative tolerance of the output comparison (default 1e-5)"
    )
    p.add_argument("--atol", type=float, default=0.0, help="absolute tolerance of the output comparison (default 0)")
    p.add_argument(
        "--workload",
        action="append",
        default=[],
        help="extra argument set appended to the benchmark (repeatable); every one is measured",
    )
    p.add_argument("--budget", type=int, default=30, help="unique builds at most, the baseline included (default 30)")
    p.add_argument(
        "--per-file-budget",
        type=int,
        default=0,
        help="CUDA targets with several translation units: trials of per-file flags for the files that "
        "hold most of the kernel time (CUPTI), after the search (default 0: off; it gained nothing "
        "significant where measured, docs/benchmarks/more-speed.md; 8-12 is a useful size)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        help="wall seconds for the whole tune (setup, screening, baseline, search, validation, ablation, the "
        "write); the plan sizes each stage to fit and says what it left untested",
    )
    p.add_argument(
        "--include-flags", action="append", help="only these flag dimensions (names from 'space', or unsafe_numerics)"
    )
    p.add_argument(
        "--exclude-flags",
        action="append",
        help="never these flag dimensions; 'unsafe_numerics' forbids fast-math and the like",
    )
    p.add_argument("--output", help="TOML to write (default <src>/compileiq.toml)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (default %(default)s)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="variant trees built in parallel (at most; no more trials are kept in flight than keep the GPUs "
        "fed); benchmarks run one at a time per GPU (--gpus) "
        "(default: $COMPILEIQ_WORKERS, else 1 per 4 CPU cores, at most 4)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs per workload and trial in the search (median taken); "
        "promising trials get more, up to --max-repeats (default %(default)s)",
    )
    p.add_argument(
        "--max-repeats",
        type=int,
        default=9,
        help="runs per workload and trial at most in the search (default %(default)s)",
    )
    p.add_argument("--warmup", type=int, default=1, help="runs per workload discarded before measuring (default 1)")
    p.add_argument(
        "--max-rounds",
        type=int,
        default=30,
        help="validation: interleaved rounds at most per candidate (stops earlier once decided; default %(default)s)",
    )
    p.add_argument(
        "--timeout", type=float, default=120.0, help="seconds before a benchmark run is killed (default %(default)s)"
    )
    p.add_argument(
        "--min-gain",
        type=float,
        default=None,
        help="smallest re-measured gain that counts, e.g. 0.01 = 1%% (default: max(0.2%%, half the "
        "baseline's run-to-run spread))",
    )
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="time",
        help="what the search minimizes: time (the metric, default) or energy (joules per run from the "
        "GPU's NVML counter; refused where it cannot be read); the other is reported per trial",
    )
    p.add_argument(
        "--max-compile-slowdown",
        type=float,
        default=None,
        metavar="X",
        help="never write a flag set whose build took more than X times a typical build of this tune "
        "(the median of its builds, the project's own flags' included), e.g. 2: device LTO can make large "
        "projects' links much slower; default: no limit",
    )
    p.add_argument("--cuda-arch", help="CUDA architecture to build for instead of the detected GPU's (e.g. 90)")
    p.add_argument(
        "--config",
        help="configuration (build type) to tune, e.g. Release; default: the build tree's "
        "CMAKE_BUILD_TYPE, else Release (multi-config generators: Release). The TOML records it and a "
        "configure applies the flags to that configuration only",
    )
    p.add_argument(
        "--replay",
        metavar="LANDSCAPE",
        help="answer builds and benchmarks from a recorded landscape (benchmarks/landscapes/*.json) "
        "instead of running them; output and TOML are labelled REPLAY and never applied",
    )
    p.add_argument(
        "--warm-start",
        action="append",
        default=[],
        metavar="TOML",
        help="compileiq.toml of an earlier tune (another architecture, an earlier version of the target): "
        "its flag sets are tried first (repeatable)",
    )
    p.add_argument(
        "--acf",
        action="append",
        default=[],
        metavar="FILE",
        help="an NVIDIA Advanced Control File of your own to try as one more value of the advanced "
        "controls dimension (ptxas >= 13.3; repeatable); a winner's file is copied beside the TOML",
    )
    p.add_argument(
        "--acf-candidates",
        type=int,
        default=acf.DEFAULT_CANDIDATES,
        metavar="N",
        help="CUDA, ptxas >= 13.3: N Advanced Control File candidates sampled from your compileiq's "
        "search space (pip install 'compileiq-cmake[acf]'; offline: CIQ_SEARCH_SPACES_DIR); 0: none; "
        "where they cannot work, one note says why (default %(default)s)",
    )
    p.add_argument(
        "--acf-space",
        choices=acf.SPACES,
        default="default",
        help="compileiq's search space: default (ptxas), att (ptxas, curated for attention kernels), "
        "nvcc (sm_100 and newer only)",
    )
    p.add_argument(
        "--toolkit",
        metavar="X.Y",
        help="tune the project as built by NVIDIA's CUDA toolkit X.Y from PyPI (e.g. 13.3, whose ptxas has the "
        "Advanced Controls), installed into the tool's cache unless there (as `compileiq-cmake toolkit X.Y`): "
        "the project is configured with the user's options and that nvcc, and built, in "
        "BUILD/compileiq/cuda-<version>, and tuned there; counts against --time-limit",
    )
    p.add_argument(
        "--toolkit-prefix",
        metavar="DIR",
        help="with --toolkit: where the toolkit is (or is installed), instead of the tool's cache",
    )
    p.add_argument(
        "--gpus",
        metavar="all|0,2,...",
        help="GPUs to benchmark on, one run per GPU at a time (default: every visible GPU of the same "
        "model as the first; CUDA_VISIBLE_DEVICES is honoured)",
    )
    p.add_argument(
        "--json-summary",
        metavar="FILE",
        help="also write the tune's result as one JSON document (schema compileiq-summary/1: winner, "
        "per-workload speedups and intervals, finalists, ablation, every trial, notes, timings)",
    )
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: this machine (default); ray: builds as tasks on the nodes of a Ray cluster, benchmarks "
        "on its GPUs, each GPU type tuned for its architecture (pip install 'compileiq-cmake[ray]'; the "
        "build directory must be on a filesystem every node mounts at the same path)",
    )
    p.add_argument(
        "--ray-address",
        metavar="auto|ray://HOST:PORT",
        help="with --executor ray: the cluster to join ('auto': the one 'ray start' began on this node; "
        "default: a new local cluster of this machine)",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace the target's entry even when it was checked more strictly (output comparison) "
        "than this tune checks, or was validated faster on the same sources, flags, compiler and GPU",
    )
    p.add_argument(
        "--no-step-cache",
        dest="step_cache",
        action="store_false",
        help="CUDA: build the variant trees without the compile-step cache (sccache as the CUDA compiler "
        "launcher, which serves a trial whose flags reach only ptxas without running nvcc's front end again)",
    )
    p.add_argument(
        "--portable",
        action="store_true",
        help="leave out flags whose code runs only on CPUs like this one (-march=native: the group cpu_specific)",
    )
    p.add_argument(
        "--arch-scope",
        choices=("all", "tuned"),
        default="all",
        help="CUDA, recorded in the entry: all (default): every architecture the target builds gets the flags "
        "(unmeasured ones too); tuned: only builds of the tuned architecture alone",
    )
    p.add_argument(
        "--no-race",
        dest="race",
        action="store_false",
        help="every search trial gets all its runs (without it, a trial shown unable to beat the best stops early)",
    )
    p.add_argument(
        "--no-screen",
        dest="screen",
        action="store_false",
        help="CUDA: search the whole space, without dropping values that change no device code",
    )
    p.add_argument(
        "--no-prior",
        dest="prior",
        action="store_false",
        help="the search without the learned prior's predictions (the order it has without one)",
    )
    p.add_argument(
        "--no-learn",
        dest="learn",
        action="store_false",
        help="do not add this tune's results to your local prior data (also: COMPILEIQ_NO_LEARN=1)",
    )
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
    _add_tune(sub)
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
    _add_verbosity(space)
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
    _add_verbosity(report)
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
    _add_verbosity(check)
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
        include_flags=_split(args.include_flags),
        exclude_flags=_split(args.exclude_flags),
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
