"""Tune stage, before the tune: `tune --toolkit X.Y` tunes the project as built by NVIDIA's PyPI CUDA toolkit
X.Y (flags.toolkit: installed into the tool's cache unless it is there) instead of the compiler the user's
build tree was configured with, e.g. 13.3 for the Advanced Controls on a machine whose toolkit is older.

The user's tree keeps its compiler: a tree of its own, `<build>/compileiq/cuda-<version>`, is configured with
the user's cache entries and the toolkit's nvcc, and built; the tune reads, builds, measures and keeps its
state there (the project's own build included, so that every comparison is made with one compiler). The
time this takes counts against --time-limit. What release builds configure with is said in one line."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path

from ..flags import toolkit
from ..model.errors import UsageError
from ..model.events import Log, as_stream
from ..model.spec import TuneSpec
from ..project.file_api import write_query
from ..project.step_error import step_error
from ..project.user_tree import find_cmake, read_cache
from ..project.variant_settings import forwarded_cache, initial_cache_script
from ..system.processes import run_process

STEP_TIMEOUT = 3600.0  # a configure or build of the toolkit's tree without a --time-limit


def tree_of(build_dir: Path, version: str) -> Path:
    return build_dir / "compileiq" / f"cuda-{version}"


def with_toolkit(spec: TuneSpec, version: str, prefix: Path | None, log: Log) -> TuneSpec:
    """`spec` moved to a tree of the project configured and built with toolkit `version` (time limit: what is
    left of it)."""
    if not (spec.build_dir / "CMakeCache.txt").is_file():
        raise UsageError(
            f"--toolkit needs a configured build tree to copy the options from; {spec.build_dir} has no "
            f"CMakeCache.txt: configure it first (cmake -S {spec.source_dir} -B {spec.build_dir})"
        )
    started = time.monotonic()
    stream = as_stream(log)
    kit = toolkit.install(version, prefix, say=stream.info)
    tree = tree_of(spec.build_dir, version)
    user = read_cache(spec.build_dir)
    cache = forwarded_cache(user, keep=frozenset({"CMAKE_CUDA_ARCHITECTURES"}))
    cache["CMAKE_CUDA_COMPILER"] = ("FILEPATH", str(kit.nvcc))
    own = read_cache(tree) if (tree / "CMakeCache.txt").is_file() else {}
    if own and own.get("CMAKE_CUDA_COMPILER", ("", ""))[1] != str(kit.nvcc):
        shutil.rmtree(tree)  # CMake cannot change a tree's compiler: configured afresh
    tree.mkdir(parents=True, exist_ok=True)
    init = tree / "compileiq_toolkit_cache.cmake"
    init.write_text(initial_cache_script(cache))
    write_query(tree)
    cmake = find_cmake(user)
    generator = user.get("CMAKE_GENERATOR", ("", "Unix Makefiles"))[1]
    limit = spec.time_limit
    steps = (
        ([cmake, "-S", str(spec.source_dir), "-B", str(tree), "-G", generator, "-C", str(init)], "configuring"),
        ([cmake, "--build", str(tree), "--target", spec.target], "building"),
    )
    for cmd, what in steps:
        left = STEP_TIMEOUT if limit is None else limit - (time.monotonic() - started)
        _step(cmd, tree, f"{what} {spec.source_dir} with CUDA {kit.version} (--toolkit) in {tree}", left)
    stream.info(
        f"--toolkit {version}: tuning the project as built by {kit.nvcc} (CUDA {kit.version}) in {tree}; release "
        f"builds that apply the result configure with {kit.cmake_argument()}"
    )
    spent = time.monotonic() - started
    if limit is not None and spent >= limit:
        raise UsageError(
            f"--toolkit {version}: setting up the toolkit's tree took {spent:.0f} s of --time-limit {limit:g} s; "
            "give a longer --time-limit (the tree is kept: the next tune starts from it)"
        )
    return replace(spec, build_dir=tree, time_limit=None if limit is None else limit - spent)


def _step(cmd: list[str], tree: Path, what: str, timeout: float) -> None:
    """A configure or build of the toolkit's tree; its failure (or compileiq stopping it: the time limit, too
    much output) is one line that keeps the command's whole output in a log."""
    res = run_process(cmd, tree, max(timeout, 1.0))
    if res.returncode == 0:
        return
    log_path = tree / "compileiq-toolkit-logs" / f"{'build' if '--build' in cmd else 'configure'}.log"
    raise step_error(
        what,
        cmd,
        res,
        log_path,
        timeout,
        hint="see the log; the project must configure and build with this toolkit (within --time-limit, when given)",
    )
