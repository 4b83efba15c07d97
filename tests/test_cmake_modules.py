"""The CMake side: compileiq_tune() argument checks, and the apply logic's matching rules and refusal of
hostile TOML files, through real configures."""

from __future__ import annotations

import shutil
import subprocess
import tomllib

import pytest
import tomli_w

from compileiq_cmake.results.toml_io import write_entry

from conftest import EXAMPLES, cmake_dir, commands_for, configure, copy_project, tune_command_rules
from test_result_file import make_entry


def _host_project(tmp_path):
    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    return src


def _gcc_version_major_minor(build):
    cache = (build / "CMakeFiles").glob("*/CMakeCXXCompiler.cmake")
    text = next(cache).read_text()
    import re

    return re.search(r'set\(CMAKE_CXX_COMPILER_VERSION "(\d+\.\d+)', text).group(1)


def _host_entry(version, **kw):
    base = dict(
        target="host_kernels",
        language="CXX",
        arch="",
        compiler_id="GNU",
        compiler_version=version,
        flags=("-funroll-loops", "-fno-math-errno"),
        compute_capability="",
        device="cpu",
    )
    base.update(kw)
    return make_entry(**base)


@pytest.mark.cmake
def test_matching_entry_is_applied_and_mismatches_warn(tmp_path, compiler_versions):
    src = _host_project(tmp_path)
    version = compiler_versions.cxx_major_minor + ".0"
    toml = src / "compileiq.toml"

    write_entry(toml, _host_entry(version))
    ok = configure(src, tmp_path / "ok", "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert ok.returncode == 0 and "applied 2 tuned flags to host_kernels" in ok.stdout
    (cmd,) = commands_for(tmp_path / "ok", "main.cpp")
    assert "-funroll-loops" in cmd and "-fno-math-errno" in cmd

    toml.unlink()
    write_entry(toml, _host_entry("1.0.0"))
    old = configure(src, tmp_path / "old", "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert old.returncode == 0
    assert "GNU 1.0" in old.stderr and "not applied" in old.stderr.replace("\n", " ")
    (cmd,) = commands_for(tmp_path / "old", "main.cpp")
    assert "-funroll-loops" not in cmd

    toml.unlink()
    write_entry(toml, _host_entry(version, target="not_in_project"))
    other = configure(src, tmp_path / "other", "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert other.returncode == 0 and "not_in_project" in other.stderr


@pytest.mark.cmake
def test_an_entry_tuned_for_one_build_type_applies_to_that_configuration_only(tmp_path, compiler_versions):
    """Release-tuned flags: a Debug build does not get them; a multi-config generator gets them inside
    $<CONFIG:Release> (impl-Release.ninja has them, impl-Debug.ninja not)."""
    src = _host_project(tmp_path)
    toml = src / "compileiq.toml"
    write_entry(toml, _host_entry(compiler_versions.cxx_major_minor + ".0", build_type="Release"))
    debug = configure(src, tmp_path / "debug", "-DCMAKE_BUILD_TYPE=Debug", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert debug.returncode == 0 and "tuned for the Release build type" in debug.stdout, debug.stdout
    (cmd,) = commands_for(tmp_path / "debug", "main.cpp")
    assert "-funroll-loops" not in cmd
    # no build type at all (no -O level; the example's own default to Release removed): not applied, and
    # the line says how to get them
    lists = src / "CMakeLists.txt"
    lists.write_text(lists.read_text().replace("if(NOT CMAKE_BUILD_TYPE AND", "if(FALSE AND"))
    plain = configure(src, tmp_path / "plain", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert (
        plain.returncode == 0 and "no CMAKE_BUILD_TYPE" in plain.stdout and "-DCMAKE_BUILD_TYPE=Release" in plain.stdout
    )
    assert "applied" not in plain.stdout.replace("not applied", "")
    (cmd,) = commands_for(tmp_path / "plain", "main.cpp")
    assert "-funroll-loops" not in cmd
    if not shutil.which("ninja"):
        import pytest

        pytest.skip("ninja is not installed")
    multi = tmp_path / "multi"
    proc = subprocess.run(
        ["cmake", "-S", str(src), "-B", str(multi), "-G", "Ninja Multi-Config", f"-Dcompileiq_cmake_DIR={cmake_dir()}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "applied 2 tuned flags to host_kernels (CXX GNU" in proc.stdout
        and "for the Release configuration" in proc.stdout
    )
    assert "-funroll-loops" in (multi / "CMakeFiles" / "impl-Release.ninja").read_text()
    assert "-funroll-loops" not in (multi / "CMakeFiles" / "impl-Debug.ninja").read_text()


@pytest.mark.cmake
def test_cuda_entry_for_another_architecture_is_not_applied(tmp_path, compiler_versions):
    """n-body builds 75;80;90: an sm_100 entry must not be applied; an sm_90 one is, with a note."""
    src = tmp_path / "nbody"
    shutil.copytree(EXAMPLES / "cuda_nbody", src)
    if not compiler_versions.cuda:  # no nvcc here
        pytest.skip("CUDA is not available")
    version = compiler_versions.cuda
    toml = src / "compileiq.toml"
    write_entry(toml, make_entry(arch="100", compiler_version=version, flags=("--use_fast_math",)))
    proc = configure(src, tmp_path / "b100", "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert proc.returncode == 0 and "sm_100" in proc.stderr and "not applied" in proc.stderr.replace("\n", " ")
    assert not any("--use_fast_math" in c for c in commands_for(tmp_path / "b100", "nbody.cu"))
    toml.unlink()
    write_entry(toml, make_entry(arch="90", compiler_version=version, flags=("--use_fast_math",)))
    proc = configure(src, tmp_path / "b90", "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert proc.returncode == 0 and "applied 1 tuned flag to nbody" in proc.stdout
    assert all("--use_fast_math" in c for c in commands_for(tmp_path / "b90", "nbody.cu"))


@pytest.mark.cmake
def test_hostile_toml_stops_the_configure_with_one_clear_message(tmp_path):
    src = _host_project(tmp_path)
    toml = src / "compileiq.toml"
    write_entry(toml, _host_entry("12.2.0"))
    data = tomllib.loads(toml.read_text())
    data["entry"][0]["flags"] = ['-O3")\nexecute_process(COMMAND touch PWNED)\n#']
    toml.write_text(tomli_w.dumps(data))
    proc = configure(src, tmp_path / "b", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert proc.returncode != 0
    assert "refusing flag" in proc.stderr
    assert not (tmp_path / "b" / "PWNED").exists() and not (src / "PWNED").exists()


@pytest.mark.cmake
def test_explicit_flags_file_that_does_not_exist_is_an_error(tmp_path):
    src = _host_project(tmp_path)
    proc = configure(
        src,
        tmp_path / "b",
        f"-Dcompileiq_cmake_DIR={cmake_dir()}",
        f"-DCOMPILEIQ_FLAGS_FILE={tmp_path / 'missing.toml'}",
    )
    assert proc.returncode != 0 and "missing.toml" in proc.stderr


@pytest.mark.cmake
def test_compileiq_tune_argument_errors(tmp_path):
    src = tmp_path / "p"
    src.mkdir()
    (src / "main.cpp").write_text("int main() { return 0; }\n")
    for call, message in [
        ('compileiq_tune(app METRIC "t=([0-9]+)")', "BENCHMARK"),
        ("compileiq_tune(app BENCHMARK app)", "METRIC"),
        ("compileiq_tune(app BENCHMARK app METRIC WALLTIME LOWER_IS_BETTER HIGHER_IS_BETTER)", "HIGHER_IS_BETTER"),
        ("compileiq_tune(app BENCHMARK app METRIC WALLTIME BUDGET many)", "BUDGET"),
        ("compileiq_tune(missing BENCHMARK app METRIC WALLTIME)", "missing"),
    ]:
        (src / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.16)\nproject(p LANGUAGES CXX)\nadd_executable(app main.cpp)\n"
            "find_package(compileiq_cmake CONFIG REQUIRED)\n" + call + "\n"
        )
        build = tmp_path / f"b{abs(hash(call))}"
        proc = configure(src, build, f"-Dcompileiq_cmake_DIR={cmake_dir()}", "-DCOMPILEIQ_TUNE=ON")
        assert proc.returncode != 0, call
        assert message in proc.stderr, (call, proc.stderr)


@pytest.mark.cmake
def test_compileiq_tune_keywords_reach_the_tune_command(tmp_path):
    """GPUS, EXECUTOR and RAY_ADDRESS (and the other one-value keywords) become options of the tune command."""
    rules = tune_command_rules(tmp_path, "BUDGET 7 GPUS 0,1 EXECUTOR ray RAY_ADDRESS auto")
    for option in ("--budget=7", "--gpus=0,1", "--executor=ray", "--ray-address=auto"):
        assert option in rules, option


@pytest.mark.cmake
def test_per_source_flags_go_to_that_file_only(tmp_path, compiler_versions):
    """An entry's per-source part: the file's own flags come after the target's in its compile command, the
    other files do not get them, a path that is not a source of the target is refused with a warning, and
    an entry that does not apply takes its per-source part with it."""
    src = tmp_path / "p"
    (src / "src").mkdir(parents=True)
    for name in ("a.cpp", "b.cpp"):
        (src / "src" / name).write_text(f"int {name[0]}() {{ return 1; }}\n")
    (src / "main.cpp").write_text("int a(); int b(); int main() { return a() + b() - 2; }\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p LANGUAGES CXX)\n"
        "add_executable(app main.cpp src/a.cpp src/b.cpp)\n"
    )
    version = compiler_versions.cxx_major_minor + ".0"
    toml = src / "compileiq.toml"
    parts = ({"path": "src/b.cpp", "flags": ["-O2", "-fno-math-errno"]}, {"path": "src/gone.cpp", "flags": ["-O2"]})
    write_entry(toml, _host_entry(version, target="app", flags=("-funroll-loops",), sources=parts))
    apply = f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}"
    ok = configure(src, tmp_path / "ok", "-DCMAKE_BUILD_TYPE=Release", apply)
    assert ok.returncode == 0, ok.stderr
    assert "1 of 2 source files of app got their own flags: src/b.cpp" in ok.stdout, ok.stdout
    assert "src/gone.cpp, which is not a source of app" in " ".join(ok.stderr.split())
    (b,) = commands_for(tmp_path / "ok", "b.cpp")
    (a,) = commands_for(tmp_path / "ok", "a.cpp")
    assert "-funroll-loops" in a and "-O2" not in a.split()
    assert b.index("-funroll-loops") < b.index(" -O2 ") < b.index("-fno-math-errno")  # after the target's
    assert b.rindex(" -O2 ") > b.index(" -O3 ")  # the last -O wins: the file's own
    toml.unlink()
    write_entry(toml, _host_entry("1.0.0", target="app", flags=("-funroll-loops",), sources=parts[:1]))
    old = configure(src, tmp_path / "old", "-DCMAKE_BUILD_TYPE=Release", apply)
    assert old.returncode == 0 and "got their own flags" not in old.stdout
    (b,) = commands_for(tmp_path / "old", "b.cpp")
    assert "-O2" not in b.split()


def _nvcc_version(build) -> str:
    import re

    text = next((build / "CMakeFiles").glob("*/CMakeCUDACompiler.cmake")).read_text()
    return re.search(r'set\(CMAKE_CUDA_COMPILER_VERSION "([\d.]+)"', text).group(1)


@pytest.mark.cmake
def test_device_lto_entry_sets_the_compile_and_the_device_link_side(tmp_path, compiler_versions):
    """device_lto = true: every CUDA compile line of the target also makes LTO-IR (code=lto_90 beside the
    machine code; nvcc refuses -dlto next to --generate-code) and its device link gets -dlto, the status line
    says so, nvcc compiles such an object here; a target without relocatable device code does not get it,
    with a warning."""
    from conftest import HAVE_NVCC

    if not HAVE_NVCC:
        pytest.skip("nvcc is not installed")
    src = tmp_path / "separable"
    copy_project("separable", src)
    arch = "-DCMAKE_CUDA_ARCHITECTURES=90"
    version = compiler_versions.cuda
    entry = make_entry(
        target="sep_bench", compiler_version=version, flags=("-maxrregcount=64",), device_lto=True, sources_sha256=""
    )
    write_entry(src / "compileiq.toml", entry)
    apply = f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}"
    rel = tmp_path / "rel"
    proc = configure(src, rel, "-DCMAKE_BUILD_TYPE=Release", arch, apply)
    assert proc.returncode == 0, proc.stderr
    assert (
        "device LTO of its CUDA code only: code=lto_90 at compile, -dlto at the device link of sep_bench" in proc.stdout
    ), proc.stdout
    commands = commands_for(rel, ".cu")
    assert len(commands) == 2 and all(
        "code=lto_90" in c and "code=[compute_90,sm_90]" in c and "-maxrregcount=64" in c for c in commands
    ), commands
    rules = (
        (rel / "build.ninja").read_text()
        if (rel / "build.ninja").is_file()
        else "".join(p.read_text() for p in rel.rglob("*.make") if p.is_file())
        + "".join(p.read_text() for p in rel.rglob("dlink.txt") if p.is_file())
    )
    dlink = [line for line in rules.splitlines() if "-dlink" in line or "cmake_device_link" in line.lower()]
    assert any("-dlto" in line for line in rules.splitlines() if "LINK_FLAGS" in line or "-dlink" in line), dlink[:5]
    # code is generated at the device link under LTO: the ptxas-side options go there too, and the line says so
    assert any("-maxrregcount=64" in line for line in rules.splitlines() if "LINK_FLAGS" in line or "-dlink" in line), (
        dlink[:5]
    )
    assert "-dlto at the device link of sep_bench with -maxrregcount=64" in proc.stdout
    obj = subprocess.run(
        ["cmake", "--build", str(rel), "--target", "CMakeFiles/sep_bench.dir/src/device_math.cu.o"],
        capture_output=True,
        text=True,
    )
    assert obj.returncode == 0, obj.stdout[-2000:] + obj.stderr[-2000:]
    # not relocatable: the entry is refused with a reason
    plain = tmp_path / "plain"
    shutil.copytree(src, plain, ignore=shutil.ignore_patterns("compileiq.toml"))
    text = (
        (plain / "CMakeLists.txt")
        .read_text()
        .replace("CUDA_SEPARABLE_COMPILATION ON", "CUDA_SEPARABLE_COMPILATION OFF")
    )
    (plain / "CMakeLists.txt").write_text(text)
    write_entry(plain / "compileiq.toml", entry)
    proc = configure(plain, tmp_path / "rel-plain", "-DCMAKE_BUILD_TYPE=Release", arch, apply)
    assert proc.returncode == 0
    assert "does not build relocatable device code" in " ".join(proc.stderr.split())
    assert not any("lto_90" in c for c in commands_for(tmp_path / "rel-plain", ".cu"))


@pytest.mark.cmake
def test_one_version_source_for_the_wheel_and_the_cmake_package(tmp_path):
    """__version__ is the one version: the installed distribution's metadata and find_package's version
    check (compileiq_cmakeConfigVersion.cmake reads it) say the same; a newer major version is refused."""
    import importlib.metadata

    import compileiq_cmake

    assert importlib.metadata.version("compileiq-cmake") == compileiq_cmake.__version__
    src = tmp_path / "p"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p LANGUAGES NONE)\n"
        "find_package(compileiq_cmake ${WANT} CONFIG REQUIRED)\n"
        'message(STATUS "found compileiq_cmake ${compileiq_cmake_VERSION}")\n'
    )
    ok = configure(src, tmp_path / "ok", f"-Dcompileiq_cmake_DIR={cmake_dir()}", "-DWANT=0.1")
    assert ok.returncode == 0 and f"found compileiq_cmake {compileiq_cmake.__version__}" in ok.stdout, (
        ok.stdout + ok.stderr
    )
    newer = configure(src, tmp_path / "newer", f"-Dcompileiq_cmake_DIR={cmake_dir()}", "-DWANT=1.0")
    assert newer.returncode != 0 and compileiq_cmake.__version__ in newer.stderr, newer.stderr
