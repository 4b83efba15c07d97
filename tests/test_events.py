"""Issue 20, one event stream: the kinds and lines of events, the former line interface, the console sink's
verbosity (quiet: warnings and stage results; normal: all but details; verbose: all), and --quiet/--verbose on
the command line (one stream with the console, passed where `log` was; with --json the lines go to stderr)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compileiq_cmake.model.events import Event, EventStream, as_stream, recording
from compileiq_cmake.ui import cli
from compileiq_cmake.ui.console import Console

from conftest import replay_args

pytestmark = pytest.mark.unit

PROGRESS = re.compile(r"^\[\s*\d+/\d+\]")


def _one_of_each(events: EventStream) -> None:
    events.progress("[  1/30] #0 1.0 (1.000x)")
    events.info("baseline noise: 0.5%", noise=0.005)
    events.note("per-file stage skipped: a replay has no kernel times")
    events.warning("the GPU clock is not locked")
    events.stage_result("publish", "wrote compileiq.toml", path="compileiq.toml")
    events.detail("trial 3 built in 1.2 s")


EVERY = [
    "[  1/30] #0 1.0 (1.000x)",
    "compileiq: baseline noise: 0.5%",
    "compileiq: note: per-file stage skipped: a replay has no kernel times",
    "compileiq: warning: the GPU clock is not locked",
    "compileiq: wrote compileiq.toml",
    "compileiq: trial 3 built in 1.2 s",
]


def test_each_kind_has_its_line_and_keeps_its_data():
    events, recorder = recording()
    _one_of_each(events)
    assert [e.kind for e in recorder] == ["progress", "info", "note", "warning", "stage", "detail"]
    assert recorder.lines() == EVERY
    assert recorder.of("info")[0].data == {"noise": 0.005} and recorder.of("stage")[0].stage == "publish"
    assert Event("info", "  #   speedup", bare=True).line() == "  #   speedup"


def test_the_line_interface_takes_the_kind_from_the_prefix():
    events, recorder = recording()
    events("compileiq: note: device-code fingerprints are off")
    events("compileiq: warning: coarse timer")
    events("compileiq: baseline noise: 1%")
    events("[  3/30] #2 INVALID build: error")
    events("  #   speedup  flags")
    events("")
    assert [(e.kind, e.text) for e in recorder] == [
        ("note", "device-code fingerprints are off"),
        ("warning", "coarse timer"),
        ("info", "baseline noise: 1%"),
        ("progress", "[  3/30] #2 INVALID build: error"),
        ("info", "  #   speedup  flags"),
        ("info", ""),
    ]
    # what goes in as a line comes out as the same line
    assert recorder.lines() == [
        "compileiq: note: device-code fingerprints are off",
        "compileiq: warning: coarse timer",
        "compileiq: baseline noise: 1%",
        "[  3/30] #2 INVALID build: error",
        "  #   speedup  flags",
        "",
    ]


def test_as_stream_takes_a_stream_a_function_of_a_line_or_nothing():
    events, _ = recording()
    assert as_stream(events) is events
    said: list[str] = []
    as_stream(said.append).warning("slow disk", path="/tmp")
    assert said == ["compileiq: warning: slow disk"]
    as_stream(None).info("nobody hears this")  # no subscriber, no error


@pytest.mark.parametrize(
    "verbosity,shown",
    [
        ("quiet", [EVERY[3], EVERY[4]]),
        ("normal", EVERY[:5]),
        ("verbose", EVERY),
    ],
)
def test_the_console_shows_what_its_verbosity_lets_through(verbosity, shown):
    out = io.StringIO()
    _one_of_each(EventStream(Console(verbosity, out)))
    assert out.getvalue().splitlines() == shown


def test_the_console_refuses_an_unknown_verbosity():
    with pytest.raises(ValueError, match="'loud' is not one of quiet, normal, verbose"):
        Console("loud")


@pytest.mark.parametrize(
    "command",
    [
        ["tune", "-S", "s", "-B", "b", "--target", "t", "--metric", "WALLTIME"],
        ["check", "-S", "s", "-B", "b"],
        ["report", "-B", "b"],
        ["space", "nvcc"],
    ],
)
def test_quiet_and_verbose_exclude_each_other(command, capsys):
    parser = cli.build_parser()
    assert parser.parse_args(command).verbosity == "normal"
    assert parser.parse_args(command + ["--quiet"]).verbosity == "quiet"
    assert parser.parse_args(command + ["--verbose"]).verbosity == "verbose"
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(command + ["--quiet", "--verbose"])
    assert exc.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("flag,shown", [(["--quiet"], [EVERY[3], EVERY[4]]), ([], EVERY[:5]), (["--verbose"], EVERY)])
def test_tune_passes_one_stream_with_the_console_at_the_asked_verbosity(flag, shown, monkeypatch, capsys, tmp_path):

    got = []

    def fake_run_tune(spec, log, cluster=None):
        got.append(log)
        _one_of_each(log)

    from compileiq_cmake.tune import orchestration

    monkeypatch.setattr(orchestration, "run_tune", fake_run_tune)  # cli imports it when `tune` runs
    rc = cli.main(
        [
            "tune",
            "-S",
            str(tmp_path),
            "-B",
            str(tmp_path / "b"),
            "--target",
            "t",
            "--bench",
            "x",
            "--metric",
            "WALLTIME",
            *flag,
        ]
    )
    assert rc == 0 and len(got) == 1 and isinstance(got[0], EventStream)
    assert capsys.readouterr().out.splitlines() == shown


def test_check_json_keeps_stdout_for_the_document_and_says_the_rest_on_stderr(monkeypatch, capsys, tmp_path):
    from compileiq_cmake.results.check_report import EntryCheck

    def fake_run_check(toml, source_dir, build_dir, *, events, **kw):
        events.info("check: re-measuring t: ./bench (WALLTIME), 1 workload, 9 rounds", stage="check")
        events.detail("round 1 of 9")
        return [EntryCheck("t", "", ["-O2"], True, "1 tuned flag for CXX")]

    from compileiq_cmake.results import check

    monkeypatch.setattr(check, "run_check", fake_run_check)  # cli imports it when `check` runs
    assert cli.main(["check", "-S", str(tmp_path), "-B", str(tmp_path), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["passed"] is True
    assert captured.err.splitlines() == ["compileiq: check: re-measuring t: ./bench (WALLTIME), 1 workload, 9 rounds"]
    assert cli.main(["check", "-S", str(tmp_path), "-B", str(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines() == ["compileiq: t: applies: 1 tuned flag for CXX"]  # the stage result


def _replay(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *replay_args(tmp_path, "--budget", "8", *flags)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COMPILEIQ_SIMULATE_GPUS": "1"},
    )


def test_a_quiet_replayed_tune_prints_each_stage_result_and_the_summary_keeps_the_events(tmp_path):
    """--quiet: no progress and no info lines, only warnings and one stage result per stage (the baseline's
    noise, the search's best before validation, the validated winner, the written file). The JSON summary
    subscribes to the same stream: its events are those stage results (and any notes and warnings), each
    with its stage and typed data."""
    normal = _replay(tmp_path / "normal")
    assert normal.returncode == 0, (normal.stdout + normal.stderr)[-3000:]
    assert any(PROGRESS.match(line) for line in normal.stdout.splitlines()), normal.stdout
    assert "compileiq: baseline noise" in normal.stdout
    summary = tmp_path / "quiet" / "summary.json"
    quiet = _replay(tmp_path / "quiet", "--quiet", "--json-summary", str(summary))
    assert quiet.returncode == 0, (quiet.stdout + quiet.stderr)[-3000:]
    assert (tmp_path / "quiet" / "compileiq.toml").read_text() != ""  # the tune did its work
    lines = [line for line in quiet.stdout.splitlines() if not line.startswith("compileiq: warning: ")]
    assert not any(PROGRESS.match(line) for line in lines), quiet.stdout
    events = json.loads(summary.read_text())["events"]
    stages = [e for e in events if e["kind"] == "stage"]
    assert [e["stage"] for e in stages] == ["baseline", "search", "finalists", "publish"], events
    assert lines == [f"compileiq: {e['text']}" for e in stages], quiet.stdout  # quiet shows exactly those
    baseline, search, finalists, publish = (e["data"] for e in stages)
    assert baseline["noise"] >= 0 and len(baseline["medians"]) == 1 and baseline["min_gain"] > 0
    assert search["trials"] == 8 and search["valid"] <= 8 and search["speedup"] > 1
    assert finalists["flags"] and finalists["ci"][0] <= finalists["speedup"] <= finalists["ci"][1]
    assert publish["toml"] == str(tmp_path / "quiet" / "compileiq.toml")


@pytest.mark.unit
def test_trials_export_as_csv_one_row_per_trial_and_workload(tmp_path):
    """Issue 39: `trials --csv` for spreadsheets and dashboards: a header, one row per trial and workload, the
    same trials and flags as --json, each workload's median of its runs."""
    import csv
    import io
    import statistics

    tuned = _replay(tmp_path)
    assert tuned.returncode == 0, (tuned.stdout + tuned.stderr)[-3000:]
    build = str(tmp_path / "build")
    out = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", "trials", "-B", build, "--csv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "compileiq_cmake", "trials", "-B", build, "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    )
    trials = next(iter(doc.values()))
    assert list(rows[0]) == [
        "target",
        "tune",
        "trial",
        "status",
        "flags",
        "workload",
        "median",
        "runs",
        "build_seconds",
        "bench_seconds",
        "binary_bytes",
        "device_bytes",
        "joules_median",
        "metric_median",
        "same_code_as",
        "gpu",
        "reason",
    ]
    assert len(rows) == sum(max(1, len(t["measurements"])) for t in trials) and len(trials) >= 8
    for t in trials:
        mine = [r for r in rows if int(r["trial"]) == t["index"]]
        assert mine and all(r["flags"] == " ".join(t["flags"]) and r["status"] == t["status"] for r in mine)
        for r, m in zip(mine, t["measurements"], strict=False):
            assert float(r["median"]) == pytest.approx(statistics.median(m["samples"]), rel=1e-5)
            assert int(r["runs"]) == len(m["samples"])
    both = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", "trials", "-B", build, "--csv", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert both.returncode == 2 and "not allowed with" in both.stderr


@pytest.mark.unit
def test_the_pareto_set_keeps_the_trials_no_other_beats_on_speed_and_cost():
    """Issue 39: the report marks the trials that no other beats on both speed and build seconds (or size)."""
    from compileiq_cmake.results.report import pareto

    trials = [
        {"index": 0, "speedup": 1.0, "build_seconds": 1.0},
        {"index": 1, "speedup": 1.3, "build_seconds": 2.0},
        {"index": 2, "speedup": 1.2, "build_seconds": 3.0},
        {"index": 3, "speedup": 1.5, "build_seconds": 9.0},
        {"index": 4, "speedup": None, "build_seconds": 0.5},
        {"index": 5, "speedup": 2.0, "build_seconds": 0},
    ]
    assert [t["index"] for t in pareto(trials, "build_seconds")] == [0, 1, 3]  # 2 is beaten by 1; 4 invalid; 5 unknown
