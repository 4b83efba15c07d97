"""Pools benchmarks/evaluation/statistics_sim.py's JSON files over seeds into the tables of docs/benchmarks/statistics.md
(issue 36): per noise model the A/A false acceptances (pooled, with the rate of each seed and the one-sided 95%
Clopper-Pearson bound), the power at each true gain, and the written interval's coverage and the written
speed-up's bias over the tunes that wrote the truly faster flag.

Usage: python3 benchmarks/evaluation/statistics_table.py FILE.json [FILE.json ...]
A later file's rows replace an earlier one's for the same model and seed (a re-run of some models)."""

from __future__ import annotations

import json
import sys

from statistics_sim import upper95


def pool(paths: list[str]) -> dict:
    rows: dict[str, dict[int, dict]] = {}
    for path in paths:
        doc = json.loads(open(path).read())
        if not doc.get("guard", True):
            continue
        for model, row in doc["models"].items():
            rows.setdefault(model, {})[doc.get("seed", 1)] = row
    return rows


def tables(rows: dict) -> str:
    gains = sorted({k for seeds in rows.values() for row in seeds.values() for k in row if k.startswith("gain_")},
                   key=lambda k: float(k[5:]))
    out = ["| noise model | A/A false acceptance, pooled (k/n) | per seed | 95% upper bound | "
           + " | ".join(f"power at {100 * float(g[5:]):g}%" for g in gains) + " |",
           "|" + "---|" * (4 + len(gains))]
    cov = ["| noise model | " + " | ".join(f"coverage at {100 * float(g[5:]):g}% (written) | bias" for g in gains) + " |",
           "|" + "---|" * (1 + 2 * len(gains))]
    for model, seeds in rows.items():
        k = sum(r["aa"]["false"] for r in seeds.values())
        n = sum(r["aa"]["tunes"] for r in seeds.values())
        per = ", ".join(f"{100 * r['aa']['rate']:.2f}%" for _, r in sorted(seeds.items()))
        cells = [model, f"{100 * k / n:.2f}% ({k}/{n})", per, f"{100 * upper95(k, n):.2f}%"]
        ccells = [model]
        for g in gains:
            acc = sum(r[g]["accepted"] for r in seeds.values() if g in r)
            tunes = sum(r[g]["tunes"] for r in seeds.values() if g in r)
            cells.append(f"{100 * acc / tunes:.1f}%" if tunes else "-")
            covered = sum(r[g]["covered"] for r in seeds.values() if g in r)
            bias = [(r[g]["bias"], r[g]["accepted"]) for r in seeds.values() if g in r and r[g]["accepted"]]
            if acc:
                mean_bias = sum(b * a for b, a in bias) / acc
                ccells += [f"{100 * covered / acc:.1f}% ({covered}/{acc})", f"{100 * mean_bias:+.2f} points"]
            else:
                ccells += ["- (none written)", "-"]
        out.append("| " + " | ".join(cells) + " |")
        cov.append("| " + " | ".join(ccells) + " |")
    return "\n".join(out) + "\n\n" + "\n".join(cov)


if __name__ == "__main__":
    print(tables(pool(sys.argv[1:])))
