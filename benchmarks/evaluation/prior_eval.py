#!/usr/bin/env python3
"""Evaluate the learned prior (issue 23) on kernels it never saw: docs/benchmarks/prior.md.

For every recorded landscape of benchmarks/evaluation/prior_train.py's observations (single kernels, and project targets
recorded with the learning design: mc_rdc, multi_bench), a prior is fitted
(hyper-parameters included) on the OTHER kernels only:
  - leave-one-kernel-out (LOKO): every kernel but the held-out one;
  - leave-one-source-out (LOSO): every kernel of the other sources (own-v1 = the first nine hand-written
    kernels, own-llm / own-hpc = the kernels of inputs_llm.py / inputs_hpc.py, own-project = targets of
    benchmarks/projects, own-example = targets of examples/) only.
Then each strategy runs the replayed search (search_efficiency.simulate: the same ask/tell loop, cache and
noisy measurements a tune would see) on the held-out kernel's search space, 30 seeds:
  - prior:   FlagSearch with the held-out kernel's SpacePrior (its features -> predictions), the shipped default;
  - default: FlagSearch without a prior (today's default, `--no-prior`);
  - random:  uniform over the unseen builds;
  - ngopt:   nevergrad NGOpt behind the same cache.
The search space: the landscape's after static screening; for the learning-design landscapes (a sampled
25-dimension space) its complete core sub-space (meta.core, else record.py LEARN_CORE), where every point was
measured; device_lto is a build mode there as in a tune.
Metrics: builds (and GPU runs) until a built valid point's true speedup reaches 95% / 99% of the space's best
(median and IQR over seeds; an unreached run counts as budget + 1), and Spearman's rank correlation of the
predicted vs the measured single-value effects.

Usage: .venv/bin/python benchmarks/evaluation/prior_eval.py run [--seeds 30] [--budget 60] [--kernels a,b]
           [--out docs/benchmarks/raw/prior/eval.json]
       .venv/bin/python benchmarks/evaluation/prior_eval.py report [--out ...] [--md docs/benchmarks/prior-table.md]
       .venv/bin/python benchmarks/evaluation/prior_eval.py unknown --json docs/benchmarks/raw/prior-unknown/after.json
           (issue 36: each gainful kernel's use_fast_math dimension renamed, prior vs default; "before": the same
           script run in a worktree of the commit before the fix, 10f41c6)
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/evaluation
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "benchmarks" / "landscapes"))

import prior_train  # noqa: E402  (landscape_path)
import search_efficiency as se  # noqa: E402
from compileiq_cmake.flags.catalogue import DEVICE_LTO_DIMENSION  # noqa: E402
from compileiq_cmake.flags.space import FlagSpace  # noqa: E402
from compileiq_cmake.search.landscape import Landscape  # noqa: E402
from compileiq_cmake.search.prior import SHIPPED, PriorModel, space_prior  # noqa: E402
from compileiq_cmake.search.search import FlagSearch, NevergradSearch  # noqa: E402

DEFAULT_OUT = ROOT / "docs" / "benchmarks" / "raw" / "prior"  # one <kernel>.json each
STRATEGIES = ("prior", "default", "random", "ngopt")
GAINFUL = 1.02  # the report's second line: the kernels whose space holds at least this speedup


def eval_space(land: Landscape, meta: dict) -> FlagSpace:
    """The screened space; for a learning-design landscape only its core values (a complete sub-space): the
    landscape's own meta.core (name -> values, record_project.py --learn) when it has one, else record.py's
    LEARN_CORE / LEARN_CORE_VALUES. A device_lto dimension is a build mode, as in a tune's space
    (flags/catalogue.py add_device_lto_dimension: today's default measures it first among the singles)."""
    space = se.screened_space(land)
    space = replace(space, dimensions=tuple(replace(d, build_mode=True) if d.name == DEVICE_LTO_DIMENSION else d
                                            for d in space.dimensions))
    if not str(meta.get("sampling", "")).startswith("learn"):
        return space
    if isinstance(meta.get("core"), dict):
        allowed_of = {name: [tuple(v) for v in values] for name, values in meta["core"].items()}
    else:
        import record  # noqa: PLC0415 (benchmarks/landscapes)
        allowed_of = {}
        for name in (*record.LEARN_CORE, *record.LEARN_CORE_VALUES):
            full = next((x for x in land.dimensions if x.name == name), None)
            if full is None:
                continue
            allowed_of[name] = ([tuple(v) for v in record.LEARN_CORE_VALUES[name]] if name in record.LEARN_CORE_VALUES
                                else [tuple(v) for v in full.values[:record.LEARN_CORE[name]]])
    dims = []
    for d in space.dimensions:
        if d.name not in allowed_of:
            continue
        values = tuple(v for v in d.values if tuple(v) in allowed_of[d.name])
        if len(values) > 1:
            dims.append(replace(d, values=values))
    return FlagSpace(family=space.family, dimensions=tuple(dims))


def space_best(land: Landscape, space: FlagSpace) -> float:
    best = 1.0
    for combo in itertools.product(*(range(len(d.values)) for d in space.dimensions)):
        p = land.lookup(space.flagset({d.name: i for d, i in zip(space.dimensions, combo)}).flags)
        if p is not None and p.valid:
            best = max(best, p.speedup)
    return best


def strategy(name: str, space: FlagSpace, budget: int, seed: int, prior):
    if name == "prior":
        return FlagSearch(space, budget, seed, 1, prior=prior)
    if name == "default":
        return FlagSearch(space, budget, seed, 1)
    if name == "random":
        return se.RandomSearch(space, budget, seed)
    if name == "ngopt":
        return NevergradSearch(space, budget, seed, 1, optimizer="NGOpt")
    raise KeyError(name)


def builds_to(run: dict, target: float) -> tuple[int | None, int | None]:
    return se.builds_to(run, target)


def spearman(a: list[float], b: list[float]) -> float | None:
    if len(a) < 3:
        return None

    def ranks(x):
        order = sorted(range(len(x)), key=lambda i: x[i])
        r = [0.0] * len(x)
        i = 0
        while i < len(x):
            j = i
            while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return num / den if den > 0 else None


def evaluate_kernel(name: str, prior_path: str, seeds: int, budget_cap: int, ng_seeds: int) -> dict:
    """One held-out kernel: both folds, every strategy (one process: run in parallel over kernels)."""
    t0 = time.perf_counter()
    obs = PriorModel.load(prior_path).observations  # prior_train.py's observations (features computed once)
    held = next(o for o in obs if o.id == f"landscape:{name}")
    path = prior_train.landscape_path(name)
    meta = json.loads(path.read_text())["meta"]
    land = Landscape.load(path)
    space = eval_space(land, meta)
    best = space_best(land, space)
    budget = min(budget_cap, max(2, space.size))
    row = {"source": held.source, "kind": held.kind, "space_size": space.size, "best": best, "budget": budget,
           "seeds": seeds, "ngopt_seeds": ng_seeds, "dimensions": [d.name for d in space.dimensions], "folds": {}}
    for fold in ("loko", "loso"):
        train = [o for o in obs if o.id != held.id and (fold == "loko" or o.source != held.source)]
        if not any(o.family == held.family for o in train):
            row["folds"][fold] = None  # no other source yet
            continue
        t_fit = time.perf_counter()
        model = PriorModel(train)
        model.fit()
        t_fit = time.perf_counter() - t_fit
        sp = space_prior(model, space, held.features, "90")
        # rank correlation over every recorded single value of the held-out kernel (the whole space)
        keys = [k for k, v in held.effects.items() if v is not None]
        pred = model.predict_keys(held.family, held.features, keys, "90")
        rho = spearman([pred[k].effect for k in keys], [held.effects[k] for k in keys])
        runs = {}
        seconds = {"fit": round(t_fit, 2)}
        for sname in STRATEGIES:
            if fold == "loso" and sname != "prior":
                continue  # the other strategies do not depend on the training set
            t_s = time.perf_counter()
            n = ng_seeds if sname == "ngopt" else seeds
            rs = [se.simulate(land, space, strategy(sname, space, budget, s, sp), s, budget) for s in range(n)]
            runs[sname] = {f"p{int(q * 100)}": [builds_to(r, q * best) for r in rs] for q in (0.95, 0.99)}
            seconds[sname] = round(time.perf_counter() - t_s, 2)
        names = [d.name for d in space.dimensions]
        row["folds"][fold] = {"spearman": rho, "hyper": model.hyper[held.family].as_dict(), "seconds": seconds,
                              "first": [list(space.flagset(dict(zip(names, c))).flags) for c in sp.first], "runs": runs}
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


UNKNOWN_NAME = "fast_math_user"  # a fast-math choice under a name no observation has (a user's --acf, a new nvcc)


def evaluate_unknown(name: str, prior_path: str, seeds: int, budget_cap: int) -> dict | None:
    """Issue 36: the held-out kernel's space with its use_fast_math dimension renamed (same flags, same
    approximate-arithmetic mark: only the prior does not know it); the prior (leave-one-kernel-out) against
    the default search, builds to 99% of the space's best per seed. None: no use_fast_math in the space."""
    obs = PriorModel.load(prior_path).observations
    held = next(o for o in obs if o.id == f"landscape:{name}")
    path = prior_train.landscape_path(name)
    land = Landscape.load(path)
    space = eval_space(land, json.loads(path.read_text())["meta"])
    if "use_fast_math" not in [d.name for d in space.dimensions]:
        return None
    space = replace(space, dimensions=tuple(replace(d, name=UNKNOWN_NAME) if d.name == "use_fast_math" else d
                                            for d in space.dimensions))
    best = space_best(land, space)
    budget = min(budget_cap, max(2, space.size))
    model = PriorModel([o for o in obs if o.id != held.id])
    model.fit()
    sp = space_prior(model, space, held.features, "90")
    row = {"kernel": name, "best": best, "budget": budget, "seeds": seeds, "space_size": space.size, "runs": {}}
    for sname in ("prior", "default"):
        rs = [se.simulate(land, space, strategy(sname, space, budget, s, sp), s, budget) for s in range(seeds)]
        row["runs"][sname] = [builds_to(r, 0.99 * best)[0] for r in rs]
    return row


def cmd_unknown(args) -> None:
    """Every kernel with at least GAINFUL to gain and a use_fast_math dimension, renamed (evaluate_unknown)."""
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415
    names = args.kernels.split(",") if args.kernels else [o.id.split(":", 1)[1] for o in PriorModel.load(args.prior).observations]
    rows = {}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {k: pool.submit(evaluate_unknown, k, args.prior, args.seeds, args.budget) for k in names}
        for name, fut in futures.items():
            row = fut.result()
            if row is None or row["best"] < GAINFUL:
                continue
            rows[name] = row
            med = {s: se.quartiles(v, row["budget"])[0] for s, v in row["runs"].items()}
            print(f"{name:22} best {row['best']:.3f}x builds to 99%: prior {med['prior']:g} default {med['default']:g}",
                  flush=True)
    prior = [se.quartiles(r["runs"]["prior"], r["budget"])[0] for r in rows.values()]
    default = [se.quartiles(r["runs"]["default"], r["budget"])[0] for r in rows.values()]
    worse = [n for n, p, d in zip(rows, prior, default) if p > d]
    summary = {"kernels": len(rows), "median_prior": statistics.median(prior), "median_default": statistics.median(default),
               "worse_with_prior": worse, "label": args.label}
    print(json.dumps(summary))
    Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


def cmd_run(args) -> None:
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [o.id.split(":", 1)[1] for o in PriorModel.load(args.prior).observations]
    wanted = args.kernels.split(",") if args.kernels else names
    todo = [k for k in wanted if args.again or not (out / f"{k}.json").is_file()]  # resumable
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {k: pool.submit(evaluate_kernel, k, args.prior, args.seeds, args.budget, args.ngopt_seeds) for k in todo}
        for name, fut in futures.items():
            row = fut.result()
            tmp = out / f"{name}.json.tmp"
            tmp.write_text(json.dumps(row, indent=1))
            tmp.replace(out / f"{name}.json")
            loko = row["folds"]["loko"]["runs"]
            med = {s: se.quartiles([x[0] for x in loko[s]["p99"]], row["budget"])[0] for s in loko}
            rho = row["folds"]["loko"]["spearman"]
            print(f"{name:22} space {row['space_size']:5d} best {row['best']:.3f}x  builds to 99%: "
                  + " ".join(f"{s} {m:g}" for s, m in med.items())
                  + f"  rho {'-' if rho is None else f'{rho:.2f}'}  ({row['seconds']:.0f} s)", flush=True)


def _load_rows(out: Path) -> dict:
    return {p.stem: json.loads(p.read_text()) for p in sorted(Path(out).glob("*.json"))}


def cmd_report(args) -> None:
    data = {"kernels": _load_rows(Path(args.out))}
    lines = []
    for fold in ("loko", "loso"):
        lines.append(f"\n### {'Leave-one-kernel-out' if fold == 'loko' else 'Leave-one-source-out'}\n")
        strategies = STRATEGIES if fold == "loko" else ("prior",)
        head = "| kernel | source | space | best | " + " | ".join(f"{s} 95% | {s} 99%" for s in strategies) + " | rho |"
        lines += [head, "|" + "---|" * (4 + 2 * len(strategies) + 1)]
        meds = {s: [] for s in strategies}
        worse = []
        for name, row in sorted(data["kernels"].items(), key=lambda kv: (kv[1]["source"], kv[0])):
            f = row["folds"][fold]
            runs = {**row["folds"]["loko"]["runs"], **f["runs"]}
            cells = []
            for s in strategies:
                for q in ("p95", "p99"):
                    m, lo, hi, n = se.quartiles([x[0] for x in runs[s][q]], row["budget"])
                    cells.append(f"{m:g} [{lo:g}-{hi:g}]" + ("" if n == len(runs[s][q]) else f" ({n}/{len(runs[s][q])})"))
                    if q == "p99":
                        meds[s].append(m)
            d99 = se.quartiles([x[0] for x in runs["default"]["p99"]], row["budget"])[0]
            p99 = se.quartiles([x[0] for x in runs["prior"]["p99"]], row["budget"])[0]
            if p99 - d99 > 2:
                worse.append(f"{name} ({p99:g} vs {d99:g})")
            rho = f["spearman"]
            lines.append(f"| {name} | {row['source']} | {row['space_size']} | {row['best']:.3f}x | " + " | ".join(cells)
                         + f" | {'-' if rho is None else f'{rho:.2f}'} |")
        lines.append("")
        lines.append("Median over kernels of the per-kernel median builds to 99%: "
                     + ", ".join(f"{s} {statistics.median(v):g}" for s, v in meds.items()))
        dm = statistics.median([se.quartiles([x[0] for x in r["folds"]["loko"]["runs"]["default"]["p99"]], r["budget"])[0]
                                for r in data["kernels"].values()])
        pm = statistics.median(meds["prior"])
        lines.append(f"Goal (prior <= half of default): prior {pm:g} vs default {dm:g} -> "
                     f"{'met' if pm <= dm / 2 else f'missed by {pm - dm / 2:g} builds'}; kernels where the prior "
                     f"needs > 2 builds more than the default: {', '.join(worse) or 'none'}")
        gainful = {n: r for n, r in data["kernels"].items() if r["best"] >= GAINFUL}
        for s in strategies:
            vals = [se.quartiles([x[0] for x in {**r["folds"]["loko"]["runs"], **r["folds"][fold]["runs"]}[s]["p99"]],
                                 r["budget"])[0] for r in gainful.values()]
            lines.append(f"Kernels with at least {100 * (GAINFUL - 1):.0f}% to gain ({len(vals)}): {s}: median {statistics.median(vals):g}, "
                         f"mean {statistics.fmean(vals):.1f} builds to 99%")
        rhos = [r["folds"][fold]["spearman"] for r in data["kernels"].values() if r["folds"][fold]["spearman"] is not None]
        if rhos:
            lines.append(f"Spearman rho of predicted vs measured single-value effects: median {statistics.median(rhos):.2f} "
                         f"(IQR {statistics.quantiles(rhos, n=4)[0]:.2f}-{statistics.quantiles(rhos, n=4)[2]:.2f}) over "
                         f"{len(rhos)} kernels")
    text = "\n".join(lines) + "\n"
    if args.md:
        Path(args.md).write_text(text)
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", type=int, default=30)
    r.add_argument("--budget", type=int, default=60)
    r.add_argument("--kernels", default="")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--ngopt-seeds", type=int, default=10)
    r.add_argument("--again", action="store_true", help="re-run kernels already in --out")
    r.add_argument("--out", default=str(DEFAULT_OUT))
    r.add_argument("--prior", default=str(SHIPPED), help="the observations (prior_train.py's output)")
    p = sub.add_parser("report")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--md", default="")
    u = sub.add_parser("unknown", help="issue 36: the fast-math dimension under a name the prior never saw")
    u.add_argument("--seeds", type=int, default=30)
    u.add_argument("--budget", type=int, default=60)
    u.add_argument("--jobs", type=int, default=2)
    u.add_argument("--prior", default=str(SHIPPED))
    u.add_argument("--label", default="")
    u.add_argument("--kernels", default="", help="these held-out kernels only (default: every one)")
    u.add_argument("--json", required=True)
    args = ap.parse_args()
    {"run": cmd_run, "report": cmd_report, "unknown": cmd_unknown}[args.cmd](args)


if __name__ == "__main__":
    main()
