"""Side by side, the analysis (from the committed raw data alone): per kernel and seed, CompileIQ's engine with
its defaults (every asked file is a build: compiled, run, told) against our source as the tune uses it (its
first generation screened: ptxas failures and code equal to the project's own or to an earlier file are not
measured, the files that cut spill bytes first by flags.screening.spills_first; its later generations joined
in the engine's order, every file a trial), and the random order over the landscape's 160 files measured in
generation 0's call. A file's speed-up: none's median time over its median time in the same call.

    python benchmarks/acf/side_by_side_analyze.py [RAW] [--json OUT]
Prints per kernel: CompileIQ's best after all its builds and after half of them, ours after half of them,
and the builds ours and random need to reach CompileIQ's best (within 1% of its gain); median [IQR] over seeds;
and how often a wide sample (the landscape's files) in our order would have reached it within half its builds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import types
from pathlib import Path

from compileiq_cmake.flags.acf import ACF_DIMENSION, PTXAS_ACF
from compileiq_cmake.flags.screen_engine import KernelDelta, ScreenRow
from compileiq_cmake.flags.screening import spills_first
from compileiq_cmake.flags.space import Dimension, FlagSpace

RAW = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "raw" / "acf-2"
NEVER = 10**6


def load(raw: Path) -> list[dict]:
    gens = []
    g = 0
    while (raw / f"gen{g}" / "times.json").exists():
        d = raw / f"gen{g}"
        builds = json.loads((d / "builds.json").read_text())
        gens.append({"asked": json.loads((d / "asked.json").read_text()),
                     "times": json.loads((d / "times.json").read_text()),
                     "builds": {(b["kernel"], b["acf"]): b for b in builds}})
        g += 1
    return gens


def speedup(gen: dict, k: str, sha: str) -> float:
    t = gen["times"][k].get(sha)
    return gen["times"][k]["none"] / t if t else 0.0


def curve(xs: list[float]) -> list[float]:
    out, best = [], 1.0  # "none" (the project's own build) is always there
    for x in xs:
        best = max(best, x)
        out.append(best)
    return out


def screened_order(gen: dict, k: str, shas: list[str]) -> list[str]:
    """The files a tune measures of `shas`, in its order: the screening's ptxas compile drops failures and code
    equal to none's or an earlier file's (not measured), then flags.screening.spills_first puts the files that
    cut spill bytes first."""
    none = gen["builds"][(k, "none")]
    seen = {none.get("sass")}
    kept = []
    for s in shas:
        b = gen["builds"][(k, s)]
        if b["status"] != 0 or b.get("sass") in seen:
            continue
        seen.add(b.get("sass"))
        kept.append(s)
    token = {s: f"{PTXAS_ACF}/acf/{s}.acf" for s in kept}
    dim = Dimension(name=ACF_DIMENSION, help="", values=((),) + tuple((token[s],) for s in kept))

    def spills(b: dict) -> int:
        return int(b.get("spill_st") or 0) + int(b.get("spill_ld") or 0)

    rows = tuple(ScreenRow(ACF_DIMENSION, (token[s],), True, "changes the code", (KernelDelta(
        f"k:{k}", (int(none.get("regs") or 0), int(gen["builds"][(k, s)].get("regs") or 0)),
        (spills(none), spills(gen["builds"][(k, s)])),
        (int(none.get("ninstr") or 0), int(gen["builds"][(k, s)].get("ninstr") or 0))),)) for s in kept)
    ordered, _ = spills_first(FlagSpace("nvcc", (dim,)), types.SimpleNamespace(rows=rows))
    back = {v: s for s, v in token.items()}
    return [back[v[0]] for v in ordered.dimensions[0].values[1:]]


def ours_sequence(gens: list[dict], k: str, seed: str) -> list[float]:
    """The speed-ups of our measured trials in the tune's order (its first generation screened, the engine's
    later ones joined as they come)."""
    seq: list[float] = []
    for g, gen in enumerate(gens):
        shas = gen["asked"]["ours"][k][seed]
        seq += [speedup(gen, k, s) for s in (screened_order(gen, k, shas) if g == 0 else shas)]
    return seq


def reach(seq: list[float], target: float) -> int:
    return next((n + 1 for n, x in enumerate(seq) if x >= target), NEVER)


def q(xs: list[float], fmt: str = "{:.3f}") -> str:
    """Median [quartiles] by nearest rank (a value of the data: "never" stays "never")."""
    ys = sorted(xs)

    def at(p: float) -> str:
        v = ys[min(len(ys) - 1, max(0, round(p * (len(ys) - 1))))]
        return "never" if v >= NEVER else fmt.format(v)

    return f"{at(0.5)} [{at(0.25)}..{at(0.75)}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="?", type=Path, default=RAW)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--reach", choices=("gain", "speed"), default="gain",
                    help="gain: within 1%% of CompileIQ's best gain (the default, stricter); speed: at least 99%% of its "
                    "best speed-up (the issue's 'builds to 99%% of the best')")
    args = ap.parse_args()
    gens = load(args.raw)
    first = gens[0]
    out = {}
    what = "within 1% of its gain" if args.reach == "gain" else "at least 99% of its speed-up"
    print(f"{len(gens)} generations; builds to CompileIQ's best = {what}; median [IQR] over seeds")
    for k in first["asked"]["ciq"]:
        seeds = sorted(first["asked"]["ciq"][k], key=int)
        landscape = [s for (kk, s) in first["builds"] if kk == k and s != "none"
                     and s not in {x for m in first["asked"].values() for y in m[k].values() for x in y}]
        rows = []
        for seed in seeds:
            theirs = [speedup(gen, k, s) for gen in gens for s in gen["asked"]["ciq"][k][seed]]
            ours = ours_sequence(gens, k, seed)
            best = max([1.0, *theirs])
            target = 1 + 0.99 * (best - 1) if args.reach == "gain" else 0.99 * best
            rnd = [speedup(first, k, s) for s in _shuffled(landscape, int(seed))]
            wide = wide_sample_order(first, k, landscape, int(seed), len(ours))
            product = product_order(gens, k, landscape, seed)
            half = len(theirs) // 2
            rows.append({"seed": int(seed), "ciq_builds": len(theirs), "ciq_best": best,
                         "ciq_best_half": curve(theirs)[half - 1], "ours_builds": len(ours),
                         "ours_best": max([1.0, *ours]), "ours_best_half": curve(ours)[min(half, len(ours)) - 1],
                         "ours_to_ciq_best": reach(ours, target), "random_to_ciq_best": reach(rnd, target),
                         "ciq_to_own_best": reach(theirs, target), "wide_to_ciq_best": reach(wide, target),
                         "product_to_ciq_best": reach(product, target)})
        out[k] = rows
        half = rows[0]["ciq_builds"] // 2
        won = sum(r["ours_to_ciq_best"] <= half for r in rows)
        print(f"{k:<10} CompileIQ {rows[0]['ciq_builds']} builds {q([r['ciq_best'] for r in rows])}, at {half} "
              f"{q([r['ciq_best_half'] for r in rows])} | ours at {half} {q([r['ours_best_half'] for r in rows])} | "
              f"builds to CompileIQ's best: ours {q([r['ours_to_ciq_best'] for r in rows], '{:g}')} "
              f"(<= {half} in {won}/{len(rows)} seeds), random {q([r['random_to_ciq_best'] for r in rows], '{:g}')}, "
              f"CompileIQ {q([r['ciq_to_own_best'] for r in rows], '{:g}')} | a wide sample of {rows[0]['ours_builds']} "
              f"in our order: <= {half} in {sum(r['wide_to_ciq_best'] <= half for r in rows)}/{len(rows)} seeds | "
              f"the tune's order (16 wide, then the engine's): {q([r['product_to_ciq_best'] for r in rows], '{:g}')}, "
              f"<= {half} in {sum(r['product_to_ciq_best'] <= half for r in rows)}/{len(rows)} seeds")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


def wide_sample_order(first: dict, k: str, landscape: list[str], seed: int, n: int) -> list[float]:
    """What ours would measure if its candidates were n wide samples of the space (`Search.sample`, the
    landscape's files) instead of the engine's generations: a seeded subset, screened and ordered as ours."""
    sub = random.Random(seed).sample(sorted(landscape), min(n, len(landscape)))
    return [speedup(first, k, s) for s in screened_order(first, k, sub)]


def product_order(gens: list[dict], k: str, landscape: list[str], seed: str, wide: int = 16) -> list[float]:
    """The tune's order today (flags/acf_compileiq.py, tune/acf_engine.py): `wide` wide samples (--acf-candidates,
    16), screened and ordered as ours, then the engine's generations as asked, every file a build (its first
    generation is drawn before anything is told: the side by side's generation 0 of ours stands for it)."""
    first = wide_sample_order(gens[0], k, landscape, int(seed), wide)
    return first + [speedup(gen, k, s) for gen in gens for s in gen["asked"]["ours"][k][seed]]


def _shuffled(xs: list[str], seed: int) -> list[str]:
    ys = sorted(xs)
    random.Random(seed).shuffle(ys)
    return ys


if __name__ == "__main__":
    main()
