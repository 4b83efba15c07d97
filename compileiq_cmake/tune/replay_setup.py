"""Tune setup from a recorded landscape (--replay): the builds and benchmark runs of the tune are answered from
it, so no CMake runs and no GPU is needed; the same typed setup (TuneSetup) as tune.setup makes."""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..execute.replay import ReplayRunner
from ..measure.gpu import SIMULATE_VARIABLE, Placement, visible_gpus
from ..measure.runs import BenchCommand
from ..model.errors import UsageError
from ..model.events import Log, as_stream
from ..model.spec import TuneSpec, compute_capability
from ..project.cmake_project import VariantTree
from ..project.file_api import Target, Toolchain
from ..search.landscape import Landscape
from .tune_setup import FINALISTS, Devices, ProjectModel, TuneSetup

PACE_VARIABLE = "COMPILEIQ_REPLAY_PACE"  # simulations: a replayed run sleeps its recorded time x this
# simulations: the replayed runs' noise drawn from another stream than --seed gives (the search's proposals keep
# --seed): the same tune measured twice, as two live tunes of one seed would be
NOISE_VARIABLE = "COMPILEIQ_REPLAY_NOISE_SEED"


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
    trees = tuple(
        VariantTree(spec.state_dir, f"replay-{i}", "cmake")
        for i in range(max(spec.workers + max(1, len(gpus)) + 1, FINALISTS + 1))  # (+1 as in variant_trees)
    )
    runner = ReplayRunner(
        spec,
        BenchCommand((), (), spec.build_dir),
        None,
        landscape=landscape,
        seed=_noise_seed(spec.seed),
        pace=_replay_pace(),
    )
    version = landscape.compiler_version
    # a host compiler's landscape (family gcc) replays a C++ target: its entry is checked as gcc flags
    language, compiler = ("CXX", "GNU") if landscape.family == "gcc" else ("CUDA", "NVIDIA")
    return TuneSetup(
        spec=spec,
        trees=trees,
        space=landscape.space(),
        bench=runner.bench,
        replay=runner,
        project=ProjectModel(
            target=Target(spec.target, "REPLAY", (language,), (), (), ()),
            language=language,
            toolchain=Toolchain(language, compiler, version, ""),
        ),
        devices=Devices(
            cuda_arch=arch,
            compute_capability=compute_capability(arch),
            gpus=gpus,
            device=f"{placement.device if placement else gpu} (REPLAY of {Path(spec.replay).name})",
        ),
    )


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


def _noise_seed(seed: int) -> int:
    """The replay runner's noise stream: --seed's, or NOISE_VARIABLE's when set."""
    text = os.environ.get(NOISE_VARIABLE, "")
    if not text:
        return seed
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{NOISE_VARIABLE}={text!r} is not an integer (the replayed runs' noise seed)") from None
