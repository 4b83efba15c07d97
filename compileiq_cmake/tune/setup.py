"""Tune stage 1, setup: the variant trees configured from the user's build, the project's own build read
(architectures, CUDA sources by CMake's language, compile commands), the flag space (catalogue, probe,
adaptation, screening), the benchmark command resolved; or the same from a recorded landscape (replay)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from ..execute.build import CoreShare, command_tokens
from ..execute.replay import ReplayRunner
from ..execute.step_cache import StepCache, step_cache_for
from ..flags import FlagSpace, family_for_compiler, load_space
from ..flags.acf import AcfRequest, Candidates
from ..flags.catalogue import device_lto_wanted, drop_device_lto
from ..flags.fingerprint import FingerprintCache
from ..flags.screening import SCREEN_SHARE, prepare_cuda_space
from ..flags.space import host_side_named
from ..measure import kernel_times
from ..measure.energy import EnergyMeter, NvmlEnergy, energy_meter
from ..measure.gpu import (
    SIMULATE_VARIABLE,
    GpuMonitor,
    GpuSlot,
    Placement,
    detect_gpu,
    host_cpu,
    require_gpu,
    visible_gpus,
)
from ..measure.provenance import driver_cuda
from ..measure.runner import BenchCommand
from ..model.errors import CompileIQError, UsageError
from ..model.events import Log, as_stream
from ..model.spec import TuneSpec, compute_capability
from ..model.wording import plural
from ..project import depscan
from ..project.baseline_tree import BaselineTree
from ..project.cmake_project import VariantTree
from ..project.file_api import CodeModel, Target, Toolchain
from ..project.nvcc_command import output_file, target_architectures
from ..project.user_tree import read_cache
from ..project.variant_settings import VariantSettings
from ..search.landscape import Landscape
from .compile_line import compile_line_evidence
from .focus import many_files
from .tree_pool import Baselines, TreePool
from .tune_setup import CodeIdentity, Devices, OnDemandTrees, ProjectModel, Tools, TuneSetup

T = TypeVar("T")

FINALISTS = 3  # candidates validated against the baseline at the end


def _recorded_kernel_ns(path: Path) -> dict[str, int]:
    """Kernel name -> ns from an earlier tune's CUPTI run (the per-file stage's file); empty when none."""
    try:
        return {k.name: k.ns for k in kernel_times.read_times(path)} if path.is_file() else {}
    except CompileIQError:
        return {}


def _resolve_benchmark(spec: TuneSpec, model: CodeModel, tree: VariantTree) -> tuple[BenchCommand, str | None]:
    """Map the benchmark's first word: a target of the project, a path in the user's build tree, a file,
    or a program on PATH. Returns the command and the target that builds it (if any)."""
    first, rest = spec.benchmark[0], list(spec.benchmark[1:])
    owner: str | None = None
    if first in model.targets and model.targets[first].artifacts:
        owner = first
        exe = str(model.targets[first].artifacts[0])
        first_mapped = str(spec.build_dir) + exe[len(str(tree.path)) :] if exe.startswith(str(tree.path)) else exe
    else:
        path = Path(first)
        build_prefix = str(spec.build_dir)
        if path.is_absolute() and (first.startswith(build_prefix + "/")):
            relative = first[len(build_prefix) + 1 :]
            found = model.target_owning(tree.path / relative)
            owner = found.name if found else None
            first_mapped = first
        elif "/" not in first:  # a bare name: a program on PATH only, never a file of the working directory
            if not shutil.which(first):
                raise UsageError(
                    f"benchmark command '{first}' not found: it is not a target of the project or a "
                    "program on PATH (a file of the current directory is ./" + first + ")"
                )
            first_mapped = first
        elif path.exists():
            first_mapped = str(path.resolve())
        else:
            raise UsageError(
                f"benchmark command '{first}' not found: it is not a target of the project, a file, "
                "or a program on PATH"
            )
    return BenchCommand(argv=(first_mapped, *rest), verify=spec.verify, user_build_dir=spec.build_dir), owner


def _cuda_architecture(
    spec: TuneSpec, tree: VariantTree, target: Target, log: Log, placement: Placement | None = None
) -> tuple[str, str, str]:
    """(arch, device, compute capability) to tune for: --cuda-arch, else the GPU's. Says which architectures
    the project's own build of the target really targets (its compile commands: CUDA_ARCHITECTURES or
    -arch/-gencode written by hand) and warns when the apply would not match this GPU's with them (the CMake
    module's decision, ApplyDecisions.applies_to_arch)."""
    own = target_architectures(tree.compile_commands(target.sources_in("CUDA"), target.name))
    if spec.cuda_arch:
        arch = spec.cuda_arch
        device, capability = f"(architecture {arch} given on the command line)", compute_capability(arch)
    elif placement is not None:  # the GPUs of a cluster: their architecture, as their workers reported it
        arch, device, capability = placement.arch, placement.device, compute_capability(placement.arch)
    else:
        gpu = detect_gpu()
        arch = gpu.arch
        device, capability = f"{gpu.name} ({gpu.sm_count} SMs)", "{}.{}".format(*gpu.compute_capability)
    origin = " ".join(own.options) if own.options else "no architecture option"
    as_stream(log).info(
        f"the project's own build of {spec.target} targets {own.describe()} ({origin}); tuning for sm_{arch}"
    )
    if not tree.decisions(spec.target).applies_to_arch(arch):  # the apply's own architecture decision
        as_stream(log).note(
            f"the project's own build does not target sm_{arch}; the variant trees build sm_{arch}, "
            f"and a release build gets the tuned flags only where it targets sm_{arch}"
        )
    return arch, device, capability


def _check_arch_option(spec: TuneSpec, language: str) -> None:
    if spec.arch_scope != "all" and language != "CUDA":
        raise UsageError(
            f"--arch-scope {spec.arch_scope} was given but target '{spec.target}' is a {language} "
            "target (no CUDA architectures); leave --arch-scope out"
        )
    if spec.cuda_arch and language != "CUDA":
        raise UsageError(
            f"--cuda-arch {spec.cuda_arch} was given but target '{spec.target}' is a {language} "
            "target (no CUDA sources); leave --cuda-arch out"
        )


def _energy_meter(spec: TuneSpec, language: str, placement: Placement | None, log: Log) -> EnergyMeter | None:
    """The energy counter of the GPU the runs use (a co-objective; with --objective energy, the objective: a
    clear refusal where it cannot be read). On a Ray cluster each GPU worker reads its own GPU's counter."""
    if placement is not None:  # each GPU worker reads its own GPU's counter (a run it cannot read is invalid, said)
        if language != "CUDA" and spec.objective == "energy":
            raise UsageError(
                f"--objective energy cannot be measured here: a {language} target's runs use the CPU, "
                "whose energy is not measured; tune with --objective time (the default)"
            )
        return NvmlEnergy() if language == "CUDA" else None
    gpus = visible_gpus(spec.gpus) if language == "CUDA" or os.environ.get(SIMULATE_VARIABLE) else ()
    meter, why = energy_meter(gpus[0] if gpus else None, language)
    if meter is None and spec.objective == "energy":
        raise UsageError(
            f"--objective energy cannot be measured here: {why}; tune with --objective time (the "
            "default; energy is then not reported either)"
        )
    if meter is None and language == "CUDA":
        as_stream(log).note(f"energy per run is not measured: {why}")
    return meter


def _cuda_in_dependencies(model: CodeModel, target: Target) -> list[str]:
    return [d for d in target.dependencies if d in model.targets and model.targets[d].sources_in("CUDA")]


def _gpus(spec: TuneSpec, language: str, log: Log) -> tuple[GpuSlot, ...]:
    """The GPUs of this tune: CUDA targets (and, for tests, host targets on simulated GPUs) use every visible
    GPU of the first one's model, or --gpus; several run benchmarks in parallel, one run per GPU."""
    simulated = bool(os.environ.get(SIMULATE_VARIABLE))
    if language != "CUDA" and not simulated:
        if spec.gpus:
            raise UsageError(
                f"--gpus {spec.gpus} was given but target '{spec.target}' is a {language} target; leave --gpus out"
            )
        return ()
    gpus = visible_gpus(spec.gpus)
    if len(gpus) > 1:
        as_stream(log).info(
            f"benchmarks run on {len(gpus)} GPUs in parallel, one run per GPU at a time: "
            + ", ".join(g.describe() for g in gpus)
            + (
                f"; with --workers {spec.workers} at most {spec.workers} at once (give --workers {len(gpus)})"
                if spec.workers < len(gpus)
                else ""
            )
        )
    return gpus


def setup(  # noqa: C901, PLR0912, PLR0915 (issue 53: the three rooms, split next)
    spec: TuneSpec,
    log: Log,
    placement: Placement | None = None,
    gpu_here: bool = False,
    tree_pool: TreePool | None = None,
) -> TuneSetup:
    """The tune's variant trees and everything read from the user's build. `placement`: the GPUs of a Ray
    cluster (labels, architecture) instead of this machine's. `gpu_here`: the benchmarks run on this machine's
    GPU, so a CUDA target tuned with --cuda-arch needs one (asked once the target is known to be CUDA, before
    screening); without --cuda-arch the GPU query itself says when there is none. `tree_pool`: a suite's shared
    trees, borrowed under the state folder's name (the caller gives them back), instead of trees of its own."""
    state_dir = spec.state_dir
    settings, notes = VariantSettings.from_user_tree(spec.source_dir, spec.build_dir, "", spec.config)
    for note in notes:
        as_stream(log).info(f"{note}")

    def new_trees(start: int, n: int) -> tuple[VariantTree, ...]:
        if tree_pool is not None:
            return tree_pool.take(str(state_dir), n, settings.cmake, settings.config, state_dir / "logs")
        return tuple(
            VariantTree(state_dir, f"worker-{i}", settings.cmake, settings.config) for i in range(start, start + n)
        )

    if tree_pool is not None:  # the suite's tree as the user configured the project, configured once
        own, model, written = tree_pool.own_build(
            settings, spec.target, spec.source_dir, spec.build_dir, state_dir / "logs"
        )
        _said_writes(spec, written, log)
        (first,) = new_trees(0, 1)
    else:
        (first,) = new_trees(0, 1)
        own = first
        model, written = _own_build(spec, first, settings, log)
    target = model.target(spec.target)
    language = target.primary_language
    if language not in ("CUDA", "CXX", "C"):
        raise UsageError(f"target '{spec.target}' compiles no C, C++ or CUDA sources; nothing to tune")
    _check_arch_option(spec, language)
    if gpu_here and spec.cuda_arch:
        require_gpu()
    if language != "CUDA" and (with_cuda := _cuda_in_dependencies(model, target)):
        as_stream(log).note(
            f"{spec.target} has no CUDA sources of its own; its CUDA code is in {', '.join(with_cuda)}: "
            f"tune {'that target' if len(with_cuda) == 1 else 'those targets'} (--target) for nvcc flags"
        )
    toolchain = model.toolchains.get(language)
    if toolchain is None:
        raise CompileIQError(f"CMake reported no {language} compiler for this project (CMake >= 3.20 is needed)")
    family = family_for_compiler(language, toolchain.compiler_id)
    device, capability, arch = host_cpu(), "", ""
    if language == "CUDA":
        arch, device, capability = _cuda_architecture(spec, own, target, log, placement)
    meter = _energy_meter(spec, language, placement, log)
    step_cache, started = _step_cache(spec, language, settings.cuda_launcher, log)
    if started and tree_pool is not None:
        tree_pool.step_cache = step_cache  # the suite stops it when it ends
    settings = replace(
        settings, cuda_arch=arch, cuda_launcher=step_cache.launcher if step_cache else settings.cuda_launcher
    )
    if tree_pool is not None:
        tree_pool.begin(spec.target)
    base, made = _suite_baselines(spec, tree_pool, settings, language, model, log)
    model = _pool_step(
        tree_pool,
        spec.target,
        (first,),  # CUDA: now building this architecture only
        lambda: first.prepare(settings, spec.target, language),
    )
    target = model.target(spec.target)
    exclude = spec.excluded_flags
    unchecked = unchecked_note(spec)
    if unchecked:
        as_stream(log).info(f"{unchecked}")
    space = load_space(family, toolchain.compiler_id, toolchain.version, spec.include_flags, exclude, arch=arch)
    tools = Tools.found(
        settings.cmake,
        settings.cmake_version,
        language,
        toolchain.path,
        read_cache(first.path),
        step_cache,
        started and tree_pool is None,
    )
    fingerprints = None
    screen_kernels: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}
    objects: tuple[Path, ...] = ()
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
    if language == "CUDA":
        if (
            tree_pool is not None
            and tree_pool.ahead is not None
            and spec.screen
            and not many_files(target)
            and tree_pool.ahead.wait_for(spec.target, SCREEN_SHARE * spec.time_limit if spec.time_limit else 600.0)
        ):
            as_stream(log).info(
                f"the suite's screening ahead was screening {spec.target}: waited for it (its "
                "values are in the screening cache)"
            )
        space, screen_kernels, fingerprints, objects, acf = _cuda_space(spec, first, target, tools, arch, space, log)
        tools = replace(tools, acf=acf)
    _require_dimensions(spec, space, language)
    gpus = _gpus(spec, language, log) if placement is None else placement.gpus
    if placement is not None and len(gpus) > 1:
        as_stream(log).info(f"benchmarks run on {len(gpus)} GPUs of the cluster in parallel, one run per GPU at a time")
    # + 1 per GPU: the baseline build measured next to trials on a noisy machine; the rest (up to one per
    # finalist and the baseline) are configured when the finalists need them (OnDemandTrees)
    searched = spec.workers + max(1, len(gpus))
    n_trees = max(searched, FINALISTS + 1)
    trees = (first, *new_trees(1, n_trees - 1))
    later = OnDemandTrees(trees, 1, settings, spec.target, language, one_at_a_time=bool(written))
    _pool_step(tree_pool, spec.target, trees[:searched], lambda: later.configure(searched))
    bench, owner = _resolve_benchmark(spec, model, trees[0])
    build_targets = _build_targets(spec, bench, owner)
    device_link, space = _device_link(spec, target, owner, space, log)
    code = _code_identity(spec, first, target, log)
    own_entries = first.compile_commands(target.sources_in(language), target.name)  # read once for both
    own_commands, space = _own_commands(first, own_entries), compile_line_evidence(space, own_entries, language, log)
    return TuneSetup(
        spec=spec,
        state_dir=state_dir,
        trees=trees,
        space=space,
        bench=bench,
        later=later,
        project=ProjectModel(
            target=target,
            language=language,
            toolchain=toolchain,
            build_targets=build_targets,
            build_type=first.decisions().config,
            objects=objects,
            own_commands=own_commands,
            device_link=device_link,
            artifacts=tuple(a.relative_to(trees[0].path) for a in target.artifacts if a.is_relative_to(trees[0].path)),
        ),
        devices=Devices(
            cuda_arch=arch,
            device=device,
            compute_capability=capability,
            gpus=gpus,
            monitor=GpuMonitor() if language == "CUDA" else None,
            meter=meter,
        ),
        code=replace(code, flags_sha256=first.decisions().flags_sha256),
        fingerprints=fingerprints,
        screen_kernels=screen_kernels,
        tools=tools,
        base=base,
        cores=tree_pool.cores if tree_pool is not None else CoreShare(),
    )


def _pool_step(tree_pool: TreePool | None, target: str, trees: tuple[VariantTree, ...], step: Callable[[], T]) -> T:
    """A setup step that configures `trees` where needed; in a suite, its seconds are the suite's shared setup
    when it configured one of the pool's trees for the first time in the run (TreePool.first_configures)."""
    return step() if tree_pool is None else tree_pool.first_configures(target, trees, step)


def _suite_baselines(
    spec: TuneSpec, tree_pool: TreePool | None, settings: VariantSettings, language: str, model: CodeModel, log: Log
) -> tuple[BaselineTree | None, Baselines | None]:
    """A suite's target: the tree of the suite's one baseline build that holds this target's baseline (the
    first target to ask makes it for all of them, on every core), or None (not a suite, or not held: the
    target builds its own, as a tune alone does); and that build when this target made it. Said by the
    target that made it."""
    if tree_pool is None:
        return None, None
    stream = as_stream(log)
    base, made = tree_pool.baselines(
        settings, spec.target, language, model, spec.state_dir / "logs", progress=stream.info
    )
    if made and base.tree is not None and base.result is not None:
        stream.info(
            f"the suite's baselines: {plural(len(base.targets), 'target')} and their benchmarks built once, "
            f"in one build on every core ({base.result.seconds:.1f} s, tree {base.tree.path.name}); each "
            "target measures its baseline there"
        )
        if base.why:
            stream.note(f"the suite's one baseline build: {base.why}")
    elif made and base.built:
        stream.note(f"the suite's one baseline build did not run: {base.why}; each target builds its own baseline")
    elif made:
        stream.info(f"each target of the suite builds its own baseline: {base.why}")
    return (base.tree if base.holds(spec.target) else None), (base if made else None)


def _own_build(spec: TuneSpec, first: VariantTree, settings: VariantSettings, log: Log) -> tuple[CodeModel, list[Path]]:
    """The project's own build, as the user configured it, in the first variant tree; and the files the configure
    wrote into the source tree (then the variant trees are configured one at a time, said in a note)."""
    model, written = first.prepare_watching(settings, spec.target, "", spec.source_dir, spec.build_dir)
    _said_writes(spec, written, log)
    return model, written


def _said_writes(spec: TuneSpec, written: list[Path], log: Log) -> None:
    if written:
        shown = ", ".join(str(p.relative_to(spec.source_dir)) for p in written[:3]) + (
            " ..." if len(written) > 3 else ""
        )
        as_stream(log).note(
            f"configuring the project writes into its source tree ({shown}); the variant trees "
            "are configured one at a time"
        )


def _cuda_space(
    spec: TuneSpec, first: VariantTree, target: Target, tools: Tools, arch: str, space: FlagSpace, log: Log
) -> tuple[
    FlagSpace,
    dict[tuple[str, tuple[str, ...]], frozenset[str]],
    FingerprintCache | None,
    tuple[Path, ...],
    Candidates | None,
]:
    """A CUDA target's space after the probe, the adaptation, the ACF candidates and the static screening
    (prepare_cuda_space), the kernels each kept value changes, the device-code fingerprints (None without
    cuobjdump, said), the target's object files relative to a variant tree and the ACF candidates gathered."""
    fingerprints = None
    screen_kernels: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}
    objects: tuple[Path, ...] = ()
    exclude = spec.excluded_flags
    entries = first.compile_commands(target.sources_in("CUDA"), target.name)
    lto = device_lto_wanted(spec.include_flags, exclude)
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
        decisions=first.decisions(),
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
    space = prepared.space
    if prepared.screen is not None:
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
        objects = tuple(
            o.relative_to(first.path)
            for o in (output_file(e) for e in entries)
            if o is not None and o.resolve().is_relative_to(first.path.resolve())
        )
    return space, screen_kernels, fingerprints, objects, prepared.acf


def _step_cache(spec: TuneSpec, language: str, own: str, log: Log) -> tuple[StepCache | None, bool]:
    """CUDA: the compile-step cache of the variant trees' builds, its server running, and whether this call
    started it; None (said) when it cannot be used (`own`: the project's own launcher) or --no-step-cache."""
    if language != "CUDA":
        return None, False
    cache, why = step_cache_for(spec.build_dir, own, spec.step_cache)
    started = False
    if cache is not None:
        started, why = cache.start()
        if why:
            as_stream(log).note(f"{why}; each build's compiles start a server of their own")
    elif why:
        as_stream(log).note(why)
    return cache, started


def _require_dimensions(spec: TuneSpec, space: FlagSpace, language: str) -> None:
    """Bad input when no dimension is left to search (host-side dimensions asked for join after the baseline:
    host_side.py)."""
    if not space.dimensions and not (language == "CUDA" and host_side_named(spec.include_flags)):
        why = "; ".join(space.dropped[-3:]) or "the include/exclude options leave none"
        raise UsageError(
            f"nothing to tune for {spec.target}: no flag dimension is left to search ({why}); "
            "change --include-flags/--exclude-flags"
        )


def _build_targets(spec: TuneSpec, bench: BenchCommand, owner: str | None) -> tuple[str, ...]:
    """What a variant build builds: everything when a check runs or the benchmark is not a file of the build
    tree a target of the project owns; else the target and the benchmark's owner."""
    if spec.verify or (owner is None and not Path(bench.argv[0]).is_absolute()):
        return ("all",)
    if owner is None:
        return ("all",) if str(bench.argv[0]).startswith(str(spec.build_dir)) else (spec.target,)
    return tuple(dict.fromkeys((spec.target, owner)))


LIBRARY_TYPES = ("STATIC_LIBRARY", "OBJECT_LIBRARY")


def unchecked_note(spec: TuneSpec) -> str:
    """The line for a tune whose results nothing checks ("" when something does, or numerics are excluded
    anyway): --portable excludes host-specific flags, which says nothing about checks."""
    if spec.checks_outputs or "unsafe_numerics" in spec.exclude_flags:
        return ""
    return (
        "nothing checks the benchmark's results (no PASS_REGEX, VERIFY or output comparison): flags that "
        "change numerics (fast-math family) are not searched"
    )


def _device_link(
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


def replay_setup(spec: TuneSpec, log: Log, placement: Placement | None = None) -> TuneSetup:
    """A tune whose builds and benchmark runs are answered from a recorded landscape (no CMake, no GPU);
    --cuda-arch or a placement's architecture relabels it (simulated GPU types)."""
    assert spec.replay is not None  # (called for a replay)
    if spec.objective == "energy":
        raise UsageError(
            f"--objective energy cannot be replayed: the landscape {spec.replay} records times, not "
            "the energy of runs; replay with --objective time (the default)"
        )
    landscape = Landscape.load(spec.replay)
    meta = landscape.meta
    gpu = (meta.get("gpu") or {}).get("name") or "no GPU"
    arch = (
        spec.cuda_arch
        or (placement.arch if placement else "")
        or str((meta.get("gpu") or {}).get("arch") or meta.get("arch") or "90").removeprefix("sm_")
    )
    gpus = placement.gpus if placement else visible_gpus(spec.gpus) if os.environ.get(SIMULATE_VARIABLE) else ()
    as_stream(log).info(f"REPLAY of {landscape.describe()}; nothing is built or run")
    if placement is not None and len(placement.gpus) > 1:
        as_stream(log).info(
            f"benchmarks run on {len(placement.gpus)} GPUs of the cluster in parallel, one run per GPU at a time"
        )
    state_dir = spec.state_dir
    trees = tuple(
        VariantTree(state_dir, f"replay-{i}", "cmake")
        for i in range(max(spec.workers + max(1, len(gpus)), FINALISTS + 1))
    )
    runner = ReplayRunner(
        spec, BenchCommand((), (), spec.build_dir), None, landscape=landscape, seed=spec.seed, pace=_replay_pace()
    )
    version = landscape.compiler_version
    return TuneSetup(
        spec=spec,
        state_dir=state_dir,
        trees=trees,
        space=landscape.space(),
        bench=runner.bench,
        replay=runner,
        project=ProjectModel(
            target=Target(spec.target, "REPLAY", ("CUDA",), (), (), ()),
            language="CUDA",
            toolchain=Toolchain("CUDA", "NVIDIA", version, ""),
        ),
        devices=Devices(
            cuda_arch=arch,
            compute_capability=compute_capability(arch),
            gpus=gpus,
            device=f"{placement.device if placement else gpu} (REPLAY of {Path(spec.replay).name})",
        ),
    )


PACE_VARIABLE = "COMPILEIQ_REPLAY_PACE"  # simulations: a replayed run sleeps its recorded time x this


def _replay_pace() -> float:
    text = os.environ.get(PACE_VARIABLE, "")
    try:
        pace = float(text) if text else 0.0
    except ValueError:
        pace = -1.0
    if not (pace >= 0 and math.isfinite(pace)):
        raise UsageError(
            f"{PACE_VARIABLE}={text!r} is not a factor >= 0 (a replayed run sleeps its recorded time x it)"
        )
    return pace


def _code_identity(spec: TuneSpec, tree: VariantTree, target: Target, log: Log) -> CodeIdentity:
    """What the trials measure besides the flags: the target's sources and the project headers its compiles
    include (the compiler's dependency scan of the project's own compile commands), and those commands."""
    entries = tree.compile_commands(target.sources, target.name)
    scan = depscan.scan_headers(entries, spec.source_dir, (spec.build_dir,))
    for source, why in scan.problems[:3]:
        as_stream(log).note(
            f"the headers of {source} could not be listed ({why}); a change in them is not "
            "seen as a change of the sources"
        )
    commands = sorted((str(Path(e["file"]).resolve()), sorted(command_tokens(tree, e))) for e in entries)
    return CodeIdentity(
        sources_sha256=depscan.sources_sha256(tree.source_lines(), spec.source_dir, scan.headers),
        headers=scan.headers,
        commands_sha256=hashlib.sha256(json.dumps(commands).encode()).hexdigest(),
    )


def _own_commands(tree: VariantTree, entries: list[dict[str, Any]]) -> dict[str, frozenset[str]]:
    """Per source (its compile command among `entries`): the tokens of that command with the project's own
    flags."""
    return {str(Path(entry["file"]).resolve()): command_tokens(tree, entry) for entry in entries}
