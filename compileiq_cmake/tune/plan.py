"""The plan of a time-boxed tune: from what a build and a benchmark run cost (measured by the baseline, refined
by every trial), how much of --time-limit the search may use and how the finalists' stage (validation,
ablation, the minimal set's validation, confirmation on other GPUs) is sized to fit what is left. Pure
arithmetic: the stages ask it, the clock is model.timebox.TimeBox."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..decide.rounds import WARMUP
from ..model.records import Trial
from ..model.spec import TuneSpec
from ..model.wording import plural

WRITE_SECONDS = 2.0  # the TOML, the summary and the report
ROUNDS_FLOOR = 3  # fewest interleaved validation rounds a paired comparison is decided on (wider interval)
NO_CONFIRMATION = "the winner not confirmed: its numbers are those of the rounds that accepted it (a little optimistic)"
FINISH_SHARE = 0.5  # at most this share of the time left after the baseline is reserved for the finalists


@dataclass(frozen=True)
class Costs:
    """Seconds per unit of work, as measured so far."""

    build: float  # one build of the target in a variant tree
    run: float  # one benchmark run of one workload (start-up included)
    workloads: int = 1
    warmup: int = 1
    repeats: int = 3
    workers: int = 1  # builds at once
    gpus: int = 1  # runs at once (search trials; validation runs on one GPU)
    paired: bool = False  # each measured run is next to a run of the project's own build (warm-ups are not)
    observed: float = 0.0  # the median wall seconds of the search trials so far, at their normal runs
    raced: float | None = None  # measured runs per workload of a search trial so far, racing counted (mean)
    # the winner's confirmations on every GPU at the same time (decide/confirmation.py); False: one GPU after
    # another (a --compare-file the benchmark writes into the tree they share)
    confirm_at_once: bool = True

    def trial(self) -> float:
        """Wall seconds one search trial adds: its build and runs (with several workers the builds overlap
        the runs and the slower of the two sets the pace), and never less than the trials so far took at
        their normal runs (the extra runs of a promising trial are not what the next trial costs). The runs
        are `repeats`, or the mean the search's trials got so far when racing stopped some early."""
        repeats = self.repeats if self.raced is None else min(self.repeats, self.raced)
        runs = (self.warmup + repeats * (2 if self.paired else 1)) * self.workloads * self.run
        if self.workers <= 1:
            formula = self.build + runs
        else:
            formula = max(self.build / self.workers, runs / self.gpus)
        return max(formula, self.observed / max(1, min(self.workers, self.gpus)) if self.workers > 1 else self.observed)

    def builds(self, n: int) -> float:
        return math.ceil(n / max(1, self.workers)) * self.build

    def validation(self, candidates: int, rounds: int) -> float:
        """Candidates and the baseline re-built, then the warm-up round and `rounds` interleaved rounds over
        every workload."""
        if candidates <= 0:
            return 0.0
        return self.builds(candidates + 1) + (rounds + WARMUP) * self.workloads * (candidates + 1) * self.run

    def round(self, variants: int) -> float:
        """One interleaved round of `variants` builds over every workload."""
        return self.workloads * variants * self.run


@dataclass(frozen=True)
class FinishPlan:
    """How the finalists' stage is sized."""

    finalists: int  # validated against the baseline (0: nothing can be validated)
    rounds: int  # interleaved rounds at least (fewer than asked: a wider interval)
    ablation_steps: int  # removals tried, in order of expected contribution (the least first)
    confirmations: int  # other GPUs the winner is confirmed on
    seconds: float  # planned
    cut: tuple[str, ...] = ()  # what the box left out, one phrase each
    confirm: bool = True  # the winner's numbers from a confirmation (False: from the rounds that decided it)

    def describe(self) -> str:
        if self.finalists == 0:
            return "no finalist fits"
        parts = [f"{self.finalists} finalist{'s' if self.finalists != 1 else ''} x {self.rounds} rounds"]
        parts.append(
            f"ablation of up to {self.ablation_steps} flag{'s' if self.ablation_steps != 1 else ''}"
            if self.ablation_steps
            else "no ablation"
        )
        if self.confirmations:
            parts.append(f"confirmed on {self.confirmations} other GPU{'s' if self.confirmations != 1 else ''}")
        return ", ".join(parts)


def finish_cost(
    costs: Costs, finalists: int, rounds: int, ablation_steps: int, confirmations: int, confirm: bool = True
) -> float:
    """Seconds of the finalists' stage: validation, ablation steps (each: the set with and without, re-built
    and interleaved), the minimal set's validation when ablation may drop something, the winner's
    confirmation (the rounds whose numbers are written; `confirm`) and the confirmations on other GPUs
    (confirmation_cost), and the write."""
    if finalists <= 0:
        return WRITE_SECONDS
    seconds = costs.validation(finalists, rounds) + confirmation_cost(costs, rounds, confirmations, confirm)
    if ablation_steps:
        seconds += ablation_steps * costs.validation(1, rounds) + costs.validation(1, rounds)
    return seconds + WRITE_SECONDS


def confirmation_cost(costs: Costs, rounds: int, confirmations: int, confirm: bool = True) -> float:
    """Seconds of the winner's confirmation (`confirm`) and of its validation on `confirmations` other GPUs:
    one validation when they run at the same time, one each when they take turns."""
    one = costs.validation(1, rounds)
    if costs.confirm_at_once:
        return one if confirm or confirmations else 0.0
    return (int(confirm) + confirmations) * one


def least_finish(costs: Costs, min_rounds: int) -> float:
    """The least finalists' stage that still decides anything: one candidate validated at the fewest rounds,
    and the write (what one more trial must leave room for)."""
    return finish_cost(costs, 1, min(ROUNDS_FLOOR, min_rounds), 0, 0, confirm=False)


def plan_finish(
    seconds: float, costs: Costs, finalists: int, min_rounds: int, flags: int, confirmations: int = 0
) -> FinishPlan:
    """The largest finalists' stage that fits in `seconds`: the asked one if it fits; else, in this order,
    fewer finalists (2, then 1), no confirmation of the winner (its numbers are then the deciding rounds',
    marked as such), fewer ablation steps (down to none), fewer rounds (down to ROUNDS_FLOOR), no
    confirmation on other GPUs. `flags`: the ablation steps the winner may need (its non-default flags)."""
    floor = min(ROUNDS_FLOOR, min_rounds)
    ladder: list[tuple[int, int, int, int, bool]] = [(finalists, min_rounds, flags, confirmations, True)]
    for f in range(min(finalists, 2), 0, -1):
        ladder.append((f, min_rounds, flags, confirmations, True))
    for a in range(flags, -1, -1):
        ladder.append((1, min_rounds, a, confirmations, False))
    for r in range(min_rounds - 1, floor - 1, -1):
        ladder.append((1, r, 0, confirmations, False))
    ladder.append((1, floor, 0, 0, False))
    for f, r, a, c, confirm in ladder:
        confirm = confirm or (costs.confirm_at_once and c > 0)  # (beside the other GPUs' it costs nothing more)
        cost = finish_cost(costs, f, r, a, c, confirm)
        if cost <= seconds:
            cut = _cut(finalists, min_rounds, flags, confirmations, f, r, a, c) + (
                () if confirm else (NO_CONFIRMATION,)
            )
            return FinishPlan(f, r, a, c, cost, cut, confirm)
    return FinishPlan(0, 0, 0, 0, WRITE_SECONDS, ("every finalist: not one validation fits in what is left",))


def _cut(f0: int, r0: int, a0: int, c0: int, f: int, r: int, a: int, c: int) -> tuple[str, ...]:
    cut = []
    if f < f0:
        cut.append(f"{f0 - f} of {f0} finalists not validated")
    if r < r0:
        cut.append(f"validation with {r} rounds instead of {r0} (a wider interval)")
    if a < a0:
        cut.append(f"{a0 - a} of {a0} flags not ablated (kept without a test that they matter)")
    if c < c0:
        cut.append(f"the winner not confirmed on {c0 - c} other GPU{'s' if c0 - c != 1 else ''}")
    return tuple(cut)


@dataclass(frozen=True)
class Plan:
    """The whole tune's plan at one moment: what is done, the search's end, the finalists' stage."""

    limit: float | None
    elapsed: float
    search_seconds: float  # the search may still use this many seconds (inf without a limit)
    search_trials: int  # about this many trials at the pace so far (-1: not bounded by time)
    finish: FinishPlan
    needed: float = 0.0  # when nothing fits: the --time-limit that one trial and its validation would need

    def search_open(self, pending: int, costs: Costs) -> bool:
        """Whether another trial may start, with `pending` trials already under way (their work counts)."""
        return math.isinf(self.search_seconds) or (
            self.search_seconds > 0
            and self.finish.finalists > 0
            and (pending + 1) * costs.trial() <= self.search_seconds
        )

    def describe(self) -> str:
        if self.limit is None:
            return f"finalists: {self.finish.describe()} (~{self.finish.seconds:.0f} s)"
        search = (
            "no search trial fits"
            if self.search_trials == 0
            else f"search ~{self.search_seconds:.0f} s (about {plural(self.search_trials, 'trial')})"
        )
        return (
            f"plan for --time-limit {self.limit:g} s: {self.elapsed:.0f} s used, {search}, "
            f"finalists ~{self.finish.seconds:.0f} s ({self.finish.describe()})"
        )


def plan_tune(
    limit: float | None,
    elapsed: float,
    costs: Costs,
    finalists: int,
    min_rounds: int,
    flags: int,
    confirmations: int = 0,
    reserve: float | None = None,
) -> Plan:
    """The plan from now: the finalists' stage sized to at most `reserve` seconds (the largest that fits, so
    that the search keeps time), the search the rest. `reserve`: the finalists' share fixed by the first plan
    (finish_reserve); None: FINISH_SHARE of the time left now. A share taken from what is left at each re-plan
    would shrink with every trial and leave the finalists a sliver: on the H200 a 600 s tune planned ablation
    of 2 flags after the baseline and, re-planned trial by trial, had 115 s and no ablation at the end."""
    if limit is None:
        finish = plan_finish(math.inf, costs, finalists, min_rounds, flags, confirmations)
        return Plan(None, elapsed, math.inf, -1, finish)
    left = max(0.0, limit - elapsed)
    trial = costs.trial()
    share = left * FINISH_SHARE if reserve is None else min(reserve, left)
    needed = elapsed + trial + least_finish(costs, min_rounds)
    finish = plan_finish(share, costs, finalists, min_rounds, flags, confirmations)
    fallback = finish.finalists == 0
    if fallback:  # even one finalist needs more than the share: what is left after one trial
        finish = plan_finish(left - trial, costs, finalists, min_rounds, flags, confirmations)
    if finish.finalists == 0:  # not one trial and its validation fit: no search (a trial nobody validates is lost)
        return Plan(limit, elapsed, 0.0, 0, finish, needed)
    # the search's last trial may end late (more runs for a close candidate, a slow run): one benchmark run
    # per workload and a tenth of the finish stay free beyond the finish's own plan; not in the fallback,
    # whose one trial was sized to fit exactly (a margin there refused the one trial that fits)
    margin = 0.0 if fallback else costs.run * costs.workloads + 0.1 * finish.seconds
    search = max(0.0, left - finish.seconds - margin)
    trials = int(search // trial) if trial > 0 else 0
    return Plan(limit, elapsed, search, trials, finish, needed if trials == 0 else 0.0)


def finish_reserve(limit: float | None, elapsed: float) -> float | None:
    """The seconds kept for the finalists' stage, fixed once after the baseline: FINISH_SHARE of what is left
    of --time-limit then (None without a limit)."""
    return None if limit is None else FINISH_SHARE * max(0.0, limit - elapsed)


def costs_from(
    trials,
    warmup: int,
    repeats: int,
    workloads: int,
    workers: int,
    gpus: int,
    fallback_build: float = 0.0,
    paired: bool = False,
    baseline_warmup: int | None = None,
) -> Costs:
    """Costs as the trials so far measured them: the median build, the mean seconds of one benchmark run
    (every run of a trial counted: warm-up, samples, paired reference runs; the baseline's warm-ups are
    `baseline_warmup` when the search's differ) and the median wall seconds of a search trial at its normal runs
    (search_wall; the baseline's and shared-code trials' left out), and the runs racing left them."""
    builds = sorted(t.build_seconds for t in trials if t.build_seconds > 0)
    build = builds[len(builds) // 2] if builds else fallback_build
    measured = [t for t in trials if t.valid and t.same_code_as is None and t.measurements]
    first = baseline_warmup if baseline_warmup is not None else warmup
    runs = sum(_runs(t, first if t.flagset.is_baseline else warmup) for t in measured)
    run = sum(t.bench_seconds for t in measured) / runs if runs else 0.0
    search = [t for t in measured if not t.flagset.is_baseline]
    walls = sorted(search_wall(t, warmup, repeats) for t in search)
    got = [min(len(m.samples), repeats) for t in search for m in t.measurements]
    return Costs(
        build=build,
        run=run,
        workloads=workloads,
        warmup=warmup,
        repeats=repeats,
        workers=max(1, workers),
        gpus=max(1, gpus),
        paired=paired,
        observed=walls[len(walls) // 2] if walls else 0.0,
        raced=sum(got) / len(got) if got and any(t.raced for t in search) else None,
    )


def _runs(trial: Trial, warmup: int) -> int:
    """Every benchmark run of a trial: its warm-ups, samples and paired reference runs (not a shared one, which
    the trial before it ran), over its workloads."""
    return sum(m.runs + warmup for m in trial.measurements)


def tune_costs(trials, spec: TuneSpec, gpus: int, paired: bool, warmup: int | None = None) -> Costs:
    """costs_from with a tune's own runs per trial, workloads and workers (`gpus` measuring runners; `warmup`:
    the search trials' warm-up runs when they differ from the spec's, Baselines.warmup), and whether its
    confirmations run on every GPU at once (not with a --compare-file)."""
    search = spec.warmup if warmup is None else warmup
    costs = costs_from(
        list(trials),
        search,
        spec.repeats,
        len(spec.workloads),
        spec.workers,
        gpus or 1,
        paired=paired,
        baseline_warmup=spec.warmup,
    )
    return replace(costs, confirm_at_once=spec.compare_file is None)


def search_wall(trial: Trial, warmup: int, repeats: int) -> float:
    """A search trial's wall seconds at its normal runs (`warmup` and `repeats` per workload): the extra runs a
    promising trial got (measure_more_if_promising) taken out at its mean seconds per run. On a 90 s box, a
    first trial with 6 extra paired runs took 27 s and a normal one 11 s: counted as the next trial's cost, it
    stopped the search after 2 trials where the box had room for 3."""
    runs = _runs(trial, warmup)
    normal = sum(
        min(len(m.samples), repeats) + min(len(m.reference), repeats) - m.shared + warmup for m in trial.measurements
    )
    return trial.wall_seconds - trial.bench_seconds * (runs - normal) / runs if runs else trial.wall_seconds
