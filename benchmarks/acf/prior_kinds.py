"""What the prior would learn of Advanced Controls, held out kernel by kernel (issue 52), from the recorded ACF
landscape (docs/benchmarks/raw/acf-1: 5 kernels x 160-217 control files on the H200, offline here).

A tune records what its best control file did alone as one value of the prior, "<a ptxas control file>"
(search/prior.value_key, tune/prior_use.tune_effects). Here each of the five kernels is such a tune: its
features as the prior's training computes a kernel's (benchmarks/evaluation/prior_train.kernel_features:
`nvcc -cubin -arch=sm_90 -O3` of its source, the cubin's SASS through flags/features), its effect the log
of the landscape's best file's speed-up. Leave one kernel out: the shipped prior plus the other four
kernels' observations predicts the held-out kernel's control-file effect (and, beside it, fast math's, the
value the default search measures first); compared with what the held-out kernel's best file did, and
with the plain mean of the other four (a prior that ignores the features).

    PATH=<dir with cuobjdump>:$PATH .venv/bin/python benchmarks/acf/prior_kinds.py \\
        --json docs/benchmarks/raw/acf-11-prior/prior_kinds.json
Needs nvcc and cuobjdump (pip install nvidia-cuda-cuobjdump); no GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
from compileiq_cmake.flags.acf import ACF_DIMENSION, PTXAS_ACF  # noqa: E402
from compileiq_cmake.flags.features import TargetFeatures, file_features  # noqa: E402
from compileiq_cmake.search.prior import Observation, PriorModel, value_key  # noqa: E402

RAW = ROOT / "docs" / "benchmarks" / "raw" / "acf-1" / "summary.json"
BIGLIB = ROOT / "benchmarks" / "projects" / "biglib" / "backend"
SOURCES = {  # as benchmarks/acf/build_landscape.py compiled them
    "spill": (HERE / "kernels" / "spill.cu", []),
    "sgemm": (HERE / "kernels" / "sgemm.cu", []),
    "triad": (HERE / "kernels" / "triad.cu", []),
    "attn": (HERE / "kernels" / "attn.cu", []),
    "gemm_small": (BIGLIB / "hot" / "gemm_small.cu", ["-I" + str(BIGLIB / "include")]),
}
ACF_KEY = value_key("nvcc", ACF_DIMENSION, (f"{PTXAS_ACF}/acf/x.acf",))
FAST_MATH = "nvcc:use_fast_math=--use_fast_math"


def features(name: str, work: Path) -> dict[str, float]:
    src, extra = SOURCES[name]
    cubin = work / f"{name}.cubin"
    cmd = ["nvcc", "-cubin", "-arch=sm_90", "-O3", *extra, str(src), "-o", str(cubin)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return TargetFeatures(kernels=tuple(file_features(cubin, arch="90")), units=1, arch="90").vector()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    summary = json.loads(RAW.read_text())
    effect = {k: math.log(summary[k]["best"]["speedup"]) for k in SOURCES}
    with tempfile.TemporaryDirectory() as tmp:
        feats = {k: features(k, Path(tmp)) for k in SOURCES}
    obs = {
        k: Observation(f"acf:{k}", f"landscape:acf-{k}", "nvcc", "90", feats[k], {ACF_KEY: effect[k]}, "acf")
        for k in SOURCES
    }
    shipped = PriorModel.shipped()
    hyper = shipped.hyper.get("nvcc")
    rows = []
    for k in SOURCES:
        model = shipped.with_observations([o for kk, o in obs.items() if kk != k])
        p = model.predict_keys("nvcc", feats[k], [ACF_KEY, FAST_MATH], arch="90")
        others = [effect[kk] for kk in SOURCES if kk != k]
        rows.append({
            "kernel": k, "features": {f: feats[k].get(f, 0.0) for f in (hyper.features if hyper else ())},
            "measured": effect[k], "predicted": p[ACF_KEY].effect, "sd": p[ACF_KEY].sd,
            "support": p[ACF_KEY].support, "mean_of_others": statistics.fmean(others),
            "fast_math_predicted": p[FAST_MATH].effect if p[FAST_MATH].known else None,
        })  # fmt: skip
    print(f"key {ACF_KEY}; the prior's features {hyper.features if hyper else ()}; effects as speed-ups")
    print(
        "| kernel | features | best file, measured | predicted (held out) +- sd | mean of the other four | "
        "fast math, predicted |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        fm = f"{math.exp(r['fast_math_predicted']):.3f}x" if r["fast_math_predicted"] is not None else "unknown"
        fs = ", ".join(f"{n} {v:.3g}" for n, v in r["features"].items())
        print(
            f"| {r['kernel']} | {fs} | {math.exp(r['measured']):.3f}x | {math.exp(r['predicted']):.3f}x "
            f"+- {r['sd']:.3f} | {math.exp(r['mean_of_others']):.3f}x | {fm} |"
        )
    err = [abs(r["predicted"] - r["measured"]) for r in rows]
    naive = [abs(r["mean_of_others"] - r["measured"]) for r in rows]
    print(f"\nmean |log error|: prior {statistics.fmean(err):.4f}, mean of the others {statistics.fmean(naive):.4f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"key": ACF_KEY, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
