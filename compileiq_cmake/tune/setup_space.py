"""Tune setup, deciding the flag space from the project as read (tune.project_reading): the catalogue's space
for the compiler, and for a CUDA target the probe, the adaptation, the ACF candidates and the static screening
(with a suite's screening ahead), the device-code fingerprints; where a library's device link is measured."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..flags import FlagSpace, load_space
from ..flags.acf import AcfRequest, Candidates
from ..flags.catalogue import device_lto_wanted, drop_device_lto
from ..flags.fingerprint import FingerprintCache
from ..flags.screening import SCREEN_SHARE, prepare_cuda_space
from ..flags.space import host_side_named
from ..measure import kernel_times
from ..measure.provenance import driver_cuda
from ..model.errors import CompileIQError, UsageError
from ..model.events import Log, as_stream
from ..model.spec import TuneSpec
from ..project.file_api import Target, Toolchain
from ..project.nvcc_command import output_file
from .focus import many_files
from .project_reading import VariantBuild
from .tree_pool import Baselines, TreePool
from .tune_setup import DeviceCode, Tools

LIBRARY_TYPES = ("STATIC_LIBRARY", "OBJECT_LIBRARY")


def flag_space(
    spec: TuneSpec,
    variant: VariantBuild,
    toolchain: Toolchain,
    family: str,
    tools: Tools,
    arch: str,
    made: Baselines | None,
    tree_pool: TreePool | None,
    log: Log,
) -> tuple[FlagSpace, Tools, DeviceCode, tuple[Path, ...]]:
    """The space searched (`toolchain`: the tuned language's, of flag family `family`), the tools with the ACF
    candidates gathered, the device code's fingerprints and screened kernels, and a CUDA target's object files
    relative to a variant tree. `made`: the suite's baseline build when this target made it (the screening
    ahead starts from it)."""
    language = variant.language
    unchecked = unchecked_note(spec)
    if unchecked:
        as_stream(log).info(f"{unchecked}")
    space = load_space(
        family, toolchain.compiler_id, toolchain.version, spec.include_flags, spec.excluded_flags, arch=arch
    )
    if (
        made is not None
        and tree_pool is not None  # (made: the suite's baseline build, by the pool)
        and language == "CUDA"
        and spec.screen
        and tools.cuobjdump is not None
        and tree_pool.screen_ahead(made, space, tools.compiler, arch, spec.build_dir)
    ):
        as_stream(log).info(
            "the suite's screening runs ahead: the targets after those in flight are screened "
            "in the background (the screening cache), on a quarter of the cores"
        )
    device_code = DeviceCode()
    objects: tuple[Path, ...] = ()
    if language == "CUDA":
        if (
            tree_pool is not None
            and tree_pool.ahead is not None
            and spec.screen
            and not many_files(variant.target)
            and tree_pool.ahead.wait_for(spec.target, SCREEN_SHARE * spec.time_limit if spec.time_limit else 600.0)
        ):
            as_stream(log).info(
                f"the suite's screening ahead was screening {spec.target}: waited for it (its "
                "values are in the screening cache)"
            )
        space, device_code, objects, acf = _cuda_space(spec, variant, tools, arch, space, log)
        tools = replace(tools, acf=acf)
    else:  # the prior reads the instruction mix of a host target's objects (flags/host_features.py)
        objects = _target_objects(variant)
    _require_dimensions(spec, space, language)
    return space, tools, device_code, objects


def _target_objects(variant: VariantBuild) -> tuple[Path, ...]:
    """The object files the target's compile commands write, relative to the variant tree."""
    tree = variant.tree.path
    outputs = (output_file(e) for e in variant.commands)
    return tuple(o.relative_to(tree) for o in outputs if o is not None and o.resolve().is_relative_to(tree.resolve()))


def _recorded_kernel_ns(path: Path) -> dict[str, int]:
    """Kernel name -> ns from an earlier tune's CUPTI run (the per-file stage's file); empty when none."""
    try:
        return {k.name: k.ns for k in kernel_times.read_times(path)} if path.is_file() else {}
    except CompileIQError:
        return {}


def _cuda_space(
    spec: TuneSpec, variant: VariantBuild, tools: Tools, arch: str, space: FlagSpace, log: Log
) -> tuple[FlagSpace, DeviceCode, tuple[Path, ...], Candidates | None]:
    """A CUDA target's space after the probe, the adaptation, the ACF candidates and the static screening
    (prepare_cuda_space), its device code (the kernels each kept value changes, the fingerprints: None without
    cuobjdump, said), the target's object files relative to a variant tree and the ACF candidates gathered."""
    fingerprints = None
    screen_kernels: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}
    objects: tuple[Path, ...] = ()
    target, entries = variant.target, variant.commands  # (CUDA: the target's CUDA sources')
    lto = device_lto_wanted(spec.include_flags, spec.excluded_flags)
    screen_off = ""
    # every value x every file: hours on a library; unless the focus cannot run (no cuobjdump, another executor)
    if spec.screen and many_files(target) and tools.cuobjdump is not None and spec.executor == "local":
        screen_off = (
            f"static screening skipped: {spec.target} compiles {len(target.sources_in('CUDA'))} CUDA files; "
            "the hot-file focus tunes the files that hold the kernel time"
        )
        as_stream(log).note(screen_off)
    acf = (
        AcfRequest(files=tuple(Path(f) for f in spec.acf_files), candidates=spec.acf_candidates, space=spec.acf_space)
        if spec.replay is None
        else None
    )
    prepared = prepare_cuda_space(
        space,
        entries,
        tools.compiler,
        arch,
        spec.build_dir,
        spec.target,
        acf,
        spec.screen and not screen_off,
        device_lto=lto,
        driver_cuda=driver_cuda(),
        decisions=variant.decisions,
        screen_off=screen_off,
        time_limit=spec.time_limit,
        kernel_ns=_recorded_kernel_ns(spec.state_dir / "cupti" / "kernel-times.tsv"),
    )
    for note in prepared.notes:
        as_stream(log).info(f"{note}")
    if prepared.screen is not None:
        r = prepared.screen
        kept = sum(1 for row in r.rows if row.kept)
        as_stream(log).info(
            f"screening: {kept} of {len(r.rows)} flag values change the device code of {spec.target}; "
            f"space {r.points_before} -> {r.points_after} points ({r.summary()})"
        )
        screen_kernels = {
            (r.dimension, r.value): frozenset(e.kernel for e in r.effects)
            for r in prepared.screen.rows
            if r.kept and r.screened
        }
    if tools.cuobjdump is None:
        as_stream(log).note(
            "device-code fingerprints are off: cuobjdump not found (pip install "
            "nvidia-cuda-cuobjdump); trials that build the same code are all benchmarked"
        )
    else:
        fingerprints = FingerprintCache(tools.compiler, arch=arch)
        objects = _target_objects(variant)
    return prepared.space, DeviceCode(fingerprints, screen_kernels), objects, prepared.acf


def _require_dimensions(spec: TuneSpec, space: FlagSpace, language: str) -> None:
    """Bad input when no dimension is left to search (host-side dimensions asked for join after the baseline:
    host_side.py)."""
    if not space.dimensions and not (language == "CUDA" and host_side_named(spec.include_flags)):
        why = "; ".join(space.dropped[-3:]) or "the include/exclude options leave none"
        raise UsageError(
            f"nothing to tune for {spec.target}: no flag dimension is left to search ({why}); "
            "change --include-flags/--exclude-flags"
        )


def unchecked_note(spec: TuneSpec) -> str:
    """The line for a tune whose results nothing checks ("" when something does, or numerics are excluded
    anyway): --portable excludes host-specific flags, which says nothing about checks."""
    if spec.checks_outputs or "unsafe_numerics" in spec.exclude_flags:
        return ""
    return (
        "nothing checks the benchmark's results (no PASS_REGEX, VERIFY or output comparison): flags that "
        "change numerics (fast-math family) are not searched"
    )


def device_link(
    spec: TuneSpec, target: Target, owner: str | None, space: FlagSpace, log: Log
) -> tuple[tuple[str, ...], FlagSpace]:
    """Where a device-LTO trial of a static or object library is device-linked: at its consumer that builds the
    benchmark's program (the only one measured; the apply gives -dlto to it alone). Without such a consumer
    device LTO is not offered, with a note."""
    if target.type not in LIBRARY_TYPES:
        return (), space
    if owner is not None and owner != spec.target:
        return (owner,), space
    kind = "a static" if target.type == "STATIC_LIBRARY" else "an object"
    space, notes = drop_device_lto(
        space,
        f"{spec.target} is {kind} library, whose device code its consumers "
        "device-link, and the benchmark's program is built by none of the project's targets "
        "(give --bench the consumer's program in the build tree)",
    )
    for note in notes:
        as_stream(log).info(f"{note}")
    return (), space
