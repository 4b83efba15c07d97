"""`compileiq-cmake check --remeasure`, how an applying entry is re-measured: its benchmark (--bench, or with
--run-recorded the one its tune recorded, each command said before anything runs), a tree with only that entry
applied (tuned) and one without the file (plain), built, and rounds of the benchmark on both, interleaved (the
order flipped every round), on the entry's distinct workloads (at most --max-workloads). The entry passes when
no workload is significantly slower and the geometric-mean speedup is significantly above 1 + min gain
(`verdict`); an entry tuned for energy is compared in joules per run, read from the GPU's energy counter."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..decide.stats import Comparison, Interval, auto_min_gain, compare_paired, geomean_comparison, relative_spread
from ..measure.bench import RunOutcome, run_benchmark, run_verify
from ..measure.energy import EnergyMeter, energy_meter, measure_run
from ..measure.gpu import visible_gpus
from ..model.errors import CompileIQError, UsageError
from ..model.events import EventStream
from ..model.records import Status
from ..model.spec import MetricSpec
from ..model.wording import plural
from ..project.file_api import read_codemodel
from .check_report import EntryCheck
from .check_trees import CheckTrees, entry_file, read_records
from .schema import FlagsEntry

REGEX_SECONDS = 2.0  # a regex of the TOML (metric, PASS_REGEX) matched under this time limit per run


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


@dataclass(frozen=True)
class RemeasureOptions:
    """The command line's re-measure options (check's defaults: results/check.py)."""

    override: BenchOverride  # --bench, --metric, ... and --run-recorded
    rounds: int  # interleaved rounds per workload (--rounds)
    min_gain: float | None  # --min-gain (None: from the plain build's noise)
    timeout: float  # seconds per benchmark run (--timeout)
    max_workloads: int  # distinct workloads re-measured per entry at most (--max-workloads)
    jobs: int | None  # each build of the trees (-j; None: the CPUs)


@dataclass(frozen=True)
class _Runs:
    """How one entry's builds are run, per build ("plain", "tuned"): its tree and its benchmark's and VERIFY's
    argv there; `energy`: the runs are measured in joules by `meter`."""

    trees: dict[str, Path]
    argv: dict[str, list[str]]
    verify: dict[str, list[str]]
    bench: Benchmark
    timeout: float
    energy: bool
    meter: EnergyMeter | None


def remeasure_entries(
    applying: list[tuple[int, EntryCheck, FlagsEntry]],
    trees: CheckTrees,
    toml: Path,
    alone: bool,
    options: RemeasureOptions,
    events: EventStream,
    user_build: Path,
) -> None:
    """Each applying entry (its index in the file, its check, the entry) re-measured into its check's
    `remeasure`: every benchmark resolved (and with --run-recorded said) before anything is built, then the
    plain tree and each entry's tuned tree (`alone`: the file holds this entry only, its tuned tree is the
    file's) configured and built."""
    benches = {i: entry_benchmark(e, options.override) for i, _, e in applying}  # before anything is built
    meter = _energy_meter([e for _, _, e in applying])
    if not options.override.bench:  # --run-recorded: every command the TOML makes this check run, before any runs
        for i, c, _e in applying:
            b = benches[i]
            what = f"{c.target} (sm_{c.arch})" if c.arch else c.target
            events.warning(
                f"check: --run-recorded runs, as {toml.name} records them, for {what}: benchmark: "
                f"{shlex.join(b.argv)}; " + (f"VERIFY: {shlex.join(b.verify)}" if b.verify else "no VERIFY")
            )
    root = trees.root
    trees.configure(root / "plain", toml, False, None)
    tuned = {}
    for i, c, e in applying:  # each entry measured with only its own flags applied
        if len(applying) == 1 and alone:
            tuned[i] = root / "tuned"  # the whole file applies this entry only
            continue
        tuned[i] = root / f"tuned-{i}"
        records = root / f"tuned-{i}.tsv"
        trees.configure(tuned[i], entry_file(e, toml, root / f"file-{i}"), True, records)
        if not any(r["applies"] for r in read_records(records).values()):
            raise CompileIQError(f"the entry for {c.target} applies with the whole file but not alone in {tuned[i]}")
    for tree in (root / "plain", *tuned.values()):
        trees.build(tree, options.jobs or os.cpu_count() or 2)
    for i, c, e in applying:
        c.remeasure = _remeasure(
            e,
            benches[i],
            root / "plain",
            tuned[i],
            options.rounds,
            options.min_gain,
            options.timeout,
            options.max_workloads,
            events,
            user_build,
            meter,
        )


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
    runs = _Runs(trees, argv, verify, bench, timeout, energy, meter if energy else None)
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
        samples, failed = _interleaved(runs, words, rounds)
        if failed:  # the plain build passes, the tuned one does not: the entry fails
            return {**doc, "reason": failed}
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
    return _concluded(doc, results, min_gain)


def _interleaved(runs: _Runs, words: tuple[str, ...], rounds: int) -> tuple[dict[str, list[float]], str]:
    """`rounds` rounds of the plain and the tuned build's benchmark on one workload, alternating (the order
    flipped every round; the tune's VERIFY after each build's first run): each build's samples, and why the
    tuned build's benchmark fails ("" when it does not). The plain build's failing is an error."""
    w = shlex.join(words)
    samples: dict[str, list[float]] = {"plain": [], "tuned": []}
    for r in range(rounds):
        for which in ("plain", "tuned") if r % 2 == 0 else ("tuned", "plain"):
            out, joules = _run_measured(
                runs.argv[which] + list(words), runs.trees[which], runs.bench, runs.timeout, runs.meter
            )
            if out.status is Status.OK and r == 0 and runs.verify[which]:  # the tune's VERIFY, after a first run
                checked = run_verify(runs.verify[which], runs.trees[which], runs.timeout)
                out = out if checked.status is Status.OK else checked
            if out.status is not Status.OK and which == "plain":
                raise CompileIQError(
                    f"the plain build's benchmark failed on workload '{w}': {out.reason}; "
                    f"last output line: {out.last_line()}"
                )
            if out.status is not Status.OK:
                return samples, (
                    f"the tuned build's benchmark fails on workload '{w}': {out.reason}"
                    + (f"; last output line: {out.last_line()}" if out.output else "")
                )
            if runs.energy and joules is None:
                raise CompileIQError(f"the GPU's energy counter could not be read around a run of workload '{w}'")
            value = joules if runs.energy else out.value
            assert value is not None  # (a run that passed: its metric; the energy counter: checked above)
            samples[which].append(value)
    return samples, ""


def _concluded(
    doc: dict, results: list[tuple[str, dict[str, list[float]], Comparison]], min_gain: float | None
) -> dict:
    """The re-measure document `doc` with its verdict over every workload's comparison (min gain: `min_gain`,
    else from the plain build's noise)."""
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
