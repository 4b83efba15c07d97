#!/usr/bin/env python3
"""Issue 52: is the prior ever worse than no prior? A paired, per-kernel held-out replay (docs/benchmarks/prior.md).

For every recorded landscape of the shipped observations (benchmarks/evaluation/prior_train.py), the prior is
fitted leave-one-kernel-out (hyper-parameters included, or read from a file of recorded fits: `--hyper`), then
the project's search (FlagSearch) is replayed on the kernel's space (prior_eval.eval_space) with the prior and
without it, seed by seed: the same seed gives both the same noisy measurements of each device code
(search_efficiency.Evaluator), so the two are paired. Two views:

  - catalogue: every dimension as recorded (the prior knows them all);
  - hidden2:   the two dimensions whose best value alone gains most on this kernel renamed (`<name>_user`: the
               same flags and marks, only the prior has no observation of them: a user's custom flags). The
               hardest case for a prior: what matters is what it does not know.

Per kernel and view: builds until a built valid point's true speedup reaches 99% of the space's best (an
unreached run counts as budget + 1), with and without the prior, over `--seeds` seeds; the one-sided Wilcoxon
signed-rank test (scipy, zero differences dropped; H1: the prior needs more builds) and its Holm-adjusted
p-value over the kernels of the view. "Significantly worse": Holm-adjusted p < ALPHA (0.05).
Zero-shot share (catalogue view): over the kernels with at least 2% to gain, the mean share of the best's
log-gain that the prior's first combination (proposed before anything of the kernel is measured) has.

Usage: .venv/bin/python benchmarks/evaluation/prior_heldout.py run --seeds 30 --jobs 2 --json docs/benchmarks/raw/prior-52/after.json
           [--kernels a,b] [--views catalogue,hidden2] [--hyper docs/benchmarks/raw/prior-52/hyper.json] [--save-hyper FILE]
           [--mark-first march_native]
       .venv/bin/python benchmarks/evaluation/prior_heldout.py report --json ... [--before ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "benchmarks" / "landscapes"))

import prior_eval  # noqa: E402
import prior_train  # noqa: E402
import search_efficiency as se  # noqa: E402
from compileiq_cmake.flags.space import FlagSpace  # noqa: E402
from compileiq_cmake.search.landscape import Landscape  # noqa: E402
from compileiq_cmake.search.prior import SHIPPED, Hyper, PriorModel, space_prior  # noqa: E402
from compileiq_cmake.search.search import FlagSearch  # noqa: E402

VIEWS = ("catalogue", "hidden2")
ALPHA = 0.05
GAINFUL = 1.02
BUDGET = 60
HIDDEN_SUFFIX = "_user"


def single_gains(land: Landscape, space: FlagSpace) -> dict[str, float]:
    """Per dimension: the best true speedup of one of its values alone (invalid: 0)."""
    out = {}
    for d in space.dimensions:
        best = 0.0
        for i in range(1, len(d.values)):
            p = land.lookup(space.flagset({d.name: i}).flags)
            if p is not None and p.valid:
                best = max(best, p.speedup)
        out[d.name] = best
    return out


def hidden_names(land: Landscape, space: FlagSpace, n: int = 2) -> list[str]:
    """The n dimensions whose best value alone gains most (ties: in the space's order)."""
    gains = single_gains(land, space)
    return sorted(gains, key=lambda k: -gains[k])[:n]


def view_space(land: Landscape, space: FlagSpace, view: str) -> tuple[FlagSpace, list[str]]:
    if view == "catalogue":
        return space, []
    hide = hidden_names(land, space)
    dims = tuple(replace(d, name=d.name + HIDDEN_SUFFIX) if d.name in hide else d for d in space.dimensions)
    return replace(space, dimensions=dims), hide


def builds_to(land: Landscape, space: FlagSpace, search, seed: int, budget: int, target: float) -> int:
    """Builds until a built valid point's true speedup reaches `target` (the baseline is build 1); budget + 1
    when not within the budget. search_efficiency.simulate's loop, stopped once reached."""
    ev = se.Evaluator(land, seed)
    base = space.baseline()
    search.tell(base, 0.0)
    if 1.0 >= target - 1e-12:
        return 1
    seen = {base.key}
    while len(seen) < budget:
        fs = search.ask()
        if fs is None:
            break
        if fs.key in seen:
            continue
        seen.add(fs.key)
        loss, true, _ = ev.evaluate(fs.flags)
        search.tell(fs, loss)
        if true >= target - 1e-12:
            return len(seen)
    return budget + 1


def wilcoxon_worse(prior: list[int], default: list[int]) -> float:
    """One-sided Wilcoxon signed-rank p-value of H1 'the prior needs more builds' (zero differences dropped;
    1.0 when every pair is equal)."""
    from scipy.stats import wilcoxon  # noqa: PLC0415

    diffs = [p - d for p, d in zip(prior, default, strict=True)]
    if not any(diffs):
        return 1.0
    return float(wilcoxon(diffs, zero_method="wilcox", alternative="greater").pvalue)


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values."""
    order = sorted(pvalues, key=lambda k: pvalues[k])
    out, running = {}, 0.0
    for rank, k in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * pvalues[k]))
        out[k] = running
    return out


def loko_model(name: str, observations, hyper: dict | None) -> PriorModel:
    held = f"landscape:{name}"
    train = [o for o in observations if o.id != held]
    if hyper is not None and name in hyper:
        return PriorModel(train, {fam: Hyper.from_dict(h) for fam, h in hyper[name].items()})
    model = PriorModel(train)
    model.fit()
    return model


def evaluate_kernel(
    name: str, prior_path: str, seeds: int, views: tuple[str, ...], hyper: dict | None, mark_first: tuple[str, ...] = ()
) -> dict:
    """One held-out kernel, every view: builds to 99% per seed with and without the prior. `mark_first`: dimensions
    measured first in both searches, as a tune's compile line marks them (tune/compile_line.py: `march_native` for
    a host target whose line names no instruction set, as these kernels' -O3 -DNDEBUG does not)."""
    t0 = time.perf_counter()
    obs = PriorModel.load(prior_path).observations
    held = next(o for o in obs if o.id == f"landscape:{name}")
    path = prior_train.landscape_path(name)
    land = Landscape.load(path)
    base_space = prior_eval.eval_space(land, json.loads(path.read_text())["meta"])
    base_space = replace(base_space, dimensions=tuple(replace(d, measured_first=True) if d.name in mark_first else d
                                                      for d in base_space.dimensions))
    model = loko_model(name, obs, hyper)
    best = prior_eval.space_best(land, base_space)
    budget = min(BUDGET, max(2, base_space.size))
    row: dict = {"source": held.source, "best": best, "budget": budget, "space_size": base_space.size,
                 "seeds": seeds, "hyper": {f: h.as_dict() for f, h in model.hyper.items()}, "views": {}}
    for view in views:
        space, hidden = view_space(land, base_space, view)
        sp = space_prior(model, space, held.features, held.arch)  # "90" for the CUDA kernels, "" for host ones
        runs = {
            "prior": [builds_to(land, space, FlagSearch(space, budget, s, 1, prior=sp), s, budget, 0.99 * best)
                      for s in range(seeds)],
            "default": [builds_to(land, space, FlagSearch(space, budget, s, 1), s, budget, 0.99 * best)
                        for s in range(seeds)],
        }
        first = None
        if sp.first:
            p = land.lookup(space.flagset(dict(zip([d.name for d in space.dimensions], sp.first[0], strict=True))).flags)
            first = p.speedup if p is not None and p.valid else 0.0
        row["views"][view] = {
            "hidden": hidden, "runs": runs, "p_worse": wilcoxon_worse(runs["prior"], runs["default"]),
            "first_speedup": first, "confidence": getattr(sp, "confidence", None),
        }
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def zero_shot(rows: dict) -> float | None:
    shares = []
    for r in rows.values():
        if r["best"] < GAINFUL:
            continue
        first = r["views"]["catalogue"]["first_speedup"] or 1.0
        shares.append(min(1.0, max(0.0, math.log(max(first, 1e-9)) / math.log(r["best"]))))
    return statistics.fmean(shares) if shares else None


def summary(rows: dict, view: str) -> dict:
    rows = {k: r for k, r in rows.items() if view in r["views"]}
    adj = holm({k: r["views"][view]["p_worse"] for k, r in rows.items()})
    med = {s: {k: statistics.median(r["views"][view]["runs"][s]) for k, r in rows.items()} for s in ("prior", "default")}
    gain = [k for k, r in rows.items() if r["best"] >= GAINFUL]
    out = {
        "kernels": len(rows), "gainful": len(gain), "alpha": ALPHA,
        "worse": sorted(k for k, p in adj.items() if p < ALPHA), "p_holm": adj,
        "median_all": {s: statistics.median(m.values()) for s, m in med.items()} if rows else {},
        "median_gainful": {s: statistics.median(m[k] for k in gain) for s, m in med.items()} if gain else {},
        "mean_gainful": {s: statistics.fmean(m[k] for k in gain) for s, m in med.items()} if gain else {},
    }
    if view == "catalogue":
        out["zero_shot"] = zero_shot(rows)
    return out


def cmd_run(args) -> None:
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415

    names = args.kernels.split(",") if args.kernels else [o.id.split(":", 1)[1] for o in PriorModel.load(args.prior).observations]
    views = tuple(args.views.split(","))
    hyper = json.loads(Path(args.hyper).read_text()) if args.hyper else None
    rows = {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        mark = tuple(m for m in args.mark_first.split(",") if m)
        futures = {k: pool.submit(evaluate_kernel, k, args.prior, args.seeds, views, hyper, mark) for k in names}
        for name, fut in futures.items():
            rows[name] = row = fut.result()
            cells = []
            for v in views:
                r = row["views"][v]["runs"]
                cells.append(f"{v}: prior {statistics.median(r['prior']):g} default {statistics.median(r['default']):g}"
                             f" p {row['views'][v]['p_worse']:.3g}")
            print(f"{name:22} best {row['best']:.3f}x  " + "; ".join(cells) + f"  ({row['seconds']:.0f} s)", flush=True)
    doc = {"label": args.label, "seeds": args.seeds, "budget": BUDGET, "seconds": round(time.perf_counter() - t0, 1),
           "summary": {v: summary(rows, v) for v in views}, "rows": rows}
    print(json.dumps(doc["summary"], indent=1, default=str))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(doc, indent=1))
    if args.save_hyper:
        Path(args.save_hyper).write_text(json.dumps({k: r["hyper"] for k, r in rows.items()}, indent=1, sort_keys=True))


def _q(values: list[int]) -> str:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return f"{q[1]:g} [{q[0]:g}-{q[2]:g}]"


def cmd_report(args) -> None:
    after = json.loads(Path(args.json).read_text())
    before = json.loads(Path(args.before).read_text()) if args.before else None
    lines = []
    for view in after["summary"]:
        s = after["summary"][view]
        lines += [f"\n#### View: {view} ({after['seeds']} seeds, budget {after['budget']})\n"]
        head = "| kernel | best | hidden | default 99% |"
        if before:
            head += " prior before | p before (Holm) |"
        head += " prior after | p after (Holm) | prior worse / better seeds |"
        lines += [head, "|" + "---|" * (head.count("|") - 1)]
        for name, r in sorted(after["rows"].items(), key=lambda kv: -kv[1]["best"]):
            v = r["views"][view]
            moved = [statistics.median(v["runs"]["prior"]) != statistics.median(v["runs"]["default"])]
            if before:
                bv = before["rows"][name]["views"][view]
                moved.append(statistics.median(bv["runs"]["prior"]) != statistics.median(bv["runs"]["default"]))
            if r["best"] < GAINFUL and not any(moved) and not args.all:
                continue  # nothing to gain and no difference: build 1 (the baseline) or the same either way
            pr, de = v["runs"]["prior"], v["runs"]["default"]
            cells = [name, f"{r['best']:.3f}x", ", ".join(v["hidden"]) or "-", _q(de)]
            if before:
                bv = before["rows"][name]["views"][view]
                cells += [_q(bv["runs"]["prior"]), f"{before['summary'][view]['p_holm'][name]:.2g}"]
            worse = sum(p > d for p, d in zip(pr, de, strict=True))
            better = sum(p < d for p, d in zip(pr, de, strict=True))
            cells += [_q(pr), f"{s['p_holm'][name]:.2g}", f"{worse} / {better}"]
            lines.append("| " + " | ".join(cells) + " |")
        for label, doc in (("before", before), ("after", after)):
            if doc is None:
                continue
            t = doc["summary"][view]
            lines.append(f"\n{label}: median over the {t['kernels']} kernels of the per-kernel median builds to 99%: prior "
                         f"{t['median_all']['prior']:g}, default {t['median_all']['default']:g}; over the {t['gainful']} "
                         f"with >= 2% to gain: prior {t['median_gainful']['prior']:g} (mean {t['mean_gainful']['prior']:.1f}), "
                         f"default {t['median_gainful']['default']:g} (mean {t['mean_gainful']['default']:.1f}); "
                         f"significantly worse (Holm p < {t['alpha']}): {', '.join(t['worse']) or 'none'}"
                         + (f"; zero-shot share {t['zero_shot']:.2f}" if t.get("zero_shot") is not None else ""))
    text = "\n".join(lines) + "\n"
    if args.md:
        Path(args.md).write_text(text)
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", type=int, default=30)
    r.add_argument("--kernels", default="")
    r.add_argument("--views", default=",".join(VIEWS))
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--prior", default=str(SHIPPED))
    r.add_argument("--hyper", default="", help="recorded leave-one-kernel-out hyper-parameters (kernel -> family -> hyper)")
    r.add_argument("--save-hyper", default="")
    r.add_argument("--mark-first", default="", help="dimensions measured first in both searches, as a compile line "
                   "marks them (march_native: a host target naming no instruction set)")
    r.add_argument("--label", default="")
    r.add_argument("--json", required=True)
    p = sub.add_parser("report")
    p.add_argument("--json", required=True)
    p.add_argument("--before", default="")
    p.add_argument("--md", default="")
    p.add_argument("--all", action="store_true", help="the kernels with less than 2% to gain too")
    args = ap.parse_args()
    {"run": cmd_run, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
