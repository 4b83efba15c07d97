"""Time every distinct cubin of the ACF landscape on the GPU (cupy, CUDA events). Resumable.

Usage: python run_landscape.py CARRY_DIR OUT_DIR [--budget-s 420] [--min-rounds 5] [--done DIR]
CARRY_DIR holds kernels.json and <kernel>/<sass>.cubin (made by build_landscape.py).
For each kernel: load all cubins, run "none" on a deterministic input (fixed seed), run every variant
on the same input with a NaN-poisoned output and record its relative L2 error against "none"; then
interleaved rounds (fresh random order per round): per variant 1 warm-up launch, then `reps` launches
between two events (reps chosen so a sample is >= ~1 ms); raw per-launch times in ms.
Writes OUT_DIR/<kernel>.json after every round (a time-out keeps what was measured) and skips kernels
whose complete JSON is found in --done DIR.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

import cupy as cp
import numpy as np

F32, I32 = np.float32, np.int32



def one_round(order, funcs, grid, block, args, reps):
    """One interleaved round: per variant in `order` a warm-up launch, then `reps` launches between CUDA
    events; (variant, ms per launch) once the round has finished."""
    evs = []
    for s in order:
        f = funcs[s]
        f(grid, block, args)  # warm-up
        b, e = cp.cuda.Event(), cp.cuda.Event()
        b.record()
        for _ in range(reps):
            f(grid, block, args)
        e.record()
        evs.append((s, b, e))
    evs[-1][2].synchronize()
    return [(s, cp.cuda.get_elapsed_time(b, e) / reps) for s, b, e in evs]

def rel_l2(a, b):
    a = cp.asarray(a, dtype=cp.float64).ravel()
    b = cp.asarray(b, dtype=cp.float64).ravel()
    if not bool(cp.isfinite(a).all()):
        return float("nan")
    return float(cp.linalg.norm(a - b) / cp.linalg.norm(b))


def setup(kname, rng):
    """-> (grid, block, args, outputs, sizes) with deterministic inputs."""
    if kname == "spill":
        n, S = 1 << 20, 136
        x = cp.asarray(rng.standard_normal(S * n, dtype=np.float32))
        out = cp.empty(n, F32)
        return (n // 256,), (256,), (x, out, I32(n)), [out], dict(n=n, S=S)
    if kname == "sgemm":
        M = N = K = 1536
        A = cp.asarray(rng.standard_normal((M, K), dtype=np.float32))
        B = cp.asarray(rng.standard_normal((K, N), dtype=np.float32))
        C = cp.empty((M, N), F32)
        return (N // 64, M // 64), (256,), (A, B, C, I32(M), I32(N), I32(K)), [C], dict(M=M, N=N, K=K)
    if kname == "triad":
        n = 1 << 26
        x = cp.asarray(rng.standard_normal(n, dtype=np.float32))
        z = cp.asarray(rng.standard_normal(n, dtype=np.float32))
        y = cp.empty(n, F32)
        nb = 132 * 8
        part = cp.empty(nb, F32)
        return (nb,), (256,), (x, z, y, part, F32(1.5), F32(-0.75), I32(n // 4)), [y, part], dict(n=n, blocks=nb)
    if kname == "attn":
        L, H, D = 2048, 8, 64
        Q = cp.asarray(rng.standard_normal((H, L, D), dtype=np.float32))
        K = cp.asarray(rng.standard_normal((H, L, D), dtype=np.float32))
        V = cp.asarray(rng.standard_normal((H, L, D), dtype=np.float32))
        O = cp.empty((H, L, D), F32)
        return (L // 64, H), (64,), (Q, K, V, O, I32(L), F32(1 / 8.0)), [O], dict(L=L, H=H, D=D)
    if kname == "gemm_small":
        M, N, K = 2048, 2048, 1024
        A = cp.asarray(rng.standard_normal((M, K), dtype=np.float32))
        B = cp.asarray(rng.standard_normal((K, N), dtype=np.float32))
        C = cp.empty((M, N), F32)
        return ((N // 128, M // 128, 1), (256,), (A, B, C, I32(M), I32(N), I32(K), F32(1.0), F32(0.0)), [C],
                dict(M=M, N=N, K=K, batch=1))
    raise KeyError(kname)


def smi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return repr(e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("carry")
    ap.add_argument("out")
    ap.add_argument("--budget-s", type=float, default=420)
    ap.add_argument("--min-rounds", type=int, default=5)
    ap.add_argument("--max-rounds", type=int, default=30)
    ap.add_argument("--done", default=None)
    ap.add_argument("--kernels", default=None)
    ap.add_argument("--confirm-top", type=int, default=3)
    ap.add_argument("--confirm-rounds", type=int, default=30)
    a = ap.parse_args()
    t_start = time.time()
    kinfo = json.load(open(os.path.join(a.carry, "kernels.json")))
    names = a.kernels.split(",") if a.kernels else list(kinfo)
    todo = []
    for k in names:
        if a.done and os.path.exists(os.path.join(a.done, k + ".json")):
            if json.load(open(os.path.join(a.done, k + ".json"))).get("complete"):
                print(k, "already complete: skipped", flush=True)
                continue
        todo.append(k)
    props = cp.cuda.runtime.getDeviceProperties(0)
    dev = dict(name=props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
               sms=props["multiProcessorCount"], driver=cp.cuda.runtime.driverGetVersion(),
               runtime=cp.cuda.runtime.runtimeGetVersion(), cupy=cp.__version__, smi_start=smi())
    print("device", dev, flush=True)
    for ki, kname in enumerate(todo):
        info = kinfo[kname]
        kdir = os.path.join(a.carry, kname)
        shas = sorted(f[:-6] for f in os.listdir(kdir) if f.endswith(".cubin"))
        none = info["none_sass"]
        rec = dict(kernel=kname, device=dev, entry=info["entry"], none_sass=none, complete=False, variants={})
        mods, funcs = {}, {}
        for s in shas:
            v = rec["variants"].setdefault(s, dict(load="ok", error=None, samples_ms=[]))
            try:
                mods[s] = cp.RawModule(path=os.path.join(kdir, s + ".cubin"))
                funcs[s] = mods[s].get_function(info["entry"])
            except Exception as e:  # noqa: BLE001
                v["load"] = repr(e)[:300]
        if none not in funcs:
            print(kname, "none cubin failed to load:", rec["variants"][none]["load"], flush=True)
            json.dump(rec, open(os.path.join(a.out, kname + ".json"), "w"))
            sys.exit(3)
        rng = np.random.default_rng(1234 + ki)
        grid, block, args, outs, sizes = setup(kname, rng)
        rec["sizes"] = sizes
        fn = funcs[none]
        fn(grid, block, args)
        cp.cuda.runtime.deviceSynchronize()
        refs = [o.copy() for o in outs]
        for s, f in funcs.items():
            for o in outs:
                o.fill(np.nan)
            try:
                f(grid, block, args)
                cp.cuda.runtime.deviceSynchronize()
                errs = [rel_l2(o, r) for o, r in zip(outs, refs)]
                rec["variants"][s]["error"] = max(errs) if all(e == e for e in errs) else float("nan")
            except Exception as e:  # noqa: BLE001
                rec["variants"][s]["load"] = "launch: " + repr(e)[:300]
        live = [s for s in funcs if rec["variants"][s]["load"] == "ok"]
        # calibrate reps from none's time
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        for _ in range(5):
            fn(grid, block, args)
        e1.record()
        e1.synchronize()
        t_none = cp.cuda.get_elapsed_time(e0, e1) / 5
        reps = max(2, int(np.ceil(1.0 / t_none)))
        rec.update(reps=reps, t_none_calib_ms=t_none)
        left_k = len(todo) - ki
        k_budget = (a.budget_s - (time.time() - t_start)) / left_k
        k_t0 = time.time()
        r = 0
        rs = random.Random(99 + ki)
        while r < a.max_rounds:
            order = live[:]
            rs.shuffle(order)
            for s, ms in one_round(order, funcs, grid, block, args, reps):
                rec["variants"][s]["samples_ms"].append([r, ms])
            r += 1
            rec["rounds"] = r
            json.dump(rec, open(os.path.join(a.out, kname + ".json"), "w"))
            el = time.time() - k_t0
            if r >= a.min_rounds and el / r * (r + 1) > k_budget:
                break
        # confirmation: the 3 fastest by median (a selection on the data above) against none, fresh rounds
        med = {s: np.median([x[1] for x in rec["variants"][s]["samples_ms"]]) for s in live}
        top = sorted((s for s in live if s != none), key=med.get)[:a.confirm_top]
        cset = [none] + top
        rec["confirm"] = {s: [] for s in cset}
        for cr in range(a.confirm_rounds):
            order = cset[:]
            rs.shuffle(order)
            for s, ms in one_round(order, funcs, grid, block, args, reps):
                rec["confirm"][s].append([cr, ms])
        rec["complete"] = True
        rec["smi_end"] = smi()
        json.dump(rec, open(os.path.join(a.out, kname + ".json"), "w"))
        tn = np.median([x[1] for x in rec["variants"][none]["samples_ms"]])
        best = min(live, key=lambda s: np.median([x[1] for x in rec["variants"][s]["samples_ms"]]))
        tb = np.median([x[1] for x in rec["variants"][best]["samples_ms"]])
        bad = sum(1 for s in shas if rec["variants"][s]["load"] != "ok" or not (rec["variants"][s]["error"] or 0) < 1e-3)
        print("%-10s variants %3d rounds %2d reps %d none %.4f ms best %.4f ms (x%.3f) bad %d  %.0fs" % (
            kname, len(shas), r, reps, tn, tb, tn / tb, bad, time.time() - k_t0), flush=True)


if __name__ == "__main__":
    main()
