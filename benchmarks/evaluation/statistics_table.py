"""Pools benchmarks/evaluation/statistics_sim.py's JSON files over seeds into the tables of docs/benchmarks/statistics.md
(issue 36): per noise model the A/A false acceptances (pooled, with the rate of each seed and the one-sided 95%
Clopper-Pearson bound), the power at each true gain, and the written interval's coverage and the written
speed-up's bias over the tunes that wrote the truly faster flag.

Usage: python3 benchmarks/evaluation/statistics_table.py FILE.json [FILE.json ...]
A later file's rows replace an earlier one's for the same model and seed (a re-run of some models).
       python3 benchmarks/evaluation/statistics_table.py --compare BEFORE.json AFTER.json
one run's rows before and after a change (same seeds and counts): per model the A/A false acceptances, and per
true gain the tunes that wrote the faster flag, the written interval's coverage of the truth among them and the
written intervals whose low end is at most 1 (issue 51)."""

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


def _rate(k: int, n: int, digits: int = 1) -> str:
    return f"{100 * k / n:.{digits}f}% ({k}/{n})" if n else "-"


def compare(before: dict, after: dict) -> str:
    """Two tables, before -> after row by row: A/A (with the after's 95% bound) and the power at each gain; the
    written interval's coverage at each gain and the written intervals whose low end is at most 1."""
    gains = sorted({k for row in after["models"].values() for k in row if k.startswith("gain_")},
                   key=lambda k: float(k[5:]))
    head = [f"true {100 * float(g[5:]):g}%" for g in gains]
    power = ["| noise model | A/A before -> after (95% bound after) | "
             + " | ".join(f"{h} written, before -> after" for h in head) + " |", "|" + "---|" * (2 + len(gains))]
    cover = ["| noise model | " + " | ".join(f"coverage at {h}, before -> after" for h in head)
             + " | written low end <= 1, before -> after |", "|" + "---|" * (2 + len(gains))]
    for model, row in after["models"].items():
        old = before["models"].get(model)
        if old is None:
            continue
        aa, ab = row["aa"], old["aa"]
        pcells = [model, f"{_rate(ab['false'], ab['tunes'], 2)} -> {_rate(aa['false'], aa['tunes'], 2)} "
                         f"({100 * upper95(aa['false'], aa['tunes']):.2f}%)"]
        ccells = [model]
        for g in gains:
            a, b = row[g], old[g]
            pcells.append(f"{_rate(b['accepted'], b['tunes'])} -> {_rate(a['accepted'], a['tunes'])}; "
                          f"runs {b['runs']:.0f} -> {a['runs']:.0f}")
            ccells.append(f"{_rate(b['covered'], b['accepted'])} -> **{_rate(a['covered'], a['accepted'])}**")
        low = [sum(r[g].get("written_low_at_most_1", 0) for g in gains) for r in (old, row)]
        ccells.append(f"{low[0]} -> {low[1]}")
        power.append("| " + " | ".join(pcells) + " |")
        cover.append("| " + " | ".join(ccells) + " |")
    return "\n".join(power) + "\n\n" + "\n".join(cover)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compare"]:
        print(compare(json.loads(open(sys.argv[2]).read()), json.loads(open(sys.argv[3]).read())))
    else:
        print(tables(pool(sys.argv[1:])))
