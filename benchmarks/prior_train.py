#!/usr/bin/env python3
"""Train the shipped prior (issue 23) from the recorded landscapes: compileiq_cmake/search/prior_data.json.

For every recorded single-kernel landscape in benchmarks/landscapes/ (not synthetic, not a whole project):

1. features: the kernel's default build (`nvcc -cubin -arch=sm_90 -O3 <meta.extra_flags> <meta.source>`,
   the build the landscape's default code is) through compileiq_cmake.flags.features, exactly what a tune
   computes from a project's objects;
2. effects: each recorded single-value point (one dimension changed) as log(default time / its time) from
   the landscape's medians, 0 when its device code is the default's, None when it is invalid;
3. fit: PriorModel.fit (leave-one-out choice of bandwidth, shrink and features).

Usage: .venv/bin/python benchmarks/prior_train.py [--out compileiq_cmake/search/prior_data.json]
       [--exclude k1,k2] (needs nvcc and cuobjdump; no GPU)
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from compileiq_cmake.flags.features import TargetFeatures, file_features  # noqa: E402
from compileiq_cmake.search.landscape import Landscape  # noqa: E402
from compileiq_cmake.search.prior import Observation, PriorModel, SHIPPED, value_key  # noqa: E402

LANDSCAPES = HERE / "landscapes"
ORIGIN = {  # which batch a kernel came from (leave-one-source-out groups)
    **dict.fromkeys(("nbody", "stencil", "sgemm", "blackscholes", "spmv_csr", "rk4_oscillators", "softmax_rows",
                     "layernorm_gelu", "conv2d_5x5"), "own-v1"),
}


def recorded() -> list[Path]:
    out = []
    for path in sorted(LANDSCAPES.glob("*.json")):
        doc = json.loads(path.read_text())
        meta = doc.get("meta", {})
        if doc.get("format") != "compileiq-landscape" or meta.get("synthetic") or meta.get("dry_run"):
            continue
        if not str(meta.get("source", "")).startswith("benchmarks/landscapes/kernels/"):
            continue  # whole projects (per-file dimensions) are not single kernels
        out.append(path)
    return out


def origin(name: str) -> str:
    """own-v1 (the first nine kernels), own-llm / own-hpc (inputs_llm.py / inputs_hpc.py), else other."""
    if name in ORIGIN:
        return ORIGIN[name]
    sys.path.insert(0, str(LANDSCAPES))
    import inputs_hpc  # noqa: PLC0415
    import inputs_llm  # noqa: PLC0415
    return "own-llm" if name in inputs_llm.ENTRIES else "own-hpc" if name in inputs_hpc.ENTRIES else "other"


def kernel_features(land: Landscape, meta: dict, work: Path) -> dict[str, float]:
    src = ROOT / meta["source"]
    cubin = work / f"{land.kernel}.cubin"
    cmd = ["nvcc", "-cubin", "-arch=sm_90", "-O3", *meta.get("extra_flags", []), str(src), "-o", str(cubin)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    ks = file_features(cubin, arch="90")
    return TargetFeatures(kernels=tuple(ks), units=1, relocatable=False, arch="90").vector()


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
            obs.append(Observation(id=f"landscape:{land.kernel}", source=origin(land.kernel), family=land.family,
                                   arch=str(meta.get("arch", "sm_90")).replace("sm_", ""), kind=meta.get("kind", ""),
                                   features=kernel_features(land, meta, Path(tmp)), effects=single_effects(land)))
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
    args = ap.parse_args()
    obs = observations({k for k in args.exclude.split(",") if k})
    model = PriorModel(obs, provenance={
        "made_by": "benchmarks/prior_train.py", "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        "commit": commit(), "landscapes": [o.id.split(":", 1)[1] for o in obs],
        "note": "features from nvcc 13.0 sm_90 default builds; effects from H200 landscapes (benchmarks/landscapes)"})
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
