"""Kill the driver in the middle of a tune, rerun: finished trials are restored, none is repeated."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import configure


def _count(db) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.cmake
def test_killed_tune_resumes_without_repeating_or_losing_trials(host_example, tmp_path):
    build = tmp_path / "build"
    assert configure(host_example, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    args = [
        sys.executable,
        "-m",
        "compileiq_cmake",
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
        "time_ms=([0-9.eE+-]+)",
        "--pass-regex",
        "PASS",
        "--budget",
        "8",
        "--seed",
        "5",
    ]
    db = build / "compileiq" / "trials.sqlite"
    proc = subprocess.Popen(
        args,
        cwd=tempfile.gettempdir(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.time() + 300
    while _count(db) < 3 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the tune ended before it could be killed:\n" + proc.stdout.read()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as conn:
        before = {row[0]: row[1] for row in conn.execute("SELECT key, measurements FROM trials")}
    assert 3 <= len(before) < 8

    second = subprocess.run(args, cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr
    assert f"resuming: {len(before)} finished trials restored" in second.stdout
    with sqlite3.connect(db) as conn:
        after = {row[0]: row[1] for row in conn.execute("SELECT key, measurements FROM trials")}
    assert len(after) == 8, "the budget counts unique trials across both runs"
    assert all(after[k] == v for k, v in before.items()), "restored trials must keep their measurements"
    new_lines = [ln for ln in second.stdout.splitlines() if ln.startswith("[")]
    assert len(new_lines) == 1 + (8 - len(before)), "only the missing trials are built and measured"
