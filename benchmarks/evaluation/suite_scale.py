"""Issue 24, scale: a suite of N replayed targets (the recorded landscapes of benchmarks/landscapes, in turn)
on G simulated GPUs, tuned by one command with the one scheduler (--suite-jobs J) and one after another
(--suite-jobs 1), in the same run. Runs take time: each replayed run sleeps its recorded time x PACE
(COMPILEIQ_REPLAY_PACE), so the GPUs' busy and idle time is real wall time on this machine.

    python3 benchmarks/evaluation/suite_scale.py --targets 24 --gpus 8 --jobs 9 --pace 20 --budget 8 --out docs/benchmarks/raw/suite-scale
    python3 benchmarks/evaluation/suite_scale.py --ray-nodes 8 --targets 100 --gpus 64 --jobs 65 ...   # on a local Ray cluster

With --ray-nodes N the suite runs with --executor ray on a local Ray cluster started here (ray.cluster_utils:
N nodes of gpus/N simulated GPUs and one CPU each, COMPILEIQ_SIMULATE_GPUS=1), its GPU workers shared by
the targets; --skip-alone leaves the one-after-another variant out.

Writes <out>/<label>.json (the suite summaries) and prints a table: wall time, summed device seconds, mean
GPU idle share, geometric mean speedup, per variant."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent  # benchmarks/evaluation
ROOT = HERE.parents[1]
LANDSCAPES = sorted(p for p in (ROOT / "benchmarks" / "landscapes").glob("*.json") if p.name != "multifile_per_file.json")


def suite_file(folder: Path, targets: int, budget: int) -> Path:
    lines = ['[suite]\nsource_dir = "src"\nbuild_dir = "build"\noutput = "all.toml"\njson_summary = "suite.json"\n'
             "min_seconds = 1\n"]
    for i in range(targets):
        land = LANDSCAPES[i % len(LANDSCAPES)]
        lines.append(f'\n[[target]]\nname = "t{i:03d}_{land.stem}"\nreplay = "{land}"\nbudget = {budget}\n')
    (folder / "src").mkdir(parents=True, exist_ok=True)
    path = folder / "suite.toml"
    path.write_text("".join(lines))
    return path


def run(label: str, targets: int, gpus: int, jobs: int, pace: float, budget: int, out: Path,
        ray_address: str | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"suite-{label}-") as tmp:
        folder = Path(tmp)
        suite = suite_file(folder, targets, budget)
        env = {**os.environ, "COMPILEIQ_SIMULATE_GPUS": str(gpus), "COMPILEIQ_REPLAY_PACE": str(pace),
               "COMPILEIQ_NO_LEARN": "1"}
        t0, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        if ray_address:
            env["COMPILEIQ_SIMULATE_GPUS"] = "1"
        extra = ["--executor", "ray", "--ray-address", ray_address] if ray_address else []
        proc = subprocess.run([sys.executable, "-m", "compileiq_cmake", "tune", "--suite", str(suite), "--seed", "1",
                               "--suite-jobs", str(jobs), "--no-prior", "--quiet", *extra], cwd=folder, env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the driver's CPU (Ray's workers are not its children)
        driver_cpu = cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime
        if proc.returncode != 0:
            raise SystemExit(f"{label}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        doc = json.loads((folder / "suite.json").read_text())
    doc["process_wall_seconds"] = round(wall, 3)
    doc["driver_cpu_seconds"] = round(driver_cpu, 3)
    doc["setting"] = {"targets": targets, "gpus": gpus, "jobs": jobs, "pace": pace, "budget": budget,
                      "ray": bool(ray_address)}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{label}.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


HEADER = ("| variant | targets at a time | wall s | device s (summed) | mean GPU idle | mean GPU idle while targets "
          "waited | trials | driver CPU ms per trial | geomean | tuned/no gain/failed |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def row(label: str, doc: dict, gpus: int) -> str:
    device = sum(t.get("device_seconds") or 0.0 for t in doc["targets"])
    wall = doc["wall_seconds"]
    idle = doc["scheduling"].get("idle_share")
    mean_idle = statistics.mean(idle.values()) if idle else 1.0 - device / (gpus * wall) if device else float("nan")
    queued = doc["scheduling"].get("idle_share_queued")
    queued_idle = f"{100 * statistics.mean(queued.values()):.0f}%" if queued else "-"
    trials = sum(t["trials"] for t in doc["targets"])
    cpu = doc.get("driver_cpu_seconds")
    per_trial = f"{1000 * cpu / trials:.0f}" if cpu is not None and trials else "-"
    return (f"| {label} | {doc['setting']['jobs']} | {wall:.1f} | {device:.1f} | {100 * mean_idle:.0f}% | "
            f"{queued_idle} | {trials} | {per_trial} | {doc['geomean_speedup']:.3f}x | "
            f"{doc['wins']}/{doc['ties']}/{doc['losses']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", type=int, default=24)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=9)
    ap.add_argument("--pace", type=float, default=20.0)
    ap.add_argument("--budget", type=int, default=8)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "raw" / "suite-scale")
    ap.add_argument("--ray-nodes", type=int, default=0)
    ap.add_argument("--skip-alone", action="store_true")
    ap.add_argument("--label", default="", help="a prefix of the raw files and rows (e.g. the code's commit)")
    ap.add_argument("--table", type=Path, nargs="+", help="only print the table of these raw files (<label>.json)")
    a = ap.parse_args()
    if a.table:
        print(HEADER)
        for path in a.table:
            doc = json.loads(path.read_text())
            print(row(path.stem, doc, doc["setting"]["gpus"]))
        return
    cluster, address = None, None
    if a.ray_nodes:
        from ray.cluster_utils import Cluster  # noqa: PLC0415 (the ray extra)

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0,
                                                                "object_store_memory": 80 * 1024 * 1024})
        for _ in range(a.ray_nodes):
            cluster.add_node(num_cpus=1, num_gpus=a.gpus // a.ray_nodes, object_store_memory=80 * 1024 * 1024)
        cluster.wait_for_nodes()
        address = cluster.address
    try:
        prefix = a.label + ("ray-" if address else "")
        together = run(prefix + "scheduler", a.targets, a.gpus, a.jobs, a.pace, a.budget, a.out, address)
        alone = None if a.skip_alone else run(prefix + "one-after-another", a.targets, a.gpus, 1, a.pace, a.budget,
                                              a.out, address)
    finally:
        if cluster is not None:
            cluster.shutdown()
    print(f"{a.targets} replayed targets, {a.gpus} simulated GPUs{' on Ray' if address else ''}, pace {a.pace:g}, "
          f"budget {a.budget}")
    print(HEADER)
    print(row(a.label + "one scheduler", together, a.gpus))
    if alone is not None:
        print(row(a.label + "one after another", alone, a.gpus))

if __name__ == "__main__":
    main()
