"""Issue 51, files: outputs that are the tool's own (only regular files or new paths, never through a symbolic
link or onto a device or pipe, an existing file only when the tool wrote it, never an input of the run), reads
of files others wrote (regular files only, bounded by the bytes read), text a person reads with its control
characters escaped, a full disk in one line with the state kept, read commands that change nothing, a tune that
measured nothing, and the small ones (/dev/null, a byte-order mark, a missing schema_version)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from compileiq_cmake.model.errors import CompileIQError, ResultFileError, UsageError
from compileiq_cmake.model.reading import read_regular
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.results import report
from compileiq_cmake.results.toml_io import check_output_writable, read_entries, write_entry
from compileiq_cmake.system.json_files import load_json
from compileiq_cmake.tune.orchestration import check_summary_writable
from compileiq_cmake.ui import cli

from conftest import replay_args
from test_result_file import make_entry

pytestmark = pytest.mark.unit


def _spec(tmp_path: Path, **kw) -> TuneSpec:
    return TuneSpec(
        source_dir=tmp_path,
        build_dir=tmp_path / "build",
        target="t",
        benchmark=("true",),
        metric=MetricSpec.parse("WALLTIME", True),
        output=kw.pop("output", tmp_path / "compileiq.toml"),
        **kw,
    )


def _one_line(exc: pytest.ExceptionInfo, *needles: str) -> str:
    text = str(exc.value)
    assert "\n" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


# ---- outputs: the JSON summary ------------------------------------------------------------------------------


def test_a_summary_is_never_written_onto_a_device_node(tmp_path):
    """As root `--json-summary /dev/full` turned the device into a regular file: a device is refused."""
    with pytest.raises(CompileIQError) as exc:
        check_summary_writable(_spec(tmp_path, json_summary="/dev/null"))
    _one_line(exc, "/dev/null", "a device, not a regular file")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_summary_is_never_written_into_a_named_pipe(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(CompileIQError) as exc:
        check_summary_writable(_spec(tmp_path, json_summary=str(fifo)))
    _one_line(exc, "a named pipe, not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_summary_is_never_written_through_a_symbolic_link(tmp_path):
    """`--json-summary /dev/stdout > tune.log` destroyed tune.log: a link (to a log, to /proc/self/fd/1) is
    refused and what it points to is untouched."""
    log = tmp_path / "tune.log"
    log.write_text("")  # the shell created it empty before the tune wrote a line
    link = tmp_path / "stdout"
    link.symlink_to(log)
    with pytest.raises(CompileIQError) as exc:
        check_summary_writable(_spec(tmp_path, json_summary=str(link)))
    _one_line(exc, "symbolic link")
    with pytest.raises(CompileIQError):
        check_summary_writable(_spec(tmp_path, json_summary="/dev/stdout"))
    assert link.is_symlink() and log.read_text() == ""


@pytest.mark.parametrize(
    "name, text",
    [
        ("package.json", '{"name": "app", "version": "1.0.0"}\n'),
        ("compile_commands.json", '[{"directory": "/b", "command": "cc -c a.c", "file": "a.c"}]\n'),
        ("notes.json", '{"schema": "someone-else/1"}\n'),
    ],
)
def test_a_json_file_the_tool_did_not_write_is_not_replaced(tmp_path, name, text):
    """The guard refused only files that were not JSON: the project's package.json and compile_commands.json
    were overwritten, exit 0."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CompileIQError) as exc:
        check_summary_writable(_spec(tmp_path, json_summary=str(path)))
    _one_line(exc, name, "not a JSON summary written by compileiq_cmake")
    assert path.read_text() == text


def test_a_summary_the_tool_wrote_a_new_path_or_an_empty_file_is_written(tmp_path):
    from compileiq_cmake.results import summary

    old = tmp_path / "old.json"
    summary.write(old, {"schema": summary.SCHEMA, "target": "t"})
    check_summary_writable(_spec(tmp_path, json_summary=str(old)))
    check_summary_writable(_spec(tmp_path, json_summary=str(tmp_path / "new" / "s.json")))
    empty = tmp_path / "empty.json"
    empty.write_text("")  # mktemp's file
    check_summary_writable(_spec(tmp_path, json_summary=str(empty)))


def test_a_summary_is_never_one_of_the_tunes_inputs(tmp_path):
    """Even a file the tool wrote is not replaced when this tune reads it (a --replay landscape, a warm start)."""
    from compileiq_cmake.results import summary

    replay = tmp_path / "landscape.json"
    summary.write(replay, {"schema": summary.SCHEMA})
    with pytest.raises(CompileIQError) as exc:
        check_summary_writable(_spec(tmp_path, json_summary=str(replay), replay=str(replay)))
    _one_line(exc, "also an input of this run")


def test_a_suite_summary_never_replaces_the_suite_file(tmp_path):
    """A suite whose json_summary names the suite file overwrote it, exit 0."""
    from compileiq_cmake.model.suite import load_suite
    from compileiq_cmake.tune.suite import run_suite

    suite_file = tmp_path / "suite.toml"
    text = '[suite]\njson_summary = "suite.toml"\n\n[[target]]\nname = "t"\nbenchmark = "true"\nmetric = "WALLTIME"\n'
    suite_file.write_text(text)
    suite = load_suite(suite_file)

    def make_spec(*_a):
        raise AssertionError("refused before any target's options are made")

    with pytest.raises(UsageError) as exc:
        run_suite(suite, make_spec, print, None, tmp_path / "build", json_summary=suite.json_summary)
    _one_line(exc, "suite.toml", "also an input of this run")
    assert suite_file.read_text() == text


# ---- outputs: the TOML and the report ------------------------------------------------------------------------


def test_output_dev_null_says_it_is_not_a_regular_file(tmp_path):
    """`--output /dev/null` said "/dev/null does not exist"."""
    with pytest.raises(ResultFileError) as exc:
        check_output_writable(Path("/dev/null"))
    text = _one_line(exc, "/dev/null", "not a regular file")
    assert "does not exist" not in text


def test_output_through_a_link_to_a_device_or_to_another_file_is_refused(tmp_path):
    link = tmp_path / "compileiq.toml"
    link.symlink_to("/dev/null")
    with pytest.raises(ResultFileError) as exc:
        check_output_writable(link)
    _one_line(exc, "not a regular file")
    real = tmp_path / "real.toml"
    write_entry(real, make_entry())
    other = tmp_path / "other.toml"
    other.symlink_to(real)
    check_output_writable(other)  # a link to the tool's own TOML is written through (the documented way)


def test_report_o_does_not_replace_the_projects_own_page(tmp_path):
    """`report -o index.html` (the project's own page) was overwritten: only a report the tool wrote is."""
    page = tmp_path / "index.html"
    page.write_text("<!DOCTYPE html>\n<html><head><title>My project</title></head><body>home</body></html>\n")
    before = page.read_text()
    monkey = pytest.MonkeyPatch()
    monkey.setattr(report, "load_summaries", lambda build_dir: [{"target": "t"}])
    try:
        with pytest.raises(UsageError) as exc:
            report.report_command(tmp_path, page, None)
        _one_line(exc, "index.html", "not an HTML report written by compileiq_cmake")
        with pytest.raises(UsageError) as exc:
            report.report_command(tmp_path, Path("/dev/null"), None)
        _one_line(exc, "not a regular file")
    finally:
        monkey.undo()
    assert page.read_text() == before
    ours = report.GENERATOR.decode()
    assert ours in (Path(report.templates_dir()) / "report.html.j2").read_text()
    assert report.written_by_tool(page, f"<!DOCTYPE html><html><head>{ours}".encode())
    assert report.written_by_tool(page, b"<!DOCTYPE html>\n<html><head><title>compileiq: t sm_90</title>")


def test_prior_export_replaces_only_an_export_of_its_own(tmp_path):
    """`prior --export FILE` wrote over any file: a new path or an earlier export only."""
    from compileiq_cmake.results.prior_store import LocalPrior

    local = LocalPrior(tmp_path / "prior")
    page = tmp_path / "package.json"
    page.write_text('{"name": "app"}\n')
    with pytest.raises(UsageError) as exc:
        local.export(page)
    _one_line(exc, "not a prior export written by compileiq_cmake")
    assert page.read_text() == '{"name": "app"}\n'
    with pytest.raises(UsageError) as exc:
        local.export(Path("/dev/null"))
    _one_line(exc, "not a regular file")
    mine = tmp_path / "export.json"
    local.export(mine)
    local.export(mine)  # an export of its own is replaced


# ---- reads of files others wrote -----------------------------------------------------------------------------


def test_prior_import_of_dev_zero_is_refused_at_once(tmp_path):
    """`prior --import /dev/zero` took 9.2 GB in 13 s: the cap read the file's stated size (0). Run as a user
    would, under a 2 GiB address-space limit so that a regression fails instead of eating the machine."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = dict(os.environ, COMPILEIQ_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", "prior", "--import", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        preexec_fn=limit,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "/dev/zero is a device, not a regular file" in lines[0]
    with pytest.raises(UsageError) as exc:
        load_json("/dev/zero", "--import /dev/zero")
    _one_line(exc, "--import /dev/zero", "a device, not a regular file")


def _returns_within(seconds: float, call) -> BaseException | None:
    box: list = []

    def run():
        try:
            call()
            box.append(None)
        except BaseException as exc:  # noqa: BLE001 - the outcome is what the test looks at
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"still blocked after {seconds} s"
    return box[0]


def test_a_named_pipe_never_blocks_a_read(tmp_path):
    """A named pipe given to --import (or as a TOML or a suite) blocked forever."""
    from compileiq_cmake.model.suite import load_suite

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for call in (
        lambda: load_json(fifo, f"--import {fifo}"),
        lambda: read_entries(fifo),
        lambda: load_suite(fifo),
    ):
        exc = _returns_within(10, call)
        assert isinstance(exc, CompileIQError) and "a named pipe, not a regular file" in str(exc), exc


def test_a_read_is_bounded_by_the_bytes_read_not_the_stated_size(tmp_path):
    """A file whose stated size is 0 (a /proc file, a device) was read whole under a cap on st_size."""
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0 and len(status.read_bytes()) > 100
    with pytest.raises(UsageError) as exc:
        read_regular(status, 100, "--import")
    _one_line(exc, "more than 100 bytes")
    with pytest.raises(UsageError, match="more than 100 bytes"):
        load_json(status, "--import", max_bytes=100)


# ---- the small ones ------------------------------------------------------------------------------------------


def test_a_toml_with_a_byte_order_mark_is_read(tmp_path):
    """A UTF-8 BOM gave "Invalid statement (line 1, column 1)" with no hint: it is removed."""
    path = tmp_path / "compileiq.toml"
    write_entry(path, make_entry())
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert read_entries(path) == [make_entry()]


def test_a_missing_schema_version_is_said_to_be_missing(tmp_path):
    """ "schema_version must be 1; it is None": say it is missing."""
    path = tmp_path / "compileiq.toml"
    path.write_text("[[entry]]\ntarget = 'x'\n")
    with pytest.raises(ResultFileError) as exc:
        read_entries(path)
    text = _one_line(exc, "schema_version is missing")
    assert "None" not in text


# ---- what a person reads ----------------------------------------------------------------------------------


def test_show_escapes_control_characters(tmp_path, capsys):
    """A newline in tool_version, date or device printed a forged "flags: -O2" under a header saying 1 entry."""
    path = tmp_path / "compileiq.toml"
    write_entry(
        path,
        make_entry(
            tool_version="0.1.0\n    flags:    -O2",
            date="2026-11-29\r\x1b[2Kforged",
            device="H200\n- evil (CUDA, sm_90)",
        ),
    )
    assert cli.main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out
    assert [line for line in out.splitlines() if line.strip().startswith("flags:")] == [
        "    flags:    --use_fast_math -Xptxas=-O1"
    ]
    assert not any(line.startswith("- evil") for line in out.splitlines())
    assert "0.1.0\\n    flags:    -O2" in out and "\\x1b[2Kforged" in out


def test_console_lines_escape_control_characters():
    """`check` speaks through the event stream: a newline in a TOML's field must not forge a line there either."""
    import io

    from compileiq_cmake.model.events import EventStream
    from compileiq_cmake.ui.console import Console

    out = io.StringIO()
    stream = EventStream(Console("normal", out))
    stream.warning("t: stale: tuned with compileiq_cmake 0.1\ncompileiq: t: applies: forged\x1b[1A", stage="check")
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "\x1b" not in lines[0] and "0.1\\ncompileiq: t: applies" in lines[0]


# ---- read commands change nothing ------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["trials"], ["trials", "--json"], ["report"], ["report", "--json"]])
def test_a_read_command_leaves_a_damaged_store_where_it_is(tmp_path, capsys, command):
    """`trials -B` on a damaged store moved it aside (a read command): it says so in one line and leaves it."""
    state = tmp_path / "compileiq"
    state.mkdir()
    store = state / "trials.sqlite"
    garbage = b"this is not a database" * 100
    store.write_bytes(garbage)
    rc = cli.main([*command, "-B", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "is damaged" in err[0] and "left as it is" in err[0], err
    assert sorted(p.name for p in state.iterdir()) == ["trials.sqlite"]
    assert store.read_bytes() == garbage


# ---- a tune that measured nothing ----------------------------------------------------------------------------


def test_a_tune_that_measured_nothing_exits_non_zero(tmp_path):
    """`--time-limit 1` exited 0 with nothing measured: it exits 2 with one line on stderr saying why (and the
    --time-limit it needs), and writes nothing."""
    import subprocess
    import sys

    env = {**os.environ, "COMPILEIQ_REPLAY_PACE": "1500", "COMPILEIQ_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *replay_args(tmp_path, "--time-limit", "1")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1, proc.stdout[-2000:] + proc.stderr
    assert "nothing was measured within --time-limit 1 s" in err[0] and "give at least --time-limit " in err[0]
    assert not (tmp_path / "compileiq.toml").exists()


# ---- a full disk -------------------------------------------------------------------------------------------


def _fails_with(error: BaseException, state: Path):
    """A setup that wrote its log into the state folder, then failed with `error`."""

    def setup(*_a, **_kw):
        (state / "logs").mkdir(parents=True, exist_ok=True)
        (state / "logs" / "configure-worker-0.log").write_text("-- Configuring incomplete, errors occurred!\n")
        raise error

    return setup


def test_a_full_disk_during_a_tune_is_one_line_and_the_state_is_kept(tmp_path, capsys, monkeypatch):
    """A full disk ended a tune with a traceback (`OSError: [Errno 28]` in cmake_project._write_whole)."""
    import errno

    from compileiq_cmake.tune import orchestration

    state = tmp_path / "build" / "compileiq"
    fragment = state / "worker-0" / "compileiq_trial_flags.cmake"
    full = OSError(errno.ENOSPC, "No space left on device", str(fragment))
    monkeypatch.setattr(orchestration, "replay_setup", _fails_with(full, state))
    rc = cli.main(replay_args(tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "the disk is full" in err[0] and str(fragment) in err[0] and "kept" in err[0], err[0]
    assert (state / "logs" / "configure-worker-0.log").is_file()


def test_a_configure_that_failed_for_want_of_space_keeps_the_state_and_says_why(tmp_path, capsys, monkeypatch):
    """With less space the tune blamed "the configure step did not finish" and deleted the state folder, logs
    included: it says the disk is full, with what is free, and keeps them."""
    import shutil
    from collections import namedtuple

    from compileiq_cmake.tune import orchestration

    state = tmp_path / "build" / "compileiq"
    failed = CompileIQError("the configure step did not finish: see the log")
    monkeypatch.setattr(orchestration, "replay_setup", _fails_with(failed, state))
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage(1 << 30, (1 << 30) - (3 << 20), 3 << 20))
    rc = cli.main(replay_args(tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "the configure step did not finish" in err[0] and "is full (3 MiB free)" in err[0], err[0]
    assert (state / "logs" / "configure-worker-0.log").is_file()


def test_a_trial_store_write_on_a_full_disk_says_the_disk_is_full(tmp_path):
    """SQLite's "database or disk is full" names the store and says the disk is full, the store kept."""
    import sqlite3

    from compileiq_cmake.results.store import TrialStore

    store = TrialStore(tmp_path / "trials.sqlite", "s")
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]

    class Full:
        def __enter__(self):
            raise full

        def __exit__(self, *_a):
            return False

    store._db = Full()  # type: ignore[assignment]
    with pytest.raises(CompileIQError) as exc:
        store.save_result("x", 1)
    _one_line(exc, str(tmp_path / "trials.sqlite"), "the disk is full")


@pytest.mark.unit
def test_an_acf_and_a_compare_file_are_read_as_regular_files_and_bounded(tmp_path, monkeypatch):
    """Issue 51: the user's --acf files and the --compare-file a run writes are read like every other file
    others wrote: a device (a link to /dev/zero) is one line, not a read forever; a file over the cap too."""
    from compileiq_cmake.flags import acf
    from compileiq_cmake.measure.numerics import read_file_numbers
    from compileiq_cmake.model.errors import UsageError

    zero = tmp_path / "zero.acf"
    zero.symlink_to("/dev/zero")
    with pytest.raises(UsageError, match=r"--acf: .*zero\.acf is a device, not a regular file"):
        acf.user_files((zero,), tmp_path / "store")
    big = tmp_path / "big.acf"
    big.write_bytes(b"x" * 65)
    monkeypatch.setattr(acf, "ACF_MAX_BYTES", 64)
    with pytest.raises(UsageError, match="more than 64 bytes"):
        acf.user_files((big,), tmp_path / "store")
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())

    out = tmp_path / "out.txt"
    assert read_file_numbers(out) is None
    out.symlink_to("/dev/zero")
    assert "is a device, not a regular file" in str(read_file_numbers(out))
    out.unlink()
    out.write_text("1.5 2\n-3e2\n")
    assert read_file_numbers(out) == (1.5, 2.0, -300.0)
