"""The adaptation of a flag space to the project's own effective flags and to user-given Advanced Control Files
(ACF); the interaction rules of the nvcc catalogue (canonical_flags) live in space.py and are named here too."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from .acf import ACF_DIMENSION
from .space import HOST_GROUP, HOST_SHARE, Dimension, FlagSpace, _read_family
from .space import canonical_flags as canonical_flags  # named here too (the interaction rules live in space.py)


def split_command(command: str | list[str]) -> list[str]:
    return list(command) if isinstance(command, list) else shlex.split(command)


def _has(flags: list[str], *patterns: str) -> str | None:
    for tok in flags:
        for pat in patterns:
            if re.fullmatch(pat, tok):
                return tok
    return None


def _drop_dims(space: FlagSpace, names: set[str], reason: str) -> tuple[FlagSpace, list[str]]:
    gone = [d.name for d in space.dimensions if d.name in names]
    if not gone:
        return space, []
    kept = tuple(d for d in space.dimensions if d.name not in names)
    notes = [f"{n}: {reason}" for n in gone]
    return replace(space, dimensions=kept, dropped=space.dropped + tuple(notes)), notes


def _ptxas_options(flags: list[str]) -> list[str]:
    """ptxas options of canonical flags (nvcc_command.normalize): -Xptxas=-O3 -> -O3."""
    return [f.split("=", 1)[1] for f in flags if f.startswith("-Xptxas=")]


def _drop_present_values(space: FlagSpace, flags: list[str]) -> tuple[FlagSpace, list[str]]:
    """Values a dimension would add that the project's flags already hold are the baseline itself: no trial is
    spent on them (a dimension left with no other value goes)."""
    present = set(flags)
    notes: list[str] = []
    dims, dropped = [], list(space.dropped)
    for d in space.dimensions:
        same = [v for v in d.values[1:] if v and all(t in present for t in v)]
        if not same:
            dims.append(d)
            continue
        shown = ", ".join(" ".join(v) for v in same)
        values = tuple(v for v in d.values if v not in same)
        if len(values) > 1:
            notes.append(f"{d.name}: the project already builds with {shown}; that value is not tried")
            dims.append(replace(d, values=values))
        else:
            note = f"{d.name}: the project already builds with {shown}; not tuned"
            notes.append(note)
            dropped.append(note)
    return replace(space, dimensions=tuple(dims), dropped=tuple(dropped)), notes


def adapt_to_project(space: FlagSpace, project_flags: list[str]) -> tuple[FlagSpace, list[str]]:
    """Tune around the project's own effective nvcc flags instead of adding contradictions. `project_flags`
    are canonical (nvcc_command.project_flags): every spelling of an option reads the same here."""
    notes: list[str] = []
    flags = list(project_flags)
    ptxas = _ptxas_options(flags)
    fast = _has(flags, r"--use_fast_math")
    if fast:
        space, n = _drop_dims(
            space, {"use_fast_math", "ftz", "prec_div", "prec_sqrt"}, f"the project already builds with {fast}"
        )
        notes += n
    debug = _has(flags, r"-G")
    if debug:
        space, n = _drop_dims(
            space,
            {"ptxas_opt_level", "ofast_compile"},
            f"the project builds with {debug} (ptxas: optimized debugging is fatal)",
        )
        notes += n
    ofc = _has(flags, r"--Ofast-compile=.*")
    level = _has(ptxas, r"-O\d", r"--opt-level=?\d")
    if ofc or level:
        names = {"ofast_compile", "ptxas_opt_level"} if ofc else {"ofast_compile"}
        space, n = _drop_dims(
            space, names, f"the project sets {ofc or '-Xptxas=' + str(level)} (with --Ofast-compile fatal in ptxas)"
        )
        notes += n
    dlto = _has(flags, r"-dlto", r"-gencode=.*code=.*lto_\d+.*")
    if dlto:
        ptxas_dims = {
            d.name for d in space.dimensions if all(t.startswith("-Xptxas=") for v in d.values[1:] for t in v)
        }
        space, n = _drop_dims(
            space, ptxas_dims, f"the project builds with {dlto}: compile-step -Xptxas options are dropped"
        )
        notes += n
        if any(d.name in ("use_fast_math", "ftz") for d in space.dimensions):
            notes.append("-dlto: fast-math's FTZ is lost at the device link unless it gets -Xnvlink --Xnvvm=-ftz=1")
    space, n = _drop_present_values(space, flags)
    notes += n
    maxreg = _has(flags, r"-maxrregcount=.*") or _has(ptxas, r"--?maxrregcount[= ]?.*")
    if maxreg and any(d.name == "maxrregcount" for d in space.dimensions):
        notes.append(f"maxrregcount: the project sets {maxreg}; a tuned -maxrregcount overrides it")
    rdc = _has(flags, r"-rdc=true", r"-dc")
    if rdc:
        notes.append(f"the project builds relocatable device code ({rdc}); kernels are tuned as separately compiled")
    return space, notes


DEVICE_LTO_DIMENSION = "device_lto"


def device_lto_wanted(include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Whether --include/--exclude-flags leave the device_lto dimension in (named, or no selective include)."""
    selective = [n for n in include if n != "experimental"]
    return DEVICE_LTO_DIMENSION not in exclude and (not selective or DEVICE_LTO_DIMENSION in selective)


def add_device_lto_dimension(
    space: FlagSpace, project_flags: list[str], wanted: bool, refusal: str, relocatable: bool
) -> tuple[FlagSpace, list[str]]:
    """Device link-time optimization (the token -dlto, build_flags) as a dimension of its own, offered only
    where the apply accepts it and the target does not use device LTO already. It is a build mode, not a
    compile flag: it is not screened (the objects' machine code is the same; the IR beside it is what the
    device link optimizes). `refusal` and `relocatable` are the CMake module's own decisions (ApplyDecisions,
    read from compileiq_variant_info.txt) or the tune's (a device link with -dlto that fails on this machine,
    a library whose measured consumer is unknown): why device LTO cannot apply ("" when it can:
    CUDA_SEPARABLE_COMPILATION) and whether the target builds relocatable device code (a refusal is a note
    then)."""
    if not wanted:
        return space, []
    if _has(project_flags, r"-dlto", r"-gencode=.*code=.*lto_\d+.*"):
        return replace(space, dropped=(*space.dropped, "device_lto: the project already uses device LTO")), []
    if refusal:
        dropped = f"device_lto: {refusal}"
        return replace(space, dropped=(*space.dropped, dropped)), [
            f"note: device_lto not offered: {refusal}"
        ] if relocatable else []
    dim = Dimension(
        DEVICE_LTO_DIMENSION,
        "device link-time optimization of the relocatable CUDA code (its "
        "CUDA sources also compiled to LTO IR, code=lto_XX; -dlto, -Xptxas options and -maxrregcount "
        "at the device link; host languages untouched)",
        ((), ("-dlto",)),
        build_mode=True,
    )
    return (
        replace(space, dimensions=(*space.dimensions, dim)),
        [
            "device_lto: the target builds relocatable device code (CUDA_SEPARABLE_COMPILATION): device link-time "
            "optimization "
            "is searched as a dimension of its own"
        ],
    )


def drop_device_lto(space: FlagSpace, why: str) -> tuple[FlagSpace, list[str]]:
    """The space without the device_lto dimension (if it has one), and the note that says why."""
    if not any(d.name == DEVICE_LTO_DIMENSION for d in space.dimensions):
        return space, []
    return (
        replace(
            space,
            dimensions=tuple(d for d in space.dimensions if d.name != DEVICE_LTO_DIMENSION),
            dropped=(*space.dropped, f"device_lto: {why}"),
        ),
        [f"note: device_lto not offered: {why}"],
    )


def applies_when(family: str) -> dict[str, str]:
    """Per dimension of the family's catalogue, when it applies (compiler versions, architectures,
    compilers), as `space` prints it; "" where it applies everywhere the family does."""
    data = _read_family(family)
    out = {}
    for d in data["dimension"]:
        when = []
        compilers = d.get("compilers")
        if compilers and compilers != data["compilers"]:
            when.append(" / ".join(compilers) + " only")
        versions = [
            f">= {d['min_version']}" if "min_version" in d else "",
            f"<= {d['max_version']}" if "max_version" in d else "",
        ]
        if any(versions):
            when.append(f"{family} " + ", ".join(v for v in versions if v))
        if d.get("archs"):
            when.append(", ".join(f"sm_{a}" for a in d["archs"]) + " only")
        out[d["name"]] = "; ".join(when)
    return out


def added_dimensions(family: str) -> tuple[tuple[str, str, str], ...]:
    """The dimensions a tune adds to the catalogue's when they apply: (name, values, when)."""
    if family != "nvcc":
        return ()
    return (
        (
            DEVICE_LTO_DIMENSION,
            "default | -dlto (CUDA INTERPROCEDURAL_OPTIMIZATION)",
            "only for relocatable device code (CUDA_SEPARABLE_COMPILATION / -rdc=true) that does not use device LTO "
            "already, CMake >= 3.25 (cmake/CompileIQ.cmake decides)",
        ),
        (
            ACF_DIMENSION,
            "default | -Xptxas=--apply-controls=FILE (NVIDIA Advanced Control Files)",
            "ptxas >= 13.3 with candidates from the user's compileiq (--acf-candidates N, --acf-space) or --acf FILE; "
            "where they cannot work, one note says why",
        ),
        (
            f"{HOST_GROUP} (host_<name>)",
            "the gcc space's dimensions, passed as -Xcompiler=<flag>",
            f"only when host code takes at least {100 * HOST_SHARE:.0f}% of a WALLTIME run, or named in "
            "--include-flags "
            f"({HOST_GROUP} or host_<name>)",
        ),
    )
