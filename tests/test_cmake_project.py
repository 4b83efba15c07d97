"""Variant trees on the real examples: real cmake, real nvcc/gcc, flags checked in compile_commands.json."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.fragment import cmake_quote, render_fragment
from compileiq_cmake.project.nvcc_command import tokens
from compileiq_cmake.project.user_tree import read_cache
from compileiq_cmake.project.variant_settings import VariantSettings

from conftest import EXAMPLES, configure, needs_nvcc

ARCH_OPTION = re.compile(r"^(--generate-code|-gencode|-arch|--gpu-architecture|-code)")


def _variant(tmp_path: Path, example: str, cuda_arch: str, target: str, language: str):
    src = tmp_path / example
    shutil.copytree(EXAMPLES / example, src)
    user_build = tmp_path / "build"
    assert configure(src, user_build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    settings, _ = VariantSettings.from_user_tree(src, user_build, cuda_arch)
    tree = VariantTree(user_build / "compileiq", "worker-0", settings.cmake)
    tree.write_flags(target, language, cuda_arch, ())
    model = tree.configure(settings, target, language)
    return src, user_build, tree, model


def _arch_options(command: str) -> set[str]:
    """Architecture options of a compile command (CMake 3.x and 4.x quote them differently)."""
    return {tok for tok in shlex.split(command) if ARCH_OPTION.match(tok)}


@pytest.mark.cuda
@pytest.mark.cmake
@needs_nvcc
def test_cuda_variant_builds_only_the_gpu_arch_with_injected_flags(tmp_path):
    """n-body hard-codes CMAKE_CUDA_ARCHITECTURES 75 80 90: the variant builds sm_90 only."""
    src, user_build, tree, model = _variant(tmp_path, "cuda_nbody", "90", "nbody", "CUDA")
    target = model.target("nbody")
    assert target.primary_language == "CUDA" and any(p.name == "nbody.cu" for p in target.sources)
    flags = ("--use_fast_math", "-Xptxas=-O1", "-maxrregcount=64")
    tree.write_flags("nbody", "CUDA", "90", flags)
    assert tree.flags_file_changed  # target-wide CUDA flags: the trial flags file nvcc reads
    result = tree.build(("nbody",), jobs=2, timeout=600)
    assert result.ok, result.log_tail
    (entry,) = tree.compile_commands(target.sources)
    command = " ".join(tokens(entry))  # as nvcc reads it: the trial flags file's flags in place
    for flag in flags:
        assert flag in command
    assert _arch_options(command) == {"--generate-code=arch=compute_90,code=[sm_90]"}
    # the user's own tree is untouched: no tuned flags, its hard-coded architectures still there
    user_cmds = [e["command"] for e in __import__("json").loads((user_build / "compile_commands.json").read_text())]
    assert not any("--use_fast_math" in c for c in user_cmds)
    assert any("compute_75" in c for c in user_cmds)


@pytest.mark.cuda
@pytest.mark.cmake
@needs_nvcc
def test_changing_the_fragment_rebuilds_only_the_tuned_target(tmp_path):
    """stencil: the tuned library is rebuilt, the benchmark's own main.cu is not recompiled."""
    src, _, tree, model = _variant(tmp_path, "cuda_stencil", "90", "stencil_kernels", "CUDA")
    assert tree.build(("stencil_kernels", "stencil"), jobs=2, timeout=600).ok
    tree.write_flags("stencil_kernels", "CUDA", "90", ("--restrict",))
    second = tree.build(("stencil_kernels", "stencil"), jobs=2, timeout=600)
    assert second.ok, second.log_tail
    assert "stencil.cu.o" in second.log_tail and "main.cu.o" not in second.log_tail
    cmds = {
        Path(e["file"]).name: " ".join(tokens(e))  # as nvcc reads them (the trial flags file in place)
        for e in __import__("json").loads((tree.path / "compile_commands.json").read_text())
    }
    assert "--restrict" in cmds["stencil.cu"] and "--restrict" not in cmds["main.cu"]
    assert "--expt-relaxed-constexpr" in cmds["stencil.cu"], "the project's own flags must stay"
    assert _arch_options(cmds["stencil.cu"]) == {"--generate-code=arch=compute_90,code=[sm_90]"}
    assert tree.build(("stencil_kernels", "stencil"), jobs=2, timeout=600).log_tail.count(".o") == 0


@pytest.mark.cmake
def test_host_variant_injects_flags_after_the_projects_own(tmp_path):
    src, user_build, tree, model = _variant(tmp_path, "host_cpp", "", "host_kernels", "CXX")
    assert model.toolchains["CXX"].compiler_id in ("GNU", "Clang")
    tree.write_flags("host_kernels", "CXX", "", ("-O2", "-funroll-loops"))
    assert tree.build(("host_kernels",), jobs=2, timeout=600).ok
    (entry,) = tree.compile_commands(model.target("host_kernels").sources)
    command = entry["command"]
    assert command.index("-O3") < command.index("-O2") and "-funroll-loops" in command
    assert (tree.path / "host_kernels").is_file()


@pytest.mark.cmake
def test_unknown_target_lists_the_projects_targets(tmp_path):
    _, _, _, model = _variant(tmp_path, "host_cpp", "", "host_kernels", "CXX")
    with pytest.raises(CompileIQError, match=r"unknown target 'nbody'; the project defines: host_kernels"):
        model.target("nbody")


@pytest.mark.cmake
def test_user_cache_is_replayed_but_tool_settings_are_not(tmp_path):
    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    build = tmp_path / "build"
    assert (
        configure(src, build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DMY_OPTION=ON", "-DCOMPILEIQ_TUNE=ON").returncode
        == 0
    )
    assert read_cache(build)["MY_OPTION"][1] == "ON"
    settings, notes = VariantSettings.from_user_tree(src, build, "")
    assert settings.cache["CMAKE_BUILD_TYPE"] == ("STRING", "RelWithDebInfo") and not notes
    assert "COMPILEIQ_TUNE" not in settings.cache and "MY_OPTION" in settings.cache
    script = settings.initial_cache_script()
    assert 'set(MY_OPTION "ON" CACHE STRING "" FORCE)' in script


@pytest.mark.unit
def test_fragment_quoting_cannot_break_out():
    assert cmake_quote('a"b${X}\\') == '"a\\"b\\${X}\\\\"'
    text = render_fragment("t", "CXX", "", ("-O2", "-funroll-loops"))
    assert 'set(COMPILEIQ_VARIANT_FLAGS "-O2;-funroll-loops")' in text
