#!/usr/bin/env python3
"""Train the shipped prior (issue 23) from the recorded landscapes: compileiq_cmake/search/prior_data.json.

For every recorded single-kernel landscape in benchmarks/landscapes/ (not synthetic), and every landscape of a
whole CMake project recorded with the learning design (record_project.py --learn: meta.sampling "learn...",
meta.target set; per-file landscapes are left out):

1. features: a single kernel's default build (`nvcc -cubin -arch=sm_90 -O3 <meta.extra_flags> <meta.source>`,
   the build the landscape's default code is) through compileiq_cmake.flags.features, exactly what a tune
   computes from a project's objects; a project's target: the project of this repository it was recorded
   from (PROJECTS: meta.source is the recording machine's copy) configured and built (Release, Ninja, no
   tuned flags: the landscape's default) in a temporary directory, and target_features of the target's
   object files with meta.relocatable, as a tune computes them from its baseline build (tune/prior_use.py);
2. effects: each recorded single-value point (one dimension changed) as log(default time / its time) from
   the landscape's medians, 0 when its device code is the default's, None when it is invalid;
3. fit: PriorModel.fit (leave-one-out choice of bandwidth, shrink and features).

Host kernels (benchmarks/landscapes/host, g++ flags measured on a CPU) give gcc observations: features from
their object's instruction mix (compileiq_cmake/flags/host_features.py), effects as above; kept only with
--families nvcc,gcc (the evaluation's file; not the shipped one, see --families).

Usage: .venv/bin/python benchmarks/evaluation/prior_train.py [--out compileiq_cmake/search/prior_data.json]
       [--exclude k1,k2] [--families nvcc|nvcc,gcc] (needs nvcc, cuobjdump, g++, objdump, cmake and ninja; no GPU)
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/evaluation
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from compileiq_cmake.flags.features import TargetFeatures, file_features, target_features  # noqa: E402
from compileiq_cmake.flags.host_features import object_features  # noqa: E402
from compileiq_cmake.search.landscape import Landscape  # noqa: E402
from compileiq_cmake.search.prior import Observation, PriorModel, SHIPPED, value_key  # noqa: E402

LANDSCAPES = ROOT / "benchmarks" / "landscapes"
HOST = LANDSCAPES / "host"  # host (g++) kernels' landscapes, recorded on a CPU (benchmarks/landscapes/host/README.md)
ORIGIN = {  # which batch a kernel came from (leave-one-source-out groups)
    **dict.fromkeys(("nbody", "stencil", "sgemm", "blackscholes", "spmv_csr", "rk4_oscillators", "softmax_rows",
                     "layernorm_gelu", "conv2d_5x5"), "own-v1"),
    "mc_rdc": "own-project",
    "multi_bench": "own-example",  # examples/cuda_multifile, written before and apart from suite16
}
# Whole-project learning-design landscapes: kernel -> (the project in this repository it was recorded from, its
# kind). The landscape's meta.source is the project's copy on the recording machine (h200_record_rdc.sh copies
# the project to /tmp/rdc-<target>/src; mc_rdc's was recorded from /tmp/rdc/src); the recorded data stays as recorded.
PROJECTS = {
    "mc_rdc": ("benchmarks/projects/suite16", "montecarlo"),
    "multi_bench": ("examples/cuda_multifile", "mixed"),
}


def is_project_learning(meta: dict) -> bool:
    """A whole CMake project's target recorded with the learning design (record_project.py --learn)."""
    return str(meta.get("sampling", "")).startswith("learn") and bool(meta.get("target"))


def is_host(meta: dict) -> bool:
    """A host kernel's landscape (record_host.py: g++ flags, measured on a CPU)."""
    return str(meta.get("source", "")).startswith("benchmarks/landscapes/host/kernels/")


def recorded() -> list[Path]:
    out = []
    for path in [*sorted(LANDSCAPES.glob("*.json")), *sorted(HOST.glob("*.json"))]:
        doc = json.loads(path.read_text())
        meta = doc.get("meta", {})
        if doc.get("format") != "compileiq-landscape" or meta.get("synthetic") or meta.get("dry_run"):
            continue
        if is_project_learning(meta):
            if doc.get("kernel") not in PROJECTS:
                raise SystemExit(f"{path}: a project landscape of the learning design whose project is unknown: add "
                                 f"{doc.get('kernel')!r} to PROJECTS in {Path(__file__).name}")
        elif not str(meta.get("source", "")).startswith("benchmarks/landscapes/kernels/") and not is_host(meta):
            continue  # other whole projects (per-file dimensions) are not single kernels
        out.append(path)
    return out


def landscape_path(kernel: str) -> Path:
    """The recorded landscape of this kernel (its file name may differ: mc_rdc -> mc_rdc_learn.json)."""
    direct = LANDSCAPES / f"{kernel}.json"
    if direct.is_file():
        return direct
    for path in recorded():
        if json.loads(path.read_text()).get("kernel") == kernel:
            return path
    raise FileNotFoundError(f"no recorded landscape of {kernel} in {LANDSCAPES}")


def origin(name: str) -> str:
    """own-v1 (the first nine kernels), own-llm / own-hpc (inputs_llm.py / inputs_hpc.py), own-project (a
    target of benchmarks/projects), own-example (a target of examples/), own-host (a host kernel of
    landscapes/host/), else other."""
    if name in ORIGIN:
        return ORIGIN[name]
    if (HOST / f"{name}.json").is_file():
        return "own-host"
    sys.path.insert(0, str(LANDSCAPES))
    import inputs_hpc  # noqa: PLC0415
    import inputs_llm  # noqa: PLC0415
    return "own-llm" if name in inputs_llm.ENTRIES else "own-hpc" if name in inputs_hpc.ENTRIES else "other"


def kernel_features(land: Landscape, meta: dict, work: Path) -> dict[str, float]:
    if is_host(meta):  # as a tune computes a host target's (tune/prior_use.py): its object's instruction mix
        obj = work / f"{land.kernel}.o"
        cmd = ["g++", *meta["base_flags"], "-c", str(ROOT / meta["source"]), "-o", str(obj)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        return TargetFeatures(kernels=tuple(object_features([obj])), units=1, arch="").vector()
    src = ROOT / meta["source"]
    cubin = work / f"{land.kernel}.cubin"
    cmd = ["nvcc", "-cubin", "-arch=sm_90", "-O3", *meta.get("extra_flags", []), str(src), "-o", str(cubin)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    ks = file_features(cubin, arch="90")
    return TargetFeatures(kernels=tuple(ks), units=1, relocatable=False, arch="90").vector()


def project_features(land: Landscape, meta: dict, work: Path) -> dict[str, float]:
    """A project target's features as a tune computes them (tune/prior_use.py): the default build of the
    target (configure + build, no tuned flags), then target_features of its objects (the compile steps'
    outputs; not CMake's device-link object) with the landscape's relocatable flag."""
    project = ROOT / PROJECTS[land.kernel][0]
    target = meta["target"]
    build = work / f"{land.kernel}-build"
    for cmd in (["cmake", "-S", str(project), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
                ["cmake", "--build", str(build), "--target", target]):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    objects = sorted(p for p in (build / "CMakeFiles" / f"{target}.dir").rglob("*.o")
                     if p.name != "cmake_device_link.o")
    if not objects:
        raise SystemExit(f"no object file of {target} in {build}")
    arch = str(meta.get("arch", "90")).replace("sm_", "")
    return target_features(objects, arch=arch, relocatable=bool(meta.get("relocatable"))).vector()


def single_effects(land: Landscape) -> dict[str, float | None]:
    base = land.default
    out: dict[str, float | None] = {}
    nd = len(land.dimensions)
    for d, dim in enumerate(land.dimensions):
        for i in range(1, len(dim.values)):
            choice = [0] * nd
            choice[d] = i
            p = land.point(tuple(choice))
            if p is None:
                continue
            key = value_key(land.family, dim.name, dim.values[i])
            if not p.valid:
                out[key] = None
            elif p.digest == base.digest:
                out[key] = 0.0
            else:
                out[key] = math.log(p.speedup)
    return out


def observations(exclude: set[str] = frozenset()) -> list[Observation]:
    obs = []
    with tempfile.TemporaryDirectory(prefix="prior-train-") as tmp:
        for path in recorded():
            doc = json.loads(path.read_text())
            land = Landscape.load(path)
            if land.kernel in exclude:
                continue
            meta = doc["meta"]
            if is_project_learning(meta):
                features, kind = project_features(land, meta, Path(tmp)), PROJECTS[land.kernel][1]
            else:
                features, kind = kernel_features(land, meta, Path(tmp)), meta.get("kind", "")
            obs.append(Observation(id=f"landscape:{land.kernel}", source=origin(land.kernel), family=land.family,
                                   arch=str(meta.get("arch", "sm_90")).replace("sm_", ""), kind=kind,
                                   features=features, effects=single_effects(land)))
    return obs


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(SHIPPED))
    ap.add_argument("--exclude", default="", help="comma-separated kernels left out")
    ap.add_argument("--families", default="nvcc", help="the flag families whose observations are kept (nvcc,gcc); "
                    "the shipped file holds nvcc only: the host (gcc) prior was significantly worse than none on "
                    "2 of 13, 5 of 26 and (all 26 on one machine) 6 of 26 held-out host kernels "
                    "(docs/benchmarks/prior.md, 'A host prior')")
    args = ap.parse_args()
    families = set(args.families.split(","))
    obs = [o for o in observations({k for k in args.exclude.split(",") if k}) if o.family in families]
    model = PriorModel(obs, provenance={
        "made_by": "benchmarks/evaluation/prior_train.py", "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        "commit": commit(), "landscapes": [o.id.split(":", 1)[1] for o in obs],
        "note": "features from nvcc 13.0 sm_90 default builds (a project's target: its objects); effects from "
                "H200 landscapes (benchmarks/landscapes); gcc: host kernels' effects over g++ -O3 -DNDEBUG, "
                "measured on a 2-core x86-64 CPU (benchmarks/landscapes/host), features from the g++ object's "
                "instruction mix (flags/host_features.py)"})
    report = model.fit()
    model.provenance["fit"] = report
    model.save(args.out)
    for fam, r in report.items():
        print(f"{fam}: {r['observations']} observations, {r['values']} values, loo {r['loo_score']:.5f}, "
              f"bandwidth {r['bandwidth']}, shrink {r['shrink']}, features {r['features']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
