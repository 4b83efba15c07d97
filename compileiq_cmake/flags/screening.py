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
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..model.errors import CompileIQError
from ..model.wording import plural
from ..project.cmake_project import ApplyDecisions, VariantSettings, VariantTree
from ..project.nvcc_command import project_flags, tokens
from ..system.lock import TuneLock
from . import load_space
from .acf import ACF_DIMENSION, AcfRequest, Candidates, Situation, SourceFactory, acf_dimension, acf_path, gather
from .acf_compileiq import compileiq_source
from .catalogue import adapt_to_project, add_device_lto_dimension, canonical_flags, device_lto_wanted
from .fingerprint import DeviceFingerprint, KernelFingerprint, find_tool
from .probe import default_cache_path, probe_device_lto, probe_space, ptxas_version, user_cache_dir
from .screen_cache import Outcome, ScreenCache
from .screen_compile import ScreenTools, _Cells, _unit_name, nvcc_tools
from .space import FlagSpace

SAME_AS_BASELINE = "same device code as the project's own build"
NOT_SCREENED = "not screened: the screening's time share ran out"
# The share of --time-limit static screening may take at most: a tune of a 100 s limit screens for 10 s,
# then searches the values not screened as they are (a warm screening cache makes most screens take ~0 s).
SCREEN_SHARE = 0.10


@dataclass(frozen=True)
class KernelDelta:
    kernel: str
    registers: tuple[int, int]  # (baseline, with the value)
    spill_bytes: tuple[int, int]
    instructions: tuple[int, int]

    def describe(self) -> str:
        parts = [f"regs {self.registers[0]}->{self.registers[1]}"] if self.registers[0] != self.registers[1] else []
        if self.spill_bytes != (0, 0) and self.spill_bytes[0] != self.spill_bytes[1]:
            parts.append(f"spills {self.spill_bytes[0]}->{self.spill_bytes[1]} B")
        if self.instructions[0] != self.instructions[1]:
            parts.append(f"instrs {self.instructions[0]}->{self.instructions[1]}")
        short = self.kernel.split(":", 1)[-1]
        return f"{short}: {', '.join(parts) or 'same resources, other code'}"


@dataclass(frozen=True)
class ScreenRow:
    dimension: str
    value: tuple[str, ...]
    kept: bool
    reason: str
    effects: tuple[KernelDelta, ...] = ()  # changed kernels only
    digest: str = ""
    screened: bool = True  # False: the time share ran out before every unit was compiled with it (effects partial)


@dataclass(frozen=True)
class ScreenResult:
    space: FlagSpace  # the screened space (dimensions with no kept value removed)
    rows: tuple[ScreenRow, ...]
    seconds: float
    baseline: DeviceFingerprint
    compiles: int  # compiles run (cache hits not counted)
    points_before: int
    cache_hits: int = 0  # (unit, value) outcomes the screening cache answered
    screened_files: tuple[str, ...] = ()  # the units with kernels, in the order screened (own build known)
    no_kernel_files: tuple[str, ...] = ()  # units whose own build has no device code: not screened
    unscreened: int = 0  # values the time share left unscreened (kept, searched as they are)
    notes: tuple[str, ...] = ()  # one line each: units left out, order, cache problems

    @property
    def points_after(self) -> int:
        return self.space.size

    def summary(self) -> str:
        """ "12 compiles, 30 cache hits, 3.1 s; 19 files screened, 1 without kernels skipped"."""
        return (
            f"{plural(self.compiles, 'compile')}, {plural(self.cache_hits, 'cache hit')}, {self.seconds:.1f} s; "
            f"{plural(len(self.screened_files), 'file')} screened, {len(self.no_kernel_files)} without kernels skipped"
            + (f", {plural(self.unscreened, 'value')} not screened" if self.unscreened else "")
        )


def _deltas(base: DeviceFingerprint, new: DeviceFingerprint) -> tuple[KernelDelta, ...]:
    empty = KernelFingerprint(name="", sass_sha256="")
    names = sorted({k.name for k in base.kernels} | {k.name for k in new.kernels})
    out = []
    for name in names:
        b, n = base.kernel(name) or empty, new.kernel(name) or empty
        if b.sass_sha256 != n.sass_sha256:
            out.append(
                KernelDelta(
                    kernel=name,
                    registers=(b.registers, n.registers),
                    spill_bytes=(b.spill_bytes, n.spill_bytes),
                    instructions=(b.instructions, n.instructions),
                )
            )
    return tuple(out)


def _driver_name(fingerprint_name: str) -> str:
    """A fingerprint's kernel name ("sm_90:<mangled>", a repeat with "#2") as the CUDA driver reports it."""
    return fingerprint_name.split(":", 1)[-1].split("#", 1)[0]


def screen(
    space: FlagSpace,
    compile_commands: list[dict[str, Any]],
    cuda_arch: str,
    jobs: int | None = None,
    cache_dir: Path | None = None,
    cache: ScreenCache | None = None,
    kernel_ns: dict[str, int] | None = None,
    seconds: float | None = None,
    tools: ScreenTools | None = None,
    seconds_label: str = "",
) -> ScreenResult:
    """Screen every single flag value of `space` against the project's own build of the target's CUDA sources
    (`compile_commands`: their entries, whatever the files' suffixes). First each unit's own build: a unit
    whose device code has no function (host code only) is not screened further. Then per unit with kernels,
    those with the most recorded kernel time first (`kernel_ns`: driver kernel name -> ns), each value.
    `cache`: outcomes of earlier screenings (of any tune or tree) are reused and new ones stored.
    `seconds`: the most screening may take (`seconds_label` says whence, for the note); a value not screened
    on every unit by then is kept unscreened (unless a unit already showed it changes code), a note says so."""
    started = time.perf_counter()
    entries = list(compile_commands)
    if not entries:
        raise CompileIQError("the target has no CUDA compile commands in compile_commands.json; nothing to screen")
    values = [(d.name, v) for d in space.dimensions for v in d.values[1:]]
    units = _compile_all(
        entries,
        [(), *(canonical_flags(v) for _, v in values)],
        cuda_arch,
        jobs,
        cache_dir,
        cache,
        kernel_ns,
        None if seconds is None else started + max(0.0, seconds),
        tools,
    )
    rows, unscreened = _rows(values, units)
    notes = _notes(entries, units, unscreened, f"{seconds or 0.0:.1f} s{seconds_label}", cache is not None)
    return ScreenResult(
        space=_screened_space(space, rows),
        rows=tuple(rows),
        seconds=time.perf_counter() - started,
        baseline=units.baseline,
        compiles=units.cells.compiles,
        points_before=space.size,
        cache_hits=units.cells.hits,
        screened_files=tuple(_unit_name(entries[i]) for i in units.known),
        no_kernel_files=tuple(_unit_name(entries[i]) for i in units.no_kernels),
        unscreened=unscreened,
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class _Units:
    """What the compiles found: every (unit, flag set) cell's outcome, the units with kernels in the order
    screened, those without, those whose own build is known, their kernel time and the combined baseline."""

    cells: _Cells
    units: list[int]
    no_kernels: list[int]
    known: list[int]
    ns: dict[int, int]
    baseline: DeviceFingerprint


def _compile_all(
    entries: list[dict[str, Any]],
    flagsets: list[tuple[str, ...]],
    cuda_arch: str,
    jobs: int | None,
    cache_dir: Path | None,
    cache: ScreenCache | None,
    kernel_ns: dict[str, int] | None,
    deadline: float | None,
    tools: ScreenTools | None,
) -> _Units:
    """Each unit's own build, then every flag set on the units with kernels (the most kernel time first)."""
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="screen-", dir=cache_dir))
    try:
        tools = tools or nvcc_tools(tokens(entries[0])[0], cuda_arch, work, cache)
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
            cells = _Cells(entries, flagsets, cuda_arch, tools, cache, pool, deadline)
            cells.run([(i, 0) for i in range(len(entries))])
            for i in range(len(entries)):
                base = cells.outcomes.get((i, 0))
                if base is not None and base.fingerprint is None:
                    raise CompileIQError(
                        f"the project's own nvcc command fails when rebuilt to a cubin "
                        f"({_unit_name(entries[i])}): {base.error}"
                    )
            # a unit the deadline left unknown counts as one with kernels (its values stay unscreened)
            no_kernels = [
                i for i in range(len(entries)) if (i, 0) in cells.outcomes and not _code(cells.outcomes[(i, 0)]).kernels
            ]
            times = kernel_ns or {}
            ns = {
                i: sum(times.get(name, 0) for name in {_driver_name(k.name) for k in _code(o).kernels})
                for (i, j), o in cells.outcomes.items()
                if j == 0 and times
            }
            units = sorted((i for i in range(len(entries)) if i not in no_kernels), key=lambda i: -ns.get(i, 0))
            cells.run([(i, j) for i in units for j in range(1, len(flagsets))])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    known = [i for i in units if (i, 0) in cells.outcomes]
    baseline = DeviceFingerprint.combine([_code(cells.outcomes[(i, 0)]) for i in known])
    return _Units(cells, units, no_kernels, known, ns, baseline)


def _code(outcome: Outcome) -> DeviceFingerprint:
    """The device code of an outcome that compiled (a failed one is reported before any of these is read)."""
    assert outcome.fingerprint is not None, outcome.error
    return outcome.fingerprint


def _rows(values: list[tuple[str, tuple[str, ...]]], found: _Units) -> tuple[list[ScreenRow], int]:
    """One row per value: dropped when it fails to compile, gives the baseline's device code or an earlier
    value's of its dimension; kept (unscreened) when the deadline left a unit unknown. And how many values
    were left unscreened."""
    outcomes, units, known, baseline = found.cells.outcomes, found.units, found.known, found.baseline
    rows: list[ScreenRow] = []
    seen: dict[tuple[str, str], tuple[str, ...]] = {}  # (dimension, digest) -> first value with that code
    unscreened = 0
    for j, (dim, value) in enumerate(values, start=1):
        got = {i: outcomes[(i, j)] for i in units if (i, j) in outcomes}
        failed = next((o.error for o in got.values() if o.fingerprint is None), None)
        if failed is not None:
            rows.append(ScreenRow(dimension=dim, value=value, kept=False, reason=f"does not compile: {failed}"))
            continue
        have = [i for i in known if i in got]
        fp = DeviceFingerprint.combine([_code(got[i]) for i in have])
        if len(have) < len(units):  # the deadline came first on some unit
            effects = _deltas(DeviceFingerprint.combine([_code(outcomes[(i, 0)]) for i in have]), fp)
            if effects:
                rows.append(
                    ScreenRow(
                        dimension=dim,
                        value=value,
                        kept=True,
                        effects=effects,
                        screened=False,
                        reason=(
                            f"changes the code of {plural(len(effects), 'function')} (screened on {len(have)} of "
                            f"{plural(len(units), 'file')})"
                        ),
                    )
                )
            else:
                unscreened += 1
                rows.append(ScreenRow(dimension=dim, value=value, kept=True, reason=NOT_SCREENED, screened=False))
        elif fp.digest == baseline.digest:
            rows.append(ScreenRow(dimension=dim, value=value, kept=False, reason=SAME_AS_BASELINE, digest=fp.digest))
        elif (dim, fp.digest) in seen:
            rows.append(
                ScreenRow(
                    dimension=dim,
                    value=value,
                    kept=False,
                    digest=fp.digest,
                    reason=f"same device code as {' '.join(seen[(dim, fp.digest)])}",
                    effects=_deltas(baseline, fp),
                )
            )
        else:
            seen[(dim, fp.digest)] = value
            effects = _deltas(baseline, fp)
            rows.append(
                ScreenRow(
                    dimension=dim,
                    value=value,
                    kept=True,
                    digest=fp.digest,
                    effects=effects,
                    reason=f"changes the code of {plural(len(effects), 'function')}",
                )
            )
    return rows, unscreened


def _screened_space(space: FlagSpace, rows: list[ScreenRow]) -> FlagSpace:
    """`space` with only the values kept; a dimension left with its default alone is dropped (said why)."""
    kept_values = {(r.dimension, r.value) for r in rows if r.kept}
    dims, dropped = [], list(space.dropped)
    for d in space.dimensions:
        values_kept = tuple(v for v in d.values if not v or (d.name, v) in kept_values)
        if len(values_kept) > 1:
            dims.append(replace(d, values=values_kept))
        else:
            dropped.append(f"{d.name}: screening: no value changes the device code of this target")
    return replace(space, dimensions=tuple(dims), dropped=tuple(dropped))


def _notes(entries: list[dict[str, Any]], found: _Units, unscreened: int, share: str, cached: bool) -> list[str]:
    """The screening's notes: units without kernels, the order by kernel time, the time share, the cache."""
    units, ns, cells = found.units, found.ns, found.cells
    notes = []
    if found.no_kernels:
        names = [_unit_name(entries[i]) for i in found.no_kernels]
        notes.append(
            f"note: static screening: {plural(len(names), 'file')} of {len(entries)} define no kernel and "
            f"are not screened: {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}"
        )
    if ns and units and ns.get(units[0], 0) > 0:
        notes.append(
            f"note: static screening: files with the most recorded kernel time first "
            f"({', '.join(_unit_name(entries[i]) for i in units[:3])}{' ...' if len(units) > 3 else ''})"
        )
    if unscreened:
        notes.append(
            f"note: static screening stopped at its time share ({share}): "
            f"{plural(unscreened, 'flag value')} not screened {'is' if unscreened == 1 else 'are'} searched unscreened"
        )
    unscanned = [_unit_name(entries[i]) for i, d in enumerate(cells.digests) if d is None] if cached else []
    if unscanned:
        notes.append(
            f"note: the screening cache leaves out {plural(len(unscanned), 'file')} whose includes could not be "
            f"listed (the compiler's -M scan failed): {', '.join(unscanned[:3])}{' ...' if len(unscanned) > 3 else ''}"
        )
    if cells.problem:
        notes.append(f"note: the screening cache could not be used ({cells.problem}); outcomes are not kept")
    return notes


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


def prepare_cuda_space(  # noqa: C901, PLR0912, PLR0915 (issue 53: to split)
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
    space, probe_notes = probe_space(space, nvcc_path, cuda_arch, default_cache_path(build_dir, nvcc_path), jobs)
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
        cache = None
        try:
            cache = ScreenCache.in_dir(cache_dir or user_cache_dir())
        except (sqlite3.Error, OSError) as exc:
            notes.append(f"note: the screening cache could not be opened ({exc}); every value is compiled")
        seconds = None if time_limit is None else SCREEN_SHARE * time_limit
        try:
            result = screen(
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
        else:
            space = result.space
            notes += result.notes
            if candidates is not None and candidates.files:
                candidates, acf_note = _acf_screened(candidates, result)
                space, leading = spills_first(space, result)
                notes.append(acf_note + (f"; the {leading} that cut spill bytes are measured first" if leading else ""))
    if entries:  # a build mode, not a compile flag: after the screening, never screened
        decided = decisions or ApplyDecisions.parse({}, "(none)")
        refusal = decided.device_lto_refusal
        if device_lto and not refusal and decided.relocatable:
            linked = probe_device_lto(nvcc_path, cuda_arch, default_cache_path(build_dir, nvcc_path))
            if not linked.ok:
                refusal = f"a device link with -dlto fails with this toolkit ({linked.message})"
        space, lto_notes = add_device_lto_dimension(
            space, project_flags(entries), device_lto, refusal, decided.relocatable
        )
        notes += lto_notes
    return CudaSpace(space=space, notes=tuple(notes), screen=result, probe_seconds=probe_seconds, acf=candidates)


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
