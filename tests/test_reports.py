"""What a tune leaves for people and machines: the summary document (--json-summary, report --json), the
HTML report (loaded in headless Chromium: plots and tables rendered), the labelled final table, and a
`trials --json` that a closed pipe does not turn into a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import replay_args, run_cli

SAMPLE = Path(__file__).resolve().parents[1] / "benchmarks" / "landscapes" / "sample_small.json"
KEYS = {
    "prior",
    "schema",
    "tool_version",
    "target",
    "language",
    "arch",
    "device",
    "compute_capability",
    "compiler",
    "build_type",
    "source_dir",
    "build_dir",
    "date",
    "executor",
    "gpus",
    "replay",
    "settings",
    "metric",
    "workloads",
    "baseline",
    "min_gain",
    "winner",
    "finalists",
    "confirmations",
    "ablation",
    "flag_effects",
    "trials",
    "notes",
    "toml",
    "timings",
    "per_file",
    "events",
    "objective",
}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """A replayed tune on 2 simulated GPUs (winner, finalists, ablation, a confirmation, invalid trials)."""
    root = tmp_path_factory.mktemp("replayed")
    args = replay_args(root, "--budget", "20", "--workers", "2", "--json-summary", str(root / "summary.json"))
    proc = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COMPILEIQ_SIMULATE_GPUS": "2"},
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return root, proc.stdout


@pytest.mark.cmake
def test_summary_document(replayed):
    root, out = replayed
    doc = json.loads((root / "summary.json").read_text())
    assert set(doc) == KEYS and doc["schema"] == "compileiq-summary/1"
    assert (
        doc["target"] == "sample_small" and doc["arch"] == "90" and doc["replay"] is True and doc["gpus"] == ["0", "1"]
    )
    assert len(doc["trials"]) == 20 and [t["index"] for t in doc["trials"]] == list(range(20))
    w = doc["winner"]
    assert w["flags"] and w["ci"][0] <= w["speedup"] <= w["ci"][1] and w["workloads"][0]["p_value"] < 0.05
    assert f"{w['speedup']:.3f}x" in out  # the same winner the console printed
    assert doc["finalists"] and any(f["accepted"] for f in doc["finalists"])
    assert doc["confirmations"] and doc["confirmations"][0]["accepted"]  # the winner on GPU 1
    assert {c["kept"] for c in doc["ablation"]} and doc["flag_effects"]
    valid = [t for t in doc["trials"] if t["status"] == "ok"]
    invalid = [t for t in doc["trials"] if t["status"] != "ok"]
    assert invalid and all(t["speedup"] is None and t["reason"] for t in invalid)
    assert all(t["speedup"] > 0 and t["medians"] for t in valid)
    assert all(t["ci"][0] <= t["ci"][1] for t in valid if t["ci"] and t["same_code_as"] is None)
    assert doc["timings"]["wall_seconds"] >= doc["timings"]["search_seconds"] > 0
    assert doc["toml"] == str(root / "compileiq.toml")
    assert doc["per_file"] is None and doc["settings"]["per_file_budget"] == 0  # a replay has no kernel times
    # the same document from the store, without the tune
    proc = run_cli("report", "-B", str(root / "build"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == doc


@pytest.mark.unit
def test_final_table_says_which_statistic_each_column_is(replayed):
    _, out = replayed
    assert "median wall time (s) per workload" in out
    assert (
        "speedup: geometric mean over the workloads of the project's own build's median divided by the trial's" in out
    )


@pytest.mark.cmake
def test_tune_writes_the_report_and_report_writes_it_again(replayed, tmp_path):
    root, out = replayed
    html = root / "build" / "compileiq" / "report.html"
    assert f"compileiq: report: {html}" in out and html.is_file()
    again = tmp_path / "again.html"
    proc = run_cli("report", "-B", str(root / "build"), "-o", str(again))
    assert proc.returncode == 0 and f"report: {again}" in proc.stdout, proc.stderr
    text = again.read_text()
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text  # nothing fetched
    assert "<script" not in text
    assert text.count('src="data:image/png;base64,') >= 4  # convergence, workloads, ablation, effects


@pytest.mark.unit
def test_report_says_each_file_it_wrote_as_an_event_and_json_is_the_stored_summary(replayed, tmp_path):
    """`report` prints nothing itself: each file written is a stage result (its path as data), which the
    command line's console prints as "compileiq: report: <path>"; --json is the summary the tune wrote."""
    from compileiq_cmake.model.events import recording
    from compileiq_cmake.results.report import report_command, summaries_json

    root, _ = replayed
    events, recorder = recording()
    out = tmp_path / "r.html"
    assert report_command(root / "build", out, events) == [out] and out.is_file()
    (said,) = recorder.events
    assert said.kind == "stage" and said.stage == "report" and said.data == {"path": str(out), "target": "sample_small"}
    assert said.line() == f"compileiq: report: {out}"
    assert json.loads(summaries_json(root / "build")) == json.loads((root / "summary.json").read_text())


@pytest.mark.cmake
def test_report_of_a_tree_without_tunes_is_one_line(tmp_path):
    proc = run_cli("report", "-B", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "holds no tune results" in proc.stderr


def _browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.browser
def test_report_renders_in_headless_chromium(replayed, tmp_path):
    """The page loads in a real browser: every plot decoded (naturalWidth > 0 is what the DOM dump cannot
    show, so the screenshot must have drawn pixels), every table row present."""
    browser = _browser()
    if browser is None:
        if os.environ.get("COMPILEIQ_REQUIRE_BROWSER"):
            pytest.fail("COMPILEIQ_REQUIRE_BROWSER is set but no chromium is installed (apt-get install chromium)")
        pytest.skip("no chromium here (CI installs it: apt-get install chromium)")
    root, _ = replayed
    html = root / "build" / "compileiq" / "report.html"
    doc = json.loads((root / "summary.json").read_text())
    common = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run([*common, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    assert page.count('<tr class="trial">') == len(doc["trials"])
    for plot in ("plot-convergence", "plot-workloads", "plot-ablation", "plot-effects"):
        assert f'id="{plot}"' in page, plot
    for table in ("context", "finalists", "ablation", "effects", "resources", "invalid", "trials"):
        assert f'id="{table}"' in page, table
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1200,1600", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    import matplotlib.image as mpimg  # a well-kept PNG reader (matplotlib is a dependency)

    pixels = mpimg.imread(shot)
    assert pixels.std() > 0.05, "the screenshot is blank"
    # the convergence plot's blue line and orange points drew colour (not only black text on white)
    rgb = pixels[..., :3]
    coloured = ((rgb.max(axis=-1) - rgb.min(axis=-1)) > 0.3).mean()
    assert coloured > 0.002, coloured


@pytest.mark.unit
def test_trials_json_into_a_closed_pipe_is_quiet(replayed):
    root, _ = replayed
    proc = subprocess.run(
        f"{sys.executable} -m compileiq_cmake trials -B {root / 'build'} --json | head -c 100",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


GATE = Path(__file__).resolve().parent / "projects" / "check_gate"


def _gate_toml(path: Path, build: Path, sources_sha256: str = "") -> None:
    from compileiq_cmake.results.toml_io import write_entry

    from test_cmake_modules import _gcc_version_major_minor, _host_entry

    entry = _host_entry(
        _gcc_version_major_minor(build),
        target="gate_bench",
        flags=("-O2",),
        build_type="Release",
        metric="time_ms=([0-9.]+)",
        workloads=("--n 3000000",),
        sources_sha256=sources_sha256,
        baseline=(100.0,),
        tuned=(30.0,),
        speedup=3.3,
    )
    write_entry(path, entry)


@pytest.mark.cmake
def test_check_gate_passes_a_fresh_entry_and_fails_one_the_source_made_useless(tmp_path):
    """check --remeasure: 0 while the tuned flags still pay, 1 after a source edit that made them useless;
    applies/stale per entry; --json for machines; bad input exit 2."""
    from conftest import configure

    src = tmp_path / "gate"
    shutil.copytree(GATE, src)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    toml = src / "compileiq.toml"
    _gate_toml(toml, build, sources_sha256="0" * 64)
    gate = ("check", "-S", str(src), "-B", str(build))
    proc = run_cli(*gate)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gate_bench: applies: 1 tuned flag for CXX" in proc.stdout and "stale: its sources changed" in proc.stdout
    # 15 rounds: beside other test processes on 2 cores 5 rounds of a 1.9x gain once gave [0.715..5.181]
    proc = run_cli(*gate, "--remeasure", "--bench", "gate_bench", "--pass-regex", "PASS", "--rounds", "15", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["passed"], proc.stdout + proc.stderr
    r = doc["entries"][0]["remeasure"]
    # about 1.9x here (-O2 against -O0); asserted as the tool's own verdict, which load does not move past a bound
    assert r["passed"] and r["ci"][0] > 1 + r["min_gain"] and r["ci"][0] <= r["speedup"] <= r["ci"][1], r
    # the next revision: the loop's work is gone (a sleep dominates), so -O2 buys nothing any more
    main = src / "src" / "main.cpp"
    main.write_text(
        main.read_text().replace(
            "    for (long i = 0; i < n; ++i) s += (i % 7) * 0.5 + rep;  // REVISION: work",
            "    s += rep;\n  { volatile long k = 0; while (std::chrono::steady_clock::now() - t0 < "
            "std::chrono::milliseconds(60)) ++k; }",
        )
    )
    # 15 rounds: with 5 a load beside it once made the useless -O2 1.0450x [1.0052..1.0863] (above its 0.46% gain)
    proc = run_cli(*gate, "--remeasure", "--bench", "gate_bench", "--pass-regex", "PASS", "--rounds", "15")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "FAIL: not significantly faster than the plain build" in proc.stdout
        or "FAIL: significantly slower" in proc.stdout
    )
    # the entry records no benchmark (a file of an older version) and no --bench is given: one line, exit 2
    proc = run_cli(*gate, "--remeasure", "--run-recorded")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "--remeasure needs the benchmark command of the entry for gate_bench" in proc.stderr
    # an entry for another build type does not apply, and says why
    _gate_toml(toml, build)
    text = toml.read_text().replace('build_type = "Release"', 'build_type = "Debug"')
    toml.write_text(text)
    proc = run_cli(*gate)
    assert (
        proc.returncode == 0
        and "does not apply: tuned for the Debug build type; this is a Release build" in proc.stdout
    ), proc.stdout
    # bad input: one line, exit 2
    for args, message in (
        (("check", "-S", str(src), "-B", str(tmp_path / "nowhere")), "is not a configured build tree"),
        (("check", str(tmp_path / "none.toml"), "-S", str(src), "-B", str(build)), "does not exist"),
    ):
        proc = run_cli(*args)
        assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1, (args, proc.stderr)


@pytest.mark.cmake
def test_check_gate_on_the_host_example(tmp_path):
    """The host example with the flags a tune finds for it here (-march=native -ffast-math, about 11x in the
    demo): check --remeasure passes; a later revision of main.cpp that pins its optimization level
    (#pragma GCC optimize("O0")) makes those flags useless, and the gate exits 1."""
    from compileiq_cmake.results.toml_io import write_entry

    from conftest import configure
    from test_cmake_modules import _gcc_version_major_minor, _host_entry

    src = tmp_path / "host_cpp"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "host_cpp", src)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    write_entry(
        src / "compileiq.toml",
        _host_entry(
            _gcc_version_major_minor(build),
            flags=("-march=native", "-ffast-math"),
            build_type="Release",
            metric="time_ms=([0-9.eE+-]+)",
            workloads=("--n 768",),
            baseline=(3.2,),
            tuned=(0.3,),
            speedup=10.0,
            sources_sha256="",
        ),
    )
    # a 50% floor: the O0 revision leaves the flags a residue that depends on the CPU (seen 1.0137x here and
    # 1.096x on CI's machine: -ffast-math still inlines sqrtf at -O0), which a smaller floor counts as a pass;
    # the tuned flags are worth ~10x where they work
    gate = (
        "check",
        "-S",
        str(src),
        "-B",
        str(build),
        "--remeasure",
        "--bench",
        "host_kernels",
        "--pass-regex",
        "PASS",
        "--rounds",
        "5",
        "--min-gain",
        "0.5",
        "--json",
    )
    proc = run_cli(*gate)
    doc = json.loads(proc.stdout)
    r = doc["entries"][0]["remeasure"]  # passed: its interval above 1 + its minimum gain (no fixed speed bound)
    assert proc.returncode == 0 and doc["passed"] and r["ci"][0] > 1 + r["min_gain"], proc.stdout + proc.stderr
    main = src / "src" / "main.cpp"
    main.write_text(
        '#pragma GCC optimize("O0")  // the next revision: this file is built unoptimized\n' + main.read_text()
    )
    proc = run_cli(*gate)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and not doc["passed"], proc.stdout + proc.stderr
    assert not doc["entries"][0]["remeasure"]["passed"]


@pytest.mark.unit
def test_one_rule_says_whether_a_tune_was_on_gpus_for_the_console_and_the_report(replayed):
    """summary.gpu_tune: a CUDA target, GPUs given (simulated too) or a trial that ran on one; the console's
    table (the replayed tune on 2 simulated GPUs speaks of them) and the report (_on_gpu) ask it alike."""
    from compileiq_cmake.results.report_plots import _on_gpu
    from compileiq_cmake.results.summary import gpu_tune

    assert gpu_tune("CUDA", [], []) and gpu_tune("CXX", ["0"], []) and gpu_tune("CXX", [], [None, "1"])
    assert not gpu_tune("CXX", [], [None, None])
    root, out = replayed
    doc = json.loads((root / "summary.json").read_text())
    assert _on_gpu(doc) and "(on the GPU the trial ran on)" in out
    host = {**doc, "language": "CXX", "gpus": [], "trials": [{**t, "gpu": None} for t in doc["trials"]]}
    assert not _on_gpu(host) and _on_gpu({**host, "trials": [{**host["trials"][0], "gpu": "1"}]})


@pytest.mark.unit
def test_the_report_shows_where_the_kernel_time_goes(replayed, tmp_path):
    """A tune with a per-file stage: its plan (kernel time by file, the files tuned separately) in the report."""
    from compileiq_cmake.results.report import render

    root, _ = replayed
    doc = json.loads((root / "summary.json").read_text())
    doc["per_file"] = {
        "start": ["--use_fast_math"],
        "unmapped_share": 0.02,
        "proposals": 8,
        "files": [
            {"path": "src/stream.cu", "share": 0.43, "kernels": ["a", "b"], "tuned": True},
            {"path": "src/reduce.cu", "share": 0.08, "kernels": ["c"], "tuned": False},
        ],
    }
    html = render(doc)
    assert 'id="per-file"' in html and 'src/stream.cu</code></td><td class="num">43.0%' in html
    assert "tuned separately" in html and "2.0% in kernels of no file of the target" in html
    assert 'id="per-file"' not in render({**doc, "per_file": None})


@pytest.mark.cmake
def test_two_tunes_of_one_target_get_a_report_each_and_o_names_the_single_one(replayed, tmp_path):
    """Two tunes of sample_small for sm_90 in one build tree (two tune records): `report -o my.html` writes
    one file per tune, named as the output says, none overwriting the other; with one tune, -o is the file."""
    root, _ = replayed
    build = tmp_path / "build"
    shutil.copytree(root / "build", build)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "compileiq_cmake",
            "tune",
            "-S",
            str(root / "src"),
            "-B",
            str(build),
            "--target",
            "sample_small",
            "--replay",
            str(SAMPLE),
            "--budget",
            "8",
            "--workers",
            "2",
            "--repeats",
            "4",
            "--output",
            str(tmp_path / "second.toml"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    docs = json.loads(run_cli("report", "-B", str(build), "--json").stdout)
    assert len(docs) == 2 and {d["target"] for d in docs} == {"sample_small"} and {d["arch"] for d in docs} == {"90"}
    mine = tmp_path / "out" / "my.html"
    proc = run_cli("report", "-B", str(build), "-o", str(mine))
    assert proc.returncode == 0, proc.stderr
    assert (
        "2 tunes stored" in proc.stdout
        and "one report per tune, named <name>-<target>-<sm_ARCH or compiler>" in proc.stdout
    )
    written = [
        Path(line.split("report: ", 1)[1])
        for line in proc.stdout.splitlines()
        if line.startswith("compileiq: report: /")
    ]
    assert len(written) == 2 and len(set(written)) == 2, proc.stdout
    assert all(p.parent == mine.parent and p.name.startswith("my-sample_small-sm_90-") and p.is_file() for p in written)
    assert sorted(p.name for p in mine.parent.iterdir()) == sorted(
        p.name for p in written
    )  # nothing else, nothing lost
    texts = [p.read_text() for p in written]
    assert sorted(("3..9 runs per workload" in x, "4..9 runs per workload" in x) for x in texts) == [
        (False, True),
        (True, False),
    ]  # each its own tune
    # the same command again names the same files (no numbering drift), and a tree of one tune writes -o itself
    again = run_cli("report", "-B", str(build), "-o", str(mine))
    assert [
        Path(line.split("report: ", 1)[1])
        for line in again.stdout.splitlines()
        if line.startswith("compileiq: report: /")
    ] == written
    single = tmp_path / "single.html"
    proc = run_cli("report", "-B", str(root / "build"), "-o", str(single))
    assert proc.returncode == 0 and proc.stdout.strip() == f"compileiq: report: {single}" and single.is_file(), (
        proc.stdout
    )


@pytest.mark.unit
def test_report_names_tell_apart_tunes_that_share_everything():
    """Tunes that agree on target, architecture, build type, compiler and even the second they finished
    still get a file each (numbered in date order); the extras appear only where names would collide."""
    from compileiq_cmake.results.report import report_paths

    def doc(target, arch, compiler="NVIDIA 13.0.48", build_type="Release", date="2026-12-01T07:00:00+00:00"):
        return {"target": target, "arch": arch, "compiler": compiler, "build_type": build_type, "date": date}

    out = Path("/r/report.html")
    assert report_paths([doc("a", "90")], out) == [out]
    names = [
        p.name
        for p in report_paths(
            [
                doc("a", "90"),
                doc("a", "90"),
                doc("a", "80"),
                doc("b", None, "GNU 12.2.0"),
                doc("a", "90", build_type="Debug"),
            ],
            out,
        )
    ]
    assert names == [
        "report-a-sm_90-Release.html",
        "report-a-sm_90-Release-2.html",
        "report-a-sm_80.html",
        "report-b-GNU.html",
        "report-a-sm_90-Debug.html",
    ]
    names = [p.name for p in report_paths([doc("a", "90"), doc("a", "90", date="2026-12-01T08:00:00+00:00")], out)]
    assert names == ["report-a-sm_90-2026-12-01T070000Z.html", "report-a-sm_90-2026-12-01T080000Z.html"]


@pytest.mark.unit
def test_a_contribution_with_an_open_interval_does_not_break_the_report(replayed, tmp_path):
    """An ablation step the time box cut after one round has the interval (0, inf), null in the JSON: the
    report leaves it out of the plot instead of failing (a 120 s tune on the H200 ended in a traceback)."""
    from compileiq_cmake.results.report import write_report

    root, _ = replayed
    doc = json.loads((root / "summary.json").read_text())
    doc["ablation"] = list(doc["ablation"]) + [
        {
            "dimension": "use_fast_math",
            "flags": ["--use_fast_math"],
            "speedup": 2.7,
            "ci": [0.0, None],
            "kept": True,
            "reason": "not decided within the time limit; kept",
        }
    ]
    out = tmp_path / "r.html"
    assert write_report(out, doc) == "" and out.is_file()


@pytest.mark.unit
def test_the_report_shows_the_priors_predictions_next_to_what_the_tune_measured(replayed):
    """Issue 23: predicted (effect +/- sd, p(invalid)) vs measured per value; a replay used no prior and says so."""
    from compileiq_cmake.results.report import render

    root, _ = replayed
    doc = json.loads((root / "summary.json").read_text())
    assert doc["prior"] is None and 'id="empty-prior"' in render(doc)
    doc["prior"] = {
        "source": "prior (33 observations of nvcc flags)",
        "first": [["--use_fast_math"]],
        "values": [
            {
                "dimension": "use_fast_math",
                "value": "--use_fast_math",
                "known": True,
                "predicted": 0.3,
                "sd": 0.05,
                "p_invalid": 0.1,
                "measured": 0.25,
                "measured_invalid": False,
            },
            {
                "dimension": "fmad",
                "value": "--fmad=false",
                "known": True,
                "predicted": -0.05,
                "sd": 0.02,
                "p_invalid": 0.0,
                "measured": None,
                "measured_invalid": True,
            },
            {
                "dimension": "restrict",
                "value": "--restrict",
                "known": False,
                "predicted": 0.0,
                "sd": 0.05,
                "p_invalid": 0.1,
                "measured": None,
                "measured_invalid": False,
            },
        ],
    }
    html = render(doc)
    assert 'id="prior"' in html and "prior (33 observations of nvcc flags)" in html
    assert "+30.0% &plusmn; 5.0%" in html and "+25.0%" in html and ">invalid<" in html
    assert "no data" in html and "not measured" in html


@pytest.mark.browser
def test_the_suite_report_renders_in_headless_chromium(tmp_path, monkeypatch):
    """A replayed suite of two targets in flight on two simulated GPUs: its report loads in a real browser with
    one row per target, the GPUs' busy and idle table, the verdict with the geometric mean, and draws."""
    browser = _browser()
    if browser is None:
        if os.environ.get("COMPILEIQ_REQUIRE_BROWSER"):
            pytest.fail("COMPILEIQ_REQUIRE_BROWSER is set but no chromium is installed (apt-get install chromium)")
        pytest.skip("no chromium here (CI installs it: apt-get install chromium)")
    landscapes = Path(__file__).resolve().parents[1] / "benchmarks" / "landscapes"
    (tmp_path / "src").mkdir()
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[suite]\nsource_dir = "src"\nbuild_dir = "build"\njson_summary = "suite.json"\n'
        + "".join(
            f'\n[[target]]\nname = "{n}"\nreplay = "{landscapes / f}"\nbudget = 5\n'
            for n, f in (("bs", "blackscholes.json"), ("small", "sample_small.json"))
        )
    )
    monkeypatch.setenv("COMPILEIQ_SIMULATE_GPUS", "2")
    proc = run_cli("tune", "--suite", str(suite), "--seed", "1", "--suite-jobs", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    html = tmp_path / "build" / "compileiq" / "suite-report.html"
    common = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run([*common, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    assert 'id="verdict"' in page and 'id="targets"' in page and 'id="devices"' in page
    assert "<code>bs</code>" in page and "<code>small</code>" in page and "gpu:0" in page and "gpu:1" in page
    assert "2 targets at a time" in page
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1100,900", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    import matplotlib.image as mpimg

    assert mpimg.imread(shot).std() > 0.02, "the screenshot is blank"
