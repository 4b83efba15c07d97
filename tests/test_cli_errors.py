"""Bad input: one line on stderr naming what is wrong, exit status 2, and no output files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compileiq_cmake.model.spec import compute_capability

from conftest import EXAMPLES, configure, one_line_error, run_cli

METRIC = "time_ms=([0-9.eE+-]+)"


def _configured(root):
    src = root / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    build = root / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    return src, build


@pytest.fixture(scope="module")
def configured(tmp_path_factory):
    """One configured copy of the host example for the module's bad-input tunes: each is refused before it
    writes anything (each test asserts so), so they share it."""
    return _configured(tmp_path_factory.mktemp("cli_errors"))


@pytest.fixture
def configured_alone(tmp_path):
    """A configured copy of its own, for a test that writes compileiq.toml into the source tree."""
    return _configured(tmp_path)


def _tune(src, build, *extra):
    base = {"--target": "host_kernels", "--bench": "host_kernels --n 256", "--metric": METRIC, "--budget": "4"}
    args = list(extra)
    for key, value in base.items():
        if key not in args:
            args += [key, value]
    return run_cli("tune", "-S", str(src), "-B", str(build), *args)


def _one_line_error(proc, *needles) -> str:
    return one_line_error(proc.returncode, proc.stdout, proc.stderr, *needles)


@pytest.mark.cmake
@pytest.mark.parametrize(
    "extra,needles",
    [
        (["--target", "nope"], ["unknown target 'nope'", "host_kernels"]),
        (["--bench", "no_such_benchmark --n 3"], ["benchmark command 'no_such_benchmark' not found"]),
        (["--metric", "elapsed=([0-9.]+)"], ["never matched", "elapsed="]),
        (["--metric", "time_ms=[0-9.]+"], ["needs one capture group"]),
        (["--pass-regex", "ALL GOOD"], ["does not pass with the project's own flags", "ALL GOOD"]),
        (["--exclude-flags", "fastmath"], ["unknown flag dimension 'fastmath'"]),
    ],
)
def test_bad_tune_input(configured, extra, needles):
    src, build = configured
    shutil.rmtree(build / "compileiq", ignore_errors=True)  # a first run (an earlier case may have left its log)
    proc = _tune(src, build, *extra)
    line = _one_line_error(proc, *needles)
    assert not (src / "compileiq.toml").exists()
    state = build / "compileiq"
    left = sorted(p.relative_to(state).as_posix() for p in state.rglob("*")) if state.exists() else []
    # a failed first run leaves no state behind, only the logs of the command whose log its line names
    assert all(p == "logs" or p.startswith("logs/") for p in left), left
    if left:
        log = Path(line.rsplit("(full log: ", 1)[1].rstrip(")"))
        assert log.parent == state / "logs" and log.is_file(), line


@pytest.mark.cmake
def test_nonexistent_source_dir(tmp_path):
    proc = _tune(tmp_path / "missing", tmp_path / "build")
    _one_line_error(proc, "does not exist", "-S")
    assert not (tmp_path / "build").exists()


@pytest.mark.cmake
def test_malformed_and_missing_toml(tmp_path):
    bad = tmp_path / "compileiq.toml"
    bad.write_text("schema_version = 1\n[[entry]\n")
    _one_line_error(run_cli("show", str(bad)), "is not valid TOML")
    _one_line_error(run_cli("show", str(tmp_path / "none.toml")), "does not exist")
    out = tmp_path / "entries.cmake"
    _one_line_error(run_cli("cmake-entries", str(bad), str(out)), "is not valid TOML")
    assert not out.exists()


@pytest.mark.cmake
def test_help_documents_every_command():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for word in ("tune", "show", "space", "trials", "--cmake-dir", "CMAKE_PROJECT_TOP_LEVEL_INCLUDES"):
        assert word in proc.stdout
    tune = run_cli("tune", "--help")
    for option in (
        "--bench",
        "--metric",
        "--pass-regex",
        "--verify",
        "--workload",
        "--budget",
        "--time-limit",
        "--include-flags",
        "--exclude-flags",
        "--output",
        "--higher-is-better",
    ):
        assert option in tune.stdout


@pytest.mark.cmake
@pytest.mark.parametrize(
    "extra,needles",
    [
        (["--workers", "0"], ["--workers 0 is out of range"]),
        (["--timeout", "-1"], ["--timeout -1 is out of range", "positive number of seconds"]),
        (["--timeout", "nan"], ["--timeout nan is out of range"]),
        (["--time-limit", "0"], ["--time-limit 0 is out of range"]),
        (["--warmup", "-2"], ["--warmup -2 is out of range"]),
        (["--min-gain", "5"], ["--min-gain 5 is out of range"]),
        (["--cuda-arch", "sm90"], ["--cuda-arch 'sm90' is not a CUDA architecture"]),
        (["--cuda-arch", "90"], ["--cuda-arch 90 was given but target 'host_kernels' is a CXX target"]),
        (
            ["--include-flags", "unroll_loops", "--exclude-flags", "unroll_loops"],
            ["the flag space is empty", "allow more flags"],
        ),
        (
            ["--compare-output", "^no such line"],
            ["--compare-output '^no such line' matched no line with numbers", "nothing would be compared"],
        ),
        (["--compare-file", "never_written.txt"], ["did not write never_written.txt"]),
    ],
)
def test_every_option_is_checked_before_it_can_mislead(configured, extra, needles):
    """Hardening (issue 10): out-of-range numbers, a --cuda-arch a host target cannot use, a space with
    nothing left, and an output comparison that compares nothing are one line and exit 2, no output."""
    src, build = configured
    proc = _tune(src, build, *extra)
    _one_line_error(proc, *needles)
    assert not (src / "compileiq.toml").exists()


@pytest.mark.cmake
def test_a_checked_entry_is_not_replaced_by_an_unchecked_tune(configured_alone):
    """An entry whose numerics were checked by output comparison is not replaced by a tune that compares
    nothing: refused before any build (exit 2, the file unchanged), unless --replace."""
    from compileiq_cmake.results.toml_io import write_entry

    from test_result_file import make_entry

    src, build = configured_alone
    toml = src / "compileiq.toml"
    import re

    version = re.search(
        r'CMAKE_CXX_COMPILER_VERSION "([\d.]+)"',
        next((build / "CMakeFiles").glob("*/CMakeCXXCompiler.cmake")).read_text(),
    ).group(1)
    write_entry(
        toml,
        make_entry(
            target="host_kernels",
            language="CXX",
            arch="",
            compiler_id="GNU",
            compiler_version=version,
            flags=("-ffast-math",),
            compute_capability="",
            device="cpu",
            speedup=1.197,
            checks=("pass_regex", "compare_output"),
        ),
    )
    before = toml.read_text()
    proc = _tune(src, build)
    _one_line_error(proc, "whose numerics were checked (pass_regex, compare_output)", "--replace")
    assert toml.read_text() == before
    assert not (build / "compileiq" / "trials.sqlite").exists(), "refused before any trial"


@pytest.mark.unit
def test_architecture_suffixes_give_the_compute_capability():
    assert (
        compute_capability("90a") == "9.0"
        and compute_capability("100f") == "10.0"
        and compute_capability("75") == "7.5"
    )
