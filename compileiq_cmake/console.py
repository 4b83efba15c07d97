"""What a tune prints: progress lines and the final table."""

from __future__ import annotations

import math
import sys
import time
from typing import Callable

from .records import Trial, TuneResult
from .trial import loss
from .tune_setup import TuneSetup

Log = Callable[[str], None]


def print_line(line: str) -> None:
    print(line, flush=True)


def fmt_eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def progress(setup: TuneSetup, log: Log, trial: Trial, baseline: Trial, trials: dict[str, Trial], started: float) -> None:
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
        f"ETA {fmt_eta(eta)}  {trial.flagset.describe()}")


def final_table(setup: TuneSetup, result: TuneResult, effects, log: Log) -> None:
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
    if effects:
        log("  flag effects over all valid trials (least squares on log time; 95% CI):")
        for e in effects[:6]:
            log(f"    {e.flag:<40} {e.speedup:.3f}x [{e.ci.low:.3f}..{e.ci.high:.3f}] in {e.trials_with} trials")
    if result.contributions:
        log("  ablation of the winner (speedup of keeping each flag, 95% CI):")
        for c in result.contributions:
            log(f"    {' '.join(c.flags):<40} {c.speedup:.4f}x [{c.ci_low:.4f}..{c.ci_high:.4f}] "
                f"{'kept' if c.kept else 'dropped'}: {c.reason}")
    if result.winner is not None:
        w = result.winner
        per = ", ".join(f"{x.speedup:.3f}x [{x.ci_low:.3f}..{x.ci_high:.3f}]" for x in w.workloads)
        log(f"compileiq: winner (re-measured interleaved against the baseline): {w.geomean_speedup:.3f}x "
            f"[95% CI {w.geomean_ci_low:.3f}..{w.geomean_ci_high:.3f}] per workload {per} with {w.flagset.describe()}")
        log(f"compileiq: wrote {result.toml_path}" + (" (REPLAY: a configure never applies it)" if setup.replay else ""))
    else:
        log("compileiq: no significant improvement: no flag set beat the project's own build significantly "
            f"on every workload; no flags written for {spec.target}")
    for note in result.notes:
        log(f"compileiq: {note}")
    sys.stdout.flush()
