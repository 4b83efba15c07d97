"""The machine-readable result of a tune (`tune --json-summary FILE`, `report --json`, and what the HTML
report is drawn from): one JSON document, kept in the trial store as the result "summary".

Schema "compileiq-summary/1" (every key always present; null where it does not apply):

    schema, tool_version, target, language, arch, device, compute_capability, compiler, build_type,
    source_dir, build_dir, date (UTC, ISO 8601), executor, gpus ([label]), replay (bool)
    settings: {budget, seed, workers, repeats, max_repeats, warmup, min_rounds, max_rounds, time_limit}
    metric: {name, pattern, lower_is_better}; workloads: [[arg, ...]]
    objective: "time" (speedups are the metric's) or "energy" (speedups are energy gains: joules per run)
    baseline: {medians: [per workload], noise (relative spread of its runs), paired (bool)}
    min_gain: the smallest gain that counted (fraction)
    winner: null | {flags, speedup, ci: [low, high], workloads: [{workload, speedup, ci, p_value}], source}
            (interleaved re-measurement against the baseline; speedup > 1 is faster; the one number the
            headline, the TOML, `show` and the report quote for the written flags; source: "finalists" or
            "minimal set", the validation it comes from)
    finalists: [{flags, accepted, reason, speedup, ci, workloads}]   (same shape; the validation round)
    confirmations: [... same shape ...]                              (the winner on each other GPU)
    ablation: [{dimension, flags, speedup, ci, kept, reason}]        (speedup of keeping each flag)
    flag_effects: [{flag, speedup, ci, trials_with}]                 (least squares over valid trials)
    trials: [{index, flags, status, reason, speedup, ci, medians, gpu, same_code_as, build_seconds,
              bench_seconds, wall_seconds, binary_bytes, device_bytes, energy_joules, metric_cost, throttled,
              kernels: [{name, registers, spill_bytes, shared_bytes, instructions}]}]
            binary_bytes / device_bytes: the tuned target's files and the device code in them (0: not known);
            energy_joules: the GPU's energy per run (mean of its runs, geometric mean over workloads; null:
            not measured); metric_cost: with --objective energy the metric as a cost (1/metric for a rate)
            speedup: as the console prints it (per workload the ratio of medians, or the median of paired
            ratios; geometric mean over workloads) against the baseline of the GPU the trial ran on;
            ci: 95% interval of the geometric-mean ratio (Welch on log values; paired t for paired runs);
            both null for an invalid trial
    prior: null | {source, confidence, first: [[flag, ...]], values: [{dimension, value, known, predicted, sd,
            p_invalid, measured, measured_invalid}]}   (the learned prior's prediction of each value alone: speedup -
            1, 0.1 is 10% faster, sd relative; and what this tune measured of it, the same way: null when not
            measured; confidence 0..1: below 0.5 the search kept the default order; Advanced Controls files are one
            row per kind, value "<a ptxas control file>", measured as the best file alone)
    notes: [str]; toml: path or null
    events: [{kind, stage, text, data}]   (the tune's notes, warnings and stage results, as its event stream
            carried them up to the summary: kind note | warning | stage; stage baseline | search | finalists ...;
            and kind info with data.prior true: a trial the learned prior proposed)
    timings: {wall_seconds, search_seconds, loop_seconds, finalists_seconds, time_limit (null: none), untested}
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .. import __version__
from ..decide.stats import compare, compare_paired, geomean_comparison
from ..decide.validation import untested_flags
from ..model.records import Contribution, Trial, TuneResult, Validation
from ..model.wording import untested_line

SCHEMA = "compileiq-summary/1"


def gpu_tune(language: str, gpus: Sequence[object], trial_gpus: Iterable[str | None]) -> bool:
    """Whether a tune measured on GPUs: a CUDA target, GPUs given (also simulated ones), or a trial that ran on
    one. A host (CPU) tune's console table and report speak of no GPU (no GPU column, no throttling line, no
    device-code resources). The one rule for both."""
    return language == "CUDA" or bool(gpus) or any(trial_gpus)


def trial_interval(trial: Trial, baseline: Trial, lower_is_better: bool) -> tuple[float, float] | None:
    """95% interval of a trial's geometric-mean speedup over its baseline (None: invalid or too few runs)."""
    if not trial.valid or not trial.measurements:
        return None
    comparisons = []
    for m, b in zip(trial.measurements, baseline.measurements, strict=False):
        if m.paired:
            comparisons.append(compare_paired(m.reference, m.samples, lower_is_better))
        elif len(m.samples) >= 2 and len(b.samples) >= 2:
            comparisons.append(compare(b.samples, m.samples, lower_is_better))
        else:
            return None
    _, ci = geomean_comparison(comparisons)
    return (ci.low, ci.high) if math.isfinite(ci.low) and math.isfinite(ci.high) else None


def _validation(v: Validation) -> dict:
    return {
        "flags": list(v.flagset.flags),
        "accepted": v.accepted,
        "reason": v.reason,
        "speedup": v.geomean_speedup,
        "ci": [v.geomean_ci_low, v.geomean_ci_high],
        "workloads": [
            {
                "workload": list(w.workload),
                "speedup": w.speedup,
                "ci": [w.ci_low, w.ci_high],
                "p_value": w.p_value,
                "rounds": len(w.baseline),
            }
            for w in v.workloads
        ],
    }


def winner_source(winner: Validation, finalists: list[Validation]) -> str:
    """Which measurement the written flag set's numbers come from (the one number every place quotes):
    "finalists" (its row of the finalists' validation) or "minimal set" (validated again after the ablation
    dropped flags: its own rounds, so its numbers differ from the full set's row). A confirmed winner's numbers
    are the confirmation's (winner_numbers); its source is the validation that accepted its flags."""
    if winner.estimate in ("confirmation", "validation and confirmation"):
        return (
            "finalists"
            if any(tuple(v.flagset.flags) == tuple(winner.flagset.flags) for v in finalists)
            else "minimal set"
        )
    same = any(
        tuple(v.flagset.flags) == tuple(winner.flagset.flags)
        and math.isclose(v.geomean_speedup, winner.geomean_speedup, rel_tol=1e-9)
        for v in finalists
    )
    return "finalists" if same else "minimal set"


def _untested(winner: Validation, contributions: tuple[Contribution, ...], effects) -> dict:
    """The written flags no ablation step showed to matter, and the headline's words for them."""
    flags = untested_flags(winner.flagset, contributions)
    return {
        "untested_flags": list(flags),
        "untested_line": untested_line(flags, harmful_effects(flags, effects)) if flags else "",
    }


def harmful_effects(flags, effects) -> dict[str, tuple[float, float, float]]:
    """The flags the search's trials measured as significantly slower with them (flag effects, 95% CI < 1)."""
    return {e.flag: (e.speedup, e.ci.low, e.ci.high) for e in effects if e.flag in flags and e.ci.high < 1.0}


def _contribution(c: Contribution) -> dict:
    return {
        "dimension": c.dimension,
        "flags": list(c.flags),
        "speedup": c.speedup,
        "ci": [c.ci_low, c.ci_high],
        "kept": c.kept,
        "reason": c.reason,
    }


def _metric_cost(t: Trial, spec) -> float | None:
    """With --objective energy, the trial's metric as a cost (lower is better: the metric, or 1/metric for a
    rate), a co-objective of the report; None when time is the objective (the speedup is the metric already)."""
    value = t.metric_per_run() if t.valid and spec.objective == "energy" else None
    if value is None:
        return None
    return value if spec.metric.lower_is_better else 1.0 / value


def build(
    setup,
    result: TuneResult,
    *,
    speedup_of: Callable[[Trial], float | None],
    interval_of: Callable[[Trial], tuple[float, float] | None],
    effects,
    noise: float,
    paired: bool,
    min_gain: float,
    finalists: list[Validation],
    confirmations: list[Validation],
    timings: dict[str, Any],  # seconds, time_limit (None: none), the overhead steps, the untested dimensions
    per_file: dict | None = None,
    events: list[dict] | None = None,
    prior: dict | None = None,
) -> dict:
    """`events`: the tune's notes, warnings and stage results as its event stream carried them (event_records)."""
    spec = setup.spec
    trials = [_trial(t, spec, speedup_of(t), interval_of(t)) for t in sorted(result.trials, key=lambda t: t.index)]
    w = result.winner
    return finite(
        {
            "schema": SCHEMA,
            "tool_version": __version__,
            "target": spec.target,
            "language": setup.project.language,
            "arch": setup.devices.cuda_arch or None,
            "device": setup.devices.device,
            "compute_capability": setup.devices.compute_capability or None,
            "compiler": f"{setup.project.toolchain.compiler_id} {setup.project.toolchain.version}",
            "build_type": setup.project.build_type or None,
            "source_dir": str(spec.source_dir),
            "build_dir": str(spec.build_dir),
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "executor": getattr(spec, "executor", "local"),
            "gpus": [g.device for g in setup.devices.gpus],
            "replay": setup.replay is not None,
            "settings": _settings(spec),
            "metric": {
                "name": spec.metric.name,
                "pattern": spec.metric.label,
                "lower_is_better": spec.metric.lower_is_better,
            },
            "objective": spec.objective,
            "workloads": [list(x) for x in spec.workloads],
            "baseline": {"medians": list(result.baseline.medians()), "noise": noise, "paired": paired},
            "min_gain": min_gain,
            "winner": None
            if w is None
            else {
                **{k: v for k, v in _validation(w).items() if k not in ("accepted", "reason")},
                "source": winner_source(w, finalists),
                "numbers": w.estimate or "deciding rounds",
                **_untested(w, result.contributions, effects),
            },
            "finalists": [_validation(v) for v in finalists],
            "confirmations": [_validation(v) for v in confirmations],
            "ablation": [_contribution(c) for c in result.contributions],
            "flag_effects": [
                {"flag": e.flag, "speedup": e.speedup, "ci": [e.ci.low, e.ci.high], "trials_with": e.trials_with}
                for e in effects
            ],
            "per_file": per_file,  # per_file.Plan.as_dict(): kernel time by file, the files tuned separately
            "prior": prior,  # tune/prior_use.py: the prior's source, first trials and per value predicted vs measured
            "trials": trials,
            "notes": list(result.notes),
            "toml": result.toml_path,
            "events": events or [],
            "timings": {k: round(v, 3) if isinstance(v, float) else v for k, v in timings.items()},
        }
    )


def _trial(t: Trial, spec: Any, speed: float | None, ci: tuple[float, float] | None) -> dict[str, Any]:
    """One trial of the summary: its flags, outcome, speed-up and interval, times, sizes and kernels."""
    return {
        "index": t.index,
        "flags": list(t.flagset.flags),
        "status": t.status.value,
        "reason": t.reason,
        "speedup": speed,
        "ci": list(ci) if ci else None,
        "medians": list(t.medians()) if t.valid else [],
        "gpu": t.gpu or None,
        "same_code_as": t.same_code_as,
        "build_seconds": round(t.build_seconds, 3),
        "bench_seconds": round(t.bench_seconds, 3),
        "wall_seconds": round(t.wall_seconds, 3),
        "binary_bytes": t.binary_bytes,
        "device_bytes": t.device_bytes,
        "energy_joules": t.joules_per_run(),
        "metric_cost": _metric_cost(t, spec),
        "throttled": any(m.throttled for m in t.measurements),
        "kernels": [asdict(k) for k in t.kernels],
    }


def _settings(spec: Any) -> dict[str, Any]:
    """The tune's settings the summary records."""
    return {
        "budget": spec.budget,
        "seed": spec.seed,
        "workers": spec.workers,
        "repeats": spec.repeats,
        "max_repeats": spec.max_repeats,
        "warmup": spec.warmup,
        "min_rounds": spec.min_rounds,
        "max_rounds": spec.max_rounds,
        "time_limit": spec.time_limit,
        "per_file_budget": spec.per_file_budget,
    }


KEPT_EVENTS = ("note", "warning", "stage")  # what of the event stream the summary keeps (progress is the trials),
# and the info lines of the trials the prior proposed (data: prior=True)


def event_records(events) -> list[dict]:
    """The summary's record of a tune's events (model.events.Event) of the KEPT_EVENTS kinds: kind, stage,
    text and the event's data as JSON values (anything else as its text)."""
    return [
        {"kind": e.kind, "stage": e.stage, "text": e.text, "data": json.loads(json.dumps(dict(e.data), default=str))}
        for e in events
        if e.kind in KEPT_EVENTS or e.data.get("prior")
    ]


def finite(value):
    """The document with every non-finite number (an unbounded interval) as null: strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


OWN_MARK = re.compile(rb'\s*\{\s*"schema":\s*"compileiq-(?:summary|suite)/')  # a summary's first key


def written_by_tool(_path: Path, head: bytes) -> bool:
    """Whether a file's first bytes are a summary document this tool wrote (a tune's or a suite's: its "schema"
    key comes first): the only JSON file a --json-summary may replace (system/writable.check_output)."""
    return OWN_MARK.match(head) is not None


def write_whole(path: Path, text: str) -> None:
    """A file written whole or not at all (a temporary file renamed into place): summaries and reports."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no partial file left behind
        raise


def write(path: Path, document: dict) -> None:
    """The document as strict JSON, written whole or not at all."""
    write_whole(path, json.dumps(finite(document), indent=1, allow_nan=False) + "\n")
