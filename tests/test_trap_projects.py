"""Trap projects (tests/projects/): the layouts real CUDA projects use, each taken through everything up to
the GPU phase with real cmake + nvcc: configure, the project's own architecture, adaptation notes,
screening, a variant build whose injected flags reach every CUDA source (compile_commands.json, the truth of
what CMake does), device-code fingerprints, and the apply of a TOML written for it in a fresh release
configure through the unmodified route (CMAKE_PROJECT_TOP_LEVEL_INCLUDES)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from compileiq_cmake.measure.metrics import read_regex
from compileiq_cmake.model.records import FlagSet
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.model.wording import plural
from compileiq_cmake.project.nvcc_command import normalize, tokens
from compileiq_cmake.results.schema import FlagsEntry
from compileiq_cmake.results.toml_io import write_entry
from compileiq_cmake.tune.setup import setup
from compileiq_cmake.tune.trial import build_variant as _build
from compileiq_cmake.tune.trial import device_code as _device_code
from compileiq_cmake.tune.tune_setup import TuneSetup

from conftest import cmake_dir, compile_commands, configure, copy_project, needs_nvcc

SM90 = "-DCMAKE_CUDA_ARCHITECTURES=90"  # as a user with an H200 configures (these projects leave it open)
METRIC = "time_ms=([0-9.eE+-]+)"

pytestmark = needs_nvcc


@dataclass
class Trap:
    src: Path
    build: Path
    setup: TuneSetup
    lines: list[str]

    @property
    def log(self) -> str:
        return "\n".join(self.lines)


def _setup(
    tmp_path: Path, project: str, target: str, bench: str, include: tuple[str, ...], *defs: str, screen: bool = True
) -> Trap:
    src = tmp_path / project
    copy_project(project, src)
    build = tmp_path / "build"
    proc = configure(src, build, "-DCMAKE_BUILD_TYPE=Release", *defs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spec = TuneSpec(
        source_dir=src,
        build_dir=build,
        target=target,
        benchmark=(bench,),
        metric=MetricSpec.parse(METRIC, True),
        output=src / "compileiq.toml",
        pass_regex="PASS",
        cuda_arch="90",
        workers=1,
        include_flags=include,
        screen=screen,
    )
    lines: list[str] = []
    return Trap(src, build, setup(spec, lines.append), lines)


def _cuda_commands(build: Path, sources: tuple[Path, ...]) -> list[list[str]]:
    wanted = {p.resolve() for p in sources}
    found = [normalize(tokens(e)) for e in compile_commands(build) if Path(e["file"]).resolve() in wanted]
    assert len(found) == len(wanted), f"one compile command per CUDA source: {len(found)} of {len(wanted)}"
    return found


def _variant_build_carries(trap: Trap, flags: tuple[str, ...]) -> FlagSet:
    """A variant build with `flags` succeeds, fingerprints the device code, and every CUDA source of the
    target is compiled with them (and for sm_90 only)."""
    ts = trap.setup
    flagset = ts.space.flagset_from_flags(list(flags))
    result = _build(ts, ts.trees[0], flagset)
    assert result.ok, result.log_tail
    assert result.fingerprint and result.kernels, "the device code is fingerprinted"
    for command in _cuda_commands(ts.trees[0].path, ts.project.target.sources_in("CUDA")):
        for flag in flagset.flags:
            assert flag in command, (flag, command)
        archs = [t for t in command if t.startswith(("-arch=", "-gencode="))]
        assert archs and all("90" in a and "75" not in a and "80" not in a for a in archs), archs
    return flagset


def _apply(trap: Trap, tmp_path: Path, flags: tuple[str, ...], *defs: str, name: str = "rel") -> str:
    """Write a TOML entry as a tune would, configure a fresh release build through the unmodified route and
    check that every CUDA source of the target gets the flags; returns the configure's output."""
    ts = trap.setup
    entry = FlagsEntry(
        target=ts.spec.target,
        language="CUDA",
        arch="90",
        compiler_id="NVIDIA",
        compiler_version=ts.project.toolchain.version,
        flags=flags,
        build_type="Release",
        device="test",
        compute_capability="9.0",
        metric=METRIC,
        lower_is_better=True,
        workloads=("",),
        baseline=(2.0,),
        tuned=(1.0,),
        speedup=2.0,
        trials=3,
        date="2026-11-30T12:00:00+00:00",
        tool_version="test",
        sources_sha256=ts.code.sources_sha256,
        headers=ts.code.headers,
        flags_sha256=ts.code.flags_sha256,
    )
    write_entry(trap.src / "compileiq.toml", entry)
    rel = tmp_path / name
    apply_module = cmake_dir() / "compileiq_apply.cmake"
    proc = configure(
        trap.src, rel, "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={apply_module}", *defs
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert f"applied {plural(len(flags), 'tuned flag')} to {ts.spec.target}" in out, out
    assert "other compile flags" not in out, "the tune's and the apply's CMAKE_CUDA_FLAGS agree (architecture aside)"
    for command in _cuda_commands(rel, ts.project.target.sources_in("CUDA")):
        for flag in flags:
            assert flag in command, (flag, command)
    return out


@pytest.mark.cmake
@pytest.mark.cuda
def test_kernels_in_cpp_files_marked_cuda(tmp_path):
    """.cpp files marked LANGUAGE CUDA, -use_fast_math in a Release generator expression, -Xptxas -O3 as
    two tokens inside SHELL: in a generator expression."""
    trap = _setup(
        tmp_path,
        "cpp_cuda",
        "cpp_bench",
        "cpp_bench",
        ("use_fast_math", "prec_div", "ofast_compile", "ptxas_opt_level", "store_cache"),
    )
    ts = trap.setup
    assert len(ts.project.target.sources_in("CUDA")) == 3 and all(
        p.suffix == ".cpp" for p in ts.project.target.sources_in("CUDA")
    )
    names = {d.name for d in ts.space.dimensions}
    assert not names & {"use_fast_math", "prec_div", "ofast_compile"}, names
    assert "use_fast_math: the project already builds with --use_fast_math" in trap.log
    assert "ofast_compile: the project sets -Xptxas=-O3" in trap.log
    assert "compileiq: screening:" in trap.log and "store_cache" in names
    assert "static screening skipped" not in trap.log and "no CUDA compile command" not in trap.log
    assert len(ts.project.objects) == 3, "fingerprints per object of each CUDA source"
    store = next(v for d in ts.space.dimensions if d.name == "store_cache" for v in d.values if v)
    _variant_build_carries(trap, store)
    out = _apply(trap, tmp_path, store)
    assert "other sources" not in out, "the sources hash of the tune and of the apply agree"


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.slow
def test_architecture_set_by_hand_with_cmp0104_old(tmp_path):
    """CMP0104 OLD, -arch=sm_90 -maxrregcount 64 in CMAKE_CUDA_FLAGS, no CUDA_ARCHITECTURES."""
    trap = _setup(
        tmp_path,
        "arch_by_hand",
        "handarch_bench",
        "handarch_bench",
        ("maxrregcount", "use_fast_math", "store_cache"),
        "-DCMAKE_POLICY_VERSION_MINIMUM=3.5",
    )
    assert "the project's own build of handarch_bench targets sm_90 (-arch=sm_90); tuning for sm_90" in trap.log
    assert "maxrregcount: the project already builds with -maxrregcount=64; that value is not tried" in trap.log
    maxreg = next(d for d in trap.setup.space.dimensions if d.name == "maxrregcount")
    assert ("-maxrregcount=64",) not in maxreg.values
    flags = ("--use_fast_math",)
    _variant_build_carries(trap, flags)
    out = _apply(trap, tmp_path, flags, "-DCMAKE_POLICY_VERSION_MINIMUM=3.5")
    assert "(CUDA sm_90 entry, for sm_90; architecture from -arch=sm_90 in CMAKE_CUDA_FLAGS)" in out, out
    # another architecture by hand: not applied, and the message names what this build targets
    lists = trap.src / "CMakeLists.txt"
    lists.write_text(lists.read_text().replace("-arch=sm_90", "-arch=sm_80"))
    other = configure(
        trap.src,
        tmp_path / "sm80",
        "-DCMAKE_BUILD_TYPE=Release",
        "-DCMAKE_POLICY_VERSION_MINIMUM=3.5",
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}",
    )
    text = " ".join((other.stdout + other.stderr).split())
    assert other.returncode == 0 and "but this build targets sm_80 with NVIDIA" in text and "not applied" in text, text
    # the architecture only in the cache, as two tokens (-DCMAKE_CUDA_FLAGS="-arch sm_90"): applied
    lists.write_text(lists.read_text().replace(" -arch=sm_80", ""))
    cached = configure(
        trap.src,
        tmp_path / "cached",
        "-DCMAKE_BUILD_TYPE=Release",
        "-DCMAKE_POLICY_VERSION_MINIMUM=3.5",
        "-DCMAKE_CUDA_FLAGS=-arch sm_90",
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}",
    )
    text = " ".join((cached.stdout + cached.stderr).split())
    assert "(CUDA sm_90 entry, for sm_90; architecture from -arch sm_90 in CMAKE_CUDA_FLAGS)" in text, text
    assert "other sources" not in text, "editing CMakeLists.txt changes no source file of the target"


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.slow
def test_static_and_object_libraries_with_custom_output_names(tmp_path):
    """Kernels in a STATIC library (OUTPUT_NAME, ARCHIVE_OUTPUT_DIRECTORY) and an OBJECT library linked into
    the benchmark executable (OUTPUT_NAME, RUNTIME_OUTPUT_DIRECTORY)."""
    trap = _setup(tmp_path, "libs_layout", "kern_static", "libs_bench", ("use_fast_math", "store_cache"), SM90)
    ts = trap.setup
    assert ts.project.build_targets == ("kern_static", "libs_bench")
    assert ts.bench.argv[0] == str(trap.build / "bin" / "tools" / "layout_benchmark_exe")
    assert [a.name for a in ts.project.artifacts] == ["libfancy_kernels.a"]
    assert "compileiq: screening:" in trap.log
    _variant_build_carries(trap, ("--use_fast_math",))
    _apply(trap, tmp_path, ("--use_fast_math",), SM90)
    # the OBJECT library is a target of its own: same treatment (screening off to keep this test short)
    objects = _setup(
        tmp_path / "obj", "libs_layout", "kern_objects", "libs_bench", ("use_fast_math",), SM90, screen=False
    )
    assert "static screening is off" in objects.log
    _variant_build_carries(objects, ("--use_fast_math",))
    # the executable's CUDA is its own main.cu; a host-only executable whose CUDA lives in libraries gets a note
    lists = objects.src / "CMakeLists.txt"
    lists.write_text(
        lists.read_text() + "add_executable(host_only host_only.cpp)\n"
        "target_link_libraries(host_only PRIVATE kern_static)\n"
    )
    (objects.src / "host_only.cpp").write_text("int main() { return 0; }\n")
    build = tmp_path / "host-build"
    assert configure(objects.src, build, "-DCMAKE_BUILD_TYPE=Release", SM90).returncode == 0
    spec = TuneSpec(
        source_dir=objects.src,
        build_dir=build,
        target="host_only",
        benchmark=("host_only",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=objects.src / "compileiq.toml",
        workers=1,
    )
    lines: list[str] = []
    setup(spec, lines.append)
    assert any("host_only has no CUDA sources of its own; its CUDA code is in kern_static" in ln for ln in lines), lines


@pytest.mark.cmake
@pytest.mark.cuda
def test_separable_compilation(tmp_path):
    trap = _setup(tmp_path, "separable", "sep_bench", "sep_bench", ("use_fast_math", "store_cache"), SM90)
    assert "relocatable device code (-rdc=true)" in trap.log
    for command in _cuda_commands(trap.setup.trees[0].path, trap.setup.project.target.sources_in("CUDA")):
        assert "-rdc=true" in command
    _variant_build_carries(trap, ("--use_fast_math",))
    _apply(trap, tmp_path, ("--use_fast_math",), SM90)


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.slow
def test_twenty_source_files_fingerprinted_in_parallel_from_a_cache(tmp_path):
    trap = _setup(tmp_path, "many_tu", "many_bench", "many_bench", ("use_fast_math",), SM90)
    ts = trap.setup
    assert len(ts.project.target.sources_in("CUDA")) == 20 and len(ts.project.objects) == 20
    flagset = _variant_build_carries(trap, ("--use_fast_math",))
    started = time.perf_counter()
    code = _device_code(ts, ts.trees[0])
    warm = time.perf_counter() - started
    assert len({k.name.split("#")[0] for k in code.kernels}) >= 19, "the kernels of all 19 kernel files"
    # unchanged objects come from the content cache: nothing is disassembled again
    fingerprints = ts.device_code.fingerprints
    cached = len(fingerprints._by_content)
    assert _device_code(ts, ts.trees[0]).digest == code.digest and len(fingerprints._by_content) == cached
    print(f"fingerprint of 20 objects from the cache: {1000 * warm:.0f} ms; flags {flagset.flags}")
    _apply(trap, tmp_path, ("--use_fast_math",), SM90)


@pytest.mark.cmake
@pytest.mark.cuda
def test_configure_that_writes_into_its_source_tree(tmp_path):
    trap = _setup(tmp_path, "writes_source", "ws_bench", "ws_bench", ("use_fast_math",), SM90)
    assert "configuring the project writes into its source tree (generated/build_stamp.txt)" in trap.log, trap.log
    searched = [t for t in trap.setup.trees if (t.path / "CMakeCache.txt").is_file()]
    assert len(searched) >= 2, "the search's own trees are configured by the setup"
    # the finalists' trees when they need them, one at a time here too
    assert len(trap.setup.trees_for(len(trap.setup.trees))) == len(trap.setup.trees)
    assert all((t.path / "CMakeCache.txt").is_file() for t in trap.setup.trees)
    _variant_build_carries(trap, ("--use_fast_math",))
    out = _apply(trap, tmp_path, ("--use_fast_math",), SM90)
    assert "other sources" not in out
    # the sources change after the tune: still applied, with one line that says so and how to re-check
    kernel = trap.src / "src" / "yukawa.cu"
    kernel.write_text(kernel.read_text() + "\n// edited after the tune\n")
    out = _apply(trap, tmp_path, ("--use_fast_math",), SM90, name="rel-edited")
    assert "were tuned on 2026-11-30T12:00:00+00:00 on other sources" in out and "re-run the tune" in out, out


@pytest.mark.cmake
@pytest.mark.cuda
def test_benchmark_that_prints_its_metric_on_every_step(tmp_path):
    trap = _setup(tmp_path, "chatty_bench", "chatty_bench", "chatty_bench", ("use_fast_math",), SM90)
    _variant_build_carries(trap, ("--use_fast_math",))
    _apply(trap, tmp_path, ("--use_fast_math",), SM90)
    # what the benchmark prints (as on the H200): the summary, the last match, is the metric
    printed = "".join(f"step {i} time_ms={9.2 + i / 100:.6f}\n" for i in range(20))
    printed += "summary time_ms=9.241000\nchecksum=1.234e+05\nPASS\n"
    reading = read_regex(METRIC, printed)
    assert reading.value == pytest.approx(9.241)
    assert "several times" in reading.warning, "a metric printed with different values is warned about"
    assert read_regex("summary " + METRIC, printed).warning == ""


@pytest.mark.cmake
@pytest.mark.cuda
def test_screening_that_leaves_nothing_is_one_clear_line(tmp_path):
    """Hardening (issue 10): when static screening drops every value (here: jump-table density on a kernel
    with no switch), there is nothing left to search: one line, not nevergrad's 'No variable to optimize'."""
    from compileiq_cmake.model.errors import CompileIQError

    with pytest.raises(CompileIQError, match="nothing to tune for chatty_bench: no flag dimension is left"):
        _setup(tmp_path, "chatty_bench", "chatty_bench", "chatty_bench", ("jump_table_density",), SM90)


@pytest.mark.cmake
@pytest.mark.cuda
def test_cuda_enabled_in_a_subdirectory_building_a_shared_library(tmp_path):
    """Issue 38: a large library's layout: the top level is C++ only, enable_language(CUDA) in the backend's
    subdirectory builds a SHARED library of several .cu files, linked into a host benchmark. The File API's
    toolchains reply has no CUDA compiler id or version there; the tune was refused ("CUDA compiler '' is not
    supported") and `space --target` said the compiler is not nvcc. Now the compiler is CMake's own record."""
    trap = _setup(tmp_path, "subdir_cuda", "backend", "bench", ("use_fast_math",), SM90)
    ts = trap.setup
    assert ts.project.toolchain.compiler_id == "NVIDIA" and ts.project.toolchain.version.count(".") == 2
    assert ts.project.target.type == "SHARED_LIBRARY" and len(ts.project.target.sources_in("CUDA")) == 4
    assert "compileiq: screening:" in trap.log, trap.log
    _variant_build_carries(trap, ("--use_fast_math",))
    _apply(trap, tmp_path, ("--use_fast_math",), SM90)
    from conftest import run_cli

    proc = run_cli("space", "-S", str(trap.src), "-B", str(trap.build), "--target", "backend", "--cuda-arch", "90")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "backend (CUDA sm_90, NVIDIA" in proc.stdout, proc.stdout
