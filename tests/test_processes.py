"""Issue 19, processes and resources: nothing a benchmark or a build started outlives it (a daemon that left
the session and cleared its environment included), a lost last GPU ends the tune with an error instead of a
hang, the baseline pool is shut down on every path, and a last output line longer than the kept tail keeps
its metric. Real processes; time bounds are generous (the machine may be loaded)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from compileiq_cmake.measure.bench import run_benchmark
from compileiq_cmake.model.records import Status
from compileiq_cmake.model.spec import MetricSpec
from compileiq_cmake.system.processes import KEEP_BYTES

from conftest import replay_spec

PY = sys.executable
REGEX = MetricSpec.parse(r"time_ms=(\S+)", lower_is_better=True)


def _script(tmp_path: Path, body: str, name: str = "bench.py") -> list[str]:
    path = tmp_path / name
    path.write_text(body)
    return [PY, str(path)]


@pytest.mark.unit
def test_a_last_line_longer_than_the_kept_tail_keeps_its_metric(tmp_path):
    dots = 10 << 20  # 10 MB of dots, then the metric, on one line
    assert dots > 2 * KEEP_BYTES
    body = f"import sys\nsys.stdout.write('PASS\\n' + '.' * {dots} + 'time_ms=2.5\\n')\n"
    out = run_benchmark(_script(tmp_path, body), tmp_path, REGEX, "PASS", timeout=120)
    assert out.status is Status.OK and out.value == 2.5, out.reason
    assert any("truncated" in w for w in out.warnings), out.warnings
    assert len(out.output) < 12 << 20
    # without a newline at the very end, and followed by empty lines: the same
    for end in ("", "\\n\\n\\n"):
        body = f"import sys\nsys.stdout.write('.' * {dots} + 'time_ms=3.5{end}')\n"
        out = run_benchmark(_script(tmp_path, body), tmp_path, REGEX, None, timeout=120)
        assert out.status is Status.OK and out.value == 3.5, (end, out.reason)


def _bounded(fn, seconds: float = 60.0):
    """Run fn in a thread; (finished, its exception or None). A hang shows as finished=False."""
    import threading

    box: dict = {}

    def body():
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["exc"] = exc

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    return not t.is_alive(), box.get("exc")


@pytest.mark.unit
def test_losing_every_gpu_ends_the_tune_with_an_error_not_a_hang():
    from types import SimpleNamespace

    from compileiq_cmake.execute.executor import WorkerLost
    from compileiq_cmake.execute.pipeline import Pipeline
    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.model.records import BuildResult, FlagSet

    lines: list[str] = []
    runners = [SimpleNamespace(gpu=SimpleNamespace(device=d), alive=lambda: False) for d in ("0", "1")]
    trees = tuple(SimpleNamespace(name=f"worker-{i}") for i in range(3))

    def build(tree, flagset, log):
        return BuildResult(ok=True, seconds=0.0)

    def measure(index, tree, flagset, build, runner, known):
        raise WorkerLost(f"the worker of GPU {runner.gpu.device} died")

    def tune():
        with Pipeline(trees, build, runners, measure, lines.append) as pipeline:
            for i in range(3):
                pipeline.submit(i + 1, FlagSet((), (f"-O{i}",)), {})
            for _ in range(3):
                pipeline.next()

    finished, exc = _bounded(tune)
    assert finished, "the tune hung after losing its last GPU"
    assert isinstance(exc, CompileIQError) and "the cluster is not usable" in str(exc), exc
    assert "every GPU's worker was lost (0, 1)" in str(exc) or "lost its worker" in str(exc), exc
    assert any("it was the last one" in line for line in lines), lines


@pytest.mark.unit
def test_the_other_gpus_baseline_pool_is_shut_down_when_a_later_setup_step_raises(tmp_path, monkeypatch):
    """Replay on 2 simulated GPUs: the other GPU's baseline is measured in a pool next to the first one's;
    a step after it (here the reference trees) raises: the pool's threads must not outlive the tune."""
    import threading

    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.tune import baseline as baseline_stage
    from compileiq_cmake.tune import orchestration as tune

    sample = Path(__file__).resolve().parents[1] / "benchmarks" / "landscapes" / "sample_small.json"
    monkeypatch.setenv("COMPILEIQ_SIMULATE_GPUS", "2")

    def broken(*args, **kwargs):
        raise CompileIQError("a setup step after the baselines failed")

    monkeypatch.setattr(baseline_stage, "reference_trees", broken)
    spec = replay_spec(tmp_path, sample, workers=2, budget=5)
    before = {t.ident for t in threading.enumerate()}
    lines: list[str] = []
    # the error is held (as a caller that reports it does): its traceback keeps the tune's frames alive,
    # so the pool is not cleaned up by the garbage collector by chance
    with pytest.raises(CompileIQError, match="a setup step after the baselines failed") as caught:
        tune.run_tune(spec, lines.append)
    deadline = time.monotonic() + 30
    left = [t for t in threading.enumerate() if t.ident not in before and t.name.startswith("compileiq-baseline")]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [t for t in left if t.is_alive()]
    assert not left, f"the baseline pool's threads outlived the tune: {left}"
    assert not (tmp_path / "compileiq.toml").exists() and caught.value


def _sleepers(tag: str) -> list[int]:
    """Live processes running `sleep <tag>` (a unique duration per test)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if len(argv) >= 2 and argv[0].endswith(b"sleep") and argv[1] == tag.encode() and state != "Z":
            found.append(int(name))
    return found


def _no_sleeper_left(tag: str, within: float = 15.0) -> list[int]:
    deadline = time.monotonic() + within
    while (left := _sleepers(tag)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:  # do not leave them behind for the next test
        os.kill(pid, signal.SIGKILL)
    return left


def _tag() -> str:
    return f"302.{os.getpid()}{int(time.time() * 1000) % 100000}"


_DAEMONIZING = """
import os, subprocess, sys, time
tag, shell, value = sys.argv[1:4]
subprocess.run(shell, shell=True, check=True)
deadline = time.time() + 30
while time.time() < deadline:  # the daemon runs, in a session of its own (setsid done), before the end
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open(f"/proc/{name}/cmdline", "rb").read().split(b"\\0")
            sid = int(open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()[3])
        except (OSError, ValueError, IndexError):
            continue
        if len(argv) > 1 and argv[0].endswith(b"sleep") and argv[1] == tag.encode() and sid == int(name):
            print("time_ms=" + value)
            sys.exit(0)
    time.sleep(0.02)
sys.exit("the daemon never started")
"""


def _daemon_bench(tmp_path: Path, tag: str, shell: str, value: str) -> list[str]:
    """A benchmark that runs `shell` (which daemonizes `sleep <tag>`), waits until the daemon has left its
    session, and prints time_ms=<value>."""
    script = tmp_path / "daemonizing_bench.py"
    script.write_text(_DAEMONIZING)
    return [PY, str(script), tag, shell, value]


def _assert_daemon_killed(tmp_path: Path, shell: str, value: float, what: str) -> None:
    """Run the daemonizing benchmark with `shell` ({tag}: the sleeper's tag): its metric counts and no sleeper
    of that tag is left afterwards."""
    tag = _tag()
    out = run_benchmark(
        _daemon_bench(tmp_path, tag, shell.format(tag=tag), str(value)), tmp_path, REGEX, None, timeout=60
    )
    assert out.status is Status.OK and out.value == value, (what, out.reason)
    assert not _no_sleeper_left(tag), f"{what}: the daemon outlived the benchmark"


def _cgroup_allowed() -> bool:
    from compileiq_cmake.system.process_tree import Cgroup

    probe = Cgroup.create("compileiq-run-probe")
    if probe is not None:
        probe.kill()
    return probe is not None


def _no_cgroup(monkeypatch):
    from compileiq_cmake.system import processes

    monkeypatch.setattr(processes.Cgroup, "create", classmethod(lambda cls, name: None))


@pytest.mark.unit
def test_a_daemon_that_left_the_session_and_cleared_its_environment_holding_the_output_is_killed(tmp_path, monkeypatch):
    """The issue's benchmark, `( setsid env -i /bin/sleep 302 & )`, once with the run's own cgroup (where this
    machine allows one) and once without (its recorded tree; the daemon still holds the output)."""
    for mode in ["tree"] + (["cgroup"] if _cgroup_allowed() else []):
        with monkeypatch.context() as m:
            if mode == "tree":
                _no_cgroup(m)
            _assert_daemon_killed(tmp_path, "( setsid env -i /bin/sleep {tag} & )", 1.5, mode)


@pytest.mark.unit
@pytest.mark.parametrize("lists_children", [True, False], ids=["children-files", "whole-proc"])
def test_a_daemon_with_its_output_elsewhere_is_killed_by_the_recorded_tree(tmp_path, monkeypatch, lists_children):
    """No cgroup: a daemon (setsid, env -i, output to /dev/null, working directory /) whose parent, the
    benchmark, lives on 3 s (a few checks of a loaded machine): recorded while it runs, killed at the end;
    through the kernel's per-task children lists, and (kernels without them) through all of /proc."""
    from compileiq_cmake.system import process_tree

    _no_cgroup(monkeypatch)
    if not lists_children:
        monkeypatch.setattr(process_tree, "_children_files", lambda: False)
    _assert_daemon_killed(
        tmp_path,
        "setsid env -i /bin/sh -c 'cd /; exec /bin/sleep {tag}' </dev/null >/dev/null 2>&1 & sleep 3",
        2.5,
        "tree",
    )


@pytest.mark.unit
def test_a_fully_detached_daemon_is_killed_through_the_runs_cgroup(tmp_path):
    """With a cgroup of its own (where this machine allows one): a daemon that is gone from the process tree
    at once, in another session, without the environment and without the output, is still found."""
    if not _cgroup_allowed():
        pytest.skip("this process may not make a cgroup here (the recorded tree is the fallback)")
    _assert_daemon_killed(
        tmp_path,
        "( setsid env -i /bin/sh -c 'cd /; exec /bin/sleep {tag}' </dev/null >/dev/null 2>&1 & )",
        3.5,
        "cgroup",
    )


@pytest.mark.cmake
def test_a_build_timeout_ends_the_whole_build_not_only_cmake(tmp_path):
    """A build whose compile step hangs (a custom command that sleeps, standing in for nvcc under ninja) and
    a short timeout: the build is reported timed out and the hanging grandchild is gone with cmake."""
    import shutil

    from compileiq_cmake.project.cmake_project import VariantTree

    from conftest import configure

    src = tmp_path / "hangs"
    src.mkdir()
    pid_file = tmp_path / "compiler.pid"
    (src / "hang.sh").write_text('echo $$ > "$1"\nexec sleep 300\n')
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(hangs LANGUAGES NONE)\n"
        "add_custom_command(OUTPUT gen.txt COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hang.sh " + str(pid_file) + ")\n"
        "add_custom_target(gen ALL DEPENDS gen.txt)\n"
    )
    tree = VariantTree(tmp_path / "state", "worker-0", shutil.which("cmake") or "cmake")
    assert configure(src, tree.path).returncode == 0
    start = time.monotonic()
    result = tree.build(("all",), jobs=1, timeout=5)
    assert not result.ok and "build timed out after 5 s" in result.log_tail, result.log_tail
    assert time.monotonic() - start < 60
    compiler = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while (
        time.monotonic() < deadline
        and Path(f"/proc/{compiler}").exists()
        and Path(f"/proc/{compiler}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    ):
        time.sleep(0.1)
    alive = (
        Path(f"/proc/{compiler}").exists()
        and Path(f"/proc/{compiler}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    )
    if alive:
        os.kill(compiler, signal.SIGKILL)
    assert not alive, "the hanging compile step outlived the build's timeout"


@pytest.mark.unit
def test_the_runner_kills_the_rest_of_its_session_another_process_group_included(tmp_path, monkeypatch):
    """A command that leaves a child in a process group of its own (as ninja does with each compile step),
    without the run's marker (env -i) or its output: with no cgroup and no recorded tree, the run's session is
    what finds it; run_process kills it and waits until it is gone."""
    from compileiq_cmake.system import processes

    _no_cgroup(monkeypatch)
    monkeypatch.setattr(processes.Descendants, "poll", lambda self: None)
    monkeypatch.setattr(processes.Descendants, "kill", lambda self: 0)
    tag = _tag()
    body = (
        "import subprocess\n"
        f"subprocess.Popen(['env', '-i', '/bin/sleep', '{tag}'], process_group=0, stdin=subprocess.DEVNULL, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    )
    res = processes.run_process(_script(tmp_path, body, "leaves_a_group.py"), tmp_path, 60)
    assert res.returncode == 0 and res.ended, res.output
    assert not _no_sleeper_left(tag, within=0.5), "a process group of the run's session outlived it"


@pytest.mark.cmake
def test_a_variant_configure_that_hangs_is_stopped_after_its_timeout(tmp_path):
    """A configure that never ends (execute_process of a sleep, standing in for a download that hangs):
    stopped after its timeout with what it started, one line naming the tree and the log."""
    import shutil

    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.project.cmake_project import VariantTree
    from compileiq_cmake.project.variant_settings import VariantSettings

    from conftest import configure

    src, tag = tmp_path / "hangs", _tag()
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(hangs LANGUAGES NONE)\n"
        "if(COMPILEIQ_VARIANT_FRAGMENT)\n"
        f"  execute_process(COMMAND sleep {tag})\nendif()\n"
    )
    assert configure(src, tmp_path / "build").returncode == 0
    settings, _ = VariantSettings.from_user_tree(src, tmp_path / "build", "")
    tree = VariantTree(tmp_path / "build" / "compileiq", "worker-0", shutil.which("cmake") or "cmake")
    start = time.monotonic()
    with pytest.raises(
        CompileIQError, match=r"configuring the variant tree worker-0 failed \(timed out after 3 s\).*full log"
    ):
        tree.configure(settings, "all", "", timeout=3)
    assert time.monotonic() - start < 30
    assert not _no_sleeper_left(tag, within=5), "the configure's sleep outlived its timeout"


_TUNE = """
import sys
from pathlib import Path
from compileiq_cmake.system.processes import run_process
run_process(sys.argv[1:-1], Path("/"), 120, pid_file=Path(sys.argv[-1]))
"""


@pytest.mark.unit
def test_a_killed_tunes_detached_daemon_is_killed_at_the_next_start_through_the_recorded_cgroup(tmp_path):
    """The tune dies while its benchmark runs; the benchmark dies with it, but a daemon it started (setsid,
    env -i, output elsewhere) lives on: the next start (kill_leftovers) finds it through the run's cgroup."""
    import subprocess

    from compileiq_cmake.system.processes import kill_leftovers

    if not _cgroup_allowed():
        pytest.skip("this process may not make a cgroup here")
    tag = _tag()
    shell = f"( setsid env -i /bin/sh -c 'cd /; exec /bin/sleep {tag}' </dev/null >/dev/null 2>&1 & ); sleep 60"
    parent = tmp_path / "tune.py"
    parent.write_text(_TUNE)
    pid_file = tmp_path / "state" / "bench.pid"
    pid_file.parent.mkdir()
    tune = subprocess.Popen([PY, str(parent), "/bin/sh", "-c", shell, str(pid_file)])
    try:
        deadline = time.monotonic() + 30
        while not _sleepers(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _sleepers(tag) and pid_file.is_file()
        tune.kill()
        tune.wait(30)
        time.sleep(0.5)
        assert _sleepers(tag), "the daemon should outlive the killed tune (that is the case kill_leftovers is for)"
        assert kill_leftovers(pid_file) >= 1
        assert not _no_sleeper_left(tag), "kill_leftovers left the killed tune's daemon running"
        assert not pid_file.exists()
    finally:
        if tune.poll() is None:
            tune.kill()
        _no_sleeper_left(tag, within=0)


@pytest.mark.unit
def test_empty_cgroups_of_killed_tunes_are_removed_at_the_next_start(tmp_path):
    """A tune killed with its benchmark leaves its run's cgroup (empty once the processes died): the next
    start removes it, and leaves a live process's cgroup alone."""
    import subprocess

    from compileiq_cmake.system.process_tree import Cgroup
    from compileiq_cmake.system.processes import kill_leftovers

    if not _cgroup_allowed():
        pytest.skip("this process may not make a cgroup here")
    dead = subprocess.Popen([PY, "-c", "pass"])
    dead.wait()
    stale = Cgroup.create(f"compileiq-run-{dead.pid}-0123456789abcdef")
    live = Cgroup.create(f"compileiq-run-{os.getpid()}-fedcba9876543210")
    assert stale is not None and live is not None
    try:
        assert kill_leftovers(tmp_path / "no-such.pid") == 0
        assert not stale.path.exists(), "the killed tune's empty cgroup was left behind"
        assert live.path.exists()
    finally:
        live.kill()
        stale.kill()
