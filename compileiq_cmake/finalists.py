"""Tune stage 4, finalists: validation against the baseline, ablation of the best, validation of the minimal
set; every outcome kept in the trial store as soon as it is decided."""

from __future__ import annotations

import hashlib
from typing import Callable

from .records import Contribution, FlagSet, Validation
from .validation import ablate, validate
from .executor import Executor
from .tune_setup import TuneSetup

Log = Callable[[str], None]


def _result_name(kind: str, *parts: object) -> str:
    """The store's name of a validation or ablation result: what was decided, on what, with which threshold."""
    return kind + ":" + hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def validate_and_ablate(setup: TuneSetup, executor: Executor, finalists: list[FlagSet], min_gain: float,
                         log: Log, store=None) -> tuple[Validation | None, tuple[Contribution, ...]]:
    """Validation of the finalists, ablation of the best, validation of the minimal set. Each outcome is kept
    in the trial store as soon as it is decided, so that a rerun (after a kill) does not measure it again."""
    spec = setup.spec
    if not finalists:
        return None, ()
    build, runner = executor.build, executor.runner
    baseline = setup.space.baseline()

    def validated(candidates: list[FlagSet], seed: int) -> list[Validation]:
        name = _result_name("validation", [c.key for c in candidates], min_gain, seed)
        kept = store.load_validations(name) if store is not None else None
        if kept is not None:
            log(f"compileiq: validation of {', '.join(c.describe() for c in candidates)}: restored from the trial store")
            return kept
        results = validate(runner, build, setup.trees, baseline, candidates, min_gain, seed, log)
        if store is not None:
            store.save_validations(name, results)
        return results

    results = validated(finalists, spec.seed)
    for v in results:
        per = ", ".join(f"{w.speedup:.4f}x (p={w.p_value:.2g})" for w in v.workloads)
        log(f"compileiq:   {'accepted' if v.accepted else 'rejected'} {v.flagset.describe()}: "
            f"{v.geomean_speedup:.4f}x [{v.geomean_ci_low:.4f}..{v.geomean_ci_high:.4f}] {per}"
            f"{'; ' + v.reason if v.reason else ''}")
    accepted = sorted((v for v in results if v.accepted), key=lambda v: -v.geomean_speedup)
    if not accepted:
        return None, ()
    best = accepted[0]
    name = _result_name("ablation", best.flagset.key, min_gain, spec.seed + 1)
    kept = store.load_ablation(name) if store is not None else None
    if kept is not None:
        log("compileiq: ablation: restored from the trial store")
        minimal, contributions = kept
    else:
        minimal, contributions = ablate(runner, build, setup.trees, setup.space, best.flagset, min_gain, spec.seed + 1, log)
        if store is not None:
            store.save_ablation(name, minimal, contributions)
    if minimal == best.flagset:
        return best, contributions
    (final,) = validated([minimal], spec.seed + 2)
    log(f"compileiq: minimal flag set {minimal.describe()}: {final.geomean_speedup:.4f}x "
        f"[{final.geomean_ci_low:.4f}..{final.geomean_ci_high:.4f}]{'; ' + final.reason if final.reason else ''}")
    if final.accepted:
        return final, contributions
    log("compileiq: the minimal set did not validate; keeping the full validated winner")
    return best, contributions
