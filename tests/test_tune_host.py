"""The whole loop, end to end, on the host C++ example, through both routes; then the release configure
that applies the TOML, checked in compile_commands.json."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib

import pytest

from compileiq_cmake.model.wording import plural
from compileiq_cmake.results.toml_io import read_entries

from conftest import cmake_dir, commands_for, configure, run_cli

METRIC = "time_ms=([0-9.eE+-]+)"


def _assert_applied(src, release, flags):
    proc = configure(src, release, "-DCMAKE_BUILD_TYPE=Release", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert proc.returncode == 0, proc.stderr
    assert "compileiq: applied" in proc.stdout
    (command,) = commands_for(release, "main.cpp")
    for flag in flags:
        assert flag in command
    return proc


@pytest.mark.cmake
def test_opt_in_route_tunes_writes_toml_and_a_plain_configure_applies_it(host_example, tmp_path):
    build = tmp_path / "build"
    proc = configure(
        host_example, build, "-DCMAKE_BUILD_TYPE=Release", "-DCOMPILEIQ_TUNE=ON", f"-Dcompileiq_cmake_DIR={cmake_dir()}"
    )
    assert proc.returncode == 0, proc.stderr
    tune = subprocess.run(
        ["cmake", "--build", str(build), "--target", "compileiq_tune"], capture_output=True, text=True, timeout=900
    )
    assert tune.returncode == 0, tune.stdout[-3000:] + tune.stderr[-3000:]
    assert "[ 12/12]" in tune.stdout, "the example's BUDGET 12 must be used"
    (entry,) = read_entries(host_example / "compileiq.toml")
    assert entry.target == "host_kernels" and entry.language == "CXX" and entry.flags
    assert entry.speedup > 1.01 and all(t < b for t, b in zip(entry.tuned, entry.baseline, strict=False))
    assert entry.workloads == ("--n 768", "--n 1024") and entry.trials == 12
    assert len(entry.sources_sha256) == 64 and entry.compiler_id == "GNU"
    # the user's tuning tree itself was not given the tuned flags
    (own,) = commands_for(build, "main.cpp")
    assert not any(f in own.split() for f in entry.flags if f not in ("-O2", "-O3"))
    _assert_applied(host_example, tmp_path / "release", entry.flags)
    off = configure(host_example, tmp_path / "off", "-DCOMPILEIQ_APPLY=OFF", f"-Dcompileiq_cmake_DIR={cmake_dir()}")
    assert "compileiq: applied" not in off.stdout
    (plain,) = commands_for(tmp_path / "off", "main.cpp")
    assert not all(f in plain.split() for f in entry.flags)


@pytest.mark.cmake
def test_unmodified_route_and_top_level_include_apply(host_example, tmp_path):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    out = tmp_path / "flags" / "tuned.toml"
    proc = run_cli(
        "tune",
        "-S",
        str(host_example),
        "-B",
        str(build),
        "--target",
        "host_kernels",
        "--bench",
        "host_kernels --n 768",
        "--metric",
        METRIC,
        "--pass-regex",
        "PASS",
        "--budget",
        "8",
        "--seed",
        "3",
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "[  8/8]" in proc.stdout and "compileiq: validation:" in proc.stdout and "driver overhead" in proc.stdout
    assert not (host_example / "compileiq.toml").exists()
    assert out.is_file(), proc.stdout[-4000:]
    data = tomllib.loads(out.read_text())
    flags = data["entry"][0]["flags"]
    release = tmp_path / "release"
    proc = configure(
        host_example,
        release,
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir()}/compileiq_apply.cmake",
        f"-DCOMPILEIQ_FLAGS_FILE={out}",
    )
    assert proc.returncode == 0, proc.stderr
    assert f"compileiq: applied {plural(len(flags), 'tuned flag')} to host_kernels" in proc.stdout
    (command,) = commands_for(release, "main.cpp")
    assert all(f in command for f in flags)
    show = run_cli("show", str(out))
    assert show.returncode == 0 and "host_kernels (CXX, host" in show.stdout and "speedup" in show.stdout


@pytest.mark.cmake
def test_no_significant_gain_writes_no_flags(host_example, tmp_path):
    """Only flags that cannot change this program's speed: nothing may be written."""
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    proc = run_cli(
        "tune",
        "-S",
        str(host_example),
        "-B",
        str(build),
        "--target",
        "host_kernels",
        "--bench",
        "host_kernels --n 512",
        "--metric",
        METRIC,
        "--pass-regex",
        "PASS",
        "--include-flags",
        "no_semantic_interposition",
        "--budget",
        "4",
        "--min-gain",
        "0.5",
    )
    assert proc.returncode == 0, proc.stderr
    assert "no flag set beat the project's own build" in proc.stdout
    assert not (host_example / "compileiq.toml").exists()


@pytest.mark.cmake
def test_multi_config_generator_tunes_the_release_configuration_and_applies_it_there_only(host_example, tmp_path):
    """Ninja Multi-Config: the variant trees hold and build only Release (the baseline is -O3 -DNDEBUG,
    not Debug's -g), the TOML records build_type = "Release", and the release configure puts the flags
    inside $<CONFIG:Release>."""
    if not shutil.which("ninja"):
        pytest.skip("ninja is not installed")
    build = tmp_path / "build"
    proc = subprocess.run(
        ["cmake", "-S", str(host_example), "-B", str(build), "-G", "Ninja Multi-Config"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "multi.toml"
    proc = run_cli(
        "tune",
        "-S",
        str(host_example),
        "-B",
        str(build),
        "--target",
        "host_kernels",
        "--bench",
        "host_kernels --n 768",
        "--metric",
        METRIC,
        "--pass-regex",
        "PASS",
        "--include-flags",
        "no_math_errno,ipa_pta",
        "--budget",
        "3",
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "tuning the Release configuration" in proc.stdout
    trials = next(iter(json.loads(run_cli("trials", "-B", str(build), "--json").stdout).values()))
    assert "-O3" in trials[0]["compile_command"] and "-DNDEBUG" in trials[0]["compile_command"]
    assert out.is_file(), proc.stdout[-3000:]
    (entry,) = read_entries(out)
    assert entry.build_type == "Release" and "-fno-math-errno" in entry.flags
    release = tmp_path / "release"
    proc = subprocess.run(
        [
            "cmake",
            "-S",
            str(host_example),
            "-B",
            str(release),
            "-G",
            "Ninja Multi-Config",
            f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir()}/compileiq_apply.cmake",
            f"-DCOMPILEIQ_FLAGS_FILE={out}",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "for the Release configuration" in proc.stdout
    assert "-fno-math-errno" in (release / "CMakeFiles" / "impl-Release.ninja").read_text()
    assert "-fno-math-errno" not in (release / "CMakeFiles" / "impl-Debug.ninja").read_text()


@pytest.mark.cmake
def test_host_tune_speaks_of_no_gpu_and_a_resume_counts_restored_trials_apart(host_example, tmp_path):
    """A CPU tune: no "GPU" in its console lines, its report has no GPU column, throttling line or device-code
    table; counts in one are singular ("1 worker"). Resumed with a larger budget, the summary counts the
    restored trials apart from those measured now."""
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    tune = (
        "tune",
        "-S",
        str(host_example),
        "-B",
        str(build),
        "--target",
        "host_kernels",
        "--bench",
        "host_kernels --n 512",
        "--metric",
        METRIC,
        "--pass-regex",
        "PASS",
        "--seed",
        "3",
        "--workers",
        "1",
        "--output",
        str(tmp_path / "out.toml"),
    )
    proc = run_cli(*tune, "--budget", "4")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "[  4/4]" in proc.stdout and "in flight: building" in proc.stdout
    assert "GPU" not in proc.stdout and "thermal" not in proc.stdout, [
        line for line in proc.stdout.splitlines() if "GPU" in line or "thermal" in line
    ]
    assert "search phase: 4 trials in " in proc.stdout and "restored" not in proc.stdout
    html = re.sub(
        r'src="data:image/[^"]*"', "", (build / "compileiq" / "report.html").read_text()
    )  # not in base64 PNGs
    assert "GPU" not in html and "thermal" not in html and "throttling" not in html and 'id="resources"' not in html
    assert "<th>host CPU</th>" in html and "1 worker," in html and 'id="trials"' in html
    proc = run_cli(*tune, "--budget", "6")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "compileiq: resuming: 4 finished trials restored from" in proc.stdout
    assert "search phase: 6 trials: 4 restored from the store, 2 measured in " in proc.stdout, proc.stdout[-2000:]
    assert re.search(r"host_kernels: 6 trials \(\d valid, \d invalid; 4 restored from the store\) in ", proc.stdout)
