"""A suite file (issue 24): many targets of one project tuned by one command, `tune --suite suite.toml`.

    [suite]                      # every key optional
    source_dir = "."             # the project (-S); relative paths are relative to the suite file
    build_dir = "build"          # its configured build tree (-B)
    output = "compileiq.toml"    # the one TOML every target's entry is merged into (default <source>/compileiq.toml)
    time_limit = 1800            # seconds for the whole suite (--time-limit overrides it)
    min_seconds = 60             # each target's floor when the time is shared out
    json_summary = "suite.json"  # also write the suite's summary there

    [[target]]                   # one per target, tuned in order of priority (then file order)
    name = "nbody"               # the CMake target (required)
    benchmark = "nbody --n 4096" # the tune options, named as the command line's long options with "_":
    metric = "time_ms=([0-9.]+)" # metric, pass_regex, verify, compare_output, compare_file, rtol, atol,
    pass_regex = "PASS"          # budget, per_file_budget, include_flags, exclude_flags, replay,
    workloads = ["--n 1024"]     # higher_is_better, min_gain, objective; workloads: a list of argument strings
    priority = 2.0               # share of the suite's time (default 1)
    min_seconds = 120            # this target's floor (default: the suite's)
    exclude = false              # true: listed but not tuned (said in the summary)

Only the shape is checked here (one line naming the key, exit 2); each target's options become a TuneSpec
through the command line's own checks (ui/cli.py)."""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError
from .reading import read_regular_text

SUITE_KEYS = {
    "source_dir": str,
    "build_dir": str,
    "output": str,
    "time_limit": (int, float),
    "min_seconds": (int, float),
    "json_summary": str,
}
# target key -> (type, the tune option's argparse destination)
TARGET_KEYS: dict[str, tuple[Any, str]] = {
    "benchmark": (str, "bench"),
    "metric": (str, "metric"),
    "pass_regex": (str, "pass_regex"),
    "verify": (str, "verify"),
    "compare_output": (str, "compare_output"),
    "compare_file": (str, "compare_file"),
    "rtol": ((int, float), "rtol"),
    "atol": ((int, float), "atol"),
    "budget": (int, "budget"),
    "per_file_budget": (int, "per_file_budget"),
    "include_flags": (list, "include_flags"),
    "exclude_flags": (list, "exclude_flags"),
    "replay": (str, "replay"),
    "workloads": (list, "workload"),
    "higher_is_better": (bool, "higher"),
    "min_gain": ((int, float), "min_gain"),
    "objective": (str, "objective"),
}
OWN_KEYS = {"name": str, "priority": (int, float), "min_seconds": (int, float), "exclude": bool}
DEFAULT_MIN_SECONDS = 60.0


@dataclass(frozen=True)
class SuiteTarget:
    name: str
    options: Mapping[str, Any]  # argparse destination -> value (paths already resolved)
    priority: float = 1.0
    min_seconds: float | None = None  # None: the suite's
    excluded: bool = False


@dataclass(frozen=True)
class Suite:
    path: Path
    targets: tuple[SuiteTarget, ...]
    source_dir: Path | None = None
    build_dir: Path | None = None
    output: Path | None = None
    time_limit: float | None = None
    min_seconds: float = DEFAULT_MIN_SECONDS
    json_summary: Path | None = None
    notes: tuple[str, ...] = field(default=())

    def floor(self, target: SuiteTarget) -> float:
        """A target's floor: its own min_seconds, else the suite's."""
        return target.min_seconds if target.min_seconds is not None else self.min_seconds

    @property
    def ordered(self) -> tuple[SuiteTarget, ...]:
        """The targets to tune, highest priority first (stable: file order among equals)."""
        return tuple(sorted((t for t in self.targets if not t.excluded), key=lambda t: -t.priority))


def _typed(where: str, key: str, value: Any, kind: Any) -> Any:
    if (
        kind is bool
        and not isinstance(value, bool)
        or kind is not bool
        and (isinstance(value, bool) or not isinstance(value, kind))
    ):
        name = {str: "a string", int: "an integer", list: "a list", bool: "true or false"}.get(kind, "a number")
        raise UsageError(f"{where}: '{key}' must be {name}, not {value!r}")
    return value


MAX_SUITE_BYTES = 1 << 20  # a suite file is a list of targets: 1 MiB is thousands of them


def _in_range(where: str, key: str, value: Any, low: float, above: bool) -> float:
    """A number of the file that must be finite and > low (above) or >= low."""
    number = float(value)
    if not math.isfinite(number) or (number <= low if above else number < low):
        raise UsageError(f"{where}: '{key}' must be a finite number {'>' if above else '>='} {low:g}, not {value!r}")
    return number


def load_suite(path: Path) -> Suite:
    """The suite file, checked: one line naming what is wrong (UsageError, exit 2)."""
    path = Path(path)
    doc = _read(path)
    here = path.resolve().parent
    head = _head(path, doc)
    rows = doc.get("target", [])
    if not isinstance(rows, list) or not rows:
        raise UsageError(f"--suite {path}: no [[target]] table: name at least one target to tune")
    targets: list[SuiteTarget] = []
    seen: set[str] = set()
    for n, row in enumerate(rows, 1):
        targets.append(_target(path, here, n, row, seen))
    if not any(not t.excluded for t in targets):
        raise UsageError(f"--suite {path}: every target is excluded; nothing to tune")
    if "time_limit" in head:
        _in_range(f"--suite {path} [suite]", "time_limit", head["time_limit"], 0, True)
    if "min_seconds" in head:
        _in_range(f"--suite {path} [suite]", "min_seconds", head["min_seconds"], 0, False)

    def resolved(key: str) -> Path | None:
        return (here / head[key]).resolve() if key in head else None

    return Suite(
        path=path.resolve(),
        targets=tuple(targets),
        source_dir=resolved("source_dir"),
        build_dir=resolved("build_dir"),
        output=resolved("output"),
        time_limit=float(head["time_limit"]) if "time_limit" in head else None,
        min_seconds=float(head.get("min_seconds", DEFAULT_MIN_SECONDS)),
        json_summary=resolved("json_summary"),
    )


def _read(path: Path) -> dict[str, Any]:
    """The suite file's TOML document (of a bounded size)."""
    text = read_regular_text(path, MAX_SUITE_BYTES, "--suite", UsageError, "suite file")  # no pipe, no device
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"--suite {path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise UsageError(f"--suite {path}: nested too deeply to be a suite file") from None
    return doc


def _head(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """The file's tables named, and its [suite] table checked: known keys of the right types."""
    unknown = sorted(set(doc) - {"suite", "target"})
    if unknown:
        raise UsageError(f"--suite {path}: unknown table '{unknown[0]}' (a suite has [suite] and [[target]])")
    head = doc.get("suite", {})
    if not isinstance(head, dict):
        raise UsageError(f"--suite {path}: [suite] must be a table")
    for key, value in head.items():
        if key not in SUITE_KEYS:
            close = difflib.get_close_matches(key, list(SUITE_KEYS), 1)
            raise UsageError(
                f"--suite {path}: unknown key '{key}' in [suite]"
                + (f" (did you mean '{close[0]}'?)" if close else "")
                + f"; known: {', '.join(SUITE_KEYS)}"
            )
        _typed(f"--suite {path} [suite]", key, value, SUITE_KEYS[key])
    return head


def _target(path: Path, here: Path, n: int, row: Any, seen: set[str]) -> SuiteTarget:
    """The [[target]] table `n` checked (its name not in `seen`, added): its tune options by destination."""
    where = f"--suite {path} target {n}"
    if not isinstance(row, dict) or not isinstance(row.get("name"), str) or not row["name"]:
        raise UsageError(f"{where}: 'name' (the CMake target) is required")
    name = row["name"]
    where = f"--suite {path} target {name}"
    if name in seen:
        raise UsageError(f"{where}: listed twice; give each target one [[target]] table")
    seen.add(name)
    options = _options(where, here, row)
    _in_range(where, "priority", row.get("priority", 1.0), 0, True)  # exclude = true leaves a target out
    if "min_seconds" in row:
        _in_range(where, "min_seconds", row["min_seconds"], 0, False)
    return SuiteTarget(
        name=name,
        options=options,
        priority=float(row.get("priority", 1.0)),
        min_seconds=float(row["min_seconds"]) if "min_seconds" in row else None,
        excluded=bool(row.get("exclude", False)),
    )


def _options(where: str, here: Path, row: dict[str, Any]) -> dict[str, Any]:
    """A [[target]] table's keys checked (known, of the right types), its tune options by destination."""
    options: dict[str, Any] = {}
    for key, value in row.items():
        if key in OWN_KEYS:
            _typed(where, key, value, OWN_KEYS[key])
            continue
        if key not in TARGET_KEYS:
            close = difflib.get_close_matches(key, [*OWN_KEYS, *TARGET_KEYS], 1)
            raise UsageError(
                f"{where}: unknown key '{key}'"
                + (f" (did you mean '{close[0]}'?)" if close else "")
                + f"; known: {', '.join([*OWN_KEYS, *TARGET_KEYS])}"
            )
        kind, dest = TARGET_KEYS[key]
        _typed(where, key, value, kind)
        if kind is list and not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: '{key}' must be a list of strings")
        if key == "replay":
            value = str((here / value).resolve())
        options[dest] = list(value) if isinstance(value, list) else value
    return options
