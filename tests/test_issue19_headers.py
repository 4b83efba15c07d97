"""Issue 19: the headers a target's compiles include and the compile flags of the user's configuration are
part of what a tune measured. Editing a header of the hot loop, or configuring the user tree with other
CMAKE_CXX_FLAGS, must not resume the stored trials (nor compare new trials with the old baseline), and the
apply at configure must say that the entry was tuned on other sources / on top of other flags (real cmake
and gcc on tests/projects/header_hot)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.results.schema import FlagsEntry
from compileiq_cmake.results.toml_io import write_entry
from compileiq_cmake.tune.orchestration import _open_store
from compileiq_cmake.tune.setup import setup
from compileiq_cmake.tune.tune_setup import TuneSetup

from conftest import PROJECTS, cmake_dir, configure

TARGET = "hot_bench"


def _project(tmp_path: Path, *defs: str) -> tuple[Path, Path, TuneSpec]:
    src = tmp_path / "header_hot"
    shutil.copytree(PROJECTS / "header_hot", src)
    build = tmp_path / "build"
    proc = configure(src, build, "-DCMAKE_BUILD_TYPE=Release", *defs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spec = TuneSpec(
        source_dir=src,
        build_dir=build,
        target=TARGET,
        benchmark=(TARGET,),
        metric=MetricSpec.parse("time_ms=([0-9.eE+-]+)", True),
        output=src / "compileiq.toml",
        pass_regex="PASS",
        workers=1,
    )
    return src, build, spec


def _stored(ts: TuneSetup, lines: list[str]):
    """The tune's trial store as run_tune opens it."""
    return _open_store(
        ts.state_dir / "trials.sqlite",
        ts.spec.identity(),
        f"{ts.project.toolchain.compiler_id} {ts.project.toolchain.version}",
        ts.code.sources_sha256,
        lines.append,
        ts.code.commands_sha256,
    )


def _trial() -> Trial:
    return Trial(0, FlagSet((), ()), Status.OK, "", (Measurement((), (5.0, 5.1, 4.9)),), 1.0, 0.1, 1.2, "g++")


def _entry(ts: TuneSetup) -> None:
    entry = FlagsEntry(
        target=TARGET,
        language="CXX",
        arch="",
        compiler_id=ts.project.toolchain.compiler_id,
        compiler_version=ts.project.toolchain.version,
        flags=("-funroll-loops",),
        build_type="Release",
        device="test",
        compute_capability="",
        metric="time_ms",
        lower_is_better=True,
        workloads=("",),
        baseline=(2.0,),
        tuned=(1.0,),
        speedup=2.0,
        trials=3,
        date="2026-12-01T07:00:00+00:00",
        tool_version="test",
        sources_sha256=ts.code.sources_sha256,
        headers=ts.code.headers,
        flags_sha256=ts.code.flags_sha256,
    )
    write_entry(ts.spec.output, entry)


def _apply(src: Path, build: Path, *defs: str) -> str:
    proc = configure(
        src,
        build,
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}",
        *defs,
    )
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0 and f"applied 1 tuned flag to {TARGET}" in out, out
    return out


@pytest.mark.cmake
def test_a_header_edit_starts_the_store_afresh_and_makes_the_entry_stale(tmp_path):
    src, build, spec = _project(tmp_path)
    lines: list[str] = []
    ts = setup(spec, lines.append)
    assert ts.code.headers == ("include/detail/inner.h", "include/hot.h"), (
        "the headers the compile includes, nested too"
    )
    assert not any("could not be listed" in ln for ln in lines), lines
    store = _stored(ts, lines)
    store.save(_trial())
    store.close()
    _entry(ts)
    out = _apply(src, tmp_path / "rel")
    assert "other sources" not in out and "other compile flags" not in out, "the tune's and the apply's hashes agree"
    again = setup(spec, lines.append)
    store = _stored(again, lines)
    assert len(store.load()) == 1, "nothing changed: the trials are resumed"
    store.close()

    inner = src / "include" / "detail" / "inner.h"
    inner.write_text(inner.read_text().replace("WORK_REPEATS 1", "WORK_REPEATS 4"))  # 4x the work
    edited = setup(spec, lines.append)
    assert (
        edited.code.sources_sha256 != ts.code.sources_sha256 and edited.code.commands_sha256 == ts.code.commands_sha256
    )
    store = _stored(edited, lines)
    assert store.load() == [], "trials measured on the old header are not resumed"
    assert "the target's sources or the headers they include changed" in lines[-1], lines[-1]
    store.close()
    out = _apply(src, tmp_path / "rel-edited")
    assert (
        "were tuned on 2026-12-01T07:00:00+00:00 on other sources (its sources or the headers they include "
        "changed since)"
    ) in out, out


@pytest.mark.cmake
def test_other_cmake_cxx_flags_start_the_store_afresh_and_make_the_entry_stale(tmp_path):
    src, build, spec = _project(tmp_path)
    lines: list[str] = []
    ts = setup(spec, lines.append)
    store = _stored(ts, lines)
    store.save(_trial())
    store.close()
    _entry(ts)
    assert "other compile flags" not in _apply(src, tmp_path / "rel")

    assert configure(src, build, "-DCMAKE_CXX_FLAGS=-fno-inline").returncode == 0  # the user re-configures
    other = setup(spec, lines.append)
    assert other.code.sources_sha256 == ts.code.sources_sha256 and other.code.commands_sha256 != ts.code.commands_sha256
    assert other.code.flags_sha256 != ts.code.flags_sha256
    store = _stored(other, lines)
    assert store.load() == [] and "the flags that reach the target's compile commands changed" in lines[-1]
    store.close()
    out = _apply(src, tmp_path / "rel-other", "-DCMAKE_CXX_FLAGS=-fno-inline")
    assert "were tuned on 2026-12-01T07:00:00+00:00 on top of other compile flags" in out, out
    assert "other sources" not in out


@pytest.mark.cmake
def test_tune_rerun_after_a_header_edit_or_other_flags_does_not_resume_and_the_entry_is_stale(tmp_path):
    """The issue's run: a finished tune, then the hot loop's header edited (4x the work): the rerun resumed
    the old trials and compared the new ones with the old baseline. End to end through the CLI."""
    from conftest import run_cli

    src, build, spec = _project(tmp_path)
    args = (
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        TARGET,
        "--bench",
        f"{TARGET} --n 2000000",
        "--metric",
        "time_ms=([0-9.eE+-]+)",
        "--pass-regex",
        "PASS",
        "--budget",
        "3",
        "--seed",
        "1",
        "--include-flags",
        "opt_level",
    )
    first = run_cli(*args)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    assert "headers = [" in spec.output.read_text() and "include/detail/inner.h" in spec.output.read_text()
    out = _apply(src, tmp_path / "rel")
    assert "other sources" not in out and "other compile flags" not in out, "the tune's hashes agree with the apply's"
    same = run_cli(*args)
    assert same.returncode == 0 and "resuming: 3 finished trials restored" in same.stdout, same.stdout[-3000:]

    inner = src / "include" / "detail" / "inner.h"
    inner.write_text(inner.read_text().replace("WORK_REPEATS 1", "WORK_REPEATS 4"))
    assert "on other sources (its sources or the headers they include changed since)" in _apply(src, tmp_path / "rel2")
    edited = run_cli(*args)
    assert edited.returncode == 0, edited.stdout[-3000:] + edited.stderr
    assert (
        "resuming:" not in edited.stdout and "the target's sources or the headers they include changed" in edited.stdout
    ), edited.stdout[-3000:]

    assert configure(src, build, "-DCMAKE_CXX_FLAGS=-fno-inline").returncode == 0
    reconfigured = run_cli(*args)
    assert reconfigured.returncode == 0, reconfigured.stdout[-3000:] + reconfigured.stderr
    assert "resuming:" not in reconfigured.stdout
    assert "the flags that reach the target's compile commands changed" in reconfigured.stdout, reconfigured.stdout[
        -3000:
    ]


@pytest.mark.unit
def test_entry_headers_round_trip_and_reach_the_apply_and_a_hostile_list_is_refused(tmp_path):
    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.results.cmake_entries import cmake_entries
    from compileiq_cmake.results.toml_io import read_entries

    from test_result_file import make_entry

    toml = tmp_path / "compileiq.toml"
    entry = make_entry(headers=("include/hot.h", "include/detail/inner.h"), flags_sha256="cd" * 32)
    write_entry(toml, entry)
    assert read_entries(toml) == [entry]
    assert (
        'SOURCES_SHA256 "'
        + "ab" * 32
        + '" HEADERS "include/hot.h" "include/detail/inner.h" FLAGS_SHA256 "'
        + "cd" * 32
        + '"'
    ) in cmake_entries([entry])
    for bad in ("/etc/shadow", "../outside.h", "a;b.h", ""):
        text = toml.read_text().replace('"include/hot.h"', f'"{bad}"')
        toml.write_text(text)
        with pytest.raises(CompileIQError, match="headers of 'nbody' must be a list of paths relative"):
            read_entries(toml)
        toml.unlink()
        write_entry(toml, entry)


@pytest.mark.unit
def test_dependency_scan_command_and_make_rule_parsing():
    from compileiq_cmake.project.depscan import parse_make_rule, scan_command, scan_headers

    gcc = [
        "/usr/bin/c++",
        "-I/s/include",
        "-O3",
        "-MD",
        "-MT",
        "CMakeFiles/t.dir/a.cpp.o",
        "-MF",
        "CMakeFiles/t.dir/a.cpp.o.d",
        "-o",
        "CMakeFiles/t.dir/a.cpp.o",
        "-c",
        "/s/a.cpp",
    ]
    assert scan_command(gcc) == ["/usr/bin/c++", "-I/s/include", "-O3", "/s/a.cpp", "-M", "-MG"]
    nvcc = [
        "ccache",
        "/usr/local/bin/nvcc",
        "-optf",
        "includes_CUDA.rsp",
        "-x",
        "cu",
        "-MD",
        "-MT",
        "o",
        "-MF",
        "o.d",
        "-c",
        "/s/k.cu",
        "-o=k.o",
    ]
    assert scan_command(nvcc) == [
        "ccache",
        "/usr/local/bin/nvcc",
        "-optf",
        "includes_CUDA.rsp",
        "-x",
        "cu",
        "/s/k.cu",
        "-M",
    ]
    assert parse_make_rule("a.o: /s/a.cpp /s/my\\ dir/h.h \\\n /usr/include/stdio.h\n") == [
        "/s/a.cpp",
        "/s/my dir/h.h",
        "/usr/include/stdio.h",
    ]
    assert parse_make_rule("k.o : k.cu \\\n    /s/inc/k.h \\\n") == ["k.cu", "/s/inc/k.h"]
    failed = scan_headers(
        [
            {
                "directory": "/",
                "file": "/nonexistent/x.cpp",
                "arguments": ["/nonexistent/compiler", "-c", "/nonexistent/x.cpp"],
            }
        ],
        Path("/"),
        (),
    )
    assert failed.headers == () and failed.problems[0][0] == "/nonexistent/x.cpp" and failed.problems[0][1]
