"""Validation of the best candidates and ablation of the winner: builds side by side in variant trees,
measured interleaved in a shuffled order each round (so drift hits all alike) and compared round by round
(paired test on the per-round ratios), with as many rounds as the noise needs to decide (between
min_rounds and max_rounds)."""

from __future__ import annotations

import math
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable

from ..model import build_flags
from ..flags import FlagSpace
from .ports import Build, Measures, Tree, Workload
from ..model.events import EventStream, Lines, as_stream
from ..model.records import Contribution, FlagSet, Validation, WorkloadComparison
from .stats import (EFFECT_FLOOR, FALSE_ACCEPTANCE, RHO_PRIOR, TAIL_SAFETY, Comparison, GainTest, compare_paired,
                    correlated_rounds, gain_test, geomean_comparison, holm, look_weights, looks, rounds_correlation)
from ..model.wording import plural

UNDECIDED = "not decided within the time limit; kept"
CUT = "undecided: "  # a validation verdict the time box cut before it was decided (never stored, never "rejected")
NOT_ABLATED = "not ablated: the time limit was reached; kept"
Log = EventStream | Lines  # the tune's event stream, or a function of a line (code not converted yet)
WARMUP = 1  # discarded rounds before the measured ones of a validation, an ablation step or a confirmation


@dataclass(frozen=True)
class Interleaved:
    samples: dict[str, dict[Workload, list[float]]]  # label -> workload -> samples
    failures: dict[str, str]  # label -> reason
    rounds: int
    cut_short: bool = False  # the time box ended the rounds before the comparison was decided


def interleave(runner: Measures, variants: dict[str, Tree], min_rounds: int, max_rounds: int, seed: int,
               decided: Callable[[dict[str, dict[Workload, list[float]]]], bool],
               required: tuple[str, ...] = (), may_continue: Callable[[float], bool] | None = None,
               at: tuple[int, ...] | None = None,
               progress: Callable[[int, float], None] | None = None, warmup: int = WARMUP) -> Interleaved:
    """Rounds of: for each workload, every variant once, in a fresh random order, after `warmup` rounds whose
    values are discarded (each variant was just re-built: its first run pays cold starts, e.g. the PTX JIT
    or the page cache, that later runs do not; a warm-up run that fails counts). A variant whose run fails
    is out at once (its reason in `failures`), and `decided` sees only the variants still in; the rounds
    end when it says so (after min_rounds), when a `required` variant failed, or when fewer than two
    variants are left to compare. `may_continue(seconds)`: asked before each round after the first with the
    seconds a round took so far (the time box); no more rounds when it says no (`cut_short`). `at`: the
    rounds at which `decided` is asked (a sequential test's looks, fixed in advance); None: every round."""
    rng = random.Random(seed)
    samples = {label: {w: [] for w in runner.spec.workloads} for label in variants}
    failures: dict[str, str] = {}
    rounds = 0
    cut_short = False
    discard = {label: {w: [] for w in runner.spec.workloads} for label in variants}
    for _ in range(warmup):
        _round(runner, variants, rng, failures, discard)
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


def _round(runner: Measures, variants: dict[str, Tree], rng: random.Random, failures: dict[str, str],
           samples: dict[str, dict[Workload, list[float]]]) -> None:
    """One round: for each workload, every variant still in once, in a fresh random order; a failed run puts
    its variant out (`failures`), a good one's value goes to `samples`."""
    for workload in runner.spec.workloads:
        order = [label for label in variants if label not in failures]
        rng.shuffle(order)
        for label in order:
            res = runner.run(variants[label], workload)
            if not res.ok:
                failures[label] = res.reason
                continue
            samples[label][workload].append(res.value)


def _comparisons(runner: Measures, base: dict[Workload, list[float]], cand: dict[Workload, list[float]],
                 rho: float = 0.0) -> list[Comparison]:
    lower = runner.spec.metric.lower_is_better
    return [compare_paired(base[w], cand[w], lower, rho=rho) for w in runner.spec.workloads]


def _rho(runner: Measures, samples: dict[str, dict[Workload, list[float]]]) -> float:
    """The rounds' serial correlation over every variant measured (stats.rounds_correlation)."""
    return rounds_correlation([[s[w] for w in runner.spec.workloads] for s in samples.values()])


def _validation(runner: Measures, flagset: FlagSet, base, cand, min_gain: float, significant: bool,
                p_adjusted: float, test: GainTest, rho: float = 0.0) -> Validation:
    """The verdict on one candidate: accepted when Holm across the finalists rejects "not faster" at the
    tune's error rate (`significant`, from the looks' adjusted p-values), the gain is at least min_gain and
    its effect at least EFFECT_FLOOR, and no workload is significantly slower."""
    comps = _comparisons(runner, base, cand, rho)
    geo, geo_ci = geomean_comparison(comps)
    rows = tuple(
        WorkloadComparison(w, tuple(base[w]), tuple(cand[w]), c.speedup, c.ci.low, c.ci.high, c.p_value)
        for w, c in zip(runner.spec.workloads, comps)
    )
    slower = [" ".join(w) or "default" for w, c in zip(runner.spec.workloads, comps) if c.slower()]
    if slower:
        reason = f"significantly slower than the baseline on: {', '.join(slower)}"
    elif geo < 1.0 + min_gain:
        reason = f"gain {100 * (geo - 1):+.2f}% is below the minimum {100 * min_gain:.2f}%"
    elif not significant:
        reason = (f"gain {100 * (geo - 1):+.2f}% is not significant at the {100 * FALSE_ACCEPTANCE:g}% false-acceptance "
                  f"rate (adjusted p={min(1.0, p_adjusted):.2g} for the looks and the finalists; 95% CI "
                  f"{geo_ci.low:.4f}..{geo_ci.high:.4f})")
    elif test.effect < EFFECT_FLOOR:
        reason = f"effect size d={test.effect:.2f} is below {EFFECT_FLOOR:g} (the gain is small next to the noise)"
    else:
        reason = ""
    return Validation(flagset, rows, geo, geo_ci.low, geo_ci.high, not reason, reason, rho=rho)


def validate(runner: Measures, build: Build, trees: tuple[Tree, ...], baseline: FlagSet,
             candidates: list[FlagSet], min_gain: float, seed: int, log: Log, min_rounds: int | None = None,
             may_continue: Callable[[float], bool] | None = None,
             alpha: float = FALSE_ACCEPTANCE * TAIL_SAFETY, max_rounds: int | None = None) -> list[Validation]:
    """Re-build the baseline and each candidate in its own tree, measure them interleaved on every
    workload, and compare each candidate with the baseline. `min_rounds` (default the spec's): fewer when
    the time box's plan says so; `may_continue`: the time box (see interleave); `max_rounds` (default and
    at most the spec's): the rounds the box can hold, within which the looks are placed.

    The error control (docs/statistics.md): the rounds are looked at only at `looks(min_rounds, max_rounds)`;
    each look spends its share of the error budget (look_weights), so a candidate's adjusted p-value is the
    smallest p/weight over the looks (a round cut short by the time box spends the next look's share);
    Holm across the candidates keeps the chance that any candidate without a real gain is accepted at
    `alpha`. The rounds end at a look where every candidate is decided: accepted at alpha/k (Bonferroni), or
    unable to reach min_gain, or slower; until then every candidate is measured in every round, and each
    verdict uses every round measured. The tests allow for the rounds' serial correlation (_rho)."""
    log = as_stream(log)
    spec = runner.spec
    min_rounds = spec.min_rounds if min_rounds is None else max(1, min(min_rounds, spec.max_rounds))
    top = spec.max_rounds if max_rounds is None else max(min_rounds, min(max_rounds, spec.max_rounds))
    schedule = looks(min_rounds, top)
    weights = dict(zip(schedule, look_weights(schedule)))
    placed = {"baseline": (trees[0], baseline)} | {f"c{i}": (trees[i + 1], fs) for i, fs in enumerate(candidates)}
    with ThreadPoolExecutor(max_workers=len(placed)) as pool:
        builds = dict(zip(placed, pool.map(lambda item: build(*item), placed.values())))
    if not builds["baseline"].ok:
        return [Validation(fs, (), 0.0, 0.0, 0.0, False, "the baseline failed to re-build") for fs in candidates]
    variants = {label: tree for label, (tree, _) in placed.items() if builds[label].ok}
    adjusted = {label: 1.0 for label in variants if label != "baseline"}
    tests: dict[str, GainTest] = {}
    level = alpha / max(1, len(candidates))
    lower = spec.metric.lower_is_better

    def look(samples, weight: float, rho: float) -> None:
        for label in adjusted:
            if label in samples:
                test = gain_test([samples["baseline"][w] for w in spec.workloads],
                                 [samples[label][w] for w in spec.workloads], lower, rho)
                tests[label] = test
                adjusted[label] = min(adjusted[label], test.p_value / weight)

    def decided(samples) -> bool:
        rounds = min(len(v) for v in samples["baseline"].values())
        rho = _rho(runner, samples)
        look(samples, weights[rounds], rho)
        for label in adjusted:
            if label not in samples:
                continue
            comps = _comparisons(runner, samples["baseline"], samples[label], rho)
            geo, geo_ci = geomean_comparison(comps)
            accepted = adjusted[label] <= level and geo >= 1.0 + min_gain
            hopeless = geo_ci.high < 1.0 + min_gain or any(c.slower() for c in comps)
            if not (accepted or hopeless):
                return False
        return True

    clock = time.perf_counter()
    last_said = [time.perf_counter()]

    def progress(rounds: int, seconds: float) -> None:  # a line when 5 s or more passed since the last one
        if time.perf_counter() - last_said[0] >= 5.0:
            last_said[0] = time.perf_counter()
            log.info(f"validation: round {rounds} of at most {spec.max_rounds} done ({seconds:.0f} s; the verdicts "
                     f"are looked at after rounds {', '.join(str(n) for n in schedule if n >= rounds)})",
                     stage="finalists", round=rounds, seconds=round(seconds, 1))

    inter = interleave(runner, variants, min_rounds, top, seed, decided, required=("baseline",),
                       may_continue=may_continue, at=schedule, progress=progress)
    per_round = (time.perf_counter() - clock) / max(1, inter.rounds)
    live = {label: s for label, s in inter.samples.items() if label not in inter.failures}
    rho = _rho(runner, live) if "baseline" in live else 0.0
    if "baseline" in live and inter.rounds not in schedule:  # cut short (or ended) between looks: the next look's share
        unspent = [n for n in schedule if n > inter.rounds]
        if unspent:
            look(live, weights[unspent[0]], rho)
    log.info(f"validation: {plural(len(candidates), 'candidate')} and the baseline, {plural(inter.rounds, 'interleaved round')}"
             + (" (the time limit ended the rounds)" if inter.cut_short else ""),
             stage="finalists", candidates=len(candidates), rounds=inter.rounds, cut_short=inter.cut_short,
             looks=[n for n in schedule if n <= inter.rounds])
    if rho > RHO_PRIOR + 0.05:  # these rounds moved it: said (the prior's own allowance is docs/statistics.md's)
        log.info(f"validation: a build's runs are correlated from round to round (lag-1 r={rho:.2f}: the prior's "
                 f"{RHO_PRIOR:g} updated by these rounds): the tests allow for it, a variance "
                 f"{correlated_rounds(rho, inter.rounds)[0]:.2g} times that of independent rounds",
                 stage="finalists", rho=round(rho, 3))
    labels = [f"c{i}" for i in range(len(candidates))]
    significant = dict(zip(labels, holm([adjusted.get(label, 1.0) for label in labels], alpha)))
    results = []
    for i, fs in enumerate(candidates):
        label = f"c{i}"
        if not builds[label].ok:
            results.append(Validation(fs, (), 0.0, 0.0, 0.0, False, f"re-build failed: {builds[label].log_tail}"))
        elif "baseline" in inter.failures:
            results.append(Validation(fs, (), 0.0, 0.0, 0.0, False, f"the baseline failed: {inter.failures['baseline']}"))
        elif label in inter.failures:
            results.append(Validation(fs, (), 0.0, 0.0, 0.0, False, inter.failures[label]))
        else:
            verdict = _validation(runner, fs, inter.samples["baseline"], inter.samples[label], min_gain,
                                  significant[label], adjusted[label], tests.get(label, GainTest(1.0, 0.0, 0)), rho)
            if inter.cut_short and not verdict.accepted and not _hopeless(runner, live, label, min_gain, rho):
                more = [n for n in schedule if n > inter.rounds]
                need = (more[0] if more else spec.max_rounds) - inter.rounds
                verdict = replace(verdict, reason=(
                    f"{CUT}the time box ended the validation after {plural(inter.rounds, 'round')} "
                    f"({verdict.reason or 'not decided'}); about {math.ceil(need * per_round)} s more "
                    f"({plural(need, 'round')}) would decide it"))
            results.append(verdict)
    return results


def untested_flags(winner: FlagSet, contributions: tuple[Contribution, ...]) -> tuple[str, ...]:
    """The written set's flags no measurement showed to matter: those of the ablation steps the time box left
    out or cut undecided, or every flag of a set of several that no ablation ran on (a winner banked during
    the search, or no step fitted). A single flag's own validation against the baseline is its test."""
    if not contributions:
        return winner.flags if len(winner.flags) > 1 else ()
    out = [f for c in contributions if c.kept and c.reason in (NOT_ABLATED, UNDECIDED) for f in c.flags]
    return tuple(f for f in winner.flags if f in out)


ROUNDS_FLOOR = 3  # the fewest rounds whose numbers are written as a confirmation


def confirm(runner: Measures, build: Build, trees: tuple[Tree, ...], baseline: FlagSet, winner: Validation,
            rounds: int, seed: int, log: EventStream, may_continue: Callable[[float], bool] | None = None
            ) -> Validation | None:
    """The winner re-built beside the baseline and measured for exactly `rounds` interleaved rounds (after the
    warm-up): its speed-up and intervals from rounds that decided nothing (no look stopped them, nothing was
    picked from them), so they cover the truth as often as they say. The winner with those numbers
    (estimate "confirmation"); not accepted when the winner fails here or is significantly slower than the
    baseline overall (the validation's verdict did not reproduce). None when the baseline cannot be re-built
    or measured, or the box allowed fewer than ROUNDS_FLOOR rounds: the deciding rounds' numbers stay."""
    builds = [build(trees[0], baseline), build(trees[1], winner.flagset)]
    if not builds[1].ok:
        return replace(winner, accepted=False, reason=f"confirmation: the winner failed to re-build: {builds[1].log_tail}",
                       estimate="confirmation")
    if not builds[0].ok:
        log.info("confirmation: the baseline failed to re-build; the numbers written are the deciding rounds'",
                 stage="finalists", confirmed=False)
        return None
    inter = interleave(runner, {"baseline": trees[0], "winner": trees[1]}, rounds, rounds, seed, lambda _: False,
                       required=("baseline", "winner"), may_continue=may_continue)
    if "winner" in inter.failures:
        return replace(winner, accepted=False, reason=f"confirmation: {inter.failures['winner']}", estimate="confirmation")
    if "baseline" in inter.failures or inter.rounds < ROUNDS_FLOOR:
        why = inter.failures.get("baseline") or f"the time limit ended it after {plural(inter.rounds, 'round')}"
        log.info(f"confirmation: {why}; the numbers written are the deciding rounds' (a little optimistic)",
                 stage="finalists", confirmed=False)
        return None
    base, cand = inter.samples["baseline"], inter.samples["winner"]
    # a few rounds of two variants tell little of the correlation: the validation's (more variants and rounds) is
    # the floor (the simulator: 93% coverage at rho 0.5 from the confirmation's own estimate alone)
    rho = max(winner.rho, _rho(runner, inter.samples))
    comps = _comparisons(runner, base, cand, rho)
    geo, ci = geomean_comparison(comps)
    rows = tuple(WorkloadComparison(w, tuple(base[w]), tuple(cand[w]), c.speedup, c.ci.low, c.ci.high, c.p_value)
                 for w, c in zip(runner.spec.workloads, comps))
    slower = ci.high < 1.0
    log.info(f"confirmation of {winner.flagset.describe()} ({plural(inter.rounds, 'round')} used for nothing else): "
             f"{geo:.4f}x [{ci.low:.4f}..{ci.high:.4f}]"
             + ("; significantly slower than the baseline: not written" if slower else ""),
             stage="finalists", confirmed=not slower, speedup=geo, ci=(ci.low, ci.high), rounds=inter.rounds)
    return Validation(winner.flagset, rows, geo, ci.low, ci.high, not slower,
                      "confirmation: significantly slower than the baseline" if slower else "", "confirmation", rho)


def verdict(v: Validation) -> str:
    """A validation's verdict as the lines say it: accepted, undecided (the box cut it) or rejected."""
    return "accepted" if v.accepted else "undecided" if v.reason.startswith(CUT) else "rejected"


def undecided(results: list[Validation]) -> bool:
    """Whether the box cut any verdict of a validation (then it is not stored: a rerun decides it)."""
    return any(v.reason.startswith(CUT) for v in results)


def _hopeless(runner: Measures, samples, label: str, min_gain: float, rho: float = 0.0) -> bool:
    """A candidate that can no longer reach min_gain or is significantly slower: decided, whatever the box."""
    comps = _comparisons(runner, samples["baseline"], samples[label], rho)
    _, ci = geomean_comparison(comps)
    return ci.high < 1.0 + min_gain or any(c.slower() for c in comps)


def ablate(runner: Measures, build: Build, trees: tuple[Tree, ...], space: FlagSpace, winner: FlagSet,
           min_gain: float, seed: int, log: Log, restored: dict[str, Contribution] | None = None,
           on_step: Callable[[str, Contribution], None] | None = None, expected: dict[str, float] | None = None,
           may_start: Callable[[], bool] | None = None,
           may_continue: Callable[[float], bool] | None = None,
           steps: int | None = None) -> tuple[FlagSet, tuple[Contribution, ...]]:
    """Remove the winner's non-default dimensions, then each file's own flags (the per-file stage's
    `[path]flag` tokens, one file at a time); a removal that costs nothing significant is kept (the flags are
    dropped). Returns the minimal flag set and each removal's contribution ("per-file <path>" for files).

    `expected` (dimension -> the search's estimate of the speedup of keeping it): the dimensions expected to
    matter least are tried first, and those expected to give less than min_gain are removed together as one
    group first, split in halves only when the group matters (one step when none of them does). `may_start`:
    asked before each step (the time box); the steps it refuses are not run and their flags kept ("not
    ablated"). `steps`: how many steps the time box has room for; fewer than the winner's dimensions: the
    first step removes together every dimension but the one expected to matter most (one step tells whether
    the rest matter at all), split only when they do. Each step has a key (what is removed from which flag set): `on_step(key, contribution)` is
    called as soon as a step is decided, and a step found in `restored` (an interrupted ablation's) is not
    measured again."""
    log = as_stream(log)
    current = winner
    contributions: list[Contribution] = []
    dims = [dim for dim, _ in winner.choices]
    if expected:
        dims.sort(key=lambda d: expected.get(d, math.inf))
        useless = [d for d in dims if expected.get(d, math.inf) < 1.0 + min_gain]
    else:
        useless = []
    if steps is not None and steps < len(dims) and len(dims) > 2 and len(useless) < len(dims) - 1:
        useless = dims[:-1]  # too little time for one step per dimension: all but the most expected at once
    files = [path for path, _ in build_flags.split(winner.flags).sources]
    queue: list[tuple[tuple[str, ...], str | None]] = ([(tuple(useless), None)] if len(useless) > 1 else [])
    queue += [((d,), None) for d in dims if len(useless) <= 1 or d not in useless]
    queue += [((f"per-file {path}",), path) for path in files]
    while queue:
        group, path = queue.pop(0)
        if may_start is not None and not may_start():
            for rest, _ in [(group, path), *queue]:
                for dim in rest:
                    contributions.append(Contribution(dim, _flags_of(space, current, dim), math.nan, math.nan,
                                                      math.nan, True, NOT_ABLATED))
            untested = sum(len(g) for g, _ in [(group, path), *queue])
            log.info(f"ablation: time limit reached; {plural(untested, 'dimension')} not ablated (kept)",
                     stage="finalists", untested=untested)
            break
        step = f"{'+'.join(group)} from {current.key}"
        kept = (restored or {}).get(step)
        # each decided step is stored before it is announced: a kill after its line never measures it again
        save = None if on_step is None else (lambda c, step=step: on_step(step, c))
        contribution, without = _ablation_step(runner, build, trees, space, current, group, path, min_gain, seed, log,
                                               kept, may_continue, save)
        if len(group) > 1 and contribution.kept:  # the group matters: its halves, each on its own
            half = len(group) // 2
            queue[:0] = [(group[:half], None), (group[half:], None)]
            log.info(f"ablation: removing {' '.join(contribution.flags)} together costs speed: split",
                     stage="finalists", flags=list(contribution.flags))
            continue
        contributions.append(contribution)
        if not contribution.kept:
            current = without
    return current, tuple(contributions)


def _flags_of(space: FlagSpace, current: FlagSet, dim: str) -> tuple[str, ...]:
    """The flags a dimension (or "per-file <path>") adds to `current`."""
    if dim.startswith("per-file "):
        path = dim[len("per-file "):]
        return tuple(build_flags.source_token(p, f) for p, fs in build_flags.split(current.flags).sources
                     if p == path for f in fs)
    choice = dict(current.choices)
    return space.flagset({dim: choice[dim]}).flags if dim in choice else ()


def _ablation_step(runner: Measures, build: Build, trees: tuple[Tree, ...], space: FlagSpace, current: FlagSet,
                   group: tuple[str, ...], path: str | None, min_gain: float, seed: int, log: EventStream,
                   restored: Contribution | None,
                   may_continue: Callable[[float], bool] | None = None,
                   save: Callable[[Contribution], None] | None = None) -> tuple[Contribution, FlagSet]:
    """One step of `ablate`: removing the dimensions of `group` (`path`: that file's own flags) from `current`;
    its contribution (kept or not) and the flag set without it. `restored`: the step's outcome from the
    trial store. `save`: called with a measured, decided contribution before it is logged (an undecided one
    is measured again by a rerun, and not saved)."""

    def saved(contribution: Contribution) -> Contribution:
        if save is not None and contribution.reason != UNDECIDED:
            save(contribution)
        return contribution

    choice = dict(current.choices)
    own = build_flags.split(current.flags).sources  # the files' own flags: not dimensions of the space
    dim = "+".join(group)
    if path is None:
        flags = tuple(f for d in group for f in space.flagset({d: choice[d]}).flags)
        for d in group:
            choice.pop(d)
    else:
        flags = tuple(build_flags.source_token(p, f) for p, fs in own if p == path for f in fs)
    base = space.flagset(choice)
    without = FlagSet(base.choices, base.flags + tuple(build_flags.source_token(p, f) for p, fs in own
                                                       if p != path for f in fs))
    if restored is not None:
        log.info(f"ablation: {' '.join(flags)}: restored from the trial store -> "
                 f"{'kept' if restored.kept else 'dropped'}", stage="finalists", flags=list(flags), kept=restored.kept,
                 restored=True)
        return restored, without
    builds = [build(trees[0], current), build(trees[1], without)]
    if not builds[0].ok or not builds[1].ok:
        return saved(Contribution(dim, flags, math.nan, math.nan, math.nan, True, "re-build failed; kept")), without
    if builds[0].fingerprint and builds[0].fingerprint == builds[1].fingerprint:
        same = saved(Contribution(dim, flags, 1.0, 1.0, 1.0, False, "same device code without it"))
        log.info(f"ablation: {' '.join(flags)}: same device code without it -> dropped", stage="finalists",
                 flags=list(flags), kept=False)
        return same, without
    variants = {"with": trees[0], "without": trees[1]}

    def decided(samples) -> bool:
        return all(c.decided(min_gain) or c.slower() or c.faster(min_gain)
                   for c in _comparisons(runner, samples["without"], samples["with"], _rho(runner, samples)))

    inter = interleave(runner, variants, runner.spec.min_rounds, runner.spec.max_rounds, seed, decided,
                       required=("with", "without"), may_continue=may_continue)
    if "without" in inter.failures:
        return saved(Contribution(dim, flags, math.nan, math.nan, math.nan, True,
                                  f"without it the benchmark fails ({inter.failures['without']}); kept")), without
    if "with" in inter.failures:
        return saved(Contribution(dim, flags, math.nan, math.nan, math.nan, True, "measurement failed; kept")), without
    comps = _comparisons(runner, inter.samples["without"], inter.samples["with"],  # the speedup of keeping it
                         _rho(runner, inter.samples))
    geo, ci = geomean_comparison(comps)
    if inter.cut_short and not decided(inter.samples):
        log.info(f"ablation: {' '.join(flags)}: not decided within the time limit -> kept", stage="finalists",
                 flags=list(flags), kept=True, undecided=True)
        return Contribution(dim, flags, geo, ci.low, ci.high, True, UNDECIDED), without
    # kept when removing it is significantly slower by at least min_gain on some workload: the rule that ends
    # the step's rounds (it used to keep any significant difference, however small, against its own stop rule)
    needed = any(c.faster(min_gain) for c in comps)
    reason = "removing it is significantly slower" if needed else "removing it costs nothing significant"
    contribution = saved(Contribution(dim, flags, geo, ci.low, ci.high, needed, reason))
    log.info(f"ablation: {' '.join(flags)}: keeping it gives {geo:.4f}x (95% CI {ci.low:.4f}..{ci.high:.4f}) "
             f"-> {'kept' if needed else 'dropped'}", stage="finalists", flags=list(flags), kept=needed, speedup=geo,
             ci=(ci.low, ci.high))
    return contribution, without
