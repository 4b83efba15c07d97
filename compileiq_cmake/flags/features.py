"""Kernel features known before any GPU run (issue 23: what the learned prior reads): per function of the
project's own build, its SASS instruction mix, resources and an occupancy estimate, from one
`cuobjdump -sass -res-usage` per object (no nvdisasm); per target, how many kernels and translation units,
whether the code is relocatable, calls across files and the architecture.

`TargetFeatures.vector()` is the model's input: instruction-weighted shares of each class of instruction
over the target's functions (or time-weighted when the kernel-time collector measured shares), resource
summaries and the target facts, each a float with a fixed name (FEATURE_NAMES)."""

from __future__ import annotations

import math
import re
import subprocess
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..project.nvcc_command import tokens
from .fingerprint import find_cuobjdump, parse_res_usage, run_cuobjdump, unique_name
from .screen_compile import COMPILE_TIMEOUT, cubin_command

# SASS opcode (the mnemonic before its first ".") -> instruction class. Unlisted opcodes (moves, predicates,
# constants, uniform datapath, NOPs, exits) count towards the total only.
_CLASSES: dict[str, tuple[str, ...]] = {
    "fp32": (
        "FADD",
        "FMUL",
        "FFMA",
        "FMNMX",
        "FSET",
        "FSETP",
        "FSEL",
        "FCHK",
        "FSWZADD",
        "FADD32I",
        "FMUL32I",
        "FFMA32I",
    ),
    "fp64": ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "DSET"),
    "fp16": ("HADD2", "HMUL2", "HFMA2", "HSET2", "HSETP2", "HMNMX2", "HADD2_32I", "HMUL2_32I", "HFMA2_32I"),
    "mufu": ("MUFU",),
    "int": (
        "IADD3",
        "IMAD",
        "IMUL",
        "LOP3",
        "SHF",
        "SHL",
        "SHR",
        "ISETP",
        "IMNMX",
        "LEA",
        "IABS",
        "POPC",
        "FLO",
        "BREV",
        "PRMT",
        "SEL",
        "SGXT",
        "BMSK",
        "IDP",
        "VIADD",
        "VIMNMX",
        "IADD",
        "LOP",
        "IMAD32I",
        "IADD32I",
        "LOP32I",
        "VIADDMNMX",
        "VIMNMX3",
    ),
    "conv": ("F2F", "F2I", "I2F", "I2FP", "F2FP", "F2IP", "FRND", "I2I", "I2IP"),
    "ld_global": ("LDG", "LD"),
    "st_global": ("STG", "ST"),
    "shared": ("LDS", "STS", "LDSM", "STSM", "LDGSTS", "LDGDEPBAR"),
    "local": ("LDL", "STL"),
    "atomic": ("ATOM", "ATOMS", "ATOMG", "RED", "REDUX", "REDG"),
    "barrier": ("BAR", "MEMBAR", "SYNCS", "ARRIVES", "DEPBAR", "WARPSYNC"),
    "branch": ("BRA", "BRX", "JMP", "JMX", "BSSY", "BSYNC", "BREAK"),
    "call": ("CALL",),
    "tensor": ("HMMA", "IMMA", "HGMMA", "QGMMA", "IGMMA", "DMMA", "BMMA", "UTMALDG", "UTMASTG"),
    "shuffle": ("SHFL", "VOTE", "MATCH"),
}
_CLASS_OF = {op: cls for cls, ops in _CLASSES.items() for op in ops}
CLASS_NAMES = tuple(_CLASSES)
_FMA = {"FFMA", "DFMA", "HFMA2", "FFMA32I", "HFMA2_32I"}
_INSTR = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9] )?([A-Z][A-Z0-9_]*)")
_FUNCTION = re.compile(r"^\s+Function : (\S+)\s*$")
_CODE_FOR = re.compile(r"^\s*code for (sm_\w+)")
_FOREIGN_CALL = re.compile(r"CALL\.ABS|CALL\.REL(?!\.NOINC 0x)")

# The model's input, in this order (TargetFeatures.vector). Shares are of all instructions.
FEATURE_NAMES = (
    *(f"share_{c}" for c in CLASS_NAMES),
    "share_fma",
    "log2_instructions",
    "registers",
    "spills",
    "shared_kib",
    "occupancy",
    "log2_kernels",
    "log2_units",
    "relocatable",
    "cross_unit_calls",
)


@dataclass(frozen=True)
class KernelFeatures:
    """One device function of the build: "sm_90:<mangled name>" (keys as in fingerprint.parse_elf)."""

    name: str
    instructions: int
    mix: dict[str, int]  # class -> instructions (CLASS_NAMES, plus "fma")
    registers: int = 0
    spill_bytes: int = 0
    shared_bytes: int = 0
    calls_out: int = 0  # calls through a relocation (another function, maybe in another file)

    @property
    def occupancy(self) -> float:
        """Resident warps per SM allowed by registers alone (65536 per SM, allocated per warp in units of
        256, at most 64 warps), as a share of 64: an estimate (block size and shared memory unknown here)."""
        if self.registers <= 0:
            return 1.0
        per_warp = math.ceil(self.registers * 32 / 256) * 256
        return min(64, 65536 // per_warp) / 64

    def share(self, cls: str) -> float:
        return self.mix.get(cls, 0) / self.instructions if self.instructions else 0.0


@dataclass(frozen=True)
class TargetFeatures:
    """What the prior knows of a target before any run."""

    kernels: tuple[KernelFeatures, ...]
    units: int = 1  # translation units with device code
    relocatable: bool = False
    arch: str = "90"
    time_shares: dict[str, float] = field(default_factory=dict)  # kernel name -> share of kernel time

    def vector(self) -> dict[str, float]:
        """FEATURE_NAMES -> value. Weighted over the functions by measured time share when known, else by
        instruction count."""
        ks = [k for k in self.kernels if k.instructions > 0]
        if not ks:
            return {name: 0.0 for name in FEATURE_NAMES}
        base_names = {k.name.split(":", 1)[-1].split("#")[0]: k for k in ks}
        if self.time_shares and any(n in base_names for n in self.time_shares):
            weights = [self.time_shares.get(k.name.split(":", 1)[-1].split("#")[0], 0.0) for k in ks]
        else:
            weights = [float(k.instructions) for k in ks]
        total = sum(weights) or 1.0
        w = [x / total for x in weights]
        out: dict[str, float] = {}
        for cls in (*CLASS_NAMES, "fma"):
            out[f"share_{cls}"] = sum(wi * k.share(cls) for wi, k in zip(w, ks, strict=False))
        out["log2_instructions"] = math.log2(max(1, sum(wi * k.instructions for wi, k in zip(w, ks, strict=False))))
        out["registers"] = sum(wi * k.registers for wi, k in zip(w, ks, strict=False)) / 255.0
        out["spills"] = math.log2(1 + sum(wi * k.spill_bytes for wi, k in zip(w, ks, strict=False)))
        out["shared_kib"] = sum(wi * k.shared_bytes for wi, k in zip(w, ks, strict=False)) / 1024.0
        out["occupancy"] = sum(wi * k.occupancy for wi, k in zip(w, ks, strict=False))
        out["log2_kernels"] = math.log2(len(ks))
        out["log2_units"] = math.log2(max(1, self.units))
        out["relocatable"] = 1.0 if self.relocatable else 0.0
        out["cross_unit_calls"] = 1.0 if any(k.calls_out for k in ks) else 0.0
        return {name: float(out[name]) for name in FEATURE_NAMES}

    def top(self, n: int = 5) -> list[tuple[str, float]]:
        """The `n` largest instruction-class shares, for people (space --target)."""
        v = self.vector()
        shares = sorted(((k[len("share_") :], v[k]) for k in v if k.startswith("share_")), key=lambda kv: -kv[1])
        return shares[:n]


def parse_sass(text: str, default_arch: str = "") -> list[KernelFeatures]:
    """The functions of a `cuobjdump -sass -res-usage` dump with their instruction mix and resources."""
    resources = parse_res_usage(text, default_arch)
    counts: dict[str, Counter[str]] = {}
    calls: dict[str, int] = {}
    seen: dict[str, int] = {}
    arch, name = default_arch, None
    for raw in text.splitlines():
        m = _CODE_FOR.match(raw)
        if m:
            arch, name = m.group(1), None
            continue
        m = _FUNCTION.match(raw)
        if m:
            name = unique_name(f"{arch}:{m.group(1)}", seen)
            counts[name] = Counter()
            calls[name] = 0
            continue
        if name is None:
            continue
        m = _INSTR.match(raw)
        if m:
            _count(m.group(1), counts[name])
            calls[name] += m.group(1) == "CALL" and bool(_FOREIGN_CALL.search(raw))
    bare = {k.split(":", 1)[-1]: v for k, v in resources.items()}  # a dump whose resources precede its arch line
    out = []
    for key, c in counts.items():
        res = resources.get(key) or bare.get(key.split(":", 1)[-1], {})
        mix = {k: v for k, v in c.items() if k != "_all"}
        out.append(
            KernelFeatures(
                name=key,
                instructions=c["_all"],
                mix=mix,
                registers=res.get("REG", 0),
                spill_bytes=res.get("STACK", 0) + res.get("LOCAL", 0),
                shared_bytes=res.get("SHARED", 0),
                calls_out=calls[key],
            )
        )
    return out


def _count(op: str, c: Counter[str]) -> None:
    """One instruction of a function counted: in all (but NOP), in its class, as an FMA."""
    if op != "NOP":
        c["_all"] += 1
    cls = _CLASS_OF.get(op)
    if cls:
        c[cls] += 1
    if op in _FMA:
        c["fma"] += 1


def file_features(path: Path, nvcc_path: str | None = None, arch: str = "") -> list[KernelFeatures]:
    """The functions of one cubin, object, library or executable (only `arch`'s code when it has some)."""
    cuobjdump = find_cuobjdump(nvcc_path)
    if arch:
        dump = run_cuobjdump(cuobjdump, f"-arch sm_{arch} -sass -res-usage", Path(path))
        found = parse_sass(dump, f"sm_{arch}") if dump else []
        if found:
            return found
    dump = run_cuobjdump(cuobjdump, "-sass -res-usage", Path(path))
    return parse_sass(dump, "") if dump else []


def command_features(
    entries: list[dict[str, Any]],
    cuda_arch: str,
    nvcc_path: str | None = None,
    relocatable: bool = False,
    jobs: int = 4,
) -> TargetFeatures:
    """The features of a target from its compile commands (compile_commands.json entries): each unit built
    once more to a cubin with the project's own flags, as screening builds it (space --target, no build of
    the target needed). A unit that fails to compile is left out."""
    with tempfile.TemporaryDirectory(prefix="compileiq-features-") as tmp:

        def one(item: tuple[int, dict[str, Any]]) -> list[KernelFeatures]:
            n, entry = item
            out = Path(tmp) / f"u{n}.cubin"
            cmd = cubin_command(tokens(entry), out, cuda_arch, ())
            try:
                proc = subprocess.run(
                    cmd,
                    cwd=entry.get("directory") or None,
                    capture_output=True,
                    text=True,
                    timeout=COMPILE_TIMEOUT,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired):
                return []
            return file_features(out, nvcc_path, cuda_arch) if proc.returncode == 0 and out.is_file() else []

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            per_unit = list(pool.map(one, enumerate(entries)))
    kernels = tuple(k for found in per_unit for k in found)
    return TargetFeatures(
        kernels=kernels, units=sum(1 for f in per_unit if f) or 1, relocatable=relocatable, arch=cuda_arch
    )


def target_features(
    objects: list[Path], *, nvcc_path: str | None = None, arch: str = "90", relocatable: bool = False, jobs: int = 4
) -> TargetFeatures:
    """The features of a target from its objects (the baseline build's), one cuobjdump per object."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        per_file = list(pool.map(lambda p: file_features(p, nvcc_path, arch), objects))
    kernels = tuple(k for found in per_file for k in found)
    return TargetFeatures(
        kernels=kernels, units=sum(1 for found in per_file if found) or 1, relocatable=relocatable, arch=arch
    )
