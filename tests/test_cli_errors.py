"""Bad input: one line on stderr naming what is wrong, exit status 2, and no output files."""

from __future__ import annotations

import pytest

from conftest import configure, run_cli

METRIC = "time_ms=([0-9.eE+-]+)"


@pytest.fixture
def configured(host_example, tmp_path):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    return host_example, build


def _tune(src, build, *extra):
    base = {"--target": "host_kernels", "--bench": "host_kernels --n 256", "--metric": METRIC, "--budget": "4"}
    args = list(extra)
    for key, value in base.items():
        if key not in args:
            args += [key, value]
    return run_cli("tune", "-S", str(src), "-B", str(build), *args)


def _one_line_error(proc, *needles):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("compileiq-cmake: error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("extra,needles", [
    (["--target", "nope"], ["unknown target 'nope'", "host_kernels"]),
    (["--bench", "no_such_benchmark --n 3"], ["benchmark command 'no_such_benchmark' not found"]),
    (["--metric", "elapsed=([0-9.]+)"], ["never matched", "elapsed="]),
    (["--metric", "time_ms=[0-9.]+"], ["needs one capture group"]),
    (["--pass-regex", "ALL GOOD"], ["does not pass with the project's own flags", "ALL GOOD"]),
    (["--exclude-flags", "fastmath"], ["unknown flag dimension 'fastmath'"]),
])
def test_bad_tune_input(configured, extra, needles):
    src, build = configured
    proc = _tune(src, build, *extra)
    _one_line_error(proc, *needles)
    assert not (src / "compileiq.toml").exists()
    assert not (build / "compileiq").exists(), "a failed first run must leave no state behind"


def test_nonexistent_source_dir(tmp_path):
    proc = _tune(tmp_path / "missing", tmp_path / "build")
    _one_line_error(proc, "does not exist", "-S")
    assert not (tmp_path / "build").exists()


def test_malformed_and_missing_toml(tmp_path):
    bad = tmp_path / "compileiq.toml"
    bad.write_text("schema_version = 1\n[[entry]\n")
    _one_line_error(run_cli("show", str(bad)), "is not valid TOML")
    _one_line_error(run_cli("show", str(tmp_path / "none.toml")), "does not exist")
    out = tmp_path / "entries.cmake"
    _one_line_error(run_cli("cmake-entries", str(bad), str(out)), "is not valid TOML")
    assert not out.exists()


def test_help_documents_every_command():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for word in ("tune", "show", "space", "trials", "--cmake-dir", "CMAKE_PROJECT_TOP_LEVEL_INCLUDES"):
        assert word in proc.stdout
    tune = run_cli("tune", "--help")
    for option in ("--bench", "--metric", "--pass-regex", "--verify", "--workload", "--budget", "--time-limit",
                   "--include-flags", "--exclude-flags", "--output", "--higher-is-better"):
        assert option in tune.stdout
