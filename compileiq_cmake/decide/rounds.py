"""The interleaved rounds of a comparison: every variant measured once per workload in a fresh random order
each round (so drift hits all alike), after warm-up rounds that are thrown away, until the caller's test
says the comparison is decided, the time box says no more, or a variant the comparison needs fails."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from .ports import Measures, Tree, Workload

WARMUP = 1  # discarded rounds before the measured ones of a validation, an ablation step or a confirmation


@dataclass(frozen=True)
class Interleaved:
    samples: dict[str, dict[Workload, list[float]]]  # label -> workload -> samples
    failures: dict[str, str]  # label -> reason
    rounds: int
    cut_short: bool = False  # the time box ended the rounds before the comparison was decided


def interleave(
    runner: Measures,
    variants: dict[str, Tree],
    min_rounds: int,
    max_rounds: int,
    seed: int,
    decided: Callable[[dict[str, dict[Workload, list[float]]]], bool],
    required: tuple[str, ...] = (),
    may_continue: Callable[[float], bool] | None = None,
    at: tuple[int, ...] | None = None,
    progress: Callable[[int, float], None] | None = None,
    warmup: int = WARMUP,
) -> Interleaved:
    """Rounds of: for each workload, every variant once, in a fresh random order, after `warmup` rounds whose
    values are discarded (each variant was just re-built: its first run pays cold starts, e.g. the PTX JIT
    or the page cache, that later runs do not; a warm-up run that fails counts). A variant whose run fails
    is out at once (its reason in `failures`), and `decided` sees only the variants still in; the rounds
    end when it says so (after min_rounds), when a `required` variant failed, or when fewer than two
    variants are left to compare. `may_continue(seconds)`: asked before each round after the first with the
    seconds a round took so far (the time box); no more rounds when it says no (`cut_short`). `at`: the
    rounds at which `decided` is asked (a sequential test's looks, fixed in advance); None: every round."""
    rng = random.Random(seed)
    samples: dict[str, dict[tuple[str, ...], list[float]]] = {
        label: {w: [] for w in runner.spec.workloads} for label in variants
    }
    failures: dict[str, str] = {}
    rounds = 0
    cut_short = False
    for _ in range(warmup):
        _round(runner, variants, rng, failures, None)
    if any(label in failures for label in required) or len(variants) - len(failures) < 2:
        return Interleaved(samples, failures, 0)
    started = time.perf_counter()  # the time box's seconds per round: measured rounds only
    for rounds in range(1, max_rounds + 1):
        if rounds > 1 and may_continue is not None and not may_continue((time.perf_counter() - started) / (rounds - 1)):
            rounds -= 1
            cut_short = True
            break
        _round(runner, variants, rng, failures, samples)
        live = {label: s for label, s in samples.items() if label not in failures}
        if progress is not None:  # a round can take a minute: the user hears of each
            progress(rounds, time.perf_counter() - started)
        if any(label in failures for label in required) or len(live) < 2:
            break
        if rounds >= min_rounds and (at is None or rounds in at) and decided(live):
            break
    return Interleaved(samples, failures, rounds, cut_short)


def _round(
    runner: Measures,
    variants: dict[str, Tree],
    rng: random.Random,
    failures: dict[str, str],
    samples: dict[str, dict[Workload, list[float]]] | None,
) -> None:
    """One round: for each workload, every variant still in once, in a fresh random order; a failed run puts
    its variant out (`failures`), a good one's value goes to `samples` (None: a warm-up round, thrown away)."""
    for workload in runner.spec.workloads:
        order = [label for label in variants if label not in failures]
        rng.shuffle(order)
        for label in order:
            res = runner.run(variants[label], workload)
            if not res.ok:
                failures[label] = res.reason
                continue
            if samples is not None:
                assert res.value is not None  # (an ok run has its value)
                samples[label][workload].append(res.value)
