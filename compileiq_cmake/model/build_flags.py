"""What the tokens of a flag set mean for the build.

Most tokens are compile flags of the tuned target. Two kinds are not:

* ``-dlto``: device link-time optimization of relocatable device code. It is applied through CMake's own
  mechanism (CUDA ``INTERPROCEDURAL_OPTIMIZATION``: ``code=lto_XX`` at compile, ``-dlto`` at the device link),
  never as a compile flag (nvcc refuses ``-dlto`` next to CMake's ``--generate-code``); the target's ptxas options
  and -maxrregcount then also go to the device link, where the code is generated (cmake/CompileIQ.cmake,
  _compileiq_device_lto; measured with
  nvcc 13.0 on sm_90 in docs/benchmarks/more-speed.md: --use_fast_math / --ftz=true there change nothing).
* ``[path]flag``: ``flag`` for one source file only (path relative to the project's source directory), set as
  that file's ``COMPILE_OPTIONS``, after the target's own: a per-file difference found by the per-file stage.

Keeping them as tokens lets the store, the search cache, validation and ablation treat them like any flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEVICE_LTO = "-dlto"
_SOURCE_TOKEN = re.compile(r"^\[([^\]\s]+)\](\S+)$")


@dataclass(frozen=True)
class BuildFlags:
    target: tuple[str, ...]  # compile flags of the whole target
    device_lto: bool
    sources: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (path relative to the source dir, its own flags), by path

    def of_source(self, path: str) -> tuple[str, ...]:
        return next((flags for p, flags in self.sources if p == path), ())


def source_token(path: str, flag: str) -> str:
    return f"[{path}]{flag}"


def parse_token(token: str) -> tuple[str, str]:
    """(path, flag) of one searched token: a per-file token's file and flag, ("", token) for the others."""
    m = _SOURCE_TOKEN.match(token)
    return (m.group(1), m.group(2)) if m else ("", token)


def split(flags: tuple[str, ...] | list[str]) -> BuildFlags:
    target: list[str] = []
    per_source: dict[str, list[str]] = {}
    lto = False
    for tok in flags:
        m = _SOURCE_TOKEN.match(tok)
        if m:
            per_source.setdefault(m.group(1), []).append(m.group(2))
        elif tok == DEVICE_LTO:
            lto = True
        else:
            target.append(tok)
    return BuildFlags(tuple(target), lto, tuple((p, tuple(f)) for p, f in sorted(per_source.items())))


_ACF_SHOWN = re.compile(r"^(?:-Xptxas=)?--apply-controls=(?:.*/)?([0-9a-f]{12})[0-9a-f]{52}\.acf$")


def shown(flag: str) -> str:
    """A flag as people read it: an advanced control file stored by content (<sha256>.acf) as "ACF <short
    sha>" (its path is long and says nothing); any other flag as it is."""
    m = _ACF_SHOWN.match(flag)
    return f"ACF {m.group(1)}" if m else flag


def describe(flags: tuple[str, ...] | list[str]) -> str:
    """For people: the target's flags, then "device LTO", then "path: flags" per file."""
    b = split(flags)
    return (
        "; ".join(
            filter(
                None,
                [" ".join(shown(f) for f in b.target)]
                + (["device LTO"] if b.device_lto else [])
                + [f"{p}: {' '.join(f)}" for p, f in b.sources],
            )
        )
        or "(project's own flags)"
    )
