"""One markdown table of suite runs side by side, from their raw folders (no GPU needed).

Each folder is what ``benchmarks/device/h200_suite_cache.sh`` brings back: ``suite.json`` (the suite's JSON
summary), ``suite.log`` and ``<target>-trials.sqlite`` (each target's trial store). Older code writes fewer
fields (no phases): those rows say "-".

    python3 benchmarks/evaluation/suite_table.py docs/benchmarks/raw/real-size-6/suite-mix \
        docs/benchmarks/raw/real-size-6/suite-oldmix
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
from pathlib import Path


def _quartiles(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) < 4:
        return f"{statistics.median(values):.2f} s (n={len(values)})"
    q1, med, q3 = statistics.quantiles(values, n=4)
    return f"{med:.2f} s ({q1:.2f}-{q3:.2f}, n={len(values)})"


def trial_builds(folder: Path) -> list[float]:
    """Build seconds of every trial with flags (not the project's own build) in the folder's trial stores."""
    out: list[float] = []
    for store in sorted(folder.glob("*-trials.sqlite")):
        # read only, as finished data: a store in WAL mode opened for writing leaves -wal/-shm files beside it
        db = sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            rows = db.execute("SELECT flags, build_seconds FROM trials WHERE build_seconds > 0").fetchall()
        finally:
            db.close()
        out += [float(seconds) for flags, seconds in rows if flags.strip() not in ("", "[]")]
    return out


def cache_line(folder: Path) -> str:
    log = folder / "suite.log"
    lines = [line for line in log.read_text(errors="replace").splitlines() if "compile-step cache:" in line] if log.exists() else []
    return lines[-1].split("compile-step cache:", 1)[1].strip() if lines else "-"


def column(folder: Path) -> dict[str, str]:
    doc = json.loads((folder / "suite.json").read_text())
    targets = doc["targets"]
    ran = [t for t in targets if t.get("trials", 0) > 0]
    trials = sum(t.get("trials", 0) for t in targets)
    wall = float(doc["wall_seconds"])
    ordered = sorted(targets, key=lambda t: t.get("started", 0.0))
    later = [t for t in ordered[2:] if t.get("status") != "skipped" and "stages" in t]
    setup = [t["stages"].get("setup", 0.0) for t in later]
    both = [t["stages"].get("setup", 0.0) + t["stages"].get("baseline", 0.0) for t in later]
    search = sum(t.get("stages", {}).get("search", 0.0) for t in targets)
    sched = doc.get("scheduling", {})
    idle = sched.get("idle_share", {})
    tuned = sorted((t for t in targets if t.get("status") == "tuned"), key=lambda t: -(t.get("speedup") or 1.0))
    geo = doc.get("geomean_speedup")  # the suite's own: over the targets tuned or without a gain (1.0 for those)
    shared = [t.get("shared_seconds") for t in targets if t.get("shared_seconds") is not None]
    base = sched.get("baseline_builds") or []

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} s ({min(values):.1f}-{max(values):.1f})" if values else "-"

    return {
        "wall": f"{wall:.1f} s of {float(doc['time_limit']):.0f} s",
        "targets that ran trials": f"{len(ran)} of {len(targets)}",
        "skipped": str(sum(t.get("status") == "skipped" for t in targets)),
        "trials": str(trials),
        "trials per target that ran, median (range)": (f"{statistics.median(t['trials'] for t in ran):g} "
                                                        f"({min(t['trials'] for t in ran)}-{max(t['trials'] for t in ran)})"
                                                        if ran else "-"),
        "trials per suite-minute": f"{trials / wall * 60:.1f}",
        "trials per minute of the search stages": f"{trials / search * 60:.1f}" if search else "-",
        "setup per target after the first two (not skipped)": med(setup),
        "setup + baseline per target after the first two": med(both),
        "the suite's shared setup (the longest a target ran or waited for it)": f"{max(shared):.1f} s" if shared else "-",
        "the one baseline build": (f"{base[0].get('seconds', 0.0):.1f} s, {len(base[0].get('targets', []))} targets"
                                   if base and isinstance(base[0], dict) and "seconds" in base[0] else "-"),
        "a trial's build (trial stores, with flags)": _quartiles(trial_builds(folder)),
        "GPU idle share": ", ".join(f"{k} {v:.0%}" for k, v in idle.items()) or "-",
        "compile-step cache": cache_line(folder),
        "tuned": f"{len(tuned)}: " + ", ".join(f"{t['target']} {t['speedup']:.3f}x" for t in tuned),
        "geometric mean (the suite's: tuned or without a gain)": f"{geo:.3f}x" if geo is not None else "-",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    columns = [column(folder) for folder in args.folders]
    print("| | " + " | ".join(folder.name for folder in args.folders) + " |")
    print("|---|" + "---|" * len(columns))
    for row in columns[0]:
        print(f"| {row} | " + " | ".join(c[row].replace("|", "/") for c in columns) + " |")


if __name__ == "__main__":
    main()
