"""Issue 51's apply rules: one rule for more than one entry of the same key (target, language, architecture or
compiler) in the configure and `check` (the writer and `show`: tests/test_issue51_show_write.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compileiq_cmake.results.schema import duplicate_entries
from compileiq_cmake.results.toml_io import _document

from conftest import EXAMPLES, cmake_dir, commands_for, configure, run_cli
from test_result_file import make_entry


def _host_entry(version: str, **kw) -> object:
    base = dict(
        target="host_kernels",
        language="CXX",
        arch="",
        compiler_id="GNU",
        compiler_version=version,
        flags=("-funroll-loops",),
        compute_capability="",
        device="cpu",
    )
    base.update(kw)
    return make_entry(**base)


def _two_entries(path: Path, first, second) -> None:
    """A file as a merge that kept both leaves it (the writer never writes one)."""
    path.write_text(_document([first, second]))


@pytest.mark.unit
def test_duplicates_are_found_by_key_whatever_else_differs():
    a = _host_entry("12.2.0")
    b = _host_entry("12.2.0", flags=("-O3",), build_type="Debug")
    other_compiler = _host_entry("15.0.0", compiler_id="Clang")
    groups = duplicate_entries([a, other_compiler, b])
    assert list(groups.values()) == [[a, b]]
    assert duplicate_entries([a, other_compiler]) == {}


def _host_project(tmp_path: Path) -> Path:
    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    return src


@pytest.mark.cmake
def test_two_entries_for_one_target_apply_neither_whatever_their_order_and_check_fails(tmp_path, compiler_versions):
    """Issue 51: the configure applied the first silently (swapping them applied the other), `check --json` said
    neither applies, plain `check` exited 0. One rule now: neither applies, one line names both and how to fix
    it, and check fails."""
    src = _host_project(tmp_path)
    version = compiler_versions.cxx_major_minor + ".0"
    toml = src / "compileiq.toml"
    first = _host_entry(version, flags=("-funroll-loops",))
    second = _host_entry(version, flags=("-fno-math-errno",))
    for order, (a, b) in enumerate(((first, second), (second, first))):
        _two_entries(toml, a, b)
        build = tmp_path / f"build{order}"
        proc = configure(src, build, "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
        assert proc.returncode == 0, proc.stderr
        text = " ".join((proc.stdout + proc.stderr).split())
        assert "applied" not in text.replace("not applied", ""), text
        assert "compileiq.toml has 2 entries for host_kernels (CXX GNU)" in text, text
        assert "none of them applies" in text and "-funroll-loops" in text and "-fno-math-errno" in text, text
        (cmd,) = commands_for(build, "main.cpp")
        assert "-funroll-loops" not in cmd and "-fno-math-errno" not in cmd
    plain = run_cli("check", "-S", str(src), "-B", str(tmp_path / "build0"))
    assert plain.returncode == 1, plain.stdout + plain.stderr
    assert "2 entries for host_kernels" in plain.stdout + plain.stderr
    as_json = run_cli("check", "-S", str(src), "-B", str(tmp_path / "build0"), "--json")
    doc = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and not doc["passed"], doc
    assert all(not e["applies"] and any("2 entries" in f for f in e["failures"]) for e in doc["entries"]), doc
