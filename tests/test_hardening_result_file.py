"""Issue 10, compileiq.toml: strict reading (unknown keys, flag caps, file size, ACF paths), writes that
lose nothing (concurrent writers, a full disk, a symlinked file), a check before a tune spends time, and
the replacement policy for entries guarded by numerics checks."""

from __future__ import annotations

import errno
import multiprocessing
import os
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import tomli_w

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.results.schema import MAX_FLAGS, numerics_checked
from compileiq_cmake.results.toml_io import (
    MAX_FILE_BYTES,
    check_output_writable,
    read_entries,
    replacement,
    write_entry,
)

from test_result_file import make_entry


def _write_raw(path: Path, mutate) -> None:
    write_entry(path, make_entry())
    data = tomllib.loads(path.read_text())
    mutate(data)
    path.write_text(tomli_w.dumps(data))


# ---- (a) strict reading --------------------------------------------------------------------------------


@pytest.mark.unit
def test_unknown_top_level_key_is_refused_naming_key_and_file(tmp_path):
    path = tmp_path / "compileiq.toml"
    _write_raw(path, lambda d: d.update(extra_setting=True))
    with pytest.raises(CompileIQError, match=rf"{path}.*'extra_setting'"):
        read_entries(path)


@pytest.mark.unit
def test_flag_errors_name_the_file(tmp_path):
    path = tmp_path / "compileiq.toml"
    _write_raw(path, lambda d: d["entry"][0].update(flags=["-Xptxas=-O9"]))
    with pytest.raises(CompileIQError, match=rf"^{path}: .*-Xptxas=-O9"):
        read_entries(path)


# ---- (b) concurrent writers ----------------------------------------------------------------------------


def _writer(path: str, prefix: str, n: int) -> None:
    for i in range(n):
        write_entry(Path(path), make_entry(target=f"{prefix}{i}"))


@pytest.mark.unit
def test_concurrent_writers_lose_no_entry(tmp_path):
    path = tmp_path / "compileiq.toml"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(path), p, 50)) for p in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    targets = {e.target for e in read_entries(path)}
    assert len(targets) == 100, f"{100 - len(targets)} of 100 entries lost"
    assert not list(tmp_path.glob(".compileiq-*")), "temporary files left behind"


# ---- (c) checked before a tune -------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    "content,message",
    [
        ("", "schema_version"),
        ('schema_version = 1\n[[entry]]\ntarget = "nbo', "not valid TOML"),
        ("schema_version = 2\n", "schema_version"),
    ],
)
def test_existing_file_that_is_not_a_compileiq_toml_is_caught_before_the_tune(tmp_path, content, message):
    path = tmp_path / "compileiq.toml"
    path.write_text(content)
    with pytest.raises(CompileIQError, match=message):
        check_output_writable(path)


@pytest.mark.unit
def test_output_check_accepts_new_and_valid_files_and_refuses_unwritable_places(tmp_path, monkeypatch):
    check_output_writable(tmp_path / "new" / "compileiq.toml")  # a directory to be created is fine
    path = tmp_path / "compileiq.toml"
    check_output_writable(path)
    write_entry(path, make_entry())
    check_output_writable(path)
    with pytest.raises(CompileIQError, match="is a directory"):
        check_output_writable(tmp_path)

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("compileiq_cmake.results.toml_io.tempfile.mkstemp", refuse)
    with pytest.raises(CompileIQError, match=rf"cannot write in {tmp_path}"):
        check_output_writable(path)
    assert not list(tmp_path.glob(".compileiq-*"))


# ---- (d) a write that fails ----------------------------------------------------------------------------


def _no_space_for(target: Path, monkeypatch) -> None:
    real = os.replace

    def replace_(src, dst, *args, **kwargs):
        if Path(dst) == target:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr("compileiq_cmake.results.toml_io.os.replace", replace_)


@pytest.mark.unit
def test_failed_write_saves_the_entry_in_the_fallback_and_says_where(tmp_path, monkeypatch):
    path = tmp_path / "src" / "compileiq.toml"
    first = make_entry(target="first")
    write_entry(path, first)
    before = path.read_text()
    fallback = tmp_path / "build" / "compileiq"
    _no_space_for(path, monkeypatch)
    entry = make_entry(target="second")
    with pytest.raises(CompileIQError, match="No space left on device") as info:
        write_entry(path, entry, fallback_dir=fallback)
    (saved,) = fallback.glob("*.toml")
    assert str(saved) in str(info.value)
    assert {e.target for e in read_entries(saved)} == {"first", "second"}
    assert path.read_text() == before
    assert not list(path.parent.glob(".compileiq-*")), "a stray temporary file was left"
    with pytest.raises(CompileIQError, match=rf"could not write {path}.*No space"):
        write_entry(path, entry)  # without a fallback: still one clear line


@pytest.mark.unit
def test_stray_temporary_file_of_a_killed_writer_is_removed(tmp_path):
    path = tmp_path / "compileiq.toml"
    stray = tmp_path / ".compileiq-compileiq.toml-k1ll3d.toml"
    stray.write_text('schema_version = 1\n[[entry]]\ntarget = "half')
    write_entry(path, make_entry())
    assert not stray.exists() and len(read_entries(path)) == 1


# ---- (e) a symlinked compileiq.toml --------------------------------------------------------------------


@pytest.mark.unit
def test_symlinked_file_is_written_through_the_link(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    real = shared / "flags.toml"
    write_entry(real, make_entry(target="first"))
    link = tmp_path / "compileiq.toml"
    link.symlink_to(real)
    write_entry(link, make_entry(target="second"))
    assert link.is_symlink(), "the link was replaced by a regular file"
    assert {e.target for e in read_entries(real)} == {"first", "second"}
    assert not list(tmp_path.glob(".compileiq-*")) and not list(shared.glob(".compileiq-*"))


# ---- (f) caps ------------------------------------------------------------------------------------------


@pytest.mark.unit
def test_too_many_flags_and_too_big_files_are_refused(tmp_path):
    path = tmp_path / "compileiq.toml"
    _write_raw(path, lambda d: d["entry"][0].update(flags=["--use_fast_math"] * (MAX_FLAGS + 1)))
    with pytest.raises(CompileIQError, match=rf"{path}: .*{MAX_FLAGS + 1} flags.*at most {MAX_FLAGS}"):
        read_entries(path)
    path.write_text("schema_version = 1\n" + "# padding\n" * (MAX_FILE_BYTES // 10 + 1))
    with pytest.raises(CompileIQError, match=rf"{path} is .* bytes"):
        read_entries(path)
    with pytest.raises(CompileIQError, match="flags"):
        write_entry(tmp_path / "other.toml", make_entry(flags=("--use_fast_math",) * (MAX_FLAGS + 1)))


# ---- (g) Advanced Control File paths -------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    "flag",
    [
        "--apply-controls=/etc/passwd",
        "--apply-controls=../outside/x.acf",
        "--apply-controls=controls/../../x.acf",
        "--apply-controls=",
    ],
)
def test_apply_controls_outside_the_source_tree_is_refused(tmp_path, flag):
    path = tmp_path / "compileiq.toml"
    _write_raw(path, lambda d: d["entry"][0].update(flags=["--use_fast_math", flag]))
    with pytest.raises(CompileIQError, match=rf"^{path}: .*apply-controls.*relative path"):
        read_entries(path)


@pytest.mark.unit
def test_apply_controls_relative_path_is_accepted(tmp_path):
    path = tmp_path / "compileiq.toml"
    entry = make_entry(
        flags=("--use_fast_math", "--apply-controls=controls/booster.acf"),
        acf_sha256=(("controls/booster.acf", "ab" * 32),),
    )
    write_entry(path, entry)
    assert read_entries(path) == [entry]


# ---- 7. replacement policy -----------------------------------------------------------------------------


@pytest.mark.unit
def test_checks_field_round_trips_and_tells_numerics_checked(tmp_path):
    path = tmp_path / "compileiq.toml"
    entry = make_entry(checks=("pass_regex", "compare_output"))
    write_entry(path, entry)
    assert read_entries(path) == [entry] and numerics_checked(entry)
    assert not numerics_checked(make_entry(checks=("pass_regex", "verify")))
    _write_raw(path, lambda d: d["entry"][0].update(checks=["eyeballed"]))
    with pytest.raises(CompileIQError, match="eyeballed"):
        read_entries(path)


@pytest.mark.unit
def test_numerics_checked_entry_is_not_replaced_by_an_unchecked_one_without_replace():
    old = make_entry(checks=("compare_file",), speedup=1.30)
    other = make_entry(target="other")
    new = replace(old, flags=("--use_fast_math", "--extra-device-vectorization"), speedup=1.40, checks=("pass_regex",))
    r = replacement([other, old], new, replace=False)
    assert r.replaces == old and not r.allowed
    assert "compare_file" in r.message and "--replace" in r.message and "\n" not in r.message
    r = replacement([other, old], new, replace=True)
    assert r.replaces == old and r.allowed and "1.30" in r.message and "1.40" in r.message
    assert "--extra-device-vectorization" in r.message
    checked = replace(new, checks=("compare_output",))
    assert replacement([old], checked, replace=False).allowed
    fresh = replacement([other], new, replace=False)
    assert fresh.replaces is None and fresh.allowed


@pytest.mark.unit
def test_write_entry_enforces_the_policy_under_its_lock(tmp_path):
    path = tmp_path / "compileiq.toml"
    old = make_entry(checks=("compare_output",))
    write_entry(path, old)
    with pytest.raises(CompileIQError, match="--replace"):
        write_entry(path, replace(old, speedup=2.0, checks=()), replace=False)
    assert read_entries(path) == [old]
    write_entry(path, replace(old, speedup=2.0, checks=()), replace=True)
    assert read_entries(path)[0].speedup == 2.0


@pytest.mark.unit
def test_a_worse_entry_of_the_same_identity_does_not_replace_a_better_one_without_saying_so(tmp_path):
    """Issue 38: a suite rerun that changed nothing replaced a target's 18.55x entry (6 flags) with 10.24x (2
    flags). An entry of the same identity (target, language, arch, sources with their headers, the project's
    compile flags, compiler version, build type, device) validated faster is kept, said in one line; --replace
    writes the new one; a changed identity (the sources edited) replaces it as before, slower or not."""
    path = tmp_path / "compileiq.toml"
    old = make_entry(speedup=18.55, flags=("--use_fast_math", "-Xptxas=-O1"))
    write_entry(path, old)
    worse = replace(old, speedup=10.24, flags=("--use_fast_math",), date="2026-12-03T10:00:00+00:00")
    kept = write_entry(path, worse, replace=False)
    assert kept.kept and not kept.allowed and kept.replaces == old
    assert "kept the entry" in kept.message and "18.55" in kept.message and "10.24" in kept.message
    assert "--replace" in kept.message and "\n" not in kept.message
    assert read_entries(path) == [old]
    better = replace(old, speedup=19.0, flags=("-Xptxas=-O1",))
    assert write_entry(path, better, replace=False).allowed and read_entries(path) == [better]
    write_entry(path, worse, replace=True)
    assert read_entries(path) == [worse]  # --replace: written
    edited = replace(worse, speedup=5.0, sources_sha256="cd" * 32)
    r = write_entry(path, edited, replace=False)
    assert r.allowed and not r.kept and read_entries(path) == [edited]  # other sources: the old one was stale


@pytest.mark.unit
def test_an_entry_tuned_for_energy_neither_replaces_nor_is_replaced_by_one_tuned_for_time(tmp_path):
    """Issue 39: an energy gain is no speedup: an entry of the other objective is replaced only with --replace
    (said in one line), and the energy entry's identity differs from the time entry's of the same code; the
    file keeps the objective."""
    path = tmp_path / "compileiq.toml"
    timed = make_entry(speedup=1.30)
    write_entry(path, timed)
    energy = replace(timed, speedup=1.45, objective="energy", flags=("-Xptxas=-O1",))
    r = replacement([timed], energy, replace=False)
    assert not r.allowed and r.replaces == timed and "tuned for time" in r.message and "for energy" in r.message
    assert "--replace" in r.message and "\n" not in r.message
    assert timed.identity != energy.identity and replace(energy, objective="time").identity == timed.identity
    with pytest.raises(CompileIQError, match="--replace"):
        write_entry(path, energy, replace=False)
    write_entry(path, energy, replace=True)
    (back,) = read_entries(path)
    assert back.objective == "energy" and back == energy
    assert "energy gain 1.45x" in replacement([back], timed, replace=True).message
