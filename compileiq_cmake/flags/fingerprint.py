"""Device-code fingerprints: per function, the sha256 of its machine code (the instruction words of its
`.text` section with their scheduling bits, and its relocations, from `cuobjdump -elf`; never the whole
cubin, whose notes embed the ptxas command line and the source path) and its resources (cuobjdump
-res-usage). Works on a cubin, an object, a static library or an executable; needs no nvdisasm."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import site
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..model.errors import CompileIQError

_PYPI_DISTS = ("nvidia-cuda-cuobjdump",)
_ARCH = re.compile(r"^\s*arch = (sm_\w+)")
_ELF_ARCH = re.compile(r"^\d+-bit ELF: .*\bsm=(\d+\w*)")
_RES_FUNCTION = re.compile(r"^\s*Function (\S+):\s*$")
_RES_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_NO_DEVICE_CODE = re.compile(r"does not contain device code|no device code|not a valid|No such", re.I)


@dataclass(frozen=True)
class KernelFingerprint:
    name: str  # "sm_90:<mangled function name>" (a repeat gets "#2", "#3", ...)
    sass_sha256: str  # the function's machine code (parse_elf); the name is the stored key's
    registers: int = 0
    stack_bytes: int = 0  # spills live on the stack / in local memory
    local_bytes: int = 0
    shared_bytes: int = 0
    instructions: int = 0

    @property
    def spill_bytes(self) -> int:
        return self.stack_bytes + self.local_bytes


@dataclass(frozen=True)
class DeviceFingerprint:
    kernels: tuple[KernelFingerprint, ...]  # sorted by name
    digest: str

    @staticmethod
    def of(kernels: list[KernelFingerprint] | tuple[KernelFingerprint, ...]) -> DeviceFingerprint:
        ordered = tuple(sorted(kernels, key=lambda k: k.name))
        h = hashlib.sha256()
        for k in ordered:
            h.update(f"{k.name}\0{k.sass_sha256}\n".encode())
        return DeviceFingerprint(kernels=ordered, digest=h.hexdigest())

    @staticmethod
    def combine(parts: list[DeviceFingerprint]) -> DeviceFingerprint:
        """One fingerprint for several files (e.g. every object of a target)."""
        return DeviceFingerprint.of([k for p in parts for k in p.kernels])

    def kernel(self, name: str) -> KernelFingerprint | None:
        return next((k for k in self.kernels if k.name == name), None)


def _candidates(tool: str, nvcc_path: str | None) -> list[Path]:
    out: list[Path] = []
    if nvcc_path:
        for p in (Path(nvcc_path), Path(nvcc_path).resolve()):
            out.append(p.parent / tool)
    found = shutil.which(tool)
    if found:
        out.append(Path(found))
    for dist in _PYPI_DISTS:
        try:
            files = importlib.metadata.distribution(dist).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        out.extend(
            Path(str(importlib.metadata.distribution(dist).locate_file(f)))
            for f in files
            if f.name == tool and f.parent.name == "bin"
        )
    roots = [*sys.path, *site.getsitepackages(), site.getusersitepackages()]
    for root in roots:
        base = Path(root) / "nvidia"
        if base.is_dir():
            out.extend(sorted(base.glob(f"*/bin/{tool}")))
    return out


def find_tool(tool: str, nvcc_path: str | None = None) -> Path | None:
    """The toolkit's `tool` next to nvcc, else on PATH, else inside a PyPI nvidia-cuda-* package."""
    for p in _candidates(tool, nvcc_path or shutil.which("nvcc")):
        if p.is_file() and os.access(p, os.X_OK):
            return p.resolve()
    return None


def find_cuobjdump(nvcc_path: str | None = None) -> Path:
    found = find_tool("cuobjdump", nvcc_path)
    if found is None:
        raise CompileIQError("cuobjdump not found (the CUDA toolkit lacks it); pip install nvidia-cuda-cuobjdump")
    return found


def run_cuobjdump(cuobjdump: Path, option: str, path: Path) -> str | None:
    proc = subprocess.run(
        [str(cuobjdump), *option.split(), str(path)], capture_output=True, text=True, check=False, timeout=600
    )
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip()
        if _NO_DEVICE_CODE.search(message) and path.is_file():
            return None
        raise CompileIQError(
            f"cuobjdump {option} {path} failed: {message.splitlines()[0] if message else proc.returncode}"
        )
    return proc.stdout


def unique_name(name: str, seen: dict[str, int]) -> str:
    seen[name] = seen.get(name, 0) + 1
    return name if seen[name] == 1 else f"{name}#{seen[name]}"


def _section_name(line: str) -> str | None:
    """The section a line of `cuobjdump -elf` opens (".text._Z1kv"), or None for any other line."""
    if not line.startswith("."):
        return None
    name = line[len(".section ") :] if line.startswith(".section ") else line
    return name.split("\t", 1)[0].split(" ", 1)[0].strip() or None


class _ElfFunctions:
    """parse_elf's state: the section being read, the functions of the ELF being read, those found before."""

    def __init__(self) -> None:
        self.out: list[tuple[str, str, int]] = []
        self.seen: dict[str, int] = {}
        self.arch = ""
        self.section: str | None = None
        self.lines: list[str] = []
        self.texts: dict[str, list[str]] = {}  # this ELF's functions, in order, with their code lines
        self.relas: dict[str, list[str]] = {}

    def open(self, section: str | None) -> None:
        """The section before ends; `section` (None: none, e.g. a resource-usage line) begins."""
        self.close_section()
        self.section, self.lines = section, []

    def close_section(self) -> None:
        section, lines = self.section, self.lines
        if section is not None and section.startswith(".text."):
            self.texts[section[len(".text.") :]] = [ln for ln in lines if ln]
        elif section is not None and section.startswith(".rela.text."):
            self.relas[section[len(".rela.text.") :]] = sorted(ln for ln in lines if ln)  # listed in no fixed order

    def close_elf(self) -> None:
        self.close_section()
        for name, code in self.texts.items():
            words = sum(len(ln.split()) for ln in code if ln.startswith("0x"))
            digest = hashlib.sha256("\n".join([*code, "rela", *self.relas.get(name, [])]).encode()).hexdigest()
            self.out.append((unique_name(f"{self.arch}:{name}", self.seen), digest, words // 4))  # 128-bit instructions
        self.texts.clear()
        self.relas.clear()


def parse_elf(text: str) -> list[tuple[str, str, int]]:
    """(key "sm_90:<function>", sha256 of its machine code, instruction count) per function of a
    `cuobjdump -elf` dump, in output order. A function's code is its `.text.<function>` words (the
    instruction encodings with their scheduling bits, which the SASS text does not show) and its relocations
    (`.rela.text.<function>`: what the code calls or reads); headers, the symbol table and the notes (which
    hold the ptxas command line and the source path) are not part of it."""
    elf = _ElfFunctions()
    for raw in text.splitlines():
        if raw.startswith(("Fatbin ", "member ")):
            elf.close_elf()
            elf.arch, elf.section, elf.lines = "", None, []
            continue
        m_arch = _ARCH.match(raw) or (None if elf.arch else _ELF_ARCH.match(raw))  # a bare cubin has no header
        if m_arch and elf.section is None:
            elf.arch = m_arch.group(1) if m_arch.re is _ARCH else f"sm_{m_arch.group(1)}"
            continue
        name = _section_name(raw)
        if name is not None:
            elf.open(name)
        elif _RES_FUNCTION.match(raw) or raw.startswith("Resource usage"):
            elf.open(None)
        elif elf.section is not None:
            elf.lines.append(re.sub(r"\s+", " ", raw.strip()))
    elf.close_elf()
    return elf.out


def parse_res_usage(text: str, default_arch: str) -> dict[str, dict[str, int]]:
    """key -> {"REG":..., "STACK":..., "SHARED":..., "LOCAL":...} per function, keys as in parse_elf."""
    out: dict[str, dict[str, int]] = {}
    seen: dict[str, int] = {}
    arch, name = default_arch, None
    for raw in text.splitlines():
        m_arch = _ARCH.match(raw)
        if m_arch:
            arch = m_arch.group(1)
            continue
        m_func = _RES_FUNCTION.match(raw)
        if m_func:
            name = unique_name(f"{arch}:{m_func.group(1)}", seen)
            continue
        if name is not None and "REG:" in raw:
            out[name] = {k: int(v) for k, v in _RES_FIELD.findall(raw)}
            name = None
    return out


def fingerprint(path: Path | str, nvcc_path: str | None = None, arch: str = "") -> DeviceFingerprint:
    """The device-code fingerprint of a cubin, object, static library or executable; an empty one (the
    digest of nothing) when the file holds no device code. `arch` ("90"): only that architecture's code,
    the code a tune measures; all architectures when the file holds no code for it. One `cuobjdump -elf
    -res-usage` run, no disassembly: the SASS through nvdisasm took 0.3 s per object, the ELF dump 7 ms."""
    path = Path(path)
    if not path.is_file():
        raise CompileIQError(f"cannot fingerprint {path}: no such file")
    cuobjdump = find_cuobjdump(nvcc_path)
    dump = run_cuobjdump(cuobjdump, f"-arch sm_{arch} -elf -res-usage", path) if arch else None
    functions = parse_elf(dump) if dump else []
    if not functions:
        dump = run_cuobjdump(cuobjdump, "-elf -res-usage", path)
        if dump is None:
            return DeviceFingerprint.of([])
        functions = parse_elf(dump)
    archs = {key.split(":", 1)[0] for key, _, _ in functions}
    resources = parse_res_usage(dump or "", next(iter(archs)) if len(archs) == 1 else "")
    kernels = []
    for key, digest, count in functions:
        res = resources.get(key, {})
        kernels.append(
            KernelFingerprint(
                name=key,
                sass_sha256=digest,
                registers=res.get("REG", 0),
                stack_bytes=res.get("STACK", 0),
                local_bytes=res.get("LOCAL", 0),
                shared_bytes=res.get("SHARED", 0),
                instructions=count,
            )
        )
    return DeviceFingerprint.of(kernels)


class FingerprintCache:
    """Fingerprints of several files at once (a target's object files), in parallel, each file's by its
    content: an object that did not change since it was last seen is not dumped again. One per tune."""

    def __init__(self, nvcc_path: str | None, jobs: int | None = None, arch: str = "") -> None:
        self.nvcc_path = nvcc_path
        self.arch = arch  # the tuned architecture ("90"): only its code is read
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self._by_content: dict[str, DeviceFingerprint] = {}

    def _one(self, path: Path) -> DeviceFingerprint:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        found = self._by_content.get(digest)
        if found is None:
            found = fingerprint(path, self.nvcc_path, self.arch)
            self._by_content[digest] = found
        return found

    def combined(self, paths: list[Path] | tuple[Path, ...]) -> DeviceFingerprint:
        """One fingerprint of the device code in `paths` (missing files raise CompileIQError)."""
        if len(paths) <= 1:
            return DeviceFingerprint.combine([self._one(Path(p)) for p in paths])
        with ThreadPoolExecutor(max_workers=min(self.jobs, len(paths))) as pool:
            return DeviceFingerprint.combine(list(pool.map(lambda p: self._one(Path(p)), paths)))
