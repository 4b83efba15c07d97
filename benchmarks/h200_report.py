"""Turn the raw results of benchmarks/h200_examples.sh (unpacked into a folder) into the markdown table of
docs/benchmarks/h200-examples.md.

Usage: python3 benchmarks/h200_report.py docs/benchmarks/h200-raw > docs/benchmarks/h200-examples-table.md
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path


def main() -> None:
    raw = Path(sys.argv[1])
    print("| example | tuned target | workload | baseline (ms, tune) | tuned (ms, tune) | speedup (tune, re-measured interleaved) "
          "| release plain (ms) | release tuned (ms) | release speedup | trials (valid) | tune wall-clock | chosen flags |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for toml_path in sorted(raw.glob("*-compileiq.toml")):
        example = toml_path.name[: -len("-compileiq.toml")]
        entry = tomllib.loads(toml_path.read_text())["entry"][0]
        trials = next(iter(json.loads((raw / f"{example}-trials.json").read_text()).values()))
        valid = sum(1 for t in trials if t["status"] == "ok")
        log = (raw / f"{example}-tune.log").read_text()
        wall = re.search(r"tune_wall_seconds=([0-9.]+)", log).group(1)
        remeasure = json.loads((raw / f"{example}-remeasure.json").read_text())
        for i, w in enumerate(entry["workloads"]):
            rel = remeasure["workloads"][i]
            speed = entry["baseline"][i] / entry["tuned"][i] if entry["lower_is_better"] else entry["tuned"][i] / entry["baseline"][i]
            print(
                f"| {example} | {entry['target']} | `{w}` | {entry['baseline'][i]:.4f} | {entry['tuned'][i]:.4f} | {speed:.3f}x "
                f"| {rel['plain_median']:.4f} (±{100 * rel['plain_spread'] / 2:.1f}%) | {rel['tuned_median']:.4f} (±{100 * rel['tuned_spread'] / 2:.1f}%) "
                f"| {rel['speedup']:.3f}x | {len(trials)} ({valid}) | {wall} s | `{' '.join(entry['flags'])}` |"
            )


if __name__ == "__main__":
    main()
