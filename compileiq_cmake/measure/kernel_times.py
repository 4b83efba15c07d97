"""Where the GPU time of a benchmark run goes, per kernel and per translation unit.

Method: a small CUPTI activity collector (cupti/kernel_times.c), built here against the toolkit's CUPTI and
loaded into the benchmark by the CUDA driver through CUDA_INJECTION64_PATH, so any CUDA program is measured
without rebuilding it. Why CUPTI: Nsight Systems writes no report on the H200 machine; ncu serializes the
kernels and replays each one (minutes for a real benchmark), while the activity API records every kernel's
GPU start/end timestamps as the program runs, at a few microseconds per launch. The shares were checked
against ncu once (docs/benchmarks/more-speed.md).

Kernels are mapped to translation units through the device code of each object file (the per-object
fingerprints list the kernels each object defines).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..model.errors import CompileIQError

_SOURCE = Path(__file__).resolve().parent / "cupti" / "kernel_times.c"
HEADER = "# compileiq kernel times v1"
ENV_FILE = "COMPILEIQ_KERNEL_TIMES"


@dataclass(frozen=True)
class KernelTime:
    name: str  # as the CUDA driver reports it (mangled)
    launches: int
    ns: int


@dataclass(frozen=True)
class FileShare:
    path: str  # the source file, relative to the source directory
    ns: int
    share: float  # of all kernel time of the run
    kernels: tuple[str, ...]


def toolkit_root(nvcc_path: str) -> Path:
    """The CUDA toolkit's directory as nvcc itself says (TOP in its dry run: nvcc may be a wrapper script
    elsewhere); next to nvcc's bin/ when it does not say."""
    try:
        proc = subprocess.run(
            [nvcc_path, "-dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        m = re.search(r"^#\$ TOP=(.+)$", proc.stderr + proc.stdout, flags=re.MULTILINE)
        if m:
            return Path(m.group(1).strip()).resolve()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return Path(nvcc_path).resolve().parent.parent


def _toolkit_dirs(nvcc_path: str) -> tuple[list[Path], list[Path]]:
    root = toolkit_root(nvcc_path)
    includes = [
        root / "include",
        root / "extras" / "CUPTI" / "include",
        root / "targets" / "x86_64-linux" / "include",
        root / "targets" / "sbsa-linux" / "include",
    ]
    libs = [
        root / "lib64",
        root / "lib",
        root / "extras" / "CUPTI" / "lib64",
        root / "targets" / "x86_64-linux" / "lib",
        root / "targets" / "sbsa-linux" / "lib",
    ]
    return includes, libs


def build_collector(nvcc_path: str, work_dir: Path, compiler: str = "cc") -> Path:
    """The collector library, built once per toolkit and source (cached in `work_dir`); CompileIQError
    when the toolkit has no CUPTI or the build fails (the message says which)."""
    includes, libs = _toolkit_dirs(nvcc_path)
    include = next((d for d in includes if (d / "cupti.h").is_file() and (d / "cuda.h").is_file()), None)
    if include is None:
        include = next((d for d in includes if (d / "cupti.h").is_file()), None)
    lib = next((d for d in libs if (d / "libcupti.so").exists()), None)
    if include is None or lib is None:
        raise CompileIQError(
            f"the CUDA toolkit of {nvcc_path} has no CUPTI (cupti.h and libcupti.so under "
            f"{toolkit_root(nvcc_path)}): per-kernel times cannot be measured"
        )
    extra = [f"-I{d}" for d in includes if d != include and (d / "cuda.h").is_file()][:1]
    key = hashlib.sha256(_SOURCE.read_bytes() + f"{include}|{lib}".encode()).hexdigest()[:16]
    out = work_dir / f"kernel_times-{key}.so"
    if out.is_file():
        return out
    work_dir.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    cmd = [
        compiler,
        "-shared",
        "-fPIC",
        "-O2",
        f"-I{include}",
        *extra,
        str(_SOURCE),
        f"-L{lib}",
        "-lcupti",
        f"-Wl,-rpath,{lib}",
        "-o",
        str(tmp),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileIQError(f"building the CUPTI collector failed: {exc}") from None
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise CompileIQError(f"building the CUPTI collector failed ({' '.join(cmd)}): {last[0]}")
    os.replace(tmp, out)
    return out


def injection_env(collector: Path, times_file: Path) -> dict[str, str]:
    return {"CUDA_INJECTION64_PATH": str(collector), ENV_FILE: str(times_file)}


def run_with_collector(runner, tree, workload, collector: Path, times_file: Path):
    """One run of the benchmark (`runner.run(tree, workload)`, measure.Runner) with the collector loaded:
    (the run's RunResult, its kernel times). CompileIQError when the run fails or wrote no usable times."""
    times_file.parent.mkdir(parents=True, exist_ok=True)
    times_file.unlink(missing_ok=True)
    result = runner.with_env(injection_env(collector, times_file)).run(tree, workload)
    if not result.ok:
        raise CompileIQError(f"the run with the CUPTI collector failed: {result.reason}")
    return result, read_times(times_file)


def read_times(path: Path) -> tuple[KernelTime, ...]:
    """The collector's file; CompileIQError when it is missing (the program never reached exit), has no
    header, or says its records were incomplete."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        raise CompileIQError(
            "the benchmark run wrote no kernel times (it did not exit normally, or the CUDA "
            "driver did not load the CUPTI collector)"
        ) from None
    if not lines or not lines[0].startswith(HEADER):
        raise CompileIQError(f"{path} is not a kernel-times file")
    if "incomplete" in lines[0]:
        raise CompileIQError("the CUPTI collector lost records (buffer full or out of memory)")
    out = []
    for line in lines[1:]:
        parts = line.split("\t", 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            out.append(KernelTime(parts[2], int(parts[0]), int(parts[1])))
    return tuple(sorted(out, key=lambda k: -k.ns))


def file_shares(
    times: tuple[KernelTime, ...], kernels_of: dict[str, tuple[str, ...]]
) -> tuple[tuple[FileShare, ...], float]:
    """Per source file (kernels_of: path -> the kernels its object defines): the kernel time it holds and
    its share of all kernel time, largest first; and the share of time in kernels of no listed file
    (library kernels, or names the objects do not show)."""
    total = sum(k.ns for k in times) or 1
    owner = {name: path for path, names in kernels_of.items() for name in names}
    per_file: dict[str, list[KernelTime]] = {}
    unmapped = 0
    for k in times:
        path = owner.get(k.name)
        if path is None:
            unmapped += k.ns
        else:
            per_file.setdefault(path, []).append(k)
    shares = tuple(
        sorted(
            (
                FileShare(p, sum(k.ns for k in ks), sum(k.ns for k in ks) / total, tuple(k.name for k in ks))
                for p, ks in per_file.items()
            ),
            key=lambda s: -s.ns,
        )
    )
    return shares, unmapped / total


def choose_files(
    shares: tuple[FileShare, ...], most: int = 3, cover: float = 0.9, least: float = 0.1
) -> tuple[FileShare, ...]:
    """The files tuned separately: largest share first, each holding at least `least` of the kernel time,
    until `cover` of it is reached or `most` files are chosen. None when one file holds (nearly) all of it:
    its own flags would be the global ones."""
    chosen: list[FileShare] = []
    covered = 0.0
    for s in shares:
        if len(chosen) == most or covered >= cover or s.share < least:
            break
        chosen.append(s)
        covered += s.share
    if len([s for s in shares if s.share >= 0.02]) < 2:
        return ()
    return tuple(chosen)
