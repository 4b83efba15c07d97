"""The tune command's argument table (`add_tune`), with the helpers the other commands' tables share
(`add_verbosity`, `split`): ui/parser.py builds the whole parser from them."""

from __future__ import annotations

import argparse

from ..flags import acf
from ..model.spec import OBJECTIVES


def split(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out.extend(x for x in v.replace(",", " ").split() if x)
    return tuple(out)


def add_verbosity(p: argparse.ArgumentParser) -> None:
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


def add_tune(sub: argparse._SubParsersAction) -> None:
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
    add_verbosity(p)
