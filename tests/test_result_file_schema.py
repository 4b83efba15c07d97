"""Issue 19, validation of compileiq.toml: the type and range of every field (one schema for read, show,
check and the configure's apply), unknown keys inside sub-tables, a typo'd key named as unknown, and files
nested too deeply for the TOML reader: one line, exit 2, never a traceback, nothing written."""

from __future__ import annotations

import shutil
import tomllib

import pytest
import tomli_w

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.results.schema import FlagsEntry
from compileiq_cmake.results.toml_io import read_entries, write_entry
from compileiq_cmake.ui.cli import main

from conftest import EXAMPLES, cmake_dir, configure, one_line_error, run_cli
from test_result_file import make_entry

CONTRIBUTION = {"flags": ["--use_fast_math"], "speedup": 1.2, "ci": [1.1, 1.3], "kept": True, "reason": "faster"}


def _file(tmp_path, mutate):
    path = tmp_path / "compileiq.toml"
    write_entry(path, make_entry(contributions=(CONTRIBUTION,)))
    data = tomllib.loads(path.read_text())
    mutate(data)
    path.write_text(tomli_w.dumps(data))
    return path


def _set(key, value):
    return lambda d: d["entry"][0].update({key: value})


def _typo(d):
    d["entry"][0]["speedpu"] = d["entry"][0].pop("speedup")


def _contribution(**extra):
    return lambda d: d["entry"][0]["contributions"][0].update(extra)


def _one_line(proc, *needles):
    return one_line_error(proc.returncode, proc.stdout, proc.stderr, *needles)


BAD = [
    (_set("speedup", "1.5x"), ["speedup must be a finite number above 0, not '1.5x'"]),
    (_set("speedup", -2.0), ["speedup must be a finite number above 0, not -2.0"]),
    (_set("speedup", float("nan")), ["speedup must be a finite number"]),
    (_set("trials", "eight"), ["trials must be a whole number at least 1, not 'eight'"]),
    (_set("trials", 8.5), ["trials must be a whole number"]),
    (_set("trials", True), ["trials must be a whole number"]),
    (_set("lower_is_better", 1), ["lower_is_better must be true or false, not 1"]),
    (_set("replay", "no"), ["replay must be true or false"]),
    (_set("baseline", [1.0, "x"]), ["baseline[1] must be a finite number above 0, not 'x'"]),
    (_set("tuned", [-3.0, 1.0]), ["tuned[0] must be a finite number above 0, not -3.0"]),
    (_set("tuned_cpu", "X\napp\t90\tapplied"), ["refusing tuned_cpu"]),
    (_set("baseline", 2.0), ["baseline must be an array, not 2.0"]),
    (_set("device", 7), ["device must be a string, not 7"]),
    (_set("p_values", [0.01, 3.0]), ["p_values[1] must be a finite number at least 0 at most 1"]),
    (_set("speedup_ci", [1.0]), ["speedup_ci must be an array of 2 values"]),
    (_set("workload_ci", [[1.0, "a"]]), ["workload_ci[0][1] must be a number at least 0"]),
    (_set("contributions", ["fast"]), ["contributions[0] must be a table"]),
    (
        _contribution(why="because"),
        ["contributions[0] has unknown key 'why'", "(known: flags, speedup, ci, kept, reason)"],
    ),
    (_contribution(speedup="big"), ["contributions[0]: speedup must be a finite number above 0, not 'big'"]),
    (lambda d: d["entry"][0]["contributions"][0].pop("kept"), ["contributions[0] lacks kept"]),
    (lambda d: d.update(schema_version=True), ["schema_version must be 1", "it is True"]),
    (lambda d: d.update(schema_version="1"), ["schema_version must be 1", "it is '1'"]),
]


def _check_args(path, tmp_path):
    """`check` on `path` for a project that is no configured tree's (it reads the file before it configures
    anything)."""
    build = tmp_path / "build"
    build.mkdir()
    (build / "CMakeCache.txt").write_text("")
    (tmp_path / "CMakeLists.txt").write_text("project(p NONE)\n")
    return build, ["check", str(path), "-S", str(tmp_path), "-B", str(build)]


@pytest.mark.unit
@pytest.mark.parametrize("mutate,needles", BAD)
def test_every_field_is_checked_for_type_and_range_by_show_and_the_apply(tmp_path, capsys, mutate, needles):
    """The CLI's own code in this process (ui.cli.main, as `python -m compileiq_cmake` runs it): show,
    cmake-entries (what the configure's apply runs) and check. A separate process for each command of one
    case: test_a_bad_field_is_one_line_from_each_command_as_a_process."""
    path = _file(tmp_path, mutate)
    with pytest.raises(CompileIQError):
        read_entries(path)

    def cli(*args):
        rc = main(list(args))
        out, err = capsys.readouterr()
        return one_line_error(rc, out, err, *needles)

    assert str(path) in cli("show", str(path))
    out = tmp_path / "entries.cmake"
    cli("cmake-entries", str(path), str(out))
    assert not out.exists()
    build, args = _check_args(path, tmp_path)
    cli(*args)
    assert list(build.iterdir()) == [build / "CMakeCache.txt"]


@pytest.mark.cmake
def test_a_bad_field_is_one_line_from_each_command_as_a_process(tmp_path):
    """One case of the table above through `python -m compileiq_cmake` as separate processes (exit status 2,
    one line on stderr, no traceback): show, cmake-entries and check."""
    mutate, needles = BAD[0]
    path = _file(tmp_path, mutate)
    line = _one_line(run_cli("show", str(path)), *needles)
    assert str(path) in line
    out = tmp_path / "entries.cmake"
    _one_line(run_cli("cmake-entries", str(path), str(out)), *needles)
    assert not out.exists()
    build, args = _check_args(path, tmp_path)
    _one_line(run_cli(*args), *needles)
    assert list(build.iterdir()) == [build / "CMakeCache.txt"]


@pytest.mark.cmake
def test_a_typo_is_named_as_an_unknown_key_with_the_key_it_resembles(tmp_path):
    path = _file(tmp_path, _typo)
    line = _one_line(run_cli("show", str(path)), "unknown key 'speedpu' (did you mean 'speedup'?)")
    assert "lacks" not in line


@pytest.mark.cmake
def test_a_valid_file_with_every_kind_of_field_round_trips_and_shows(tmp_path):
    path = tmp_path / "compileiq.toml"
    entry = make_entry(
        contributions=(CONTRIBUTION,),
        speedup_ci=(1.1, float("inf")),
        p_values=(0.0, 1.0),
        workload_speedups=(1.2, 1.3),
        workload_ci=((1.0, 1.4), (1.1, 1.5)),
        trials=1,
    )
    write_entry(path, entry)
    assert read_entries(path) == [entry]
    proc = run_cli("show", str(path))
    assert proc.returncode == 0 and "speedup:  1.333x over 1 trial," in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.unit
def test_an_entry_with_a_wrong_field_is_never_written(tmp_path):
    path = tmp_path / "compileiq.toml"
    with pytest.raises(CompileIQError, match="speedup must be a finite number above 0"):
        write_entry(path, make_entry(speedup=0.0))
    assert not path.exists()


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.cmake
@pytest.mark.parametrize(
    "text",
    [
        f"schema_version = 1\nx = {_deep(500)}\n",
        "schema_version = 1\n[[entry]]\nflags = " + _deep(500) + "\n",
        "schema_version = 1\nx = " + "{a = " * 500 + "1" + "}" * 500 + "\n",
    ],
)
def test_deeply_nested_arrays_are_one_line_not_a_recursion_traceback(tmp_path, text):
    path = tmp_path / "compileiq.toml"
    path.write_text(text)
    _one_line(run_cli("show", str(path)), "nests arrays or tables too deeply")
    out = tmp_path / "entries.cmake"
    _one_line(run_cli("cmake-entries", str(path), str(out)), "nests arrays or tables too deeply")
    assert not out.exists()


@pytest.mark.cmake
def test_configure_with_a_deeply_nested_file_fails_with_one_line(tmp_path):
    """The configure's apply reads the TOML through `python -m compileiq_cmake cmake-entries` (CompileIQ.cmake):
    a real configure shows the one line in its FATAL_ERROR, not a RecursionError traceback."""
    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    (src / "compileiq.toml").write_text(f"schema_version = 1\nx = {_deep(500)}\n")
    proc = configure(src, tmp_path / "build", "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, text
    assert "nests arrays or tables too deeply" in text and "Traceback" not in text and "RecursionError" not in text, (
        text
    )
    assert not (tmp_path / "build" / "compileiq" / "entries.cmake").exists()


@pytest.mark.unit
def test_the_schema_covers_every_field():
    """Every FlagsEntry field is checked by type: a wrong-typed value of each one is refused."""
    import dataclasses

    from compileiq_cmake.results.schema import check_entry

    raw = tomllib.loads(tomli_w.dumps({"e": dataclasses.asdict(make_entry(contributions=(CONTRIBUTION,)))}))["e"]
    for f in dataclasses.fields(FlagsEntry):
        wrong = {**raw, f.name: {"not": "this"}}
        with pytest.raises(CompileIQError, match=f.name):
            check_entry(wrong, "x.toml")
