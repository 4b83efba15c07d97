"""The File API reader (project/file_api.py) on saved CMake replies: no cmake, compiler or GPU.

tests/fixtures/fileapi/<project>/.cmake/api/v1/reply/ holds CMake 3.25's reply for three projects of
tests/projects/, configured at /tmp/compileiq_fileapi/{src,build}/<project> (README.md there: how they were
made, how to regenerate them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compileiq_cmake.model.errors import CompileIQError, UsageError
from compileiq_cmake.project.file_api import CLIENT, CodeModel, Target, read_codemodel, write_query

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "fileapi"
MADE_AT = Path("/tmp/compileiq_fileapi")  # where regenerate.sh configured them (the replies' absolute paths)


def _model(name: str) -> CodeModel:
    return read_codemodel(FIXTURES / name)


def _rel(model: CodeModel, paths: tuple[Path, ...]) -> list[str]:
    """Source paths relative to the project's source directory (the reader resolves them)."""
    return [p.relative_to(model.source_dir.resolve()).as_posix() for p in paths]


def _copy(name: str, tmp_path: Path) -> Path:
    """A private copy of a fixture build tree, to break; returns its reply folder."""
    build = tmp_path / name
    shutil.copytree(FIXTURES / name, build)
    return build / ".cmake" / "api" / "v1" / "reply"


def _index(reply: Path) -> Path:
    (index,) = reply.glob("index-*.json")
    return index


# --- the fixtures themselves --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cpp_cuda", "mixed_rdc", "libs_layout"])
def test_fixture_answers_the_query_the_package_writes_today(name, tmp_path):
    """Saved replies answer the package's current query; a changed write_query means: regenerate them."""
    write_query(tmp_path)
    (written,) = (tmp_path / ".cmake" / "api" / "v1" / "query").rglob("*.json")
    assert written.relative_to(tmp_path / ".cmake" / "api" / "v1" / "query").as_posix() == f"{CLIENT}/query.json"
    index = json.loads(_index(FIXTURES / name / ".cmake" / "api" / "v1" / "reply").read_text())
    assert index["cmake"]["version"]["string"] == "3.25.1"
    assert index["reply"][CLIENT]["query.json"]["requests"] == json.loads(written.read_text())["requests"]


# --- cpp_cuda: kernels in .cpp files compiled as CUDA ------------------------------------------------


def test_cpp_files_marked_language_cuda_are_cuda_sources():
    model = _model("cpp_cuda")
    assert model.source_dir == MADE_AT / "src" / "cpp_cuda"
    assert model.build_dir == MADE_AT / "build" / "cpp_cuda"
    assert list(model.targets) == ["cpp_bench"]
    t = model.target("cpp_bench")
    assert t.type == "EXECUTABLE"
    assert t.languages == ("CUDA",) and t.primary_language == "CUDA"
    # CMake's compile language, not the suffix: every .cpp is CUDA, none is C++
    assert _rel(model, t.sources_in("CUDA")) == ["src/main.cpp", "src/kernels_a.cpp", "src/kernels_b.cpp"]
    assert t.sources_in("CXX") == ()
    assert t.source_languages == ("CUDA", "CUDA", "CUDA")
    assert all(p.suffix == ".cpp" for p in t.sources)
    assert t.artifacts == (MADE_AT / "build" / "cpp_cuda" / "cpp_bench",)
    assert t.dependencies == ()


def test_build_dir_comes_from_the_reply_not_from_where_it_was_read(tmp_path):
    """A reply read from elsewhere (a copy) still names the tree CMake wrote it for."""
    reply = _copy("cpp_cuda", tmp_path)
    model = read_codemodel(reply.parents[3])
    assert model.build_dir == MADE_AT / "build" / "cpp_cuda"
    assert model.source_dir == MADE_AT / "src" / "cpp_cuda"
    assert model.target("cpp_bench").artifacts == (MADE_AT / "build" / "cpp_cuda" / "cpp_bench",)


def test_toolchains_are_nvcc_13_and_gcc_12():
    tc = _model("cpp_cuda").toolchains
    assert sorted(tc) == ["CUDA", "CXX"]
    assert (tc["CUDA"].compiler_id, tc["CUDA"].version, tc["CUDA"].path) == ("NVIDIA", "13.0.88", "/usr/local/bin/nvcc")
    assert (tc["CXX"].compiler_id, tc["CXX"].version, tc["CXX"].path) == ("GNU", "12.2.0", "/usr/bin/c++")
    assert tc["CUDA"].language == "CUDA"


# --- mixed_rdc: host .cpp beside relocatable .cu, a static library of device code -----------------------


def test_mixed_target_splits_host_cpp_from_cuda_sources():
    model = _model("mixed_rdc")
    assert sorted(model.targets) == ["devlib", "kern_test", "lib_bench_a", "lib_bench_b", "mixed_bench"]
    t = model.target("mixed_bench")
    assert t.type == "EXECUTABLE"
    assert t.languages == ("CXX", "CUDA")  # in compile-group order
    assert t.primary_language == "CUDA"  # CUDA wins though CXX comes first
    assert _rel(model, t.sources_in("CXX")) == ["src/main.cpp", "src/ref.cpp"]
    assert _rel(model, t.sources_in("CUDA")) == ["src/kern.cu", "src/helpers.cu"]
    assert _rel(model, t.sources) == ["src/main.cpp", "src/ref.cpp", "src/kern.cu", "src/helpers.cu"]
    assert t.source_languages == ("CXX", "CXX", "CUDA", "CUDA")
    assert t.dependencies == ()


def test_static_library_of_device_code_and_its_consumers():
    model = _model("mixed_rdc")
    lib = model.target("devlib")
    assert lib.type == "STATIC_LIBRARY"
    assert lib.primary_language == "CUDA"
    assert _rel(model, lib.sources_in("CUDA")) == ["src/lib/lib_kern.cu", "src/lib/lib_helpers.cu"]
    assert lib.artifacts == (MADE_AT / "build" / "mixed_rdc" / "libdevlib.a",)
    for exe in ("lib_bench_a", "lib_bench_b"):
        t = model.target(exe)
        assert t.dependencies == ("devlib",)
        # LINKER_LANGUAGE CUDA does not make it a CUDA target: it compiles only C++
        assert t.languages == ("CXX",) and t.primary_language == "CXX" and t.sources_in("CUDA") == ()
        assert _rel(model, t.sources) == [f"src/{exe}.cpp", "src/ref.cpp"]
    cuda_targets = sorted(n for n, t in model.targets.items() if t.sources_in("CUDA"))
    assert cuda_targets == ["devlib", "kern_test", "mixed_bench"]


def test_a_source_shared_by_targets_is_listed_in_each():
    model = _model("mixed_rdc")
    ref = (MADE_AT / "src" / "mixed_rdc" / "src" / "ref.cpp").resolve()
    assert sorted(n for n, t in model.targets.items() if ref in t.sources) == [
        "kern_test",
        "lib_bench_a",
        "lib_bench_b",
        "mixed_bench",
    ]
    kern = (MADE_AT / "src" / "mixed_rdc" / "src" / "kern.cu").resolve()
    assert sorted(n for n, t in model.targets.items() if kern in t.sources_in("CUDA")) == ["kern_test", "mixed_bench"]


def test_unknown_target_suggests_the_closest_one():
    with pytest.raises(UsageError) as err:
        _model("mixed_rdc").target("mixed_bnch")
    assert str(err.value) == (
        "unknown target 'mixed_bnch' (did you mean 'mixed_bench'?); the project defines: "
        "devlib, kern_test, lib_bench_a, lib_bench_b, mixed_bench"
    )


# --- libs_layout: static and object libraries, renamed outputs ------------------------------------------


def test_library_types_and_renamed_artifacts():
    model = _model("libs_layout")
    build = MADE_AT / "build" / "libs_layout"
    types = {n: t.type for n, t in model.targets.items()}
    assert types == {"kern_objects": "OBJECT_LIBRARY", "kern_static": "STATIC_LIBRARY", "libs_bench": "EXECUTABLE"}
    static = model.target("kern_static")
    assert static.artifacts == (
        build / "lib" / "archive" / "libfancy_kernels.a",
    )  # OUTPUT_NAME, ARCHIVE_OUTPUT_DIRECTORY
    assert _rel(model, static.sources_in("CUDA")) == ["src/static_kernels.cu"]
    objects = model.target("kern_objects")
    assert objects.artifacts == (build / "CMakeFiles" / "kern_objects.dir" / "src" / "object_kernels.cu.o",)
    exe = model.target("libs_bench")
    assert exe.artifacts == (build / "bin" / "tools" / "layout_benchmark_exe",)
    assert exe.dependencies == ("kern_static", "kern_objects")
    assert _rel(model, exe.sources_in("CUDA")) == ["src/main.cu"]
    assert all(t.languages == ("CUDA",) for t in model.targets.values())


def test_target_owning_finds_a_target_by_its_artifact():
    model = _model("libs_layout")
    build = MADE_AT / "build" / "libs_layout"
    assert model.target_owning(build / "bin" / "tools" / "layout_benchmark_exe").name == "libs_bench"
    assert (
        model.target_owning(build / "bin" / "tools" / ".." / ".." / "lib" / "archive" / "libfancy_kernels.a").name
        == "kern_static"
    )
    assert model.target_owning(build / "libs_bench") is None  # the target's name is not its file
    assert model.target_owning(build / "layout_benchmark_exe") is None


# --- incomplete or foreign replies ------------------------------------------------------------------------


def test_no_reply_at_all_is_a_one_line_error(tmp_path):
    reply = _copy("cpp_cuda", tmp_path)
    _index(reply).unlink()
    with pytest.raises(CompileIQError) as err:
        read_codemodel(reply.parents[3])
    assert str(err.value) == f"{reply.parents[3]} has no CMake File API reply; the configure step did not finish"


def test_reply_without_our_client_is_a_one_line_error(tmp_path):
    """A tree configured without the package's query (another client's reply only) has no codemodel for it."""
    reply = _copy("mixed_rdc", tmp_path)
    index = _index(reply)
    data = json.loads(index.read_text())
    data["reply"] = {"client-someide": data["reply"].pop(CLIENT)}
    index.write_text(json.dumps(data))
    with pytest.raises(CompileIQError) as err:
        read_codemodel(reply.parents[3])
    assert type(err.value) is CompileIQError
    assert str(err.value) == f"{reply.parents[3]}: CMake gave no codemodel reply (CMake >= 3.14 is needed)"


def test_reply_without_codemodel_response_is_a_one_line_error(tmp_path):
    reply = _copy("libs_layout", tmp_path)
    index = _index(reply)
    data = json.loads(index.read_text())
    responses = data["reply"][CLIENT]["query.json"]["responses"]
    data["reply"][CLIENT]["query.json"]["responses"] = [r for r in responses if r["kind"] != "codemodel"]
    index.write_text(json.dumps(data))
    with pytest.raises(CompileIQError, match=r"CMake gave no codemodel reply") as err:
        read_codemodel(reply.parents[3])
    assert "\n" not in str(err.value)


def test_missing_or_broken_target_file_is_one_line_naming_the_file(tmp_path):
    """A reply whose target file is gone or cut short (a reconfigure mid-read, a truncated copy): one
    CompileIQError line naming the file and saying to configure again (it was a raw OSError: a traceback)."""
    reply = _copy("mixed_rdc", tmp_path)
    (target_file,) = reply.glob("target-devlib-*.json")
    target_file.write_text('{"name": "devlib", "sources": [')
    with pytest.raises(CompileIQError, match="configure the build directory again") as err:
        read_codemodel(reply.parents[3])
    assert target_file.name in str(err.value) and "\n" not in str(err.value)
    target_file.unlink()
    with pytest.raises(CompileIQError, match="configure the build directory again") as err:
        read_codemodel(reply.parents[3])
    assert target_file.name in str(err.value) and "\n" not in str(err.value)


def test_reply_without_toolchains_still_gives_targets(tmp_path):
    reply = _copy("cpp_cuda", tmp_path)
    index = _index(reply)
    data = json.loads(index.read_text())
    responses = data["reply"][CLIENT]["query.json"]["responses"]
    data["reply"][CLIENT]["query.json"]["responses"] = [r for r in responses if r["kind"] != "toolchains"]
    index.write_text(json.dumps(data))
    model = read_codemodel(reply.parents[3])
    assert model.toolchains == {}
    assert list(model.targets) == ["cpp_bench"] and len(model.target("cpp_bench").sources_in("CUDA")) == 3


def test_newest_index_wins(tmp_path):
    """A stale index left beside the current one (index names sort by time) is not read."""
    reply = _copy("cpp_cuda", tmp_path)
    (reply / "index-2000-01-01T00-00-00-0000.json").write_text("{not json: a stale, broken index")
    assert isinstance(read_codemodel(reply.parents[3]).target("cpp_bench"), Target)
