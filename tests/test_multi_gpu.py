"""Several GPUs of one host (simulated: COMPILEIQ_SIMULATE_GPUS, no device behind them): benchmarks run in
parallel, one run per GPU at a time, never two on one GPU; the baseline is measured on every GPU and each
trial is compared with the baseline of the GPU it ran on."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from itertools import pairwise

import pytest

from compileiq_cmake.measure.gpu import visible_gpus
from compileiq_cmake.model.errors import CompileIQError

from conftest import configure, replay_args, run_cli

BENCH = """
import fcntl, json, os, random, sys, time
start = time.time()
time.sleep(0.15)
with open(sys.argv[1], "a+") as fh:
    fcntl.flock(fh, fcntl.LOCK_EX)
    fh.write(json.dumps({"gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": start, "end": time.time(),
                         "cwd": os.getcwd()}) + "\\n")
    fh.seek(0)
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")  # spread of N%: each GPU's runs cycle through +0, +N/2, +N%
    n = sum(json.loads(line)["gpu"] == gpu for line in fh.read().splitlines())  # (and a little jitter); per
    # GPU, since the GPUs measure their baselines at the same time (a global count could give one GPU a flat run)
print("time_ms=%.4f" % (100 + float(sys.argv[2]) * ((n % 3) / 2 + random.random() / 10)))
"""


@pytest.mark.unit
def test_simulated_gpus_and_selection():
    env = {"COMPILEIQ_SIMULATE_GPUS": "3"}
    assert [g.device for g in visible_gpus(None, env)] == ["0", "1", "2"]
    assert [g.device for g in visible_gpus("2,0", env)] == ["2", "0"]
    for bad in ("0,0", "3", "x"):
        with pytest.raises(CompileIQError, match="--gpus"):
            visible_gpus(bad, env)


@pytest.mark.cmake
@pytest.mark.slow
@pytest.mark.parametrize("noise", [0, 8], ids=["quiet", "noisy-paired"])
def test_benchmarks_run_in_parallel_one_per_gpu(host_example, tmp_path, noise):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    script, runs = tmp_path / "bench.py", tmp_path / "runs.jsonl"
    script.write_text(BENCH)
    env = {**os.environ, "COMPILEIQ_SIMULATE_GPUS": "2"}
    import subprocess
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "compileiq_cmake",
            "tune",
            "-S",
            str(host_example),
            "-B",
            str(build),
            "--target",
            "host_kernels",
            "--bench",
            f"{sys.executable} {script} {runs} {noise}",
            "--metric",
            "time_ms=([0-9.]+)",
            "--budget",
            "7",
            "--workers",
            "2",
            "--include-flags",
            "unroll_loops,no_math_errno,opt_level",
            "--max-repeats",
            "4",
            "--max-rounds",
            "8",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines, search_end = [], None
    for line in proc.stdout:  # when the search ended: its last progress line (the finalists' runs use other trees;
        lines.append(line)  # "validation:" is printed only after the interleaved rounds have run)
        if search_end is None and line.startswith("[  7/7]"):
            search_end = time.time()
    proc.wait(timeout=900)
    out = "".join(lines)
    assert proc.returncode == 0, out[-3000:]
    assert "benchmarks run on 2 GPUs in parallel" in out and "baseline on GPU 1 (simulated GPU)" in out, out[-3000:]
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    assert {r["gpu"] for r in records} == {"0", "1"}
    for gpu in ("0", "1"):  # never two runs on one GPU at once
        spans = sorted((r["start"], r["end"]) for r in records if r["gpu"] == gpu)
        assert all(a[1] <= b[0] + 1e-3 for a, b in pairwise(spans)), f"overlapping runs on GPU {gpu}"
    overlaps = sum(
        1
        for a in records
        for b in records
        if a["gpu"] == "0" and b["gpu"] == "1" and a["start"] < b["end"] and b["start"] < a["end"]
    )
    assert overlaps > 0, "the two GPUs were never used at the same time"
    db = sqlite3.connect(build / "compileiq" / "trials.sqlite")
    gpus = {row[0] for row in db.execute("SELECT gpu FROM trials WHERE same_code_as IS NULL AND idx > 0")}
    assert gpus <= {"0", "1"} and len(gpus) == 2, gpus
    assert " on GPU 1" in out
    if noise > 1:  # on a noisy machine: each GPU has its own tree of the project's build, run next to its trials
        assert "measured next to runs of the project's own build on the same GPU" in out, out[-3000:]
        trees = {
            (r["gpu"], os.path.basename(r["cwd"])) for r in records if search_end is not None and r["end"] < search_end
        }
        refs = {tree for gpu, tree in trees if tree in ("worker-2", "worker-3")}
        assert refs == {"worker-2", "worker-3"}, trees
        assert all(len({g for g, t in trees if t == ref}) == 1 for ref in refs), trees  # one GPU per reference tree


@pytest.mark.cmake
def test_gpus_on_a_host_target_is_refused(host_example, tmp_path):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    proc = run_cli(
        "tune",
        "-S",
        str(host_example),
        "-B",
        str(build),
        "--target",
        "host_kernels",
        "--bench",
        "host_kernels --n 64",
        "--metric",
        "WALLTIME",
        "--gpus",
        "0",
    )
    assert proc.returncode == 2 and "--gpus 0 was given but target 'host_kernels' is a CXX target" in proc.stderr


@pytest.mark.cmake
def test_the_winner_is_confirmed_on_every_other_gpu(tmp_path):
    """Validation and ablation run on the first GPU; the winner is then validated on each other GPU before it
    is written (replay: a recorded landscape answers builds and runs, on 2 simulated GPUs)."""
    import subprocess

    from compileiq_cmake.results.toml_io import read_entries

    out = tmp_path / "compileiq.toml"
    proc = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *replay_args(tmp_path, "--budget", "25", "--workers", "2")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COMPILEIQ_SIMULATE_GPUS": "2"},
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-3000:]
    assert "baseline on GPU 1 (simulated GPU)" in text and "confirmed on GPU 1 (simulated GPU)" in text, text[-3000:]
    assert read_entries(out)[0].replay
