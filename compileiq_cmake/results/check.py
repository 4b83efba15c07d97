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
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..decide.stats import Comparison, Interval, auto_min_gain, compare_paired, geomean_comparison, relative_spread
from ..measure.bench import RunOutcome, run_benchmark, run_verify
from ..measure.energy import EnergyMeter, energy_meter, measure_run
from ..measure.gpu import visible_gpus
from ..measure.provenance import Provenance, collect
from ..model.errors import CompileIQError, UsageError
from ..model.events import EventStream
from ..model.records import Status
from ..model.spec import MetricSpec
from ..model.wording import plural
from ..project.file_api import read_codemodel, write_query
from ..project.step_error import step_error
from ..project.user_tree import DEFAULT_BUILD_TYPE, find_cmake, host_compiler_of, lacks_build_type, read_cache
from ..project.variant_settings import forwarded_cache, initial_cache_script, top_level_includes
from ..system.processes import run_process
from ..system.resources import cmake_dir
from .schema import FlagsEntry, duplicate_entries, duplicates_line
from .toml_io import read_entries, write_entry

# The defaults of the check's options (the command line reads them from here; decide.stats loads scipy only
# when a comparison is made, so reading them costs the command line no start-up time)
ROUNDS = 9  # interleaved rounds per workload (--rounds)
MAX_WORKLOADS = 8  # distinct workloads re-measured per entry at most (--max-workloads)
REGEX_SECONDS = 2.0  # a regex of the TOML (metric, PASS_REGEX) matched under this time limit per run
BUILD_TIMEOUT = 3600.0  # seconds for each configure and each build of the check's trees (--build-timeout)
_NOT_RECORDED = ("not looked at by the apply (its language is not enabled?)", "comes from a replay (never applied)")


@dataclass(frozen=True)
class BenchOverride:
    """The command line's --bench, --metric, --lower/--higher-is-better and --pass-regex: each one given
    replaces that part of every entry's recorded benchmark."""

    bench: tuple[str, ...] = ()
    metric: str | None = None
    lower_is_better: bool | None = None
    pass_regex: str | None = None
    # a TOML is data: its recorded benchmark and VERIFY commands run only when the user says so (--run-recorded)
    run_recorded: bool = False


@dataclass(frozen=True)
class Benchmark:
    """How one entry is re-measured. argv's first word: a target of the project (its binary in each tree), or
    a path relative to the tree (every run has its tree as the working directory)."""

    argv: tuple[str, ...]
    metric: MetricSpec
    pass_regex: str | None
    verify: tuple[str, ...]


def entry_benchmark(entry: FlagsEntry, override: BenchOverride) -> Benchmark:
    """The entry's own benchmark as its tune recorded it, with the command line's overrides."""
    if not override.bench and not override.run_recorded:
        raise UsageError(
            "check --remeasure runs no command written in the TOML unless told to: give --bench 'program "
            "args' (its first word may be a target of the project), or --run-recorded to run each entry's "
            "recorded benchmark and VERIFY commands (all printed before anything runs)"
        )
    argv = override.bench or entry.benchmark
    if not argv:
        raise CompileIQError(
            f"--remeasure needs the benchmark command of the entry for {entry.target}, which records "
            "none (written by an older compileiq_cmake): pass --bench 'program args' (its first word "
            "may be a target of the project), or re-tune"
        )
    lower = entry.lower_is_better if override.lower_is_better is None else override.lower_is_better
    metric = replace(MetricSpec.parse(override.metric or entry.metric, lower), regex_seconds=REGEX_SECONDS)
    pass_regex = override.pass_regex if override.pass_regex is not None else (entry.pass_regex or None)
    return Benchmark(tuple(argv), metric, pass_regex, () if override.bench else entry.verify)


def select_workloads(entry: FlagsEntry, cap: int) -> tuple[list[tuple[str, ...]], str]:
    """The entry's distinct workloads (the same arguments twice: measured once), the first `cap` of them,
    and a note that says what was left out ("" when nothing was)."""
    try:
        split = [tuple(shlex.split(w)) for w in entry.workloads] or [()]
    except ValueError as exc:
        raise CompileIQError(
            f"a workload of the entry for {entry.target} cannot be split into arguments ({exc}); "
            "fix it in the file or re-tune"
        ) from None
    distinct = list(dict.fromkeys(split))
    notes = []
    if len(distinct) < len(split):
        notes.append(
            f"{len(split)} workloads, {len(split) - len(distinct)} of them repeats: each distinct one measured once"
        )
    if len(distinct) > cap:
        notes.append(f"the first {cap} of {len(distinct)} distinct workloads measured (--max-workloads)")
        distinct = distinct[:cap]
    return distinct, "; ".join(notes)


def verdict(results: list[tuple[str, Comparison]], gain: float) -> tuple[bool, str, float, Interval]:
    """Whether an entry still pays: no workload significantly slower, and the geometric-mean speedup
    significantly above 1 + gain (the lower end of its 95% interval above 1 + gain); the reason, the
    speedup and its interval."""
    speedup, ci = geomean_comparison([c for _, c in results])
    shown = f"{speedup:.4f}x [{ci.low:.4f}..{ci.high:.4f}]"
    slower = [w for w, c in results if c.slower()]
    if slower:
        return False, f"significantly slower than the plain build on {', '.join(repr(w) for w in slower)}", speedup, ci
    if not ci.low > 1.0 + gain:
        return (
            False,
            (
                f"not significantly faster than the plain build by the minimum gain of {100 * gain:.2f}% "
                f"({shown}: the interval must lie above {1 + gain:.4f})"
            ),
            speedup,
            ci,
        )
    return True, f"{shown} lies above 1 + {100 * gain:.2f}%", speedup, ci


@dataclass
class WorkloadResult:
    workload: str
    plain: list[float]
    tuned: list[float]
    speedup: float
    ci: tuple[float, float]
    p_value: float


@dataclass
class EntryCheck:
    target: str
    arch: str
    flags: list[str]
    applies: bool
    why: str  # the apply's own line: what it did or why not
    stale: list[str] = field(default_factory=list)  # why the entry may be out of date
    cpu: str = ""  # host-specific flags: the CPU tuned on and whether this host has its ISA features
    archs: str = ""  # CUDA: the measured and the unmeasured architectures the target builds
    # {benchmark, metric, lower_is_better, tree, note, rounds, speedup, ci, min_gain, passed, reason,
    #  workloads: [WorkloadResult]}; speedup, ci and min_gain are None when the tuned build's benchmark failed
    remeasure: dict | None = None
    # what differs on this machine from where the entry was tuned (driver, host compiler, clocks, ...)
    provenance: list[str] = field(default_factory=list)
    duplicate: str = ""  # another entry of its key (schema.duplicate_entries): the line that says so; none applies

    def failures(self, strict: bool) -> list[str]:
        """Why the gate fails: another entry of its key, a failed re-measure; with strict, not applying or stale."""
        out = [f"refused: {self.duplicate}"] if self.duplicate else []  # with or without strict
        out += [f"re-measured: {self.remeasure['reason']}"] if self.remeasure and not self.remeasure["passed"] else []
        if strict and not self.applies:
            out.append(f"does not apply: {self.why}")
        if strict:
            out += [f"stale: {s}" for s in self.stale]
        return out


def _run_step(cmd: list[str], cwd: Path, what: str, timeout: float) -> None:
    """A configure or build: run in its own process group, which is killed (cmake, make/ninja, compilers,
    whatever they started) when it takes longer than timeout seconds."""
    res = run_process(cmd, cwd, timeout)
    if res.returncode == 0:
        return
    log_path = cwd.parent.parent / "logs" / f"check-{cwd.name}-{'configure' if '--build' not in cmd else 'build'}.log"
    stopped = f"did not finish within {timeout:g} s and was stopped with everything it started"
    raise step_error(
        what,
        cmd,
        res,
        log_path,
        timeout,
        stopped=stopped if res.timed_out else "",
        hint="give it longer with --build-timeout" if res.timed_out else "",
    )


def _configure(
    source_dir: Path,
    tree: Path,
    user: dict[str, tuple[str, str]],
    cmake: str,
    toml: Path,
    apply: bool,
    record: Path | None,
    timeout: float,
) -> None:
    tree.mkdir(parents=True, exist_ok=True)
    init = tree / "compileiq_check_cache.cmake"
    init.write_text(initial_cache_script(forwarded_cache(user, keep=frozenset({"CMAKE_CUDA_ARCHITECTURES"}))))
    write_query(tree)
    generator = user.get("CMAKE_GENERATOR", ("", "Unix Makefiles"))[1]
    includes = top_level_includes(
        user.get("CMAKE_PROJECT_TOP_LEVEL_INCLUDES", ("", ""))[1], cmake_dir() / "compileiq_apply.cmake"
    )
    cmd = [
        cmake,
        "-S",
        str(source_dir),
        "-B",
        str(tree),
        "-G",
        generator,
        "-C",
        str(init),
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={includes}",
        f"-Dcompileiq_cmake_DIR={cmake_dir()}",
        f"-DCOMPILEIQ_FLAGS_FILE={toml}",
        f"-DCOMPILEIQ_APPLY={'ON' if apply else 'OFF'}",
        "-DCOMPILEIQ_TUNE=OFF",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
    ]
    if record is not None:
        record.unlink(missing_ok=True)
        cmd.append(f"-DCOMPILEIQ_CHECK_FILE={record}")
    _run_step(cmd, tree, f"configuring {source_dir} into {tree}", timeout)


def _records(path: Path) -> dict[tuple[str, str], dict]:
    """What the apply recorded per (target, arch): applies, why, stale reasons."""
    out: dict[tuple[str, str], dict] = {}
    for line in path.read_text().splitlines() if path.is_file() else ():
        target, arch, status, text = (line.split("\t", 3) + ["", "", "", ""])[:4]
        rec = out.setdefault((target, arch), {"applies": False, "why": "", "stale": [], "cpu": "", "archs": ""})
        if status == "applied":
            rec.update(applies=True, why=text)
        elif status == "stale":
            rec["stale"].append(text)
        elif status in ("cpu", "archs"):
            rec[status] = text
        elif status == "sources":
            rec["why"] += f"; {text}"
        else:
            rec.update(applies=False, why=text)
    return out


def _benchmark_argv(argv: list[str], tree: Path, user_build: Path) -> list[str]:
    """The benchmark command in one tree: a first word that names a target of the project is its binary there;
    a path in the user's build tree (a CTest gate's $<TARGET_FILE:...>) is the same path in the tree."""
    if not argv:
        return argv
    target = read_codemodel(tree).targets.get(argv[0])
    if target is not None and target.artifacts:
        return [str(target.artifacts[0]), *argv[1:]]
    prefixes = {str(user_build) + "/", str(user_build.resolve()) + "/"}  # CMake keeps a symlinked build path

    def mapped(word: str) -> str:
        prefix = next((p for p in prefixes if word.startswith(p)), None)
        return str(tree / word[len(prefix) :]) if prefix else word

    return [mapped(a) for a in argv]


def _entry_file(entry: FlagsEntry, toml: Path, where: Path) -> Path:
    """A flags file that holds only this entry, with copies of its --apply-controls files at the same paths
    relative to it as beside the committed file."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / "compileiq.toml"
    path.unlink(missing_ok=True)
    for rel, _ in entry.acf_sha256:
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(toml.parent / rel, where / rel)
    write_entry(path, entry)
    return path


def _run_measured(
    argv: list[str], tree: Path, bench: Benchmark, timeout: float, meter: EnergyMeter | None
) -> tuple[RunOutcome, float | None]:
    """One run and, with a meter, the GPU's energy over it (joules, aligned to the counter's steps; None when
    the counter could not be read)."""
    out, joules, _ = measure_run(
        meter, lambda: run_benchmark(argv, tree, bench.metric, bench.pass_regex, timeout), aligned=True
    )
    return out, joules


def _remeasure(
    entry: FlagsEntry,
    bench: Benchmark,
    plain: Path,
    tuned: Path,
    rounds: int,
    min_gain: float | None,
    timeout: float,
    max_workloads: int,
    events: EventStream,
    user_build: Path,
    meter: EnergyMeter | None = None,
) -> dict:
    """The entry re-measured: rounds of the plain and the tuned build, interleaved, compared on the entry's
    objective (the metric, or joules per run for an entry tuned for energy)."""
    energy = entry.objective == "energy"
    workloads, note = select_workloads(entry, max_workloads)
    where = f"{entry.target} (sm_{entry.arch})" if entry.arch else entry.target
    events.info(
        f"check: re-measuring {where}: {shlex.join(bench.argv)} "
        f"({'energy per run, the GPU counter' if energy else bench.metric.label}), "
        f"{plural(len(workloads), 'workload')}, {rounds} rounds" + (f"; {note}" if note else ""),
        stage="check",
        target=entry.target,
        arch=entry.arch,
        workloads=len(workloads),
        rounds=rounds,
    )
    trees = {"plain": plain, "tuned": tuned}
    argv = {k: _benchmark_argv(list(bench.argv), t, user_build) for k, t in trees.items()}
    verify = {k: _benchmark_argv(list(bench.verify), t, user_build) for k, t in trees.items()}
    lower = True if energy else bench.metric.lower_is_better
    doc = {
        "benchmark": list(bench.argv),
        "metric": "joules per run" if energy else bench.metric.label,
        "lower_is_better": lower,
        "objective": entry.objective,
        "tree": str(tuned),
        "note": note,
        "rounds": rounds,
        "speedup": None,
        "ci": None,
        "min_gain": None,
        "passed": False,
        "reason": "",
        "workloads": [],
    }
    results = []
    for words in workloads:
        w = shlex.join(words)
        samples: dict[str, list[float]] = {"plain": [], "tuned": []}
        for r in range(rounds):
            for which in ("plain", "tuned") if r % 2 == 0 else ("tuned", "plain"):
                out, joules = _run_measured(
                    argv[which] + list(words), trees[which], bench, timeout, meter if energy else None
                )
                if out.status is Status.OK and r == 0 and verify[which]:  # the tune's VERIFY, after a first run
                    checked = run_verify(verify[which], trees[which], timeout)
                    out = out if checked.status is Status.OK else checked
                if out.status is not Status.OK and which == "plain":
                    raise CompileIQError(
                        f"the plain build's benchmark failed on workload '{w}': {out.reason}; "
                        f"last output line: {out.last_line()}"
                    )
                if out.status is not Status.OK:  # the plain build passes, the tuned one does not: the entry fails
                    return {
                        **doc,
                        "reason": f"the tuned build's benchmark fails on workload '{w}': {out.reason}"
                        + (f"; last output line: {out.last_line()}" if out.output else ""),
                    }
                if energy and joules is None:
                    raise CompileIQError(f"the GPU's energy counter could not be read around a run of workload '{w}'")
                value = joules if energy else out.value
                assert value is not None  # (a run that passed: its metric; the energy counter: checked above)
                samples[which].append(value)
        cmp = compare_paired(samples["plain"], samples["tuned"], lower)
        events.detail(
            f"check: {where}: workload '{w}': {cmp.speedup:.4f}x [{cmp.ci.low:.4f}..{cmp.ci.high:.4f}] "
            f"over {plural(rounds, 'round')} (p={cmp.p_value:.2g})",
            stage="check",
            target=entry.target,
            workload=w,
            speedup=cmp.speedup,
            ci=(cmp.ci.low, cmp.ci.high),
        )
        results.append((w, samples, cmp))
    gain = min_gain if min_gain is not None else auto_min_gain(max(relative_spread(s["plain"]) for _, s, _ in results))
    passed, reason, speedup, ci = verdict([(w, c) for w, _, c in results], gain)
    return {
        **doc,
        "speedup": speedup,
        "ci": [ci.low, ci.high],
        "min_gain": gain,
        "passed": passed,
        "reason": reason,
        "workloads": [
            asdict(WorkloadResult(w, s["plain"], s["tuned"], c.speedup, (c.ci.low, c.ci.high), c.p_value))
            for w, s, c in results
        ],
    }


def run_check(  # noqa: C901, PLR0912, PLR0915 (issue 53: the three rooms, split next)
    toml: Path,
    source_dir: Path,
    build_dir: Path,
    *,
    remeasure: bool = False,
    override: BenchOverride = BenchOverride(),
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
    cmake = find_cmake(user)
    # a CTest gate per target runs beside the others (ctest -j): each its own trees
    root = build_dir / "compileiq" / "check" / (re.sub(r"[^A-Za-z0-9_.+-]", "_", only_target) if only_target else "")
    record = root / "applied.tsv"
    _configure(source_dir, root / "tuned", user, cmake, toml, True, record, build_timeout)
    recorded = _records(record)
    checks = []
    duplicated = duplicate_entries(entries)  # none of them applies (cmake_entries refuses them), and the gate fails
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
                duplicate=duplicates_line(entries, duplicated[e.key], toml.name) if e.key in duplicated else "",
            )
        )
    here = _here(user, entries)
    for c, e in zip(checks, entries, strict=False):
        if not e.replay:
            c.provenance = Provenance.of_entry(e).differences(here[e.language])
    applying = [(i, c, e) for i, (c, e) in enumerate(zip(checks, entries, strict=False)) if c.applies]
    if not remeasure or not applying:
        return checks
    benches = {i: entry_benchmark(e, override) for i, _, e in applying}  # before anything is built
    meter = _energy_meter([e for _, _, e in applying])
    if not override.bench:  # --run-recorded: every command the TOML makes this check run, before any runs
        for i, c, _e in applying:
            b = benches[i]
            what = f"{c.target} (sm_{c.arch})" if c.arch else c.target
            events.warning(
                f"check: --run-recorded runs, as {toml.name} records them, for {what}: benchmark: "
                f"{shlex.join(b.argv)}; " + (f"VERIFY: {shlex.join(b.verify)}" if b.verify else "no VERIFY")
            )
    _configure(source_dir, root / "plain", user, cmake, toml, False, None, build_timeout)
    tuned = {}
    for i, c, e in applying:  # each entry measured with only its own flags applied
        if len(applying) == 1 and alone:
            tuned[i] = root / "tuned"  # the whole file applies this entry only
            continue
        tuned[i] = root / f"tuned-{i}"
        records = root / f"tuned-{i}.tsv"
        _configure(
            source_dir, tuned[i], user, cmake, _entry_file(e, toml, root / f"file-{i}"), True, records, build_timeout
        )
        if not any(r["applies"] for r in _records(records).values()):
            raise CompileIQError(f"the entry for {c.target} applies with the whole file but not alone in {tuned[i]}")
    for tree in (root / "plain", *tuned.values()):
        _run_step(
            [cmake, "--build", str(tree), "-j", str(jobs or os.cpu_count() or 2)],
            tree,
            f"building {tree}",
            build_timeout,
        )
    for i, c, e in applying:
        c.remeasure = _remeasure(
            e, benches[i], root / "plain", tuned[i], rounds, min_gain, timeout, max_workloads, events, build_dir, meter
        )
    return checks


def _energy_meter(entries: list[FlagsEntry]) -> EnergyMeter | None:
    """The energy counter of the GPU the runs use, when an entry was tuned for energy (its runs are re-measured
    in joules); CompileIQError before anything is built when it cannot be read here."""
    energy = [e for e in entries if e.objective == "energy"]
    if not energy:
        return None
    try:
        gpus = visible_gpus(None)
    except CompileIQError:
        gpus = ()
    meter, why = energy_meter(gpus[0] if gpus else None, energy[0].language)
    if meter is None:
        raise CompileIQError(
            f"the entry for {energy[0].target} was tuned for energy per run and is re-measured with "
            f"the GPU's energy counter, which cannot be read here: {why}"
        )
    return meter


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


def ctest_gpu() -> None:
    """Under CTest with a resource spec (RESOURCE_GROUPS "gpus:1"), the GPU CTest allotted: CTest sets
    CTEST_RESOURCE_GROUP_0_GPUS="id:<id>,slots:<n>"; the check's runs see that GPU only."""
    if not os.environ.get("CTEST_RESOURCE_GROUP_COUNT"):
        return
    allotted = os.environ.get("CTEST_RESOURCE_GROUP_0_GPUS", "")
    ids = re.findall(r"id:([^,;]+)", allotted)
    if not ids:
        return
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if visible:  # the runner's own list (Slurm, Kubernetes): CTest's ids index into it
        ids = [visible[int(i)] if i.isdigit() and int(i) < len(visible) else i for i in ids]
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(ids)


def check_status(checks: list[EntryCheck], strict: bool = False) -> int:
    """The exit status: 1 when an entry has another of its key or a re-measured entry failed (with strict, also
    when an entry does not apply or is stale), else 0."""
    return 1 if any(c.failures(strict) for c in checks) else 0


def checks_document(checks: list[EntryCheck], strict: bool = False) -> dict:
    """`check --json`: the verdict and every entry with its failures."""
    return {
        "passed": not check_status(checks, strict),
        "strict": strict,
        "entries": [{**asdict(c), "failures": c.failures(strict)} for c in checks],
    }


def report_checks(checks: list[EntryCheck], events: EventStream, strict: bool = False) -> int:
    """The findings as events of stage "check" (per entry: whether it applies and why as a stage result, each
    stale reason as a warning, cpu and architectures as info, the re-measurement and each --strict failure as
    stage results); returns `check_status`."""
    for c in checks:
        where = f"{c.target} (sm_{c.arch})" if c.arch else c.target
        who: dict[str, Any] = {"target": c.target, "arch": c.arch}
        events.stage_result(
            "check",
            f"{where}: {'applies' if c.applies else 'does not apply'}: {c.why}",
            applies=c.applies,
            why=c.why,
            **who,
        )
        for s in c.stale:
            events.warning(f"{where}: stale: {s}", stage="check", stale=s, **who)
        if c.cpu:
            events.info(f"{where}: cpu: {c.cpu}", stage="check", cpu=c.cpu, **who)
        if c.archs:
            events.info(f"{where}: architectures: {c.archs}", stage="check", archs=c.archs, **who)
        for d in c.provenance:
            events.note(f"{where}: not as tuned: {d}", stage="check", provenance=d, **who)
        if c.remeasure is not None:
            r = c.remeasure
            per = ", ".join(
                f"'{w['workload']}' {w['speedup']:.4f}x [{w['ci'][0]:.4f}..{w['ci'][1]:.4f}]" for w in r["workloads"]
            )
            note = f"; {r['note']}" if r["note"] else ""
            events.stage_result(
                "check",
                f"{where}: re-measured with {shlex.join(r['benchmark'])} ({r['rounds']} "
                f"interleaved rounds{note}): {per + '; ' if per else ''}"
                f"{'PASS' if r['passed'] else 'FAIL'}: {r['reason']}",
                passed=r["passed"],
                speedup=r["speedup"],
                reason=r["reason"],
                **who,
            )
        for f in (f for f in c.failures(strict) if not f.startswith("re-measured: ")):
            mode = "" if f.startswith("refused: ") else " (--strict)"  # another entry of its key fails without it
            events.stage_result("check", f"{where}: FAIL{mode}: {f}", failure=f, **who)
    return check_status(checks, strict)
