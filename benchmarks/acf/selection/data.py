"""Load the acf-2 raw data into per-kernel pools (offline study; reads only docs/benchmarks/raw/acf-2)."""
from __future__ import annotations
import json, math
from pathlib import Path
import numpy as np

RAW = Path(__file__).resolve().parents[3] / "docs" / "benchmarks" / "raw" / "acf-2"
OUT = Path(__file__).resolve().parents[3] / "docs" / "benchmarks" / "raw" / "acf-10-selection"
KERNELS = ["spill", "sgemm", "triad", "attn", "gemm_small"]


def load_gens(raw=RAW):
    gens = []
    for g in ("gen0", "gen1"):
        d = raw / g
        gens.append({"asked": json.loads((d / "asked.json").read_text()),
                     "times": json.loads((d / "times.json").read_text()),
                     "builds": {(b["kernel"], b["acf"]): b for b in json.loads((d / "builds.json").read_text())}})
    return gens


def sp(gen, k, s):
    return gen["times"][k]["none"] / gen["times"][k][s]


def thresholds(gens, k):
    """Per seed: CompileIQ's best after its 64 builds (as side_by_side_analyze.py) and the 1% target."""
    out = {}
    for seed in sorted(gens[0]["asked"]["ciq"][k], key=int):
        theirs = [sp(g, k, s) for g in gens for s in g["asked"]["ciq"][k][seed]]
        best = max([1.0, *theirs])
        out[int(seed)] = (best, 1 + 0.99 * (best - 1))
    return out


def pool(gens, k):
    """Every distinct file with a time for k in any generation's call. Returns dict with arrays:
    shas, y (speed-up; geometric mean over the calls that timed it), ncalls, feats (raw static), sass, none."""
    per = {}
    for gi, g in enumerate(gens):
        for s in g["times"][k]:
            if s == "none":
                continue
            per.setdefault(s, []).append((gi, sp(g, k, s)))
    shas = sorted(per)
    none = gens[0]["builds"][(k, "none")]
    rows, sass, y, nc, ymax = [], [], [], [], []
    for s in shas:
        gi = per[s][0][0]
        b = gens[gi]["builds"][(k, s)]
        # static features must agree across calls
        for gj, _ in per[s][1:]:
            b2 = gens[gj]["builds"][(k, s)]
            assert b2["sass"] == b["sass"], (k, s)
        rows.append([float(b.get(f) or 0) for f in ("regs", "spill_st", "spill_ld", "stack", "ninstr")])
        sass.append(b["sass"])
        vals = [v for _, v in per[s]]
        y.append(math.exp(sum(math.log(v) for v in vals) / len(vals)))
        ymax.append(max(vals))
        nc.append(len(vals))
    nrow = [float(none.get(f) or 0) for f in ("regs", "spill_st", "spill_ld", "stack", "ninstr")]
    return {"shas": shas, "y": np.array(y), "ymax": np.array(ymax), "ncalls": np.array(nc),
            "raw": np.array(rows), "none_raw": np.array(nrow), "sass": np.array(sass), "none_sass": none["sass"],
            "per": per}


def features(P):
    """Standardized static features: regs, spill bytes (st+ld), stack, ninstr, each also as log1p; deltas vs none
    are implicit (standardization removes the offset)."""
    R = P["raw"]
    regs, sst, sld, stack, ninstr = R.T
    X = np.column_stack([regs, np.log1p(sst + sld), np.log1p(stack), np.log(ninstr),
                         (P["sass"] == P["none_sass"]).astype(float)])
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1
    return (X - mu) / sd
