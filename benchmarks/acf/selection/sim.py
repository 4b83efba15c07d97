"""Offline replay of honest selection strategies on the acf-2 pools.
Per kernel: pool = every distinct file timed in gen0's or gen1's call (speed-up within its own call).
Per run r (r = 0..RUNS-1): target = CompileIQ's 64-build best within 1% for CompileIQ seed r % 10; the strategy
measures files one by one (a "build"), may use static features of every pool file and the speed-ups of files it
has measured in this run; builds = index of the first measured file >= target (NEVER if not within CAP).

    python sim.py [--runs 30] [--cap 64] [--strategies a,b,...] [--out results.json]
"""
from __future__ import annotations
import argparse, json, sys, time
import numpy as np
from multiprocessing import Pool
from data import *

NEVER = 10**6
G = load_gens()
POOLS, TH = {}, {}
for k in KERNELS:
    P = pool(G, k)
    P["X"] = features(P)
    P["spills"] = P["raw"][:, 1] + P["raw"][:, 2]
    P["none_spills"] = P["none_raw"][1] + P["none_raw"][2]
    POOLS[k] = P
    TH[k] = thresholds(G, k)


# ---------------------------------------------------------------- leave-one-kernel-out prior
def rel_features(P):
    R, N = P["raw"], P["none_raw"]
    return np.column_stack([R[:, 0] - N[0], (R[:, 0] - N[0]) / N[0],
                            np.log1p(R[:, 1] + R[:, 2]) - np.log1p(N[1] + N[2]),
                            np.log1p(R[:, 3]) - np.log1p(N[3]), np.log(R[:, 4] / N[4])])


def loko_prior(k):
    """RF of log speed-up on features relative to none, trained on the OTHER four kernels' pools."""
    from sklearn.ensemble import RandomForestRegressor
    Xs = np.vstack([rel_features(POOLS[o]) for o in KERNELS if o != k])
    ys = np.concatenate([np.log(POOLS[o]["y"]) for o in KERNELS if o != k])
    f = RandomForestRegressor(300, min_samples_leaf=5, random_state=0, n_jobs=1).fit(Xs, ys)
    return f.predict(rel_features(POOLS[k]))


PRIOR = {}


def prior(k):
    if k not in PRIOR:
        PRIOR[k] = loko_prior(k)
    return PRIOR[k]


# ---------------------------------------------------------------- surrogates (fit on measured, predict all)
def knn(Xm, ym, Xa, k=5):
    d = ((Xa[:, None, :] - Xm[None, :, :]) ** 2).sum(-1)
    kk = min(k, len(ym))
    idx = np.argpartition(d, kk - 1, axis=1)[:, :kk]
    w = 1.0 / (np.take_along_axis(d, idx, 1) + 1e-3)
    mu = (w * ym[idx]).sum(1) / w.sum(1)
    sd = np.sqrt(np.take_along_axis(d, idx, 1).mean(1))  # distance as an uncertainty proxy
    return mu, sd


def gp(Xm, ym, Xa, ls=1.0, noise=0.05):
    """GP with an RBF kernel: gplin without its linear part."""
    return gplin(Xm, ym, Xa, ls, noise, c=0.0)


def blr(Xm, ym, Xa, alpha=1.0, quad=True):
    """Bayesian ridge (fixed prior precision alpha, noise from residuals) on features (+ squares): extrapolates."""
    def phi(X):
        return np.column_stack([np.ones(len(X)), X] + ([X**2] if quad else []))
    A, B = phi(Xm), phi(Xa)
    m = ym.mean()
    S = np.linalg.inv(A.T @ A + alpha * np.eye(A.shape[1]))
    w = S @ A.T @ (ym - m)
    res = ym - m - A @ w
    s2 = max(res.var(), 1e-6)
    mu = m + B @ w
    sd = np.sqrt(s2 * (1 + np.einsum("ij,jk,ik->i", B, S, B)))
    return mu, sd


def gplin(Xm, ym, Xa, ls=1.0, noise=0.05, c=0.3):
    """GP with RBF + linear kernel (extrapolates along features)."""
    m = ym.mean(); s = ym.std() + 1e-9
    z = (ym - m) / s
    def K(A, B):
        return np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1) / ls**2) + c * (A @ B.T)
    Kmm = K(Xm, Xm) + noise * np.eye(len(ym))
    L = np.linalg.cholesky(Kmm)
    a = np.linalg.solve(L.T, np.linalg.solve(L, z))
    Kam = K(Xa, Xm)
    mu = Kam @ a
    v = np.linalg.solve(L, Kam.T)
    kaa = 1 + c * (Xa**2).sum(1)
    var = np.clip(kaa - (v**2).sum(0), 1e-12, None)
    return m + s * mu, s * np.sqrt(var)


def rf(Xm, ym, Xa, seed=0, trees=30):
    from sklearn.ensemble import RandomForestRegressor
    f = RandomForestRegressor(trees, min_samples_leaf=1, max_features=0.6, random_state=seed, n_jobs=1).fit(Xm, ym)
    P = np.stack([t.predict(Xa) for t in f.estimators_])
    return P.mean(0), P.std(0)


# ---------------------------------------------------------------- initial designs
def init_random(P, rng, n, avail):
    return list(rng.permutation(np.nonzero(avail)[0])[:n])


def init_fps(P, rng, n, avail):
    """Farthest-point on standardized features, first point random."""
    X = P["X"]; cand = np.nonzero(avail)[0]
    # jitter breaks ties among identical feature vectors
    first = rng.choice(cand)
    out = [first]
    d = ((X[cand] - X[first]) ** 2).sum(1)
    for _ in range(n - 1):
        d2 = d + rng.random(len(d)) * 1e-9
        d2[np.isin(cand, out)] = -1
        j = cand[int(np.argmax(d2))]
        out.append(j)
        d = np.minimum(d, ((X[cand] - X[j]) ** 2).sum(1))
    return out


def spills_first_order(P, rng):
    """flags.screening.spills_first on the pool: files that cut spill bytes first, fewest first (ties random),
    the rest in random order."""
    u = rng.random(len(P["y"]))
    cut = P["spills"] < P["none_spills"]
    key_spill = np.where(cut, P["spills"], np.inf)
    return list(np.lexsort((u, key_spill)))


# ---------------------------------------------------------------- a run
def run(k, r, strat, cap):
    P = POOLS[k]; y = P["y"]; n = len(y)
    best, t = TH[k][r % 10]
    rng = np.random.default_rng(1000 * r + 7)
    name = strat["name"]
    dedupe = strat.get("dedupe", True)
    measured, seen_sass = [], set()
    avail = np.ones(n, bool)

    def take(i):
        measured.append(i)
        avail[i] = False
        if dedupe:
            s = P["sass"][i]
            seen_sass.add(s)
            avail[P["sass"] == s] = False
        return y[i] >= t

    kind = strat["kind"]
    if kind in ("random", "spills_first", "loko_static"):
        if kind == "random":
            order = list(rng.permutation(n))
        elif kind == "spills_first":
            order = spills_first_order(P, rng)
        else:
            order = list(np.lexsort((rng.random(n), -prior(k))))
        for i in order:
            if not avail[i]:
                continue
            if take(i):
                return len(measured)
            if len(measured) >= cap:
                return NEVER
        return NEVER
    # surrogate strategies
    n0 = strat["n0"]
    if strat.get("init") == "fps":
        first = init_fps(P, rng, n0, avail)
    elif strat.get("init") == "prior":
        first = list(np.lexsort((rng.random(n), -prior(k))))[:n0]
    elif strat.get("init") == "spills":
        first = [i for i in spills_first_order(P, rng)][:n0]
    else:
        first = init_random(P, rng, n0, avail)
    for i in first:
        if not avail[i]:
            continue
        if take(i):
            return len(measured)
    model = strat["model"]
    pr = prior(k) if strat.get("prior") else np.zeros(n)
    while len(measured) < cap and avail.any():
        Xm = P["X"][measured]; ym = np.log(y[measured]) - pr[measured]
        if model == "knn":
            mu, sd = knn(Xm, ym, P["X"], strat.get("k", 5))
        elif model == "gp":
            mu, sd = gp(Xm, ym, P["X"], strat.get("ls", 1.0), strat.get("noise", 0.05))
        elif model == "blr":
            mu, sd = blr(Xm, ym, P["X"], strat.get("alpha", 1.0), strat.get("quad", True))
        elif model == "gplin":
            mu, sd = gplin(Xm, ym, P["X"], strat.get("ls", 1.0), strat.get("noise", 0.05))
        else:
            mu, sd = rf(Xm, ym, P["X"], seed=r * 1000 + len(measured))
        mu = mu + pr
        acq = mu + strat.get("beta", 0.0) * sd + rng.random(n) * 1e-9
        acq[~avail] = -np.inf
        if take(int(np.argmax(acq))):
            return len(measured)
    return NEVER


STRATS = {
    "random_all": {"kind": "random", "dedupe": False},
    "random_dedupe": {"kind": "random"},
    "spills_first": {"kind": "spills_first"},
}
for model in ("knn", "gp", "rf", "blr", "gplin"):
    for init in ("random", "fps"):
        for n0 in (4, 8):
            for beta in (0.0, 1.0):
                STRATS[f"{model}_{init}{n0}_b{beta:g}"] = {"kind": "sur", "model": model, "init": init, "n0": n0, "beta": beta}
    STRATS[f"{model}_spills8_b0"] = {"kind": "sur", "model": model, "init": "spills", "n0": 8, "beta": 0.0}
STRATS["loko_static"] = {"kind": "loko_static"}
for model in ("knn", "gp", "blr"):
    for n0 in (1, 4):
        for beta in (0.0, 1.0):
            STRATS[f"loko+{model}_prior{n0}_b{beta:g}"] = {"kind": "sur", "model": model, "init": "prior",
                                                         "n0": n0, "beta": beta, "prior": True}
for s, v in STRATS.items():
    v["name"] = s


def job(a):
    k, name, runs, cap = a
    t0 = time.time()
    c = min(cap, 64) if STRATS[name].get("model") == "rf" else cap
    res = [run(k, r, STRATS[name], c) for r in range(runs)]
    return k, name, res, time.time() - t0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--cap", type=int, default=64)
    ap.add_argument("--strategies", default=",".join(STRATS))
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--out", default=str(OUT / "results.json"))
    ap.add_argument("--procs", type=int, default=2)
    a = ap.parse_args()
    try:
        allres = json.load(open(a.out))
    except Exception:
        allres = {}
    jobs = [(k, s, a.runs, a.cap) for s in a.strategies.split(",") for k in a.kernels.split(",")]
    with Pool(a.procs) as p:
        for k, name, res, dt in p.imap_unordered(job, jobs):
            allres.setdefault(name, {})[k] = res
            arr = np.array(res)
            print(f"{name:<22} {k:<10} median {np.median(arr):g} <=32 {np.mean(arr<=32):.2f} ({dt:.0f}s)", flush=True)
            json.dump(allres, open(a.out, "w"))
