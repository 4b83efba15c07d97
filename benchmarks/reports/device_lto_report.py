"""Issue 34's table from the raw results of benchmarks/device/h200_device_lto.sh (one folder per project under
device-lto/): the tune's validated device-LTO speedup, the fresh release builds' re-measure (plain vs the TOML
applied, interleaved, paired 95% interval over the rounds on log times), and what the apply produced (host
files without -flto, CUDA files with LTO IR of sm_90 beside every architecture's machine code, the device links
that got -dlto).

Usage: python3 benchmarks/reports/device_lto_report.py <folder holding device-lto/>
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
import tomllib
from pathlib import Path

from scipy import stats


def remeasure(path: Path) -> dict[str, tuple[float, float, float, int]]:
    """Per program: (median ratio plain/tuned, low, high, rounds) from the interleaved runs."""
    runs: dict[str, dict[str, list[float]]] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"(\S+) (plain|tuned) time_ms=([0-9.]+) PASS", line)
        if m:
            runs.setdefault(m.group(1), {"plain": [], "tuned": []})[m.group(2)].append(float(m.group(3)))
    out = {}
    for prog, r in runs.items():
        diffs = [math.log(p) - math.log(t) for p, t in zip(r["plain"], r["tuned"])]
        n = len(diffs)
        mean, sd = statistics.mean(diffs), statistics.stdev(diffs)
        half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
        out[prog] = (math.exp(mean), math.exp(mean - half), math.exp(mean + half), n)
    return out


def main(root: Path) -> None:
    print("| project (target, measured through) | tune: plain vs device LTO, validated (95% CI) | release re-measure: "
          "plain vs TOML applied (95% CI, rounds) | what the apply produced |")
    print("|---|---|---|---|")
    for proj in sorted((root / "device-lto").iterdir()):
        if not proj.is_dir():
            continue
        summary = json.loads((proj / "summary.json").read_text())
        w = summary["winner"]
        entry = tomllib.loads((proj / "compileiq.toml").read_text())["entry"][0]
        through = f", through {', '.join(entry['device_link'])}" if entry.get("device_link") else ""
        tuned = json.loads((proj / "rel-tuned-compile_commands.json").read_text())
        host = [e for e in tuned if e["file"].endswith(".cpp")]
        cuda = [e for e in tuned if e["file"].endswith(".cu")]
        host_lto = sum("-flto" in e["command"] for e in host)
        cuda_ir = sum("code=lto_90" in e["command"] for e in cuda)
        archs = sorted(set(re.findall(r"code=\[compute_(\d+),sm_\d+\]", " ".join(e["command"] for e in cuda))))
        dlinks = (proj / "rel-tuned-device-links.txt").read_text().splitlines()
        dlto = sorted({re.search(r"CMakeFiles/([^/]+)\.dir/cmake_device_link", ln).group(1)
                       for ln in dlinks if " -dlink " in ln and "-dlto" in ln and "cmake_device_link" in ln})
        plain_links = sorted({re.search(r"CMakeFiles/([^/]+)\.dir/cmake_device_link", ln).group(1)
                              for ln in dlinks if " -dlink " in ln and "-dlto" not in ln and "cmake_device_link" in ln})
        rel = remeasure(proj / "release-remeasure.txt")
        rel_text = "; ".join(f"{p} {r:.3f}x [{lo:.3f}..{hi:.3f}] ({n})" for p, (r, lo, hi, n) in rel.items())
        print(f"| {proj.name} ({summary['target']}{through}) | {w['speedup']:.3f}x [{w['ci'][0]:.3f}..{w['ci'][1]:.3f}] "
              f"(`{' '.join(w['flags'])}`) | {rel_text} | {len(host)} .cpp files, {host_lto} with -flto; {cuda_ir} of "
              f"{len(cuda)} .cu files with `code=lto_90` beside sm_{', sm_'.join(archs)}; -dlto at the device link of "
              f"{', '.join(dlto) or 'none'}{'; without: ' + ', '.join(plain_links) if plain_links else ''} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
