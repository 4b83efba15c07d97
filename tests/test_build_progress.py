"""Progress lines of long builds: the build tool's progress (Ninja's [done/total], Make's [ n%]) read from the
output as it grows, said after FIRST_AFTER seconds and then at most every EVERY seconds, with the time left
from 5 % done on (a fake clock: no sleeping); run_process gives its hook the output as it grows; a real
CMake build whose compiles are slowed by a launcher says increasing counts through VariantTree.build."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.progress import BuildProgress
from compileiq_cmake.system import processes
from compileiq_cmake.system.processes import run_process

from conftest import configure

LABEL = "build of app in worker-0"


class Clock:
    """A fake clock: seconds set by the test."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(**kw) -> tuple[BuildProgress, Clock, list[str]]:
    clock, said = Clock(), []
    return BuildProgress(said.append, LABEL, clock, **kw), clock, said


def _at(progress: BuildProgress, clock: Clock, seconds: float, text: str) -> None:
    clock.now = progress.start + seconds
    progress.feed(text)


@pytest.mark.unit
def test_ninja_steps_with_the_time_left():
    progress, clock, said = _progress()
    _at(progress, clock, 5, "[1/126] Building CUDA object CMakeFiles/app.dir/a.cu.o\n")
    _at(
        progress,
        clock,
        30,
        "[44/126] Building CUDA object CMakeFiles/app.dir/b.cu.o\n"
        "warning: something\n[45/126] Building CXX object CMakeFiles/app.dir/c.cpp.o\n",
    )
    assert said == [f"{LABEL}: 45 of 126 steps, 30 s, about 54 s left"]


@pytest.mark.unit
def test_make_percent_with_the_time_left():
    progress, clock, said = _progress()
    _at(
        progress,
        clock,
        30,
        "[ 40%] Building CXX object CMakeFiles/app.dir/a.cpp.o\n"
        "[ 45%] Building CXX object CMakeFiles/app.dir/b.cpp.o\n",
    )
    assert said == [f"{LABEL}: 45% done, 30 s, about 37 s left"]
    _at(progress, clock, 150, "\x1b[32m[100%] Linking CXX executable app\x1b[0m\r\n")  # colored, CRLF
    assert said[-1] == f"{LABEL}: 100% done, 2 min 30 s"


@pytest.mark.unit
def test_chunks_split_mid_line_are_read_whole():
    progress, clock, said = _progress()
    _at(progress, clock, 21, "[9/20] Building C object a.o\n[4")
    _at(progress, clock, 22, "5/12")  # an unfinished line: not read yet (the last whole line's 9/20 is)
    _at(progress, clock, 30, "6] Building CXX object b.o")
    assert said == [f"{LABEL}: 9 of 20 steps, 21 s, about 26 s left"]
    _at(progress, clock, 40, "\n")  # the line ends: read now
    assert said[-1] == f"{LABEL}: 45 of 126 steps, 40 s, about 72 s left"


@pytest.mark.unit
def test_no_time_left_below_five_percent():
    progress, clock, said = _progress()
    _at(progress, clock, 25, "[6/126] Building CXX object a.o\n")  # 4.8 %
    assert said == [f"{LABEL}: 6 of 126 steps, 25 s"]
    progress2, clock2, said2 = _progress()
    _at(progress2, clock2, 25, "[ 4%] Building CXX object a.o\n")
    assert said2 == [f"{LABEL}: 4% done, 25 s"]


@pytest.mark.unit
def test_nothing_before_first_after_so_a_short_build_says_nothing():
    progress, clock, said = _progress()
    for second in range(20):
        _at(progress, clock, second + 0.9, f"[{second + 1}/20] Building CXX object f{second}.o\n")
    assert said == []
    _at(progress, clock, 20.0, "more output\n")
    assert said == [f"{LABEL}: 20 of 20 steps, 20 s"]


@pytest.mark.unit
def test_at_most_one_line_every_fifteen_seconds():
    progress, clock, said = _progress()
    for second in range(61):
        _at(progress, clock, second, f"[{second + 1}/100] Building CXX object f{second}.o\n")
    assert [re.search(r", (\d+) s", line).group(1) for line in said] == ["20", "35", "50"]
    assert said[0] == f"{LABEL}: 21 of 100 steps, 20 s, about 75 s left"


@pytest.mark.unit
def test_output_without_progress_says_nothing():
    progress, clock, said = _progress(first_after=0, every=0)
    _at(progress, clock, 60, "ninja: no work to do.\n[not/progress]\n[x%] no\n")
    assert said == [] and progress.done is None


@pytest.mark.unit
def test_the_thresholds_are_parameters_and_class_settings(monkeypatch):
    progress, clock, said = _progress(first_after=1, every=2)
    for second in range(1, 6):
        _at(progress, clock, second, f"[{second}/10] x\n")
    assert len(said) == 3  # at 1, 3 and 5 s
    monkeypatch.setattr(BuildProgress, "FIRST_AFTER", 0.5)
    monkeypatch.setattr(BuildProgress, "EVERY", 0.25)
    progress2, _, _ = _progress()
    assert (progress2.first_after, progress2.every) == (0.5, 0.25)


@pytest.mark.unit
def test_the_output_feed_gives_new_text_whole_characters(monkeypatch):
    """A UTF-8 character split between two reads comes whole in the second; nothing is given twice."""
    monkeypatch.setattr(processes, "_FEED_EVERY", 0.0)
    got: list[str] = []
    with tempfile.TemporaryFile() as f:
        feed = processes._OutputFeed(f.fileno(), got.append)
        data = "[1/2] é\n[2/2] done\n".encode()
        cut = data.index("é".encode()) + 1
        os.write(f.fileno(), data[:cut])
        feed.poll()
        feed.poll()  # nothing new: the hook is not called
        os.write(f.fileno(), data[cut:])
        feed.poll()
    assert got == ["[1/2] ", "é\n[2/2] done\n"]


@pytest.mark.unit
def test_run_process_gives_the_output_as_it_grows(tmp_path):
    script = tmp_path / "steps.py"
    script.write_text(
        "import sys, time\nfor i in range(1, 9):\n    print(f'[{i}/8] step', flush=True)\n    time.sleep(0.4)\n"
    )
    chunks: list[str] = []
    res = run_process([sys.executable, str(script)], tmp_path, 60, on_output=chunks.append)
    assert res.returncode == 0 and res.output.count("step") == 8
    assert len(chunks) >= 2, chunks
    assert res.output.startswith("".join(chunks)) and all(chunks)


def _slow_project(root: Path, files: int = 8) -> tuple[Path, Path]:
    """A C++ project of `files` sources, and a compiler launcher that sleeps 0.5 s before each compile."""
    src = root / "src"
    src.mkdir()
    for i in range(files):
        (src / f"f{i}.cpp").write_text(f"int f{i}() {{ return {i}; }}\n")
    calls = "".join(f"int f{i}();\n" for i in range(files))
    total = " + ".join(f"f{i}()" for i in range(files))
    (src / "main.cpp").write_text(f"{calls}int main() {{ return {total} == {sum(range(files))} ? 0 : 1; }}\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p LANGUAGES CXX)\n"
        "file(GLOB SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)\nadd_executable(app ${SOURCES})\n"
    )
    launcher = root / "slow-launcher.sh"
    launcher.write_text('#!/bin/sh\nsleep 0.5\nexec "$@"\n')
    launcher.chmod(0o755)
    return src, launcher


@pytest.mark.cmake
@pytest.mark.parametrize("generator", ["Ninja", "Unix Makefiles"])
def test_a_real_build_says_increasing_progress(tmp_path, monkeypatch, generator):
    tool = "ninja" if generator == "Ninja" else "make"
    if shutil.which(tool) is None or shutil.which("g++") is None:
        pytest.skip(f"needs {tool} and g++")
    src, launcher = _slow_project(tmp_path)
    build = tmp_path / "state" / "worker-0"
    if generator == "Ninja":
        proc = configure(src, build, f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}", "-DCMAKE_CXX_COMPILER=g++")
    else:  # conftest.configure picks Ninja where there is one
        proc = subprocess.run(
            [
                "cmake",
                "-S",
                str(src),
                "-B",
                str(build),
                "-G",
                generator,
                "-DCMAKE_CXX_COMPILER=g++",
                f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}",
            ],
            capture_output=True,
            text=True,
        )
    assert proc.returncode == 0, proc.stderr
    monkeypatch.setattr(BuildProgress, "FIRST_AFTER", 1.0)
    monkeypatch.setattr(BuildProgress, "EVERY", 1.0)
    said: list[str] = []
    result = VariantTree(tmp_path / "state", "worker-0", "cmake").build(
        ("app",), jobs=1, timeout=300, progress=said.append
    )
    assert result.ok, result.log_tail
    assert len(said) >= 2, said
    assert all(line.startswith("build of app in worker-0: ") for line in said), said
    if generator == "Ninja":
        counts = [int(re.search(r": (\d+) of (\d+) steps", line).group(1)) for line in said]
    else:
        counts = [int(re.search(r": (\d+)% done", line).group(1)) for line in said]
    assert counts == sorted(counts) and counts[-1] > counts[0], said
