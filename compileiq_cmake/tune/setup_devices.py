"""Tune setup, deciding what is tuned for and where the benchmarks run, from the project's own build as read
(tune.project_reading): the target's language checked against the options, the CUDA architecture, the GPUs, the
energy meter, and the compile-step cache of the variant trees' CUDA compiles."""

from __future__ import annotations

import os

from ..execute.step_cache import StepCache, step_cache_for
from ..flags import family_for_compiler
from ..measure.energy import EnergyMeter, NvmlEnergy, energy_meter
from ..measure.gpu import SIMULATE_VARIABLE, GpuSlot, Placement, detect_gpu, host_cpu, require_gpu, visible_gpus
from ..model.errors import CompileIQError, UsageError
from ..model.events import Log, as_stream
from ..model.spec import TuneSpec, compute_capability
from ..project.file_api import CodeModel, Target, Toolchain
from .project_reading import OwnBuild


def check_target(spec: TuneSpec, own: OwnBuild, gpu_here: bool, log: Log) -> tuple[Toolchain, str]:
    """The tuned language's toolchain and flag family, once the target is known to be tunable and the options
    fit its language (`gpu_here`: a CUDA target tuned with --cuda-arch needs this machine's GPU)."""
    language = own.language
    if language not in ("CUDA", "CXX", "C"):
        raise UsageError(f"target '{spec.target}' compiles no C, C++ or CUDA sources; nothing to tune")
    _check_arch_option(spec, language)
    if gpu_here and spec.cuda_arch:
        require_gpu()
    if language != "CUDA" and (with_cuda := _cuda_in_dependencies(own.model, own.target)):
        as_stream(log).note(
            f"{spec.target} has no CUDA sources of its own; its CUDA code is in {', '.join(with_cuda)}: "
            f"tune {'that target' if len(with_cuda) == 1 else 'those targets'} (--target) for nvcc flags"
        )
    toolchain = own.toolchain
    if toolchain is None:
        raise CompileIQError(f"CMake reported no {language} compiler for this project (CMake >= 3.20 is needed)")
    return toolchain, family_for_compiler(language, toolchain.compiler_id)


def target_device(spec: TuneSpec, own: OwnBuild, log: Log, placement: Placement | None) -> tuple[str, str, str]:
    """(arch, device, compute capability): a CUDA target's (cuda_architecture), a host target's CPU."""
    if own.language == "CUDA":
        return cuda_architecture(spec, own, log, placement)
    return "", host_cpu(), ""


def cuda_architecture(spec: TuneSpec, own: OwnBuild, log: Log, placement: Placement | None) -> tuple[str, str, str]:
    """(arch, device, compute capability) to tune for: --cuda-arch, else the GPU's. Says which architectures
    the project's own build of the target really targets (its compile commands: CUDA_ARCHITECTURES or
    -arch/-gencode written by hand) and warns when the apply would not match this GPU's with them (the CMake
    module's decision, ApplyDecisions.applies_to_arch)."""
    assert own.architectures is not None and own.decisions is not None  # (read for a CUDA target)
    built = own.architectures
    if spec.cuda_arch:
        arch = spec.cuda_arch
        device, capability = f"(architecture {arch} given on the command line)", compute_capability(arch)
    elif placement is not None:  # the GPUs of a cluster: their architecture, as their workers reported it
        arch, device, capability = placement.arch, placement.device, compute_capability(placement.arch)
    else:
        gpu = detect_gpu()
        arch = gpu.arch
        device, capability = f"{gpu.name} ({gpu.sm_count} SMs)", "{}.{}".format(*gpu.compute_capability)
    origin = " ".join(built.options) if built.options else "no architecture option"
    as_stream(log).info(
        f"the project's own build of {spec.target} targets {built.describe()} ({origin}); tuning for sm_{arch}"
    )
    if not own.decisions.applies_to_arch(arch):  # the apply's own architecture decision
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


def run_energy_meter(spec: TuneSpec, language: str, placement: Placement | None, log: Log) -> EnergyMeter | None:
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


def tune_gpus(spec: TuneSpec, language: str, log: Log) -> tuple[GpuSlot, ...]:
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


def step_cache(spec: TuneSpec, language: str, own: str, log: Log) -> tuple[StepCache | None, bool]:
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
