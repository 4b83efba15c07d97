"""Replay tests of the default search (no GPU, no compiler): the committed synthetic landscape
benchmarks/landscapes/sample_small.json answers every build and run, with its recorded noise."""

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from compileiq_cmake.results.toml_io import read_entries
from compileiq_cmake.search.landscape import Landscape
from compileiq_cmake.search.search import INVALID_LOSS, FlagSearch

from conftest import replay_args

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "benchmarks" / "landscapes" / "sample_small.json"
BUDGET = 25  # unique builds, the baseline included (as --budget counts)
SEEDS = range(20)


def _replay(land: Landscape, seed: int, budget: int = BUDGET):
    """The tune loop in miniature: baseline first, noisy measurement per device code (shared by points of the
    same code), invalid points get INVALID_LOSS. Returns the built points and the search's pick."""
    space = land.space()
    rng = random.Random(seed)
    measured: dict[str, float] = {}

    def measure(p):
        if p.digest not in measured:
            measured[p.digest] = p.code.median_us * math.exp(rng.gauss(0.0, land.noise))
        return measured[p.digest]

    base_time = measure(land.default)
    search = FlagSearch(space, budget, seed, 1)
    search.tell(space.baseline(), 0.0)
    built = {space.baseline().key: (land.default, 0.0)}
    while len(built) < budget:
        fs = search.ask()
        if fs is None:
            break
        assert fs.key not in built, f"{fs.flags} proposed twice"
        p = land.lookup(fs.flags)
        loss = math.log(measure(p) / base_time) if p is not None and p.valid else INVALID_LOSS
        search.tell(fs, loss)
        built[fs.key] = (p, loss)
    pick = min(built.values(), key=lambda pl: pl[1])[0]  # best measured, as the tune ranks its finalists
    return built, pick


@pytest.mark.unit
def test_default_search_reaches_the_known_best_within_its_budget_for_most_seeds():
    land = Landscape.load(SAMPLE)
    target = 0.99 * land.best_valid().speedup
    reached = 0
    for seed in SEEDS:
        built, _ = _replay(land, seed)
        assert len(built) == BUDGET
        reached += any(p is not None and p.valid and p.speedup >= target for p, _ in built.values())
    assert reached >= 18, f"reached 99% of the best in only {reached} of {len(SEEDS)} seeds"


@pytest.mark.unit
def test_invalid_points_are_never_the_pick_and_are_built():
    land = Landscape.load(SAMPLE)
    saw_invalid = 0
    for seed in range(8):
        built, pick = _replay(land, seed, budget=60)
        saw_invalid += sum(1 for p, _ in built.values() if p is None or not p.valid)
        assert pick is not None and pick.valid
        assert pick.speedup > 1.0
    assert saw_invalid, "the landscape has invalid points; a 60-build search should meet some"


@pytest.mark.unit
def test_same_seed_same_path_on_a_landscape():
    land = Landscape.load(SAMPLE)
    a, _ = _replay(land, 3)
    b, _ = _replay(land, 3)
    assert list(a) == list(b)


@pytest.mark.cmake
def test_replay_tune_cli_labels_and_writes_a_replay_entry(tmp_path):
    out = tmp_path / "compileiq.toml"
    proc = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *replay_args(tmp_path, "--budget", "25")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = proc.stdout + proc.stderr
    assert "REPLAY" in text
    entries = read_entries(out)
    assert len(entries) == 1 and entries[0].replay is True
    land = Landscape.load(SAMPLE)
    point = land.lookup(entries[0].flags)
    assert point is not None and point.valid
    assert point.speedup >= 0.99 * land.best_valid().speedup - 0.02  # validated winner near the known best


@pytest.mark.cmake
def test_a_rerun_restores_validation_and_ablation_instead_of_measuring_again(tmp_path):
    """Hardening (issue 10): validation and ablation outcomes are kept in the trial store, so a rerun (after
    a kill at the write, say) does not repeat them; it reaches the same winner."""
    out = tmp_path / "compileiq.toml"
    args = [sys.executable, "-m", "compileiq_cmake", *replay_args(tmp_path, "--budget", "25")]
    first = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert "restored from the trial store" not in first.stdout and "interleaved rounds" in first.stdout
    flags = read_entries(out)[0].flags
    out.unlink()
    second = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    assert "resuming: 25 finished trials restored" in second.stdout
    assert "validation of" in second.stdout and "restored from the trial store" in second.stdout, second.stdout[-3000:]
    assert "interleaved rounds" not in second.stdout, "nothing is measured again"
    assert read_entries(out)[0].flags == flags


@pytest.mark.unit
def test_a_tune_that_measured_no_flag_set_says_so_and_what_time_it_needs(tmp_path):
    """A time limit that ends the search after the baseline: the tune says that no flag set was measured and
    the --time-limit one trial and its validation would need (the plan's estimate), never that no flag set beat
    the project's own build."""
    proc = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *replay_args(tmp_path, "--budget", "8", "--time-limit", "0.001")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr  # nothing measured: no success (issue 51)
    assert "nothing was measured" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "no flag set beat" not in proc.stdout, proc.stdout
    line = next(ln for ln in proc.stdout.splitlines() if "no flag set was measured" in ln)
    assert "within --time-limit 0.001 s" in line and "give at least --time-limit " in line, line
    assert int(line.rsplit("--time-limit ", 1)[1].split()[0]) >= 1, line
    assert not (tmp_path / "compileiq.toml").exists()
