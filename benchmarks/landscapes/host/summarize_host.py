#!/usr/bin/env python3
"""Markdown tables of the host landscapes (README.md next to this file): per kernel the default time, the
noise, the best valid point, the single-value effects of every gcc flag value and the invalid points, each
read through the repository's loader (Landscape.load) and, for the effects, the way
benchmarks/evaluation/prior_train.py reads them (single_effects: the point with one dimension changed).

Usage: python summarize_host.py [DIR] [--cpu]   (DIR: default this folder; --cpu: effects from the cpu_us
       samples kept in each code instead of time_us)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from compileiq_cmake.search.landscape import Landscape  # noqa: E402


def med(xs) -> float:
    return float(statistics.median(xs))


def mad_rel(xs) -> float | None:
    if len(xs) < 2:
        return None
    m = med(xs)
    return med([abs(x - m) for x in xs]) / m


def samples(code: dict, cpu: bool) -> list[float]:
    return code.get("cpu_us", []) if cpu else code.get("time_us", [])


def single_values(land: Landscape) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    nd = len(land.dimensions)
    for d, dim in enumerate(land.dimensions):
        for i in range(1, len(dim.values)):
            choice = [0] * nd
            choice[d] = i
            out.append((" ".join(dim.values[i]), tuple(choice)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=str(HERE))
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()
    paths = sorted(p for p in Path(args.dir).glob("*.json"))
    rows, effects, invalid = [], [], []
    header_values: list[str] = []
    for path in paths:
        doc = json.loads(path.read_text())
        if doc.get("family") != "gcc":
            continue
        land = Landscape.load(path)
        codes = doc["codes"]
        dflt = codes[doc["default_code"]]
        d_us = med(samples(dflt, args.cpu))

        def speed(code_id: int, codes: list = codes, d_us: float = d_us) -> float:
            return d_us / med(samples(codes[code_id], args.cpu))

        pts = [(p, p.code.id) for p in land.points()]
        valid = [(p, k) for p, k in pts if p.valid]
        if args.cpu:
            best_p, best_k = max(valid, key=lambda pk: (speed(pk[1]), -len(pk[0].flags)))
        else:  # the loader's own choice
            best_p = land.best_valid()
            best_k = best_p.code.id
        mad = mad_rel(samples(dflt, args.cpu))
        noise = doc["meta"]["noise_cpu" if args.cpu else "noise"]["rel_sd"]
        n_codes = sum(1 for c in codes if c.get("digest"))
        n_inv = sum(1 for p, _ in pts if not p.valid)
        rows.append(f"| `{land.kernel}` | {doc['meta']['kind']} | {len(land)} | {n_codes} | {d_us / 1000:.1f} | "
                    f"{100 * mad:.1f}% | {100 * noise:.1f}% | `{' '.join(best_p.flags) or '(default)'}` | "
                    f"{speed(best_k):.2f}x | {n_inv} |")
        cells = []
        header_values = []
        for label, choice in single_values(land):
            header_values.append(label)
            p = land.point(choice)
            if p is None:
                cells.append("-")
            elif not p.valid:
                cells.append("**inv**")
            elif p.digest == land.default.digest:
                cells.append("=")
            else:
                cells.append(f"{speed(p.code.id):.2f}")
        effects.append(f"| `{land.kernel}` | " + " | ".join(cells) + " |")
        reasons: dict[str, int] = {}
        for p, _ in pts:
            if not p.valid:
                why = (p.code.message or p.status).split(": relative")[0]
                key = f"{p.status}: {why}" if p.status != "wrong_result" else (
                    f"wrong_result (relative error {p.code.error:.3g})")
                reasons[key] = reasons.get(key, 0) + 1
        for why, n in reasons.items():
            invalid.append(f"| `{land.kernel}` | {n} | {why} |")
    what = "process CPU time (cpu_us)" if args.cpu else "wall time_ms (time_us)"
    print(f"Samples: {what}.\n")
    print("| kernel | kind | points | codes | default ms | default MAD | noise rel_sd | best valid point | best | "
          "invalid points |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nSingle-value effects (speed-up over the default, medians over the rounds; `=`: the default's code, "
          "**inv**: invalid):\n")
    print("| kernel | " + " | ".join(f"`{v}`" for v in header_values) + " |")
    print("|---|" + "---|" * len(header_values))
    print("\n".join(effects))
    print("\nInvalid points:\n")
    print("| kernel | points | why |\n|---|---|---|")
    print("\n".join(invalid) if invalid else "| (none) | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
