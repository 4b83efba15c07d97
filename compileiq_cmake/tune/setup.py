"""Tune stage 1, setup: the project read once into typed records (tune.project_reading: its own build as the
user configured it, then the first variant tree configured for the tune), and what is decided from them: what is
tuned for and where the benchmarks run (tune.setup_devices), the flag space (tune.setup_space: catalogue, probe,
adaptation, screening), the variant trees (tune.variant_trees), what the trials measure (tune.setup_measured: the
benchmark resolved, the code identity). The same from a recorded landscape: tune.replay_setup."""

from __future__ import annotations

from dataclasses import replace

from ..execute.build import CoreShare
from ..measure.gpu import GpuMonitor, Placement
from ..model.events import Log, as_stream
from ..model.spec import TuneSpec
from ..model.wording import plural
from ..project.baseline_tree import BaselineTree
from ..project.file_api import CodeModel
from ..project.variant_settings import VariantSettings
from .compile_line import compile_line_evidence
from .project_reading import read_own_build, read_variant_build
from .setup_devices import check_target, run_energy_meter, step_cache, target_device, tune_gpus
from .setup_measured import build_targets, code_identity, own_commands, resolve_benchmark
from .setup_space import device_link, flag_space
from .tree_pool import Baselines, TreePool
from .tune_setup import Devices, ProjectModel, Tools, TuneSetup
from .variant_trees import variant_trees


def setup(
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
    own = read_own_build(spec, log, tree_pool)
    toolchain, family = check_target(spec, own, gpu_here, log)
    language = own.language
    arch, device, capability = target_device(spec, own, log, placement)
    meter = run_energy_meter(spec, language, placement, log)
    cache, started = step_cache(spec, language, own.settings.cuda_launcher, log)
    if started and tree_pool is not None:
        tree_pool.step_cache = cache  # the suite stops it when it ends
    launcher = cache.launcher if cache else own.settings.cuda_launcher
    settings = replace(own.settings, cuda_arch=arch, cuda_launcher=launcher)
    if tree_pool is not None:
        tree_pool.begin(spec.target)
    base, made = _suite_baselines(spec, tree_pool, settings, language, own.model, log)
    variant = read_variant_build(own, settings, tree_pool)  # CUDA: now building this architecture only
    tools = Tools.found(
        settings.cmake,
        settings.cmake_version,
        language,
        toolchain.path,
        variant.cache,
        cache,
        started and tree_pool is None,
    )
    space, tools, device_code, objects = flag_space(spec, variant, toolchain, family, tools, arch, made, tree_pool, log)
    gpus = tune_gpus(spec, language, log) if placement is None else placement.gpus
    if placement is not None and len(gpus) > 1:
        as_stream(log).info(f"benchmarks run on {len(gpus)} GPUs of the cluster in parallel, one run per GPU at a time")
    trees, later = variant_trees(spec, own.first, settings, language, bool(own.written), tree_pool, len(gpus))
    first = trees[0].path
    bench, owner = resolve_benchmark(spec, variant.model, trees[0])
    linked, space = device_link(spec, variant.target, owner, space, log)
    code = code_identity(variant, log)
    space = compile_line_evidence(space, variant.commands, language, log)
    return TuneSetup(
        spec=spec,
        trees=trees,
        space=space,
        bench=bench,
        later=later,
        project=ProjectModel(
            target=variant.target,
            language=language,
            toolchain=toolchain,
            build_targets=build_targets(spec, bench, owner),
            build_type=variant.decisions.config,
            objects=objects,
            own_commands=own_commands(variant.tree, variant.commands),
            device_link=linked,
            artifacts=tuple(a.relative_to(first) for a in variant.target.artifacts if a.is_relative_to(first)),
        ),
        devices=Devices(
            cuda_arch=arch,
            device=device,
            compute_capability=capability,
            gpus=gpus,
            monitor=GpuMonitor() if language == "CUDA" else None,
            meter=meter,
        ),
        code=code,
        device_code=device_code,
        tools=tools,
        base=base,
        cores=tree_pool.cores if tree_pool is not None else CoreShare(),
    )


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
