"""How much of the first H200 run (no screening, no fingerprints) the static screening would have saved:
each recorded trial's flags are reduced to the values screening keeps (values that change no device code
of the target are removed, nvcc interaction rules applied); trials that reduce to the same flags would
have shared one measurement. Screening runs here (compile-only, sm_90), the trials come from
docs/benchmarks/h200-raw/<example>-trials.json.

Usage: python benchmarks/evaluation/screening_savings.py [--cuda-arch 90] > docs/benchmarks/screening-savings.md
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from compileiq_cmake.flags.catalogue import canonical_flags
from compileiq_cmake.flags.screening import screen_target

REPO = Path(__file__).resolve().parents[2]  # benchmarks/evaluation/ -> the repository
EXAMPLES = {"cuda_nbody": "nbody", "cuda_stencil": "stencil_kernels"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuda-arch", default="90")
    args = ap.parse_args()
    print("| example | trials (run 1) | distinct after screening | benchmark runs in run 1 | runs screening would have saved "
          "| screened space | values dropped | screening time here (2 cores) |")
    print("|---|---|---|---|---|---|---|---|")
    for example, target in EXAMPLES.items():
        trials = next(iter(json.loads((REPO / "docs/benchmarks/h200-raw" / f"{example}-trials.json").read_text()).values()))
        work = Path(tempfile.mkdtemp(prefix="savings-"))
        src = work / example
        shutil.copytree(REPO / "examples" / example, src)
        subprocess.run(["cmake", "-S", str(src), "-B", str(work / "build"), "-DCMAKE_BUILD_TYPE=Release"],
                       capture_output=True, check=True)
        ts = screen_target(src, work / "build", target, args.cuda_arch, (), (), None)
        dropped = {tok for r in ts.result.rows if not r.kept for tok in r.value}
        classes = {tuple(sorted(t for t in canonical_flags(tr["flags"]) if t not in dropped)) for tr in trials}
        runs = sum(len(m["samples"]) for tr in trials for m in tr["measurements"])
        per_trial = runs / len(trials)
        saved = round((len(trials) - len(classes)) * per_trial)
        n_dropped = sum(1 for r in ts.result.rows if not r.kept)
        print(f"| {example} | {len(trials)} | {len(classes)} | {runs} | {saved} ({100 * saved / runs:.0f}%) "
              f"| {ts.result.points_before} -> {ts.result.points_after} | {n_dropped} of {len(ts.result.rows)} "
              f"| {ts.result.seconds:.1f} s |")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
