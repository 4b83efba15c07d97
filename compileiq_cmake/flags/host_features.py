"""What the prior reads of host (CPU) code: the instruction mix of a host target's object files, per function,
in the classes the CUDA features use (flags/features.py), so that one model serves both families.

`objdump -dr --no-show-raw-insn` (binutils, beside every GCC) of each object; each instruction's mnemonic is put
in a class: scalar or packed single precision arithmetic -> fp32, double -> fp64, fused multiply-add -> fp32 or
fp64 and fma, conversions -> conv, integer arithmetic and logic (scalar and vector) -> int, a memory operand ->
ld_global (read) or st_global (written), jumps -> branch, calls -> call, and a call to a math library function
(expf, logf, sin, pow, ... by its relocation) -> mufu, the class of the GPU's special function unit: what fast
math changes most. A call to a libgcc bit helper (__popcountdi2, ...) counts as int: the instruction it
becomes with the CPU's own instruction set. Unlisted instructions (moves between registers, stack, nops)
count towards the total only. AT&T syntax: the last operand is the destination."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..model.errors import CompileIQError
from .features import KernelFeatures

OBJDUMP_TIMEOUT = 120.0
_FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_INSTR = re.compile(r"^\s+[0-9a-f]+:\s+(?:(?:lock|rep[nez]*|notrack|bnd)\s+)?([a-z][a-z0-9.]*)\s*(.*)$")
_RELOC = re.compile(r"^\s+[0-9a-f]+: R_X86_64_\w+\s+([^\s+-]+)")
_MATH = re.compile(
    r"^(?:__)?(exp|exp2|expm1|log|log2|log10|log1p|pow|sin|cos|tan|sincos|asin|acos|atan|atan2|sinh|cosh|tanh|"
    r"sqrt|cbrt|hypot|erf|erfc|fmod|lgamma|tgamma)(f|l)?(_finite)?$"
)
_BITS = re.compile(r"^__(popcount|clz|ctz|parity|ffs)[sdt]i2$")
_FP_OP = r"(?:add|sub|mul|div|sqrt|min|max|cmp\w*|rcp|rsqrt|round|and|andn|or|xor|hadd|hsub|dp|blendv?|ucomi|comi)"
_FP32 = re.compile(rf"^v?{_FP_OP}(ss|ps)$")
_FP64 = re.compile(rf"^v?{_FP_OP}(sd|pd)$")
_FMA = re.compile(r"^vf(n?m(add|sub)|maddsub|msubadd)\d{3}(ss|ps|sd|pd)$")
_CONV = re.compile(r"^v?cvt")
_INT = re.compile(
    r"^(add|sub|adc|sbb|imul|mul|idiv|div|and|or|xor|not|neg|inc|dec|shl|shr|sal|sar|rol|ror|shld|shrd|lea|cmp|"
    r"test|popcnt|lzcnt|tzcnt|bsf|bsr|bswap|bt\w*|andn|blsi|blsr|blsmsk|bzhi|pdep|pext|sarx|shlx|shrx|rorx|"
    r"cmov\w+|set\w+)[bwlq]?$|^v?p(add|sub|mul|and|andn|or|xor|sll|srl|sra|cmp|min|max|abs|sad|maddw|popcnt)\w*$"
)


def _classes(mnemonic: str, operands: str) -> list[str]:
    """The classes one instruction counts in (an arithmetic instruction with a memory operand counts in both)."""
    out = []
    if mnemonic.startswith("j"):
        return ["branch"]
    if mnemonic.startswith("call"):
        return ["call"]
    if _FMA.match(mnemonic):
        out += ["fp64" if mnemonic.endswith(("sd", "pd")) else "fp32", "fma"]
    elif _FP32.match(mnemonic):
        out.append("fp32")
    elif _FP64.match(mnemonic):
        out.append("fp64")
    elif _CONV.match(mnemonic):
        out.append("conv")
    elif _INT.match(mnemonic):
        out.append("int")
    if "(" in operands and not mnemonic.startswith(("lea", "nop", "prefetch")):
        last = operands.rsplit(",", 1)[-1]
        out.append("st_global" if "(" in last and "," in operands else "ld_global")
    return out


def parse_objdump(text: str, prefix: str = "host") -> list[KernelFeatures]:
    """Each function of `objdump -dr --no-show-raw-insn` output, with its instruction classes."""
    functions: list[KernelFeatures] = []
    name, total, mix = "", 0, Counter[str]()
    last_call = False

    def close() -> None:
        if name and total:
            functions.append(KernelFeatures(name=f"{prefix}:{name}", instructions=total, mix=dict(mix)))

    for line in text.splitlines():
        if m := _FUNCTION.match(line):
            close()
            name, total, mix, last_call = m.group(1), 0, Counter(), False
            continue
        if (r := _RELOC.match(line)) and last_call:
            target = r.group(1).split("@")[0]
            if _MATH.match(target):
                mix["mufu"] += 1
            elif _BITS.match(target):
                mix["call"] -= 1
                mix["int"] += 1
            last_call = False
            continue
        if m := _INSTR.match(line):
            total += 1
            classes = _classes(m.group(1), m.group(2))
            mix.update(classes)
            last_call = classes == ["call"]
    close()
    return functions


def object_features(objects: Sequence[Path], objdump: str | None = None) -> list[KernelFeatures]:
    """The functions of the host objects (one objdump per object). CompileIQError when objdump is missing or
    fails: the caller says so and the prior goes without features."""
    tool = objdump or shutil.which("objdump")
    if tool is None:
        raise CompileIQError("objdump (binutils) was not found on PATH: the host code's features are unknown")
    out: list[KernelFeatures] = []
    for obj in objects:
        try:
            proc = subprocess.run(
                [tool, "-dr", "--no-show-raw-insn", str(obj)],
                capture_output=True,
                text=True,
                timeout=OBJDUMP_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CompileIQError(f"objdump of {obj} failed: {exc}") from exc
        if proc.returncode != 0:
            raise CompileIQError(f"objdump of {obj} failed: {proc.stderr.strip()[-300:]}")
        out += parse_objdump(proc.stdout, prefix=obj.name)
    return out
