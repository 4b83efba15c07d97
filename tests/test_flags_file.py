"""Issue 38, cheaper trials: a CUDA target's target-wide trial flags reach nvcc through a file it reads at
each compile (--options-file), which the target's sources depend on, so that a trial compiles them again
without CMake running again for the whole project; a source file's own trial flags likewise go to a file of
that source (scoped to the target, after the target's flags); device LTO stays in the fragment. What
is checked is what would be written: the compile commands read with the file's flags in place, and a compile
that did not run again after the file changed fails the build."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from compileiq_cmake.execute.build import not_compiled_again
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.nvcc_command import flags_files_read, source_flags_file_name, tokens
from compileiq_cmake.project.variant_settings import VariantSettings

from conftest import configure, needs_nvcc


def _project(root: Path) -> Path:
    src = root / "src"
    src.mkdir()
    (src / "k.cu").write_text(
        "__global__ void k(float* a) { a[threadIdx.x] = sqrtf(a[threadIdx.x]); }\nint main() { return 0; }\n"
    )
    (src / "h.cpp").write_text("int helper() { return 1; }\n")
    (src / "other.cu").write_text("__global__ void o(float* a) { a[0] = 1.0f; }\nint main() { return 0; }\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(ff LANGUAGES CXX CUDA)\n"
        "add_executable(app k.cu h.cpp)\nadd_executable(other other.cu)\n"
    )
    return src


@pytest.mark.cmake
@pytest.mark.cuda
@needs_nvcc
def test_a_target_wide_trial_recompiles_the_targets_cuda_files_without_running_cmake_again(tmp_path):
    src = _project(tmp_path)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=90").returncode == 0
    settings, _ = VariantSettings.from_user_tree(src, build, "", "")
    settings = replace(settings, cuda_arch="90")
    tree = VariantTree(tmp_path / "trees", "worker-0", settings.cmake, logs=tmp_path / "logs")
    tree.prepare(settings, "app", "CUDA")
    assert tree.build(("app", "other"), jobs=2, timeout=600).ok

    def compiled() -> list[str]:
        return (tmp_path / "logs" / "worker-0-compiled.log").read_text().splitlines()[-1].split()

    def reconfigured() -> list[str]:  # per build: 1 when CMake ran again in it
        return (tmp_path / "logs" / "worker-0-reconfigured.log").read_text().split()

    def commands(name: str) -> list[str]:
        return tokens(tree.compile_commands((src / name,), "app")[0])

    assert not tree.write_flags("app", "CUDA", "90", ("--use_fast_math", "-Xptxas=-O1"))  # the fragment as it was
    assert tree.flags_file_changed
    result = tree.build(("app", "other"), jobs=2, timeout=600)
    assert result.ok and reconfigured()[-1] == "0", result.log_tail
    assert [Path(o).name for o in compiled()] == ["k.cu.o"]  # the target's CUDA file only: not h.cpp, not other
    assert {"--use_fast_math", "-Xptxas=-O1"} <= set(commands("k.cu"))  # read as nvcc reads it
    assert "--use_fast_math" not in " ".join(tokens(tree.compile_commands((src / "other.cu",), "other")[0]))
    assert not_compiled_again(tree, tree.compile_commands((src / "k.cu", src / "h.cpp"), "app")) == ""
    # the same flags again: nothing to compile
    assert not tree.write_flags("app", "CUDA", "90", ("--use_fast_math", "-Xptxas=-O1")) and not tree.flags_file_changed
    assert tree.build(("app",), jobs=2, timeout=600).ok and compiled() == []
    # per-file flags: a file of k.cu's own; its first flags in this tree name the file in the fragment (CMake runs
    # again once), later ones only rewrite it
    assert tree.write_flags("app", "CUDA", "90", ("[k.cu]--use_fast_math",))
    result = tree.build(("app",), jobs=2, timeout=600)
    assert result.ok and reconfigured()[-1] == "1" and [Path(o).name for o in compiled()] == ["k.cu.o"]
    assert "--use_fast_math" in commands("k.cu") and "-Xptxas=-O1" not in commands("k.cu")
    assert not tree.write_flags("app", "CUDA", "90", ("--fmad=false", "[k.cu]-Xptxas=-O1"))
    own = tree.path / source_flags_file_name("k.cu")
    assert tree.changed_flags_files == {tree.flags_file, own}
    result = tree.build(("app", "other"), jobs=2, timeout=600)
    assert result.ok and reconfigured()[-1] == "0", result.log_tail
    assert [Path(o).name for o in compiled()] == ["k.cu.o"]
    got = commands("k.cu")
    assert got.index("--fmad=false") < got.index("-Xptxas=-O1") and "--use_fast_math" not in got  # after the target's
    assert own not in flags_files_read(tree.compile_commands((src / "other.cu",), "other")[0])
    assert not_compiled_again(tree, tree.compile_commands((src / "k.cu",), "app")) == ""
    # k.cu without flags of its own: its file is emptied, the fragment stays; device LTO: all in the fragment
    assert not tree.write_flags("app", "CUDA", "90", ("--fmad=false",)) and tree.changed_flags_files == {own}
    assert own.read_text() == ""
    assert tree.write_flags("app", "CUDA", "90", ("-dlto", "[k.cu]-Xptxas=-O1")) and tree.flags_file.read_text() == ""
    assert own.read_text() == ""
    # an old object of the per-file file's source is caught as the tree's file's is
    assert tree.write_flags("app", "CUDA", "90", ("--fmad=false",))  # the fragment without device LTO again
    tree.write_flags("app", "CUDA", "90", ("[k.cu]-Xptxas=-O2",))
    entries = tree.compile_commands((src / "k.cu",), "app")
    obj = Path(entries[0]["directory"]) / entries[0]["output"]
    old = own.stat().st_mtime - 100
    os.utime(obj, (old, old))
    assert f"older than {own.name}" in not_compiled_again(tree, entries)
    assert tree.build(("app",), jobs=2, timeout=600).ok
    # a compile that did not run again after the file changed is caught, not measured
    tree.write_flags("app", "CUDA", "90", ("--fmad=false",))
    entries = tree.compile_commands((src / "k.cu",), "app")
    obj = Path(entries[0]["directory"]) / entries[0]["output"]
    old = tree.flags_file.stat().st_mtime - 100
    os.utime(obj, (old, old))
    assert "k.cu was not compiled again" in not_compiled_again(tree, entries)
