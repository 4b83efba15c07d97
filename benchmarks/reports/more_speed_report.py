"""The table of docs/benchmarks/more-speed.md from the raw data of benchmarks/device/h200_more_speed.sh (`tune NAME`).

Usage: python3 benchmarks/reports/more_speed_report.py docs/benchmarks/more-speed-raw NAME [NAME...]

Per tune: the winner and its validated speedup (the tune's summary.json), the global search's best and the
per-file stage's best trial (search speedups), the tune's wall time and the per-file stage's trial time, and the
fresh release build with the TOML re-measured against a plain one (release-remeasure.txt: interleaved rounds,
paired interval of the metric; and of the run's wall time).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

from compileiq_cmake.decide.stats import compare_paired

LINE = re.compile(r"^(plain|tuned) wall_s=([0-9.]+)(?: time_ms=([0-9.eE+-]+))?\s*(PASS|FAIL)?")


def release(path: Path) -> dict | None:
    if not path.exists():
        return None
    rows: dict[str, list[tuple[float, float | None, str]]] = {"plain": [], "tuned": []}
    for line in path.read_text().splitlines():
        m = LINE.match(line)
        if m:
            rows[m.group(1)].append((float(m.group(2)), float(m.group(3)) if m.group(3) else None, m.group(4) or ""))
    n = min(len(rows["plain"]), len(rows["tuned"]))
    out = {"rounds": n, "all_pass": all(r[2] == "PASS" for v in rows.values() for r in v[:n])}
    for i, name in ((1, "metric"), (0, "wall")):
        plain = [r[i] for r in rows["plain"][:n]]
        tuned = [r[i] for r in rows["tuned"][:n]]
        if n >= 3 and None not in plain and None not in tuned:
            c = compare_paired(plain, tuned)
            out[name] = {"plain": statistics.median(plain), "tuned": statistics.median(tuned), "speedup": c.speedup,
                         "ci": [c.ci.low, c.ci.high], "p": c.p_value}
    return out


def tune(raw: Path) -> dict:
    summary = json.loads((raw / "summary.json").read_text())
    trials = summary["trials"]
    per_file = [t for t in trials if any(f.startswith("[") for f in t["flags"])]
    global_ = [t for t in trials if t not in per_file and t["status"] == "ok" and t["flags"]]
    best = lambda ts: max(ts, key=lambda t: t["speedup"] or 0) if ts else None  # noqa: E731
    log = (raw / "tune.log").read_text() if (raw / "tune.log").exists() else ""
    wall = re.search(r"tune_wall_seconds=([0-9.]+)", log)
    winner = summary.get("winner") or {}
    return {
        "winner": winner.get("flags"), "validated": winner.get("speedup"), "ci": winner.get("ci"),
        "global_best": best(global_) and (best(global_)["flags"], best(global_)["speedup"]),
        "per_file_trials": len(per_file),
        "per_file_best": best(per_file) and (best(per_file)["flags"], best(per_file)["speedup"]),
        "per_file_seconds": round(sum(t["wall_seconds"] for t in per_file), 1),
        "per_file_twins": sum(1 for t in per_file if t["same_code_as"] is not None),
        "trials": len(trials), "tune_wall_seconds": float(wall.group(1)) if wall else None,
        "ablation": [(a["flags"], a["kept"], round(a["speedup"], 4)) for a in summary.get("ablation", [])],
        "release": release(raw / "release-remeasure.txt"),
    }


def main() -> None:
    root = Path(sys.argv[1])
    print(json.dumps({name: tune(root / name) for name in sys.argv[2:]}, indent=1))


if __name__ == "__main__":
    main()
