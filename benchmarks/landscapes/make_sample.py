#!/usr/bin/env python3
"""Write benchmarks/landscapes/sample_small.json: a SYNTHETIC landscape in the recorded format (no GPU was
involved), small enough for replay tests on CI. Deterministic (fixed seed).

Structure (288 points, 6 dimensions of the nvcc space): a multiplicative model of per-flag effects with
interactions, so the best valid point needs a combination of four flags and no single flag reaches it:
  - --use_fast_math: +25%, but with --fmad=false the result is wrong (status wrong_result, invalid);
  - -maxrregcount=64: +6% only together with --use_fast_math (fewer registers for the fast path),
    -maxrregcount=32: -20% (spills), and a (synthetic) build failure together with -Xptxas=-O1;
  - --restrict: +4%, but no effect (same device code) under -Xptxas=-dlcm=cg;
  - -Xptxas=-dlcm=cg: -15%, -Xptxas=-dlcm=cs: +1%;
  - -Xptxas=-O1: -3%, -Xptxas=-O2: same device code as the default;
  - --fmad=false: -10%.
Points with the same effective flags share one code (one digest), as fingerprint dedupe would find.

Usage: python3 benchmarks/landscapes/make_sample.py [--out benchmarks/landscapes/sample_small.json]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from record import write_landscape  # noqa: E402

DIMS = [
    ("ptxas_opt_level", [[], ["-Xptxas=-O1"], ["-Xptxas=-O2"]]),
    ("maxrregcount", [[], ["-maxrregcount=32"], ["-maxrregcount=64"], ["-maxrregcount=128"]]),
    ("use_fast_math", [[], ["--use_fast_math"]]),
    ("fmad", [[], ["--fmad=false"]]),
    ("load_cache", [[], ["-Xptxas=-dlcm=cg"], ["-Xptxas=-dlcm=cs"]]),
    ("restrict", [[], ["--restrict"]]),
]
DEFAULT_US = 1000.0
NOISE = 0.005


def effective(p: tuple[int, ...]) -> tuple:
    """The 'device code' of a point: choices that make no difference collapse."""
    opt, reg, fast, fmad, load, restrict = p
    opt = 0 if opt == 2 else opt
    reg = 0 if reg == 3 else reg  # 128 registers: the kernel's own count, same code
    restrict = 0 if load == 1 else restrict
    return (opt, reg, fast, fmad, load, restrict)


def true_time(e: tuple) -> float:
    opt, reg, fast, fmad, load, restrict = e
    speed = 1.0
    speed *= {0: 1.0, 1: 0.97}[opt]
    speed *= 1.25 if fast else 1.0
    speed *= {0: 1.0, 1: 0.80, 2: 1.06 if fast else 0.99}[reg]
    speed *= 0.90 if fmad else 1.0
    speed *= {0: 1.0, 1: 0.85, 2: 1.01}[load]
    speed *= 1.04 if restrict else 1.0
    return DEFAULT_US / speed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE / "sample_small.json"))
    args = ap.parse_args()
    rng = random.Random(5)
    codes: list[dict] = []
    code_of: dict = {}
    rows = []
    for p in itertools.product(*[range(len(v)) for _, v in DIMS]):
        opt, reg = p[0], p[1]
        if opt == 1 and reg == 1:
            key = ("build_failed",)
            if key not in code_of:
                code_of[key] = len(codes)
                codes.append({"digest": None, "status": "build_failed", "valid": False, "error": None,
                              "message": "ptxas fatal   : (synthetic) register allocation failed", "time_us": []})
        else:
            key = effective(p)
            if key not in code_of:
                code_of[key] = len(codes)
                t = true_time(key)
                samples = [round(t * (1 + rng.gauss(0, NOISE)), 3) for _ in range(2)]
                wrong = key[2] == 1 and key[3] == 1
                codes.append({
                    "digest": hashlib.sha256(repr(key).encode()).hexdigest(),
                    "status": "wrong_result" if wrong else "ok", "valid": not wrong,
                    "error": 0.02 if wrong else (3e-6 if key[2] else 0.0),
                    "regs": {0: 40, 1: 32, 2: 40 if not key[2] else 38}[key[1]],
                    "spill": 64 if key[1] == 1 else 0, "time_us": samples,
                })
        rows.append([*p, code_of[key]])
    doc = {
        "format": "compileiq-landscape",
        "version": 1,
        "kernel": "sample_small",
        "family": "nvcc",
        "metric": {"name": "kernel_time", "unit": "us", "higher_is_better": False},
        "meta": {
            "synthetic": True,
            "dry_run": False,
            "description": "SYNTHETIC landscape for replay tests (benchmarks/landscapes/make_sample.py); "
                           "no GPU, no compiler was involved; the numbers are a made-up model",
            "gpu": {"name": None},
            "nvcc_version": "13.0.88",
            "date": "2026-11-29T00:00:00Z",
            "command": "python3 benchmarks/landscapes/make_sample.py",
            "sampling": "full",
            "space_size": len(rows),
            "tolerance": {"metric": "relative L2 error vs the default build's output", "max": 1e-3},
            "timing": "synthetic: true time x (1 + N(0, 0.005)), two samples per code",
            "noise": {"pairs": sum(1 for c in codes if c["valid"]), "rel_sd": NOISE,
                      "method": "synthetic: the generator's noise level"},
            "passes": 2,
        },
        "dimensions": [{"name": n, "values": v} for n, v in DIMS],
        "default_code": rows[0][-1],
        "points": rows,
        "codes": codes,
    }
    write_landscape(doc, Path(args.out))
    print(f"wrote {args.out}: {len(rows)} points, {len(codes)} codes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
