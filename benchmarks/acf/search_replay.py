"""Our search over the Advanced Controls dimension, replayed on the recorded H200 ACF landscape
(docs/benchmarks/raw/acf-1/landscape_<kernel>.csv): the real FlagSearch with the real spills-first order
(flags.screening.spills_first, fed each file's recorded registers, spill bytes and instructions as the static
screening would see them), against the same search without the order (the seeded random order of the singles).
Per kernel and seed: the builds until a control file within 1% of the best one's gain is measured (the
landscape's median speed-up per file stands for its measurement).

    python benchmarks/acf/search_replay.py [--seeds 30] [--json OUT]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import types
from pathlib import Path

from compileiq_cmake.flags.acf import ACF_DIMENSION, PTXAS_ACF
from compileiq_cmake.flags.screen_engine import KernelDelta, ScreenRow
from compileiq_cmake.flags.screening import spills_first
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.search.search import FlagSearch

RAW = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "raw" / "acf-1"
KERNELS = ("spill", "sgemm", "triad", "attn", "gemm_small")


def landscape(kernel: str) -> tuple[FlagSpace, dict[str, float], types.SimpleNamespace]:
    """The kernel's space (one dimension: none + every measured file), speed-up per token, screening rows."""
    rows = list(csv.DictReader((RAW / f"landscape_{kernel}.csv").open()))
    none = next(r for r in rows if r["acf"] == "none")
    files = [r for r in rows if r["acf"] != "none" and r["speedup_med"]]
    token = {r["acf"]: f"{PTXAS_ACF}/acf/{r['acf']}.acf" for r in files}
    speed = {token[r["acf"]]: float(r["speedup_med"]) for r in files}
    dim = Dimension(name=ACF_DIMENSION, help="", values=((),) + tuple((token[r["acf"]],) for r in files))

    def spills(r: dict) -> int:
        return int(r["spill_st"]) + int(r["spill_ld"])

    screen = types.SimpleNamespace(rows=tuple(
        ScreenRow(ACF_DIMENSION, (token[r["acf"]],), True, "changes the code", (KernelDelta(
            f"k:{kernel}", (int(none["regs"]), int(r["regs"])), (spills(none), spills(r)),
            (int(none["ninstr"]), int(r["ninstr"]))),)) for r in files))
    return FlagSpace("nvcc", (dim,)), speed, screen


def builds_to_best(space: FlagSpace, speed: dict[str, float], seed: int) -> int:
    best = max(speed.values())
    target = 1 + 0.99 * (best - 1)
    search = FlagSearch(space, budget=len(speed) + 1, seed=seed, workers=1)
    search.tell(space.baseline(), 0.0)  # the project's own build: measured by the baseline stage
    for n in range(1, len(speed) + 1):
        fs = search.ask()
        if fs is None:
            break
        s = speed[fs.flags[0]]
        if s >= target:
            return n
        search.tell(fs, -math.log(s))
    return len(speed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--json")
    args = ap.parse_args()
    out = {}
    print(f"{'kernel':<11} {'files':>5} {'best':>6} {'lead':>4}  builds to within 1% of the best gain, median [IQR] "
          f"over {args.seeds} seeds")
    for kernel in KERNELS:
        space, speed, screen = landscape(kernel)
        ordered, leading = spills_first(space, screen)
        plain = [builds_to_best(space, speed, s) for s in range(args.seeds)]
        ours = [builds_to_best(ordered, speed, s) for s in range(args.seeds)]

        def q(xs: list[int]) -> str:
            qs = statistics.quantiles(xs, n=4)
            return f"{statistics.median(xs):g} [{qs[0]:g}..{qs[2]:g}]"

        print(f"{kernel:<11} {len(speed):>5} {max(speed.values()):>6.3f} {leading:>4}  spills first {q(ours):<18} "
              f"seeded random {q(plain)}")
        out[kernel] = {"files": len(speed), "best": max(speed.values()), "leading": leading,
                       "spills_first": ours, "random": plain}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
