"""Probe a flag space against the installed nvcc: one tiny compile to cubin per flag value (in parallel);
a value that nvcc rejects, or that a tool warns it ignores, is dropped with a note. Results are cached in a
JSON file of the user cache directory keyed by the nvcc path and version (default_cache_path)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..model.errors import CompileIQError
from .space import FlagSpace

PROBE_KERNEL = r"""
__device__ __noinline__ float probe_helper(float x) { return x > 0.f ? sqrtf(x) : -x; }
__global__ void probe_kernel(const float* a, const float* b, float* c, int n, int mode) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += a[(i + k) % n] / (b[k] + 1.f);
  switch (mode) {
    case 0: acc = probe_helper(acc); break;
    case 1: acc *= 2.f; break;
    case 2: acc = sqrtf(acc); break;
    default: acc -= 1.f;
  }
  if (i < n) c[i] = acc;
}
"""
_IGNORED = re.compile(
    r"(?i)unknown|unrecogni[sz]ed|ignor|not supported|invalid|out of valid range|did you mean|conflicting"
)


@dataclass(frozen=True)
class ProbeOutcome:
    ok: bool
    message: str = ""  # the first telling stderr line when not ok


def nvcc_version(nvcc_path: str) -> str:
    """ "13.0.88" from `nvcc --version`."""
    try:
        out = subprocess.run([nvcc_path, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except OSError as exc:
        raise CompileIQError(f"cannot run nvcc at {nvcc_path}: {exc}") from None
    m = re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    if not m:
        raise CompileIQError(f"{nvcc_path} --version printed no CUDA version; is it nvcc?")
    return m.group(1)


def ptxas_version(nvcc_path: str) -> str:
    """The version of the ptxas nvcc runs (the one beside it, as nvcc.profile says; "13.3.73"): what Advanced
    Control Files are made for. nvcc's own version when that ptxas cannot be asked."""
    for ptxas in (Path(nvcc_path).parent / "ptxas", Path(nvcc_path).resolve().parent / "ptxas"):
        try:
            out = subprocess.run(
                [str(ptxas), "--version"], capture_output=True, text=True, timeout=60, check=False
            ).stdout
        except OSError:
            continue
        m = re.search(r"V(\d+\.\d+\.\d+)", out)
        if m:
            return m.group(1)
    return nvcc_version(nvcc_path)


def _compile(nvcc: str, arch: str, source: Path, out: Path, tokens: tuple[str, ...]) -> tuple[int, list[str]]:
    cmd = [nvcc, f"-arch=sm_{arch}", "-cubin", "-o", str(out), str(source), *tokens]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        return 124, ["probe compile timed out"]
    lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
    return proc.returncode, lines


def _outcome(rc: int, lines: list[str], baseline_lines: set[str]) -> ProbeOutcome:
    new = [ln for ln in lines if ln not in baseline_lines]
    if rc != 0:
        telling = next((ln for ln in new if re.search(r"(?i)fatal|error", ln)), new[0] if new else f"exit status {rc}")
        return ProbeOutcome(ok=False, message=telling[:300])
    ignored = next((ln for ln in new if _IGNORED.search(ln)), None)
    if ignored:
        return ProbeOutcome(ok=False, message=ignored[:300])
    return ProbeOutcome(ok=True)


def _load_cache(path: Path | None, key: str) -> dict[str, dict[str, Any]]:
    if path is None or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data.get("results", {}) if data.get("key") == key else {}


def _store_cache(path: Path | None, key: str, nvcc: str, version: str, results: dict[str, dict[str, Any]]) -> None:
    """Adds `results` to the cache file, under a lock: every tune and build tree of the user shares it (two
    tunes probing at once keep both their outcomes). A cache directory that cannot be written (a read-only
    home) keeps nothing: the probes are compiled again next time, with the same outcomes."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = {**_load_cache(path, key), **results}
            tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
            doc = {"key": key, "nvcc": nvcc, "version": version, "results": merged}
            tmp.write_text(json.dumps(doc, indent=1, sort_keys=True))
            os.replace(tmp, path)
    except OSError:
        return


def probe_values(
    values: list[tuple[str, ...]],
    nvcc_path: str,
    arch: str,
    cache_path: Path | None = None,
    jobs: int | None = None,
) -> dict[tuple[str, ...], ProbeOutcome]:
    """ProbeOutcome per flag value (tuple of tokens), compiled against the probe kernel for sm_<arch>."""
    nvcc = str(Path(nvcc_path).resolve())
    version = nvcc_version(nvcc)
    key = f"{nvcc}|{version}"
    cached = _load_cache(cache_path, key)
    out: dict[tuple[str, ...], ProbeOutcome] = {}
    todo: list[tuple[str, ...]] = []
    for v in dict.fromkeys(values):
        entry = cached.get(f"sm_{arch}|" + " ".join(v))
        if entry is not None:
            out[v] = ProbeOutcome(ok=bool(entry["ok"]), message=str(entry.get("message", "")))
        else:
            todo.append(v)
    if todo:
        with tempfile.TemporaryDirectory(prefix="compileiq-probe-") as tmp:
            src = Path(tmp) / "probe.cu"
            src.write_text(PROBE_KERNEL)
            rc, base_lines = _compile(nvcc, arch, src, Path(tmp) / "base.cubin", ())
            if rc != 0:
                raise CompileIQError(
                    f"nvcc cannot compile a probe kernel for sm_{arch}: {base_lines[0] if base_lines else rc}"
                )
            with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
                runs = list(
                    pool.map(
                        lambda iv: _compile(nvcc, arch, src, Path(tmp) / f"v{iv[0]}.cubin", iv[1]), enumerate(todo)
                    )
                )
        for v, (rc, lines) in zip(todo, runs, strict=True):
            out[v] = _outcome(rc, lines, set(base_lines))
            cached[f"sm_{arch}|" + " ".join(v)] = {"ok": out[v].ok, "message": out[v].message}
        _store_cache(cache_path, key, nvcc, version, cached)
    return out


DEVICE_LINK_KEY = "device-lto-link"


def probe_device_lto(nvcc_path: str, arch: str, cache_path: Path | None = None) -> ProbeOutcome:
    """Whether device LTO builds with this toolkit: the probe kernel compiled as relocatable code with LTO IR
    beside its machine code (as cmake/CompileIQ.cmake's _compileiq_device_lto compiles), then a device link
    with -dlto (which needs the toolkit's libnvvm at the link). Cached with the flag probes."""
    nvcc = str(Path(nvcc_path).resolve())
    version = nvcc_version(nvcc)
    key = f"{nvcc}|{version}"
    cached = _load_cache(cache_path, key)
    name = f"sm_{arch}|{DEVICE_LINK_KEY}"
    if name in cached:
        return ProbeOutcome(ok=bool(cached[name]["ok"]), message=str(cached[name].get("message", "")))
    with tempfile.TemporaryDirectory(prefix="compileiq-probe-") as tmp:
        src, obj, linked = Path(tmp) / "probe.cu", Path(tmp) / "probe.o", Path(tmp) / "dlink.o"
        src.write_text(PROBE_KERNEL)
        steps = (
            [
                nvcc,
                "-rdc=true",
                f"--generate-code=arch=compute_{arch},code=[compute_{arch},sm_{arch}]",
                f"--generate-code=arch=compute_{arch},code=lto_{arch}",
                "-c",
                str(src),
                "-o",
                str(obj),
            ],
            [nvcc, "-dlink", "-dlto", f"-arch=sm_{arch}", str(obj), "-o", str(linked)],
        )
        outcome = ProbeOutcome(ok=True)
        for cmd in steps:
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
            except subprocess.TimeoutExpired:
                outcome = ProbeOutcome(ok=False, message=f"{' '.join(cmd[1:3])} timed out")
                break
            if proc.returncode != 0:
                lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
                outcome = ProbeOutcome(
                    ok=False, message=(lines[-1] if lines else f"exit status {proc.returncode}")[:300]
                )
                break
    cached[name] = {"ok": outcome.ok, "message": outcome.message}
    _store_cache(cache_path, key, nvcc, version, cached)
    return outcome


def probe_space(
    space: FlagSpace,
    nvcc_path: str,
    arch: str,
    cache_path: Path | None = None,
    jobs: int | None = None,
) -> tuple[FlagSpace, list[str]]:
    """The space without the values the installed nvcc rejects or ignores (dimensions left with no value
    removed), and one note per dropped value: "dropped <flag>: <first stderr line>"."""
    values = [v for d in space.dimensions for v in d.values[1:]]
    outcomes = probe_values(values, nvcc_path, arch, cache_path, jobs)
    notes: list[str] = []
    dims = []
    dropped = list(space.dropped)
    for d in space.dimensions:
        kept = [()] + [v for v in d.values[1:] if outcomes[v].ok]
        for v in d.values[1:]:
            if not outcomes[v].ok:
                notes.append(f"dropped {' '.join(v)}: {outcomes[v].message}")
        if len(kept) > 1:
            dims.append(replace(d, values=tuple(kept)))
        else:
            dropped.append(f"{d.name}: the installed nvcc accepts none of its values")
    return replace(space, dimensions=tuple(dims), dropped=tuple(dropped + notes)), notes


def default_cache_path(nvcc_path: str, cache_dir: Path | None = None) -> Path:
    """Where the probes of one nvcc are kept: the user cache directory's probe/ (`cache_dir`: another cache
    directory), one file per nvcc path, its contents keyed by the path and nvcc's version. What a toolkit
    accepts does not depend on the project, so every tune and build tree of the user reads the same file."""
    import hashlib

    digest = hashlib.sha256(str(Path(nvcc_path).resolve()).encode()).hexdigest()[:12]
    return (cache_dir or user_cache_dir()) / "probe" / f"nvcc-{digest}.json"


CACHE_DIR_VARIABLE = "COMPILEIQ_CACHE_DIR"  # overrides the user cache directory (tests, shared machines)


def user_cache_dir() -> Path:
    """The user's compileiq cache directory, shared by every tune and build tree: $COMPILEIQ_CACHE_DIR, else
    $XDG_CACHE_HOME/compileiq, else ~/.cache/compileiq (not created here)."""
    override = os.environ.get(CACHE_DIR_VARIABLE)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "compileiq"
