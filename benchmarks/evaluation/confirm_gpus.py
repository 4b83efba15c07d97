"""Issue 54, decisions per GPU-second: a tune on G GPUs confirms its winner on every other GPU. Before, one
after another (G - 1 validations end to end while the other GPUs idle); now all at the same time. This runs
the same replayed tunes (the recorded landscapes, `tune --replay` on G simulated GPUs, each run sleeping its
recorded time x PACE) with an older checkout of the code (--old: a folder whose `compileiq_cmake` is imported
first, e.g. a `git worktree` of the commit before) and with this one, variant after variant for each
landscape and seed, and reports the finalists' stage seconds, the whole tune's, how many GPUs confirmed the
winner and whether both wrote the same flags.

    git worktree add /tmp/old-2c58d46 2c58d46
    python3 benchmarks/evaluation/confirm_gpus.py run --old /tmp/old-2c58d46 --gpus 8 --seeds 3 -o docs/benchmarks/raw/confirm-gpus/run.json
    python3 benchmarks/evaluation/confirm_gpus.py table docs/benchmarks/raw/confirm-gpus/run.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANDSCAPES = ("nbody", "blackscholes", "conv2d_5x5", "attn_prefill_tile", "softmax_rows")


def tune(code: Path | None, landscape: str, seed: int, gpus: int, pace: float, budget: int) -> dict:
    """One replayed tune; its summary's timings, confirmations and winner."""
    with tempfile.TemporaryDirectory(prefix="confirm-gpus-") as tmp:
        folder = Path(tmp)
        (folder / "src").mkdir()
        env = {**os.environ, "COMPILEIQ_SIMULATE_GPUS": str(gpus), "COMPILEIQ_REPLAY_PACE": str(pace),
               "COMPILEIQ_NO_LEARN": "1"}
        if code is not None:
            env["PYTHONPATH"] = str(code)
        command = [sys.executable, "-m", "compileiq_cmake", "tune", "-S", "src", "-B", "build", "--target", landscape,
                   "--replay", str(ROOT / "benchmarks" / "landscapes" / f"{landscape}.json"), "--output", "o.toml",
                   "--budget", str(budget), "--workers", str(gpus), "--seed", str(seed), "--no-prior", "--quiet",
                   "--json-summary", "s.json"]
        t0 = time.perf_counter()
        proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"rc": proc.returncode, "error": (proc.stdout + proc.stderr)[-2000:], "wall": wall}
        doc = json.loads((folder / "s.json").read_text())
        timings = doc["timings"]
        winner = doc.get("winner") or {}
        return {
            "rc": 0,
            "wall": wall,
            "tune_seconds": timings["wall_seconds"],
            "finalists_seconds": timings["finalists_seconds"],
            "search_seconds": timings["search_seconds"],
            "confirmations": [bool(c.get("accepted")) for c in doc.get("confirmations") or []],
            "flags": winner.get("flags") or [],
            "speedup": winner.get("speedup"),
        }


def run(args: argparse.Namespace) -> None:
    rows = []
    variants = (("before", args.old), ("now", None))
    for landscape in args.landscapes:
        for seed in range(1, args.seeds + 1):
            order = variants if seed % 2 else variants[::-1]  # (which goes first alternates)
            for name, code in order:
                row = {"landscape": landscape, "seed": seed, "variant": name,
                       **tune(code, landscape, seed, args.gpus, args.pace, args.budget)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    doc = {"gpus": args.gpus, "pace": args.pace, "budget": args.budget, "old": str(args.old), "rows": rows}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1) + "\n")
    table(argparse.Namespace(raw=args.output))


def table(args: argparse.Namespace) -> None:
    doc = json.loads(Path(args.raw).read_text())
    rows = doc["rows"]
    print(f"{doc['gpus']} simulated GPUs, pace {doc['pace']}, budget {doc['budget']}; medians over seeds [min..max]")
    print("| landscape | finalists' stage s, before / now | whole tune s, before / now | GPUs confirming, before / now "
          "| same flags written |")
    print("|---|---|---|---|---|")

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} [{min(values):.1f}..{max(values):.1f}]" if values else "-"

    all_f: dict[str, list[float]] = {"before": [], "now": []}
    for landscape in dict.fromkeys(r["landscape"] for r in rows):
        mine = [r for r in rows if r["landscape"] == landscape and r["rc"] == 0]
        by = {v: [r for r in mine if r["variant"] == v] for v in ("before", "now")}
        for v in by:
            all_f[v] += [r["finalists_seconds"] for r in by[v]]
        pairs = {(r["seed"]): r for r in by["before"]}
        same = sum(1 for r in by["now"] if r["seed"] in pairs and pairs[r["seed"]]["flags"] == r["flags"])
        conf = " / ".join(f"{statistics.median([sum(r['confirmations']) for r in by[v]] or [0]):g}" for v in by)
        print(f"| {landscape} | {spread([r['finalists_seconds'] for r in by['before']])} / "
              f"{spread([r['finalists_seconds'] for r in by['now']])} | "
              f"{spread([r['tune_seconds'] for r in by['before']])} / {spread([r['tune_seconds'] for r in by['now']])} | "
              f"{conf} | {same}/{len(by['now'])} |")
    failed = [r for r in rows if r["rc"] != 0]
    print(f"\nall: finalists' stage median {spread(all_f['before'])} s before, {spread(all_f['now'])} s now; "
          f"{len(failed)} failed tunes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--old", type=Path, required=True, help="a checkout of the code before (its folder)")
    r.add_argument("--gpus", type=int, default=8)
    r.add_argument("--seeds", type=int, default=3)
    r.add_argument("--pace", type=float, default=20.0)
    r.add_argument("--budget", type=int, default=24)
    r.add_argument("--landscapes", nargs="+", default=list(LANDSCAPES))
    r.add_argument("-o", "--output", type=Path, required=True)
    t = sub.add_parser("table")
    t.add_argument("raw", type=Path)
    args = ap.parse_args()
    run(args) if args.command == "run" else table(args)


if __name__ == "__main__":
    main()
