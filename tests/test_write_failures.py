"""Issue 19, results never lost at the write: a real tune (replayed from the committed sample landscape, run
through cli.main) whose compileiq.toml is damaged, given a wrong-typed entry, locked by another process or
shadowed by a `.lock` directory while it runs, and a writability probe that a concurrent writer cleans up
as a stray. Every failure at the write keeps the entry in a fallback file and says where in one line."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import threading
import time
import tomllib
from pathlib import Path

import pytest
import tomli_w

from compileiq_cmake.results import toml_io
from compileiq_cmake.results.toml_io import read_entries, write_entry
from compileiq_cmake.tune import finalists as finalists_stage
from compileiq_cmake.ui import cli

from conftest import one_line_error, replay_args
from test_result_file import make_entry


@pytest.fixture
def replay(tmp_path):
    out = tmp_path / "compileiq.toml"
    build = tmp_path / "build"
    return out, build, replay_args(tmp_path, "--budget", "8")


def _during_tune(monkeypatch, action):
    """Run `action` after the search and validation, right before the tune writes its entry."""
    real = finalists_stage.validate_and_ablate

    def wrapped(*args, **kwargs):
        result = real(*args, **kwargs)
        action()
        return result

    monkeypatch.setattr(finalists_stage, "validate_and_ablate", wrapped)


def _one_line(capsys, rc, *needles) -> str:
    captured = capsys.readouterr()
    return one_line_error(rc, captured.out, captured.err, *needles)


def _saved(line: str, build: Path) -> Path:
    """The fallback file the error line names: it holds the tune's entry."""
    fallback = next(build.glob("compileiq/compileiq-sample_small-*.toml"))
    assert f"was saved to {fallback}" in line, line
    (entry,) = [e for e in read_entries(fallback) if e.target == "sample_small"]
    assert entry.replay and entry.flags
    return fallback


@pytest.mark.unit
def test_a_toml_overwritten_with_garbage_during_the_tune_keeps_the_entry_in_the_fallback(replay, monkeypatch, capsys):
    out, build, args = replay
    write_entry(out, make_entry(target="other"))
    _during_tune(monkeypatch, lambda: out.write_text("garbage \x00 [[[ not toml"))
    line = _one_line(capsys, cli.main(args), f"could not add the entry to {out}", "is not valid TOML")
    _saved(line, build)
    assert out.read_text() == "garbage \x00 [[[ not toml", "the user's file is not replaced without asking"


@pytest.mark.unit
def test_another_entry_of_a_wrong_type_written_during_the_tune_keeps_the_entry(replay, monkeypatch, capsys):
    out, build, args = replay
    write_entry(out, make_entry(target="other"))

    def wrong_type():
        data = tomllib.loads(out.read_text())
        data["entry"][0]["speedup"] = "fast"
        out.write_text(tomli_w.dumps(data))

    _during_tune(monkeypatch, wrong_type)
    line = _one_line(capsys, cli.main(args), "speedup must be a finite number above 0, not 'fast'")
    assert "Unknown format code" not in line
    _saved(line, build)


def _hold_lock(path: Path, seconds: float, started: threading.Event) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    started.set()
    time.sleep(seconds)
    os.close(fd)


@pytest.mark.unit
def test_a_held_lock_is_waited_for_with_a_message_and_the_tune_then_writes(replay, monkeypatch, capsys):
    out, build, args = replay
    started = threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(Path(f"{out}.lock"), 3.0, started))
    _during_tune(monkeypatch, lambda: (holder.start(), started.wait(10)))
    assert cli.main(args) == 0
    holder.join()
    assert f"waiting for another process's lock on {out}.lock (at most 120 s)" in capsys.readouterr().out
    assert read_entries(out)[0].target == "sample_small"


@pytest.mark.unit
def test_a_lock_held_past_the_deadline_ends_in_one_line_and_the_fallback(replay, monkeypatch, capsys):
    out, build, args = replay
    monkeypatch.setattr(toml_io, "LOCK_WAIT_SECONDS", 2.0)
    started = threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(Path(f"{out}.lock"), 8.0, started))
    _during_tune(monkeypatch, lambda: (holder.start(), started.wait(10)))
    rc = cli.main(args)
    captured = capsys.readouterr()
    holder.join()
    assert f"waiting for another process's lock on {out}.lock (at most 2 s)" in captured.out
    assert rc == 2
    (line,) = captured.err.strip().splitlines()
    assert f"{out}.lock stayed locked by another process for 2 s" in line
    _saved(line, build)
    # the only entry the TOML may hold is the one banked during the search (written before the lock was taken)
    assert not out.exists() or all(any("banked during the search" in u for u in e.untested) for e in read_entries(out))


@pytest.mark.unit
def test_a_lock_path_that_is_a_directory_is_named_as_the_lock(replay, monkeypatch, capsys):
    out, build, args = replay
    lock = Path(f"{out}.lock")
    lock.mkdir()
    line = _one_line(capsys, cli.main(args), f"the lock file {lock} is a directory")
    assert not build.exists(), "refused before the tune started"
    lock.rmdir()
    # the banked entry's write left the lock file: the directory replaces it
    _during_tune(monkeypatch, lambda: (lock.unlink(missing_ok=True), lock.mkdir()))
    line = _one_line(capsys, cli.main(args), f"the lock file {lock} is a directory")
    assert f"{out}: Is a directory" not in line
    _saved(line, build)


def _write_other(path: str) -> None:
    write_entry(Path(path), make_entry(target="other"))


@pytest.mark.unit
def test_a_concurrent_writer_does_not_break_a_starting_tune(replay, monkeypatch, capsys):
    """The probe file that checks the TOML's directory is writable is created while another process writes
    the same TOML (and removes what a killed writer left): the tune still starts, and both entries stay."""
    out, build, args = replay
    import tempfile

    real_mkstemp = tempfile.mkstemp
    probes = []

    def mkstemp(*a, **kw):
        fd, name = real_mkstemp(*a, **kw)
        if not probes:  # the first file made: the start's probe; another process writes the TOML meanwhile
            probes.append(name)
            writer = multiprocessing.get_context("fork").Process(target=_write_other, args=(str(out),))
            writer.start()
            writer.join(60)
            assert writer.exitcode == 0
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    rc = cli.main(args)
    err = capsys.readouterr().err
    assert rc == 0, err
    assert probes and Path(probes[0]).parent == out.parent
    assert {e.target for e in read_entries(out)} == {"other", "sample_small"}
    assert not list(out.parent.glob(".compileiq-*")), "no probe or temporary file left"


@pytest.mark.unit
def test_a_writer_removes_only_its_own_files_strays_not_another_files_temporary(tmp_path):
    """Writers of compileiq.toml and of compileiq.toml-x.toml in one directory hold different locks: the first
    removes a killed writer's stray of its own file only, never the other's file being written."""
    path = tmp_path / "compileiq.toml"
    other = tmp_path / ".compileiq-compileiq.toml-x.toml-abcd1234.toml"  # compileiq.toml-x.toml's, mid-write
    other.write_text("being written")
    stray = tmp_path / ".compileiq-compileiq.toml-k1ll3d00.toml"
    stray.write_text("half")
    write_entry(path, make_entry())
    assert other.exists() and not stray.exists()
