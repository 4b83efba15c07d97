"""Hardening of the tune itself (issue 10): what is measured is what would be written."""

from __future__ import annotations

import pytest

from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.tune.setup import setup
from compileiq_cmake.tune.trial import build_variant as _build

from conftest import configure


def _tamper(tree) -> None:
    """What a benchmark run in its variant tree did: -march=native added to the tree's CMakeCache.txt."""
    cache = tree.path / "CMakeCache.txt"
    text = cache.read_text()
    cache.write_text(text.replace("CMAKE_CXX_FLAGS:STRING=", "CMAKE_CXX_FLAGS:STRING=-march=native ", 1))


@pytest.mark.cmake
def test_a_benchmark_that_edits_its_variant_tree_cannot_change_what_is_measured(host_example, tmp_path):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    spec = TuneSpec(
        source_dir=host_example,
        build_dir=build,
        target="host_kernels",
        benchmark=("host_kernels",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=host_example / "compileiq.toml",
        workers=1,
    )
    lines: list[str] = []
    ts = setup(spec, lines.append)
    tree = ts.trees[0]
    assert _build(ts, tree, ts.space.baseline(), lines.append).ok
    trial = ts.space.flagset_from_flags(["-funroll-loops"])
    _tamper(tree)
    result = _build(ts, tree, trial, lines.append)
    assert result.ok, result.log_tail
    assert any("CMakeCache.txt of worker-0 was changed" in ln for ln in lines), lines
    command = tree.compile_commands(ts.project.target.sources)[0]["command"]
    assert "-march=native" not in command and "-funroll-loops" in command
    # should anything else slip a flag in, the trial's compile command is checked against its flag set
    _tamper(tree)
    tree._cache_text = None  # the restore is bypassed
    result = _build(ts, tree, ts.space.baseline(), lines.append)
    assert not result.ok and "+-march=native" in result.log_tail, result.log_tail


@pytest.mark.cmake
def test_a_failing_variant_configure_names_the_file_and_keeps_its_log(host_example, tmp_path):
    """The line named the error without its file and the tree (with its log) was deleted."""
    from conftest import run_cli

    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    sub = host_example / "extra"
    sub.mkdir()
    (sub / "CMakeLists.txt").write_text('message(FATAL_ERROR "this tree cannot be configured")\n')
    lists = host_example / "CMakeLists.txt"
    lists.write_text(lists.read_text() + "add_subdirectory(extra)\n")
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
        "--budget",
        "3",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = proc.stderr.strip()
    assert "extra/CMakeLists.txt:1: this tree cannot be configured" in line, line
    log = build / "compileiq" / "logs" / "worker-0-configure.log"
    assert f"full log: {log}" in line and "this tree cannot be configured" in log.read_text()


@pytest.mark.cmake
def test_space_target_is_refused_while_a_tune_runs(tmp_path):
    """`space --target` configures worker-0 like a tune: under the tune lock."""
    from compileiq_cmake.system.lock import TuneLock

    from conftest import run_cli

    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("project(p LANGUAGES NONE)\n")
    with TuneLock(tmp_path / "build" / "compileiq"):
        proc = run_cli("space", "-S", str(src), "-B", str(tmp_path / "build"), "--target", "x", "--cuda-arch", "90")
    assert proc.returncode == 2 and "another compileiq tune" in proc.stderr, proc.stderr
