"""What the command line says about itself: help with every default, the release line, the flag space with
every dimension and when it applies, counts in their right number."""

from __future__ import annotations

import argparse

import pytest

from compileiq_cmake.flags.space import BUILD_MODE_DIMENSIONS
from compileiq_cmake.model.wording import plural
from compileiq_cmake.ui.cli import build_parser

from conftest import run_cli


@pytest.mark.cmake
def test_help_names_the_release_build_type():
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "cmake -S src -B rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=" in proc.stdout


@pytest.mark.cmake
def test_every_numeric_tune_option_says_its_default():
    tune = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["tune"]
    silent = [
        a.option_strings[0]
        for a in tune._actions
        if a.type in (int, float) and a.default is not None and "default" not in (a.help or "")
    ]
    assert silent == []
    text = run_cli("tune", "--help").stdout.replace("\n", " ")
    for shown in ("(default 3)", "(default 9)", "(default 120.0)", "default 30)", "(default 0)"):
        assert shown in " ".join(text.split()), shown


@pytest.mark.cmake
def test_space_lists_every_dimension_with_when_it_applies():
    out = run_cli("space", "nvcc").stdout
    for name in BUILD_MODE_DIMENSIONS["nvcc"]:
        assert f"\n  {name}" in out, name
    lto = next(line for line in out.splitlines() if line.startswith("  device_lto "))
    assert "relocatable device code" in lto and "CMake >= 3.25" in lto
    assert "apply_controls" in out and "ptxas >= 13.3" in out
    reg = next(line for line in out.splitlines() if line.startswith("  register_usage_level "))
    assert "[nvcc >= 12.4]" in reg
    gcc = run_cli("space", "gcc").stdout
    assert "[GNU only]" in next(line for line in gcc.splitlines() if line.startswith("  ipa_pta "))


@pytest.mark.unit
def test_plural_counts():
    assert plural(1, "tuned flag") == "1 tuned flag" and plural(2, "tuned flag") == "2 tuned flags"
    assert plural(0, "worker") == "0 workers" and plural(1, "entry", "entries") == "1 entry"
    assert plural(3, "entry", "entries") == "3 entries"


@pytest.mark.unit
def test_counts_in_messages_are_in_their_right_number():
    from compileiq_cmake.measure.numerics import numerics_changed

    assert "numerics changed: 1 number in the output, the baseline's had 2" in numerics_changed(
        (1.0, 2.0), (1.0,), 1e-3, 0.0
    )
    assert "in 1 of 1 number" in numerics_changed((1.0,), (2.0,), 1e-3, 0.0)
