#!/usr/bin/env python3
"""How many unique builds (and GPU benchmark runs) each search needs on the recorded landscapes (issue 5).

Every strategy runs through the same ask/tell loop with the same cache, on the landscape's space after
static screening (values whose single change gives the baseline's device code are dropped, as `tune` does
on a real target). A run:

- starts with the baseline (build 1, GPU run 1; told to the strategy with loss 0);
- asks for flag sets until `--budget` unique builds (a build = a distinct canonical flag set; a strategy
  that proposes a known flag set is answered from the cache and nothing is counted);
- evaluates a point as the tool does: invalid (build failure, wrong result) -> INVALID_LOSS; a device code
  (digest) seen before shares that trial's measurement (no GPU run); otherwise one noisy measurement
  `median_us * exp(N(0, landscape.noise))` and loss `log(measured / measured baseline)`.

Metrics per run: the best TRUE (noise-free median) speedup among the valid points built so far, after each
build, and the number of distinct device codes benchmarked so far (GPU runs after fingerprint dedupe).
"Reached" = a built valid point's true speedup >= the target (the tune then re-measures its 3 best codes
in validation). Targets: 99% of the landscape's best valid speedup, and 90% of its best gain
(speedup >= 1 + 0.9 (best - 1)), which is the meaningful one on nearly flat landscapes.

Usage:
  .venv/bin/python benchmarks/evaluation/search_efficiency.py run [--landscapes nbody,stencil,sgemm,blackscholes,spmv_csr,sample_small]
        [--strategies default,random,...] [--seeds 30] [--budget 100] [--out benchmarks/results/search.json]
  /tmp/bench-venv/bin/python benchmarks/evaluation/search_efficiency.py run --strategies ciq-ga,kt-... (same --out:
        results are merged; the external venv needs compileiq 1.1.0 / kernel_tuner 1.5.0 and numpy)
  .venv/bin/python benchmarks/evaluation/search_efficiency.py report [--out ...] [--md docs/benchmarks/search-table.md]
        [--plot docs/benchmarks/search.png]
  .venv/bin/python benchmarks/evaluation/search_efficiency.py warmstart [--seeds 30]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/evaluation
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from compileiq_cmake.flags.space import FlagSpace  # noqa: E402
from compileiq_cmake.search.landscape import Landscape  # noqa: E402

INVALID_LOSS = 10.0
LANDSCAPES = ("nbody", "stencil", "sgemm", "blackscholes", "spmv_csr", "rk4_oscillators", "softmax_rows",
              "layernorm_gelu", "conv2d_5x5",
              "sample_small")
BUDGETS = (10, 25, 50, 100)
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "search.json"


# ---------------------------------------------------------------------------------------------- landscapes
def screened_space(land: Landscape) -> FlagSpace:
    """The landscape's space after static screening: values whose single change keeps the default's code
    are dropped (a dimension left with only its default is dropped)."""
    base = land.default.digest
    dims = []
    for d, dim in enumerate(land.dimensions):
        kept = [dim.values[0]]
        for i in range(1, len(dim.values)):
            choice = [0] * len(land.dimensions)
            choice[d] = i
            p = land.point(tuple(choice))
            if p is None or p.digest != base:
                kept.append(dim.values[i])
        if len(kept) > 1:
            dims.append(replace(dim, values=tuple(kept)))
    return FlagSpace(family=land.family, dimensions=tuple(dims))


def load(name: str) -> Landscape:
    return Landscape.load(ROOT / "benchmarks" / "landscapes" / f"{name}.json")


def targets(land: Landscape) -> dict[str, float]:
    best = land.best_valid().speedup
    return {"p99": 0.99 * best, "gain90": 1 + 0.9 * (best - 1)}


class Evaluator:
    """One run's view of a landscape: noisy measurement per device code, shared by points of that code."""

    def __init__(self, land: Landscape, seed: int):
        self.land = land
        self.rng = random.Random(10_000 + seed)
        self.measured: dict[str, float] = {}  # digest -> measured time
        base = land.default
        self.base_time = self._measure(base)

    def _measure(self, p) -> float:
        if p.digest not in self.measured:
            self.measured[p.digest] = p.code.median_us * math.exp(self.rng.gauss(0.0, self.land.noise))
        return self.measured[p.digest]

    def evaluate(self, flags) -> tuple[float, float, bool]:
        """(loss, true speedup or 0 when invalid, whether a GPU run happened)."""
        p = self.land.lookup(flags)
        if p is None:
            return INVALID_LOSS, 0.0, False
        ran = p.digest is not None and p.digest not in self.measured and p.status != "build_failed"
        if not p.valid:
            if ran:
                self.measured[p.digest] = float("nan")
            return INVALID_LOSS, 0.0, ran
        t = self._measure(p)
        return math.log(t / self.base_time), p.speedup, ran


def simulate(land: Landscape, space: FlagSpace, strategy, seed: int, budget: int) -> dict:
    """Drive an ask/tell strategy for `budget` unique builds. Returns per-build trajectories."""
    ev = Evaluator(land, seed)
    base = space.baseline()
    strategy.tell(base, 0.0)
    seen = {base.key}
    best_true = [1.0]  # after build 1 (the baseline)
    gpu_runs = [1]
    stalls = 0
    while len(seen) < budget:
        fs = strategy.ask()
        if fs is None:
            break
        if fs.key in seen:  # a strategy without its own cache: answered from ours, not counted
            stalls += 1
            if stalls > 10_000:
                break
            continue
        seen.add(fs.key)
        loss, true, ran = ev.evaluate(fs.flags)
        strategy.tell(fs, loss)
        best_true.append(max(best_true[-1], true))
        gpu_runs.append(gpu_runs[-1] + int(ran))
    return {"best": best_true, "gpu": gpu_runs}


# ---------------------------------------------------------------------------------------------- strategies
class RandomSearch:
    """Uniform over the unseen unique builds of the space (seeded)."""

    def __init__(self, space: FlagSpace, budget: int, seed: int):
        import itertools
        by_key = {}
        for combo in itertools.product(*(range(len(d.values)) for d in space.dimensions)):
            fs = space.flagset({d.name: i for d, i in zip(space.dimensions, combo)})
            by_key.setdefault(fs.key, fs)
        self.order = sorted(by_key)
        random.Random(seed).shuffle(self.order)
        self.by_key = by_key
        self.told: set[str] = set()

    def tell(self, fs, loss):
        self.told.add(fs.key)

    def ask(self):
        while self.order:
            key = self.order.pop()
            if key not in self.told:
                return self.by_key[key]
        return None


def make_strategy(name: str, space: FlagSpace, budget: int, seed: int, warm=()):
    from compileiq_cmake.search import search as S
    if name == "default":
        return S.FlagSearch(space, budget, seed, 1, warm_start=warm)
    if name.startswith("default:"):  # variants: default:singles_share=0.6;explore_every=4
        kw = {k: float(v) if "." in v else int(v) for k, v in (p.split("=") for p in name[8:].split(";") if p)}
        return S.FlagSearch(space, budget, seed, 1, warm_start=warm, **kw)
    if name == "ng-portfolio-v0":
        return S.NevergradSearch(space, budget, seed, 1, optimizer=S.PORTFOLIO)
    if name.startswith("ng-"):
        return S.NevergradSearch(space, budget, seed, 1, optimizer=name[3:])
    if name == "random":
        return RandomSearch(space, budget, seed)
    raise KeyError(name)


def run_internal(name: str, land: Landscape, space: FlagSpace, seeds: int, budget: int) -> list[dict]:
    return [simulate(land, space, make_strategy(name, space, budget, s), s, budget) for s in range(seeds)]


# ---- CompileIQ's genetic algorithm (PyPI compileiq 1.1.0, native "amber" engine), driven by its own
# ask/tell API with the MANUAL worker (no processes, no Ray): batches of pool_size candidates.
class CompileIQGA:
    def __init__(self, space: FlagSpace, budget: int, seed: int):
        from compileiq.backends import EngineConfig
        from compileiq.ciq import Search
        from compileiq.search_spaces.base import choice
        from compileiq.types import SearchConfiguration, WorkerTypes
        self.space = space
        self.cache = tempfile.mkdtemp(prefix="ciq-")
        self.search = Search(
            objective_function=lambda p: 0.0,
            search_space={d.name: choice(list(range(len(d.values)))) for d in space.dimensions},
            search_config=SearchConfiguration(generations=10_000),
            worker_type=WorkerTypes.MANUAL, engine=EngineConfig(name="amber", options={"seed": seed}),
            disable_progress_bar=True, cache_folder=Path(self.cache), exit_on_failure=False)
        self.batch: list = []
        self.scores: list = []
        self.losses: dict[str, float] = {}
        self.waiting = None
        self.done = False

    def _flush(self):
        from compileiq.utils.validation import Score
        if self.scores:
            self.search.tell(self.scores)
            self.scores = []

    def tell(self, fs, loss):
        self.losses[fs.key] = loss
        if self.waiting is not None and self.waiting[1].key == fs.key:
            self._score(self.waiting[0], loss)
            self.waiting = None

    def _score(self, cand, loss):
        from compileiq.utils.validation import Score
        self.scores.append(Score(score=float(loss), param_id=cand.param_id, num_objectives=1))

    def ask(self):
        while True:
            if not self.batch:
                self._flush()
                if self.done:
                    return None
                try:
                    self.batch = list(self.search.ask())
                except Exception:  # exhausted / complete
                    self.done = True
                    return None
            cand = self.batch.pop(0)
            fs = self.space.flagset({k: int(v) for k, v in cand.params.items()})
            if fs.key in self.losses:  # a duplicate: answered from the cache, not a build
                self._score(cand, self.losses[fs.key])
                continue
            self.waiting = (cand, fs)
            return fs


# ---- Kernel Tuner strategies in simulation mode: the landscape (with this seed's noisy measurement per
# device code) written as a Kernel Tuner cache file; the strategy's evaluation order is read back.
def run_kernel_tuner(strategy: str, land: Landscape, space: FlagSpace, seeds: int, budget: int) -> list[dict]:
    import itertools

    import numpy as np
    from kernel_tuner import tune_kernel
    names = [d.name for d in space.dimensions]
    tune_params = {d.name: list(range(len(d.values))) for d in space.dimensions}
    out = []
    for seed in range(seeds):
        ev = Evaluator(land, seed)
        cache = {}
        for combo in itertools.product(*tune_params.values()):
            fs = space.flagset(dict(zip(names, combo)))
            p = land.lookup(fs.flags)
            entry = dict(zip(names, combo))
            if p is None or not p.valid:
                entry["time"] = "CompilationFailedConfig" if p is None or p.status == "build_failed" \
                    else "RuntimeFailedConfig"
            else:
                entry["time"] = ev._measure(p) / 1000.0  # ms
            entry.update(compile_time=0.0, verification_time=0.0, benchmark_time=0.0, strategy_time=0.0,
                         framework_time=0.0, timestamp="")
            cache[",".join(map(str, combo))] = entry
        doc = {"device_name": "H200-replay", "kernel_name": land.kernel, "problem_size": [1],
               "tune_params_keys": names, "tune_params": tune_params, "objective": "time", "cache": cache}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(doc, fh)
            path = fh.name
        random.seed(seed)
        np.random.seed(seed)
        try:
            results, _ = tune_kernel(land.kernel, "", (1,), [], tune_params, strategy=strategy,
                                     strategy_options={"max_fevals": budget * 4}, simulation_mode=True,
                                     cache=path, quiet=True, verbose=False)
        finally:
            os.unlink(path)
        # replay the evaluation order through our accounting (canonical flags, digest dedupe)
        ev2 = Evaluator(land, seed)
        base = space.baseline()
        seen = {base.key}
        best, gpu = [1.0], [1]
        for r in results:
            fs = space.flagset({n: int(r[n]) for n in names})
            if fs.key in seen:
                continue
            seen.add(fs.key)
            _, true, ran = ev2.evaluate(fs.flags)
            best.append(max(best[-1], true))
            gpu.append(gpu[-1] + int(ran))
            if len(seen) >= budget:
                break
        out.append({"best": best, "gpu": gpu})
    return out


def run_strategy(name: str, land: Landscape, space: FlagSpace, seeds: int, budget: int) -> list[dict]:
    if name == "ciq-ga":
        return [simulate(land, space, CompileIQGA(space, budget, s), s, budget) for s in range(seeds)]
    if name.startswith("kt-"):
        return run_kernel_tuner(name[3:], land, space, seeds, budget)
    return run_internal(name, land, space, seeds, budget)


# ---------------------------------------------------------------------------------------------- metrics
def builds_to(run: dict, target: float) -> tuple[int | None, int | None]:
    for i, b in enumerate(run["best"]):
        if b >= target - 1e-12:
            return i + 1, run["gpu"][i]
    return None, None


def quartiles(values: list[int | None], cap: int) -> tuple[float, float, float, int]:
    """Median and IQR with unreached runs counted as cap+1 (shown as '>cap'), and the number reached."""
    v = sorted(cap + 1 if x is None else x for x in values)
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
    return q[1], q[0], q[2], sum(x is not None for x in values)


def summarize(runs: list[dict], land: Landscape, budget: int) -> dict:
    t = targets(land)
    out = {}
    for tname, target in t.items():
        b = [builds_to(r, target) for r in runs]
        out[tname] = {"builds": quartiles([x[0] for x in b], budget), "gpu": quartiles([x[1] for x in b], budget)}
    best = land.best_valid().speedup
    out["at"] = {str(k): statistics.median(r["best"][min(k, len(r["best"])) - 1] for r in runs) for k in BUDGETS}
    out["best"] = best
    return out


# ---------------------------------------------------------------------------------------------- commands
def cmd_run(args) -> None:
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.exists() else {"runs": {}, "meta": {}}
    for lname in args.landscapes.split(","):
        land = load(lname)
        space = screened_space(land)
        for sname in args.strategies.split(","):
            t0 = time.time()
            try:
                runs = run_strategy(sname, land, space, args.seeds, args.budget)
            except ImportError as exc:
                print(f"{lname:12s} {sname:24s} unavailable: {exc}", flush=True)
                continue
            data["runs"].setdefault(lname, {})[sname] = runs
            s = summarize(runs, land, args.budget)
            print(f"{lname:12s} {sname:32s} p99 {fmt_q(s['p99']['builds'], args.budget):>16s} gpu "
                  f"{fmt_q(s['p99']['gpu'], args.budget):>16s} | gain90 {fmt_q(s['gain90']['builds'], args.budget):>16s}"
                  f" gpu {fmt_q(s['gain90']['gpu'], args.budget):>16s} | at {' '.join(f'{v:.3f}' for v in s['at'].values())}"
                  f"  ({time.time() - t0:.0f}s)", flush=True)
    data["meta"] = {"seeds": args.seeds, "budget": args.budget, "date": time.strftime("%Y-%m-%d"),
                    "screened": True}
    if not args.no_save:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data))


def fmt_q(q, cap) -> str:
    med, lo, hi, n = q
    f = lambda x: f">{cap}" if x > cap else f"{x:g}"  # noqa: E731
    return f"{f(med)} [{f(lo)}-{f(hi)}]"


def cmd_report(args) -> None:
    data = {"runs": {}, "meta": {}}
    for part in args.out.split(","):  # several result files (e.g. the external venv's) are merged
        d = json.loads(Path(part).read_text())
        data["meta"] = data["meta"] or d["meta"]
        for lname, by in d["runs"].items():
            data["runs"].setdefault(lname, {}).update(by)
    order = [n for n in LANDSCAPES if n in data["runs"]]
    rank = lambda kv: (kv[0] != "default", not kv[0].startswith("default"))  # noqa: E731  default, variants, others
    data["runs"] = {n: dict(sorted(data["runs"][n].items(), key=rank)) for n in order}
    budget = data["meta"]["budget"]
    lines = []
    for lname, by in data["runs"].items():
        land = load(lname)
        best = land.best_valid().speedup
        t = targets(land)
        lines.append(f"\n**{lname}** (best valid {best:.3f}x; 99% target {t['p99']:.4f}x, 90%-gain target "
                     f"{t['gain90']:.4f}x; {screened_space(land).size} points after screening)\n")
        lines.append("| strategy | builds to 99% | GPU runs to 99% | builds to 90% gain | GPU runs to 90% gain | "
                     + " | ".join(f"best@{k}" for k in BUDGETS) + " |")
        lines.append("|---" * (5 + len(BUDGETS)) + "|")
        for sname, runs in by.items():
            s = summarize(runs, land, budget)
            lines.append(f"| {sname} | {fmt_q(s['p99']['builds'], budget)} | {fmt_q(s['p99']['gpu'], budget)} | "
                         f"{fmt_q(s['gain90']['builds'], budget)} | {fmt_q(s['gain90']['gpu'], budget)} | "
                         + " | ".join(f"{v:.4f}" for v in s["at"].values()) + " |")
    text = "\n".join(lines) + "\n"
    if args.md:
        Path(args.md).write_text(text)
    print(text)
    if args.plot:
        plot(data, Path(args.plot))


def plot(data: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(data["runs"])
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.8))
    for ax, lname in zip(axes, names):
        land = load(lname)
        best = land.best_valid().speedup
        t = targets(land)["gain90"] if best < 1.05 else targets(land)["p99"]
        for sname, runs in data["runs"][lname].items():
            n = max(len(r["best"]) for r in runs)
            frac = [sum(r["best"][min(i, len(r["best"]) - 1)] >= t - 1e-12 for r in runs) / len(runs)
                    for i in range(n)]
            ax.plot(range(1, n + 1), frac, label=sname, lw=2.2 if sname == "default" else 1.1)
        ax.set_title(f"{lname}: {'90% of best gain' if best < 1.05 else '99% of best'}", fontsize=9)
        ax.set_xlabel("unique builds (baseline = 1)")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of 30 seeds that reached the target")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def cmd_warmstart(args) -> None:
    """Leave-one-landscape-out: seed the default with the best valid flag sets of the OTHER landscapes
    (their top `--top` distinct codes, fewest flags first), mapped by flags onto the target space."""
    names = args.landscapes.split(",")
    lands = {n: load(n) for n in names}
    for target in names:
        land = lands[target]
        space = screened_space(land)
        warm = []
        for other in names:
            if other == target:
                continue
            pts = sorted((p for p in lands[other].points() if p.valid),
                         key=lambda p: (-p.speedup, len(p.flags)))
            codes = set()
            for p in pts:
                if p.digest in codes:
                    continue
                codes.add(p.digest)
                warm.append(replace(space.baseline(), flags=p.flags))
                if len(codes) == args.top:
                    break
        row = [target]
        for label, w in (("cold", ()), ("warm", tuple(warm))):
            from compileiq_cmake.search.search import FlagSearch
            runs = [simulate(land, space, FlagSearch(space, args.budget, s, 1, warm_start=w), s, args.budget)
                    for s in range(args.seeds)]
            s = summarize(runs, land, args.budget)
            row.append(f"{label}: p99 {fmt_q(s['p99']['builds'], args.budget)} gain90 "
                       f"{fmt_q(s['gain90']['builds'], args.budget)}")
        print(" | ".join(row), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--landscapes", default=",".join(LANDSCAPES))
    r.add_argument("--strategies", default="default,random,ng-DiscreteOnePlusOne,ng-NGOpt,ng-portfolio-v0")
    r.add_argument("--seeds", type=int, default=30)
    r.add_argument("--budget", type=int, default=100)
    r.add_argument("--out", default=str(DEFAULT_OUT))
    r.add_argument("--no-save", action="store_true")
    p = sub.add_parser("report")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--md")
    p.add_argument("--plot")
    w = sub.add_parser("warmstart")
    w.add_argument("--landscapes", default="nbody,stencil,sgemm")
    w.add_argument("--seeds", type=int, default=30)
    w.add_argument("--budget", type=int, default=100)
    w.add_argument("--top", type=int, default=3)
    args = ap.parse_args()
    {"run": cmd_run, "report": cmd_report, "warmstart": cmd_warmstart}[args.cmd](args)


if __name__ == "__main__":
    main()
