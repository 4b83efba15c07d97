"""The static screening itself (flags.screening's prepare_cuda_space and screen_target run it): the target's
nvcc commands rebuilt to cubins, once with the project's own flags and once per single flag value, each
value's device code compared with the baseline's and with the earlier values' of its dimension; the rows,
the screened space and the notes that say what it did."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..model.errors import CompileIQError
from ..model.wording import plural
from ..project.nvcc_command import tokens
from .catalogue import canonical_flags
from .fingerprint import DeviceFingerprint, KernelFingerprint
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
