"""Re-measure a release build configured with the TOML applied against a plain release build of the same
project: interleaved runs (ABAB...) per workload, medians and spreads, as JSON on stdout.

Usage: python3 benchmarks/device/remeasure_release.py <example work dir> <example name> [rounds]
The work dir holds rel-plain/ and rel-tuned/ trees; the workloads are those of the example's compileiq_tune. Speedups are exp(mean log plain - mean log tuned)
with a 95% paired-t interval over the rounds (the tool's validation statistic; runs of the committed
docs/benchmarks/h200-raw*/ used the Welch interval of the time).
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

from compileiq_cmake.decide.stats import compare_paired

PROGRAMS = {  # example -> (executable in the tree, base args, workloads) as in its CMakeLists.txt
    "cuda_nbody": ("nbody", ["--n", "32768"], [["--n", "16384"], ["--n", "32768"]]),
    "cuda_stencil": ("stencil", ["--n", "4096"], [["--n", "2048"], ["--n", "4096"]]),
    "host_cpp": ("host_kernels", ["--n", "1024"], [["--n", "768"], ["--n", "1024"]]),
    # trap projects (tests/projects/, tuned through the unmodified route by benchmarks/device/h200_layouts.sh)
    "cpp_cuda": ("cpp_bench", [], [["--n", "4194304"], ["--n", "16777216"]]),
    "arch_by_hand": ("handarch_bench", [], [["--n", "262144"], ["--n", "1048576"]]),
    "many_tu": ("many_bench", [], [["--n", "1048576"], ["--n", "4194304"]]),
    "libs_layout": ("bin/tools/layout_benchmark_exe", [], [["--n", "4194304"], ["--n", "16777216"]]),
}
METRIC = re.compile(r"time_ms=([0-9.eE+-]+)")


def run(exe: Path, args: list[str]) -> float:
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0 or "PASS" not in out.stdout:
        raise SystemExit(f"{exe} {' '.join(args)} failed: {out.stdout[-300:]} {out.stderr[-300:]}")
    return float(METRIC.findall(out.stdout)[-1])


def main() -> None:
    work, name = Path(sys.argv[1]), sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    exe_name, base, workloads = PROGRAMS[name]
    plain, tuned = work / "rel-plain" / exe_name, work / "rel-tuned" / exe_name
    result = {"example": name, "rounds": rounds, "workloads": []}
    for w in workloads:
        args = base + w
        a, b = [], []
        for r in range(rounds):
            for exe, sink in ((plain, a), (tuned, b)) if r % 2 == 0 else ((tuned, b), (plain, a)):
                sink.append(run(exe, args))
        ma, mb = statistics.median(a), statistics.median(b)
        cmp = compare_paired(a, b, lower_is_better=True)
        result["workloads"].append({
            "args": " ".join(w), "plain": a, "tuned": b, "plain_median": ma, "tuned_median": mb,
            "plain_spread": (max(a) - min(a)) / ma, "tuned_spread": (max(b) - min(b)) / mb,
            "speedup": cmp.speedup, "ci": [cmp.ci.low, cmp.ci.high], "p_value": cmp.p_value,
        })
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
