"""The table of docs/benchmarks/time-box.md from the raw results of benchmarks/device/h200_time_box.sh: per job, the
whole tune's wall time against its --time-limit, trials, screening, what the plan cut, the winner and the
driver's overhead per trial. Usage: python3 benchmarks/reports/time_box_report.py docs/benchmarks/raw/time-box"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def row(job: Path) -> str | None:
    wall = (job / "wall.txt").read_text() if (job / "wall.txt").is_file() else ""
    summary = job / "summary.json"
    if not summary.is_file():
        return f"| {job.name} | {wall.strip()} | (no summary: the tune failed, see tune.log) | | | | | |"
    doc = json.loads(summary.read_text())
    log = (job / "tune.log").read_text()
    t = doc["timings"]
    process_wall = float(re.search(r"wall_seconds=([\d.]+)", wall).group(1))
    limit = t["time_limit"]
    screening = re.search(r"\((\d+) compiles, (\d+) cache hits, ([\d.]+) s", log)
    screen = f"{screening.group(3)} s ({screening.group(1)} compiles, {screening.group(2)} hits)" if screening else "-"
    winner = doc.get("winner") or {}
    result = (f"{winner['speedup']:.3f}x [{winner['ci'][0]:.3f}..{winner['ci'][1]:.3f}] {' '.join(winner['flags'])}"
              if winner.get("flags") else "nothing written")
    steps = t.get("overhead_steps") or {}
    loop_trials = max(1, sum(1 for tr in doc["trials"] if tr.get("phase", "search") == "search") - 1)
    note = next((n for n in doc["notes"] if n.startswith("driver overhead")), "")
    overhead = re.search(r"driver overhead (\d+) ms per trial \(([\d.]+)% of a trial\)", note)
    cut = "; ".join(t.get("untested") or []) or "nothing"
    if len(cut) > 120:
        cut = cut[:117] + "..."
    return (f"| {job.name} | {limit:g} | {t['wall_seconds']:.1f} / {process_wall:.1f} | {len(doc['trials'])} | {screen} | "
            f"{overhead.group(1) + ' ms (' + overhead.group(2) + '%)' if overhead else '-'} | {result} | {cut} |")


def main(root: str) -> None:
    print("| job | limit s | tune / process wall s | trials | screening | overhead per trial | winner (validated) | not tested |")
    print("|---|---|---|---|---|---|---|---|")
    for job in sorted(p for p in Path(root).iterdir() if (p / "wall.txt").is_file()):
        print(row(job))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/benchmarks/raw/time-box")
