"""Static screening, before any GPU time: re-run the tuned target's nvcc commands (from compile_commands.json)
to cubins, once for the project's own flags and once per single flag value, in parallel; drop every value
whose device code equals the baseline's (or an earlier value's of the same dimension) or that fails to
compile. No CMake involved: the commands run in their own directories."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from ..model.errors import CompileIQError
from .catalogue import canonical_flags
from .space import FlagSpace
from ..project.cmake_project import ApplyDecisions
from ..project.nvcc_command import project_flags, tokens
from ..model.wording import plural
from ..project.cmake_project import VariantSettings, VariantTree
from ..system.lock import TuneLock
from . import load_space
from .catalogue import adapt_to_project, add_acf_dimension, add_device_lto_dimension, device_lto_wanted
from .fingerprint import DeviceFingerprint, KernelFingerprint, find_tool, fingerprint
from .probe import default_cache_path, nvcc_version, probe_space

SAME_AS_BASELINE = "same device code as the project's own build"
# options that take the next token as their value when written without '='
_WITH_VALUE = {"-o", "--output-file", "-MT", "-MF", "-MQ", "--dependency-output", "-arch", "--gpu-architecture",
               "-gencode", "--generate-code", "-code", "--gpu-code"}
_DROP_ALONE = {"-c", "--compile", "-MD", "-MMD", "-MP", "-M", "-MM", "--generate-dependencies-with-compile",
               "--generate-nonsystem-dependencies-with-compile", "-dlto", "--dlink-time-opt"}
_ARCH_OPTS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code")
_OUTPUT_OPTS = ("-o", "--output-file", "-MT", "-MF", "-MQ", "--dependency-output")


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


@dataclass(frozen=True)
class ScreenResult:
    space: FlagSpace  # the screened space (dimensions with no kept value removed)
    rows: tuple[ScreenRow, ...]
    seconds: float
    baseline: DeviceFingerprint
    compiles: int
    points_before: int

    @property
    def points_after(self) -> int:
        return self.space.size


def _arch_of_option(text: str) -> set[str]:
    return set(re.findall(r"(?:sm|compute|lto)_(\d+[a-z]?)", text))


def cubin_command(command: list[str], out: Path, cuda_arch: str, flags: tuple[str, ...]) -> list[str]:
    """The project's nvcc command rewritten to write one cubin for sm_<cuda_arch> with `flags` appended:
    -c, -o, dependency-file and architecture options removed, -dc turned into -rdc=true."""
    kept: list[str] = []
    archs: set[str] = set()
    skip = False
    for i, tok in enumerate(command):
        if skip:
            skip = False
            continue
        if i == 0:
            kept.append(tok)
            continue
        name = tok.split("=", 1)[0]
        if tok in _DROP_ALONE:
            continue
        if tok in ("-dc", "--device-c"):
            kept.append("-rdc=true")
            continue
        if name in _ARCH_OPTS or name in _OUTPUT_OPTS:
            value = tok.split("=", 1)[1] if "=" in tok else (command[i + 1] if i + 1 < len(command) else "")
            skip = "=" not in tok
            if name in _ARCH_OPTS:
                archs |= _arch_of_option(value)
            continue
        if tok.startswith("-o") and len(tok) > 2 and not tok.startswith("--"):
            continue
        kept.append(tok)
    if not cuda_arch:
        real = {a for a in archs}
        if len(real) != 1:
            raise CompileIQError(f"cannot tell which CUDA architecture to screen for ({sorted(real) or 'none'}); give --cuda-arch")
        cuda_arch = real.pop()
    return [*kept, f"-arch=sm_{cuda_arch}", "-cubin", "-o", str(out), *flags]


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"(?i)\berror\b|fatal", ln):
            return ln[:300]
    return lines[0][:300] if lines else "compile failed"


def _build(entries: list[dict], work: Path, cuda_arch: str, flags: tuple[str, ...], nvcc: str | None) -> tuple[DeviceFingerprint | None, str]:
    """Compile every file of the target to cubins in `work` and fingerprint them; (None, error) on failure."""
    work.mkdir(parents=True, exist_ok=True)
    parts = []
    for j, entry in enumerate(entries):
        out = work / f"f{j}.cubin"
        cmd = cubin_command(tokens(entry), out, cuda_arch, flags)
        try:
            proc = subprocess.run(cmd, cwd=entry.get("directory") or None, capture_output=True, text=True, timeout=900, check=False)
        except subprocess.TimeoutExpired:
            return None, "compile timed out after 900 s"
        except OSError as exc:
            return None, f"cannot run {cmd[0]}: {exc}"
        if proc.returncode != 0 or not out.is_file():
            return None, _first_error(proc.stderr + proc.stdout)
        parts.append(fingerprint(out, nvcc))
    return DeviceFingerprint.combine(parts), ""


def _deltas(base: DeviceFingerprint, new: DeviceFingerprint) -> tuple[KernelDelta, ...]:
    empty = KernelFingerprint(name="", sass_sha256="")
    names = sorted({k.name for k in base.kernels} | {k.name for k in new.kernels})
    out = []
    for name in names:
        b, n = base.kernel(name) or empty, new.kernel(name) or empty
        if b.sass_sha256 != n.sass_sha256:
            out.append(KernelDelta(kernel=name, registers=(b.registers, n.registers),
                                   spill_bytes=(b.spill_bytes, n.spill_bytes), instructions=(b.instructions, n.instructions)))
    return tuple(out)


def screen(
    space: FlagSpace, compile_commands: list[dict], cuda_arch: str, jobs: int | None = None, cache_dir: Path | None = None,
) -> ScreenResult:
    """Screen every single flag value of `space` against the project's own build of the target's CUDA sources
    (`compile_commands`: their entries, whatever the files' suffixes)."""
    started = time.perf_counter()
    entries = list(compile_commands)
    if not entries:
        raise CompileIQError("the target has no CUDA compile commands in compile_commands.json; nothing to screen")
    nvcc = tokens(entries[0])[0]
    values = [(d.name, v) for d in space.dimensions for v in d.values[1:]]
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="screen-", dir=cache_dir))
    try:
        jobs = jobs or os.cpu_count() or 1
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            base_future = pool.submit(_build, entries, work / "baseline", cuda_arch, (), nvcc)
            futures = [pool.submit(_build, entries, work / f"v{i}", cuda_arch, canonical_flags(v), nvcc)
                       for i, (_, v) in enumerate(values)]
            baseline, error = base_future.result()
            if baseline is None:
                raise CompileIQError(f"the project's own nvcc command fails when rebuilt to a cubin: {error}")
            results = [f.result() for f in futures]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows: list[ScreenRow] = []
    seen: dict[tuple[str, str], tuple[str, ...]] = {}  # (dimension, digest) -> first value with that code
    for (dim, value), (fp, error) in zip(values, results):
        if fp is None:
            rows.append(ScreenRow(dimension=dim, value=value, kept=False, reason=f"does not compile: {error}"))
        elif fp.digest == baseline.digest:
            rows.append(ScreenRow(dimension=dim, value=value, kept=False, reason=SAME_AS_BASELINE, digest=fp.digest))
        elif (dim, fp.digest) in seen:
            rows.append(ScreenRow(dimension=dim, value=value, kept=False, digest=fp.digest,
                                  reason=f"same device code as {' '.join(seen[(dim, fp.digest)])}",
                                  effects=_deltas(baseline, fp)))
        else:
            seen[(dim, fp.digest)] = value
            effects = _deltas(baseline, fp)
            rows.append(ScreenRow(dimension=dim, value=value, kept=True, digest=fp.digest, effects=effects,
                                  reason=f"changes the code of {plural(len(effects), 'function')}"))
    kept_values = {(r.dimension, r.value) for r in rows if r.kept}
    dims, dropped = [], list(space.dropped)
    for d in space.dimensions:
        values_kept = tuple(v for v in d.values if not v or (d.name, v) in kept_values)
        if len(values_kept) > 1:
            dims.append(replace(d, values=values_kept))
        else:
            dropped.append(f"{d.name}: screening: no value changes the device code of this target")
    screened = replace(space, dimensions=tuple(dims), dropped=tuple(dropped))
    return ScreenResult(space=screened, rows=tuple(rows), seconds=time.perf_counter() - started, baseline=baseline,
                        compiles=(len(values) + 1) * len(entries), points_before=space.size)


@dataclass(frozen=True)
class CudaSpace:
    """A CUDA target's flag space after the probe, the adaptation to the project's own flags, the ACF
    dimension and static screening, with what each step said (a step that could not run says why)."""

    space: FlagSpace
    notes: tuple[str, ...]
    screen: ScreenResult | None  # None: screening did not run (a note says why)
    probe_seconds: float


def prepare_cuda_space(
    space: FlagSpace, entries: list[dict], nvcc_path: str, cuda_arch: str, build_dir: Path, target: str,
    acf_files: tuple[Path, ...] = (), run_screen: bool = True, jobs: int | None = None,
    device_lto: bool = False, decisions: ApplyDecisions | None = None,
) -> CudaSpace:
    """`entries`: the compile commands of the target's CUDA sources (by CMake's language, not by suffix).
    `device_lto`: whether the device_lto dimension may be offered; `decisions`: the CMake module's own decisions
    for the target (VariantTree.decisions: whether the apply accepts device LTO); none: device LTO not offered."""
    notes: list[str] = []
    started = time.perf_counter()
    space, probe_notes = probe_space(space, nvcc_path, cuda_arch, default_cache_path(build_dir, nvcc_path), jobs)
    probe_seconds = time.perf_counter() - started
    notes += probe_notes
    if entries:
        space, adapt_notes = adapt_to_project(space, project_flags(entries))
        notes += adapt_notes
    else:
        notes.append(f"note: no CUDA compile command of {target} in compile_commands.json: its own nvcc flags were not "
                     "read (adaptation skipped) and static screening is skipped")
    space, acf_notes = add_acf_dimension(space, list(acf_files), nvcc_version(nvcc_path))
    notes += acf_notes
    result = None
    if not run_screen:
        notes.append("note: static screening is off (--no-screen): every value of the space is searched")
    elif entries and (find_tool("cuobjdump", nvcc_path) is None or find_tool("nvdisasm", nvcc_path) is None):
        notes.append("note: static screening skipped: cuobjdump/nvdisasm not found "
                     "(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    elif entries:
        try:
            result = screen(space, entries, cuda_arch, jobs=jobs or os.cpu_count(), cache_dir=build_dir / "compileiq")
        except CompileIQError as exc:
            notes.append(f"note: static screening skipped: {exc}")
        else:
            space = result.space
    if entries:  # a build mode, not a compile flag: after the screening, never screened
        decided = decisions or ApplyDecisions.parse({}, "(none)")
        space, lto_notes = add_device_lto_dimension(space, project_flags(entries), device_lto,
                                                    decided.device_lto_refusal, decided.relocatable)
        notes += lto_notes
    return CudaSpace(space=space, notes=tuple(notes), screen=result, probe_seconds=probe_seconds)


@dataclass(frozen=True)
class TargetScreen:
    """What `compileiq-cmake space --target T` prints: the screened space of one target and how it came about."""

    target: str
    cuda_arch: str
    compiler: str  # "NVIDIA 13.0.88"
    result: ScreenResult
    notes: tuple[str, ...]
    probe_seconds: float


def screen_target(
    source_dir: Path, build_dir: Path, target: str, cuda_arch: str = "", include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (), jobs: int | None = None, gpu_arch: Callable[[], str] | None = None,
) -> TargetScreen:
    """Configure the variant tree <build>/compileiq/worker-0 as tune does (under the tune lock), then
    catalogue -> probe -> project adaptation -> screening of the target's CUDA sources. `gpu_arch`: the
    architecture of this machine's GPU, asked when `cuda_arch` is empty (the caller's GPU query)."""
    with TuneLock(build_dir / "compileiq"):
        settings, notes = VariantSettings.from_user_tree(source_dir, build_dir, cuda_arch)
        tree = VariantTree(build_dir / "compileiq", "worker-0", settings.cmake, settings.config)
        if cuda_arch:
            tree.write_flags(target, "CUDA", cuda_arch, ())
        model = tree.configure(settings, target, "CUDA" if cuda_arch else "")
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
            settings = replace(settings, cuda_arch=cuda_arch)
            tree.write_flags(target, "CUDA", cuda_arch, ())
            tree.configure(settings, target, "CUDA")
        commands = tree.compile_commands(tgt.sources_in("CUDA"))
        if not commands:
            raise CompileIQError(f"no compile command of a CUDA source of '{target}' in compile_commands.json")
        space = load_space("nvcc", toolchain.compiler_id, toolchain.version, include, exclude, arch=cuda_arch)
        prepared = prepare_cuda_space(space, commands, toolchain.path, cuda_arch, build_dir, target, jobs=jobs,
                                      device_lto=device_lto_wanted(include, exclude), decisions=tree.decisions())
    if prepared.screen is None:
        raise CompileIQError(next((n.removeprefix("note: ") for n in prepared.notes if "screening" in n),
                                  "static screening did not run"))
    return TargetScreen(target=target, cuda_arch=cuda_arch, compiler=f"{toolchain.compiler_id} {toolchain.version}",
                        result=prepared.screen, notes=tuple(notes) + prepared.notes, probe_seconds=prepared.probe_seconds)


def format_screen(ts: TargetScreen, notes: bool = True) -> list[str]:
    """The screened space as `space --target` lists it; `notes`: its notes too (else the caller says them)."""
    r = ts.result
    lines = [
        f"{ts.target} (CUDA sm_{ts.cuda_arch}, {ts.compiler}): screened flag space {plural(len(r.space.dimensions), 'dimension')}, "
        f"{plural(r.points_after, 'point')} (before screening {r.points_before}); {plural(r.compiles, 'compile')} in {r.seconds:.1f} s "
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
        lines.append(f"  {state} {row.dimension:<22} {' '.join(row.value):<36} {row.reason}{'  [' + effects + ']' if effects and row.kept else ''}")
    for note in ts.notes if notes else ():
        lines.append(f"  note: {note}")
    return lines
