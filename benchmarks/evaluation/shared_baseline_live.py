"""Baseline runs shared between trials (issue 54), live: real tunes of one host kernel
(benchmarks/projects/host_kernels, real g++ builds and runs on this machine, whose load makes the tune pair
every trial run with a run of the project's own build), racing with shared baseline runs (today's default) and
without (racing_replay.NO_SHARE: the package's rule patched in the tune's own process), alternating, the same
box, seeds and budget. Per tune, from its trial store: the search trials measured, their measured runs (a
shared baseline run counted once, in the trial that ran it), their benchmark seconds, trials per minute of
benchmark time, the written entry, and whether a shared baseline run makes a trial's first ratio stray.

    python3 benchmarks/evaluation/shared_baseline_live.py run --kernel matmul_naive_f32 --box 150 --pairs 2 \
        -o docs/benchmarks/raw/racing/shared-live.json
    python3 benchmarks/evaluation/shared_baseline_live.py table docs/benchmarks/raw/racing/shared-live.json
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from racing_replay import NO_SHARE, ROOT  # noqa: E402

PROJECT = ROOT / "benchmarks" / "projects" / "host_kernels"


def tune(kernel: str, box: int, share: bool, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        build = Path(tmp) / "build"
        subprocess.run(["cmake", "-S", str(PROJECT), "-B", str(build), "-G", "Ninja"], check=True, capture_output=True)
        cmd = [
            sys.executable,
            *(["-m", "compileiq_cmake"] if share else ["-c", NO_SHARE]),
            "tune", "-S", str(PROJECT), "-B", str(build), "--target", kernel, "--bench", kernel,
            "--metric", r"time_ms=([0-9.eE+-]+)", "--compare-output", r"checksum=([0-9.eE+-]+)",
            "--rtol", "1e-4", "--budget", "40", "--time-limit", str(box), "--seed", str(seed),
            "--no-prior", "--output", str(Path(tmp) / "o.toml"), "--json-summary", str(Path(tmp) / "s.json"),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=box * 3, cwd=tmp)
        log = proc.stdout + proc.stderr
        db = sqlite3.connect(build / "compileiq" / "trials.sqlite")
        rows = db.execute(
            "SELECT idx, status, reason, measurements, bench_seconds, same_code_as FROM trials"
        ).fetchall()
        db.close()
        toml = Path(tmp) / "o.toml"
        entries = tomllib.loads(toml.read_text()).get("entry", []) if toml.is_file() else []
    trials = []
    for idx, status, reason, meas, bench, same in rows:
        ms = json.loads(meas)
        trials.append({
            "index": idx, "status": status, "reason": reason[:120], "same_code_as": same, "bench_seconds": bench,
            "samples": [len(m["samples"]) for m in ms], "reference": [len(m.get("reference", [])) for m in ms],
            "shared": [m.get("shared", 0) for m in ms],
            "values": [[m["samples"], m.get("reference", [])] for m in ms],
        })  # fmt: skip
    return {
        "kernel": kernel, "box": box, "share": share, "seed": seed, "rc": proc.returncode,
        "paired": "every trial is measured next to runs of the project's own build" in log,
        "trials": trials, "entries": [{"flags": e.get("flags"), "speedup": e.get("speedup")} for e in entries],
        "log_tail": log[-1500:],
    }  # fmt: skip


def summary(r: dict) -> dict:
    search = [t for t in r["trials"] if t["index"] > 0 and t["same_code_as"] is None and sum(t["samples"])]
    runs = sum(sum(t["samples"]) + sum(t["reference"]) - sum(t["shared"]) for t in search)
    seconds = sum(t["bench_seconds"] for t in search)
    return {
        "measured": len(search), "runs": runs, "shared": sum(sum(t["shared"]) for t in search),
        "seconds": seconds, "per_minute": len(search) / (seconds / 60) if seconds else 0.0,
    }  # fmt: skip


def first_pair_deviation(doc: dict, shared: bool) -> list[float]:
    """|log(first pair's ratio) - median log ratio of the trial's other pairs|, for the trials of >= 3 pairs whose
    first pair shared a baseline run (`shared`) or not: does a shared baseline run make the first ratio stray?"""
    out = []
    for r in doc["results"]:
        for t in r["trials"]:
            for (samples, reference), n in zip(t.get("values", []), t["shared"], strict=False):
                if len(reference) != len(samples) or len(samples) < 3 or bool(n) != shared:
                    continue
                logs = [math.log(a / b) for a, b in zip(samples, reference, strict=True)]
                out.append(abs(logs[0] - statistics.median(logs[1:])))
    return out


def table(doc: dict) -> str:
    lines = [
        "| tune | variant | paired | search trials measured | their runs (shared) | runs per trial | benchmark s | "
        "trials per benchmark-minute | written |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(doc["results"]):
        s = summary(r)
        written = "; ".join(f"{' '.join(e['flags'] or [])} {e['speedup']}" for e in r["entries"]) or "nothing"
        lines.append(
            f"| {i + 1} | {'shared' if r['share'] else 'no sharing'} | {r['paired']} | {s['measured']} | "
            f"{s['runs']} ({s['shared']}) | {s['runs'] / max(1, s['measured']):.2f} | {s['seconds']:.1f} | "
            f"{s['per_minute']:.2f} | {written} |"
        )
    for share in (True, False):
        rows = [summary(r) for r in doc["results"] if r["share"] == share]
        n, sec = sum(x["measured"] for x in rows), sum(x["seconds"] for x in rows)
        runs = sum(x["runs"] for x in rows)
        lines.append(
            f"| all | {'shared' if share else 'no sharing'} | | {n} | {runs} | {runs / max(1, n):.2f} | {sec:.1f} | "
            f"{n / (sec / 60) if sec else 0:.2f} | |"
        )
    on, off = first_pair_deviation(doc, True), first_pair_deviation(doc, False)
    if on and off:
        lines.append(
            f"\nthe first pair's ratio against the trial's others, median |log difference|: shared baseline run "
            f"{100 * statistics.median(on):.2f}% ({len(on)} trials), own baseline run "
            f"{100 * statistics.median(off):.2f}% ({len(off)} trials)"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--kernel", default="matmul_naive_f32")
    r.add_argument("--box", type=int, default=150)
    r.add_argument("--pairs", type=int, default=2)
    r.add_argument("-o", type=Path, required=True)
    t = sub.add_parser("table")
    t.add_argument("json", type=Path)
    a = ap.parse_args()
    if a.cmd == "table":
        print(table(json.loads(a.json.read_text())))
        return
    results = []
    for seed in range(a.pairs):
        for share in (True, False) if seed % 2 == 0 else (False, True):  # alternating: drift hits both
            results.append(tune(a.kernel, a.box, share, seed))
            a.o.parent.mkdir(parents=True, exist_ok=True)
            a.o.write_text(json.dumps({"kernel": a.kernel, "box": a.box, "results": results}, indent=1) + "\n")
    print(table(json.loads(a.o.read_text())))


if __name__ == "__main__":
    main()
