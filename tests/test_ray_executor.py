"""The Ray executor on a local Ray cluster started by the test (ray.cluster_utils.Cluster: several raylet
nodes on this machine, GPUs declared and simulated with COMPILEIQ_SIMULATE_GPUS, accelerator types as custom
resources): two GPUs of type SIM_SM90 on two nodes, one of type SIM_SM80, builds as tasks on the nodes' CPUs.
Checks: never two runs on one GPU worker at a time, every trial compared with the baseline of the GPU it ran
on, a killed GPU worker re-queues its trial, one TOML entry per simulated architecture, a host target tuned
once, and bad input refused before a cluster is joined."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest
import ray  # noqa: F401 (the test extra installs it: a missing Ray fails here, never skips)
from ray.cluster_utils import Cluster

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.results.toml_io import read_entries

from conftest import configure, host_suite, replay_args, run_cli

LANDSCAPE = Path(__file__).resolve().parents[1] / "benchmarks" / "landscapes" / "sample_small.json"
SMALL_STORE = 80 * 1024 * 1024  # object store per node: the tests move flag sets and results only


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "object_store_memory": SMALL_STORE})
    for accelerator in ("SIM_SM90", "SIM_SM90", "SIM_SM80"):
        c.add_node(
            num_cpus=1, num_gpus=1, resources={f"accelerator_type:{accelerator}": 1}, object_store_memory=SMALL_STORE
        )
    c.wait_for_nodes()
    yield c
    c.shutdown()


def _tune(cluster, *args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "COMPILEIQ_SIMULATE_GPUS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", "tune", *args, "--executor", "ray", "--ray-address", cluster.address],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.mark.cmake
@pytest.mark.ray
def test_each_gpu_type_gets_its_own_entry(cluster, tmp_path):
    out = tmp_path / "compileiq.toml"
    args = replay_args(tmp_path, "--budget", "10", "--workers", "2")[1:]  # less its "tune": _tune adds it
    proc = _tune(cluster, *args, cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    assert "4 nodes" in text and "3 GPUs" in text, text[:2000]
    assert (
        "GPU type 1 of 2: 2 x simulated SIM_SM90 (sm_90" in text
        and "GPU type 2 of 2: 1 x simulated SIM_SM80 (sm_80" in text
    )
    assert "every node of the cluster sees" in text
    entries = read_entries(out)
    assert sorted(e.arch for e in entries) == ["80", "90"], [e.arch for e in entries]
    assert all(e.target == "sample_small" and e.flags for e in entries)
    by_arch = {e.arch: e for e in entries}
    assert "SIM_SM80" in by_arch["80"].device and "SIM_SM90" in by_arch["90"].device  # each from its own GPU type
    # the sm_90 tune ran on its two GPUs in parallel, with a baseline each; sm_80's on its one GPU
    assert "benchmarks run on 2 GPUs of the cluster in parallel" in text
    assert text.count("each trial is compared with the baseline of the GPU it ran on") == 1


BENCH = """
import fcntl, json, os, signal, sys, time
start = time.time()
time.sleep(0.2)
with open(sys.argv[1], "a+") as fh:
    fcntl.flock(fh, fcntl.LOCK_EX)
    fh.seek(0)
    n = len(fh.read().splitlines())
    fh.write(json.dumps({"worker": os.environ.get("COMPILEIQ_WORKER"), "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"),
                         "start": start, "end": time.time(), "pid": os.getppid()}) + "\\n")
if n == int(sys.argv[2]):  # once: the GPU worker running this benchmark dies (a lost node, an OOM kill)
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(5)
print("time_ms=%.4f" % (100 + (n % 3) * 0.01))
"""


@pytest.mark.cmake
@pytest.mark.ray
@pytest.mark.slow
def test_host_target_builds_on_the_nodes_runs_on_the_gpu_workers_and_survives_a_killed_worker(
    cluster, host_example, tmp_path
):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    script, runs = tmp_path / "bench.py", tmp_path / "runs.jsonl"
    script.write_text(BENCH)
    kill_at = 12  # after both baselines (4 runs each): inside the search loop
    proc = _tune(
        cluster,
        "-S",
        str(host_example),
        "-B",
        str(build),
        "--target",
        "host_kernels",
        "--bench",
        f"{sys.executable} {script} {runs} {kill_at}",
        "--metric",
        "time_ms=([0-9.]+)",
        "--budget",
        "6",
        "--workers",
        "2",
        "--include-flags",
        "unroll_loops,no_math_errno,opt_level",
        cwd=tmp_path,
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    assert "re-queued" in text, text[-4000:]
    assert "is a CXX target: tuned once" in text
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    workers = {r["worker"] for r in records}
    assert len(workers) == 2 and None not in workers, workers  # the two SIM_SM90 GPUs, nothing else
    assert {r["gpu"] for r in records} == {"0"}  # each worker's own GPU, as Ray assigned it on its node
    for w in workers:  # never two runs on one GPU at once
        spans = sorted((r["start"], r["end"]) for r in records if r["worker"] == w)
        assert all(a[1] <= b[0] + 1e-3 for a, b in pairwise(spans)), f"overlapping runs on {w}"
    killed = records[kill_at]
    later = [r for r in records[kill_at + 1 :] if r["worker"] == killed["worker"]]
    assert later and all(r["pid"] != killed["pid"] for r in later), text[
        -3000:
    ]  # the worker was restarted by Ray and used again
    db = sqlite3.connect(build / "compileiq" / "trials.sqlite")
    rows = list(db.execute("SELECT idx, gpu, status FROM trials"))
    assert len(rows) == 6 and {r[0] for r in rows} == set(range(6)), rows  # nothing lost, the budget spent
    gpus = {r[1] for r in rows if r[0] > 0 and r[1]}
    assert len(gpus) == 2, rows  # trials ran on both GPUs, each compared with that GPU's baseline


@pytest.mark.cmake
@pytest.mark.ray
def test_bad_input_is_refused_before_a_cluster_is_joined(host_example, tmp_path):
    base = (
        "tune",
        "-S",
        str(host_example),
        "-B",
        str(tmp_path / "b"),
        "--target",
        "host_kernels",
        "--bench",
        "x",
        "--metric",
        "WALLTIME",
    )
    for extra, message in (
        (("--ray-address", "auto"), "--ray-address auto was given without --executor ray"),
        (("--executor", "ray", "--gpus", "0"), "with --executor ray the cluster's GPUs are used"),
        (("--executor", "ray", "--cuda-arch", "80"), "leave --cuda-arch out"),
        (("--executor", "ray", "--budget", "1"), "--budget 1 is too small"),
    ):
        proc = run_cli(*base, *extra)
        assert proc.returncode == 2 and message in proc.stderr, (extra, proc.stderr)
        assert "Ray cluster" not in proc.stdout
        assert not (tmp_path / "b").exists()


@pytest.mark.unit
def test_a_node_that_does_not_see_the_build_directory_is_named(tmp_path):
    from compileiq_cmake.execute.ray import _check_node

    token = tmp_path / "token"
    token.write_text("abc")
    assert _check_node(str(token), "abc", (sys.executable,))[1] == ""
    assert "cannot read" in _check_node(str(tmp_path / "elsewhere"), "abc", ())[1]
    assert "holds something else" in _check_node(str(token), "xyz", ())[1]
    assert "missing /no/such/nvcc" in _check_node(str(token), "abc", ("/no/such/nvcc",))[1]


@pytest.mark.ray
def test_without_ray_installed_the_line_says_how_to_get_it(monkeypatch):
    from compileiq_cmake.execute import ray as ray_executor

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(CompileIQError, match=r"pip install 'compileiq-cmake\[ray\]'"):
        ray_executor._ray()


@pytest.mark.ray
def test_a_suite_on_the_cluster_shares_one_set_of_gpu_workers_between_its_targets(cluster, tmp_path):
    """tune --suite --executor ray: three replayed targets in flight together on the cluster's three GPUs
    (two types): every target gets an entry per architecture, the suite's GPU slots are the cluster's three
    GPUs (one set of GPU workers serves every target: more would not fit on the GPUs Ray has), and each
    target's device seconds are counted."""
    (tmp_path / "src").mkdir()
    body = "".join(f'\n[[target]]\nname = "t{i}"\nreplay = "{LANDSCAPE}"\nbudget = 4\n' for i in range(3))
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[suite]\nsource_dir = "src"\nbuild_dir = "build"\noutput = "all.toml"\njson_summary = "suite.json"\n' + body
    )
    env = {**os.environ, "COMPILEIQ_SIMULATE_GPUS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "compileiq_cmake",
            "tune",
            "--suite",
            str(suite),
            "--seed",
            "3",
            "--executor",
            "ray",
            "--ray-address",
            cluster.address,
            "--suite-jobs",
            "3",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    doc = json.loads((tmp_path / "suite.json").read_text())
    assert doc["scheduling"]["jobs"] == 3
    gpus = [n for n in doc["scheduling"]["busy_seconds"] if n.startswith("gpu:")]
    assert len(gpus) == 3, doc["scheduling"]
    assert all(t["status"] in ("tuned", "no gain") and t["device_seconds"] > 0 for t in doc["targets"]), doc["targets"]
    entries = read_entries(tmp_path / "all.toml")
    tuned = {t["target"] for t in doc["targets"] if t["status"] == "tuned"}
    assert {(e.target, e.arch) for e in entries if e.target in tuned} >= {(t, "90") for t in tuned}
    assert "[t0] " in text and "[t2] " in text


@pytest.mark.cmake
@pytest.mark.ray
@pytest.mark.slow
def test_a_suite_of_real_targets_on_the_cluster_keeps_its_shared_setup(cluster, host_example, tmp_path):
    """Issue 38: the shared setup of a suite works on Ray too: two real host targets of one project, tuned as
    one suite with --executor ray, share one configure per variant tree and one baseline build (the driver's,
    on every core), and each target's runs are on the cluster's GPU workers (device seconds counted)."""
    each = 'metric = "time_ms=([0-9.eE+-]+)"\nbudget = 3\ninclude_flags = ["unroll_loops", "opt_level"]\n'
    build, suite = host_suite(host_example, tmp_path, ("host_kernels", "host_other"), each)
    proc = _tune(cluster, "--suite", str(suite), "--suite-jobs", "2", "--workers", "1", cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    doc = json.loads((tmp_path / "suite.json").read_text())
    builds = doc["scheduling"]["baseline_builds"]
    assert len(builds) == 1 and builds[0]["ok"], doc["scheduling"]
    assert set(builds[0]["built"]) == {"host_kernels", "host_other"}, builds
    pool = build / "compileiq" / "suite" / "trees"
    configured = [p.name for p in pool.iterdir() if (p / "CMakeCache.txt").is_file()]
    assert doc["scheduling"]["trees"]["configures"] == len(configured), (doc["scheduling"], configured)
    assert all(
        t["status"] in ("tuned", "no gain") and t["trials"] >= 1 and t["device_seconds"] > 0 for t in doc["targets"]
    ), doc["targets"]
    assert "[host_kernels] " in text and "[host_other] " in text
    assert "the suite's baselines: 2 targets and their benchmarks built once" in text, text[-4000:]
