"""Issue 51: the writer and `show` under the one rule for more than one entry of a key (the configure and
`check`: tests/test_issue51_apply.py), and `space clang`."""

from __future__ import annotations

import pytest

from compileiq_cmake.results.toml_io import read_entries, write_entry

from conftest import run_cli
from test_issue51_apply import _host_entry, _two_entries


@pytest.mark.unit
def test_space_clang_prints_the_gcc_space_that_serves_clang():
    """The reference: the gcc space serves GNU, Clang and AppleClang; `space clang` is that space, as Clang
    gets it (issue 51: it was refused as an invalid choice)."""
    proc = run_cli("space", "clang")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("gcc flag space (GNU, Clang, AppleClang; as Clang gets it):"), proc.stdout
    assert "opt_level" in proc.stdout and "-funroll-loops" in proc.stdout
    assert run_cli("space", "gcc").stdout.startswith("gcc flag space (GNU, Clang, AppleClang):")


@pytest.mark.unit
def test_the_writer_replaces_every_entry_of_the_key_and_says_so(tmp_path):
    toml = tmp_path / "compileiq.toml"
    first, second = _host_entry("12.2.0"), _host_entry("12.2.0", flags=("-O3",), speedup=9.0)
    _two_entries(toml, first, second)
    new = _host_entry("12.2.0", flags=("-O2",), speedup=1.1)
    decision = write_entry(toml, new, replace=False)
    assert read_entries(toml) == [new]
    assert "2 entries" in decision.message and "-funroll-loops" in decision.message and "-O3" in decision.message


@pytest.mark.unit
def test_show_says_that_two_entries_of_one_key_apply_neither(tmp_path):
    toml = tmp_path / "compileiq.toml"
    _two_entries(toml, _host_entry("12.2.0"), _host_entry("12.2.0", flags=("-O3",)))
    proc = run_cli("show", str(toml))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = [line for line in proc.stdout.splitlines() if "2 entries for host_kernels" in line]
    assert len(said) == 1 and "none of them applies" in said[0] and "#1" in said[0] and "#2" in said[0], proc.stdout
