"""The table of docs/benchmarks/multi-gpu.md from the raw results of benchmarks/device/h200_multi_gpu.sh (one folder
per --gpus value under the given directory): wall times, trials per minute, benchmark runs per second, GPU
busy fraction (nvidia-smi utilization samples above 0 during the tune), the winner and its speedups. The
search phase is also given from the first GPU activity on (the setup before it does not scale with GPUs);
tunes print their search loop's own time since this benchmark and that is used when present.

    python3 benchmarks/reports/multi_gpu_report.py docs/benchmarks/multi-gpu-raw
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
import sys
from collections import defaultdict
from pathlib import Path


def summary(folder: Path) -> dict:
    log = (folder / "tune.log").read_text()
    search = re.search(r"search phase: (\d+) trials in ([0-9.]+) s, (\d+) benchmark runs", log)
    wall = float(re.search(r"tune_wall_seconds=([0-9.]+)", log).group(1))
    start, end = (float(x) for x in re.search(r"tune_start=([0-9.]+) tune_end=([0-9.]+)", log).groups())
    winner = re.search(r"winner \(re-measured interleaved against the baseline\): ([0-9.]+)x \[95% CI ([0-9.]+)\.\.([0-9.]+)\] "
                       r"per workload (.*) with (.*)", log)
    trials = next(iter(json.loads((folder / "trials.json").read_text()).values()))
    bench = sum(t["bench_seconds"] for t in trials)
    busy: dict[str, list[int]] = defaultdict(list)
    first_busy = None
    for row in csv.reader((folder / "utilization.csv").open()):
        if len(row) != 4:
            continue
        stamp = dt.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=dt.timezone.utc).timestamp()
        if start <= stamp <= end:
            busy[row[1].strip()].append(int(row[2]))
            if first_busy is None and int(row[2]) > 0:
                first_busy = stamp
    n, seconds, runs = int(search.group(1)), float(search.group(2)), int(search.group(3))
    loop = re.search(r"search loop .*?: (\d+) trials in ([0-9.]+) s", log)  # printed by tunes since this benchmark
    on_gpu = float(loop.group(2)) if loop else seconds - (first_busy - start)
    loop_trials = int(loop.group(1)) if loop else n
    # benchmark seconds inside the loop (every trial but the baseline, #0) per second of loop: how much
    # measuring the loop got done, independent of how many runs each trial needed
    loop_bench = sum(t["bench_seconds"] for t in trials if t["index"] != 0)
    return {
        "gpus": folder.name.removeprefix("multi-gpu-"), "trials": n, "search_s": seconds, "wall_s": wall, "runs": runs,
        "trials_per_min": 60 * n / seconds, "on_gpu_s": on_gpu,
        "loop_trials_per_min": 60 * loop_trials / on_gpu, "loop_bench_rate": loop_bench / on_gpu,
        "runs_per_trial": runs / n, "loop_measured": bool(loop), "runs_per_s": runs / seconds, "bench_s_per_run": bench / runs,
        "busy": {g: sum(1 for u in v if u > 0) / len(v) for g, v in sorted(busy.items())},
        "winner": f"{winner.group(1)}x [{winner.group(2)}..{winner.group(3)}], per workload {winner.group(4)}"
        if winner else "none", "flags": winner.group(5) if winner else "",
    }


def main() -> None:
    rows = [summary(f) for f in sorted(Path(sys.argv[1]).glob("multi-gpu-*")) if f.is_dir()]
    loop = all(r["loop_measured"] for r in rows)
    print(f"| --gpus | trials | search phase | {'search loop' if loop else 'of it from the first GPU run'} | whole tune | "
          "trials/min (search) | trials/min (loop) | benchmark s per loop s | runs per trial | "
          "benchmark runs/s | s per run | GPU busy (util > 0) | winner (interleaved re-measure, 95% CI) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        busy = ", ".join(f"GPU {g} {100 * b:.0f}%" for g, b in r["busy"].items())
        print(f"| {r['gpus']} | {r['trials']} | {r['search_s']:.1f} s | {r['on_gpu_s']:.1f} s | {r['wall_s']:.1f} s | {r['trials_per_min']:.2f} | "
              f"{r['loop_trials_per_min']:.2f} | {r['loop_bench_rate']:.2f} | {r['runs_per_trial']:.1f} | {r['runs_per_s']:.2f} | {r['bench_s_per_run']:.3f} | {busy} | {r['winner']} `{r['flags']}` |")
    if len(rows) == 2:
        one, two = rows
        print(f"\n2 GPUs / 1 GPU: trials per minute {two['trials_per_min'] / one['trials_per_min']:.2f}x "
              f"(search loop: {two['loop_trials_per_min'] / one['loop_trials_per_min']:.2f}x), "
              f"benchmark seconds per loop second {two['loop_bench_rate'] / one['loop_bench_rate']:.2f}x, "
              f"benchmark runs per second {two['runs_per_s'] / one['runs_per_s']:.2f}x, whole tune "
              f"{one['wall_s'] / two['wall_s']:.2f}x")


if __name__ == "__main__":
    main()
