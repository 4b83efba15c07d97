"""One generation of the live CompileIQ loop (see ciq_live.py), on the CPU side.

  python live_step.py build G   compile the asked ACFs of generation G for gemm_small -> .acfcarry/live
  python live_step.py score G OUTJSON   read the GPU timing, write scores.json (tell) and raw/acf-1/live_gen<G>.json
The carry also holds "none" and the landscape's best cubin, timed in the same rounds for reference.
"""
import concurrent.futures as cf
import csv
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_landscape import build_one  # noqa: E402

TK = "/work/tk133/lib/python3.11/site-packages/nvidia/cu13"
WORK = "/work/acfwork/live"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
RAW = os.path.join(REPO, "docs", "benchmarks", "raw", "acf-1")
CARRY = os.path.join(REPO, ".acfcarry", "live")
K = "gemm_small"
PTX = "/work/acfwork/build/gemm_small/gemm_small.ptx"
ENTRY = r"sgemm_kernelILb1E"


def main():
    cmd, g = sys.argv[1], int(sys.argv[2])
    gd = os.path.join(WORK, "gen%d" % g)
    kinfo = json.load(open(os.path.join(RAW, "kernels.json")))[K]
    summ = json.load(open(os.path.join(RAW, "summary.json")))[K]
    if cmd == "build":
        asked = json.load(open(os.path.join(gd, "asked.json")))
        shas = sorted(set(asked.values()))
        od = os.path.join(gd, "cubin")
        os.makedirs(od, exist_ok=True)
        with cf.ThreadPoolExecutor(2) as ex:
            res = list(ex.map(lambda s: build_one(TK, K, PTX, ENTRY, ("default", s, os.path.join(WORK, "acf", s + ".acf")), od), shas))
        if os.path.isdir(CARRY):
            shutil.rmtree(CARRY)
        os.makedirs(os.path.join(CARRY, K))
        land = os.path.join(REPO, ".acfcarry", "landscape", K)
        for s in (kinfo["none_sass"], summ["best"]["sass"]):
            shutil.copy(os.path.join(land, s + ".cubin"), os.path.join(CARRY, K, s + ".cubin"))
        for rec, cubin in res:
            if rec["status"] == 0 and "sass" in rec:
                shutil.copy(cubin, os.path.join(CARRY, K, rec["sass"] + ".cubin"))
        json.dump({K: kinfo}, open(os.path.join(CARRY, "kernels.json"), "w"))
        json.dump([r for r, _ in res], open(os.path.join(gd, "builds.json"), "w"))
        print("built", len(res), "valid", sum(r["status"] == 0 for r, _ in res))
    else:
        T = json.load(open(sys.argv[3]))
        builds = {r["acf"]: r for r in json.load(open(os.path.join(gd, "builds.json")))}
        asked = json.load(open(os.path.join(gd, "asked.json")))
        med = {s: float(np.median([x[1] for x in v["samples_ms"]])) for s, v in T["variants"].items()
               if v["load"] == "ok" and v["error"] is not None and v["error"] < 1e-3 and v["samples_ms"]}
        scores, rows = {}, []
        for pid, sha in asked.items():
            b = builds[sha]
            t = med.get(b.get("sass"))
            scores[pid] = t if t is not None else "*"
            rows.append(dict(acf=sha, status=b["status"], message=b["message"], regs=b.get("regs"),
                             spill_st=b.get("spill_st"), sass=b.get("sass"), t_med_ms=t))
        json.dump(scores, open(os.path.join(gd, "scores.json.tmp"), "w"))
        json.dump(dict(generation=g, kernel=K, device=T["device"]["name"], none_sass=kinfo["none_sass"],
                       landscape_best_sass=summ["best"]["sass"], candidates=rows, timing=T),
                  open(os.path.join(RAW, "live_gen%d.json" % g), "w"))
        os.rename(os.path.join(gd, "scores.json.tmp"), os.path.join(gd, "scores.json"))
        tn, tb = med[kinfo["none_sass"]], med[summ["best"]["sass"]]
        ts = sorted(r["t_med_ms"] for r in rows if r["t_med_ms"] is not None)
        print("gen", g, "none %.4f landscape-best x%.3f  gen best x%.3f  gen median x%.3f  invalid %d" % (
            tn, tn / tb, tn / ts[0], tn / ts[len(ts) // 2], sum(r["t_med_ms"] is None for r in rows)))


if __name__ == "__main__":
    main()
