"""The error kinds (model/errors.py) and their rendering (ui/cli.py): each kind is a CompileIQError with its
exit status; a failed project command (configure, build, check's steps) names what failed, its exit status,
its first error line and the log on disk that holds its full output, on one line."""

from __future__ import annotations

import pickle
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from compileiq_cmake.model.errors import (
    CommandFailure,
    CompileIQError,
    MeasurementError,
    ProjectCommandError,
    ResultFileError,
    UsageError,
    first_error_line,
    one_line,
    write_log,
)
from compileiq_cmake.model.records import FlagSet, Status, Trial
from compileiq_cmake.model.spec import MetricSpec
from compileiq_cmake.ui import cli

from conftest import configure, one_line_error, run_cli

NOISY = "\n".join(f"noise line {i}" for i in range(40))


def _failure(**kw) -> CommandFailure:
    base = dict(
        what="building app in the variant tree worker-0",
        command=("cmake", "--build", "/b/w0"),
        exit_code=1,
        first_error="main.cpp:3:1: error: expected ';'",
        log=Path("/b/compileiq/logs/w0-build.log"),
    )
    return CommandFailure(**{**base, **kw})


@pytest.mark.unit
@pytest.mark.parametrize("kind", [UsageError, ProjectCommandError, MeasurementError, ResultFileError])
def test_every_kind_is_caught_as_compileiq_error_and_exits_2(kind):
    """`except CompileIQError` keeps catching every kind; the README documents exit 2 for all of them."""
    exc = kind(_failure()) if kind is ProjectCommandError else kind("what is wrong")
    with pytest.raises(CompileIQError):
        raise exc
    assert cli.exit_code(exc) == 2
    assert cli.exit_code(CompileIQError("plain")) == 2


@pytest.mark.unit
def test_a_project_command_error_carries_its_fields_and_says_them_on_one_line():
    exc = ProjectCommandError(_failure(), hint="fix the source")
    assert exc.command == ("cmake", "--build", "/b/w0") and exc.exit_code == 1
    assert exc.log == Path("/b/compileiq/logs/w0-build.log") and exc.first_error == "main.cpp:3:1: error: expected ';'"
    assert str(exc) == (
        "building app in the variant tree worker-0 failed (exit 1): main.cpp:3:1: error: expected ';' "
        "(full log: /b/compileiq/logs/w0-build.log); fix the source"
    )


@pytest.mark.unit
def test_a_multi_line_first_error_and_a_stopped_command_still_give_one_line():
    exc = ProjectCommandError(
        _failure(first_error="first\n\n  second  \nthird", exit_code=None, stopped="timed out after 5 s")
    )
    assert "\n" not in str(exc)
    assert "failed (timed out after 5 s): first | second | third (full log:" in str(exc), str(exc)
    no_log = ProjectCommandError(_failure(log=None))
    assert "full log" not in str(no_log) and str(no_log).endswith("expected ';'")


@pytest.mark.unit
def test_a_project_command_error_survives_pickling_with_its_fields():
    """Ray sends errors between processes: the copy keeps the fields, not only the message."""
    exc = ProjectCommandError(_failure(exit_code=7), hint="h")
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is ProjectCommandError and copy.failure == exc.failure and str(copy) == str(exc)


@pytest.mark.unit
@pytest.mark.parametrize(
    "output,expected",
    [
        (
            "-- Configuring\nCMake Error at extra/CMakeLists.txt:1 (message):\n  this tree cannot\n  be "
            "configured\n\n-- done",
            "extra/CMakeLists.txt:1: this tree cannot be configured",
        ),
        (
            "[1/2] Building CXX\nFAILED: main.o\nmain.cpp:3:1: error: expected ';'\nninja: build stopped",
            "main.cpp:3:1: error: expected ';'",
        ),
        ("[1/2] Building CXX\nmain.cpp:3:1: Error: bad\nmore", "main.cpp:3:1: Error: bad"),
        ("line one\nlast words\n\n", "last words"),
        ("", "no output"),
    ],
)
def test_first_error_line_picks_the_telling_line(output, expected):
    assert first_error_line(output) == expected


@pytest.mark.unit
def test_write_log_keeps_the_command_and_the_whole_output(tmp_path):
    path = write_log(tmp_path / "logs" / "x-build.log", ["cmake", "--build", "dir with space"], NOISY)
    assert path == tmp_path / "logs" / "x-build.log"
    text = path.read_text()
    assert (
        text.startswith("$ cmake --build 'dir with space'\n") and "noise line 0\n" in text and "noise line 39" in text
    )
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert write_log(blocked / "logs" / "x.log", ["true"], "out") is None  # no log rather than a second error


@pytest.mark.unit
def test_the_cli_renders_any_error_as_one_line():
    assert cli.render(CompileIQError("a\n  b\n")) == "compileiq-cmake: error: a | b"
    assert one_line("x\r\ny") == "x | y"


@pytest.mark.unit
def test_the_cli_handler_prints_a_usage_error_on_one_line_with_exit_2(capsys):
    rc = cli.main(["space"])
    out, err = capsys.readouterr()
    line = one_line_error(rc, out, err, "give a family")
    assert line.startswith("compileiq-cmake: error: ")


@pytest.mark.unit
def test_bad_input_raises_usage_error():
    with pytest.raises(UsageError, match="does not compile"):
        MetricSpec.parse("time=([0-9", True)
    with pytest.raises(UsageError, match="needs one capture group"):
        MetricSpec.parse("time=[0-9]+", True)


@pytest.mark.unit
def test_an_invalid_result_file_raises_result_file_error(tmp_path):
    from compileiq_cmake.results.toml_io import read_entries

    bad = tmp_path / "compileiq.toml"
    bad.write_text("schema_version = [\n")
    with pytest.raises(ResultFileError, match="is not valid TOML"):
        read_entries(bad)
    with pytest.raises(ResultFileError, match="does not exist"):
        read_entries(tmp_path / "none.toml")


@pytest.mark.unit
def test_a_failing_check_step_names_exit_code_first_error_and_a_log_with_all_output(tmp_path):
    """check's configure/build pasted the last 15 output lines into the message; now one line and a log."""
    from compileiq_cmake.results.check_trees import run_step

    tree = tmp_path / "build" / "compileiq" / "check" / "tuned"
    tree.mkdir(parents=True)
    script = (
        f"printf '%s\\n' {' '.join(f'early{i}' for i in range(30))}; echo 'x.cpp:1: error: boom'; echo after; exit 3"
    )
    with pytest.raises(ProjectCommandError) as caught:
        run_step(["sh", "-c", script], tree, f"building {tree}", timeout=60)
    exc = caught.value
    log = tmp_path / "build" / "compileiq" / "logs" / "check-tuned-configure.log"
    assert exc.exit_code == 3 and exc.first_error == "x.cpp:1: error: boom" and exc.log == log
    assert str(exc) == f"building {tree} failed (exit 3): x.cpp:1: error: boom (full log: {log})"
    text = log.read_text()
    assert "early0\n" in text and "early29\n" in text and "after" in text  # the full output, not a tail


@pytest.mark.unit
def test_a_check_step_that_hangs_is_one_line_with_its_hint(tmp_path):
    from compileiq_cmake.results.check_trees import run_step

    tree = tmp_path / "compileiq" / "check" / "plain"
    tree.mkdir(parents=True)
    with pytest.raises(ProjectCommandError) as caught:
        run_step(["sh", "-c", "echo started; sleep 30"], tree, f"configuring src into {tree}", timeout=1)
    line = str(caught.value)
    assert caught.value.exit_code is None and "\n" not in line
    assert "did not finish within 1 s and was stopped with everything it started" in line
    assert line.endswith("; give it longer with --build-timeout") and "started" in caught.value.log.read_text()


@pytest.mark.unit
def test_a_failed_step_of_check_and_of_the_toolkit_tree_is_the_one_shared_error(tmp_path):
    """Issue 53: check's configure/build and the --toolkit tree's raise project.step_error's error: what failed,
    the exit status or why compileiq stopped it, the first error line, the log that keeps the whole output, and
    each caller's hint."""
    from compileiq_cmake.results.check_trees import run_step
    from compileiq_cmake.tune.with_toolkit import _step

    script = f"printf '%s\\n' {' '.join(f'early{i}' for i in range(30))}; echo 'x.cpp:1: error: boom'; exit 3"
    check_tree = tmp_path / "build" / "compileiq" / "check" / "plain"
    kit_tree = tmp_path / "build" / "compileiq" / "cuda-13.0"
    caught = {}
    for name, step, tree in (("check", run_step, check_tree), ("toolkit", _step, kit_tree)):
        tree.mkdir(parents=True)
        with pytest.raises(ProjectCommandError) as error:
            step(["sh", "-c", script, "--build"], tree, f"building {tree}", 60)
        caught[name] = error.value
    check_log = tmp_path / "build" / "compileiq" / "logs" / "check-plain-build.log"
    kit_log = kit_tree / "compileiq-toolkit-logs" / "build.log"
    assert (
        str(caught["check"]) == f"building {check_tree} failed (exit 3): x.cpp:1: error: boom (full log: {check_log})"
    )
    assert str(caught["toolkit"]) == (
        f"building {kit_tree} failed (exit 3): x.cpp:1: error: boom (full log: {kit_log}); see the log; the "
        "project must configure and build with this toolkit (within --time-limit, when given)"
    )
    for exc, log in ((caught["check"], check_log), (caught["toolkit"], kit_log)):
        assert exc.exit_code == 3 and exc.command[:2] == ("sh", "-c") and exc.log == log
        text = log.read_text()
        assert text.startswith("$ sh -c ") and "early0\n" in text and "early29\n" in text  # the whole output
    hung = {}
    for name, step, tree in (("check", run_step, check_tree), ("toolkit", _step, kit_tree)):
        with pytest.raises(ProjectCommandError) as error:
            step(["sh", "-c", "echo started; sleep 30"], tree, f"configuring {tree}", 1)
        hung[name] = error.value
        assert hung[name].exit_code is None and hung[name].first_error == "started" and "\n" not in str(hung[name])
    assert "failed (did not finish within 1 s and was stopped with everything it started): started" in str(
        hung["check"]
    )
    assert str(hung["check"]).endswith("; give it longer with --build-timeout")
    assert f"configuring {kit_tree} failed (timed out after 1 s): started (full log: " in str(hung["toolkit"])


def _setup(target="app"):
    return SimpleNamespace(
        spec=SimpleNamespace(target=target, metric=MetricSpec.parse("t=([0-9.]+)", True), benchmark=("app",))
    )


@pytest.mark.unit
def test_a_baseline_that_does_not_build_is_a_project_command_error_with_its_log():
    from compileiq_cmake.tune.trial import baseline_error

    failure = _failure()
    trial = Trial(0, FlagSet((), ()), Status.BUILD_FAILED, f"build failed: {failure.first_error}", failure=failure)
    exc = baseline_error(trial, _setup())
    assert isinstance(exc, ProjectCommandError) and exc.exit_code == 1 and exc.log == failure.log
    assert str(exc) == (
        "with the project's own flags, building app in the variant tree worker-0 failed (exit 1): "
        "main.cpp:3:1: error: expected ';' (full log: /b/compileiq/logs/w0-build.log)"
    )
    restored = baseline_error(replace(trial, failure=None), _setup())  # from the store: no log to name
    assert isinstance(restored, ProjectCommandError) and restored.log is None and "expected ';'" in str(restored)


@pytest.mark.unit
def test_a_baseline_without_its_metric_is_a_measurement_error_naming_the_log():
    from compileiq_cmake.tune.trial import baseline_error

    failure = _failure(
        what="the benchmark 'app' in the variant tree worker-0",
        exit_code=None,
        first_error="done",
        stopped="metric 't' not found in output",
        log=Path("/b/compileiq/logs/worker-0-benchmark.log"),
    )
    trial = Trial(0, FlagSet((), ()), Status.METRIC_MISSING, "metric missing; last output line: done", failure=failure)
    exc = baseline_error(trial, _setup())
    assert isinstance(exc, MeasurementError) and "never matched" in str(exc)
    assert str(exc).endswith("; last output line: done (full log: /b/compileiq/logs/worker-0-benchmark.log)"), str(exc)


def _runner(tmp_path: Path, body: str, verify: str = "", **spec_kw):
    from compileiq_cmake.measure.runner import BenchCommand, Runner
    from compileiq_cmake.model.spec import TuneSpec
    from compileiq_cmake.project.cmake_project import VariantTree

    script = tmp_path / "bench.py"
    script.write_text(body)
    build = tmp_path / "build"
    verify_argv = (sys.executable, "-c", verify) if verify else ()
    spec = TuneSpec(
        source_dir=tmp_path,
        build_dir=build,
        target="t",
        benchmark=(sys.executable, str(script)),
        metric=MetricSpec.parse(r"time_ms=(\S+)", True),
        output=tmp_path / "o.toml",
        verify=verify_argv,
        repeats=1,
        warmup=0,
        **spec_kw,
    )
    tree = VariantTree(build / "compileiq", "worker-0", "cmake")
    tree.path.mkdir(parents=True)
    return Runner(spec, BenchCommand(spec.benchmark, verify_argv, build)), tree


FAILS = (
    "for i in range(50):\n    print(f'step {i}')\nprint('error: the answer is wrong')\nprint('bye')\n"
    "raise SystemExit(3)\n"
)


@pytest.mark.unit
def test_a_failing_benchmark_run_keeps_its_whole_output_in_a_log_and_its_exit_code(tmp_path):
    runner, tree = _runner(tmp_path, FAILS)
    m = runner.measure(tree, repeats=1, warmup=0)
    assert m.status is Status.RUN_FAILED and m.failure is not None
    log = tmp_path / "build" / "compileiq" / "logs" / "worker-0-benchmark.log"
    assert m.failure.exit_code == 3 and m.failure.log == log and m.failure.first_error == "bye"
    assert m.failure.command == (sys.executable, str(tmp_path / "bench.py"))
    text = log.read_text()
    assert "step 0\n" in text and "step 49\n" in text and "error: the answer is wrong" in text
    assert str(ProjectCommandError(m.failure)) == (
        f"the benchmark '{sys.executable} {tmp_path / 'bench.py'}' in the variant tree worker-0 failed (exit 3): bye "
        f"(full log: {log})"
    )


@pytest.mark.unit
def test_a_failing_verify_is_a_project_command_failure_with_its_log(tmp_path):
    runner, tree = _runner(
        tmp_path, "print('time_ms=2.0')\n", verify="print('checking'); print('mismatch at 7'); raise SystemExit(4)"
    )
    m = runner.measure(tree, repeats=1, warmup=0)
    assert m.status is Status.VERIFY_FAILED and m.failure.exit_code == 4
    assert m.failure.what == f"the VERIFY command '{shlex.join(m.failure.command)}' in the variant tree worker-0"
    assert "checking\nmismatch at 7" in m.failure.log.read_text() and m.failure.log.name == "worker-0-verify.log"
    trial = Trial(0, FlagSet((), ()), m.status, m.reason, failure=m.failure)
    from compileiq_cmake.tune.trial import baseline_error

    exc = baseline_error(trial, _setup())
    assert isinstance(exc, ProjectCommandError) and "\n" not in str(exc)
    assert str(exc).startswith(
        "with the project's own flags, the VERIFY command "
    ) and "failed (exit 4): mismatch at 7" in str(exc)


@pytest.mark.unit
def test_a_benchmark_without_its_metric_names_its_log_but_no_exit_code(tmp_path):
    runner, tree = _runner(tmp_path, "print('no number here')\n")
    m = runner.measure(tree, repeats=1, warmup=0)
    assert m.status is Status.METRIC_MISSING and m.failure.exit_code is None
    assert "not found in output" in m.failure.stopped and "no number here" in m.failure.log.read_text()


# --- real CMake: a tiny project whose configure or build fails ------------------------------------------


def _tiny(tmp_path: Path, source: str, extra_cmake: str = "") -> tuple[Path, Path]:
    src = tmp_path / "tiny"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(tiny CXX)\nadd_executable(app main.cpp)\n" + extra_cmake
    )
    (src / "main.cpp").write_text(source)
    build = tmp_path / "build"
    proc = configure(src, build, "-DCMAKE_BUILD_TYPE=Release")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return src, build


@pytest.mark.cmake
def test_a_variant_configure_that_fails_is_a_project_command_error_with_its_log(tmp_path):
    from compileiq_cmake.project.cmake_project import VariantTree
    from compileiq_cmake.project.variant_settings import VariantSettings

    src, build = _tiny(
        tmp_path,
        "int main() { return 0; }\n",
        'if(COMPILEIQ_VARIANT_FRAGMENT)\n  message(STATUS "before the error")\n'
        '  message(FATAL_ERROR "variant trees are refused")\nendif()\n',
    )
    settings, _ = VariantSettings.from_user_tree(src, build, "")
    tree = VariantTree(build / "compileiq", "worker-0", settings.cmake)
    with pytest.raises(ProjectCommandError) as caught:
        tree.configure(settings, "app", "CXX")
    exc = caught.value
    log = build / "compileiq" / "logs" / "worker-0-configure.log"
    assert exc.exit_code == 1 and exc.log == log and exc.command[0] == settings.cmake and "-S" in exc.command
    assert exc.first_error == "CMakeLists.txt:6: variant trees are refused", exc.first_error
    assert str(exc) == (
        f"configuring the variant tree worker-0 failed (exit 1): CMakeLists.txt:6: variant trees "
        f"are refused (full log: {log})"
    )
    text = log.read_text()
    assert (
        text.startswith(f"$ {settings.cmake} ") and "before the error" in text and "variant trees are refused" in text
    )


@pytest.mark.cmake
def test_a_variant_build_that_fails_keeps_its_command_exit_code_and_full_log(tmp_path):
    from compileiq_cmake.project.cmake_project import VariantTree
    from compileiq_cmake.project.variant_settings import VariantSettings

    src, build = _tiny(tmp_path, "int main() { return undeclared_name_xyz; }\n")
    settings, _ = VariantSettings.from_user_tree(src, build, "")
    tree = VariantTree(build / "compileiq", "worker-0", settings.cmake)
    tree.configure(settings, "app", "CXX")
    result = tree.build(("app",), jobs=1, timeout=300)
    assert not result.ok and result.failure is not None
    failure = result.failure
    log = build / "compileiq" / "logs" / "worker-0-build.log"
    assert (
        failure.exit_code not in (0, None) and failure.log == log and failure.command[:2] == (settings.cmake, "--build")
    )
    assert "undeclared_name_xyz" in failure.first_error and result.log_tail == failure.first_error
    assert "undeclared_name_xyz" in log.read_text() and "main.cpp" in log.read_text()


@pytest.mark.cmake
def test_a_tune_whose_own_build_fails_says_so_on_one_line_and_keeps_the_log(tmp_path):
    src, build = _tiny(tmp_path, "int main() { return undeclared_name_xyz; }\n")
    proc = run_cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        "app",
        "--bench",
        "app",
        "--metric",
        "WALLTIME",
        "--budget",
        "3",
        "--output",
        str(tmp_path / "compileiq.toml"),
    )
    line = one_line_error(
        proc.returncode,
        proc.stdout,
        proc.stderr,
        "with the project's own flags, the build of app in the variant tree worker-0 failed (exit ",
        "undeclared_name_xyz",
        "full log: ",
    )
    log = Path(line.rsplit("full log: ", 1)[1].split(")")[0])
    assert log.is_file() and log.parent == build / "compileiq" / "logs", line
    assert "undeclared_name_xyz" in log.read_text()
    assert not (tmp_path / "compileiq.toml").exists()


@pytest.mark.unit
def test_a_missing_third_party_package_is_one_usage_line(monkeypatch, capsys):
    """The ModuleNotFoundError branch of the CLI (the one mypy read as passing a list where an error goes: the
    name `missing` was taken by tune's list of missing options; the branch itself was right)."""

    def lacking():
        raise ModuleNotFoundError("No module named 'scipy'", name="scipy")

    monkeypatch.setattr(cli, "cmake_dir", lacking)
    assert cli._main(["--cmake-dir"]) == 2
    err = capsys.readouterr().err
    assert "lacks the package 'scipy'" in err and len(err.strip().splitlines()) == 1
