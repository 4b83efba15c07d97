"""Tune stage, publish: the winner's TOML entry (tune.entry) written (never lost: a fallback beside the trial
store), the tune's result and its final table, the JSON summary (kept in the store, written where
--json-summary says) and the HTML report."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from ..flags.acf import acf_path
from ..model.errors import CompileIQError
from ..model.events import Log, Recorder, as_stream
from ..model.records import Trial, TuneResult, Validation
from ..model.timebox import TimeBox
from ..model.wording import plural
from ..results import summary
from ..results.report import write_report
from ..results.schema import FlagsEntry, identity_of
from ..results.store import TrialStore
from ..results.toml_io import read_entries, write_entry
from .baseline import Baselines
from .budget import Budget
from .entry import _entry
from .finalists import Decision
from .lines import final_table
from .search_loop import SearchOutcome
from .trial import loss
from .tune_setup import TuneSetup


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
        setup, log, base, decision = self.setup, self.log, self.base, self.decision
        spec = setup.spec
        trials = self.search.trials
        winner, contributions = decision.winner, decision.contributions
        toml_path = self._write_entry(winner) if winner is not None else None
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
        self._write_documents(result, wall)
        return result

    def _write_entry(self, winner: Validation) -> str:
        """The winner's entry written into the TOML (whose path this returns), what it replaced or kept said."""
        setup, log, decision, spec = self.setup, self.log, self.decision, self.setup.spec
        new = _entry(setup, winner, decision.contributions, len(self.search.trials), log, decision.untested)
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
        return str(spec.output)

    def _write_documents(self, result: TuneResult, wall: float) -> None:
        """The tune's summary (kept in the store, and at --json-summary) and its HTML report."""
        setup, store, log, base, decision = self.setup, self.store, self.log, self.base, self.decision
        spec = setup.spec
        lower = spec.lower_is_better
        timings = self.search.timings
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
        m.runs + (spec.warmup if t.flagset.is_baseline else base.warmup)
        for t in fresh
        if t.same_code_as is None
        for m in t.measurements
    )
    saved = sum((spec.repeats + base.warmup) * len(spec.workloads) for t in fresh if t.same_code_as is not None)
    raced = sum(1 for t in fresh if t.raced and t.same_code_as is None)
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
        + (f"; {plural(raced, 'trial')} raced (runs stopped once out of reach of the best)" if raced else "")
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
