"""The tuning loop: variant trees, baseline, nevergrad search, confirmation of the best against the
baseline, and the TOML. Every trial is stored as soon as it finishes."""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from . import __version__
from .bench import run_benchmark, run_verify
from .cmake_project import VariantSettings, VariantTree
from .errors import CompileIQError
from .file_api import CodeModel, Target, Toolchain
from .flags import FlagSpace, family_for_compiler, load_space
from .gpu import detect_gpu, host_cpu
from .records import BuildResult, Comparison, FlagSet, Measurement, Status, Trial, TuneResult
from .result_file import FlagsEntry, write_entry
from .search import INVALID_LOSS, FlagSearch
from .spec import TuneSpec

Log = Callable[[str], None]
CONFIRM_CANDIDATES = 3


def _print(line: str) -> None:
    print(line, flush=True)


@dataclass(frozen=True)
class BenchCommand:
    """The benchmark (and VERIFY) command, with paths of the user's build tree mapped into a variant tree."""

    argv: tuple[str, ...]
    verify: tuple[str, ...]
    user_build_dir: Path

    def _map(self, arg: str, tree: VariantTree) -> str:
        prefix = str(self.user_build_dir)
        if arg == prefix or arg.startswith(prefix + "/"):
            return str(tree.path) + arg[len(prefix):]
        return arg

    def for_tree(self, tree: VariantTree, workload: tuple[str, ...]) -> list[str]:
        return [self._map(a, tree) for a in self.argv] + list(workload)

    def verify_for_tree(self, tree: VariantTree) -> list[str]:
        return [self._map(a, tree) for a in self.verify]


@dataclass(frozen=True)
class TuneSetup:
    spec: TuneSpec
    state_dir: Path
    trees: tuple[VariantTree, ...]
    target: Target
    language: str
    toolchain: Toolchain
    space: FlagSpace
    cuda_arch: str
    device: str
    compute_capability: str
    build_targets: tuple[str, ...]
    bench: BenchCommand


def _resolve_benchmark(spec: TuneSpec, model: CodeModel, tree: VariantTree) -> tuple[BenchCommand, str | None]:
    """Map the benchmark's first word: a target of the project, a path in the user's build tree, a file,
    or a program on PATH. Returns the command and the target that builds it (if any)."""
    first, rest = spec.benchmark[0], list(spec.benchmark[1:])
    owner: str | None = None
    if first in model.targets and model.targets[first].artifacts:
        owner = first
        exe = str(model.targets[first].artifacts[0])
        first_mapped = str(spec.build_dir) + exe[len(str(tree.path)):] if exe.startswith(str(tree.path)) else exe
    else:
        path = Path(first)
        build_prefix = str(spec.build_dir)
        if path.is_absolute() and (first.startswith(build_prefix + "/")):
            relative = first[len(build_prefix) + 1:]
            found = model.target_owning(tree.path / relative)
            owner = found.name if found else None
            first_mapped = first
        elif path.exists():
            first_mapped = str(path.resolve())
        elif "/" not in first and shutil.which(first):
            first_mapped = first
        else:
            raise CompileIQError(
                f"benchmark command '{first}' not found: it is not a target of the project, a file, "
                "or a program on PATH"
            )
    return BenchCommand(argv=(first_mapped, *rest), verify=spec.verify, user_build_dir=spec.build_dir), owner


def _sources_hash(target: Target, source_dir: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(target.sources):
        try:
            rel = path.relative_to(source_dir)
        except ValueError:
            rel = path
        digest.update(str(rel).encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()


def setup(spec: TuneSpec, log: Log) -> TuneSetup:
    state_dir = spec.build_dir / "compileiq"
    settings, notes = VariantSettings.from_user_tree(spec.source_dir, spec.build_dir, spec.cuda_arch or "")
    for note in notes:
        log(f"compileiq: {note}")
    first = VariantTree(state_dir, "worker-0", settings.cmake)
    model = first.configure(settings, spec.target, "")
    target = model.target(spec.target)
    language = target.primary_language
    if language not in ("CUDA", "CXX", "C"):
        raise CompileIQError(f"target '{spec.target}' compiles no C, C++ or CUDA sources; nothing to tune")
    toolchain = model.toolchains.get(language)
    if toolchain is None:
        raise CompileIQError(f"CMake reported no {language} compiler for this project (CMake >= 3.20 is needed)")
    family = family_for_compiler(language, toolchain.compiler_id)
    device, capability, arch = host_cpu(), "", ""
    if language == "CUDA":
        if spec.cuda_arch:
            arch = spec.cuda_arch
            device, capability = f"(architecture {arch} given on the command line)", f"{arch[:-1]}.{arch[-1]}"
        else:
            gpu = detect_gpu()
            arch = gpu.arch
            device, capability = f"{gpu.name} ({gpu.sm_count} SMs)", "%d.%d" % gpu.compute_capability
        settings = replace(settings, cuda_arch=arch)
    space = load_space(family, toolchain.compiler_id, toolchain.version, spec.include_flags, spec.exclude_flags)
    trees = tuple(VariantTree(state_dir, f"worker-{i}", settings.cmake) for i in range(max(spec.workers, 2)))
    for tree in trees:
        tree.write_flags(spec.target, language, arch, ())
    with ThreadPoolExecutor(max_workers=len(trees)) as pool:
        models = list(pool.map(lambda t: t.configure(settings, spec.target, language), trees))
    bench, owner = _resolve_benchmark(spec, models[0], trees[0])
    if spec.verify or (owner is None and not Path(bench.argv[0]).is_absolute()):
        build_targets: tuple[str, ...] = ("all",)
    elif owner is None:
        build_targets = ("all",) if str(bench.argv[0]).startswith(str(spec.build_dir)) else (spec.target,)
    else:
        build_targets = tuple(dict.fromkeys((spec.target, owner)))
    return TuneSetup(
        spec=spec, state_dir=state_dir, trees=trees, target=target, language=language, toolchain=toolchain,
        space=space, cuda_arch=arch, device=device, compute_capability=capability,
        build_targets=build_targets, bench=bench,
    )


def _build(setup: TuneSetup, tree: VariantTree, flagset: FlagSet) -> BuildResult:
    tree.write_flags(setup.spec.target, setup.language, setup.cuda_arch, flagset.flags)
    jobs = max(1, (os.cpu_count() or 2) // len(setup.trees) or 1)
    result = tree.build(setup.build_targets, jobs=jobs, timeout=max(600.0, setup.spec.timeout))
    if not result.ok:
        return result
    entries = tree.compile_commands(setup.target.sources)
    command = entries[0].get("command", " ".join(entries[0].get("arguments", []))) if entries else ""
    return replace(result, compile_command=command)


def _measure(setup: TuneSetup, tree: VariantTree, rounds: int) -> tuple[Status, str, tuple[Measurement, ...], float]:
    """Run every workload `rounds` times; the first failure ends the trial with its reason."""
    spec, seconds, measurements = setup.spec, 0.0, []
    for workload in spec.workloads:
        samples = []
        for _ in range(rounds):
            outcome = run_benchmark(setup.bench.for_tree(tree, workload), tree.path, spec.metric, spec.pass_regex, spec.timeout)
            seconds += outcome.seconds
            if outcome.status is not Status.OK:
                detail = outcome.output.strip().splitlines()[-1][:200] if outcome.output.strip() else "no output"
                where = f" with '{' '.join(workload)}'" if workload else ""
                return outcome.status, f"{outcome.reason}{where}; last output line: {detail}", tuple(measurements), seconds
            samples.append(outcome.value)
        measurements.append(Measurement(workload=workload, samples=tuple(samples)))
    if spec.verify:
        outcome = run_verify(setup.bench.verify_for_tree(tree), tree.path, spec.timeout)
        seconds += outcome.seconds
        if outcome.status is not Status.OK:
            return outcome.status, outcome.reason, tuple(measurements), seconds
    return Status.OK, "", tuple(measurements), seconds


def _trial(setup: TuneSetup, tree: VariantTree, index: int, flagset: FlagSet, build: BuildResult) -> Trial:
    start = time.perf_counter()
    if not build.ok:
        return Trial(index, flagset, Status.BUILD_FAILED, f"build failed: {build.log_tail}",
                     build_seconds=build.seconds, wall_seconds=build.seconds)
    status, reason, measurements, bench_seconds = _measure(setup, tree, setup.spec.repeats)
    wall = build.seconds + (time.perf_counter() - start)
    return Trial(index, flagset, status, reason, measurements if status is Status.OK else (),
                 build.seconds, bench_seconds, wall, build.compile_command)


def loss(trial: Trial, baseline: Trial, lower_is_better: bool) -> float:
    """Mean log ratio against the baseline over the workloads (negative = better)."""
    if not trial.valid:
        return INVALID_LOSS
    logs = [math.log(t / b) for t, b in zip(trial.medians(), baseline.medians()) if t > 0 and b > 0]
    if len(logs) != len(baseline.medians()):
        return INVALID_LOSS
    mean = sum(logs) / len(logs)
    return mean if lower_is_better else -mean


def _baseline_error(trial: Trial, setup: TuneSetup) -> CompileIQError:
    spec = setup.spec
    if trial.status is Status.BUILD_FAILED:
        return CompileIQError(f"the project's own build of '{spec.target}' fails in the variant tree: {trial.reason}")
    if trial.status is Status.METRIC_MISSING and spec.metric.kind == "regex":
        return CompileIQError(
            f"--metric regex {spec.metric.pattern!r} never matched the benchmark's output with the project's own flags; "
            f"{trial.reason.split('; ', 1)[-1]}"
        )
    if trial.status is Status.RUN_FAILED and ("exit code 127" in trial.reason or "cannot start" in trial.reason):
        return CompileIQError(f"benchmark '{spec.benchmark[0]}' could not be started after the build: {trial.reason}")
    return CompileIQError(f"the benchmark does not pass with the project's own flags: {trial.reason}")


def _speedup(baseline: float, candidate: float, lower_is_better: bool) -> float:
    return baseline / candidate if lower_is_better else candidate / baseline


def confirm(setup: TuneSetup, flagset: FlagSet, log: Log) -> Comparison:
    """Re-build baseline and candidate side by side and measure them interleaved (ABAB...) on every workload."""
    spec = setup.spec
    base_tree, cand_tree = setup.trees[0], setup.trees[1]
    with ThreadPoolExecutor(max_workers=2) as pool:
        builds = list(pool.map(lambda tf: _build(setup, *tf), ((base_tree, setup.space.baseline()), (cand_tree, flagset))))
    if not all(b.ok for b in builds):
        return Comparison(flagset, (), (), (), 0.0, False, "re-build failed")
    rounds = max(5, spec.repeats)
    base_samples: dict[tuple[str, ...], list[float]] = {w: [] for w in spec.workloads}
    cand_samples: dict[tuple[str, ...], list[float]] = {w: [] for w in spec.workloads}
    for r in range(rounds):
        for workload in spec.workloads:
            order = [(base_tree, base_samples), (cand_tree, cand_samples)]
            for tree, sink in (order if r % 2 == 0 else order[::-1]):
                outcome = run_benchmark(setup.bench.for_tree(tree, workload), tree.path, spec.metric, spec.pass_regex, spec.timeout)
                if outcome.status is not Status.OK:
                    who = "baseline" if tree is base_tree else "candidate"
                    return Comparison(flagset, (), (), (), 0.0, False, f"{who} failed on re-measure: {outcome.reason}")
                sink[workload].append(outcome.value)
    base = tuple(Measurement(w, tuple(s)) for w, s in base_samples.items())
    cand = tuple(Measurement(w, tuple(s)) for w, s in cand_samples.items())
    speedups = tuple(_speedup(b.median, c.median, spec.metric.lower_is_better) for b, c in zip(base, cand))
    geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
    slower = [" ".join(w.workload) or "default" for w, s in zip(base, speedups) if s < 1.0]
    if slower:
        return Comparison(flagset, base, cand, speedups, geomean, False, f"slower than the baseline on: {', '.join(slower)}")
    if geomean < 1.0 + spec.min_gain:
        return Comparison(flagset, base, cand, speedups, geomean, False,
                          f"gain {100 * (geomean - 1):.2f}% is below the minimum {100 * spec.min_gain:.2f}%")
    return Comparison(flagset, base, cand, speedups, geomean, True)


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def run_tune(spec: TuneSpec, log: Log = _print) -> TuneResult:
    from .store import TrialStore, TuneLock

    spec = spec.validate()
    started = time.perf_counter()
    state_dir = spec.build_dir / "compileiq"
    fresh_state = not state_dir.exists()
    stored_any = False
    try:
        with TuneLock(state_dir):
            tune_setup = setup(spec, log)
            store = TrialStore(state_dir / "trials.sqlite", spec.identity() + "-" + tune_setup.cuda_arch)
            try:
                result = _search(tune_setup, store, log, started)
                stored_any = True
                return result
            finally:
                stored_any = stored_any or bool(store.load())
                store.close()
    except CompileIQError:
        if fresh_state and not stored_any:
            shutil.rmtree(state_dir, ignore_errors=True)
        raise


def _search(setup: TuneSetup, store, log: Log, started: float) -> TuneResult:
    spec = setup.spec
    lower = spec.metric.lower_is_better
    log(
        f"compileiq: tuning {spec.target} ({setup.language}, {setup.toolchain.compiler_id} {setup.toolchain.version}"
        f"{', sm_' + setup.cuda_arch if setup.cuda_arch else ''}) on {setup.device}; "
        f"flag space {len(setup.space.dimensions)} dimensions, {setup.space.size} points; budget {spec.budget}"
    )
    restored = {t.flagset.key: t for t in store.load()}
    if restored:
        log(f"compileiq: resuming: {len(restored)} finished trials restored from {store.path}")
    baseline_set = setup.space.baseline()
    baseline = restored.get(baseline_set.key)
    if baseline is None:
        baseline = _trial(setup, setup.trees[0], 0, baseline_set, _build(setup, setup.trees[0], baseline_set))
        if not baseline.valid:
            raise _baseline_error(baseline, setup)
        store.save(baseline)
    elif not baseline.valid:
        raise _baseline_error(baseline, setup)
    trials: dict[str, Trial] = {baseline.flagset.key: baseline, **restored}
    search = FlagSearch(setup.space, spec.budget, spec.seed, spec.workers)
    for trial in trials.values():
        search.tell(trial.flagset, loss(trial, baseline, lower))
    _progress(setup, log, baseline, baseline, trials, started)

    overhead = 0.0
    loop_trials = 0
    while len(trials) < spec.budget:
        if spec.time_limit is not None and time.perf_counter() - started > spec.time_limit:
            log(f"compileiq: time limit of {spec.time_limit:.0f} s reached")
            break
        batch: list[FlagSet] = []
        for _ in range(min(spec.workers, spec.budget - len(trials))):
            flagset = search.ask()
            if flagset is not None:
                batch.append(flagset)
        if not batch:
            log("compileiq: every point of the flag space has been tried")
            break
        batch_start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            builds = list(pool.map(lambda pair: _build(setup, *pair), zip(setup.trees, batch)))
        subprocess_seconds = max(b.seconds for b in builds)
        for tree, flagset, build in zip(setup.trees, batch, builds):
            trial = _trial(setup, tree, len(trials), flagset, build)
            subprocess_seconds += trial.bench_seconds
            store.save(trial)
            trials[flagset.key] = trial
            search.tell(flagset, loss(trial, baseline, lower))
            _progress(setup, log, trial, baseline, trials, started)
        overhead += (time.perf_counter() - batch_start) - subprocess_seconds
        loop_trials += len(batch)

    ranked = sorted(
        (t for t in trials.values() if t.valid and not t.flagset.is_baseline),
        key=lambda t: loss(t, baseline, lower),
    )
    threshold = -math.log1p(spec.min_gain)
    candidates = [t for t in ranked if loss(t, baseline, lower) < threshold][:CONFIRM_CANDIDATES]
    winner: Comparison | None = None
    for cand in candidates:
        log(f"compileiq: re-measuring #{cand.index} against the baseline, interleaved: {cand.flagset.describe()}")
        comparison = confirm(setup, cand.flagset, log)
        log(f"compileiq:   {'accepted' if comparison.accepted else 'rejected'}"
            f"{': ' + comparison.reason if comparison.reason else ''} (speedup {comparison.geomean_speedup:.3f}x)")
        if comparison.accepted:
            winner = comparison
            break
    toml_path = None
    if winner is not None:
        entry = _entry(setup, winner, len(trials))
        write_entry(spec.output, entry)
        toml_path = str(spec.output)
    wall = time.perf_counter() - started
    notes = []
    if loop_trials:
        per_trial = sum(t.wall_seconds for t in trials.values()) / len(trials)
        notes.append(f"driver overhead {1000 * overhead / loop_trials:.0f} ms per trial "
                     f"({100 * overhead / loop_trials / per_trial:.1f}% of a trial)")
    result = TuneResult(spec.target, tuple(trials.values()), baseline, winner, toml_path, wall, tuple(notes))
    _final_table(setup, result, log)
    return result


def _entry(setup: TuneSetup, winner: Comparison, n_trials: int) -> FlagsEntry:
    spec = setup.spec
    cache_build_type = VariantSettings.from_user_tree(spec.source_dir, spec.build_dir, "")[0].cache.get("CMAKE_BUILD_TYPE", ("", ""))[1]
    return FlagsEntry(
        target=spec.target, language=setup.language, arch=setup.cuda_arch,
        compiler_id=setup.toolchain.compiler_id, compiler_version=setup.toolchain.version,
        flags=winner.flagset.flags, build_type=cache_build_type, device=setup.device,
        compute_capability=setup.compute_capability, metric=spec.metric.label,
        lower_is_better=spec.metric.lower_is_better,
        workloads=tuple(" ".join(w) for w in spec.workloads),
        baseline=tuple(round(m.median, 9) for m in winner.baseline),
        tuned=tuple(round(m.median, 9) for m in winner.candidate),
        speedup=round(winner.geomean_speedup, 4), trials=n_trials,
        date=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        tool_version=__version__, sources_sha256=_sources_hash(setup.target, spec.source_dir),
    )


def _progress(setup: TuneSetup, log: Log, trial: Trial, baseline: Trial, trials: dict[str, Trial], started: float) -> None:
    spec = setup.spec
    lower = spec.metric.lower_is_better
    best = min(trials.values(), key=lambda t: loss(t, baseline, lower))
    best_speedup = math.exp(-loss(best, baseline, lower))
    elapsed = time.perf_counter() - started
    eta = elapsed / len(trials) * (spec.budget - len(trials))
    if trial.valid:
        value = " / ".join(f"{m:.4g}" for m in trial.medians())
        what = f"{value} ({math.exp(-loss(trial, baseline, lower)):.3f}x)"
    else:
        what = f"INVALID {trial.status.value}: {trial.reason[:80]}"
    log(f"[{len(trials):>3}/{spec.budget}] #{trial.index:<3} {what}  best {best_speedup:.3f}x  "
        f"ETA {_fmt_eta(eta)}  {trial.flagset.describe()}")


def _final_table(setup: TuneSetup, result: TuneResult, log: Log) -> None:
    spec = setup.spec
    lower = spec.metric.lower_is_better
    valid = sum(1 for t in result.trials if t.valid)
    log("")
    log(f"compileiq: {spec.target}: {len(result.trials)} trials ({valid} valid, "
        f"{len(result.trials) - valid} invalid) in {result.wall_seconds:.1f} s")
    ranked = sorted(result.trials, key=lambda t: loss(t, result.baseline, lower))
    log(f"  {'#':>4}  {'speedup':>8}  {'metric (per workload)':<28}  flags")
    for t in ranked[:8]:
        speed = f"{math.exp(-loss(t, result.baseline, lower)):.3f}x" if t.valid else t.status.value
        metric = " / ".join(f"{m:.4g}" for m in t.medians()) if t.valid else ""
        log(f"  {t.index:>4}  {speed:>8}  {metric:<28}  {t.flagset.describe()}")
    if result.winner is not None:
        w = result.winner
        per = ", ".join(f"{s:.3f}x" for s in w.speedups)
        log(f"compileiq: winner (re-measured, interleaved): {w.geomean_speedup:.3f}x ({per}) with "
            f"{w.flagset.describe()}")
        log(f"compileiq: wrote {result.toml_path}")
    else:
        log("compileiq: no flag set beat the project's own build significantly; no flags written for "
            f"{spec.target}")
    for note in result.notes:
        log(f"compileiq: {note}")
    sys.stdout.flush()
