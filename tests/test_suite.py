"""Issue 24 (first part): `tune --suite`: many targets in one command with one time box, one TOML, one suite
summary and report, resumable as a whole; bad suite files refused in one line."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from compileiq_cmake.model.errors import UsageError
from compileiq_cmake.model.events import PHASES
from compileiq_cmake.model.suite import SuiteTarget, load_suite
from compileiq_cmake.tune.suite import state_path
from compileiq_cmake.tune.suite_schedule import allot

from conftest import REPO, one_line_error, run_cli

SAMPLE = REPO / "benchmarks" / "landscapes" / "sample_small.json"
BLACKSCHOLES = REPO / "benchmarks" / "landscapes" / "blackscholes.json"


def _suite(tmp_path: Path, body: str) -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    path = tmp_path / "suite.toml"
    path.write_text(
        '[suite]\nsource_dir = "src"\nbuild_dir = "build"\noutput = "all.toml"\njson_summary = "suite.json"\n' + body
    )
    return path


TWO = f'''
[[target]]
name = "small"
replay = "{SAMPLE}"
budget = 6

[[target]]
name = "bs"
replay = "{BLACKSCHOLES}"
budget = 6
priority = 3

[[target]]
name = "later"
replay = "{SAMPLE}"
exclude = true
'''


@pytest.mark.unit
def test_a_suite_tunes_its_targets_in_one_command_into_one_toml_summary_and_report(tmp_path):
    suite = _suite(tmp_path, TWO)
    proc = run_cli("tune", "--suite", str(suite), "--seed", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    out = proc.stdout
    assert out.index("target 1 of 2: bs") < out.index("target 2 of 2: small")  # priority first
    doc = json.loads((tmp_path / "suite.json").read_text())
    assert doc["schema"] == "compileiq-suite/1" and [t["target"] for t in doc["targets"]] == ["small", "bs", "later"]
    assert [t["status"] for t in doc["targets"]][2] == "excluded"
    ran = [t for t in doc["targets"] if t["status"] != "excluded"]
    assert all(t["trials"] == 6 and t["status"] in ("tuned", "no gain") for t in ran)
    assert doc["wins"] + doc["ties"] == 2 and doc["losses"] == 0 and doc["geomean_speedup"] >= 1.0
    for t in ran:  # issue 38: where each target's seconds went, by stage
        reached = list(t["stages"])  # the phases it reached, in order (model.events.PHASES)
        assert reached[:4] == ["setup", "baseline", "search", "validation"] and reached[-1] == "publish", reached
        assert reached == [p for p in PHASES if p in reached], reached
        assert all(s >= 0 for s in t["stages"].values()) and sum(t["stages"].values()) <= t["seconds"] + 0.5, t
    entries = tomllib.loads((tmp_path / "all.toml").read_text())["entry"]
    assert {e["target"] for e in entries} == {t["target"] for t in ran if t["status"] == "tuned"}
    busy = max(t["started"] + t["seconds"] for t in ran) - min(t["started"] for t in ran)  # they overlap here
    assert 0 <= doc["overhead_seconds"] <= doc["wall_seconds"] - busy + 0.01, doc  # the suite's own seconds
    assert all(0 <= t["started"] <= doc["wall_seconds"] for t in ran)  # (two in flight may start in the same ms)
    html = (tmp_path / "build" / "compileiq" / "suite-report.html").read_text()
    assert 'id="targets"' in html and "<code>bs</code>" in html and "excluded" in html
    assert "setup " in html and "baseline " in html and "validation " in html and 'id="overhead"' in html
    assert "geometric mean speedup" in out and not state_path(load_suite(suite), tmp_path / "build").exists()


@pytest.mark.unit
def test_a_killed_suite_keeps_its_finished_targets_and_a_changed_project_tunes_them_again(tmp_path):
    """(The resumed run one target at a time: the path without the shared slots and trees, its report included.)"""
    suite = _suite(tmp_path, TWO)
    loaded = load_suite(suite)
    state = state_path(loaded, tmp_path / "build")
    proc = run_cli("tune", "--suite", str(suite), "--seed", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = json.loads((tmp_path / "suite.json").read_text())
    # as a kill after the first target leaves it: the state file with "bs" finished
    from compileiq_cmake.tune import suite as suite_mod

    bs = next(t for t in first["targets"] if t["target"] == "bs")
    outcome = suite_mod.TargetOutcome(
        **{**bs, "ci": tuple(bs["ci"]) if bs["ci"] else None, "flags": tuple(bs["flags"])}
    )
    stamp = suite_mod.tree_stamp(tmp_path / "src", (tmp_path / "build",))
    suite_mod._save_state(state, {"bs": outcome}, stamp)
    again = run_cli("tune", "--suite", str(suite), "--seed", "1", "--suite-jobs", "1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "suite: bs: finished in an earlier run" in again.stdout and "target 2 of 2: small" in again.stdout
    assert "target 1 of 2: bs" not in again.stdout
    doc = json.loads((tmp_path / "suite.json").read_text())
    assert next(t for t in doc["targets"] if t["target"] == "bs")["resumed"] is True
    assert 'id="targets"' in (tmp_path / "build" / "compileiq" / "suite-report.html").read_text()
    # a file of the project changed since: nothing is kept
    suite_mod._save_state(state, {"bs": outcome}, stamp)
    (tmp_path / "src" / "new.cpp").write_text("int x;\n")
    third = run_cli("tune", "--suite", str(suite), "--seed", "1", cwd=tmp_path)
    assert third.returncode == 0 and "the project changed since" in third.stdout and "target 1 of 2: bs" in third.stdout


@pytest.mark.unit
def test_a_killed_suite_whose_toml_is_in_the_source_tree_keeps_its_finished_targets(tmp_path):
    """Issue 38: the suite's TOML in the source tree (the default): each finished target's entry changed a file
    the change stamp hashed, so a killed suite's resume said "the project changed" and tuned them again. Its
    own outputs (the TOML, its lock, a write's temporary files, the summary) are no part of the stamp."""
    body = TWO.replace('output = "all.toml"', "")
    (tmp_path / "src").mkdir()
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[suite]\nsource_dir = "src"\nbuild_dir = "build"\noutput = "src/compileiq.toml"\n'
        'json_summary = "src/suite.json"\n' + body
    )
    from compileiq_cmake.tune import suite as suite_mod

    outputs = (tmp_path / "src" / "compileiq.toml", tmp_path / "src" / "suite.json")
    before = suite_mod.tree_stamp(tmp_path / "src", (tmp_path / "build",), outputs)
    proc = run_cli("tune", "--suite", str(suite), "--seed", "1", "--suite-jobs", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "src" / "compileiq.toml").is_file() and (tmp_path / "src" / "suite.json").is_file()
    (tmp_path / "src" / ".compileiq-compileiq.toml-x1.toml").write_text("half written")  # a write killed midway
    assert suite_mod.tree_stamp(tmp_path / "src", (tmp_path / "build",), outputs) == before
    assert suite_mod.tree_stamp(tmp_path / "src", (tmp_path / "build",)) != before  # without: the outputs count
    first = json.loads((tmp_path / "src" / "suite.json").read_text())
    bs = next(t for t in first["targets"] if t["target"] == "bs")
    outcome = suite_mod.TargetOutcome(
        **{**bs, "ci": tuple(bs["ci"]) if bs["ci"] else None, "flags": tuple(bs["flags"])}
    )
    suite_mod._save_state(state_path(load_suite(suite), tmp_path / "build"), {"bs": outcome}, before)  # killed after bs
    again = run_cli("tune", "--suite", str(suite), "--seed", "1", "--suite-jobs", "1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "the project changed since" not in again.stdout, again.stdout
    assert "suite: bs: finished in an earlier run" in again.stdout and "target 1 of 2: bs" not in again.stdout


@pytest.mark.unit
def test_the_time_limit_is_shared_by_priority_keeping_every_floor():
    a, b, c = (SuiteTarget(n, {}, priority=p) for n, p in (("a", 3.0), ("b", 1.0), ("c", 1.0)))
    assert allot(500.0, a, [b, c], 60.0) == pytest.approx(300.0)
    assert allot(200.0, a, [b, c], 60.0) == pytest.approx(80.0)  # 120 of a 3/5 share, but b and c keep 60 each
    assert allot(100.0, b, [], 60.0) == pytest.approx(100.0)
    assert allot(500.0, SuiteTarget("d", {}, min_seconds=400.0), [b], 60.0) == pytest.approx(400.0)  # its own floor


@pytest.mark.unit
@pytest.mark.parametrize(
    "body,needle",
    [
        ('[[target]]\nbenchmark = "x"\n', "'name' (the CMake target) is required"),
        ('[[target]]\nname = "a"\nbudgett = 3\n', "unknown key 'budgett'"),
        ('[[target]]\nname = "a"\nbudget = "many"\n', "'budget' must be an integer"),
        ('[[target]]\nname = "a"\n[[target]]\nname = "a"\n', "listed twice"),
        ('[[target]]\nname = "a"\nexclude = true\n', "every target is excluded"),
        ('[[target]]\nname = "a"\npriority = 0\n', "'priority' must be a finite number > 0"),
        ('[[target]]\nname = "a"\npriority = nan\n', "'priority' must be a finite number > 0"),
        ('[[target]]\nname = "a"\npriority = inf\n', "'priority' must be a finite number > 0"),
        ('time_limit = nan\n[[target]]\nname = "a"\n', "'time_limit' must be a finite number > 0"),
        ('min_seconds = -1000\n[[target]]\nname = "a"\n', "'min_seconds' must be a finite number >= 0"),
        ('[[target]]\nname = "a"\nmin_seconds = -5\n', "'min_seconds' must be a finite number >= 0"),
        ("x = " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
        ("", "no [[target]] table"),
        ('[[target]]\nname = "a"\nworkloads = [1, 2]\n', "'workloads' must be a list of strings"),
    ],
)
def test_a_bad_suite_file_is_refused_in_one_line_before_anything_runs(tmp_path, body, needle):
    suite = _suite(tmp_path, body)
    with pytest.raises(UsageError, match=needle.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        load_suite(suite)
    proc = run_cli("tune", "--suite", str(suite), cwd=tmp_path)
    one_line_error(proc.returncode, proc.stdout, proc.stderr, needle)
    assert not (tmp_path / "build").exists() and not (tmp_path / "all.toml").exists()


@pytest.mark.unit
def test_suite_options_go_through_the_tunes_own_checks_and_limits_below_the_floors_are_refused(tmp_path):
    suite = _suite(tmp_path, f'[[target]]\nname = "a"\nreplay = "{SAMPLE}"\nbudget = 1\n')
    proc = run_cli("tune", "--suite", str(suite), cwd=tmp_path)
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "target a", "--budget")
    suite = _suite(tmp_path, TWO)
    proc = run_cli("tune", "--suite", str(suite), "--time-limit", "90", "--suite-jobs", "1", cwd=tmp_path)
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "less than the floors", "120 s")
    proc = run_cli("tune", "--suite", str(suite), "--time-limit", "50", cwd=tmp_path)  # two at a time: 60 s
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "less than the floors", "60 s with 2 at a time")
    proc = run_cli("tune", "--suite", str(suite), "--suite-jobs", "0", cwd=tmp_path)
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "--suite-jobs 0")
    proc = run_cli("tune", "--suite", str(suite), "--json-summary", str(suite / "s.json"), cwd=tmp_path)
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "--json-summary", "is not a directory")
    proc = run_cli("tune", "--suite", str(suite), "--target", "x", cwd=tmp_path)
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "--target and --suite")
    proc = run_cli("tune", "-S", str(tmp_path), cwd=tmp_path)
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "-B", "--target", "--suite")
    assert not (tmp_path / "build").exists()


@pytest.mark.cmake
def test_the_cmake_umbrella_target_tunes_every_compileiq_tune_call_as_one_suite(host_example, tmp_path):
    """`cmake --build build --target compileiq_tune`: every compileiq_tune() of the project in one suite job
    (one command, one suite summary and report, one TOML), generator expressions resolved."""
    from conftest import cmake_dir, configure

    lists = host_example / "CMakeLists.txt"
    text = lists.read_text().replace("BUDGET 12", "BUDGET 3").replace('WORKLOADS "--n 768" "--n 1024"', "")
    for name in ("host_kernels_b", "host_kernels_c"):
        text += (
            f"add_executable({name} src/main.cpp)\n"
            "if(compileiq_cmake_FOUND)\n"
            f"  compileiq_tune({name} BENCHMARK $<TARGET_FILE:{name}> --n 512\n"
            '    METRIC "time_ms=([0-9.eE+-]+)" PASS_REGEX "PASS" BUDGET 3)\nendif()\n'
        )
    lists.write_text(text)
    build = tmp_path / "build"
    proc = configure(
        host_example, build, "-DCMAKE_BUILD_TYPE=Release", "-DCOMPILEIQ_TUNE=ON", f"-Dcompileiq_cmake_DIR={cmake_dir()}"
    )
    assert proc.returncode == 0, proc.stderr
    args = (build / "compileiq_suite.args").read_text()
    assert args.count("[target]") == 3 and "$<" not in args and "--target\nhost_kernels_b" in args
    import subprocess

    tune = subprocess.run(
        ["cmake", "--build", str(build), "--target", "compileiq_tune"], capture_output=True, text=True, timeout=900
    )
    assert tune.returncode == 0, tune.stdout[-3000:] + tune.stderr[-3000:]
    out = tune.stdout
    assert "target 1 of 3: host_kernels" in out and "target 3 of 3: host_kernels_c" in out
    assert "suite: 3 targets in" in out and (build / "compileiq" / "suite-report.html").is_file()
    entries = tomllib.loads((host_example / "compileiq.toml").read_text())["entry"]
    assert {e["target"] for e in entries} <= {"host_kernels", "host_kernels_b", "host_kernels_c"} and entries
    # two targets in flight (no GPU: the default --suite-jobs): the third borrows the trees one of them gave back
    suite_dir = build / "compileiq" / "suite"
    pool = sorted(p.name for p in (suite_dir / "trees").glob("tree-*") if (p / "CMakeCache.txt").is_file())
    lent = re.search(
        r"variant trees: (\d+) configured for the suite \((\d+) configures in this run\), "
        r"lent again (\d+) times",
        out,
    )
    assert lent and int(lent.group(1)) == len(pool) and int(lent.group(3)) >= 1, out[-2000:]
    assert int(lent.group(2)) == len(pool) + 1, out[-2000:]  # each tree once, and the project's own build once
    assert not list(suite_dir.glob("*/worker-*")), "a target in flight configured trees of its own"
    assert list(suite_dir.glob("*/logs/tree-*-configure.log")), "the borrower's logs"


@pytest.mark.unit
def test_a_suite_target_stops_early_only_when_its_prior_and_its_trials_both_say_nothing_is_to_be_gained(monkeypatch):
    from types import SimpleNamespace

    from compileiq_cmake.search.prior import Prediction, SpacePrior
    from compileiq_cmake.tune import search_loop

    losses = {"t1": -0.001, "t2": 0.02, "t3": 0.0, "t4": -0.002, "t5": 0.01, "t6": 0.0}
    monkeypatch.setattr(search_loop, "loss", lambda t, b, lower: losses[t.name])
    trials = [SimpleNamespace(name=n, valid=True) for n in losses]
    base = SimpleNamespace(base_of=lambda t: None, min_gain=0.01)
    flat = SpacePrior({(0, 1): Prediction(-0.01, 0.01, 0.0, 3.0)}, "prior")
    hopeful = SpacePrior({(0, 1): Prediction(0.2, 0.02, 0.0, 3.0)}, "prior", ((1,),))
    blank = SpacePrior({}, "prior")
    assert search_loop.nothing_to_gain(6, flat, trials, base)
    assert not search_loop.nothing_to_gain(6, flat, trials[:5], base)  # too few trials yet
    assert not search_loop.nothing_to_gain(0, flat, trials, base)  # off (a single tune)
    assert not search_loop.nothing_to_gain(6, hopeful, trials, base)  # the prior predicts a gain
    assert not search_loop.nothing_to_gain(6, blank, trials, base)  # a prior that knows nothing says nothing
    assert not search_loop.nothing_to_gain(6, None, trials, base)
    losses["t4"] = -0.05  # a trial 5% faster: there is something
    assert not search_loop.nothing_to_gain(6, flat, trials, base)


@pytest.mark.unit
def test_a_freed_slot_goes_to_the_waiter_ranked_first_and_never_to_more_than_its_capacity():
    """execute.shared.SharedSlots: while one owner holds the GPU, a low- and a high-ranked owner wait; the
    high-ranked one gets it next although it came later; at no time do two runs hold one GPU."""
    import threading
    import time as _time

    from compileiq_cmake.execute.shared import SharedSlots

    ranks = {"first": 0.0, "low": 1.0, "high": 5.0}
    slots = SharedSlots({}, ranks.__getitem__)
    order, holding, most = [], [0], [0]
    lock = threading.Lock()

    def run(owner: str, seconds: float) -> None:
        with slots.hold("gpu:0", owner):
            with lock:
                holding[0] += 1
                most[0] = max(most[0], holding[0])
                order.append(owner)
            _time.sleep(seconds)
            with lock:
                holding[0] -= 1

    first = threading.Thread(target=run, args=("first", 0.3))
    first.start()
    _time.sleep(0.05)
    low = threading.Thread(target=run, args=("low", 0.01))
    low.start()
    _time.sleep(0.05)
    high = threading.Thread(target=run, args=("high", 0.01))
    high.start()
    for t in (first, low, high):
        t.join()
    assert order == ["first", "high", "low"] and most[0] == 1
    from compileiq_cmake.tune.suite_schedule import Scheduler

    assert Scheduler(build_slots=6).slots.capacity("build") == 6  # the suite's --workers, shared by every target
    assert slots.use["gpu:0"].runs == {"first": 1, "low": 1, "high": 1}
    assert slots.device_use("first")[0] >= 0.3 > slots.device_use("high")[0]


@pytest.mark.unit
def test_each_target_in_flight_runs_on_its_least_used_part_of_the_gpus():
    """execute.shared.Lease.place: with 3 targets in flight on 4 GPUs each gets one GPU, none lent twice while
    a free one is left; a GPU given back goes to the next target only after the GPUs that ran less; 2 in flight
    on 4 GPUs get 2 each; one target alone, or one GPU, keeps every GPU (a plain tune's multi-GPU runs)."""
    from compileiq_cmake.execute.shared import Lease, SharedSlots
    from compileiq_cmake.measure.gpu import GpuSlot

    gpus = tuple(GpuSlot(i, str(i), "sim") for i in range(4))
    slots = SharedSlots({})
    lent = {o: Lease(slots, o, sharing=3).place(gpus) for o in ("a", "b", "c")}
    assert [[g.device for g in lent[o]] for o in "abc"] == [["0"], ["1"], ["2"]]
    with slots.hold("gpu:3", "c"):  # GPU 3 ran something (more busy seconds than GPU 0, which never ran)
        pass
    Lease(slots, "a", sharing=3).end()
    assert [g.device for g in Lease(slots, "d", sharing=3).place(gpus)] == ["0"]
    assert [g.device for g in Lease(slots, "e", sharing=3).place(gpus)] == ["3"]  # the only one lent to nobody
    two = SharedSlots({})
    assert [[g.device for g in Lease(two, o, sharing=2).place(gpus)] for o in "xy"] == [["0", "1"], ["2", "3"]]
    assert Lease(SharedSlots({}), "alone").place(gpus) == gpus
    assert Lease(SharedSlots({}), "one", sharing=5).place(gpus[:1]) == gpus[:1]


@pytest.mark.unit
def test_targets_in_flight_together_share_the_simulated_gpus_through_one_scheduler(tmp_path, monkeypatch):
    """Four replayed targets, three at a time, on two simulated GPUs with runs that take time (a replay
    pace): the targets overlap in time (the suite takes less than their sum), each GPU is never held by two
    runs at once (its busy seconds fit in the wall time), every target's device seconds and the GPUs' idle
    shares are in the summary and the report, and each target keeps its own state folder."""
    body = "".join(
        f'\n[[target]]\nname = "t{i}"\nreplay = "{SAMPLE if i % 2 else BLACKSCHOLES}"\nbudget = 6\n' for i in range(4)
    )
    suite = _suite(tmp_path, body)
    monkeypatch.setenv("COMPILEIQ_SIMULATE_GPUS", "2")
    monkeypatch.setenv("COMPILEIQ_REPLAY_PACE", "20")
    proc = run_cli("tune", "--suite", str(suite), "--seed", "2", "--suite-jobs", "3", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    doc = json.loads((tmp_path / "suite.json").read_text())
    sched = doc["scheduling"]
    assert sched["jobs"] == 3 and set(sched["idle_share"]) == {"gpu:0", "gpu:1"}, sched
    assert all(0.0 <= v < 1.0 for v in sched["idle_share"].values())
    # 4 targets, 3 in flight: the GPUs' idle share while the fourth waited, from the spans each GPU was held
    assert set(sched["idle_share_queued"]) == {"gpu:0", "gpu:1"} and all(
        0.0 <= v < 1.0 for v in sched["idle_share_queued"].values()
    ), sched
    assert "while targets waited for a place in flight" in proc.stdout
    assert all(b <= doc["wall_seconds"] + 0.5 for n, b in sched["busy_seconds"].items() if n != "build"), sched
    ran = doc["targets"]
    assert all(t["status"] in ("tuned", "no gain") and t["trials"] == 6 and t["device_seconds"] > 0 for t in ran)
    spans = sorted((t["started"], t["started"] + t["seconds"]) for t in ran)  # the tool's own timeline
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False)), spans  # in flight together
    for i in range(4):
        assert (tmp_path / "build" / "compileiq" / "suite" / f"t{i}" / "trials.sqlite").is_file()
    assert "[t0] " in proc.stdout and "3 targets at a time" in proc.stdout
    # each on its part, said once (the fourth shares the GPUs with the targets still in flight when it starts, or
    # starts alone, with both, if the other three ended at once)
    assert proc.stdout.count("1 GPU of the 2 for this target's runs") >= 3, proc.stdout[-3000:]
    html = (tmp_path / "build" / "compileiq" / "suite-report.html").read_text()
    assert 'id="devices"' in html and "gpu:1" in html


@pytest.mark.unit
def test_a_suite_killed_with_sigkill_mid_way_resumes_its_targets_in_flight_from_their_trials(tmp_path):
    """Three replayed targets, two at a time, runs that take time: SIGKILL once both targets in flight have
    finished trials; the rerun restores each one's finished trials from its own store (not measured again)
    and completes the suite."""
    import os
    import signal
    import subprocess
    import sys
    import time as _time

    body = "".join(f'\n[[target]]\nname = "k{i}"\nreplay = "{BLACKSCHOLES}"\nbudget = 8\n' for i in range(3))
    suite = _suite(tmp_path, body)
    env = {**os.environ, "COMPILEIQ_REPLAY_PACE": "15"}
    argv = [sys.executable, "-m", "compileiq_cmake", "tune", "--suite", str(suite), "--seed", "4", "--suite-jobs", "2"]
    log = tmp_path / "first.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            argv, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = _time.monotonic() + 300
        while _time.monotonic() < deadline and proc.poll() is None:
            text = log.read_text()
            if "[k0] [  3/" in text and "[k1] [  3/" in text:
                break
            _time.sleep(0.05)
        assert proc.poll() is None, "the suite ended before the kill: " + log.read_text()[-2000:]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    again = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr
    for name in ("k0", "k1"):
        line = next((ln for ln in again.stdout.splitlines() if ln.startswith(f"compileiq: [{name}] resuming: ")), "")
        assert line and int(line.split("resuming: ")[1].split()[0]) >= 3, again.stdout[:3000]
    assert "compileiq: [k2] resuming" not in again.stdout  # it had not started
    doc = json.loads((tmp_path / "suite.json").read_text())
    assert all(t["status"] in ("tuned", "no gain") for t in doc["targets"]), doc["targets"]


@pytest.mark.unit
def test_the_scheduler_ranks_by_expected_gain_per_second_after_each_targets_floor():
    """Within its floor a target comes first; after it, the prior's prediction for its first trials or the
    best its search has shown (the larger), times its priority, per second of its runs."""
    from compileiq_cmake.model.events import Event, PriorPrediction, SearchProgress
    from compileiq_cmake.tune.suite_schedule import Scheduler

    s = Scheduler()
    for name, priority, floor in (
        ("promising", 1.0, 0.0),
        ("flat", 1.0, 0.0),
        ("urgent", 2.0, 0.0),
        ("new", 1.0, 3600.0),
    ):
        s.join(SuiteTarget(name, {}, priority=priority), floor)
    s.heard("promising", Event("info", "prior: ...", data={"predicted_speedup": 1.5}, payload=PriorPrediction(1.5)))
    s.heard("flat", Event("progress", "[  3/30] ...", data={"best": 1.01}, payload=SearchProgress(1.01)))
    s.heard("urgent", Event("progress", "[  3/30] ...", data={"best": 1.01}, payload=SearchProgress(1.01)))
    assert s.rank("new") > s.rank("promising") > s.rank("urgent") > s.rank("flat") > 0
    before = s.rank("flat")
    s.heard("flat", Event("progress", "[  9/30] best 9.000x", data={"best": 9.0}))  # no typed payload: no move
    assert s.rank("flat") == pytest.approx(before)
    s.heard(
        "flat", Event("progress", "[  9/30] ...", data={"best": 2.0}, payload=SearchProgress(2.0))
    )  # its search found a big one
    assert s.rank("flat") > s.rank("promising")


@pytest.mark.unit
def test_the_scheduler_learns_how_long_a_targets_setup_takes_from_its_first_trial_line():
    """The seconds from a target's start to its first trial's line (setup and baseline), median over the
    targets: the suite gives no target less than 1.5 x that (it would only overrun the box)."""
    import time as _time

    from compileiq_cmake.model.events import Event, SearchProgress
    from compileiq_cmake.tune.suite_schedule import Scheduler

    s = Scheduler()
    assert s.setup_estimate() is None
    s.join(SuiteTarget("a", {}), 0.0)
    _time.sleep(0.05)
    s.heard("a", Event("progress", "[  1/30] ...", data={"best": 1.0}, payload=SearchProgress(1.0)))
    s.heard(
        "a", Event("progress", "[  2/30] ...", data={"best": 1.1}, payload=SearchProgress(1.1))
    )  # only the first line counts
    assert 0.05 <= s.setup_estimate() < 1.0


@pytest.mark.unit
def test_compileiq_tune_calls_of_one_suite_on_ray_and_here_at_once_are_refused_in_one_line(tmp_path):
    """The CMake route's suite (--suite-args): every call on one Ray cluster, or none; a mix is one line,
    exit 2, before a cluster is joined."""
    (tmp_path / "src").mkdir()
    blocks = []
    for name, ray in (("a", True), ("b", False)):
        argv = ["-S", str(tmp_path / "src"), "-B", str(tmp_path / "build"), "--target", name, "--replay", str(SAMPLE)]
        blocks.append("[target]\n" + "\n".join(argv + (["--executor", "ray"] if ray else [])) + "\n")
    args = tmp_path / "compileiq_suite.args"
    args.write_text("".join(blocks))
    proc = run_cli("tune", f"--suite-args={args}", cwd=tmp_path)
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "all on one Ray cluster")
    assert not (tmp_path / "build").exists()


@pytest.mark.cmake
def test_a_suite_rerun_tunes_again_only_the_targets_whose_identity_changed(host_example, tmp_path):
    """Issue 38: a suite rerun after editing one target's source re-tuned every target (and replaced an
    unchanged one's 18.55x entry with 10.24x). A target whose entry was tuned on exactly what it is now
    (sources with their headers, compile flags, compiler, build type, device) is not tuned again, its entry
    left byte for byte; the edited one is."""
    from compileiq_cmake.model.spec import MetricSpec, TuneSpec
    from compileiq_cmake.results.schema import FlagsEntry
    from compileiq_cmake.results.toml_io import write_entry
    from compileiq_cmake.tune.setup import setup

    from conftest import host_suite

    build, suite = host_suite(
        host_example, tmp_path, ("host_kernels", "host_other"), 'metric = "time_ms=([0-9.eE+-]+)"\nbudget = 2\n'
    )
    output = host_example / "compileiq.toml"
    for name in ("host_kernels", "host_other"):  # as an earlier run of the suite wrote them
        spec = TuneSpec(
            source_dir=host_example,
            build_dir=build,
            target=name,
            benchmark=(name, "--n", "256"),
            metric=MetricSpec.parse("time_ms=([0-9.eE+-]+)", True),
            output=output,
            workers=1,
        )
        ts = setup(spec, lambda line: None)
        write_entry(
            output,
            FlagsEntry(
                target=name,
                language="CXX",
                arch="",
                compiler_id=ts.project.toolchain.compiler_id,
                compiler_version=ts.project.toolchain.version,
                flags=("-O3",),
                build_type=ts.project.build_type,
                device=ts.devices.device,
                compute_capability="",
                metric="time_ms=([0-9.eE+-]+)",
                lower_is_better=True,
                workloads=("--n 256",),
                baseline=(2.0,),
                tuned=(1.0,),
                speedup=2.0,
                trials=3,
                date="2026-12-01T07:00:00+00:00",
                tool_version="test",
                sources_sha256=ts.code.sources_sha256,
                headers=ts.code.headers,
                flags_sha256=ts.code.flags_sha256,
            ),
        )
    before = output.read_bytes()
    same = run_cli("tune", "--suite", str(suite), "--suite-jobs", "1", cwd=tmp_path)
    assert same.returncode == 0, same.stdout[-3000:] + same.stderr[-2000:]
    assert same.stdout.count("is unchanged since its entry") == 2 and "tuning host_" not in same.stdout, same.stdout
    assert output.read_bytes() == before
    (base,) = (build / "compileiq" / "suite" / "trees").glob("base-*")  # the suite's one baseline build's tree

    def objects() -> dict[str, int]:
        return {o.parent.parent.name: o.stat().st_mtime_ns for o in base.glob("CMakeFiles/host_*.dir/src/*.o")}

    built = objects()
    assert set(built) == {"host_kernels.dir", "host_other.dir"}, built
    other = host_example / "src" / "host_other.cpp"
    other.write_text(other.read_text() + "\n// edited\n")
    edited = run_cli("tune", "--suite", str(suite), "--suite-jobs", "1", cwd=tmp_path)
    assert edited.returncode == 0, edited.stdout[-3000:] + edited.stderr[-2000:]
    again = objects()  # the rerun's one baseline build compiled the edited target's source only
    assert again["host_kernels.dir"] == built["host_kernels.dir"] and again["host_other.dir"] > built["host_other.dir"]
    assert "host_kernels is unchanged since its entry" in edited.stdout, edited.stdout
    assert "tuning host_other" in edited.stdout and "tuning host_kernels" not in edited.stdout
    entries = {e["target"]: e for e in tomllib.loads(output.read_text())["entry"]}
    old = {e["target"]: e for e in tomllib.loads(before.decode())["entry"]}
    assert entries["host_kernels"] == old["host_kernels"]


@pytest.mark.cmake
def test_a_suite_configures_each_variant_tree_once_for_all_its_targets(host_example, tmp_path):
    """Issue 38: each target of a suite configured the trees it borrowed again (and its first tree twice: the
    project's own build, then the tune's). Three targets one after another: the project's own build is read
    from one tree configured once, and each tree of the pool is configured once in the run however many
    targets it serves; every target is tuned as before, from its own decisions (build type, flags hash,
    sources) read from the records the one configure wrote."""
    from conftest import host_suite

    build, suite = host_suite(
        host_example, tmp_path, ("host_kernels", "host_b", "host_c"), 'metric = "time_ms=([0-9.eE+-]+)"\nbudget = 2\n'
    )
    proc = run_cli("tune", "--suite", str(suite), "--suite-jobs", "1", "--workers", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    doc = json.loads((tmp_path / "suite.json").read_text())
    trees = doc["scheduling"]["trees"]
    pool = build / "compileiq" / "suite" / "trees"
    names = sorted(p.name for p in pool.iterdir() if (p / "CMakeCache.txt").is_file())
    assert any(n.startswith("own-") for n in names) and len(names) >= 3, names
    assert trees["configures"] == len(names), (trees, names)  # one configure per tree, the own tree included
    # the later targets borrowed configured trees: each target's setup configures the search's pool tree (one
    # worker, one GPU slot: `variant_trees` configures its trees[:2], the first being the own tree), so each of
    # the two later targets borrowed at least that one already configured; the finalists' trees are configured
    # on demand, so how many more were configured before a later target took them depends on the machine's load
    assert trees["lent_again"] >= 2, trees
    assert all(t["status"] in ("tuned", "no gain") and t["trials"] >= 1 for t in doc["targets"]), doc["targets"]
    # the baselines of all three targets in one build, on every core, in a tree of their own; each target
    # measured its baseline there and built none of its own (no tree of the pool compiled a target's
    # sources with its own flags before a trial)
    (base,) = doc["scheduling"]["baseline_builds"]
    assert base["ok"] and sorted(base["targets"]) == ["host_b", "host_c", "host_kernels"], base
    assert base["tree"].startswith("base-") and base["tree"] in names
    logs = list((build / "compileiq").rglob(f"{base['tree']}-compiled.log"))
    lines = [ln.split() for p in logs for ln in p.read_text().splitlines()]
    assert len(lines) == 1 and {Path(o).name for o in lines[0]} >= {"main.cpp.o", "host_b.cpp.o", "host_c.cpp.o"}, lines
    assert proc.stdout.count("the suite's baselines: 3 targets and their benchmarks built once") == 1, proc.stdout[
        -3000:
    ]
    assert all(0 <= t["shared_seconds"] <= t["seconds"] for t in doc["targets"]), doc["targets"]
    first, *later = doc["targets"]  # one after another: only the first ran the build (each its own seconds)
    assert first["shared_seconds"] > 0 and all(t["shared_seconds"] < 0.5 * first["shared_seconds"] for t in later), [
        (t["target"], t["shared_seconds"]) for t in doc["targets"]
    ]
    records = pool / "tree-0" / "compileiq_variant_records"
    for n in ("host_kernels", "host_b", "host_c"):
        info = (records / f"{n}.txt").read_text()
        assert f"target={n}\n" in info and "config=Release\n" in info and "flags_sha256_CXX=" in info
        assert f"src/{n if n != 'host_kernels' else 'main'}.cpp" in (records / f"{n}.sources").read_text()


@pytest.mark.unit
def test_a_targets_seconds_are_split_by_the_phases_it_reached():
    """Issue 38: setup, baseline, search, validation, ablation, confirmation and publish apart, from when each
    phase began; the last phase reached runs to the end, and they add up to the target's seconds."""
    from compileiq_cmake.tune.suite import _stage_seconds

    starts = {
        "baseline": 106.0,
        "search": 110.5,
        "validation": 150.0,
        "ablation": 161.0,
        "confirmation": 170.25,
        "publish": 175.0,
    }
    got = _stage_seconds(starts, 100.0, 176.0)
    assert got == {
        "setup": 6.0,
        "baseline": 4.5,
        "search": 39.5,
        "validation": 11.0,
        "ablation": 9.25,
        "confirmation": 4.75,
        "publish": 1.0,
    }
    assert _stage_seconds({"baseline": 103.0}, 100.0, 120.0) == {"setup": 3.0, "baseline": 17.0}  # stopped there
    assert _stage_seconds({}, 100.0, 101.5) == {"setup": 1.5}


@pytest.mark.unit
def test_a_suite_keeps_energy_gains_out_of_its_geometric_mean_speedup():
    """Issue 39: a target tuned with --objective energy has an energy gain, not a speedup: the suite's
    geometric-mean speedup is over the targets tuned for time, the energy gains have their own mean, and the
    table marks them."""
    from types import SimpleNamespace

    from compileiq_cmake.results import suite_summary
    from compileiq_cmake.tune.suite_state import TargetOutcome

    rows = [
        TargetOutcome("a", "tuned", speedup=2.0, flags=("-O3",), seconds=10.0),
        TargetOutcome("b", "no gain", seconds=10.0),
        TargetOutcome("c", "tuned", speedup=1.25, flags=("--use_fast_math",), seconds=10.0, objective="energy"),
    ]
    shared = {
        "jobs": 1,
        "idle_share": {"gpu:0": 0.1},
        "busy_seconds": {"gpu:0": 27.0},
        "trees": {"pool": 2, "lent_again": 1, "configures": 3},
    }
    doc = suite_summary.build(SimpleNamespace(path="suite.toml"), rows, None, 30.0, shared)
    assert doc["geomean_speedup"] == pytest.approx(2.0**0.5) and doc["geomean_energy_gain"] == pytest.approx(1.25)
    text = "\n".join(suite_summary.table(doc))
    assert "1.250xE" in text and "geometric mean energy gain 1.250x" in text and "speedup 1.414x" in text
    assert "1.25" in suite_summary.render(doc)


@pytest.mark.unit
def test_the_first_configure_of_a_pool_tree_is_the_suites_shared_setup_not_the_targets(tmp_path):
    """Issue 38: the first targets of a suite paid the pool's configures (H200, 22 targets: 24.8 s of setup for
    the first two, 0.9 s for the others, who borrowed the trees configured). A setup step that configures one of
    the pool's trees for the first time in the run is the suite's shared setup (not charged to the target's
    share, as the one baseline build); one on trees configured already is the target's own; with one target
    in the suite nothing is shared."""
    import time
    from types import SimpleNamespace

    from compileiq_cmake.tune.tree_pool import TreePool

    pool = TreePool(tmp_path / "trees", ("a", "b"))
    trees = (SimpleNamespace(configures=0), SimpleNamespace(configures=0))

    def configure() -> str:
        time.sleep(0.2)
        for tree in trees:
            tree.configures += 1
        return "model"

    assert pool.first_configures("a", trees, configure) == "model"
    assert pool.shared_seconds("a") >= 0.2
    assert pool.first_configures("b", trees, lambda: time.sleep(0.2)) is None  # configured already: b's own
    assert pool.shared_seconds("b") == 0.0
    alone = TreePool(tmp_path / "alone", ("a",))
    fresh = (SimpleNamespace(configures=0),)
    alone.first_configures("a", fresh, lambda: setattr(fresh[0], "configures", 1))
    assert alone.shared_seconds("a") == 0.0
