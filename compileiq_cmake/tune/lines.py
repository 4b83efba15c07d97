"""The lines a tune says about itself, composed here and emitted through the `log` it is given: one progress
line per trial (with the ETA of the whole tune) and the final table."""

from __future__ import annotations

import math

from ..decide.validation import untested_flags
from ..model import build_flags
from ..model.events import Log, SearchProgress, as_stream
from ..model.records import Trial, TuneResult
from ..model.spec import TuneSpec
from ..model.timebox import TimeBox
from ..model.wording import plural, seconds, untested_line
from ..results.summary import gpu_tune, harmful_effects
from .budget import Budget
from .trial import loss
from .tune_setup import TuneSetup


def fmt_eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def progress(
    setup: TuneSetup,
    log: Log,
    trial: Trial,
    baseline: Trial,
    trials: dict[str, Trial],
    started: float,
    in_flight: str = "",
    budget_trials: int | None = None,
    budget=None,
) -> None:
    """One line per trial: its result (an invalid one with its whole reason), the best so far, the ETA of
    the whole tune (the budget's: the remaining search at the pace so far, or the plan's share, plus the
    finalists' stage of its one cost model) and, during the search, where the other trials are (building,
    measured on which GPU). `budget_trials`: the trials planned (the search's budget, plus the per-file
    stage's once it has started); `budget`: the tune's tune.budget.Budget (None: one made here, unbounded)."""
    spec = setup.spec
    budget_trials = budget_trials or spec.budget
    lower = spec.lower_is_better
    best = min(trials.values(), key=lambda t: loss(t, baseline, lower))
    best_speedup = math.exp(-loss(best, baseline, lower))
    if budget is None:
        budget = Budget(spec, TimeBox(spec.time_limit, started=started))
    search_left, finish = budget.eta(trials, budget_trials)
    if trial.valid:
        value = " / ".join(f"{m:.4g}" for m in trial.medians())
        what = f"{value} ({math.exp(-loss(trial, baseline, lower)):.3f}x)"
    else:
        reason = " ".join(trial.reason.split())  # one line, never cut mid-sentence
        what = f"INVALID {trial.status.value}: {reason}"
    if trial.gpu and trial.same_code_as is None:
        what += f" on GPU {trial.gpu}"
    as_stream(log).progress(
        f"[{len(trials):>3}/{budget_trials}] #{trial.index:<3} {what}  best {best_speedup:.3f}x  "
        f"ETA {fmt_eta(search_left + finish)} (search {fmt_eta(search_left)} + finalists ~{fmt_eta(finish)})  "
        f"{trial.flagset.describe()}" + (f"  [{in_flight}]" if in_flight else ""),
        trial=trial.index,
        trials=len(trials),
        budget=budget_trials,
        best=best_speedup,
        valid=trial.valid,
        payload=SearchProgress(best_speedup),
    )


def untried_line(spec: TuneSpec, baseline: Trial, needed: float = 0.0) -> str:
    """What a tune that measured no flag set says (never "no flag set beat"): that, why if known, and the
    time the budget would need by the baseline's own build and benchmark times. `needed`: the --time-limit
    that one trial and its validation need (the time box's plan), when the box fitted none."""
    build, bench = baseline.build_seconds, baseline.bench_seconds
    if needed and spec.time_limit:
        return (
            f"no flag set was measured within --time-limit {seconds(spec.time_limit)}: after the setup and "
            f"the project's own build, one trial (build {build:.1f} s, benchmark {bench:.1f} s) and the "
            f"validation of its result do not fit; nothing was compared and no flags are written for "
            f"{spec.target}: give at least --time-limit {math.ceil(needed)} (more for a real search)"
        )
    trials = spec.budget - 1
    why = f" within --time-limit {seconds(spec.time_limit)}" if spec.time_limit else ""
    return (
        f"no flag set was measured{why}: only the project's own build was, so nothing was compared "
        f"and no flags are written for {spec.target}; one trial takes about {build + bench:.1f} s here (build "
        f"{build:.1f} s, benchmark {bench:.1f} s), so the {plural(trials, 'trial')} of --budget {spec.budget} "
        f"need about {fmt_eta(trials * bench)} to {fmt_eta(trials * (build + bench))} (builds overlap the "
        "benchmarks when --workers allows) plus the validation of the finalists: give the tune that much time"
    )


def contribution_line(c) -> str:
    """One row of the ablation table; a step the time box left out says "not measured", never "nanx"."""
    measured = f"{c.speedup:.4f}x [{c.ci_low:.4f}..{c.ci_high:.4f}]" if math.isfinite(c.speedup) else "not measured"
    return (
        f"    {' '.join(build_flags.shown(f) for f in c.flags):<40} {measured:<28} "
        f"{'kept' if c.kept else 'dropped'}: {c.reason}"
    )


def final_table(
    setup: TuneSetup, result: TuneResult, effects, log: Log, restored: int = 0, needed: float = 0.0
) -> None:
    """`restored`: trials of an earlier run restored from the store (a resume), counted apart; `needed`: see
    untried_line. The outcome (the winner and the written file, or why there is none) goes out as stage results."""
    spec = setup.spec
    valid = sum(1 for t in result.trials if t.valid)
    log("")
    as_stream(log).info(
        f"{spec.target}: {plural(len(result.trials), 'trial')} ({valid} valid, "
        f"{len(result.trials) - valid} invalid"
        + (f"; {restored} restored from the store" if restored else "")
        + f") in {result.wall_seconds:.1f} s"
    )
    _trial_table(setup, result, effects, log)
    _outcome(setup, result, effects, log, needed)
    for note in result.notes:
        as_stream(log).info(f"{note}")


def _trial_table(setup: TuneSetup, result: TuneResult, effects: list, log: Log) -> None:
    """The best trials as a table, what its numbers mean, and the flag effects."""
    spec = setup.spec
    lower = spec.lower_is_better
    ranked = sorted(result.trials, key=lambda t: loss(t, result.baseline, lower))
    energy = spec.objective == "energy"
    measured = "joules per run" if energy else spec.metric.name
    log(f"  {'#':>4}  {'gain' if energy else 'speedup':>8}  {'median ' + measured + ' per workload':<28}  flags")
    for t in ranked[:8]:
        speed = f"{math.exp(-loss(t, result.baseline, lower)):.3f}x" if t.valid else t.status.value
        metric = " / ".join(f"{m:.4g}" for m in t.medians()) if t.valid else ""
        gpu = f" (GPU {t.gpu})" if t.gpu and len({x.gpu for x in result.trials if x.gpu}) > 1 else ""
        log(f"  {t.index:>4}  {speed:>8}  {metric + gpu:<28}  {t.flagset.describe()}")
    paired = any(m.paired for t in result.trials for m in t.measurements)
    on_gpu = gpu_tune(
        setup.project.language, setup.devices.gpus, (t.gpu for t in result.trials)
    )  # a host (CPU) tune speaks of no GPU
    log(
        ("  gain: the objective is energy (joules per run, the GPU's counter); " if energy else "  ")
        + "speedup: geometric mean over the workloads of "
        + (
            "the median ratio of each run to the project's own build run next to it (paired runs on this noisy machine)"
            if paired
            else "the project's own build's median divided by the trial's"
            + (" (on the GPU the trial ran on)" if on_gpu else "")
        )
        + f"; > 1 is {'less energy' if energy else 'faster'}. median: the trial's own runs, raw; the two differ "
        "when runs were paired" + (" or the GPUs differ" if on_gpu else "")
    )
    if not effects and sum(1 for t in result.trials if t.valid) > 2:
        log("  flag effects: not enough trials for 95% intervals (fewer than 3 more valid trials than flags varied)")
    if effects:
        log(f"  flag effects over all valid trials (least squares on log {'energy' if energy else 'time'}; 95% CI):")
        for e in effects[:6]:
            log(
                f"    {build_flags.shown(e.flag):<40} {e.speedup:.3f}x [{e.ci.low:.3f}..{e.ci.high:.3f}] in "
                f"{plural(e.trials_with, 'trial')}"
            )


def _outcome(setup: TuneSetup, result: TuneResult, effects: list, log: Log, needed: float) -> None:
    """The ablation, and the outcome as stage results: the winner and the written file, or why there is none."""
    spec = setup.spec
    stream = as_stream(log)
    if result.contributions:
        log("  ablation of the winner (speedup of keeping each flag, 95% CI):")
        for c in result.contributions:
            log(contribution_line(c))
    if result.winner is not None:
        w = result.winner
        per = ", ".join(f"{x.speedup:.3f}x [{x.ci_low:.3f}..{x.ci_high:.3f}]" for x in w.workloads)
        stream.stage_result(
            "finalists",
            f"winner (re-measured interleaved against the baseline): {w.geomean_speedup:.3f}x "
            f"[95% CI {w.geomean_ci_low:.3f}..{w.geomean_ci_high:.3f}] per workload {per} with {w.flagset.describe()}",
            flags=list(w.flagset.flags),
            speedup=w.geomean_speedup,
            ci=[w.geomean_ci_low, w.geomean_ci_high],
        )
        untested = untested_flags(w.flagset, result.contributions)
        if untested:
            stream.warning(
                untested_line(untested, harmful_effects(untested, effects)),
                stage="finalists",
                untested_flags=list(untested),
            )
        stream.stage_result(
            "publish",
            f"wrote {result.toml_path}" + (" (REPLAY: a configure never applies it)" if setup.replay else ""),
            toml=result.toml_path,
        )
    elif not any(t.index != result.baseline.index for t in result.trials):
        stream.stage_result("finalists", untried_line(spec, result.baseline, needed), flags=None, measured=0)
    else:
        stream.stage_result(
            "finalists",
            "no significant improvement: no flag set beat the project's own build "
            f"significantly on every workload; no flags written for {spec.target}",
            flags=None,
        )
