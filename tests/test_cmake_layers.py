"""The CMake module's layers (cmake/): CompileIQ.cmake keeps the public command and includes its layers
(CompileIQCommon, CompileIQArch, CompileIQRecords, CompileIQLTO, CompileIQApply). Each module is short and
starts with its CMake-style documentation; a layer includes and calls only the layers before it; each layer
can be include()d on its own (from the installed package's CMake directory) and provides its commands; and
each layer's helpers behave as the apply needs, run by real cmake (script mode, `cmake -P`, where a helper
needs no target; else a minimal project)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, cmake_dir, configure

CMAKE = REPO / "cmake"
DOC_OPEN = "#[=======================================================================[.rst:"
DOC_CLOSE = "#]=======================================================================]"
MAX_LINES = 500

# Innermost first: each layer with the layers it includes (all of them before it) and the commands it defines.
LAYERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "CompileIQCommon": (
        (),
        (
            "_compileiq_python_command",
            "_compileiq_real_target",
            "_compileiq_real_targets",
            "_compileiq_all_targets",
            "_compileiq_consumers",
            "_compileiq_conditional",
            "_compileiq_add_flags",
            "_compileiq_source_options",
            "_compileiq_cuda_sources_depend",
        ),
    ),
    "CompileIQArch": (
        (),
        (
            "_compileiq_unwrap_option",
            "_compileiq_arch_option",
            "_compileiq_flag_archs",
            "_compileiq_strip_arch_options",
            "_compileiq_cuda_archs",
        ),
    ),
    "CompileIQRecords": (
        ("CompileIQArch",),
        ("_compileiq_sources_sha256", "_compileiq_source_lines", "_compileiq_flags_sha256", "_compileiq_check_record"),
    ),
    "CompileIQLTO": (
        ("CompileIQCommon", "CompileIQArch"),
        ("_compileiq_relocatable", "_compileiq_device_lto_refusal", "_compileiq_device_lto"),
    ),
    "CompileIQApply": (
        ("CompileIQCommon", "CompileIQArch", "CompileIQRecords", "CompileIQLTO"),
        (
            "_compileiq_schedule_apply",
            "_compileiq_apply_flags_file",
            "_compileiq_entry",
            "_compileiq_source_flags",
            "_compileiq_source_flags_done",
        ),
    ),
    "CompileIQTests": (("CompileIQCommon",), ("compileiq_add_test",)),
    "CompileIQ": (
        ("CompileIQCommon", "CompileIQArch", "CompileIQRecords", "CompileIQLTO", "CompileIQApply", "CompileIQTests"),
        ("compileiq_tune", "_compileiq_write_suite", "_compileiq_check_tune_target"),
    ),
}
ORDER = tuple(LAYERS)
# files read by find_package or included several times on purpose, which therefore have no include guard
UNGUARDED = {
    "compileiq_cmakeConfigVersion",  # find_package's version check, run on every find_package
    "compileiq_project_policies",
}  # included by each entry module; its global property makes it idempotent


def _closure(layer: str) -> set[str]:
    """The layer and every layer it includes, directly or not."""
    seen, todo = set(), [layer]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(LAYERS[name][0])
    return seen


def _provided(layer: str) -> set[str]:
    return {cmd for name in _closure(layer) for cmd in LAYERS[name][1]}


def _code(text: str) -> str:
    """The CMake code of a module: its documentation block and comments left out."""
    if text.startswith(DOC_OPEN):
        text = text[text.index(DOC_CLOSE) + len(DOC_CLOSE) :]
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        lines.append(re.sub(r"\s+#\s.*$", "", line))
    return "\n".join(lines)


def _defined(text: str) -> set[str]:
    return set(re.findall(r"^(?:function|macro)\((\w+)", _code(text), re.M))


def _called(text: str) -> set[str]:
    code = _code(text)
    # a command call opens its line (one command a line here); a deferred one follows CALL
    return set(re.findall(r"^\s*(_?compileiq_\w+)\(", code, re.M)) | set(
        re.findall(r"\bCALL\s+(_?compileiq_\w+)", code)
    )


def _included(text: str) -> list[str]:
    return re.findall(r'^\s*include\("\$\{CMAKE_CURRENT_LIST_DIR\}/(\w+)\.cmake"\)', _code(text), re.M)


# --- the files: short, documented, guarded, layered -----------------------------------------------------------


@pytest.mark.unit
def test_every_module_is_short_and_starts_with_its_documentation():
    modules = sorted(CMAKE.glob("*.cmake"))
    assert {p.stem for p in modules} >= set(LAYERS)
    for path in modules:
        text = path.read_text()
        n = len(text.splitlines())
        assert n < MAX_LINES, f"{path.name} has {n} lines (at most {MAX_LINES - 1}): split it into layers"
        title = path.stem
        assert text.startswith(f"{DOC_OPEN}\n{title}\n{'-' * len(title)}\n"), (
            f"{path.name} does not start with its documentation block titled {title}"
        )
        assert DOC_CLOSE in text, path.name
        if path.stem not in UNGUARDED:
            assert re.search(r"^include_guard\(GLOBAL\)$", _code(text), re.M), f"{path.name}: no include_guard(GLOBAL)"


@pytest.mark.unit
def test_each_layer_documents_what_it_provides_requires_and_who_calls_it():
    for layer, (_, commands) in LAYERS.items():
        if layer == "CompileIQ":
            continue
        text = (CMAKE / f"{layer}.cmake").read_text()
        doc = text[: text.index(DOC_CLOSE)]
        for heading in ("Provides", "Requires", "Called by"):
            assert re.search(rf"^{heading}\n\^+\n", doc, re.M), f"{layer}: no '{heading}' section"
        for cmd in commands:
            assert f"``{cmd}" in doc, f"{layer}: its documentation does not name {cmd}"
        code = _code(text)
        assert code.count("cmake_policy(PUSH)") == code.count("cmake_policy(POP)") == 1, layer
    public = (CMAKE / "CompileIQ.cmake").read_text()
    layers_doc = public[public.index("\nLayers\n^^^^^^\n") : public.index(DOC_CLOSE)]
    for layer in ORDER[:-1]:
        assert f"``{layer}.cmake``" in layers_doc, f"CompileIQ.cmake's Layers section does not name {layer}"


@pytest.mark.unit
def test_each_layer_defines_its_commands_and_no_command_is_defined_twice():
    where: dict[str, str] = {}
    for path in sorted(CMAKE.glob("*.cmake")):
        for cmd in _defined(path.read_text()):
            assert cmd not in where, f"{cmd} is defined in {where[cmd]} and {path.name}"
            where[cmd] = path.name
    for layer, (_, commands) in LAYERS.items():
        assert _defined((CMAKE / f"{layer}.cmake").read_text()) == set(commands), layer


@pytest.mark.unit
def test_inner_layers_never_include_or_call_outer_ones():
    for i, layer in enumerate(ORDER):
        text = (CMAKE / f"{layer}.cmake").read_text()
        includes = [n for n in _included(text) if n != "compileiq_project_policies"]
        assert includes == list(LAYERS[layer][0]), f"{layer} includes {includes}"
        assert all(ORDER.index(n) < i for n in includes), f"{layer} includes a layer outside it: {includes}"
        outside = _called(text) - _provided(layer)
        assert not outside, f"{layer} calls {sorted(outside)}, which no layer it includes provides"
    # the entry files sit outside every layer: none of the layers names them
    for layer in ORDER:
        code = _code((CMAKE / f"{layer}.cmake").read_text())
        for entry in ("compileiq_cmakeConfig.cmake", "compileiq_apply.cmake", "compileiq_variant.cmake"):
            assert entry not in code, f"{layer} refers to the entry file {entry}"


# --- real cmake: each layer on its own ------------------------------------------------------------------------


def _script(
    tmp_path: Path, body: str, name: str = "script.cmake", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    script = tmp_path / name
    script.write_text(body)
    return subprocess.run(["cmake", "-P", str(script)], capture_output=True, text=True, env=env, timeout=120)


def _include(layer: str) -> str:
    return f'include("{(cmake_dir() / f"{layer}.cmake").as_posix()}")\n'


def _values(out: str) -> dict[str, str]:
    """The `message(STATUS "<key>=[<value>]")` lines of a run."""
    return dict(re.findall(r"^-- (\w+)=\[(.*)\]$", out, re.M))


def _project(
    tmp_path: Path, body: str, *defs: str, languages: str = "NONE", minimum: str = "3.24", name: str = "p"
) -> subprocess.CompletedProcess:
    src = tmp_path / name
    src.mkdir(exist_ok=True)
    (src / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION {minimum})\nproject({name} LANGUAGES {languages})\n{body}"
    )
    return configure(src, tmp_path / f"{name}-build", *defs)


@pytest.mark.cmake
def test_the_installed_package_carries_every_module():
    """The layers are installed where the entry modules look for them (beside CompileIQ.cmake)."""
    installed = {p.name for p in cmake_dir().glob("*.cmake")}
    assert installed == {p.name for p in CMAKE.glob("*.cmake")}


@pytest.mark.cmake
@pytest.mark.parametrize("layer", ORDER)
def test_each_layer_includes_on_its_own_and_provides_its_commands(tmp_path, layer):
    outer = {cmd for name in ORDER for cmd in LAYERS[name][1]} - _provided(layer)
    checks = "".join(
        f'if(NOT COMMAND {cmd})\n  message(FATAL_ERROR "{layer} does not provide {cmd}")\nendif()\n'
        for cmd in sorted(_provided(layer))
    )
    checks += "".join(
        f'if(COMMAND {cmd})\n  message(FATAL_ERROR "{layer} pulled in {cmd}")\nendif()\n' for cmd in sorted(outer)
    )
    # twice: the include guard; the policy stack comes back as it was
    body = (
        "cmake_policy(GET CMP0127 before)\n"
        + _include(layer)
        + _include(layer)
        + checks
        + 'cmake_policy(GET CMP0127 after)\nmessage(STATUS "policy=[${before}|${after}]")\n'
    )
    proc = _script(tmp_path, "cmake_minimum_required(VERSION 3.20)\n" + body)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _values(proc.stdout)["policy"] == "|", "a layer leaked its policy settings to the includer"
    assert "compileiq" not in proc.stderr, proc.stderr  # no message of its own when included
    # and in a project, as include(CompileIQ) / find_package do it
    proj = _project(tmp_path, _include(layer) + checks)
    assert proj.returncode == 0, proj.stdout + proj.stderr


@pytest.mark.cmake
def test_public_module_is_found_as_before(tmp_path):
    """include(CompileIQ) through CMAKE_MODULE_PATH and find_package(compileiq_cmake) both give every command."""
    everything = {cmd for name in ORDER for cmd in LAYERS[name][1]}
    checks = "".join(
        f'if(NOT COMMAND {cmd})\n  message(FATAL_ERROR "missing {cmd}")\nendif()\n' for cmd in sorted(everything)
    )
    by_include = _project(
        tmp_path, f'list(APPEND CMAKE_MODULE_PATH "{cmake_dir().as_posix()}")\ninclude(CompileIQ)\n{checks}', name="inc"
    )
    assert by_include.returncode == 0, by_include.stdout + by_include.stderr
    by_package = _project(
        tmp_path,
        "find_package(compileiq_cmake CONFIG REQUIRED)\n"
        + checks
        + "if(NOT COMMAND _compileiq_find_python OR NOT DEFINED CACHE{COMPILEIQ_TUNE})\n"
        '  message(FATAL_ERROR "the package config is not complete")\nendif()\n',
        f"-Dcompileiq_cmake_DIR={cmake_dir()}",
        name="pkg",
    )
    assert by_package.returncode == 0, by_package.stdout + by_package.stderr


# --- behaviour, layer by layer ----------------------------------------------------------------------------------


@pytest.mark.cmake
def test_common_helpers_in_script_mode(tmp_path):
    body = (
        _include("CompileIQCommon")
        + r"""
_compileiq_conditional(plain "" "-O3" "-Xptxas=-v,-O3")
message(STATUS "plain=[${plain}]")
_compileiq_conditional(guarded "$<CONFIG:Release>" "-O3" "-Xcompiler=a>b,c")
message(STATUS "guarded=[${guarded}]")
_compileiq_real_target(real "no_such_target")
message(STATUS "real=[${real}]")
_compileiq_real_targets(reals "a" "b")
message(STATUS "reals=[${reals}]")
set(COMPILEIQ_PYTHON "/opt/py/bin/python3")
set(COMPILEIQ_PYTHONPATH "")
_compileiq_python_command(installed)
message(STATUS "installed=[${installed}]")
set(COMPILEIQ_PYTHONPATH "/src/repo")
_compileiq_python_command(checkout)
string(REPLACE "${CMAKE_COMMAND}" "<cmake>" checkout "${checkout}")
message(STATUS "checkout=[${checkout}]")
"""
    )
    env = os.environ | {"PYTHONPATH": "/deps"}
    proc = _script(tmp_path, body, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = _values(proc.stdout)
    assert values["plain"] == "-O3;-Xptxas=-v,-O3"
    assert values["guarded"] == "$<$<CONFIG:Release>:-O3>;$<$<CONFIG:Release>:-Xcompiler=a$<ANGLE-R>b$<COMMA>c>"
    assert values["real"] == "" and values["reals"] == ""  # no target at all in script mode
    assert values["installed"] == "/opt/py/bin/python3;-P;-m;compileiq_cmake"
    assert values["checkout"] == "<cmake>;-E;env;PYTHONPATH=/src/repo:/deps;/opt/py/bin/python3;-P;-m;compileiq_cmake"

    missing = _script(tmp_path, _include("CompileIQCommon") + "_compileiq_python_command(cmd)\n", name="none.cmake")
    assert missing.returncode != 0
    assert "compileiq: no Python 3.11 or newer interpreter was found; set COMPILEIQ_PYTHON" in " ".join(
        missing.stderr.split()
    )


@pytest.mark.cmake
def test_common_helpers_on_targets(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "lib.cpp").write_text("int f() { return 1; }\n")
    (tmp_path / "p" / "main.cpp").write_text("int main() { return 0; }\n")
    (tmp_path / "p" / "sub").mkdir()
    (tmp_path / "p" / "sub" / "CMakeLists.txt").write_text("add_executable(other ../main.cpp)\n")
    body = (
        _include("CompileIQCommon")
        + r"""
add_library(lib STATIC lib.cpp)
add_library(lib_alias ALIAS lib)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE lib)
add_custom_target(tool)
add_subdirectory(sub)
_compileiq_real_targets(reals lib_alias ghost app)
message(STATUS "reals=[${reals}]")
_compileiq_all_targets(all)
message(STATUS "all=[${all}]")
_compileiq_consumers(lib users)
message(STATUS "users=[${users}]")
_compileiq_add_flags(app CXX "" -O3 "-DX=a,b")
_compileiq_add_flags(app CXX Release -funroll-loops)
get_target_property(opts app COMPILE_OPTIONS)
message(STATUS "opts=[${opts}]")
_compileiq_source_options(app "${CMAKE_CURRENT_SOURCE_DIR}/main.cpp" "" -fno-math-errno)
get_property(src SOURCE main.cpp TARGET_DIRECTORY app PROPERTY COMPILE_OPTIONS)
message(STATUS "src=[${src}]")
"""
    )
    proc = _project(tmp_path, body, languages="CXX")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = _values(proc.stdout)
    assert values["reals"] == "lib;app"
    assert values["all"] == "lib;app;other"  # directory by directory, the custom target left out
    assert values["users"] == "app"
    assert values["opts"] == (
        "$<$<COMPILE_LANGUAGE:CXX>:-O3>;$<$<COMPILE_LANGUAGE:CXX>:-DX=a$<COMMA>b>;"
        "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release>>:-funroll-loops>"
    )
    assert values["src"] == "$<$<STREQUAL:$<TARGET_PROPERTY:NAME>,app>:-fno-math-errno>"


@pytest.mark.cmake
def test_arch_helpers_in_script_mode(tmp_path):
    body = (
        _include("CompileIQArch")
        + r"""
_compileiq_unwrap_option(core "$<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:-rdc=true>")
message(STATUS "unwrapped=[${core}]")
_compileiq_unwrap_option(core "SHELL:  -code sm_86")
message(STATUS "shell=[${core}]")
foreach(item IN ITEMS "-arch=sm_90" "-arch" "-architecture=x" "--gpu-code sm_80" "-O3")
  _compileiq_arch_option(name rest "${item}")
  list(APPEND named "${name}|${rest}")
endforeach()
message(STATUS "named=[${named}]")
_compileiq_flag_archs(archs opts -O3 -gencode arch=compute_70,code=sm_70 "$<$<COMPILE_LANGUAGE:CUDA>:-arch=sm_90a>"
  "SHELL:-code sm_86" --gpu-architecture=all-major "-arch=sm_90a" -Xptxas=-v)
message(STATUS "archs=[${archs}]")
message(STATUS "opts=[${opts}]")
set(flags -O3 -arch sm_70 --use_fast_math "-gencode=arch=compute_80,code=sm_80" -Xptxas=-v
  "$<$<COMPILE_LANGUAGE:CUDA>:--generate-code=arch=compute_90,code=sm_90>" -lineinfo)
_compileiq_strip_arch_options(flags)
message(STATUS "stripped=[${flags}]")
"""
    )
    proc = _script(tmp_path, body)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = _values(proc.stdout)
    assert values["unwrapped"] == "-rdc=true"
    assert values["shell"] == "-code sm_86"
    # "-architecture=x" is no architecture option: the name must end at '=', a blank or the item's end
    assert values["named"] == "-arch|=sm_90;-arch|;|;--gpu-code| sm_80;|"
    assert values["archs"] == "70;90a;86;all-major"
    assert (
        values["opts"] == "-gencode arch=compute_70,code=sm_70;-arch=sm_90a;-code sm_86;"
        "--gpu-architecture=all-major;-arch=sm_90a"
    )
    assert values["stripped"] == "-O3;--use_fast_math;-Xptxas=-v;-lineinfo"


@pytest.mark.cmake
def test_arch_of_a_target(tmp_path):
    body = (
        _include("CompileIQArch")
        + r"""
add_custom_target(listed)
set_property(TARGET listed PROPERTY CUDA_ARCHITECTURES "90-real;80-virtual;90")
_compileiq_cuda_archs(listed archs from)
message(STATUS "listed=[${archs}|${from}]")
set(CMAKE_CUDA_FLAGS "-O3 -gencode arch=compute_75,code=sm_75")
add_custom_target(hand)
set_property(TARGET hand PROPERTY CUDA_ARCHITECTURES OFF)
set_property(TARGET hand PROPERTY COMPILE_OPTIONS "-arch=sm_86")
_compileiq_cuda_archs(hand archs from)
message(STATUS "hand=[${archs}|${from}]")
"""
    )
    proc = _project(tmp_path, body)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = _values(proc.stdout)
    assert values["listed"] == "90;80|CUDA_ARCHITECTURES"
    assert values["hand"] == (
        "75;86|-gencode arch=compute_75,code=sm_75 in CMAKE_CUDA_FLAGS; -arch=sm_86 in the target's COMPILE_OPTIONS"
    )


@pytest.mark.cmake
def test_records_check_record_in_script_mode(tmp_path):
    check = tmp_path / "check.txt"
    body = (
        _include("CompileIQRecords")
        + f"""
_compileiq_check_record(app "" ignored "before the file is named")
set(COMPILEIQ_CHECK_FILE "{check.as_posix()}")
_compileiq_check_record(app 90 applied "2 tuned flags for CUDA sm_90: -O3 -lineinfo")
_compileiq_check_record(app 90 stale "its sources changed since the tune")
set(COMPILEIQ_CHECK_FILE "")
_compileiq_check_record(app "" ignored "after it is unset")
"""
    )
    proc = _script(tmp_path, body)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert check.read_text() == (
        "app\t90\tapplied\t2 tuned flags for CUDA sm_90: -O3 -lineinfo\n"
        "app\t90\tstale\tits sources changed since the tune\n"
    )


@pytest.mark.cmake
def test_records_hashes_follow_their_documented_rule(tmp_path):
    """sources_sha256 over the sorted "<path>\\t<sha256>" lines (sources, then the headers; "missing" for a
    header that is gone; generator expressions and build-tree files left out), and flags_sha256 over
    CMAKE_<LANG>_FLAGS[_<CONFIG>] with CUDA architecture options left out: the rules the tool relies on."""
    src = tmp_path / "p"
    (src / "sub").mkdir(parents=True)
    files = {"b.cu": "__global__ void k() {}\n", "sub/a.cu": "int a;\n", "inc/h.h": "#pragma once\n"}
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    body = (
        _include("CompileIQRecords")
        + r"""
file(WRITE "${CMAKE_BINARY_DIR}/gen.cu" "int g;\n")
add_custom_target(t SOURCES b.cu sub/a.cu "${CMAKE_BINARY_DIR}/gen.cu")
set_property(TARGET t APPEND PROPERTY SOURCES "$<$<CONFIG:Debug>:${CMAKE_SOURCE_DIR}/b.cu>")
_compileiq_source_lines(t lines)
string(REPLACE "\t" "<TAB>" shown "${lines}")
message(STATUS "lines=[${shown}]")
_compileiq_sources_sha256(t sources inc/h.h inc/gone.h)
message(STATUS "sources=[${sources}]")
set(CMAKE_CUDA_FLAGS "-O3 -arch=sm_90 --use_fast_math")
set(CMAKE_CUDA_FLAGS_RELEASE "-DNDEBUG -gencode arch=compute_80,code=sm_80")
set(CMAKE_CXX_FLAGS "-march=native -arch=sm_90")
_compileiq_flags_sha256(t CUDA Release cuda)
message(STATUS "cuda=[${cuda}]")
_compileiq_flags_sha256(t CXX Release cxx)
message(STATUS "cxx=[${cxx}]")
"""
    )
    proc = _project(tmp_path, body)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = _values(proc.stdout)

    def sha(text: str | bytes) -> str:
        return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()

    lines = [f"b.cu\t{sha(files['b.cu'])}", f"sub/a.cu\t{sha(files['sub/a.cu'])}"]
    assert values["lines"] == ";".join(lines).replace("\t", "<TAB>")
    expected = sorted([*lines, f"inc/h.h\t{sha(files['inc/h.h'])}", "inc/gone.h\tmissing"])
    assert values["sources"] == sha("\n".join(expected))
    assert values["cuda"] == sha("CMAKE_CUDA_FLAGS=-O3 --use_fast_math\nCMAKE_CUDA_FLAGS_RELEASE=-DNDEBUG\n")
    assert values["cxx"] == sha("CMAKE_CXX_FLAGS=-march=native -arch=sm_90\nCMAKE_CXX_FLAGS_RELEASE=\n")


_LTO_DECISIONS = r"""
add_custom_target(sep)
set_property(TARGET sep PROPERTY CUDA_SEPARABLE_COMPILATION ON)
add_custom_target(by_flags)
set_property(TARGET by_flags PROPERTY COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:CUDA>:-rdc=true>")
add_custom_target(two_items)
set_property(TARGET two_items PROPERTY COMPILE_OPTIONS "-rdc;true")
add_custom_target(plain)
set(CMAKE_CUDA_FLAGS_RELEASE "-dc")
foreach(t IN ITEMS sep by_flags two_items plain)
  _compileiq_relocatable(${t} relocatable)
  _compileiq_relocatable(${t} relocatable_release Release)
  _compileiq_device_lto_refusal(${t} why)
  message(STATUS "${t}=[${relocatable}|${relocatable_release}|${why}]")
endforeach()
"""


@pytest.mark.cmake
def test_lto_decisions_follow_the_project_policy(tmp_path):
    """Relocatable device code and the one device-LTO refusal rule; CMP0105 as the project set it (the layer
    records it through compileiq_project_policies.cmake when included on its own)."""
    old = _project(tmp_path, _include("CompileIQLTO") + _LTO_DECISIONS, minimum="3.17", name="old")
    new = _project(tmp_path, _include("CompileIQLTO") + _LTO_DECISIONS, name="new")
    for proc in (old, new):
        assert proc.returncode == 0, proc.stdout + proc.stderr
    old_values, new_values = _values(old.stdout), _values(new.stdout)
    assert old_values["sep"].startswith(
        "TRUE|TRUE|CMake passes no link options to the device link, where device "
        "LTO acts, under the project's policy CMP0105 (not NEW"
    )
    assert new_values["sep"] == "TRUE|TRUE|"
    for values in (old_values, new_values):
        assert values["by_flags"] == values["two_items"].replace("two_items", "by_flags")
        assert values["by_flags"] == (
            "TRUE|TRUE|by_flags builds relocatable device code through -rdc=true in its "
            "flags, not with CUDA_SEPARABLE_COMPILATION, under which CMake runs the "
            "device link where device LTO acts: set CUDA_SEPARABLE_COMPILATION ON"
        )
        assert values["plain"] == (
            "FALSE|TRUE|plain does not build relocatable device code (CUDA_SEPARABLE_COMPILATION or -rdc=true)"
        )


@pytest.mark.cmake
def test_lto_options_reach_cuda_compiles_and_the_measured_device_link(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "lib.cpp").write_text("int f() { return 1; }\n")
    (tmp_path / "p" / "main.cpp").write_text("int main() { return 0; }\n")
    body = (
        _include("CompileIQLTO")
        + r"""
add_library(lib STATIC lib.cpp)
add_executable(app main.cpp)
add_executable(app_alias ALIAS app)
add_executable(unmeasured main.cpp)
target_link_libraries(app PRIVATE lib)
target_link_libraries(unmeasured PRIVATE lib)
_compileiq_device_lto(TARGET lib CONFIG Release ARCH 90 DEVICE_LINK app_alias ghost
  OUT_FORWARDED forwarded OUT_AT at FLAGS -O3 -Xptxas=-O3 -maxrregcount=64 --use_fast_math)
message(STATUS "forwarded=[${forwarded}]")
message(STATUS "at=[${at}]")
get_target_property(compile lib COMPILE_OPTIONS)
message(STATUS "compile=[${compile}]")
_compileiq_device_lto(TARGET app CONFIG "" ARCH 80 OUT_FORWARDED forwarded OUT_AT at)
message(STATUS "own=[${at}|${forwarded}]")
foreach(t IN ITEMS lib app unmeasured)
  get_target_property(link ${t} LINK_OPTIONS)
  message(STATUS "link_${t}=[${link}]")
endforeach()
get_target_property(compile app COMPILE_OPTIONS)
message(STATUS "compile_app=[${compile}]")
"""
    )
    proc = _project(tmp_path, body, languages="CXX")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = _values(proc.stdout)
    assert values["forwarded"] == "-Xptxas=-O3;-maxrregcount=64"
    assert values["at"] == "app"
    assert (
        values["compile"]
        == "$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<CONFIG:Release>>:--generate-code=arch=compute_90$<COMMA>code=lto_90>"
    )
    assert values["link_lib"] == "link-NOTFOUND" and values["link_unmeasured"] == "link-NOTFOUND"
    assert values["link_app"].split(";")[:3] == [
        "$<DEVICE_LINK:$<$<CONFIG:Release>:-dlto>>",
        "$<DEVICE_LINK:$<$<CONFIG:Release>:-Xptxas=-O3>>",
        "$<DEVICE_LINK:$<$<CONFIG:Release>:-maxrregcount=64>>",
    ]
    assert values["link_app"].endswith(";$<DEVICE_LINK:-dlto>")  # the second call: an executable links itself
    assert values["own"] == "app|"
    assert values["compile_app"] == "$<$<COMPILE_LANGUAGE:CUDA>:--generate-code=arch=compute_80$<COMMA>code=lto_80>"


@pytest.mark.cmake
def test_apply_entry_for_an_undefined_target_in_script_mode(tmp_path):
    check = tmp_path / "check.txt"
    body = (
        _include("CompileIQApply")
        + f"""
set(COMPILEIQ_CHECK_FILE "{check.as_posix()}")
_compileiq_entry(TARGET ghost LANGUAGE CUDA ARCH 90 COMPILER_ID NVIDIA COMPILER_VERSION 12.8 CONFIG Release
  FLAGS -O3)
_compileiq_source_flags(TARGET ghost LANGUAGE CUDA ARCH 90 CONFIG Release SOURCE k.cu FLAGS -lineinfo)
_compileiq_source_flags_done(TARGET ghost LANGUAGE CUDA ARCH 90 COUNT 1)
_compileiq_apply_flags_file()
message(STATUS "done=[yes]")
"""
    )
    proc = _script(tmp_path, body)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _values(proc.stdout)["done"] == "yes"  # COMPILEIQ_APPLY unset: the flags file is not read
    assert (
        "compileiq: compileiq.toml has flags for target 'ghost' which this project does not define; ignored"
        in " ".join(proc.stderr.split())
    )
    assert check.read_text() == "ghost\t90\tignored\tthis project does not define the target\n"


@pytest.mark.cmake
def test_apply_refuses_what_it_cannot_compile_and_schedules_the_flags_file(tmp_path):
    body = (
        _include("CompileIQApply")
        + r"""
set(COMPILEIQ_CHECK_FILE "${CMAKE_BINARY_DIR}/check.txt")
add_library(headers INTERFACE)
add_library(headers_alias ALIAS headers)
add_custom_target(tool)
foreach(t IN ITEMS headers_alias tool)
  _compileiq_entry(TARGET ${t} LANGUAGE CXX ARCH "" COMPILER_ID GNU COMPILER_VERSION 12.2 CONFIG "" FLAGS -O3)
endforeach()
set(COMPILEIQ_APPLY ON)
set(COMPILEIQ_FLAGS_FILE "no_such.toml")
_compileiq_schedule_apply()
_compileiq_schedule_apply()
message(STATUS "scheduled=[yes]")
"""
    )
    proc = _project(tmp_path, body)
    assert _values(proc.stdout)["scheduled"] == "yes"
    err = " ".join(proc.stderr.split())
    assert "compileiq.toml has flags for target 'headers' which this project does not compile; ignored" in err
    assert "compileiq.toml has flags for target 'tool' which this project does not compile; ignored" in err
    # the flags file is read once, at the end of the top-level directory
    assert proc.returncode != 0 and err.count("compileiq: COMPILEIQ_FLAGS_FILE=no_such.toml does not exist.") == 1
    check = (tmp_path / "p-build" / "check.txt").read_text()
    assert check == (
        "headers_alias\t\tignored\tthis project does not compile the target\n"
        "tool\t\tignored\tthis project does not compile the target\n"
    )
