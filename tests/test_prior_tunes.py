"""Issue 23 on real tunes: a tune adds what it measured to the local prior data, the next tune of the same kind
of code starts from it, and --no-prior gives the order a tune has without a prior."""

from __future__ import annotations

import json
import re

import pytest

from conftest import configure, run_cli

METRIC = "time_ms=([0-9.eE+-]+)"


def _tune(src, tmp_path, name: str, *extra: str, budget: int = 4):
    build = tmp_path / name
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    summary = tmp_path / f"{name}.json"
    proc = run_cli(
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
        METRIC,
        "--pass-regex",
        "PASS",
        "--budget",
        str(budget),
        "--seed",
        "2",
        "--workers",
        "1",
        "--max-rounds",
        "5",
        "--output",
        str(tmp_path / f"{name}.toml"),
        "--json-summary",
        str(summary),
        *extra,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    trials = next(iter(json.loads(run_cli("trials", "-B", str(build), "--json").stdout).values()))
    order = [tuple(t["flags"]) for t in sorted(trials, key=lambda t: t["index"])]
    return proc.stdout, order, json.loads(summary.read_text())


@pytest.mark.cmake
def test_the_second_tune_starts_from_what_the_first_learned_and_no_prior_keeps_todays_order(host_example, tmp_path):
    out1, first, _ = _tune(host_example, tmp_path, "b1")
    assert "prior: no observation of gcc flags yet" in out1 and "proposed by the prior" not in out1
    added = re.search(r"prior: the effects of (\d+) flag values? measured by this tune added", out1)
    assert added and int(added.group(1)) >= 1, out1[-3000:]

    out2, second, summary2 = _tune(host_example, tmp_path, "b2", budget=2)  # its first trial is what is checked
    assert "prior: 1 observation of gcc flags (1 from your tunes)" in out2, out2[-3000:]
    proposed = [e for e in summary2["events"] if e.get("data", {}).get("prior")]
    assert proposed and proposed[0]["data"]["trial"] == 1, summary2["events"]
    assert tuple(proposed[0]["data"]["flags"]) == second[1]  # its first trial is the prior's proposal ...
    assert "-ffast-math" in second[1]  # ... with the first tune's big mover in it

    out3, third, _ = _tune(host_example, tmp_path, "b3", "--no-prior", budget=2)
    assert "prior: off (--no-prior)" in out3 and "proposed by the prior" not in out3
    assert third[:2] == first[:2]  # the baseline, then the first single-flag change: today's order
