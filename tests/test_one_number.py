"""Issue 22, one number per claim: the headline, the TOML, `show`, the JSON summary and the HTML report
quote the same validated estimate for the written flag set, and the report labels where it comes from
(the finalists' validation or the minimal set's own) and says why the other rows differ."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import replay_args

pytestmark = pytest.mark.unit


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COMPILEIQ_SIMULATE_GPUS": "1"},
    )


@pytest.mark.parametrize("seed,source", [("1", "finalists"), ("3", "minimal set")])
def test_every_place_quotes_the_written_sets_validated_number(tmp_path, seed, source):
    """Seed 1 writes a finalist as it was validated; seed 3's ablation drops a flag and writes the minimal set."""
    toml, summary = tmp_path / "compileiq.toml", tmp_path / "summary.json"
    tune = _cli(tmp_path, *replay_args(tmp_path, "--budget", "10", "--json-summary", str(summary), "--seed", seed))
    assert tune.returncode == 0, (tune.stdout + tune.stderr)[-3000:]
    doc = json.loads(summary.read_text())
    winner = doc["winner"]
    assert winner is not None and winner["source"] == source, tune.stdout[-3000:]
    number = winner["speedup"]
    (entry,) = tomllib.loads(toml.read_text())["entry"]
    assert entry["speedup"] == round(number, 4) and entry["flags"] == winner["flags"]
    headline = re.search(
        r"^compileiq: winner \(re-measured interleaved against the baseline\): ([0-9.]+)x", tune.stdout, re.M
    )
    assert headline and headline.group(1) == f"{number:.3f}", tune.stdout[-2000:]
    show = _cli(tmp_path, "show", str(toml))
    assert show.returncode == 0 and f"speedup:  {entry['speedup']:.3f}x" in show.stdout, show.stdout
    stage = next(e for e in doc["events"] if e["kind"] == "stage" and e["stage"] == "finalists")
    assert stage["data"]["speedup"] == number  # the stage result carries the same number
    html = (tmp_path / "build" / "compileiq" / "report.html").read_text()
    assert f"<b>{number:.3f}x</b>" in html
    label = re.search(r'<span id="winner-source">([^<]+)</span>', html)
    assert label and ("minimal set" in label.group(1)) == (winner["source"] == "minimal set")
    assert "Each row is that flag set's own validation" in html and "are not claims" in html
    # issue 36: the written numbers are the winner's confirmation (rounds that decided nothing), a row of its own
    assert winner["numbers"] == "confirmation" and "a confirmation:" in label.group(1)
    assert entry["speedup_from"] == "confirmation"
    assert "(written: the confirmation" in html and "used for nothing else" in html
    rows = [v for v in doc["finalists"] if v["flags"] == winner["flags"]]
    if winner["source"] == "finalists":  # the set is a finalist's; its deciding row is another measurement
        assert rows and rows[0]["speedup"] != number
    else:
        assert "(written: the confirmation of the minimal set)" in html


def test_plot_labels_are_flags_shortened_and_empty_sections_say_why():
    from compileiq_cmake.results.report import empty_sections
    from compileiq_cmake.results.report_plots import short_label

    assert short_label([]) == "(project's own flags)" and short_label(["--use_fast_math"]) == "--use_fast_math"
    long = short_label(["-Xptxas=-O1", "-Xptxas=--register-usage-level=8", "-maxrregcount=64", "--use_fast_math"])
    assert len(long) <= 38 and long.startswith("-Xptxas=-O1") and long.endswith("fast_math") and "..." in long
    doc = {
        "trials": [{"speedup": 1.0, "flags": []}, {"speedup": None, "flags": ["-a"]}],
        "flag_effects": [],
        "winner": None,
        "ablation": [],
        "finalists": [],
    }
    why = empty_sections(doc)
    assert "need more valid trials" in why["effects"] and "the tune had 1" in why["effects"]
    assert "no winner to ablate" in why["ablation"] and "nothing was validated" in why["workloads"]
