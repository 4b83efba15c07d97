"""The apply of an entry with an Advanced Control File on a real CMake project (tests/projects/acf_mixed:
kernels in a .cu file and in a .cpp file marked LANGUAGE CUDA, host C++ beside them, another CUDA target in the
same directory), with NVIDIA's CUDA 13.3 toolkit from PyPI installed by `compileiq-cmake toolkit 13.3` and with
the system nvcc. The ACF here is a stand-in file (no NVIDIA binary is in the repository): the tests configure
and read what CMake generated (compile_commands.json, build.ninja); they do not compile with it."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest

from compileiq_cmake.results.toml_io import write_entry

from conftest import HAVE_NVCC, cmake_dir, commands_for, configure, copy_project, run_cli
from test_result_file import make_entry

pytestmark = pytest.mark.cmake
STAND_IN = b"a stand-in for an advanced control file\n"


def _project(tmp_path: Path, compiler_version: str, acf_ptxas: str) -> tuple[Path, Path]:
    """The project with a TOML whose entry for `tuned` holds --use_fast_math and a control file; the ACF path."""
    src = copy_project("acf_mixed", tmp_path / "acf_mixed")
    digest = hashlib.sha256(STAND_IN).hexdigest()
    rel = f"compileiq/acf/{digest}.acf"
    (src / rel).parent.mkdir(parents=True)
    (src / rel).write_bytes(STAND_IN)
    entry = make_entry(
        target="tuned",
        compiler_version=compiler_version,
        acf_ptxas=acf_ptxas,
        flags=("--use_fast_math", f"-Xptxas=--apply-controls={rel}"),
        acf_sha256=((rel, digest),),
    )
    write_entry(src / "compileiq.toml", entry)
    return src, (src / rel).resolve()


def _apply(src: Path, build: Path, *defs: str):
    proc = configure(
        src,
        build,
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}",
        *defs,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def nvcc_13_3(tmp_path_factory) -> str:
    """nvcc of NVIDIA's PyPI toolkit 13.3, installed by the tool's own command (COMPILEIQ_TEST_TOOLKIT_PREFIX:
    an existing install to reuse)."""
    prefix = os.environ.get("COMPILEIQ_TEST_TOOLKIT_PREFIX") or str(tmp_path_factory.mktemp("toolkit"))
    out = run_cli("toolkit", "13.3", "--prefix", prefix, timeout=1800)
    if out.returncode != 0 and "pip install" in out.stderr and "failed" in out.stderr:
        pytest.skip(f"the PyPI toolkit could not be installed here: {out.stderr.strip().splitlines()[-1]}")
    assert out.returncode == 0, out.stderr
    m = re.search(r"-DCMAKE_CUDA_COMPILER=(\S+)", out.stdout)
    assert m and "CUDA 13.3." in out.stdout, out.stdout
    assert (Path(m.group(1)).parents[1] / "lib" / "libcudart.so").exists()  # the link the PyPI layout lacks
    return m.group(1)


def _ninja_inputs(build: Path, obj_part: str) -> str:
    """The build statement of the object whose path holds `obj_part` (its inputs after ':')."""
    text = (build / "build.ninja").read_text()
    return next(line for line in text.splitlines() if line.startswith("build ") and obj_part in line.split(":")[0])


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
@pytest.mark.slow
def test_with_the_pypi_13_3_toolkit_the_acf_goes_to_the_tuned_targets_cuda_compiles_only(tmp_path, nvcc_13_3):
    if not shutil.which("ninja"):
        pytest.skip("ninja is not installed (the object dependencies are read from build.ninja)")
    src, acf = _project(tmp_path, "13.3.73", "13.3.73")
    build = tmp_path / "rel"
    proc = _apply(src, build, f"-DCMAKE_CUDA_COMPILER={nvcc_13_3}")
    flag = f"-Xptxas=--apply-controls={acf}"
    assert "compileiq: applied 2 tuned flags to tuned" in proc.stdout, proc.stdout
    for name in ("kern.cu", "kern_in.cpp"):
        (cmd,) = commands_for(build, name)
        assert flag in cmd and "--use_fast_math" in cmd, cmd
        assert str(acf) in _ninja_inputs(build, name + ".o")  # an edited file rebuilds the object
    for name in ("host.cpp", "other.cu"):
        (cmd,) = commands_for(build, name)
        assert "apply-controls" not in cmd, cmd
        assert str(acf) not in _ninja_inputs(build, name + ".o")
    check = run_cli("check", "-S", str(src), "-B", str(build), "--json")
    assert '"applies": true' in check.stdout, check.stdout + check.stderr


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_an_acf_of_another_ptxas_version_is_left_out_in_one_line_and_the_rest_applies(tmp_path, compiler_versions):
    src, acf = _project(tmp_path, compiler_versions.cuda, "13.3.73")
    proc = _apply(src, tmp_path / "rel")
    lines = [line for line in proc.stdout.splitlines() if "advanced control file" in line]
    assert len(lines) == 1, proc.stdout
    assert (
        f"the advanced control file of tuned is left out: it was tuned with ptxas 13.3.73, this build's is "
        f"{compiler_versions.cuda}"
    ) in lines[0] and "the rest of its flags apply" in lines[0]
    assert "compileiq: applied 1 tuned flag to tuned" in proc.stdout
    (cmd,) = commands_for(tmp_path / "rel", "kern.cu")
    assert "--use_fast_math" in cmd and "apply-controls" not in cmd


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_an_edited_acf_is_left_out_in_one_line_and_check_says_the_same(tmp_path, compiler_versions):
    src, acf = _project(tmp_path, compiler_versions.cuda, compiler_versions.cuda)
    ok = _apply(src, tmp_path / "ok")
    (cmd,) = commands_for(tmp_path / "ok", "kern.cu")
    assert f"-Xptxas=--apply-controls={acf}" in cmd and "left out" not in ok.stdout
    ninja = (tmp_path / "ok" / "build.ninja").read_text().replace("$\n", " ")  # statements on one line each
    rerun = next(line for line in ninja.splitlines() if line.startswith("build build.ninja"))
    assert str(acf) in rerun  # an edited control file configures again (its sha256 is checked there)
    acf.write_bytes(b"edited after the tune\n")
    proc = _apply(src, tmp_path / "edited")
    lines = [line for line in proc.stdout.splitlines() if "advanced control file" in line]
    assert len(lines) == 1 and "changed since the tune (sha256 differs)" in lines[0], proc.stdout
    (cmd,) = commands_for(tmp_path / "edited", "kern.cu")
    assert "--use_fast_math" in cmd and "apply-controls" not in cmd
    check = run_cli("check", "-S", str(src), "-B", str(tmp_path / "edited"))
    assert "advanced control file left out" in check.stdout + check.stderr, check.stdout + check.stderr


@pytest.mark.cmake
def test_compileiq_tune_passes_the_acf_keywords_to_the_tune_command(tmp_path):
    from conftest import tune_command_rules

    (tmp_path / "mine.acf").write_bytes(STAND_IN)
    rules = tune_command_rules(tmp_path, f"ACF_CANDIDATES 32 ACF_SPACE att ACF {tmp_path / 'mine.acf'}")
    assert "--acf-candidates=32" in rules and "--acf-space=att" in rules and f"--acf={tmp_path / 'mine.acf'}" in rules


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
@pytest.mark.slow
def test_the_machines_nvcc_with_ptxas_13_3_beside_it_applies_a_13_3_control_file(
    tmp_path, nvcc_13_3, compiler_versions
):
    """The toolkit of docs/benchmarks/acf.md's GPU tune: the machine's nvcc, NVIDIA's 13.3 ptxas beside it. The
    apply asks that ptxas (13.3): the control file applies although CMake reports nvcc 13.0."""
    system = Path(shutil.which("nvcc")).resolve()
    real = system if (system.parent / "nvcc.profile").exists() else None
    if real is None:  # a wrapper script (this machine's /usr/local/bin/nvcc): the toolkit it runs
        text = system.read_text(errors="replace")
        m = re.search(r"(/\S+/bin/nvcc)", text)
        real = Path(m.group(1)) if m else None
    if real is None or not (real.parent / "nvcc.profile").exists():
        pytest.skip("the system nvcc's toolkit folder was not found")
    hybrid = tmp_path / "hybrid"
    shutil.copytree(real.parent, hybrid / "bin", symlinks=True)
    shutil.copy2(Path(nvcc_13_3).parent / "ptxas", hybrid / "bin" / "ptxas")
    for d in ("nvvm", "targets", "lib64", "include", "lib"):
        if (real.parents[1] / d).exists():
            (hybrid / d).symlink_to(real.parents[1] / d)
    src, acf = _project(tmp_path, compiler_versions.cuda, "13.3.73")
    proc = _apply(src, tmp_path / "rel", f"-DCMAKE_CUDA_COMPILER={hybrid / 'bin' / 'nvcc'}")
    assert "advanced control file" not in proc.stdout and "applied 2 tuned flags to tuned" in proc.stdout, proc.stdout
    (cmd,) = commands_for(tmp_path / "rel", "kern.cu")
    assert f"-Xptxas=--apply-controls={acf}" in cmd


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
@pytest.mark.slow
def test_tune_toolkit_configures_and_builds_a_tree_of_its_own_with_that_nvcc(tmp_path, nvcc_13_3, compiler_versions):
    """`tune --toolkit 13.3` (tune.with_toolkit): the user's tree keeps its compiler; a tree of the project with
    the user's options and the toolkit's nvcc is configured and built, and the tune goes on there, with what is
    left of its time limit; a second tune reuses the tree; a tree of another compiler is configured afresh."""
    from compileiq_cmake.model.events import EventStream
    from compileiq_cmake.model.spec import MetricSpec, TuneSpec
    from compileiq_cmake.project.user_tree import read_cache
    from compileiq_cmake.tune.with_toolkit import tree_of, with_toolkit

    src = copy_project("acf_mixed", tmp_path / "acf_mixed")
    build = tmp_path / "build"
    proc = configure(src, build, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=90", "-DMY_OPTION=kept")
    assert proc.returncode == 0, proc.stderr[-3000:]
    prefix = Path(nvcc_13_3).parents[3]
    spec = TuneSpec(
        source_dir=src,
        build_dir=build,
        target="tuned",
        benchmark=("tuned",),
        metric=MetricSpec.parse("WALLTIME", lower_is_better=True),
        output=src / "compileiq.toml",
        time_limit=3000.0,
    )
    lines: list[str] = []
    moved = with_toolkit(spec, "13.3", prefix, EventStream(lambda e: lines.append(e.line())))
    tree = tree_of(build, "13.3")
    assert moved.build_dir == tree and moved.time_limit is not None and moved.time_limit < 3000.0
    own, user = read_cache(tree), read_cache(build)
    assert own["CMAKE_CUDA_COMPILER"][1] == nvcc_13_3 and user["CMAKE_CUDA_COMPILER"][1] != nvcc_13_3
    assert own["CMAKE_CUDA_ARCHITECTURES"][1] == "90" and own["MY_OPTION"][1] == "kept"
    assert list(tree.glob("**/kern.cu.o")), "the target was built in the toolkit's tree"
    said = [x for x in lines if "--toolkit 13.3: tuning the project as built by" in x]
    assert len(said) == 1 and f"-DCMAKE_CUDA_COMPILER={nvcc_13_3}" in said[0], lines
    marker = tree / "kept.txt"
    marker.write_text("the same tree")
    with_toolkit(spec, "13.3", prefix, EventStream(lambda e: None))
    assert marker.is_file()  # reused, not made again
    cache = (tree / "CMakeCache.txt").read_text()
    (tree / "CMakeCache.txt").write_text(cache.replace(nvcc_13_3, "/another/bin/nvcc"))
    with_toolkit(spec, "13.3", prefix, EventStream(lambda e: None))
    assert not marker.exists() and read_cache(tree)["CMAKE_CUDA_COMPILER"][1] == nvcc_13_3


def test_toolkit_usage_errors_are_one_line(tmp_path):
    from conftest import one_line_error

    unconfigured = run_cli(
        "tune",
        "-S",
        str(tmp_path),
        "-B",
        str(tmp_path / "b"),
        "--target",
        "t",
        "--bench",
        "t",
        "--metric",
        "WALLTIME",
        "--toolkit",
        "13.3",
    )
    one_line_error(
        unconfigured.returncode,
        unconfigured.stdout,
        unconfigured.stderr,
        "--toolkit needs a configured build tree",
        "has no CMakeCache.txt",
    )
    prefix_alone = run_cli(
        "tune",
        "-S",
        str(tmp_path),
        "-B",
        str(tmp_path / "b"),
        "--target",
        "t",
        "--bench",
        "t",
        "--metric",
        "WALLTIME",
        "--toolkit-prefix",
        str(tmp_path),
    )
    one_line_error(
        prefix_alone.returncode, prefix_alone.stdout, prefix_alone.stderr, "--toolkit-prefix goes with --toolkit X.Y"
    )
    suite = tmp_path / "suite.toml"
    suite.write_text('[suite]\nsource_dir = "."\nbuild_dir = "build"\n')
    in_suite = run_cli("tune", "--suite", str(suite), "--toolkit", "13.3")
    one_line_error(in_suite.returncode, in_suite.stdout, in_suite.stderr, "--toolkit tunes one target")
