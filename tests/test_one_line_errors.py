"""Issue 19, one line, never a traceback: a build directory that is a regular file or cannot be written, a
report or a JSON summary that cannot be written (the summary checked before the tune, so no TOML is written
first), and a CUDA tune on a machine without a GPU (whether or not pycuda is installed): exit 2, one line,
no traceback, no partial output file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import HAVE_NVCC, PROJECTS, configure, one_line_error, replay_args, run_cli

UNWRITABLE = Path("/proc/compileiq-test-no-such-dir")  # nobody, root included, can create files in /proc


def _one_line(proc, *needles) -> str:
    return one_line_error(proc.returncode, proc.stdout, proc.stderr, *needles)


def _replay_args(tmp_path, *extra):
    return replay_args(tmp_path, "--budget", "6", *extra)


@contextmanager
def _read_only(directory: Path):
    """directory made read-only for this process: permissions for a normal user; for root (which ignores
    them) a read-only bind mount where the machine allows it, else the test is skipped."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [directory, *directory.rglob("*")] if not p.is_symlink()}
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    bind = subprocess.run(["mount", "--bind", str(directory), str(directory)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip("running as root without the right to mount: a read-only tree cannot be made")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(directory)], capture_output=True).returncode != 0:
            pytest.skip("running as root without the right to remount read-only")
        yield
    finally:
        subprocess.run(["umount", str(directory)], capture_output=True)


@pytest.mark.cmake
def test_build_dir_that_is_a_regular_file(tmp_path, host_example):
    build = tmp_path / "build"
    build.write_text("not a directory\n")
    proc = run_cli(
        "tune",
        "-S",
        str(host_example),
        "-B",
        str(build),
        "--target",
        "host_kernels",
        "--bench",
        "host_kernels",
        "--metric",
        "WALLTIME",
    )
    _one_line(proc, f"-B {build} is not a directory")
    assert build.read_text() == "not a directory\n"
    assert not (host_example / "compileiq.toml").exists()
    proc = run_cli(*_replay_args(tmp_path))
    _one_line(proc, f"-B {build} is not a directory")
    assert not (tmp_path / "compileiq.toml").exists()


@pytest.mark.cmake
def test_a_read_only_build_tree(tmp_path, host_example):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    out = tmp_path / "compileiq.toml"
    with _read_only(build):
        proc = run_cli(
            "tune",
            "-S",
            str(host_example),
            "-B",
            str(build),
            "--target",
            "host_kernels",
            "--bench",
            "host_kernels --n 256",
            "--metric",
            "time_ms=([0-9.eE+-]+)",
            "--output",
            str(out),
        )
        _one_line(proc, f"cannot write in the build tree {build}", "give a writable build directory (-B)")
    assert not (build / "compileiq").exists() and not out.exists()


@pytest.mark.cmake
def test_a_build_tree_where_nothing_can_be_created(tmp_path):
    proc = run_cli(*[a if a != str(tmp_path / "build") else str(UNWRITABLE / "build") for a in _replay_args(tmp_path)])
    _one_line(proc, f"cannot write in the build tree {UNWRITABLE / 'build'}")
    assert not (tmp_path / "compileiq.toml").exists()


@pytest.mark.cmake
@pytest.mark.parametrize("where", ["proc", "read-only", "directory"])
def test_json_summary_that_cannot_be_written_is_refused_before_the_tune(tmp_path, where):
    ro = tmp_path / "ro"
    ro.mkdir()
    summary = {"proc": UNWRITABLE / "summary.json", "read-only": ro / "summary.json", "directory": ro}[where]
    args = _replay_args(tmp_path, "--json-summary", str(summary))
    if where == "read-only":
        with _read_only(ro):
            proc = run_cli(*args)
    else:
        proc = run_cli(*args)
    _one_line(proc, "--json-summary")
    assert "REPLAY of" not in proc.stdout, "refused before the tune started"
    assert not (tmp_path / "compileiq.toml").exists(), "no TOML written before the summary failed"
    assert not (tmp_path / "build").exists()
    assert not list(ro.iterdir())


@pytest.mark.cmake
def test_report_to_a_place_that_cannot_be_written(tmp_path):
    assert run_cli(*_replay_args(tmp_path)).returncode == 0
    build = tmp_path / "build"
    for target in (Path("/proc/x.html"), tmp_path / "compileiq.toml" / "x.html"):
        proc = run_cli("report", "-B", str(build), "-o", str(target))
        _one_line(proc, f"cannot write {target}")  # refused before anything is drawn (system/writable)
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


NO_GPU = shutil.which("nvidia-smi") is None and not Path("/dev/nvidiactl").exists()


@pytest.fixture(scope="module")
def cuda_project(tmp_path_factory):
    if not HAVE_NVCC:
        pytest.skip("nvcc is not installed")
    if not NO_GPU:
        pytest.skip("this machine has an NVIDIA GPU or driver")
    root = tmp_path_factory.mktemp("nogpu")
    src = root / "per_file_sim"
    shutil.copytree(PROJECTS / "per_file_sim", src)
    assert configure(src, root / "build", "-DCMAKE_CUDA_ARCHITECTURES=90", "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    return src, root / "build"


def _fake_pycuda(where: Path) -> Path:
    """pycuda as it is installed on a machine without the NVIDIA driver: importing pycuda.driver fails on
    libcuda.so.1 (its compiled part links against the driver)."""
    pkg = where / "pycuda"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "driver.py").write_text(
        "raise ImportError('libcuda.so.1: cannot open shared object file: No such file or directory')\n"
    )
    return where


@pytest.mark.cmake
@pytest.mark.parametrize("pycuda", [False, True])
@pytest.mark.parametrize("arch", [(), ("--cuda-arch", "90")])
def test_a_cuda_tune_without_a_gpu_says_there_is_no_gpu(cuda_project, tmp_path, pycuda, arch):
    src, build = cuda_project
    env = {k: v for k, v in os.environ.items() if k != "COMPILEIQ_SIMULATE_GPUS"}
    if pycuda:
        env["PYTHONPATH"] = str(_fake_pycuda(tmp_path / "site"))
    out = tmp_path / "compileiq.toml"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "compileiq_cmake",
            "tune",
            "-S",
            str(src),
            "-B",
            str(build),
            "--target",
            "sim_bench",
            "--bench",
            "sim_bench",
            "--metric",
            "time_ms=([0-9.]+)",
            "--budget",
            "3",
            "--output",
            str(out),
            *arch,
        ],
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    line = _one_line(proc, "no GPU: ", "no GPU driver (libcuda.so.1")
    assert "pycuda" not in line
    assert not out.exists()
