"""The tuning loop: setup (tune_setup), search over trials (trial), finalists (finalists), the TOML, the
console (console). Every trial is stored as soon as it finishes."""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import shlex
import shutil
import statistics
import time
from contextlib import ExitStack
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Callable

from .. import __version__
from ..system.processes import kill_leftovers
from ..model.errors import CompileIQError
from ..measure.gpu import SIMULATE_VARIABLE
from ..measure.runner import Runner
from ..model.records import BuildResult, Contribution, FlagSet, Trial, TuneResult, Validation
from ..results.schema import FlagsEntry, numerics_checked
from ..results.toml_io import check_output_writable, read_entries, write_entry
from ..search.search import FlagSearch
from ..system.writable import check_creatable
from ..model.spec import TuneSpec
from ..decide.stats import auto_min_gain, coarse_metric_warning, flag_effects, relative_spread
from ..ui.console import final_table, print_line, progress
from ..execute.executor import make_executor
from ..decide.finalists import validate_and_ablate
from ..project import build_flags
from . import host_side
from ..search import per_file
from ..flags import portability
from ..results import summary
from ..measure.gpu import host_cpu
from ..execute.pipeline import Pipeline, finished_trial, lookahead
from ..results.report import write_report
from .trial import (baseline_error, loss, measure_more_if_promising, noise_of_pairs,
                    reference_trees, run_trial)
from .setup import FINALISTS, TuneSetup, replay_setup, setup
from ..model.wording import plural

Log = Callable[[str], None]


def run_tune(spec: TuneSpec, log: Log = print_line, cluster=None) -> TuneResult:
    """One tune. `cluster`: (ray_executor.RayCluster, GpuGroup) when the builds and runs go to a Ray cluster's
    nodes and that group's GPUs (ray_executor.run_ray_tune); None: this machine."""
    from ..results.store import TuneLock

    spec = spec.validate()
    check_output_writable(spec.output)  # a result must not be lost at the end for want of a place to write it
    if spec.json_summary:
        check_creatable(Path(spec.json_summary), "--json-summary")
    started = time.perf_counter()
    state_dir = spec.build_dir / "compileiq"
    fresh_state = not state_dir.exists()
    stored_any = False
    try:
        with TuneLock(state_dir):
            killed = kill_leftovers(state_dir / "bench.pid")
            if killed:
                log(f"compileiq: killed {plural(killed, 'benchmark process', 'benchmark processes')} left running by an earlier, killed tune")
            placement = cluster[0].placement(cluster[1]) if cluster else None
            tune_setup = replay_setup(spec, log, placement) if spec.replay else setup(
                spec, log, placement, gpu_here=cluster is None and not os.environ.get(SIMULATE_VARIABLE))
            make = make_executor
            if cluster:
                ray_cluster, group = cluster
                ray_cluster.check_shared(state_dir, tune_setup.tools)
                make = lambda s, pid_file=None: ray_cluster.executor(s, group, lambda s2: make_executor(s2, pid_file))  # noqa: E731
            _check_replacement(tune_setup)
            store = _open_store(state_dir / "trials.sqlite", spec.identity() + "-" + tune_setup.cuda_arch,
                                f"{tune_setup.toolchain.compiler_id} {tune_setup.toolchain.version}",
                                tune_setup.sources_sha256, log, tune_setup.commands_sha256)
            try:
                result = _search(tune_setup, store, log, started, make)
                stored_any = True
                return result
            finally:
                stored_any = stored_any or bool(store.load())
                store.close()
    except CompileIQError as exc:
        if fresh_state and not stored_any:  # nothing earned: no half-made state, but a log the error names stays
            for child in state_dir.iterdir() if state_dir.is_dir() else ():
                if child.name != "logs" or str(child) not in str(exc):
                    shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
            if state_dir.is_dir() and not any(state_dir.iterdir()):
                state_dir.rmdir()
        raise


def _check_replacement(setup: TuneSetup) -> None:
    """Refuse before any GPU time, not after: an entry of this target whose numerics were checked by output
    comparison is not replaced by a tune that compares nothing (unless --replace)."""
    spec = setup.spec
    if spec.replace or {"compare_output", "compare_file"} & set(spec.checks) or not spec.output.is_file():
        return
    key = (spec.target, setup.language, setup.cuda_arch or setup.toolchain.compiler_id)
    old = next((e for e in read_entries(spec.output) if e.key == key), None)
    if old is not None and numerics_checked(old):
        raise CompileIQError(
            f"{spec.output} holds an entry for {spec.target} ({' '.join(old.flags) or 'no flags'}, {old.speedup}x) "
            f"whose numerics were checked ({', '.join(old.checks)}); this tune compares no output: give "
            "--compare-output/--compare-file as well, or --replace to replace it anyway")


def _open_store(path: Path, identity: str, compiler: str, sources_sha256: str, log: Log, commands_sha256: str = ""):
    """The trial store of this tune. When its trials were measured on other sources (the target's files and
    the headers they include), with other compile flags or with another compiler, they are stale: this tune's
    rows move to a store of their own beside it (kept, named in the log; the other tunes' trials stay) and
    this tune starts fresh."""
    from ..results.store import TrialStore

    # the stored key keeps its name "flags_sha256": the hash of the target's compile commands (TuneSetup.commands_sha256)
    code = {"compiler": compiler, "sources_sha256": sources_sha256, "flags_sha256": commands_sha256}
    store = TrialStore(path, identity)
    if store.note:
        log(f"compileiq: {store.note}")
    stored = store.load_result("code")
    if store.load() and stored is not None and stored != code:
        was = stored if isinstance(stored, dict) else {}
        if was.get("compiler") != compiler:
            what = f"the compiler changed ({was.get('compiler')} -> {compiler})"
        elif was.get("sources_sha256") != sources_sha256:
            what = "the target's sources or the headers they include changed"
        else:
            what = "the flags that reach the target's compile commands changed (its build tree was configured anew)"
        aside, moved = store.archive("stale")
        log(f"compileiq: {what} since the stored trials were measured; they are not reused: this tune's "
            f"{plural(moved, 'trial')} {'is' if moved == 1 else 'are'} kept in {aside} (other tunes' trials in {path.name} stay) and it starts fresh")
    store.save_result("code", code)
    return store


def _check_comparison(spec: TuneSpec, baseline: Trial) -> None:
    """An output comparison that compares nothing is no check: the baseline's output must match
    --compare-output and yield numbers (--compare-file: the baseline must write it, with numbers)."""
    if not (spec.compare_output or spec.compare_file):
        return
    empty = [" ".join(m.workload) or "(default)" for m in baseline.measurements if not m.numbers]
    if empty:
        what = (f"--compare-output {spec.compare_output!r} matched no line with numbers in" if spec.compare_output
                else f"--compare-file {spec.compare_file} holds no numbers after")
        raise CompileIQError(f"{what} the output of the project's own build (workload {empty[0]}); nothing would be "
                             "compared: fix the regex or the file name")


def _other_baselines(setup: TuneSetup, runners: dict[str, Runner], baseline: Trial, log: Log,
                     early: dict[str, Future] | None = None) -> dict[str, Trial]:
    """The baseline measured on every other GPU too (GPUs of one model differ by a few percent): each trial is
    compared with the baseline of the GPU it ran on. The first GPU's is the stored one. `early`: those
    measured already, at the same time as the first GPU's (the same build, one run per GPU at a time)."""
    first = setup.gpus[0].device
    baselines = {first: replace(baseline, gpu=first)}
    built = BuildResult(ok=True, seconds=0.0)
    for g in setup.gpus[1:]:
        measured = early[g.device].result() if early and g.device in early else \
            run_trial(runners[g.device], setup, setup.trees[0], 0, baseline.flagset, built, None, log)
        other = replace(measured, gpu=g.device)
        if not other.valid:
            raise CompileIQError(f"the project's own build does not pass on {g.describe()}: {other.reason}; "
                                 "leave that GPU out with --gpus")
        ratio = " / ".join(f"{o / b:.4f}" for o, b in zip(other.medians(), baseline.medians()))
        log(f"compileiq: baseline on {g.describe()}: {' / '.join(f'{m:.4g}' for m in other.medians())} "
            f"({ratio} of GPU {first}'s); each trial is compared with the baseline of the GPU it ran on")
        baselines[g.device] = other
    return baselines


def _search(setup: TuneSetup, store, log: Log, started: float, make=make_executor) -> TuneResult:
    with ExitStack() as resources:  # closed on every path, also when a step raises
        return _search_with(setup, store, log, started, make, resources)


def _search_with(setup: TuneSetup, store, log: Log, started: float, make, resources: ExitStack) -> TuneResult:
    spec = setup.spec
    lower = spec.metric.lower_is_better
    log(
        f"compileiq: tuning {spec.target} ({setup.language}, {setup.toolchain.compiler_id} {setup.toolchain.version}"
        f"{', sm_' + setup.cuda_arch if setup.cuda_arch else ''}) on {setup.device}; "
        f"flag space {len(setup.space.dimensions)} dimensions, {setup.space.size} points; budget {spec.budget}"
    )
    executor = make(setup, pid_file=setup.state_dir / "bench.pid")
    runner = executor.runner
    runners = executor.gpu_runners(setup) if setup.gpus else {}
    if runners:  # the baseline, validation and ablation run on the first GPU
        runner = runners[setup.gpus[0].device]
    restored = {t.flagset.key: t for t in store.load()}
    if restored:
        log(f"compileiq: resuming: {plural(len(restored), 'finished trial')} restored from {store.path}")
    baseline_set = setup.space.baseline()
    baseline = restored.get(baseline_set.key)
    early: dict[str, Future] = {}  # the other GPUs' baselines, measured while the first GPU measures its own
    others = resources.enter_context(ThreadPoolExecutor(len(runners) - 1, thread_name_prefix="compileiq-baseline")) \
        if len(runners) > 1 else None
    if baseline is None:
        built = executor.build(setup.trees[0], baseline_set)
        if others is not None and built.ok:
            early = {g.device: others.submit(run_trial, runners[g.device], setup, setup.trees[0], 0, baseline_set,
                                             BuildResult(ok=True, seconds=0.0), None, log) for g in setup.gpus[1:]}
        baseline = run_trial(runner, setup, setup.trees[0], 0, baseline_set, built, log=log)
        if not baseline.valid:
            if others is not None:
                others.shutdown(wait=True)
            raise baseline_error(baseline, setup)
        store.save(baseline)
    elif not baseline.valid:
        raise baseline_error(baseline, setup)
    _check_comparison(spec, baseline)
    runner.reference.update({m.workload: m.numbers for m in baseline.measurements})
    noise = max(relative_spread(m.samples) for m in baseline.measurements)
    min_gain = spec.min_gain if spec.min_gain is not None else auto_min_gain(noise)
    log(f"compileiq: baseline noise (robust spread of {plural(spec.repeats, 'run')} per workload): {100 * noise:.2f}%; "
        f"smallest gain that counts: {100 * min_gain:.2f}%{'' if spec.min_gain is not None else ' (from the noise)'}")
    first = baseline.measurements[0]
    printed = []
    if len(set(first.samples)) == 1 and spec.metric.kind == "regex" and not restored:  # how were they printed?
        printed = [runner.run(setup.trees[0], first.workload).printed]
    coarse = coarse_metric_warning(list(first.samples), [p for p in printed if p], min_gain)
    if coarse:
        log(f"compileiq: warning: {coarse}")
    references = reference_trees(setup, executor.build, baseline_set, noise, list(runners) or [""], log)
    baselines: dict[str, Trial] = {}
    if len(runners) > 1:
        try:
            baselines = _other_baselines(setup, runners, baseline, log, early)
        finally:
            others.shutdown(wait=True)
        baseline = baselines[setup.gpus[0].device]

    def base_of(trial: Trial) -> Trial:
        """The baseline a trial is compared with: the one measured on the GPU it ran on."""
        return baselines.get(trial.gpu, baseline)

    setup = host_side.with_host_side(setup, runner, spec.excluded_flags, log)  # host time dominates: host flags too
    trials: dict[str, Trial] = {baseline.flagset.key: baseline, **restored}
    search = FlagSearch(setup.space, spec.budget, spec.seed, spec.workers, warm_start=_warm_start(setup, log))
    for trial in trials.values():
        search.tell(trial.flagset, loss(trial, base_of(trial), lower))
    progress(setup, log, baseline, baseline, trials, started)

    def measure(index: int, tree, flagset: FlagSet, build: BuildResult, on: Runner | None,
                known: dict[str, Trial]) -> Trial:
        """A built trial measured on `on` (None for a failed build: nothing runs), with more runs when close
        to the best of the trials finished when it was submitted."""
        if on is None:
            return run_trial(runner, setup, tree, index, flagset, build, None, log)
        reference = references.get(on.gpu.device if on.gpu is not None else "")  # this GPU's paired build
        trial = run_trial(on, setup, tree, index, flagset, build, reference, log)
        trial = replace(trial, gpu=on.gpu.device) if len(runners) > 1 else trial
        floor = noise
        if reference is not None:  # once 3 paired trials show it, the noise pairing leaves
            paired, n = noise_of_pairs(known.values())
            floor = paired if n >= 3 else noise
        return measure_more_if_promising(on, setup, tree, trial, base_of, known, floor, reference)

    overhead = 0.0
    loop_trials = 0
    loop_started = time.perf_counter()
    measuring = list(runners.values()) if len(runners) > 1 else [runner]
    per_file_plan: per_file.Plan | None = None
    with Pipeline(setup.trees[:spec.workers], executor.build, measuring, measure, log) as pipeline:
        exhausted = stopped = False
        per_file_due = spec.per_file_budget > 0
        per_file_possible = per_file_due and setup.language == "CUDA" and len(setup.target.sources_in("CUDA")) > 1
        budget = spec.budget
        next_index = len(trials)
        while True:
            ahead = lookahead(trials.values(), len(measuring), spec.workers)  # asks as late as the GPUs allow
            while not (exhausted or stopped) and pipeline.has_free_tree and pipeline.pending < ahead \
                    and len(trials) + pipeline.pending < budget:
                if spec.time_limit is not None and time.perf_counter() - started > spec.time_limit:
                    log(f"compileiq: time limit of {spec.time_limit:.0f} s reached")
                    stopped = True
                    break
                flagset = search.ask()
                if flagset is None:
                    exhausted = True
                    break
                pipeline.submit(next_index, flagset, trials)
                next_index += 1
            if not pipeline.pending:
                if per_file_due and not stopped:  # the global search is over: per-file flags on top of its best
                    per_file_due = False
                    if exhausted:
                        log("compileiq: every point of the flag space has been tried")
                    per_file_plan = per_file.plan(setup, setup.trees[0], executor.build, runner, trials,
                                                  lambda t: loss(t, base_of(t), lower), spec.per_file_budget, log)
                    if per_file_plan is not None and per_file_plan.proposals:
                        store.save_result("per_file", per_file_plan.as_dict())
                        search = per_file.Proposals(list(per_file_plan.proposals))
                        budget = len(trials) + len(search)
                        exhausted = False
                        continue
                    exhausted = False  # said above
                elif per_file_due and per_file_possible:
                    log("compileiq: note: per-file stage skipped: the time limit was reached during the search")
                break
            done = pipeline.next()
            trial = finished_trial(done)
            store.save(trial)
            trials[trial.flagset.key] = trial
            search.tell(trial.flagset, loss(trial, base_of(trial), lower))
            progress(setup, log, trial, base_of(trial), trials, started, pipeline.in_flight.describe(),
                     budget + (spec.per_file_budget if per_file_due and per_file_possible else 0))
            overhead += done.driver_seconds
            loop_trials += 1
        if exhausted and not isinstance(search, per_file.Proposals):
            log("compileiq: every point of the flag space has been tried")

    search_seconds = time.perf_counter() - started
    loop_seconds = time.perf_counter() - loop_started
    fresh = [t for key, t in trials.items() if key not in restored]  # measured by this run, not restored
    runs = sum(len(m.samples) + len(m.reference) + spec.warmup
               for t in fresh if t.same_code_as is None for m in t.measurements)
    saved = sum((spec.repeats + spec.warmup) * len(spec.workloads) for t in fresh if t.same_code_as is not None)
    effects = flag_effects([(t.flagset.flags, loss(t, base_of(t), lower)) for t in trials.values() if t.valid])
    store.save_result("flag_effects", [
        {"flag": e.flag, "speedup": e.speedup, "ci": [e.ci.low, e.ci.high], "trials_with": e.trials_with} for e in effects
    ])
    ranked = sorted((t for t in trials.values() if t.valid and not t.flagset.is_baseline),
                    key=lambda t: (loss(t, base_of(t), lower), len(t.flagset.flags)))
    finalists: list[FlagSet] = []
    codes = {baseline.fingerprint} - {""}
    for t in ranked:  # one flag set per device code (the one with the fewest flags), none with the baseline's code
        if loss(t, base_of(t), lower) >= 0 or len(finalists) == FINALISTS:
            break
        if t.fingerprint and t.fingerprint in codes:
            continue
        codes.add(t.fingerprint)
        finalists.append(t.flagset)
    if references and spec.min_gain is None:
        paired_noise, n = noise_of_pairs(trials.values())
        if n:
            min_gain = auto_min_gain(paired_noise)
            log(f"compileiq: noise of paired runs (median over {plural(n, 'trial')}): {100 * paired_noise:.2f}%; "
                f"smallest gain that counts: {100 * min_gain:.2f}%")
    confirm = tuple(r for dev, r in runners.items() if dev != setup.gpus[0].device) if len(runners) > 1 else ()
    finalists_started = time.perf_counter()
    winner, contributions = validate_and_ablate(setup, executor.build, runner, finalists, min_gain, log, store, confirm)
    finalists_seconds = time.perf_counter() - finalists_started
    toml_path = None
    if winner is not None:
        new = _entry(setup, winner, contributions, len(trials), log)
        change = write_entry(spec.output, new, fallback_dir=setup.state_dir, replace=spec.replace, log=log)
        if change is not None and change.replaces is not None:
            log(f"compileiq: {change.message}")
        toml_path = str(spec.output)
    wall = time.perf_counter() - started
    notes = []
    shared = sum(1 for t in fresh if t.same_code_as is not None)
    counted = (f"{plural(len(trials), 'trial')}: {len(trials) - len(fresh)} restored from the store, "
               f"{len(fresh)} measured" if len(fresh) < len(trials) else plural(len(trials), "trial"))
    notes.append(f"search phase: {counted} in {search_seconds:.1f} s, {plural(runs, 'benchmark run')}"
                 + (f"; {plural(shared, 'trial')} built the same device code as an earlier one and {'was' if shared == 1 else 'were'} not benchmarked "
                    f"(about {plural(saved, 'run')} saved)" if shared else ""))
    if loop_trials:
        notes.append(f"search loop (after the setup and the baseline{'s' if baselines else ''}): {plural(loop_trials, 'trial')} in "
                     f"{loop_seconds:.1f} s, {60 * loop_trials / loop_seconds:.1f} trials per minute"
                     + (f" on {len(runners)} GPUs" if len(runners) > 1 else ""))
    throttled = sum(1 for t in trials.values() for m in t.measurements if m.throttled)
    if throttled:
        notes.append(f"warning: {plural(throttled, 'measurement')} {'was' if throttled == 1 else 'were'} taken while the GPU reported a slowdown "
                     "(thermal or power); see 'compileiq-cmake trials'")
    if loop_trials and setup.replay is None:
        per_trial = sum(t.wall_seconds for t in trials.values()) / len(trials)
        notes.append(f"driver overhead {1000 * overhead / loop_trials:.0f} ms per trial "
                     f"({100 * overhead / loop_trials / per_trial:.1f}% of a trial)")
    result = TuneResult(spec.target, tuple(trials.values()), baseline, winner, toml_path, wall, tuple(notes),
                        contributions, setup.language)
    final_table(setup, result, effects, log, restored=len(trials) - len(fresh))
    document = summary.build(
        setup, result, effects=effects, noise=noise, paired=bool(references), min_gain=min_gain,
        speedup_of=lambda t: math.exp(-loss(t, base_of(t), lower)) if t.valid else None,
        interval_of=lambda t: summary.trial_interval(t, base_of(t), lower),
        finalists=store.load_validations("finalists") or [], confirmations=store.load_validations("confirmations") or [],
        timings={"wall_seconds": wall, "search_seconds": search_seconds, "loop_seconds": loop_seconds,
                 "finalists_seconds": finalists_seconds},
        per_file=per_file_plan.as_dict() if per_file_plan is not None else None)
    store.save_result("summary", document)
    if spec.json_summary:
        try:
            summary.write(Path(spec.json_summary), document)
        except OSError as exc:  # checked before the tune; the place went away since
            raise CompileIQError(f"could not write the summary {spec.json_summary} ({exc.strerror or exc}); the tune's "
                                 f"result is kept: 'compileiq-cmake report -B {spec.build_dir} --json' prints it") from None
        log(f"compileiq: wrote the summary {spec.json_summary}")
    html = setup.state_dir / "report.html"
    problem = write_report(html, document)
    log(f"compileiq: report: {html}" if not problem else f"compileiq: note: no report written ({problem})")
    return result


def _warm_start(setup: TuneSetup, log: Log) -> tuple[FlagSet, ...]:
    """Flag sets of earlier tunes (compileiq.toml files) that fit this space, tried first by the search."""
    seeds: list[FlagSet] = []
    for path in setup.spec.warm_start:
        for entry in read_entries(Path(path)):
            if entry.language != setup.language:
                continue
            known = [f for f in entry.flags if any(f in v for d in setup.space.dimensions for v in d.values)]
            try:
                seeds.append(setup.space.flagset_from_flags(known))
            except CompileIQError:
                continue
            if len(known) < len(entry.flags):
                log(f"compileiq: warm start from {entry.target}: {plural(len(entry.flags) - len(known), 'flag')} outside this space ignored")
    if seeds:
        log(f"compileiq: warm start: {plural(len(seeds), 'flag set')} from earlier tunes {'is' if len(seeds) == 1 else 'are'} tried first")
    return tuple(dict.fromkeys(seeds))


def _portable_acf(flags: tuple[str, ...], toml_dir: Path) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """--apply-controls paths as the TOML records them: relative to its directory, each with its sha256."""
    out, digests = [], []
    for flag in flags:
        if flag.startswith("--apply-controls="):
            path = Path(flag.split("=", 1)[1])
            rel = os.path.relpath(path, toml_dir)
            digests.append((rel, hashlib.sha256(path.read_bytes()).hexdigest()))
            flag = f"--apply-controls={rel}"
        out.append(flag)
    return tuple(out), tuple(digests)


def _resolve_host_specific(setup: TuneSetup, flags: tuple[str, ...], log: Log,
                           answers: portability.Answers) -> portability.Resolution | None:
    """-march=native and the like, as the compiler resolves them on this host, with the CPU and its ISA
    features (None when no flag is host-specific). Kept literal, with a note, when the compiler cannot say.
    `answers`: what the compiler said for the entry's other parts (asked once)."""
    if not any(portability.is_native(f) for f in flags):
        return None
    cpu = host_cpu()
    try:
        if setup.language == "CUDA":
            compiler = host_side.host_compiler_path(setup)
            compiler_id = answers.ask(("kind", compiler), lambda: portability.compiler_kind(compiler))
        else:
            compiler, compiler_id = setup.toolchain.path, setup.toolchain.compiler_id
        resolution = portability.resolve(flags, compiler, compiler_id, cpu, answers)
    except CompileIQError as exc:
        resolution = portability.Resolution(flags, cpu, (), f"kept as they are ({exc})")
    if resolution.note:
        log(f"compileiq: note: host-specific flags: {resolution.note}")
    return resolution


def _entry(setup: TuneSetup, winner: Validation, contributions: tuple[Contribution, ...], n_trials: int,
           log: Log = print_line) -> FlagsEntry:
    spec = setup.spec
    parts = build_flags.split(winner.flagset.flags)
    flags, acf_sha256 = _portable_acf(parts.target, spec.output.parent)
    bench = setup.bench if setup.replay is None else None  # how it was measured, for check --remeasure
    answers = portability.Answers()  # the compiler asked once for all parts
    resolved = _resolve_host_specific(setup, flags, log, answers)
    written = resolved.flags if resolved else flags
    sources = []
    features: set[str] = set(resolved.features) if resolved else set()
    before, after = list(flags), list(written)  # every part's flags as searched and as written
    for path, own in parts.sources:
        part = _resolve_host_specific(setup, own, log, answers)
        resolved = resolved or part
        features |= set(part.features) if part else set()
        sources.append({"path": path, "flags": list(part.flags if part else own)})
        before += own
        after += part.flags if part else own
    if resolved is not None:
        shown = " ".join(dict.fromkeys(f for f in before if portability.is_native(f)))
        cpu_flags = portability.host_specific(after)
        extra = len(after) - len(before) + sum(1 for f in before if portability.is_native(f)) - len(cpu_flags)
        cpu_flags = list(dict.fromkeys(cpu_flags))  # shown once, also when several parts had them
        log(f"compileiq: {shown} recorded as the compiler resolves it on this host ({resolved.cpu}): "
            f"{' '.join(cpu_flags) or '(unresolved)'}{f' and {extra} ISA/cache options' if extra > 0 else ''}, "
            f"with {len(features)} ISA features the build needs; tune --portable leaves such flags out")
    return FlagsEntry(
        target=spec.target, language=setup.language, arch=setup.cuda_arch,
        compiler_id=setup.toolchain.compiler_id, compiler_version=setup.toolchain.version,
        flags=written, acf_sha256=acf_sha256, build_type=setup.build_type, device=setup.device,
        compute_capability=setup.compute_capability, metric=spec.metric.label,
        lower_is_better=spec.metric.lower_is_better,
        workloads=tuple(shlex.join(w.workload) for w in winner.workloads),
        baseline=tuple(round(statistics.median(w.baseline), 9) for w in winner.workloads),
        tuned=tuple(round(statistics.median(w.candidate), 9) for w in winner.workloads),
        speedup=round(winner.geomean_speedup, 4), trials=n_trials,
        date=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        tool_version=__version__, sources_sha256=setup.sources_sha256, headers=setup.headers,
        flags_sha256=setup.flags_sha256,
        replay=setup.replay is not None,
        speedup_ci=(round(winner.geomean_ci_low, 4), round(winner.geomean_ci_high, 4)),
        workload_speedups=tuple(round(w.speedup, 4) for w in winner.workloads),
        workload_ci=tuple((round(w.ci_low, 4), round(w.ci_high, 4)) for w in winner.workloads),
        p_values=tuple(float(f"{w.p_value:.3g}") for w in winner.workloads), checks=spec.checks,
        contributions=tuple(
            {"flags": list(c.flags), "speedup": round(c.speedup, 4), "ci": [round(c.ci_low, 4), round(c.ci_high, 4)],
             "kept": c.kept, "reason": c.reason}
            for c in contributions if math.isfinite(c.speedup)
        ),
        device_lto=parts.device_lto, sources=tuple(sources),
        tuned_cpu=resolved.cpu if resolved else "", cpu_features=tuple(sorted(features)),
        arch_scope=spec.arch_scope if setup.language == "CUDA" else "all",
        benchmark=bench.relative(bench.argv) if bench else (), pass_regex=spec.pass_regex or "",
        verify=bench.relative(bench.verify) if bench else (),
    )
