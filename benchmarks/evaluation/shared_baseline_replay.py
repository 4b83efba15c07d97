"""Baseline runs shared between trials (issue 54, measure.shared_reference), replayed on the recorded landscapes
whose noise makes the tune pair every trial run with a run of the project's own build: the 26 host kernels
(3-20% noise). Three variants of the real tune (`compileiq_cmake tune --replay`), same seeds, same budget, in
the same run: racing with shared baseline runs (today's default), racing without them (the package's rule
patched in the tune's own process: racing_replay.NO_SHARE), and `--no-race`. Per tune (racing_replay.one):
trials, measured runs (a shared baseline run counted once, in the trial that ran it), the recorded time of
those runs, the written winner and its true speed-up in the landscape.

    python3 benchmarks/evaluation/shared_baseline_replay.py run --seeds 4 --jobs 2 \
        -o docs/benchmarks/raw/racing/shared.json
    python3 benchmarks/evaluation/shared_baseline_replay.py table docs/benchmarks/raw/racing/shared.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from racing_replay import BUDGET, ROOT, one  # noqa: E402

VARIANTS = (True, "noshare", False)
LABEL = {True: "racing, shared baseline runs", "noshare": "racing, no sharing", False: "--no-race"}


def host_landscapes() -> tuple[str, ...]:
    return tuple(f"host/{p.stem}" for p in sorted((ROOT / "benchmarks" / "landscapes" / "host").glob("*.json")))


def run(seeds: int, jobs: int, out: Path, names: tuple[str, ...]) -> None:
    work = [(n, s, v) for n in names for s in range(seeds) for v in VARIANTS]
    with ProcessPoolExecutor(jobs) as pool:
        results = list(pool.map(one, work))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"budget": BUDGET, "seeds": seeds, "results": results}, indent=1) + "\n")
    print(table(json.loads(out.read_text())))


def table(doc: dict) -> str:
    res = [r for r in doc["results"] if "error" not in r]
    errors = [r for r in doc["results"] if "error" in r]
    key = {(r["name"], r["seed"], r["race"]): r for r in res}
    both = sorted({(n, s) for n, s, _ in key if all((n, s, v) in key for v in VARIANTS)})
    lines = [
        f"{len(both)} tunes per variant ({len({n for n, _ in both})} landscapes x {doc['seeds']} seeds), "
        f"budget {doc['budget']} trials; {len(errors)} tunes failed",
        "",
        "| variant | measured runs | recorded run time, s | trials per run-minute | vs no sharing | "
        "written flags as without sharing | winner's true speed-up, mean |",
        "|---|---|---|---|---|---|---|",
    ]
    base = [key[(n, s, "noshare")] for n, s in both]
    base_rate = sum(r["trials"] for r in base) / (sum(r["gpu_seconds"] for r in base) / 1000 / 60)
    for v in VARIANTS:
        rows = [key[(n, s, v)] for n, s in both]
        runs = sum(r["runs"] for r in rows)
        seconds = sum(r["gpu_seconds"] for r in rows) / 1000  # the replay's values are milliseconds
        rate = sum(r["trials"] for r in rows) / (seconds / 60)
        same = sum(key[(n, s, v)]["winner"] == key[(n, s, "noshare")]["winner"] for n, s in both)
        truth = [r["winner_true"] for r in rows if r["winner_true"] is not None]
        lines.append(
            f"| {LABEL[v]} | {runs:.0f} | {seconds:.1f} | {rate:.2f} | {rate / base_rate:.3f}x | "
            f"{same}/{len(both)} | {statistics.fmean(truth):.4f} |"
        )
    for r in errors[:5]:
        lines.append(f"\nfailed: {r['name']} seed {r['seed']} {r['race']}: {r['error'][-300:]}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", type=int, default=4)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("-o", type=Path, required=True)
    r.add_argument("--names", nargs="*", default=None)
    t = sub.add_parser("table")
    t.add_argument("json", type=Path)
    a = ap.parse_args()
    if a.cmd == "run":
        run(a.seeds, a.jobs, a.o, tuple(a.names) if a.names else host_landscapes())
    else:
        print(table(json.loads(a.json.read_text())))


if __name__ == "__main__":
    main()
