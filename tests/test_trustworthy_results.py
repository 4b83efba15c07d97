"""Results you can trust, end to end on host programs: an A/A tune finds nothing, and a flag that changes
the printed results beyond the tolerance is never chosen (while a loose tolerance allows it)."""

from __future__ import annotations

import json

import pytest

from compileiq_cmake.results.toml_io import read_entries

from conftest import configure, copy_project, run_cli

METRIC = "time_ms=([0-9.eE+-]+)"


def _project(tmp_path, name):
    src = tmp_path / name
    copy_project(name, src)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    return src, build


@pytest.mark.cmake
def test_a_a_tune_of_a_sleeping_program_reports_no_improvement_and_writes_nothing(tmp_path):
    src, build = _project(tmp_path, "sleeper")
    proc = run_cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        "sleeper",
        "--bench",
        "sleeper",
        "--metric",
        METRIC,
        "--pass-regex",
        "PASS",
        "--budget",
        "6",
        "--seed",
        "1",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "no significant improvement" in proc.stdout
    assert not (src / "compileiq.toml").exists()


@pytest.mark.cmake
def test_paired_runs_cancel_drift_that_would_hide_a_20_percent_gain(tmp_path):
    """The program's printed time wanders 3x over consecutive runs; -fno-math-errno makes it 20% faster.
    Trials are measured next to runs of the project's own build and compared by per-pair ratios, and the
    validation compares round by round, so the gain is found, ranked and validated at its true size."""
    src, build = _project(tmp_path, "drifter")
    counter = tmp_path / "runs.txt"
    out = tmp_path / "drift.toml"
    proc = run_cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        "drifter",
        "--bench",
        f"drifter {counter}",
        "--metric",
        METRIC,
        "--pass-regex",
        "PASS",
        "--include-flags",
        "no_math_errno,opt_level",
        "--budget",
        "4",
        "--seed",
        "2",
        "--workers",
        "1",
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "measured next to runs of the project's own build" in proc.stdout, proc.stdout
    trials = next(iter(json.loads(run_cli("trials", "-B", str(build), "--json").stdout).values()))
    for t in trials[1:]:
        assert all(len(m["reference"]) == len(m["samples"]) for m in t["measurements"]), t
    (entry,) = read_entries(out)
    # the gain's flag is found and validated at its true size; whether the ablation also keeps -O2 (one step's
    # own 5% test against a 3x drift: 1.0245x [1.002..1.0475] once the search stopped extra runs of a trial
    # whose place was clear, issue 33) is the ablation's per-step error control (the statistics issue)
    assert "-fno-math-errno" in entry.flags and set(entry.flags) <= {"-fno-math-errno", "-O2", "-O3"}, proc.stdout[
        -3000:
    ]
    # written as significantly faster, its number inside its own interval; how much faster a loaded machine
    # shows is left to its interval (the paired runs keep the ratio, not its spread): only a gross miss fails
    low, high = entry.speedup_ci
    assert 1.0 < low <= entry.speedup <= high and high > 1.1 and entry.speedup < 1.6, entry


def _tune_reassoc(src, build, rtol, output):
    return run_cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        "reassoc",
        "--bench",
        "reassoc 262144",
        "--metric",
        METRIC,
        "--compare-output",
        "^checksum=",
        "--rtol",
        rtol,
        "--include-flags",
        "fast_math,march_native",
        "--budget",
        "4",
        "--output",
        str(output),
    )


@pytest.mark.cmake
def test_fast_math_that_changes_printed_results_beyond_the_tolerance_is_never_chosen(tmp_path):
    src, build = _project(tmp_path, "reassoc")
    out = tmp_path / "strict.toml"
    proc = _tune_reassoc(src, build, "1e-7", out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    trials = next(iter(json.loads(run_cli("trials", "-B", str(build), "--json").stdout).values()))
    fast = [t for t in trials if "-ffast-math" in t["flags"]]
    assert fast and all(t["status"] == "numerics_changed" and "relative error up to" in t["reason"] for t in fast)
    if out.exists():
        assert all("-ffast-math" not in e.flags for e in read_entries(out))


@pytest.mark.cmake
def test_a_loose_tolerance_lets_the_faster_fast_math_build_win(tmp_path):
    src, build = _project(tmp_path, "reassoc")
    out = tmp_path / "loose.toml"
    proc = _tune_reassoc(src, build, "1e-3", out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    (entry,) = read_entries(out)
    assert "-ffast-math" in entry.flags and entry.speedup > 1.5
    # the written interval is the confirmation's (5 rounds that decided nothing): on a loaded machine it may be wide,
    # but it holds the written speed-up and never says the winner is slower (then it is withdrawn)
    assert entry.speedup_ci[0] <= entry.speedup <= entry.speedup_ci[1] and entry.speedup_ci[1] > 1.0
    assert len(entry.workload_ci) == 1 and entry.speedup_from == "confirmation"
    assert any(c["kept"] and c["flags"] == ["-ffast-math"] for c in entry.contributions)
