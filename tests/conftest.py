"""Shared fixtures: the repository layout, a CLI runner, and helpers to configure real CMake projects."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from compileiq_cmake.model.spec import MetricSpec, TuneSpec

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
PROJECTS = REPO / "tests" / "projects"
HAVE_NVCC = shutil.which("nvcc") is not None
SAMPLE_LANDSCAPE = REPO / "benchmarks" / "landscapes" / "sample_small.json"  # synthetic: no GPU, no compiler


def replay_args(tmp_path: Path, *extra: str, landscape: Path = SAMPLE_LANDSCAPE) -> list[str]:
    """The arguments of a replayed `tune` (`--replay` answers every build and run from `landscape`) of its
    target in `tmp_path` (src/ made, build/, compileiq.toml), then `extra`."""
    (tmp_path / "src").mkdir(parents=True, exist_ok=True)
    return [
        "tune",
        "-S",
        str(tmp_path / "src"),
        "-B",
        str(tmp_path / "build"),
        "--target",
        landscape.stem,
        "--replay",
        str(landscape),
        "--output",
        str(tmp_path / "compileiq.toml"),
        *extra,
    ]


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run `python -m compileiq_cmake ...` as a user would (a separate process). The default working
    directory is outside the repository so that the installed package is the one imported."""
    return subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *args],
        cwd=cwd or tempfile.gettempdir(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line_error(rc: int, out: str, err: str, *needles: str) -> str:
    """A usage error as the CLI must give it: exit 2, one line on stderr, no traceback, every needle in it."""
    assert rc == 2, out[-2000:] + err[-2000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("compileiq-cmake: error: "), err
    assert "Traceback" not in out + err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@functools.cache
def cmake_dir() -> Path:
    """The installed package's CMake directory (`--cmake-dir`), asked once per test process: it cannot change
    while the tests run, and each ask started a Python process (tests call this about 60 times)."""
    out = run_cli("--cmake-dir")
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip())


def configure(src: Path, build: Path, *defs: str) -> subprocess.CompletedProcess:
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    proc = subprocess.run(
        ["cmake", "-S", str(src), "-B", str(build), *gen, "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", *defs],
        capture_output=True,
        text=True,
    )
    return proc


def host_suite(project: Path, tmp_path: Path, names: tuple[str, ...], each: str) -> tuple[Path, Path]:
    """A suite of host targets: `project` (a copy of examples/host_cpp) with one more executable per name other
    than host_kernels (a copy of its main.cpp), configured (Release) in tmp_path/build; and tmp_path/suite.toml
    tuning `names`, each with the TOML lines `each` and its own executable as the benchmark, the summary in
    suite.json. Returns (build, suite file)."""
    src, lists = project / "src", project / "CMakeLists.txt"
    for name in names:
        if name != "host_kernels":
            (src / f"{name}.cpp").write_text((src / "main.cpp").read_text())
            lists.write_text(lists.read_text() + f"add_executable({name} src/{name}.cpp)\n")
    build = tmp_path / "build"
    assert configure(project, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'[suite]\nsource_dir = "{project}"\nbuild_dir = "{build}"\njson_summary = "suite.json"\n'
        + "".join(f'[[target]]\nname = "{n}"\nbenchmark = "{n} --n 256"\n{each}' for n in names)
    )
    return build, suite


def tune_command_rules(tmp_path: Path, keywords: str) -> str:
    """The build rules of a one-file project configured with -DCOMPILEIQ_TUNE=ON whose CMakeLists calls
    `compileiq_tune(app BENCHMARK app METRIC WALLTIME <keywords>)`: where the tune command's options show."""
    src = tmp_path / "p"
    src.mkdir()
    (src / "main.cpp").write_text("int main() { return 0; }\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p LANGUAGES CXX)\nadd_executable(app main.cpp)\n"
        "find_package(compileiq_cmake CONFIG REQUIRED)\n"
        f"compileiq_tune(app BENCHMARK app METRIC WALLTIME {keywords})\n"
    )
    build = tmp_path / "b"
    proc = configure(src, build, f"-Dcompileiq_cmake_DIR={cmake_dir()}", "-DCOMPILEIQ_TUNE=ON")
    assert proc.returncode == 0, proc.stderr
    return "".join(
        p.read_text(errors="replace")
        for p in build.rglob("*")
        if p.is_file() and p.name in ("build.ninja", "build.make")
    )


def copy_project(name: str, dst: Path) -> Path:
    """A private copy of tests/projects/<name> at `dst`, with tests/projects/common (the shared bench.h, which
    the projects include from ../common) beside it."""
    shutil.copytree(PROJECTS / name, dst)
    shutil.copytree(PROJECTS / "common", dst.parent / "common", dirs_exist_ok=True)
    return dst


@dataclass(frozen=True)
class CompilerVersions:
    """The project compilers' versions as CMake reports them (CMAKE_<LANG>_COMPILER_VERSION)."""

    cxx: str  # e.g. "12.2.0"
    cuda: str  # e.g. "13.0.88"; "" where CUDA cannot be enabled (no nvcc)

    @property
    def cxx_major_minor(self) -> str:
        return ".".join(self.cxx.split(".")[:2])


def _cmake_compiler_version(build: Path, lang: str) -> str:
    found = next((build / "CMakeFiles").glob(f"*/CMake{lang}Compiler.cmake"), None)
    match = found and re.search(rf'set\(CMAKE_{lang}_COMPILER_VERSION "([\d.]+)"', found.read_text())
    return match.group(1) if match else ""


@pytest.fixture(scope="session")
def compiler_versions(tmp_path_factory) -> CompilerVersions:
    """One configure per session of an empty C++ (and, with nvcc, CUDA) project: the versions an entry must
    record to apply here (each apply test configured such a probe of its own, a CUDA one costing seconds)."""
    root = tmp_path_factory.mktemp("compiler_probe")
    src = root / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(probe LANGUAGES CXX)\n"
        + ("enable_language(CUDA)\n" if HAVE_NVCC else "")
    )
    proc = configure(src, root / "build")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return CompilerVersions(
        _cmake_compiler_version(root / "build", "CXX"), _cmake_compiler_version(root / "build", "CUDA")
    )


def compile_commands(build: Path) -> list[dict]:
    return json.loads((build / "compile_commands.json").read_text())


def commands_for(build: Path, name_part: str) -> list[str]:
    return [e["command"] for e in compile_commands(build) if name_part in e["file"]]


@pytest.fixture
def host_example(tmp_path: Path) -> Path:
    """A private copy of examples/host_cpp (tunes write compileiq.toml into the source tree)."""
    dst = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", dst)
    return dst


needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")


@pytest.fixture(scope="session")
def _probe_cache(tmp_path_factory) -> Path:
    """The nvcc flag probes of this test process (flags.probe.default_cache_path): what a toolkit accepts is
    the same for every test, as it is for every tune of a user, so the tests of one process share them."""
    return tmp_path_factory.mktemp("probe-cache")


@pytest.fixture(autouse=True)
def _private_user_cache(tmp_path_factory, monkeypatch, _probe_cache) -> None:
    """Each test its own user cache directory (the screening cache, the local prior): none reads the user's,
    or another test's; only its probe/ folder (what the installed nvcc accepts) is the process's shared one."""
    cache = tmp_path_factory.mktemp("user-cache")
    (cache / "probe").symlink_to(_probe_cache, target_is_directory=True)
    monkeypatch.setenv("COMPILEIQ_CACHE_DIR", str(cache))


TIERS = ("unit", "cmake", "cuda", "ray", "browser")


def pytest_collection_modifyitems(config, items):
    """Every test names its tier (pyproject.toml's markers): `--fast` (-m unit) must not silently leave a new
    test out, nor run one that needs cmake, nvcc, Ray or a browser."""
    untiered = [item.nodeid for item in items if not any(item.get_closest_marker(t) for t in TIERS)]
    if untiered:
        raise pytest.UsageError(
            f"tests without a tier marker ({', '.join(TIERS)}): {', '.join(untiered[:5])}"
            + (f" and {len(untiered) - 5} more" if len(untiered) > 5 else "")
        )
    mixed = [
        item.nodeid
        for item in items
        if item.get_closest_marker("unit") and any(item.get_closest_marker(t) for t in TIERS[1:])
    ]
    if mixed:
        raise pytest.UsageError(f"tests marked unit and another tier: {', '.join(mixed[:5])}")


def _toolkit_bin(nvcc: str) -> Path | None:
    """The bin/ folder of the toolkit an nvcc (or a wrapper script around it) runs: nvcc's own _HERE_."""
    out = subprocess.run([nvcc, "--dryrun", "-x", "cu", "-E", os.devnull], capture_output=True, text=True).stderr
    m = re.search(r"^#\$ _HERE_=(.+)$", out, re.M)
    return Path(m.group(1).strip()) if m else None


@pytest.fixture(scope="session")
def lto_nvcc(tmp_path_factory) -> str:
    """An nvcc whose device links with -dlto work, to build device LTO for real: the installed one where it
    can, else a private copy of its toolkit (bin/ copied, the rest linked) with the nvvm/lib64 that nvlink
    loads libnvvm from (this machine's toolkit keeps libnvvm in lib/ only). Skips when neither links."""
    from compileiq_cmake.flags.probe import probe_device_lto

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    if probe_device_lto(nvcc, "90").ok:
        return nvcc
    here = _toolkit_bin(nvcc)
    libnvvm = sorted((here.parent / "lib").glob("libnvvm.so*")) if here else []
    if not libnvvm:
        pytest.skip("nvcc cannot device-link with -dlto here, and its toolkit has no libnvvm to repair that with")
    root = tmp_path_factory.mktemp("lto-toolkit")
    for item in here.parent.iterdir():
        if item.name not in ("bin", "nvvm"):
            (root / item.name).symlink_to(item)
    shutil.copytree(here, root / "bin", symlinks=True)
    (root / "nvvm").mkdir()
    for item in (here.parent / "nvvm").iterdir():
        if item.name != "lib64":  # made here: never write into the installed toolkit
            (root / "nvvm" / item.name).symlink_to(item)
    (root / "nvvm" / "lib64").mkdir()
    for lib in libnvvm:
        (root / "nvvm" / "lib64" / lib.name).symlink_to(lib)
    repaired = str(root / "bin" / "nvcc")
    outcome = probe_device_lto(repaired, "90")
    if not outcome.ok:
        pytest.skip(f"no nvcc here device-links with -dlto ({outcome.message})")
    return repaired


def replay_spec(tmp_path: Path, landscape: Path = SAMPLE_LANDSCAPE, **fields) -> TuneSpec:
    """The spec of a tune of `landscape`'s target replayed in `tmp_path` (no CMake, no GPU), with `fields`."""
    return TuneSpec(
        source_dir=tmp_path,
        build_dir=tmp_path / "build",
        target=landscape.stem,
        benchmark=("replay",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=tmp_path / "compileiq.toml",
        replay=str(landscape),
        **fields,
    )


def scripted_spec(tmp_path: Path, workloads=((),), **fields) -> TuneSpec:
    """The spec of a tune whose runner is scripted in the test (no project, no process): `t=<value>` runs."""
    return TuneSpec(
        source_dir=tmp_path,
        build_dir=tmp_path / "build",
        target="t",
        benchmark=("bench",),
        metric=MetricSpec.parse(r"t=([0-9.]+)", True),
        output=tmp_path / "o.toml",
        workloads=tuple(workloads),
        **fields,
    )
