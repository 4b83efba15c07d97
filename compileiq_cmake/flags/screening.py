"""Static screening, before any GPU time: re-run the tuned target's nvcc commands (from compile_commands.json)
to cubins, once for the project's own flags and once per single flag value, in parallel; drop every value
whose device code equals the baseline's (or an earlier value's of the same dimension) or that fails to
compile. No CMake involved: the commands run in their own directories.

It scales with the project: only the units whose own build has device code are screened (a host-only unit
is said in one line), every (unit, value) outcome is kept in the user's screening cache (screen_cache.py)
so a second tune of the same code compiles nothing, the units with the most recorded kernel time go first,
and a tune with --time-limit gives screening at most SCREEN_SHARE of it (the values left are searched
unscreened, said in one line)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..model.errors import CompileIQError
from ..model.wording import plural
from ..project.apply_decisions import ApplyDecisions
from ..project.cmake_project import VariantTree
from ..project.nvcc_command import project_flags
from ..project.variant_settings import VariantSettings
from ..system.lock import TuneLock
from . import load_space
from .acf import ACF_DIMENSION, AcfRequest, Candidates, Situation, SourceFactory, acf_dimension, acf_path, gather
from .acf_compileiq import compileiq_source
from .catalogue import adapt_to_project, add_device_lto_dimension, device_lto_wanted
from .fingerprint import find_tool
from .probe import default_cache_path, probe_device_lto, probe_space, ptxas_version, user_cache_dir
from .screen_cache import ScreenCache
from .screen_engine import NOT_SCREENED as NOT_SCREENED
from .screen_engine import SAME_AS_BASELINE as SAME_AS_BASELINE
from .screen_engine import SCREEN_SHARE as SCREEN_SHARE
from .screen_engine import KernelDelta as KernelDelta
from .screen_engine import ScreenResult, screen
from .screen_engine import ScreenRow as ScreenRow
from .space import FlagSpace


def spills_first(space: FlagSpace, result: ScreenResult) -> tuple[FlagSpace, int]:
    """The ACF dimension with the control files that cut the spill bytes of the kernels they change first,
    fewest spill bytes first (removing spills was the one static sign of a faster ACF in the H200 landscape:
    docs/benchmarks/acf.md), as its `leading` values; the others keep their place. How many lead."""
    dims = list(space.dimensions)
    at = next((n for n, d in enumerate(dims) if d.name == ACF_DIMENSION), None)
    if at is None:
        return space, 0
    spills = {
        r.value: (sum(e.spill_bytes[1] for e in r.effects), sum(e.spill_bytes[0] for e in r.effects))
        for r in result.rows
        if r.dimension == ACF_DIMENSION and r.kept and r.effects
    }
    cut = sorted(
        (v for v in dims[at].values[1:] if v in spills and spills[v][0] < spills[v][1]), key=lambda v: spills[v][0]
    )
    rest = [v for v in dims[at].values[1:] if v not in cut]
    dims[at] = replace(dims[at], values=((), *cut, *rest), leading=len(cut))
    return replace(space, dimensions=tuple(dims)), len(cut)


def _acf_screened(candidates: Candidates, result: ScreenResult) -> tuple[Candidates, str]:
    """The control files as the screening saw them: what each kept one changes (registers, spills, instructions
    of the kernels it changes, for the report) and one line counting them."""
    rows = [r for r in result.rows if r.dimension == ACF_DIMENSION]
    kept = [r for r in rows if r.kept]
    changes = tuple(
        (
            Path(acf_path(r.value[0]) or "").stem,
            "; ".join(e.describe() for e in r.effects[:3])
            + (f"; and {len(r.effects) - 3} more kernels" if len(r.effects) > 3 else ""),
        )
        for r in kept
        if r.value
    )
    failed = sum(1 for r in rows if r.reason.startswith("does not compile"))
    same = sum(1 for r in rows if not r.kept and not r.reason.startswith("does not compile"))
    return replace(candidates, changes=changes), (
        f"advanced controls (ACF): {len(kept)} of {len(rows)} control files kept after screening ({same} with the "
        f"code of the project's own build or of another, {failed} that ptxas refused or crashed on)"
    )


@dataclass(frozen=True)
class CudaSpace:
    """A CUDA target's flag space after the probe, the adaptation to the project's own flags, the ACF
    dimension and static screening, with what each step said (a step that could not run says why)."""

    space: FlagSpace
    notes: tuple[str, ...]
    screen: ScreenResult | None  # None: screening did not run (a note says why)
    probe_seconds: float
    acf: Candidates | None = None  # the Advanced Control File candidates gathered (None: none asked for)


def prepare_cuda_space(
    space: FlagSpace,
    entries: list[dict[str, Any]],
    nvcc_path: str,
    cuda_arch: str,
    build_dir: Path,
    target: str,
    acf: AcfRequest | None = None,
    run_screen: bool = True,
    jobs: int | None = None,
    device_lto: bool = False,
    decisions: ApplyDecisions | None = None,
    time_limit: float | None = None,
    kernel_ns: dict[str, int] | None = None,
    cache_dir: Path | None = None,
    screen_off: str = "",
    driver_cuda: str = "",
    open_source: SourceFactory = compileiq_source,
) -> CudaSpace:
    """`entries`: the compile commands of the target's CUDA sources (by CMake's language, not by suffix).
    `device_lto`: whether the device_lto dimension may be offered; `decisions`: the CMake module's own decisions
    for the target (VariantTree.decisions: whether the apply accepts device LTO); none: device LTO not offered.
    `time_limit`: the tune's --time-limit (screening takes at most SCREEN_SHARE of it); `kernel_ns`: recorded
    kernel times (driver name -> ns), to screen the hottest files first; `cache_dir`: where the screening cache
    lives (default: the user cache directory); `screen_off`: why screening does not run (said by the caller)
    when the caller turned it off. `acf`: the Advanced Controls asked for (None: none), offered where they can
    work (`driver_cuda`: the CUDA version the GPU's driver supports, "" unknown), candidates from `open_source`
    stored in <build>/compileiq/acf and screened like every value (same code as another: dropped)."""
    notes: list[str] = []
    started = time.perf_counter()
    space, probe_notes = probe_space(space, nvcc_path, cuda_arch, default_cache_path(nvcc_path, cache_dir), jobs)
    probe_seconds = time.perf_counter() - started
    notes += probe_notes
    if entries:
        space, adapt_notes = adapt_to_project(space, project_flags(entries))
        notes += adapt_notes
    else:
        notes.append(
            f"note: no CUDA compile command of {target} in compile_commands.json: its own nvcc flags were not "
            "read (adaptation skipped) and static screening is skipped"
        )
    candidates = None
    if acf is not None:
        decided_archs = decisions.cuda_archs if decisions is not None else ()
        situation = Situation(
            ptxas_version=ptxas_version(nvcc_path),
            arch=cuda_arch,
            kind=acf.kind,
            driver_cuda=driver_cuda,
            sass_archs=decided_archs,
        )
        candidates = gather(acf, situation, build_dir / "compileiq" / "acf", open_source)
        space = acf_dimension(space, list(candidates.files))
        notes += candidates.notes
    result = None
    if not run_screen:
        if not screen_off:
            notes.append("note: static screening is off (--no-screen): every value of the space is searched")
    elif entries and find_tool("cuobjdump", nvcc_path) is None:
        notes.append("note: static screening skipped: cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    elif entries:
        result = _screen_space(space, entries, cuda_arch, jobs, build_dir, cache_dir, kernel_ns, time_limit, notes)
        if result is not None:
            space = result.space
            notes += result.notes
            if candidates is not None and candidates.files:
                candidates, acf_note = _acf_screened(candidates, result)
                space, leading = spills_first(space, result)
                notes.append(acf_note + (f"; the {leading} that cut spill bytes are measured first" if leading else ""))
    if entries:  # a build mode, not a compile flag: after the screening, never screened
        space, lto_notes = _with_device_lto(space, entries, nvcc_path, cuda_arch, cache_dir, device_lto, decisions)
        notes += lto_notes
    return CudaSpace(space=space, notes=tuple(notes), screen=result, probe_seconds=probe_seconds, acf=candidates)


def _screen_space(
    space: FlagSpace,
    entries: list[dict[str, Any]],
    cuda_arch: str,
    jobs: int | None,
    build_dir: Path,
    cache_dir: Path | None,
    kernel_ns: dict[str, int] | None,
    time_limit: float | None,
    notes: list[str],
) -> ScreenResult | None:
    """The static screening of the space on the target's units, with the user's screening cache and at most
    SCREEN_SHARE of the time limit; None when it could not run (`notes` say why)."""
    cache = None
    try:
        cache = ScreenCache.in_dir(cache_dir or user_cache_dir())
    except (sqlite3.Error, OSError) as exc:
        notes.append(f"note: the screening cache could not be opened ({exc}); every value is compiled")
    seconds = None if time_limit is None else SCREEN_SHARE * time_limit
    try:
        return screen(
            space,
            entries,
            cuda_arch,
            jobs=jobs or os.cpu_count(),
            cache_dir=build_dir / "compileiq",
            cache=cache,
            kernel_ns=kernel_ns,
            seconds=seconds,
            seconds_label=f", {SCREEN_SHARE:.0%} of --time-limit {time_limit:g} s" if time_limit else "",
        )
    except CompileIQError as exc:
        notes.append(f"note: static screening skipped: {exc}")
        return None


def _with_device_lto(
    space: FlagSpace,
    entries: list[dict[str, Any]],
    nvcc_path: str,
    cuda_arch: str,
    cache_dir: Path | None,
    device_lto: bool,
    decisions: ApplyDecisions | None,
) -> tuple[FlagSpace, list[str]]:
    """The device_lto dimension where the apply accepts it and a device link with -dlto works (a build mode,
    not a compile flag: added after the screening, never screened), or why not (the link's probe cached in
    `cache_dir`, default the user cache directory, with the flag probes)."""
    decided = decisions or ApplyDecisions.parse({}, "(none)")
    refusal = decided.device_lto_refusal
    if device_lto and not refusal and decided.relocatable:
        linked = probe_device_lto(nvcc_path, cuda_arch, default_cache_path(nvcc_path, cache_dir))
        if not linked.ok:
            refusal = f"a device link with -dlto fails with this toolkit ({linked.message})"
    return add_device_lto_dimension(space, project_flags(entries), device_lto, refusal, decided.relocatable)


@dataclass(frozen=True)
class TargetScreen:
    """What `compileiq-cmake space --target T` prints: the screened space of one target and how it came about."""

    target: str
    cuda_arch: str
    compiler: str  # "NVIDIA 13.0.88"
    result: ScreenResult
    notes: tuple[str, ...]
    probe_seconds: float
    commands: tuple[
        dict[str, Any], ...
    ] = ()  # the target's CUDA compile commands (what the prior's features are read from)
    nvcc: str = ""
    relocatable: bool = False


def screen_target(
    source_dir: Path,
    build_dir: Path,
    target: str,
    cuda_arch: str = "",
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    jobs: int | None = None,
    gpu_arch: Callable[[], str] | None = None,
) -> TargetScreen:
    """Configure the variant tree <build>/compileiq/worker-0 as tune does (under the tune lock), then
    catalogue -> probe -> project adaptation -> screening of the target's CUDA sources. `gpu_arch`: the
    architecture of this machine's GPU, asked when `cuda_arch` is empty (the caller's GPU query)."""
    with TuneLock(build_dir / "compileiq"):
        settings, notes = VariantSettings.from_user_tree(source_dir, build_dir, cuda_arch)
        tree = VariantTree(build_dir / "compileiq", "worker-0", settings.cmake, settings.config)
        model = tree.prepare(settings, target, "CUDA" if cuda_arch else "")
        tgt = model.target(target)
        if "CUDA" not in tgt.languages:
            raise CompileIQError(f"target '{target}' compiles no CUDA sources; screening is for CUDA targets")
        toolchain = model.toolchains.get("CUDA")
        if toolchain is None or toolchain.compiler_id != "NVIDIA":
            raise CompileIQError("the project's CUDA compiler is not nvcc; configure with -DCMAKE_CUDA_COMPILER=nvcc")
        if not cuda_arch:
            if gpu_arch is None:
                raise CompileIQError("no CUDA architecture to screen for: give --cuda-arch")
            cuda_arch = gpu_arch()
            tree.prepare(replace(settings, cuda_arch=cuda_arch), target, "CUDA")
        commands = tree.compile_commands(tgt.sources_in("CUDA"), tgt.name)
        if not commands:
            raise CompileIQError(f"no compile command of a CUDA source of '{target}' in compile_commands.json")
        space = load_space("nvcc", toolchain.compiler_id, toolchain.version, include, exclude, arch=cuda_arch)
        prepared = prepare_cuda_space(
            space,
            commands,
            toolchain.path,
            cuda_arch,
            build_dir,
            target,
            jobs=jobs,
            device_lto=device_lto_wanted(include, exclude),
            decisions=tree.decisions(),
        )
    if prepared.screen is None:
        raise CompileIQError(
            next((n.removeprefix("note: ") for n in prepared.notes if "screening" in n), "static screening did not run")
        )
    return TargetScreen(
        target=target,
        cuda_arch=cuda_arch,
        compiler=f"{toolchain.compiler_id} {toolchain.version}",
        result=prepared.screen,
        notes=tuple(notes) + prepared.notes,
        probe_seconds=prepared.probe_seconds,
        commands=tuple(commands),
        nvcc=toolchain.path,
        relocatable=tree.decisions().relocatable,
    )


def format_screen(ts: TargetScreen, notes: bool = True) -> list[str]:
    """The screened space as `space --target` lists it; `notes`: its notes too (else the caller says them)."""
    r = ts.result
    lines = [
        f"{ts.target} (CUDA sm_{ts.cuda_arch}, {ts.compiler}): screened flag space "
        f"{plural(len(r.space.dimensions), 'dimension')}, "
        f"{plural(r.points_after, 'point')} (before screening {r.points_before}); {r.summary()} "
        f"(probe {ts.probe_seconds:.1f} s); baseline: {plural(len(r.baseline.kernels), 'kernel')}",
    ]
    for d in r.space.dimensions:
        unsafe = "  [unsafe numerics]" if d.unsafe_numerics else ""
        experimental = "  [experimental]" if d.experimental else ""
        lines.append(f"  {d.name:<26} {' | '.join(d.labels())}{unsafe}{experimental}")
    lines.append("per value:")
    for row in r.rows:
        state = "kept   " if row.kept else "dropped"
        effects = "; ".join(e.describe() for e in row.effects)
        lines.append(
            f"  {state} {row.dimension:<22} {' '.join(row.value):<36} "
            f"{row.reason}{'  [' + effects + ']' if effects and row.kept else ''}"
        )
    for note in ts.notes if notes else ():
        lines.append(f"  note: {note.removeprefix('note: ')}")
    return lines
