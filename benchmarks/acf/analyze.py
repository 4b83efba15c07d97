"""Summarise the ACF landscape: raw builds.csv + timing_<kernel>.json -> landscape_<kernel>.csv, summary.json.

Usage: python analyze.py RAW_DIR
Speed-up of a variant = per-round ratio t_none / t_variant (same round, interleaved), median over rounds;
95% CI = percentile bootstrap of that median over rounds (2000 resamples, fixed seed).
Significant = Wilcoxon signed-rank on the per-round log ratios, Holm-corrected over the kernel's
valid variants at 0.05, and the CI excludes 1. Valid = ptxas exit 0, cubin loads and launches, output
finite with relative L2 error vs none < 1e-3.
Replay: over the recorded landscape, builds (ACFs tried, duplicates and invalid ones included) until a
variant within 1% of the landscape's best median time is found; random order vs static-feature order.
"""
import csv
import json
import math
import os
import random
import sys

import numpy as np
from scipy.stats import spearmanr, wilcoxon

TOL = 1e-3


def holm(ps):
    idx = sorted(range(len(ps)), key=lambda i: ps[i])
    out, m, run = [1.0] * len(ps), len(ps), 0.0
    for rank, i in enumerate(idx):
        run = max(run, min(1.0, (m - rank) * ps[i]))
        out[i] = run
    return out


def boot_ci(x, rng, n=2000):
    x = np.asarray(x)
    meds = np.median(x[rng.integers(0, len(x), (n, len(x)))], axis=1)
    return float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


def main():
    raw = sys.argv[1]
    builds = list(csv.DictReader(open(os.path.join(raw, "builds.csv"))))
    kinfo = json.load(open(os.path.join(raw, "kernels.json")))
    summary = {}
    rng = np.random.default_rng(7)
    for k in kinfo:
        p = os.path.join(raw, "timing_%s.json" % k)
        if not os.path.exists(p):
            continue
        T = json.load(open(p))
        none = T["none_sass"]
        nrow = next(b for b in builds if b["kernel"] == k and b["acf"] == "none")
        tn = {r: t for r, t in T["variants"][none]["samples_ms"]}
        stats = {}
        for s, v in T["variants"].items():
            st = dict(load=v["load"], error=v["error"])
            pairs = [(tn[r], t) for r, t in v["samples_ms"] if r in tn]
            if pairs:
                ratio = np.array([a / b for a, b in pairs])
                st.update(t_med=float(np.median([b for _, b in pairs])), speedup=float(np.median(ratio)),
                          ci=boot_ci(ratio, rng), n=len(pairs))
                st["p"] = 1.0 if s == none or np.allclose(ratio, 1) else float(wilcoxon(np.log(ratio)).pvalue)
            st["valid"] = v["load"] == "ok" and v["error"] is not None and v["error"] == v["error"] and v["error"] < TOL
            stats[s] = st
        vs = [s for s in stats if s != none and stats[s]["valid"] and "p" in stats[s]]
        for s, q in zip(vs, holm([stats[s]["p"] for s in vs])):
            stats[s]["p_holm"] = q
        rows = []
        for b in builds:
            if b["kernel"] != k:
                continue
            s = b.get("measured_as") and b["sass"]
            st = stats.get(b["sass"], {}) if b["status"] == "0" else {}
            why = ""
            if b["status"] != "0":
                why = "ptxas exit %s: %s" % (b["status"], b["message"])
            elif st and not st["valid"]:
                why = "load/launch: " + st["load"] if st["load"] != "ok" else "wrong output (rel L2 %s)" % st["error"]
            sig = ""
            if st.get("p_holm") is not None and st["p_holm"] < 0.05:
                if st["ci"][0] > 1:
                    sig = "faster"
                elif st["ci"][1] < 1:
                    sig = "slower"
            rows.append(dict(kernel=k, acf=b["acf"], space=b["space"], status=b["status"], invalid_reason=why,
                             regs=b["regs"], spill_st=b["spill_st"], spill_ld=b["spill_ld"], stack=b["stack"],
                             ninstr=b["ninstr"], sass=b["sass"], rel_l2_err=st.get("error", ""),
                             t_med_ms=st.get("t_med", ""), speedup_med=st.get("speedup", ""),
                             ci_lo=st.get("ci", ("", ""))[0], ci_hi=st.get("ci", ("", ""))[1],
                             rounds=st.get("n", ""), p_holm=st.get("p_holm", ""), significant=sig))
        with open(os.path.join(raw, "landscape_%s.csv" % k), "w", newline="") as f:
            w = csv.DictWriter(f, list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        acfrows = [r for r in rows if r["acf"] != "none"]
        valid = [r for r in acfrows if not r["invalid_reason"] and r["speedup_med"] != ""]
        best = max(valid, key=lambda r: r["speedup_med"])
        regs = [int(r["regs"]) for r in valid]
        sp = [int(r["spill_st"]) for r in valid]
        rho = spearmanr([int(r["spill_st"]) + int(r["spill_ld"]) for r in valid], [r["t_med_ms"] for r in valid])
        rho_r = spearmanr(regs, [r["t_med_ms"] for r in valid])
        # confirmation rounds (top 3 by median, re-timed against none in fresh rounds)
        conf = {}
        for s, smp in (T.get("confirm") or {}).items():
            if s == none:
                continue
            cn = {r: t for r, t in T["confirm"][none]}
            ratio = np.array([cn[r] / t for r, t in smp if r in cn])
            conf[s] = dict(speedup=float(np.median(ratio)), ci=boot_ci(ratio, rng), n=len(ratio),
                           p=float(wilcoxon(np.log(ratio)).pvalue))
        none_ts = [t for _, t in T["variants"][none]["samples_ms"]]
        summary[k] = dict(
            device=T["device"]["name"], rounds=T.get("rounds"), reps=T.get("reps"), sizes=T.get("sizes"),
            none_ms=float(np.median(none_ts)), none_iqr_ms=[float(np.percentile(none_ts, 25)), float(np.percentile(none_ts, 75))],
            none_regs=int(nrow["regs"]), none_spill_st=int(nrow["spill_st"]), none_spill_ld=int(nrow["spill_ld"]),
            none_ninstr=int(nrow["ninstr"]),
            acfs=len(acfrows), distinct_sass=len({r["sass"] for r in acfrows if r["sass"]}),
            same_sass_as_none=sum(1 for r in acfrows if r["sass"] and r["sass"] == nrow["sass"]),
            invalid=sum(1 for r in acfrows if r["invalid_reason"]),
            invalid_reasons=sorted({r["invalid_reason"][:80] for r in acfrows if r["invalid_reason"]}),
            faster=sum(1 for r in acfrows if r["significant"] == "faster"),
            slower=sum(1 for r in acfrows if r["significant"] == "slower"),
            max_rel_err_valid=max(float(r["rel_l2_err"]) for r in valid),
            best=dict(acf=best["acf"], sass=best["sass"], speedup=best["speedup_med"], ci=[best["ci_lo"], best["ci_hi"]],
                      regs=int(best["regs"]), spill_st=int(best["spill_st"]), rel_l2_err=best["rel_l2_err"],
                      confirm=conf.get(best["sass"])),
            confirm={s: dict(c, acf=next(r["acf"] for r in acfrows if r["sass"] == s)) for s, c in conf.items()},
            speedup_quantiles=[float(x) for x in np.percentile([r["speedup_med"] for r in valid], [0, 10, 25, 50, 75, 90, 100])],
            regs_range=[min(regs), int(np.median(regs)), max(regs)],
            spill_st_range=[min(sp), int(np.median(sp)), max(sp)],
            no_spill=sum(1 for r in valid if int(r["spill_st"]) == 0 and int(r["spill_ld"]) == 0),
            fewer_spill=sum(1 for r in valid if int(r["spill_st"]) < int(nrow["spill_st"])),
            more_spill=sum(1 for r in valid if int(r["spill_st"]) > int(nrow["spill_st"])),
            fewer_regs=sum(1 for r in valid if int(r["regs"]) < int(nrow["regs"])),
            more_regs=sum(1 for r in valid if int(r["regs"]) > int(nrow["regs"])),
            spearman_spill_time=[float(rho.statistic), float(rho.pvalue)] if not math.isnan(rho.statistic) else None,
            spearman_regs_time=[float(rho_r.statistic), float(rho_r.pvalue)] if not math.isnan(rho_r.statistic) else None,
        )
        # replay
        tbest = min(r["t_med_ms"] for r in valid)
        tnone = summary[k]["none_ms"]
        target = min(tbest / 0.99, tnone)  # 'none' itself counts only if it is within 1% of the best

        def needed(order):
            if tnone <= tbest / 0.99:
                return 0
            for i, r in enumerate(order, 1):
                if not r["invalid_reason"] and r["t_med_ms"] != "" and r["t_med_ms"] <= target:
                    return i
            return None

        out = {}
        for name, key in [("random", None),
                          ("static_spill_regs_instr", lambda r, t: (int(r["spill_st"] or 10**9) + int(r["spill_ld"] or 10**9), int(r["regs"] or 999), int(r["ninstr"] or 10**9), t)),
                          ("static_regs_instr", lambda r, t: (int(r["regs"] or 999), int(r["ninstr"] or 10**9), t)),
                          ("static_instr", lambda r, t: (int(r["ninstr"] or 10**9), t))]:
            res = []
            for seed in range(20):
                rs = random.Random(seed)
                order = acfrows[:]
                rs.shuffle(order)
                if key:
                    tie = {id(r): i for i, r in enumerate(order)}
                    order.sort(key=lambda r: key(r, tie[id(r)]))
                res.append(needed(order))
            out[name] = dict(builds=res, median=float(np.median([x for x in res if x is not None])) if any(x is not None for x in res) else None)
        summary[k]["replay_to_99pct_of_best"] = out
    json.dump(summary, open(os.path.join(raw, "summary.json"), "w"), indent=1)
    for k, s in summary.items():
        b = s["best"]
        print("%-10s none %.4f ms  best x%.3f [%.3f, %.3f]  faster %d slower %d invalid %d  regs %d->%s spill %d->%s  replay rnd %s static %s" % (
            k, s["none_ms"], b["speedup"], b["ci"][0], b["ci"][1], s["faster"], s["slower"], s["invalid"], s["none_regs"],
            s["regs_range"], s["none_spill_st"], s["spill_st_range"], s["replay_to_99pct_of_best"]["random"]["median"],
            s["replay_to_99pct_of_best"]["static_spill_regs_instr"]["median"]))


if __name__ == "__main__":
    main()
