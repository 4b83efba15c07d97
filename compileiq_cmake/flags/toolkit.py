"""`compileiq-cmake toolkit X.Y`: NVIDIA's CUDA toolkit X.Y from PyPI (the `cuda-toolkit` metapackage with
nvcc, cccl, cuobjdump and nvdisasm) installed into the tool's cache or a given prefix, for users whose system
toolkit is older than the Advanced Controls need (ptxas 13.3). The PyPI layout lacks the unversioned
`lib/libcudart.so` that CMake's FindCUDAToolkit and `-cudart shared` look for: the link is made. What it prints
is the compiler to configure with, for the tune and for release builds alike.

The toolkit's ptxas must match the ACF files' version, and a toolkit newer than the GPU's driver runs only code
built as SASS for the GPU (`-DCMAKE_CUDA_ARCHITECTURES=90-real`): both are said where they matter (flags/acf.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..model.errors import CompileIQError, UsageError
from .probe import nvcc_version, user_cache_dir

EXTRAS = "nvcc,cccl,cuobjdump,nvdisasm"
_VERSION = re.compile(r"^(\d{2})\.(\d{1,2})(\.\d+)?$")
PIP_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Toolkit:
    """An installed PyPI toolkit: its root (bin/, nvvm/, include/, lib/), nvcc and the version nvcc reports."""

    root: Path
    version: str

    @property
    def nvcc(self) -> Path:
        return self.root / "bin" / "nvcc"

    def cmake_argument(self) -> str:
        return f"-DCMAKE_CUDA_COMPILER={self.nvcc}"


def requirement(version: str) -> str:
    """The pip requirement of toolkit `version` ("13.3" -> any 13.3 release; "13.3.1" exactly)."""
    m = _VERSION.match(version)
    if not m:
        raise UsageError(f"toolkit version {version!r} is not a CUDA version; give major.minor such as 13.3")
    pin = version if m.group(3) else f"{m.group(1)}.{m.group(2)}.*"
    return f"cuda-toolkit[{EXTRAS}]=={pin}"


def default_prefix(version: str) -> Path:
    return user_cache_dir() / "toolkits" / f"cuda-{version}"


def _root(prefix: Path, version: str) -> Path:
    return prefix / "nvidia" / f"cu{version.split('.')[0]}"


def repair(root: Path) -> list[str]:
    """Links the unversioned libraries the PyPI layout lacks (lib/libcudart.so -> libcudart.so.<major>);
    what was made."""
    made = []
    lib = root / "lib"
    for versioned in sorted(lib.glob("libcudart.so.*")):
        plain = lib / "libcudart.so"
        if re.fullmatch(r"libcudart\.so\.\d+", versioned.name) and not plain.exists():
            plain.symlink_to(versioned.name)
            made.append(f"{plain} -> {versioned.name}")
    return made


def found(prefix: Path, version: str) -> Toolkit | None:
    """The toolkit of `version` already installed under `prefix`, if its nvcc answers with that version."""
    root = _root(prefix, version)
    if not (root / "bin" / "nvcc").is_file():
        return None
    try:
        have = nvcc_version(str(root / "bin" / "nvcc"))
    except CompileIQError:
        return None
    return Toolkit(root=root, version=have) if have == version or have.startswith(version + ".") else None


def install(version: str, prefix: Path | None = None, say: Callable[[str], object] = print) -> Toolkit:
    """Toolkit `version` under `prefix` (default: the tool's cache), installed with this Python's pip unless it
    is there already, repaired, checked by running its nvcc."""
    spec = requirement(version)
    prefix = (prefix or default_prefix(version)).resolve()
    have = found(prefix, version)
    if have is None:
        say(f"installing {spec} into {prefix} (about 120 MB from PyPI) ...")
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--upgrade",
            "--target",
            str(prefix),
            spec,
        ]
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=PIP_TIMEOUT,
                check=False,
                env={**os.environ, "PIP_NO_INPUT": "1"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CompileIQError(f"pip could not install {spec}: {exc}") from None
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise CompileIQError(f"pip install {spec} failed (exit {proc.returncode}):\n{tail}")
        have = found(prefix, version)
        if have is None:
            raise CompileIQError(
                f"pip installed {spec} into {prefix}, but {_root(prefix, version)}/bin/nvcc does not "
                f"report CUDA {version}"
            )
    for line in repair(have.root):
        say(f"linked {line}")
    return have
