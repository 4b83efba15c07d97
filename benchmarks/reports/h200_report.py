"""Turn the raw results of benchmarks/device/h200_examples.sh (unpacked into a folder) into the markdown table of
docs/benchmarks/h200-examples.md.

Usage: python3 benchmarks/reports/h200_report.py docs/benchmarks/h200-raw > docs/benchmarks/h200-examples-table.md
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path


def _fmt_ci(ci) -> str:
    return f"[{ci[0]:.3f}..{ci[1]:.3f}]" if ci and ci[1] else ""


def main() -> None:
    raw = Path(sys.argv[1])
    print("| example | tuned target | workload | baseline (ms) | tuned (ms) | speedup in the tune [95% CI] "
          "| fresh release re-measure [95% CI] | inside the tune's CI | trials (valid, same code) | tune wall-clock | flags written (minimal set) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for log_path in sorted(raw.glob("*-tune.log")):
        example = log_path.name[: -len("-tune.log")]
        trials = next(iter(json.loads((raw / f"{example}-trials.json").read_text()).values()))
        valid = sum(1 for t in trials if t["status"] == "ok")
        same = sum(1 for t in trials if "same device code" in t.get("reason", ""))
        wall = re.search(r"tune_wall_seconds=([0-9.]+)", log_path.read_text()).group(1)
        toml_path = raw / f"{example}-compileiq.toml"
        if not toml_path.exists():
            print(f"| {example} | | all | | | no significant improvement: no flags written | | | {len(trials)} ({valid}, {same}) | {wall} s | |")
            continue
        entry = tomllib.loads(toml_path.read_text())["entry"][0]
        remeasure = json.loads((raw / f"{example}-remeasure.json").read_text())
        for i, w in enumerate(entry["workloads"]):
            rel = remeasure["workloads"][i]
            tune_speed = entry.get("workload_speedups", [None] * (i + 1))[i]
            tune_ci = entry.get("workload_ci", [None] * (i + 1))[i]
            inside = "yes" if tune_ci and tune_ci[0] <= rel["speedup"] <= tune_ci[1] else "no"
            print(
                f"| {example} | {entry['target']} | `{w}` | {entry['baseline'][i]:.4f} | {entry['tuned'][i]:.4f} "
                f"| {tune_speed:.3f}x {_fmt_ci(tune_ci)} | {rel['speedup']:.3f}x {_fmt_ci(rel.get('ci'))} | {inside} "
                f"| {len(trials)} ({valid}, {same}) | {wall} s | `{' '.join(entry['flags'])}` |"
            )


if __name__ == "__main__":
    main()
