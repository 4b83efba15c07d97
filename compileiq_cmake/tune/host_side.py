"""The host side of a CUDA target: when a run's wall time is mostly host time, the host compiler's dimensions
(gcc.toml, passed by nvcc as -Xcompiler=<flag>, named host_<name>) join the search.

Only a metric that is the run's wall time (WALLTIME) sees host code: a time the program prints, such as a
CUDA-event time, does not, so host flags could not move it (a note says so, nothing is run). With WALLTIME,
after the baseline: one run of the project's own build per workload with the CUPTI collector (kernel_times);
host share = 1 - summed kernel time / wall time of the run; the dimensions are offered when it is at least
HOST_SHARE. `--include-flags
host_side` (or a host_<name>) searches them regardless; `--exclude-flags host_side` never. Either way a note
says what was measured and what was decided.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace

from ..flags.portability import compiler_kind
from ..flags.space import HOST_GROUP, HOST_PREFIX, HOST_SHARE, Dimension, FlagSpace, host_side_named, load_space
from ..measure import kernel_times
from ..measure.runner import Runner
from ..model.errors import CompileIQError
from ..model.events import Log, as_stream
from ..project.user_tree import read_cache
from .tune_setup import TuneSetup, host_compiler_of


def host_compiler_path(setup: TuneSetup) -> str:
    """The host compiler nvcc uses: CMAKE_CUDA_HOST_COMPILER of the tree, else the c++ nvcc finds on PATH (g++)."""
    # found once in setup; a setup without its tools (a replay's) reads the tree's cache
    path = setup.tools.host_compiler if setup.tools is not None else host_compiler_of(read_cache(setup.trees[0].path))
    if not path:
        raise CompileIQError("no host compiler found (CMAKE_CUDA_HOST_COMPILER is empty and g++ is not on PATH)")
    return path


def host_compiler(setup: TuneSetup) -> tuple[str, str]:
    """(compiler id, version) of the host compiler nvcc uses (host_compiler_path)."""
    path = host_compiler_path(setup)
    compiler_id = compiler_kind(path)
    try:
        version = subprocess.run([path, "-dumpversion"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileIQError(f"cannot ask the host compiler {path} for its version: {exc}") from None
    return compiler_id, version if re.match(r"^\d+(\.\d+)*$", version) else "0"


def host_dimensions(
    compiler_id: str, version: str, include: tuple[str, ...], exclude: tuple[str, ...]
) -> tuple[Dimension, ...]:
    """The host compiler's catalogue as nvcc dimensions: host_<name>, each token -Xcompiler=<token>; the
    include/exclude names host_<name> select (HOST_GROUP: all of them), unsafe_numerics applies as usual."""
    names = {n.removeprefix("host_") for n in include if n.startswith("host_") and n != HOST_GROUP}
    drop = tuple(n.removeprefix("host_") for n in exclude if n.startswith("host_") and n != HOST_GROUP)
    groups = tuple(n for n in exclude if n in ("unsafe_numerics", "cpu_specific"))
    space = load_space("gcc", compiler_id, version, tuple(sorted(names)), drop + groups)
    return tuple(
        replace(d, name=f"host_{d.name}", values=tuple(tuple(HOST_PREFIX + t for t in v) for v in d.values))
        for d in space.dimensions
    )


def with_host_side(setup: TuneSetup, runner: Runner, exclude: tuple[str, ...], log: Log) -> TuneSetup:
    """`setup` with the host dimensions added to its space when the host side is worth searching (see the
    module docstring); as it is otherwise, with a note."""
    spec = setup.spec
    if setup.project.language != "CUDA" or setup.replay is not None or HOST_GROUP in exclude:
        return setup
    explicit = host_side_named(spec.include_flags)
    if not explicit and spec.metric.kind != "walltime":  # nothing to measure for: say so without a run
        as_stream(log).note(
            f"host-side dimensions not offered: the metric ({spec.metric.label}) is not the run's "
            "wall time, so host flags cannot move it (--include-flags host_side searches them)"
        )
        return setup
    measured = ""
    try:
        collector = kernel_times.build_collector(setup.project.toolchain.path, setup.state_dir / "cupti")
        shares = []
        for workload in spec.workloads:
            result, times = kernel_times.run_with_collector(
                runner, setup.baseline_tree, workload, collector, setup.state_dir / "cupti" / "host-share.tsv"
            )
            kernels = sum(k.ns for k in times) / 1e9
            shares.append(max(0.0, 1.0 - kernels / result.seconds) if result.seconds > 0 else 0.0)
        host = sum(shares) / len(shares)
        measured = f"{100 * host:.0f}% of a run's wall time is outside kernels (CUPTI)"
    except CompileIQError as exc:
        if not explicit:
            as_stream(log).note(f"host-side dimensions not offered: the host share could not be measured ({exc})")
            return setup
        host = 1.0
        measured = f"the host share could not be measured ({exc})"
    if not explicit:
        if host < HOST_SHARE:
            as_stream(log).note(
                f"host code: {measured}; host-side dimensions not offered "
                f"(below {100 * HOST_SHARE:.0f}%; --include-flags host_side searches them)"
            )
            return setup
    try:
        compiler_id, version = host_compiler(setup)
        dims = host_dimensions(compiler_id, version, spec.include_flags, exclude)
    except CompileIQError as exc:
        as_stream(log).note(f"host-side dimensions not offered: {exc}")
        return setup
    if not dims:
        as_stream(log).note(f"host code: {measured}; the include/exclude options leave no host-side dimension")
        return setup
    space: FlagSpace = replace(setup.space, dimensions=setup.space.dimensions + dims)
    as_stream(log).info(
        f"host code: {measured}: {len(dims)} host-side dimensions of {compiler_id} {version} join the "
        f"search (-Xcompiler=...: {', '.join(d.name for d in dims)}); space {setup.space.size} -> {space.size} points"
    )
    return replace(setup, space=space)
