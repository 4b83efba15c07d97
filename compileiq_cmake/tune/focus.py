"""The hot-file focus of a CUDA target of many files (issue 38): where a flag change would recompile every file
of a large library (141 files, minutes of build per trial), the search tunes the flags of the files that hold
the benchmark's kernel time, and a trial rebuilds those files and relinks.

After the baseline: one run of the project's own build per workload with the CUPTI collector (kernel_times),
the kernels mapped to the files whose objects define them (their device code's symbols, as the per-file
stage maps them), the files chosen largest share first until they hold COVER of the kernel time (at most
MOST files, each at least LEAST). The space's dimensions then become per-file flags of those files
(`[path]flag`, build_flags: applied to the target's compiles of those files only, as the apply scopes
them); modes of the whole target's device link (device LTO) are left out, said. When the profile cannot run
(no CUPTI, no cuobjdump, a replay, another executor) a note says so and every trial rebuilds the target.
"""

from __future__ import annotations

from dataclasses import replace

from ..flags.acf import ACF_DIMENSION
from ..measure import kernel_times
from ..measure.runner import Runner
from ..model import build_flags
from ..model.errors import CompileIQError
from ..model.events import Log, as_stream
from ..project import file_api
from ..project.cmake_project import VariantTree
from ..search import per_file
from .tune_setup import Focus, TuneSetup

FOCUS_FILES = 24  # a CUDA target of at least this many files is tuned on its hot files
COVER, MOST, LEAST = 0.9, 4, 0.05
# trials in flight under the focus: each variant tree's first build compiles every file of the target (on the
# H200, 9 trees' first builds of a 125-file library ate a 150 s box), a later one the hot files only
FOCUS_WORKERS = 2


def many_files(target: file_api.Target) -> bool:
    """A target of at least FOCUS_FILES CUDA files: tuned on its hot files, never screened (every value x every
    file: hours on a library) by its own setup or by a suite's screening ahead."""
    return len(target.sources_in("CUDA")) >= FOCUS_FILES


def wanted(setup: TuneSetup) -> bool:
    """Whether the target is one the focus is for (CUDA, at least FOCUS_FILES files, built, not replayed)."""
    return setup.project.language == "CUDA" and setup.replay is None and many_files(setup.project.target)


def ahead_trees(setup: TuneSetup, runner: Runner) -> tuple[VariantTree, ...]:
    """The trees the search will use under the focus besides the baseline's, built before the search
    (tune.tree_warm): none for a target the focus is not for, cannot profile, or has no search trial for."""
    if not wanted(setup) or _cannot_profile(setup, runner) or setup.spec.budget < 2:
        return ()
    return tuple(t for t in setup.trees[: _workers(setup)] if t is not setup.baseline_tree)


def _workers(setup: TuneSetup) -> int:
    """Trials in flight under the focus (each needs its variant tree)."""
    return min(setup.spec.workers, FOCUS_WORKERS)


def _cannot_profile(setup: TuneSetup, runner: Runner) -> str:
    """Why the kernel time cannot be profiled by file ("" when it can)."""
    if setup.device_code.fingerprints is None:
        return "kernels cannot be mapped to files without cuobjdump (pip install nvidia-cuda-cuobjdump)"
    if type(runner).run is not Runner.run:
        return f"per-kernel times are measured by the local executor only (this tune runs on {type(runner).__name__})"
    return ""


def hot_files(shares: tuple[kernel_times.FileShare, ...]) -> tuple[kernel_times.FileShare, ...]:
    """Largest share first until COVER is held, at most MOST files, each holding at least LEAST."""
    chosen: list[kernel_times.FileShare] = []
    for s in shares:
        if len(chosen) == MOST or sum(c.share for c in chosen) >= COVER - 1e-9 or s.share < LEAST:
            break
        chosen.append(s)
    return tuple(chosen)


def _profile(setup: TuneSetup, runner: Runner) -> tuple[tuple[kernel_times.FileShare, ...], float]:
    """Kernel time by file of the project's own build (setup.baseline_tree: built by the baseline), over the
    workloads."""
    why = _cannot_profile(setup, runner)
    if why:
        raise CompileIQError(why)
    collector = kernel_times.build_collector(setup.project.toolchain.path, setup.state_dir / "cupti")
    return per_file.measured_shares(setup.per_file_context, setup.baseline_tree, runner, collector)


def with_focus(setup: TuneSetup, runner: Runner, log: Log) -> TuneSetup:
    """`setup` whose space tunes the hot files of a target of many files (see the module docstring); as it is
    for other targets, or with a note when the profile cannot run."""
    if not wanted(setup):
        return setup
    stream = as_stream(log)
    n = len(setup.project.target.sources_in("CUDA"))
    target = setup.spec.target
    try:
        shares, unmapped = _profile(setup, runner)
    except CompileIQError as exc:
        stream.note(f"hot-file focus off: {exc}; every trial recompiles all {n} CUDA files of {target}", stage="focus")
        return setup
    files = hot_files(shares)
    if not files:
        stream.note(
            f"hot-file focus off: no file of {target} holds {100 * LEAST:.0f}% of the kernel time "
            f"({100 * unmapped:.0f}% is in kernels of no file of it); every trial recompiles all {n} CUDA files",
            stage="focus",
        )
        return setup
    focus = Focus(files, n, unmapped)
    dims, left_out = [], []
    acf_out = ""
    for d in setup.space.dimensions:
        if d.build_mode:  # a mode of the whole target's device link: no file has it alone
            left_out.append(d.name)
            continue
        if d.name == ACF_DIMENSION:  # a control file is recorded and applied for the whole target, not per file
            acf_out = (
                f"{ACF_DIMENSION}: not searched under the hot-file focus (a control file applies to the "
                "whole target; its files are tuned one by one)"
            )
            continue
        values = tuple(tuple(build_flags.source_token(f.path, t) for f in files for t in value) for value in d.values)
        dims.append(replace(d, values=values))
    workers = _workers(setup)
    space = replace(
        setup.space,
        dimensions=tuple(dims),
        dropped=setup.space.dropped
        + tuple(f"{name}: the hot-file focus tunes files, not the target's device link" for name in left_out)
        + ((acf_out,) if acf_out else ()),
    )
    if acf_out:
        stream.note(f"advanced controls {acf_out.split(': ', 1)[1]}", stage="focus")
    stream.info(
        f"hot-file focus: {target} compiles {n} CUDA files; {100 * focus.share:.0f}% of the benchmark's kernel "
        f"time is in {', '.join(f'{f.path} {100 * f.share:.0f}%' for f in files)} (CUPTI, one run per workload "
        f"of the project's own build): their flags are tuned (per file, scoped to {target}), and a trial "
        "rebuilds those files and relinks"
        + (f"; left out: {', '.join(left_out)} (the whole target's device link)" if left_out else "")
        + (
            f"; {workers} trials in flight instead of {setup.spec.workers} (--workers): a variant tree's first "
            f"build compiles all {n} files"
            if workers < setup.spec.workers
            else ""
        ),
        stage="focus",
        focus=focus.as_dict(),
    )
    return replace(setup, spec=replace(setup.spec, workers=workers), space=space, focus=focus)
