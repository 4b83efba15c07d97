"""Reading a benchmark's metric from its run: the parsers (a regex's last match, Google Benchmark JSON,
nvbench JSON, wall time), the checks that make a value a usable time (value_problem) and PASS_REGEX."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..model.spec import MetricSpec

_TIME_UNITS_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def _geomean(values: list[float]) -> float | None:
    """Geometric mean; a value that is not a positive finite time is returned as it is, so that the run is
    invalid with it as the reason (not silently left out)."""
    if not values:
        return None
    for v in values:
        if not (math.isfinite(v) and v > 0):
            return v
    return math.exp(sum(math.log(v) for v in values) / len(values))


def parse_gbench(text: str) -> float | None:
    """Geometric mean of the real times (ms) of a Google Benchmark JSON report (aggregates skipped)."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        report = json.loads(text[start:])
        times = [
            float(b["real_time"]) * _TIME_UNITS_MS.get(b.get("time_unit", "ns"), 1e-6)
            for b in report.get("benchmarks", [])
            if b.get("run_type", "iteration") == "iteration" and "real_time" in b
        ]
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
        return None
    return _geomean(times)


def parse_nvbench(path: Path) -> float | None:
    """Geometric mean (ms) of the 'nv/cold/time/gpu/mean' summaries of an nvbench --json file."""
    try:
        report = json.loads(path.read_text())
        times = [
            float(datum["value"]) * 1e3
            for bench in report.get("benchmarks", [])
            for state in bench.get("states", [])
            for summary in state.get("summaries", []) or []
            if summary.get("tag") == "nv/cold/time/gpu/mean"
            for datum in summary.get("data", [])
            if datum.get("name") == "value"
        ]
    except (OSError, json.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
        return None
    return _geomean(times)


def parse_regex(pattern: str, text: str) -> float | None:
    """The capture group of the LAST match of the pattern in the output."""
    return read_regex(pattern, text).value


@dataclass(frozen=True)
class MetricReading:
    value: float | None  # None: not found, or not a number (see problem)
    printed: str = ""  # regex metrics: the number as the program printed it (last match)
    problem: str = ""  # why the value cannot be used ("" when it can, or when nothing matched)
    warning: str = ""


def _engine(seconds: float | None):
    """The regex module and its extra arguments: `re` for a regex the user typed; with `seconds` (a regex read
    from a file: it may backtrack catastrophically) the `regex` engine under that time limit, which raises
    TimeoutError past it."""
    if seconds is None:
        return re, {}
    import regex

    return regex, {"timeout": seconds}


def _matches(pattern: str, text: str, seconds: float | None) -> list[str | None] | str:
    """The first groups of every match (MULTILINE); the reason as a string when the regex ran past its limit."""
    engine, limit = _engine(seconds)
    try:
        return [m.group(1) for m in engine.finditer(pattern, text, flags=engine.MULTILINE, **limit)]
    except TimeoutError:
        return f"the regex {pattern!r} ran past its {seconds:g} s limit on the output (a regex read from a file)"


def read_regex(pattern: str, text: str, seconds: float | None = None) -> MetricReading:
    """The capture group of the LAST match (documented: a program that prints the metric several times is
    read at its last line), with a warning when the matches disagree. `seconds`: see _matches."""
    printed = _matches(pattern, text, seconds)
    if isinstance(printed, str):
        return MetricReading(None, "", printed)
    if not printed:
        return MetricReading(None)
    last = printed[-1]
    try:
        values = {repr(float(p)) for p in printed if p is not None}
        if last is None:
            raise TypeError(last)
        value = float(last)
    except (TypeError, ValueError):
        return MetricReading(None, last or "", f"metric {pattern!r} matched {last!r}, which is not a number")
    warning = ""
    if len(values) > 1:
        warning = (
            f"the metric {pattern!r} is printed several times per run with different values; "
            "the last one printed counts"
        )
    return MetricReading(value, last, "", warning)


def value_problem(value: float, metric: MetricSpec) -> str:
    """Why a metric value cannot be compared ("" when it can): results are compared as ratios (logs), so
    it must be a positive finite number; for a time (lower is better), zero or less is no time at all."""
    if not math.isfinite(value):
        return f"metric is {value}: not a finite number ({metric.label})"
    if value <= 0:
        what = "time" if metric.lower_is_better or metric.kind != "regex" else "value (results are compared as ratios)"
        return f"metric is {value}: not a positive {what} ({metric.label})"
    return ""


def read_metric(metric: MetricSpec, output: str, seconds: float, json_path: Path | None) -> MetricReading:
    """The metric of one run from what it printed (regex, Google Benchmark JSON), its nvbench JSON file or its
    wall time (seconds, read in ms)."""
    if metric.kind == "regex":
        return read_regex(metric.pattern, output, metric.regex_seconds)
    if metric.kind == "gbench":
        return MetricReading(parse_gbench(output))
    if metric.kind == "nvbench":
        return MetricReading(parse_nvbench(json_path) if json_path else None)
    return MetricReading(seconds * 1e3)


def pass_problem(pass_regex: str | None, output: str, seconds: float | None = None) -> str:
    """Why the output does not pass ("" when it matches PASS_REGEX on any line, re.MULTILINE, or there is
    none). `seconds`: a regex read from a file, matched under that time limit (running past it fails)."""
    if pass_regex is None:
        return ""
    engine, limit = _engine(seconds)
    try:
        found = engine.search(pass_regex, output, flags=engine.MULTILINE, **limit) is not None
    except TimeoutError:
        return (
            f"PASS_REGEX {pass_regex!r} ran past its {seconds:g} s limit on the output (a regex read from a "
            "file: give --pass-regex)"
        )
    return "" if found else f"PASS_REGEX {pass_regex!r} not in output"
