"""Racing (issue 54) on the project's recorded landscapes: the real tune (`compileiq_cmake tune --replay`, the
replay runner answering every build and run from the landscape with its measured noise) with racing (today's
default) and with `--no-race` (every search trial gets its warm-up and all its runs, as before), same seeds,
same budget, both variants in the same run. Per tune, from its trial store and JSON summary: the search's
trials, benchmark runs and GPU seconds (the recorded run times of the runs made: samples, paired runs and
warm-ups), the finalists and the written winner, whose true speed-up is looked up in the landscape.

    python3 benchmarks/evaluation/racing_replay.py run --seeds 10 --jobs 2 -o docs/benchmarks/raw/racing/replay.json
    python3 benchmarks/evaluation/racing_replay.py table docs/benchmarks/raw/racing/replay.json
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from compileiq_cmake.search.landscape import Landscape  # noqa: E402

LANDSCAPES = (
    "nbody",
    "sgemm",
    "softmax_rows",
    "stencil",
    "attn_prefill_tile",
    "blackscholes",
    "layernorm_gelu",
    "spmv_csr",
    "conv2d_5x5",
    "rmsnorm",
)
BUDGET = 30


# the tune with racing but without baseline runs shared between trials (shared_baseline_replay.py): the
# package's rule patched in the tune's own process, nothing else changed
NO_SHARE = (
    "import runpy, compileiq_cmake.measure.shared_reference as s; "
    "s.ReferenceRuns.take = lambda self, *a: None; runpy.run_module('compileiq_cmake', run_name='__main__')"
)


def one(args: tuple[str, int, bool | str] | tuple[str, int, bool | str, int]) -> dict:
    """One replayed tune; `race`: True, False (--no-race) or "noshare" (racing, no baseline run shared)."""
    name, seed, variant = args[:3]
    race = bool(variant)
    noise = args[3] if len(args) > 3 else None  # the replayed runs' noise stream (default: the seed's)
    path = ROOT / "benchmarks" / "landscapes" / f"{name}.json"
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "src").mkdir()
        cmd = [
            sys.executable,
            *(["-c", NO_SHARE] if variant == "noshare" else ["-m", "compileiq_cmake"]),
            "tune",
            "-S",
            str(t / "src"),
            "-B",
            str(t / "build"),
            "--target",
            Path(name).name,
            "--replay",
            str(path),
            "--budget",
            str(BUDGET),
            "--seed",
            str(seed),
            "--output",
            str(t / "o.toml"),
            "--json-summary",
            str(t / "s.json"),
            "--no-prior",
        ]
        if not race:
            cmd.append("--no-race")
        env = dict(os.environ, COMPILEIQ_REPLAY_NOISE_SEED=str(noise)) if noise is not None else None
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
        if proc.returncode != 0:
            return {"name": name, "seed": seed, "race": variant, "error": (proc.stdout + proc.stderr)[-800:]}
        doc = json.loads((t / "s.json").read_text())
        db = sqlite3.connect(t / "build" / "compileiq" / "trials.sqlite")
        rows = db.execute("SELECT idx, status, reason, measurements, same_code_as FROM trials").fetchall()
        db.close()
    no_warmup = "search trials run without a warm-up run" in proc.stdout + proc.stderr
    runs = gpu = 0.0
    raced = 0
    for idx, status, reason, meas, same in rows:
        if same is not None:
            continue
        raced += reason.startswith("raced:")
        for m in json.loads(meas):
            warm = 1 if idx == 0 or not no_warmup else 0
            # a baseline run shared with the trial before (measure.shared_reference) was counted there
            values = list(m["samples"]) + list(m.get("reference", []))[m.get("shared", 0) :]
            runs += len(values) + warm
            gpu += sum(values) + warm * (statistics.median(m["samples"]) if m["samples"] else 0.0)
    land = Landscape.load(path)
    winner = doc.get("winner") or {}
    flags = winner.get("flags") if winner else None
    point = land.lookup(tuple(flags)) if flags else None
    return {
        "name": name, "seed": seed, "race": variant, "noise": seed if noise is None else noise,
        "trials": len(rows), "raced": raced, "runs": runs,
        "gpu_seconds": gpu, "no_warmup": no_warmup, "winner": flags,
        "winner_true": point.speedup if point is not None and point.valid else (1.0 if not flags else None),
        "finalists": [f["flags"] for f in doc.get("finalists", [])], "best_true": land.best_valid().speedup,
    }  # fmt: skip


def run(seeds: int, jobs: int, out: Path, names: tuple[str, ...]) -> None:
    work = [(n, s, r) for n in names for s in range(seeds) for r in (True, False)]
    with ProcessPoolExecutor(jobs) as pool:
        results = list(pool.map(one, work))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"budget": BUDGET, "seeds": seeds, "results": results}, indent=1) + "\n")
    print(table(json.loads(out.read_text())))


NOISE_B = 10_000  # the second noise stream of `aa`: seed + NOISE_B


def run_aa(seeds: int, jobs: int, out: Path, names: tuple[str, ...]) -> None:
    """Each tune of `run` under two noise streams (the seed's and seed + NOISE_B), same search seed: how often
    the tool writes the same flags when it measures the same landscape twice, with and without racing (the
    reference for "the same winners")."""
    work = [(n, s, r, s + k) for n in names for s in range(seeds) for r in (True, False) for k in (0, NOISE_B)]
    with ProcessPoolExecutor(jobs) as pool:
        results = list(pool.map(one, work))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"budget": BUDGET, "seeds": seeds, "results": results}, indent=1) + "\n")
    print(aa_table(json.loads(out.read_text())))


def aa_table(doc: dict) -> str:
    """Per landscape: identical written flags (and winners within 1% in true speed-up) between the two noise
    streams of one seed: no race vs no race, race vs race, and race vs no race in each stream."""
    res = [r for r in doc["results"] if "error" not in r]
    key = {(r["name"], r["seed"], r["race"], r["noise"] != r["seed"]): r for r in res}
    names = sorted({r["name"] for r in res})
    pairs = {
        "no race A / no race B": (False, False, False, True),
        "race A / race B": (True, False, True, True),
        "race A / no race A": (True, False, False, False),
        "race B / no race B": (True, True, False, True),
    }
    lines = [
        f"budget {doc['budget']} trials, {doc['seeds']} seeds per landscape, prior off; A: the seed's noise "
        f"stream, B: seed + {NOISE_B}'s; identical written flags (winner within 1% of the other's true speed-up)",
        "",
        "| landscape | " + " | ".join(pairs) + " |",
        "| --- |" + " --- |" * len(pairs),
    ]
    tot = {p: [0, 0, 0] for p in pairs}
    for name in names:
        cells = []
        for label, (r1, b1, r2, b2) in pairs.items():
            same = close = n = 0
            for s in range(doc["seeds"]):
                x, y = key.get((name, s, r1, b1)), key.get((name, s, r2, b2))
                if x is None or y is None:
                    continue
                n += 1
                same += x["winner"] == y["winner"]
                wx, wy = x["winner_true"] or 0, y["winner_true"] or 0
                close += wx >= 0.99 * wy and wy >= 0.99 * wx
            cells.append(f"{same}/{n} ({close}/{n})")
            for i, v in enumerate((same, close, n)):
                tot[label][i] += v
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(
        "| **all** | "
        + " | ".join(f"**{a}/{n}** ({c}/{n}; {100 * a / max(n, 1):.1f}%)" for a, c, n in tot.values())
        + " |"
    )
    errors = [r for r in doc["results"] if "error" in r]
    if errors:
        lines.append(f"\n{len(errors)} tunes failed: " + "; ".join(f"{e['name']} seed {e['seed']}" for e in errors))
    return "\n".join(lines)


def table(doc: dict) -> str:
    res = [r for r in doc["results"] if "error" not in r]
    errors = [r for r in doc["results"] if "error" in r]
    names = sorted({r["name"] for r in res})
    lines = [
        f"budget {doc['budget']} trials, {doc['seeds']} seeds per landscape, prior off; medians over seeds",
        "",
        "| landscape | runs per trial, race / no race | trials per GPU-minute, race / no race (ratio) | raced trials | "
        "same winner flags | winner's true speed-up, race / no race | race's winner within 1% of no race's |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    tot = {"on_t": 0, "on_g": 0.0, "off_t": 0, "off_g": 0.0, "same": 0, "close": 0, "n": 0}
    for name in names:
        on = {r["seed"]: r for r in res if r["name"] == name and r["race"]}
        off = {r["seed"]: r for r in res if r["name"] == name and not r["race"]}
        seeds = sorted(set(on) & set(off))
        rpt_on = statistics.median(on[s]["runs"] / on[s]["trials"] for s in seeds)
        rpt_off = statistics.median(off[s]["runs"] / off[s]["trials"] for s in seeds)
        tpm_on = sum(on[s]["trials"] for s in seeds) / (sum(on[s]["gpu_seconds"] for s in seeds) / 60)
        tpm_off = sum(off[s]["trials"] for s in seeds) / (sum(off[s]["gpu_seconds"] for s in seeds) / 60)
        same = sum(on[s]["winner"] == off[s]["winner"] for s in seeds)
        close = sum((on[s]["winner_true"] or 0) >= 0.99 * (off[s]["winner_true"] or 0) for s in seeds)
        raced = statistics.median(on[s]["raced"] for s in seeds)
        w_on = statistics.median(on[s]["winner_true"] or 0 for s in seeds)
        w_off = statistics.median(off[s]["winner_true"] or 0 for s in seeds)
        lines.append(
            f"| {name} | {rpt_on:.2f} / {rpt_off:.2f} | {tpm_on:.3g} / {tpm_off:.3g} ({tpm_on / tpm_off:.2f}x) | "
            f"{raced:g} of {BUDGET} | {same}/{len(seeds)} | {w_on:.3f}x / {w_off:.3f}x | {close}/{len(seeds)} |"
        )
        for s in seeds:
            tot["on_t"] += on[s]["trials"]
            tot["on_g"] += on[s]["gpu_seconds"]
            tot["off_t"] += off[s]["trials"]
            tot["off_g"] += off[s]["gpu_seconds"]
        tot["same"] += same
        tot["close"] += close
        tot["n"] += len(seeds)
    if tot["n"]:
        ratio = (tot["on_t"] / tot["on_g"]) / (tot["off_t"] / tot["off_g"])
        lines.append(
            f"| **all** | | **{ratio:.2f}x** trials per GPU-minute | | {tot['same']}/{tot['n']} | | "
            f"**{tot['close']}/{tot['n']}** ({100 * tot['close'] / tot['n']:.1f}%) |"
        )
    if errors:
        lines.append(f"\n{len(errors)} tunes failed: " + "; ".join(f"{e['name']} seed {e['seed']}" for e in errors))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--names", default=",".join(LANDSCAPES))
    r.add_argument("-o", "--out", type=Path, required=True)
    aa = sub.add_parser("aa", help="each tune under two noise streams: the winners' agreement with itself")
    aa.add_argument("--seeds", type=int, default=8)
    aa.add_argument("--jobs", type=int, default=2)
    aa.add_argument("--names", default=",".join(LANDSCAPES))
    aa.add_argument("-o", "--out", type=Path, required=True)
    t = sub.add_parser("table")
    t.add_argument("file", type=Path)
    ta = sub.add_parser("aa-table")
    ta.add_argument("file", type=Path)
    a = ap.parse_args()
    if a.cmd == "run":
        run(a.seeds, a.jobs, a.out, tuple(a.names.split(",")))
    elif a.cmd == "aa":
        run_aa(a.seeds, a.jobs, a.out, tuple(a.names.split(",")))
    elif a.cmd == "aa-table":
        print(aa_table(json.loads(a.file.read_text())))
    else:
        print(table(json.loads(a.file.read_text())))


if __name__ == "__main__":
    main()
