"""Issue 19, CMake side: one rule for "builds relocatable device code" (the CMake module decides, the tune
reads its decision), read from the target's directory and the upper-cased CMAKE_CUDA_FLAGS_<CONFIG>; and an
entry refused by a device-LTO check does not block the next entry for its target. Real configures (nvcc)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compileiq_cmake.flags.catalogue import add_device_lto_dimension
from compileiq_cmake.flags.screening import project_flags
from compileiq_cmake.flags.space import load_space
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.fragment import render_fragment
from compileiq_cmake.results.toml_io import write_entry

from conftest import HAVE_NVCC, cmake_dir, compile_commands, configure, copy_project
from test_cmake_modules import _nvcc_version
from test_result_file import make_entry

pytestmark = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
ARCH = "-DCMAKE_CUDA_ARCHITECTURES=90"


def _not_separable(tmp_path: Path, name: str) -> Path:
    src = tmp_path / name
    copy_project("separable", src)
    text = (
        (src / "CMakeLists.txt").read_text().replace("CUDA_SEPARABLE_COMPILATION ON", "CUDA_SEPARABLE_COMPILATION OFF")
    )
    (src / "CMakeLists.txt").write_text(text)
    return src


def _in_subdirectory(tmp_path: Path) -> Path:
    """The target is defined in a subdirectory whose own CMAKE_CUDA_FLAGS add -rdc=true (the top-level
    directory's do not)."""
    src = _not_separable(tmp_path, "subdir")
    text = (src / "CMakeLists.txt").read_text()
    head, _, target = text.partition("add_executable(sep_bench")
    (src / "sub").mkdir()
    body = "add_executable(sep_bench" + target
    body = body.replace("src/", "${PROJECT_SOURCE_DIR}/src/").replace(
        "${CMAKE_CURRENT_SOURCE_DIR}/include", "${PROJECT_SOURCE_DIR}/include"
    )
    (src / "sub" / "CMakeLists.txt").write_text('string(APPEND CMAKE_CUDA_FLAGS " -rdc=true")\n' + body)
    (src / "CMakeLists.txt").write_text(head + "add_subdirectory(sub)\n")
    return src


def _separable(tmp_path: Path, name: str) -> Path:
    src = tmp_path / name
    copy_project("separable", src)
    return src


FLAGS_ONLY = "builds relocatable device code through -rdc=true in its flags, not with CUDA_SEPARABLE_COMPILATION"
CASES = {  # name -> (project, extra configure arguments, what the refusal says ("" for none))
    "rdc in CMAKE_CUDA_FLAGS_RELEASE": (_not_separable, ("-DCMAKE_CUDA_FLAGS_RELEASE=-O3 -rdc=true",), FLAGS_ONLY),
    "rdc in the target's directory": (_in_subdirectory, (), FLAGS_ONLY),
    "no rdc": (_not_separable, (), "does not build relocatable device code"),
    "separable": (_separable, (), ""),
}


@pytest.mark.cuda
@pytest.mark.cmake
@pytest.mark.parametrize("case", list(CASES))
def test_the_tune_offers_device_lto_exactly_where_the_apply_accepts_it(tmp_path, case):
    """One rule on both sides: the variant tree records the CMake module's decision, the tune offers device
    LTO by it, and the apply accepts a device-LTO entry exactly then (refusing it with the same reason).
    -rdc=true in CMAKE_CUDA_FLAGS_RELEASE or in the target's directory is seen (it was missed: the build type
    was not upper-cased, the top-level directory was read); it is not enough for CMake's device LTO, which
    generates LTO code only under CUDA_SEPARABLE_COMPILATION, and the reason says so."""
    make, extra, says = CASES[case]
    src = make(tmp_path) if make is _in_subdirectory else make(tmp_path, "proj")
    release = ("-DCMAKE_BUILD_TYPE=Release", ARCH, *extra)
    # the tune's side: a variant tree (as tune_setup configures it) and the space offered from its decision
    tree = VariantTree(tmp_path / "state", "worker-0", shutil.which("cmake") or "cmake")
    tree.path.mkdir(parents=True)
    tree.fragment.write_text(render_fragment("sep_bench", "CUDA", "90", ()))
    variant = (
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_variant.cmake'}",
        f"-DCOMPILEIQ_VARIANT_FRAGMENT={tree.fragment}",
    )
    proc = configure(src, tree.path, *release, *variant)
    assert proc.returncode == 0, proc.stderr[-2000:]
    decided = tree.decisions()
    refusal = decided.device_lto_refusal
    assert (says in refusal) if says else refusal == "", refusal
    assert decided.relocatable is (says != "does not build relocatable device code"), decided
    assert decided.config == "Release" and decided.cuda_archs == ("90",), decided
    commands = [e for e in compile_commands(tree.path) if e["file"].endswith(".cu")]
    if says == FLAGS_ONLY:
        assert all("-rdc=true" in e["command"] for e in commands), commands
    space = load_space("nvcc", "NVIDIA", "13.0.88", (), (), arch="90")
    offered, _ = add_device_lto_dimension(space, project_flags(commands), True, refusal, decided.relocatable)
    offered = any(d.name == "device_lto" for d in offered.dimensions)
    assert offered is (not says)
    # a device-LTO trial: LTO code in a variant tree where it is offered, a FATAL_ERROR with the reason elsewhere
    lto = tmp_path / "lto"
    lto.mkdir()
    (lto / "compileiq_trial_flags.cmake").write_text(render_fragment("sep_bench", "CUDA", "90", ("-dlto",)))
    proc = configure(
        src,
        lto,
        *release,
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_variant.cmake'}",
        f"-DCOMPILEIQ_VARIANT_FRAGMENT={lto / 'compileiq_trial_flags.cmake'}",
    )
    if offered:
        assert proc.returncode == 0, " ".join(proc.stderr.split())[-2000:]
        assert all("lto_90" in e["command"] for e in compile_commands(lto) if e["file"].endswith(".cu"))
    else:
        assert proc.returncode != 0 and says in " ".join(proc.stderr.split()), proc.stderr[-2000:]
    # the apply's side: a device-LTO entry is applied exactly then, else refused with the same reason
    version = _nvcc_version(tree.path)
    write_entry(
        src / "compileiq.toml",
        make_entry(
            target="sep_bench",
            compiler_version=version,
            flags=("-maxrregcount=64",),
            device_lto=True,
            sources_sha256="",
        ),
    )
    proc = configure(
        src, tmp_path / "rel", *release, f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    applied = "compileiq: applied 1 tuned flag to sep_bench" in proc.stdout
    assert applied is offered, proc.stdout[-2000:] + proc.stderr[-2000:]
    if not applied:
        assert refusal in " ".join(proc.stderr.split()), proc.stderr[-2000:]


@pytest.mark.cuda
@pytest.mark.cmake
def test_an_entry_refused_by_a_device_lto_check_does_not_block_the_next_entry_for_its_target(
    tmp_path, compiler_versions
):
    """Two entries for one target (sm_90 with device LTO, sm_80 without); the target builds 80 and 90 but no
    relocatable device code: the first is refused for that reason, the second applies."""
    src = _not_separable(tmp_path, "two")
    archs = "-DCMAKE_CUDA_ARCHITECTURES=80;90"
    version = compiler_versions.cuda
    write_entry(
        src / "compileiq.toml",
        make_entry(
            target="sep_bench",
            compiler_version=version,
            arch="90",
            flags=("-maxrregcount=64",),
            device_lto=True,
            sources_sha256="",
        ),
    )
    write_entry(
        src / "compileiq.toml",
        make_entry(
            target="sep_bench",
            compiler_version=version,
            arch="80",
            compute_capability="8.0",
            flags=("-Xptxas=-O2",),
            sources_sha256="",
        ),
    )
    proc = configure(
        src,
        tmp_path / "rel",
        "-DCMAKE_BUILD_TYPE=Release",
        archs,
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    err = " ".join(proc.stderr.split())
    assert "does not build relocatable device code" in err, err[-2000:]
    assert "already are" not in err, err[-2000:]
    assert "compileiq: applied 1 tuned flag to sep_bench (CUDA sm_80" in proc.stdout, proc.stdout[-2000:]
    commands = [e["command"] for e in compile_commands(tmp_path / "rel") if e["file"].endswith(".cu")]
    assert commands and all("-Xptxas=-O2" in c and "-maxrregcount=64" not in c for c in commands), commands
