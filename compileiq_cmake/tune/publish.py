"""Tune stage, publish: the winner's TOML entry written (never lost: a fallback beside the trial store), the
tune's result and its final table, the JSON summary (kept in the store, written where --json-summary says)
and the HTML report."""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import shlex
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..decide.validation import untested_flags
from ..flags import acf, portability
from ..flags.acf import acf_path
from ..measure.gpu import host_cpu
from ..measure.provenance import Provenance, collect
from ..model import build_flags
from ..model.errors import CompileIQError
from ..model.events import Log, Recorder, as_stream
from ..model.records import Contribution, Trial, TuneResult, Validation
from ..model.timebox import TimeBox
from ..model.wording import plural
from ..results import summary
from ..results.report import write_report
from ..results.schema import FlagsEntry, identity_of
from ..results.store import TrialStore
from ..results.toml_io import read_entries, write_entry
from . import host_side
from .baseline import Baselines
from .budget import Budget
from .finalists import Decision
from .lines import final_table
from .search_loop import SearchOutcome
from .trial import loss
from .tune_setup import TuneSetup

ACF_FOLDER = "compileiq/acf"  # beside the TOML: the winners' advanced control files, named by their sha256


@dataclass(frozen=True)
class Publish:
    """The publish stage of one tune: `run()` writes what the earlier stages decided and returns the result."""

    setup: TuneSetup
    store: TrialStore
    log: Log
    started: float  # the tune's start (perf_counter)
    base: Baselines
    search: SearchOutcome
    decision: Decision
    events: Recorder | None = None  # the tune's events so far, for the summary (its notes, warnings, stage results)
    budget: Budget | None = None  # the tune's: its box (waits not charged, a resumed run's seconds) and stop token

    def _check(self) -> None:
        """Nothing is written after an interrupt (a suite's Ctrl-C can come while a target publishes)."""
        if self.budget is not None:
            self.budget.check()

    def run(self) -> TuneResult:
        setup, store, log, base, decision = self.setup, self.store, self.log, self.base, self.decision
        spec = setup.spec
        lower = spec.lower_is_better
        trials, timings = self.search.trials, self.search.timings
        winner, contributions = decision.winner, decision.contributions
        toml_path = None
        if winner is not None:
            new = _entry(setup, winner, contributions, len(trials), log, decision.untested)
            self._check()
            # the entry this tune's bank wrote during the search is replaced by its final winner whatever it measured
            change = write_entry(
                spec.output,
                new,
                fallback_dir=setup.state_dir,
                log=log,
                replace=spec.replace or decision.banked is not None,
            )
            if change is not None and change.kept:
                as_stream(log).note(change.message)
            elif change is not None and change.replaces is not None:
                as_stream(log).info(f"{change.message}")
            toml_path = str(spec.output)
        wall = time.perf_counter() - self.started
        fresh = [t for key, t in trials.items() if key not in base.restored]  # measured by this run, not restored
        result = TuneResult(
            spec.target,
            tuple(trials.values()),
            base.baseline,
            winner,
            toml_path,
            wall,
            tuple(
                _notes(
                    setup,
                    base,
                    self.search,
                    fresh,
                    decision,
                    wall,
                    self.budget.box if self.budget is not None else None,
                )
                + _acf_notes(setup, winner)
            ),
            contributions,
            setup.project.language,
        )
        final_table(setup, result, decision.effects, log, restored=len(trials) - len(fresh), needed=self.search.needed)
        document = summary.build(
            setup,
            result,
            effects=decision.effects,
            noise=base.noise,
            paired=bool(base.references),
            min_gain=decision.min_gain,
            speedup_of=lambda t: math.exp(-loss(t, base.base_of(t), lower)) if t.valid else None,
            interval_of=lambda t: summary.trial_interval(t, base.base_of(t), lower),
            finalists=store.load_validations("finalists") or [],
            confirmations=store.load_validations("confirmations") or [],
            timings={
                "wall_seconds": wall,
                "search_seconds": timings.search_seconds,
                "loop_seconds": timings.loop_seconds,
                "finalists_seconds": decision.seconds,
                "time_limit": spec.time_limit,
                "overhead_seconds": timings.overhead,
                "overhead_steps": dict(timings.steps),
                "untested": list(decision.untested),
            },
            per_file=self.search.per_file.as_dict() if self.search.per_file is not None else None,
            events=summary.event_records(self.events) if self.events is not None else None,
            prior=store.load_result("prior"),
        )
        store.save_result("summary", document)
        self._check()
        if spec.json_summary:
            try:
                summary.write(Path(spec.json_summary), document)
            except OSError as exc:  # checked before the tune; the place went away since
                raise CompileIQError(
                    f"could not write the summary {spec.json_summary} ({exc.strerror or exc}); the tune's "
                    f"result is kept: 'compileiq-cmake report -B {spec.build_dir} --json' prints it"
                ) from None
            as_stream(log).info(f"wrote the summary {spec.json_summary}")
        html = setup.state_dir / "report.html"
        self._check()
        problem = write_report(html, document)
        if problem:
            as_stream(log).note(f"no report written ({problem})")
        else:
            as_stream(log).info(f"report: {html}")
        return result


@dataclass(frozen=True)
class BankWrite:
    """The banked winner's entry written at once (tune.bank): the same entry as the final one, with what it
    has not been through yet (ablation, the finalists' stage) in its `untested`."""

    setup: TuneSetup
    log: Log

    def __call__(self, winner: Validation, trials: int) -> bool:
        spec = self.setup.spec
        new = _entry(
            self.setup,
            winner,
            (),
            trials,
            self.log,
            (f"{winner.flagset.describe()}: banked during the search, not ablated yet",),
        )
        change = write_entry(spec.output, new, fallback_dir=self.setup.state_dir, replace=spec.replace, log=self.log)
        if change is not None and change.kept:
            as_stream(self.log).note(f"bank: {change.message}")
            return False
        as_stream(self.log).info(
            f"bank: wrote {spec.output} with {winner.flagset.describe()} "
            f"({winner.geomean_speedup:.4f}x); a later candidate replaces it only through its own validation"
            + (f"; {change.message}" if change is not None and change.replaces is not None else "")
        )
        return True


def unchanged_entry(setup: TuneSetup) -> FlagsEntry | None:
    """The entry of the output for this target that was tuned on exactly what it is now (FlagsEntry.identity,
    as this tune's entry would record it); None when there is none (or the output cannot be read: the tune
    says why when it writes). A replay has no sources: never unchanged."""
    spec = setup.spec
    if setup.replay is not None or not setup.code.sources_sha256 or not spec.output.is_file():
        return None
    try:
        entries = read_entries(spec.output)
    except CompileIQError:
        return None
    project, devices, code = setup.project, setup.devices, setup.code
    now = identity_of(
        spec.target,
        project.language,
        devices.cuda_arch,
        project.toolchain.compiler_id,
        code.sources_sha256,
        code.flags_sha256,
        project.toolchain.version,
        project.build_type,
        devices.device,
        spec.objective,
    )
    return next((e for e in entries if e.identity == now), None)


def _notes(
    setup: TuneSetup,
    base: Baselines,
    search: SearchOutcome,
    fresh: list[Trial],
    decision: Decision,
    wall: float,
    box: TimeBox | None = None,
) -> list[str]:
    """The result's notes: what the search cost, its pace, throttled measurements, the driver's overhead and,
    with --time-limit, the whole tune's time against it and what the box left untested."""
    spec = setup.spec
    trials, timings = search.trials, search.timings
    runs = sum(
        len(m.samples) + len(m.reference) + spec.warmup for t in fresh if t.same_code_as is None for m in t.measurements
    )
    saved = sum((spec.repeats + spec.warmup) * len(spec.workloads) for t in fresh if t.same_code_as is not None)
    notes = []
    shared = sum(1 for t in fresh if t.same_code_as is not None)
    counted = (
        f"{plural(len(trials), 'trial')}: {len(trials) - len(fresh)} restored from the store, {len(fresh)} measured"
        if len(fresh) < len(trials)
        else plural(len(trials), "trial")
    )
    notes.append(
        f"search phase: {counted} in {timings.search_seconds:.1f} s, {plural(runs, 'benchmark run')}"
        + (
            f"; {plural(shared, 'trial')} built the same device code as an earlier one and "
            f"{'was' if shared == 1 else 'were'} not benchmarked "
            f"(about {plural(saved, 'run')} saved)"
            if shared
            else ""
        )
    )
    loop_trials, overhead, runners = timings.loop_trials, timings.overhead, base.runners
    if loop_trials:
        notes.append(
            f"search loop (after the setup and the baseline{'s' if base.per_gpu else ''}): "
            f"{plural(loop_trials, 'trial')} in "
            f"{timings.loop_seconds:.1f} s, {60 * loop_trials / timings.loop_seconds:.1f} trials per minute"
            + (f" on {len(runners)} GPUs" if len(runners) > 1 else "")
        )
    throttled = sum(1 for t in trials.values() for m in t.measurements if m.throttled)
    if throttled:
        notes.append(
            f"warning: {plural(throttled, 'measurement')} {'was' if throttled == 1 else 'were'} taken while the GPU "
            "reported a slowdown "
            "(thermal or power); see 'compileiq-cmake trials'"
        )
    if loop_trials and setup.replay is None:
        per_trial = sum(t.wall_seconds for t in trials.values()) / len(trials)
        parts = [(step, seconds) for step, seconds in timings.steps] + [
            ("rest", max(0.0, overhead - sum(seconds for _, seconds in timings.steps)))
        ]
        notes.append(
            f"driver overhead {1000 * overhead / loop_trials:.0f} ms per trial "
            f"({100 * overhead / loop_trials / per_trial:.1f}% of a trial): "
            + ", ".join(f"{step} {1000 * seconds / loop_trials:.0f} ms" for step, seconds in parts)
        )
    if spec.time_limit is not None:
        waited = box.waited() if box is not None else 0.0
        spent = box.spent_before if box is not None else 0.0
        notes.append(
            f"time box: the whole tune took {wall:.1f} s of --time-limit {spec.time_limit:g} s"
            + (f" ({waited:.1f} s of it waiting for slots other targets held, not charged)" if waited >= 0.05 else "")
            + (f" (and {spent:.0f} s spent by the interrupted run it resumed)" if spent else "")
            + (f"; not tested for lack of time: {'; '.join(decision.untested)}" if decision.untested else "")
        )
    return notes


def _portable_acf(
    flags: tuple[str, ...],
    toml_dir: Path,
    log: Log | None = None,
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Each --apply-controls file of the winner copied beside the TOML as compileiq/acf/<sha256>.acf (with
    NVIDIA's notice in that folder: such files may be shared in binary form only, with it), the flag naming it
    relative to the TOML's directory; with each file's sha256."""
    out, digests = [], []
    for flag in flags:
        path_text = acf_path(flag)
        if path_text is not None:
            data = Path(path_text).read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            copy = acf.store(data, toml_dir / ACF_FOLDER, "the winner").path
            notice = toml_dir / ACF_FOLDER / "NOTICE"
            if not notice.is_file():
                notice.write_text(acf.NOTICE_TEXT, encoding="utf-8")
            rel = os.path.relpath(copy, toml_dir)
            digests.append((rel, digest))
            if log is not None:
                as_stream(log).info(
                    f"advanced control file {digest[:12]} copied to {rel}: NVIDIA's notice applies to it "
                    f'({ACF_FOLDER}/NOTICE: "{acf.NOTICE}"; binary form only, not under an open-source licence)'
                )
            flag = flag[: -len(path_text)] + rel
        out.append(flag)
    return tuple(out), tuple(digests)


def _acf_notes(setup: TuneSetup, winner: Validation | None) -> list[str]:
    """What the Advanced Controls came to: how many control files were searched and the winner's, by short
    sha, with what it changed in the device code (none when the tune had no candidates)."""
    acf_of = setup.tools.acf if setup.tools is not None else None
    if acf_of is None or not acf_of.files:
        return []
    used = [Path(p).stem for p in (acf_path(f) for f in (winner.flagset.flags if winner is not None else ())) if p]
    what = (
        f"the winner's is ACF {used[0][:12]} ({acf_of.changed(used[0]) or 'its changes were not screened'})"
        if used
        else "the winner uses none"
        if winner is not None
        else "no winner"
    )
    source = acf_of.source.label if acf_of.source is not None else "--acf files"
    return [
        f"advanced controls: {plural(len({f.sha256 for f in acf_of.files}), 'control file')} searched at first "
        f"({source}); {what}"
    ]


def _acf_ptxas(setup: TuneSetup) -> str:
    """The ptxas version the tune's control files were made for (the tuned compiler's when not recorded)."""
    acf_of = setup.tools.acf if setup.tools is not None else None
    return (acf_of.ptxas if acf_of is not None and acf_of.ptxas else "") or setup.project.toolchain.version


def _resolve_host_specific(
    setup: TuneSetup, flags: tuple[str, ...], log: Log, answers: portability.Answers
) -> portability.Resolution | None:
    """-march=native and the like, as the compiler resolves them on this host, with the CPU and its ISA
    features (None when no flag is host-specific). Kept literal, with a note, when the compiler cannot say."""
    if not any(portability.is_native(f) for f in flags):
        return None
    cpu = host_cpu()
    try:
        if setup.project.language == "CUDA":
            compiler = host_side.host_compiler_path(setup)
            compiler_id = answers.ask(("kind", compiler), lambda: portability.compiler_kind(compiler))
        else:
            compiler, compiler_id = setup.project.toolchain.path, setup.project.toolchain.compiler_id
        resolution = portability.resolve(flags, compiler, compiler_id, cpu, answers)
    except CompileIQError as exc:
        resolution = portability.Resolution(flags, cpu, (), f"kept as they are ({exc})")
    assert resolution is not None  # (a flag is host-specific)
    if resolution.note:
        as_stream(log).note(f"host-specific flags: {resolution.note}")
    return resolution


def _as_written(flags: tuple[str, ...], written: list[str]) -> tuple[str, ...]:
    """Flags of the searched set as the entry writes them: a host-specific one (-march=native) as the compiler
    resolved it (`written`: every part's written flags), on its file when it was a per-file token."""
    out: list[str] = []
    for token in flags:
        path, flag = build_flags.parse_token(token)
        resolved = portability.host_specific(written) if portability.is_native(flag) else [flag]
        out += [build_flags.source_token(path, f) if path else f for f in resolved]
    return tuple(dict.fromkeys(out))


def _entry(
    setup: TuneSetup,
    winner: Validation,
    contributions: tuple[Contribution, ...],
    n_trials: int,
    log: Log,
    untested: tuple[str, ...] = (),
) -> FlagsEntry:
    """The TOML entry of a winner: its flags as written (--apply-controls paths relative to the TOML,
    host-specific flags resolved), how it was measured, and what the apply checks."""
    spec = setup.spec
    parts = build_flags.split(winner.flagset.flags)
    flags, acf_sha256 = _portable_acf(parts.target, spec.output.parent, log)
    portable = dict(zip(parts.target, flags, strict=False))  # a control file's flag as the TOML names it (relative)
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
        as_stream(log).info(
            f"{shown} recorded as the compiler resolves it on this host ({resolved.cpu}): "
            f"{' '.join(cpu_flags) or '(unresolved)'}{f' and {extra} ISA/cache options' if extra > 0 else ''}, "
            f"with {len(features)} ISA features the build needs; tune --portable leaves such flags out"
        )
    return FlagsEntry(
        untested=untested,
        speedup_from=winner.estimate or "deciding rounds",
        untested_flags=tuple(
            portable.get(f, f) for f in _as_written(untested_flags(winner.flagset, contributions), after)
        ),
        target=spec.target,
        language=setup.project.language,
        arch=setup.devices.cuda_arch,
        compiler_id=setup.project.toolchain.compiler_id,
        compiler_version=setup.project.toolchain.version,
        flags=written,
        acf_sha256=acf_sha256,
        acf_ptxas=_acf_ptxas(setup) if acf_sha256 else "",
        build_type=setup.project.build_type,
        device=setup.devices.device,
        compute_capability=setup.devices.compute_capability,
        metric=spec.metric.label,
        lower_is_better=spec.metric.lower_is_better,
        objective=spec.objective,
        workloads=tuple(shlex.join(w.workload) for w in winner.workloads),
        baseline=tuple(round(statistics.median(w.baseline), 9) for w in winner.workloads),
        tuned=tuple(round(statistics.median(w.candidate), 9) for w in winner.workloads),
        speedup=round(winner.geomean_speedup, 4),
        trials=n_trials,
        date=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        tool_version=__version__,
        sources_sha256=setup.code.sources_sha256,
        headers=setup.code.headers,
        flags_sha256=setup.code.flags_sha256,
        replay=setup.replay is not None,
        speedup_ci=(round(winner.geomean_ci_low, 4), round(winner.geomean_ci_high, 4)),
        workload_speedups=tuple(round(w.speedup, 4) for w in winner.workloads),
        workload_ci=tuple((round(w.ci_low, 4), round(w.ci_high, 4)) for w in winner.workloads),
        p_values=tuple(float(f"{w.p_value:.3g}") for w in winner.workloads),
        checks=spec.checks,
        contributions=tuple(
            {
                "flags": [portable.get(f, f) for f in c.flags],
                "speedup": round(c.speedup, 4),
                "ci": [round(c.ci_low, 4), round(c.ci_high, 4)],
                "kept": c.kept,
                "reason": c.reason,
            }
            for c in contributions
            if math.isfinite(c.speedup)
        ),
        device_lto=parts.device_lto,
        device_link=setup.project.device_link if parts.device_lto else (),
        sources=tuple(sources),
        tuned_cpu=resolved.cpu if resolved else "",
        cpu_features=tuple(sorted(features)),
        arch_scope=spec.arch_scope if setup.project.language == "CUDA" else "all",
        benchmark=bench.relative(bench.argv) if bench else (),
        pass_regex=spec.pass_regex or "",
        verify=bench.relative(bench.verify) if bench else (),
        **_provenance(setup).entry_fields(),
    )


def _provenance(setup: TuneSetup) -> Provenance:
    """Where the tune measured (measure.provenance); nothing for a replay."""
    if setup.replay is not None:
        return Provenance()
    cuda = setup.project.language == "CUDA"
    compiler = (setup.tools.host_compiler if setup.tools is not None else "") if cuda else setup.project.toolchain.path
    return collect(compiler, setup.devices.gpus[0] if cuda and setup.devices.gpus else None)
