#!/usr/bin/env python3
"""Issue 52: how far is the learned prior from what its kind of model could do, and does more data close the
gap? (docs/benchmarks/prior.md, "What more data would buy".)

For each recorded CUDA kernel with at least 2% to gain (prior_heldout.GAINFUL), held out: the prior is fitted on
a random subset of n of the other kernels (hyper-parameters included; `--repeats` subsets per n, seeded), and
the held-out replay of prior_heldout.py is run with it (builds to 99% of the space's best, `--seeds` seeds, the
same paired noise as without the prior), with the zero-shot share of its first combination. Two references on
the same kernels: the default search (no prior) and an *oracle* prior that knows the held-out kernel's true
single-value effects (each value alone, sd 0.5%, invalid where it was): the best a model of single-value effects
can do with today's rules of the search.

Usage: .venv/bin/python benchmarks/evaluation/prior_learning_curve.py --sizes 8,16,24,34 --repeats 3 --seeds 30 \\
           --jobs 2 --json docs/benchmarks/raw/prior-52/learning-curve/curve.json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE), str(ROOT / "benchmarks" / "landscapes")]

import prior_eval  # noqa: E402
import prior_heldout as ph  # noqa: E402
import prior_train  # noqa: E402
from compileiq_cmake.search.landscape import Landscape  # noqa: E402
from compileiq_cmake.search.prior import SHIPPED, Prediction, PriorModel, space_prior  # noqa: E402
from compileiq_cmake.search.search import FlagSearch  # noqa: E402


class Oracle:
    """A stand-in for PriorModel whose predictions are the kernel's own measured single-value effects."""

    def __init__(self, land: Landscape) -> None:
        self.land = land
        self.observations: list = []

    def predict_space(self, space, features, arch=""):  # noqa: ANN001, ANN201, ARG002
        out = {}
        for d in space.dimensions:
            for i in range(1, len(d.values)):
                p = self.land.lookup(space.flagset({d.name: i}).flags)
                ok = p is not None and p.valid
                out[(d.name, i)] = Prediction(math.log(p.speedup) if ok else 0.0, 0.005, 0.0 if ok else 1.0, 10.0)
        return out


def share(speedup: float | None, best: float) -> float:
    s = speedup or 1.0
    return min(1.0, max(0.0, math.log(max(s, 1e-9)) / math.log(best)))


def run_one(name: str, model, seeds: int) -> dict:  # noqa: ANN001
    """The held-out replay of one kernel with `model` (a PriorModel, an Oracle, or None: the default)."""
    path = prior_train.landscape_path(name)
    land = Landscape.load(path)
    space = prior_eval.eval_space(land, json.loads(path.read_text())["meta"])
    best = prior_eval.space_best(land, space)
    budget = min(ph.BUDGET, max(2, space.size))
    held = next(o for o in PriorModel.load(SHIPPED).observations if o.id == f"landscape:{name}")
    sp = space_prior(model, space, held.features, held.arch) if model is not None else None
    builds = [ph.builds_to(land, space, FlagSearch(space, budget, s, 1, prior=sp), s, budget, 0.99 * best)
              for s in range(seeds)]
    first = None
    if sp is not None and sp.first:
        names = [d.name for d in space.dimensions]
        p = land.lookup(space.flagset(dict(zip(names, sp.first[0], strict=True))).flags)
        first = p.speedup if p is not None and p.valid else 0.0
    return {"best": best, "builds": builds, "median": statistics.median(builds), "first": first,
            "share": share(first, best) if model is not None else None}


def cell(name: str, n: int, rep: int, seeds: int) -> dict:
    """Kernel `name` held out, the prior fitted on n of the other kernels (subset `rep`)."""
    t0 = time.perf_counter()
    obs = [o for o in PriorModel.load(SHIPPED).observations if o.family == "nvcc"]
    others = [o for o in obs if o.id != f"landscape:{name}"]
    train = others if n >= len(others) else random.Random(f"{name}/{n}/{rep}").sample(others, n)
    model = PriorModel(train)
    model.fit()
    out = run_one(name, model, seeds)
    out.update(kernel=name, n=len(train), rep=rep, seconds=round(time.perf_counter() - t0, 1),
               hyper={f: h.as_dict() for f, h in model.hyper.items()})
    return out


def gainful() -> list[str]:
    out = []
    for o in PriorModel.load(SHIPPED).observations:
        name = o.id.split(":", 1)[1]
        if o.family != "nvcc":
            continue
        path = prior_train.landscape_path(name)
        land = Landscape.load(path)
        space = prior_eval.eval_space(land, json.loads(path.read_text())["meta"])
        if prior_eval.space_best(land, space) >= ph.GAINFUL:
            out.append(name)
    return out


def main() -> None:
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="8,16,24,34")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    kernels = gainful()
    n_all = sum(1 for o in PriorModel.load(SHIPPED).observations if o.family == "nvcc") - 1
    sizes = sorted({min(int(s), n_all) for s in args.sizes.split(",")})
    t0 = time.perf_counter()
    refs = {}
    for k in kernels:
        land = Landscape.load(prior_train.landscape_path(k))
        refs[k] = {"default": run_one(k, None, args.seeds), "oracle": run_one(k, Oracle(land), args.seeds)}
    cells = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futs = [pool.submit(cell, k, n, r, args.seeds) for n in sizes for r in range(1 if n >= n_all else args.repeats)
                for k in kernels]
        for f in futs:
            c = f.result()
            cells.append(c)
            print(f"n={c['n']:2d} rep {c['rep']} {c['kernel']:22} median {c['median']:5} (default "
                  f"{refs[c['kernel']]['default']['median']:g}, oracle {refs[c['kernel']]['oracle']['median']:g}) "
                  f"share {c['share']:.2f} ({c['seconds']:.0f} s)", flush=True)
    table = []
    for n in sizes:
        rows = [c for c in cells if c["n"] == n]
        per_rep = {}
        for c in rows:
            per_rep.setdefault(c["rep"], []).append(c)
        meds = [statistics.median(c["median"] for c in rs) for rs in per_rep.values()]
        shares = [statistics.fmean(c["share"] for c in rs) for rs in per_rep.values()]
        table.append({"n": n, "subsets": len(per_rep), "median_builds": meds, "zero_shot": shares})
    ref = {s: {"median_builds": statistics.median(refs[k][s]["median"] for k in kernels),
               "mean_builds": statistics.fmean(refs[k][s]["median"] for k in kernels)} for s in ("default", "oracle")}
    ref["oracle"]["zero_shot"] = statistics.fmean(refs[k]["oracle"]["share"] for k in kernels)
    doc = {"kernels": kernels, "seeds": args.seeds, "sizes": sizes, "repeats": args.repeats,
           "seconds": round(time.perf_counter() - t0, 1), "table": table, "references": ref,
           "per_kernel_references": {k: {s: {kk: v[kk] for kk in ("median", "first", "share")} for s, v in r.items()}
                                     for k, r in refs.items()},
           "cells": cells}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(doc, indent=1))
    for row in table:
        print(f"n={row['n']:2d}: median builds over the {len(kernels)} gainful kernels {row['median_builds']}, "
              f"zero-shot share {[round(s, 2) for s in row['zero_shot']]}")
    print(f"default: {ref['default']}; oracle: {ref['oracle']}")


if __name__ == "__main__":
    main()
