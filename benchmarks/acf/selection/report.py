"""Tables from res_cheap.json + res_sur.json (sim.py outputs) and the pool/threshold counts."""
import json, math
import numpy as np
from data import *

NEVER = 10**6
R = {}
for f in ("res_cheap.json", "res_sur.json"):
    try:
        for s, d in json.load(open(OUT / f)).items():
            R.setdefault(s, {}).update(d)
    except FileNotFoundError:
        pass
CAP = {s: (1120 if not any(s.startswith(m) for m in ("knn", "gp", "rf", "blr", "loko+")) else 64) for s in R}


def q(xs, cap):
    ys = sorted(xs)
    def at(p):
        v = ys[min(len(ys) - 1, max(0, round(p * (len(ys) - 1))))]
        return f">{cap}" if v >= NEVER else f"{v:g}"
    return f"{at(.5)} [{at(.25)}..{at(.75)}]"


def share(xs):
    return float(np.mean(np.array(xs) <= 32))


G = load_gens()
print("## Pool and targets per kernel\n")
print("| kernel | pool files | distinct SASS | CompileIQ 64-build best per seed: median [min..max] | files >= per-seed target: median [min..max] over 10 seeds | files >= median target | random order P(<=32), exact (hypergeometric, mean over seeds) |")
print("|---|---|---|---|---|---|---|")
for k in KERNELS:
    P = pool(G, k); y = P["y"]; th = thresholds(G, k); N = len(y)
    bs = np.array([b for b, t in th.values()]); ts = np.array([t for b, t in th.values()])
    m = np.array([(y >= t).sum() for t in ts])
    mt = np.median(ts)
    pr = np.mean([1 - math.comb(N - mm, 32) / math.comb(N, 32) for mm in m])
    print(f"| {k} | {N} | {len(set(P['sass']))} | {np.median(bs):.4f} [{bs.min():.4f}..{bs.max():.4f}] | {np.median(m):g} [{m.min()}..{m.max()}] ({100*np.median(m)/N:.1f}% of pool) | {(y>=mt).sum()} (target {mt:.4f}) | {pr:.2f} |")

names = [s for s in R if all(k in R[s] for k in KERNELS)]
print("\n## Builds to CompileIQ's per-seed best (within 1%): median [IQR] over 30 runs (3 per CompileIQ seed); share of runs <= 32\n")
print("| strategy | " + " | ".join(KERNELS) + " | kernels with median <= 32 |")
print("|---|" + "---|" * (len(KERNELS) + 1))
rows = []
for s in names:
    met = sum(share(R[s][k]) >= 0.5 and sorted(R[s][k])[round(.5 * (len(R[s][k]) - 1))] <= 32 for k in KERNELS)
    rows.append((met, np.mean([share(R[s][k]) for k in KERNELS]), s))
for met, avg, s in sorted(rows, key=lambda r: (-r[0], -r[1])):
    cells = [f"{q(R[s][k], CAP[s])} ({share(R[s][k]):.2f})" for k in KERNELS]
    print(f"| {s} | " + " | ".join(cells) + f" | {met}/5 (mean share {avg:.2f}) |")

# leave-one-kernel-out choice among the surrogate grid
sur = [s for s in names if CAP[s] == 64]
print("\n## Leave-one-kernel-out choice of the surrogate configuration (picked by mean share <= 32 on the other 4 kernels)\n")
print("| held-out kernel | picked | its result on the held-out kernel | share <= 32 |")
print("|---|---|---|---|")
met = 0
for k in KERNELS:
    others = [o for o in KERNELS if o != k]
    best = max(sur, key=lambda s: (np.mean([share(R[s][o]) for o in others]), -np.mean([min(x, 65) for o in others for x in R[s][o]])))
    sh = share(R[best][k]); met += sh >= 0.5
    print(f"| {k} | {best} | {q(R[best][k], 64)} | {sh:.2f} |")
print(f"\nkernels with share >= 0.5 under the LOKO choice: {met}/5")
print("\n## Best configuration per kernel in hindsight (NOT honest: chosen on the scored kernel; an optimistic bound for this grid)\n")
for k in KERNELS:
    best = max(names, key=lambda s: share(R[s][k]))
    print(f"- {k}: {best} {q(R[best][k], CAP[best])}, share <= 32 {share(R[best][k]):.2f}")
