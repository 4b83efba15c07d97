"""Issue 21: ablation survives a kill. A real tune of the host example is killed with SIGKILL (its whole
process group, as a crash or an OOM kill would end it) as soon as its first ablation step is decided; the
rerun restores that step from the trial store, measures only the steps left, and writes the entry."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile

import pytest

from compileiq_cmake.results.toml_io import read_entries

from conftest import configure, run_cli

pytestmark = [pytest.mark.cmake, pytest.mark.serial]

STEP = re.compile(r"^compileiq: ablation: (\S+): keeping it gives .* -> (kept|dropped)")


def test_a_tune_killed_with_sigkill_during_ablation_resumes_after_its_finished_steps(tmp_path, host_example):
    src = host_example
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    # two dimensions that both matter here (about 3x and 10x): two ablation steps, neither grouped
    args = (
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        "host_kernels",
        "--bench",
        "host_kernels --n 512",
        "--metric",
        r"time_ms=([0-9.eE+-]+)",
        "--pass-regex",
        "PASS",
        "--include-flags",
        "march_native,fast_math",
        "--budget",
        "6",
        "--workers",
        "1",
        "--seed",
        "3",
        "--output",
        str(tmp_path / "compileiq.toml"),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "compileiq_cmake", *args],
        cwd=tempfile.gettempdir(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    killed_after = None
    try:
        for line in proc.stdout:
            seen.append(line)
            m = STEP.match(line)
            if m:
                os.killpg(proc.pid, signal.SIGKILL)  # at once: the next step is still being built or measured
                killed_after = m.group(1)
                break
    finally:
        if proc.poll() is None and killed_after is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert killed_after is not None, "".join(seen)[-3000:]
    assert proc.returncode == -signal.SIGKILL
    toml = tmp_path / "compileiq.toml"  # killed before the final write: at most the entry banked during the search
    assert not toml.exists() or all(
        any("banked during the search" in u for u in e.untested) for e in read_entries(toml)
    )

    rerun = run_cli(*args)
    out = rerun.stdout
    assert rerun.returncode == 0, (out + rerun.stderr)[-3000:]
    assert re.search(r"ablation: 1 step\(s\) of an interrupted ablation restored from the trial store", out), out[
        -3000:
    ]
    assert re.search(rf"ablation: {re.escape(killed_after)}: restored from the trial store", out), out[-3000:]
    measured = [m.group(1) for m in map(STEP.match, out.splitlines()) if m]
    assert killed_after not in measured and measured, out[-3000:]  # the finished step is not measured again
    assert (tmp_path / "compileiq.toml").is_file()
