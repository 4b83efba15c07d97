"""`compileiq-cmake check` for CI: is a committed compileiq.toml still right for this build?

1. The file is validated (a bad file: one line, exit 2).
2. Applies / stale: a scratch configure of the project with the user's cache settings (their own
   CMAKE_PROJECT_TOP_LEVEL_INCLUDES kept, before the tool's) and the file applied through compileiq_apply.cmake;
   the CMake apply logic itself records, per entry, whether it applied and why not (target, architecture,
   compiler, build type) and whether it is stale (sources or compiler patch version changed since the tune), in
   COMPILEIQ_CHECK_FILE. No second copy of those rules here. --strict: exit 1 when an entry does not apply or
   is stale.
3. --remeasure: for each applying entry, a tree with only that entry applied (tuned) and one without the file
   (plain) are built, and the benchmark runs interleaved: --bench (with the recorded metric and PASS_REGEX
   unless --metric/--pass-regex are given), or, only with --run-recorded, the entry's own as its tune recorded
   it (command, metric, PASS_REGEX, VERIFY; every command printed before anything runs: a TOML is data, and
   nothing written in it runs unless the user says so). It runs (plain/tuned alternating, the order flipped
   every round) on the entry's workloads (repeats measured once, at most --max-workloads). An entry passes when
   no workload is significantly slower and the geometric-mean speedup is significantly above 1 + min gain: the
   lower end of its 95% interval lies above 1 + min gain (default min gain: from the plain build's noise, as a
   tune decides). Exit 1 when one does not.
Every configure and build is stopped, with everything it started, after --build-timeout seconds.
Nothing here prints: what the check does and finds are events (stage "check"); the command line's console
prints them, and --json prints `checks_document` instead.

This module is what is checked (the options, the entries, what the apply recorded, the provenance);
results/check_trees.py configures and builds the check's trees, results/check_remeasure.py re-measures
(step 3), results/check_report.py reports the findings.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..measure.gpu import visible_gpus
from ..measure.provenance import Provenance, collect
from ..model.errors import CompileIQError
from ..model.events import EventStream
from ..project.user_tree import DEFAULT_BUILD_TYPE, find_cmake, host_compiler_of, lacks_build_type, read_cache
from .check_defaults import BUILD_TIMEOUT, MAX_WORKLOADS, ROUNDS
from .check_remeasure import BenchOverride, RemeasureOptions, remeasure_entries
from .check_report import EntryCheck
from .check_trees import CheckTrees, read_records
from .schema import FlagsEntry, duplicate_entries, duplicates_line
from .toml_io import read_entries

_NO_OVERRIDE = BenchOverride()  # each entry's recorded benchmark, and nothing it records runs (--bench needed)
_NOT_RECORDED = ("not looked at by the apply (its language is not enabled?)", "comes from a replay (never applied)")


def run_check(
    toml: Path,
    source_dir: Path,
    build_dir: Path,
    *,
    remeasure: bool = False,
    override: BenchOverride = _NO_OVERRIDE,
    rounds: int = ROUNDS,
    min_gain: float | None = None,
    timeout: float = 300.0,
    jobs: int | None = None,
    max_workloads: int = MAX_WORKLOADS,
    build_timeout: float = BUILD_TIMEOUT,
    events: EventStream | None = None,
    only_target: str | None = None,
    if_present: bool = False,
) -> list[EntryCheck]:
    """Each entry of `toml` checked against this build (and with `remeasure` re-measured); `events` hears
    each re-measurement as it starts. `only_target`: that target's entries only; `if_present`: a missing
    file is nothing to check (said), not an error (the CTest gate is registered before any tune)."""
    events = events if events is not None else EventStream()
    if if_present and not toml.is_file():
        events.stage_result("check", f"no flags file ({toml}): nothing applied, nothing to re-measure", passed=True)
        return []
    options = RemeasureOptions(override, rounds, min_gain, timeout, max_workloads, jobs)
    _check_options(source_dir, build_dir, options, build_timeout)
    toml = toml.resolve()
    entries = read_entries(toml)  # validated: a bad file is one line, exit 2
    alone = len(entries) == 1  # the whole file applies one entry: its tuned tree is the file's
    if only_target is not None:
        entries = [e for e in entries if e.target == only_target]
        if not entries:
            events.stage_result(
                "check",
                f"{toml.name} has no entry for {only_target}: nothing applied, nothing to re-measure",
                passed=True,
                target=only_target,
            )
            return []
    user = _checked_cache(build_dir, events)
    # a CTest gate per target runs beside the others (ctest -j): each its own trees
    root = build_dir / "compileiq" / "check" / (re.sub(r"[^A-Za-z0-9_.+-]", "_", only_target) if only_target else "")
    trees = CheckTrees(root, source_dir, user, find_cmake(user), build_timeout)
    record = root / "applied.tsv"
    trees.configure(root / "tuned", toml, True, record)
    checks = _entry_checks(entries, read_records(record), toml.name)
    here = _here(user, entries)
    for c, e in zip(checks, entries, strict=False):
        if not e.replay:
            c.provenance = Provenance.of_entry(e).differences(here[e.language])
    applying = [(i, c, e) for i, (c, e) in enumerate(zip(checks, entries, strict=False)) if c.applies]
    if remeasure and applying:
        remeasure_entries(applying, trees, toml, alone, options, events, build_dir)
    return checks


def _check_options(source_dir: Path, build_dir: Path, options: RemeasureOptions, build_timeout: float) -> None:
    """The project and build trees given, and the options in range (CompileIQError: one line)."""
    rounds, min_gain, max_workloads = options.rounds, options.min_gain, options.max_workloads
    if not (source_dir / "CMakeLists.txt").is_file():
        raise CompileIQError(f"{source_dir} has no CMakeLists.txt; pass the project root with -S")
    if not (build_dir / "CMakeCache.txt").is_file():
        raise CompileIQError(
            f"{build_dir} is not a configured build tree (no CMakeCache.txt); configure it first "
            "(cmake -S src -B build -DCMAKE_BUILD_TYPE=Release) and pass it with -B"
        )
    if rounds < 3:
        raise CompileIQError(f"--rounds {rounds} is too few for a paired test: give at least 3")
    if min_gain is not None and not (math.isfinite(min_gain) and 0 <= min_gain < 1):
        raise CompileIQError(f"--min-gain {min_gain:g} is out of range: give a fraction such as 0.01 (1%)")
    if max_workloads < 1:
        raise CompileIQError(f"--max-workloads {max_workloads} is out of range: give a whole number >= 1")
    if not (math.isfinite(build_timeout) and build_timeout > 0):
        raise CompileIQError(f"--build-timeout {build_timeout:g} is out of range: give a positive number of seconds")


def _checked_cache(build_dir: Path, events: EventStream) -> dict[str, tuple[str, str]]:
    """The user's cache entries the check's trees are configured with."""
    user = read_cache(build_dir)
    if lacks_build_type(user, user.get("CMAKE_GENERATOR", ("", ""))[1]):
        # a tree configured without a build type (the CMake route's -DCOMPILEIQ_TUNE=ON tree): a tune of it
        # tunes DEFAULT_BUILD_TYPE, so the check checks that (else every entry "does not apply")
        user = {**user, "CMAKE_BUILD_TYPE": ("STRING", DEFAULT_BUILD_TYPE)}
        events.note(
            f"check: {build_dir} has no CMAKE_BUILD_TYPE; checking a {DEFAULT_BUILD_TYPE} build, as a tune "
            "of it tunes one",
            stage="check",
        )
    return user


def _entry_checks(entries: list[FlagsEntry], recorded: dict[tuple[str, str], dict], file_name: str) -> list[EntryCheck]:
    """Each entry as the apply recorded it (`recorded`: per (target, arch)): whether it applies and why, why it
    may be stale, its CPU and architectures; none of several entries of a key applies (cmake_entries refuses
    them), and the gate fails."""
    checks = []
    duplicated = duplicate_entries(entries)
    for e in entries:
        rec = recorded.get((e.target, e.arch)) or recorded.get((e.target, ""))
        why = _NOT_RECORDED[e.replay]
        checks.append(
            EntryCheck(
                e.target,
                e.arch,
                list(e.flags),
                bool(rec and rec["applies"]) and e.key not in duplicated,
                rec["why"] if rec else why,
                rec["stale"] if rec else [],
                rec["cpu"] if rec else (f"tuned on {e.tuned_cpu}" if e.tuned_cpu else ""),
                rec["archs"] if rec else "",
                duplicate=duplicates_line(entries, duplicated[e.key], file_name) if e.key in duplicated else "",
            )
        )
    return checks


def _here(user: dict[str, tuple[str, str]], entries: list[FlagsEntry]) -> dict[str, Provenance]:
    """This machine's provenance per language of the entries: the build tree's compiler of a host language;
    for CUDA nvcc's host compiler and the first visible GPU's driver and state where NVML reads it."""
    here = {}
    for language in {e.language for e in entries}:
        if language != "CUDA":
            here[language] = collect(user.get(f"CMAKE_{language}_COMPILER", ("", ""))[1], None)
            continue
        try:
            gpus = visible_gpus(None)
        except CompileIQError:
            gpus = ()
        here[language] = collect(host_compiler_of(user), gpus[0] if gpus else None)
    return here
