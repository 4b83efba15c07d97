"""Validation of the best candidates and the winner's confirmation: builds side by side in variant trees,
measured interleaved (rounds.py) and compared round by round (paired tests on the per-round ratios): the
finalists by the sequential gain test (sequential.py), with as many rounds as the noise needs to decide
(between min_rounds and the rounds the box holds), the winner's confirmation for a fixed number of rounds
whose numbers are written. Ablation of the winner: ablation.py."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ..model.events import EventStream, Log, as_stream
from ..model.records import Contribution, FlagSet, Validation
from ..model.wording import plural
from .correlation import RHO_PRIOR, correlated_rounds
from .ports import Build, Measures, Tree
from .rounds import Interleaved, interleave
from .sequential import SequentialGainTest, comparisons, hopeless, rounds_posterior_of, workload_rows
from .stats import FALSE_ACCEPTANCE, TAIL_SAFETY, Comparison, geomean_comparison

UNDECIDED = "not decided within the time limit; kept"
CUT = "undecided: "  # a validation verdict the time box cut before it was decided (never stored, never "rejected")
NOT_ABLATED = "not ablated: the time limit was reached; kept"


def validate(
    runner: Measures,
    build: Build,
    trees: tuple[Tree, ...],
    baseline: FlagSet,
    candidates: list[FlagSet],
    min_gain: float,
    seed: int,
    log: Log,
    min_rounds: int | None = None,
    may_continue: Callable[[float], bool] | None = None,
    alpha: float = FALSE_ACCEPTANCE * TAIL_SAFETY,
    max_rounds: int | None = None,
    rho_floor: float = 0.0,
    where: str = "",
) -> list[Validation]:
    """Re-build the baseline and each candidate in its own tree, measure them interleaved on every
    workload, and compare each candidate with the baseline by the sequential gain test (sequential.py: its
    looks, their shares of `alpha`, Holm, the rules of a verdict). `min_rounds` (default the spec's): fewer
    when the time box's plan says so; `may_continue`: the time box (see rounds.interleave); `max_rounds`
    (default and at most the spec's): the rounds the box can hold, within which the looks are placed;
    `rho_floor`: the least rounds' correlation its tests allow for (the bank's, stats.BANK_RHO_FLOOR);
    `where`: the GPU its lines name (" on GPU 1 (...)", when several validate at once). Until
    every candidate is decided each is measured in every round, and each verdict uses every round measured."""
    log = as_stream(log)
    spec = runner.spec
    min_rounds = spec.min_rounds if min_rounds is None else max(1, min(min_rounds, spec.max_rounds))
    top = spec.max_rounds if max_rounds is None else max(min_rounds, min(max_rounds, spec.max_rounds))
    placed = {"baseline": (trees[0], baseline)} | {f"c{i}": (trees[i + 1], fs) for i, fs in enumerate(candidates)}
    with ThreadPoolExecutor(max_workers=len(placed)) as pool:
        builds = dict(zip(placed, pool.map(lambda item: build(*item), placed.values()), strict=True))
    if not builds["baseline"].ok:
        return [Validation(fs, (), 0.0, 0.0, 0.0, False, "the baseline failed to re-build") for fs in candidates]
    labels = tuple(f"c{i}" for i in range(len(candidates)))
    test = SequentialGainTest.planned(spec, labels, min_gain, min_rounds, top, alpha, rho_floor)
    clock = time.perf_counter()
    inter = interleave(
        runner,
        {label: tree for label, (tree, _) in placed.items() if builds[label].ok},
        min_rounds,
        top,
        seed,
        test.look,
        required=("baseline",),
        may_continue=may_continue,
        at=test.schedule,
        progress=_progress(log, spec.max_rounds, test.schedule, where),
    )
    per_round = (time.perf_counter() - clock) / max(1, inter.rounds)
    live = {label: s for label, s in inter.samples.items() if label not in inter.failures}
    if "baseline" in live:
        test.close(live, inter.rounds)
    _say_rounds(log, len(candidates), inter, test, where)
    measured = (
        test.verdicts(live, {label: fs for label, fs in zip(labels, candidates, strict=False) if label in live})
        if "baseline" in live
        else {}
    )
    # the box decided how many rounds there were: it ended them (cut short), or it placed the last look before
    # the spec's --max-rounds and the rounds reached it; a verdict it left open is undecided, not a rejection
    boxed = inter.cut_short or (top < spec.max_rounds and inter.rounds >= top)
    results = []
    for label, fs in zip(labels, candidates, strict=False):
        if not builds[label].ok:
            results.append(Validation(fs, (), 0.0, 0.0, 0.0, False, f"re-build failed: {builds[label].log_tail}"))
        elif "baseline" in inter.failures:
            results.append(
                Validation(fs, (), 0.0, 0.0, 0.0, False, f"the baseline failed: {inter.failures['baseline']}")
            )
        elif label in inter.failures:
            results.append(Validation(fs, (), 0.0, 0.0, 0.0, False, inter.failures[label]))
        elif boxed and not measured[label].accepted and not hopeless(spec, live, label, min_gain, test.rho):
            results.append(_cut(measured[label], inter.rounds, test, spec.max_rounds, per_round))
        else:
            results.append(measured[label])
    return results


def _say_rounds(
    log: EventStream, candidates: int, inter: Interleaved, test: SequentialGainTest, where: str = ""
) -> None:
    """The validation's rounds said, and the correlation of a build's runs when these rounds moved it."""
    log.info(
        f"validation{where}: {plural(candidates, 'candidate')} and the baseline, "
        f"{plural(inter.rounds, 'interleaved round')}"
        + (" (the time limit ended the rounds)" if inter.cut_short else ""),
        stage="finalists",
        candidates=candidates,
        rounds=inter.rounds,
        cut_short=inter.cut_short,
        looks=[n for n in test.schedule if n <= inter.rounds],
    )
    if (
        test.rho > max(RHO_PRIOR, test.rho_floor) + 0.05
    ):  # these rounds moved it: said (the prior's own allowance is docs/statistics.md's)
        log.info(
            f"validation{where}: a build's runs are correlated from round to round (lag-1 r={test.rho:.2f}: the "
            f"prior's {RHO_PRIOR:g} updated by these rounds): the tests allow for it, a variance "
            f"{correlated_rounds(test.rho, inter.rounds)[0]:.2g} times that of independent rounds",
            stage="finalists",
            rho=round(test.rho, 3),
        )


def _cut(measured: Validation, rounds: int, test: SequentialGainTest, max_rounds: int, per_round: float) -> Validation:
    """A verdict the time box cut short: not decided, with the seconds and rounds that would decide it."""
    need = (test.next_look(rounds) if rounds < test.schedule[-1] else max_rounds) - rounds
    return replace(
        measured,
        reason=(
            f"{CUT}the time box ended the validation after {plural(rounds, 'round')} "
            f"({measured.reason or 'not decided'}); about {math.ceil(need * per_round)} s more "
            f"({plural(need, 'round')}) would decide it"
        ),
    )


def _progress(
    log: EventStream, max_rounds: int, schedule: tuple[int, ...], where: str = ""
) -> Callable[[int, float], None]:
    """The validation's progress line, said when 5 s or more passed since the last one."""
    last_said = [time.perf_counter()]

    def progress(rounds: int, seconds: float) -> None:
        if time.perf_counter() - last_said[0] >= 5.0:
            last_said[0] = time.perf_counter()
            log.info(
                f"validation{where}: round {rounds} of at most {max_rounds} done ({seconds:.0f} s; the verdicts "
                f"are looked at after rounds {', '.join(str(n) for n in schedule if n >= rounds)})",
                stage="finalists",
                round=rounds,
                seconds=round(seconds, 1),
            )

    return progress


def untested_flags(winner: FlagSet, contributions: tuple[Contribution, ...]) -> tuple[str, ...]:
    """The written set's flags no measurement showed to matter: those of the ablation steps the time box left
    out or cut undecided, or every flag of a set of several that no ablation ran on (a winner banked during
    the search, or no step fitted). A single flag's own validation against the baseline is its test."""
    if not contributions:
        return winner.flags if len(winner.flags) > 1 else ()
    out = [f for c in contributions if c.kept and c.reason in (NOT_ABLATED, UNDECIDED) for f in c.flags]
    return tuple(f for f in winner.flags if f in out)


ROUNDS_FLOOR = 3  # the fewest rounds whose numbers are written as a confirmation


def confirm(
    runner: Measures,
    build: Build,
    trees: tuple[Tree, ...],
    baseline: FlagSet,
    winner: Validation,
    rounds: int,
    seed: int,
    log: EventStream,
    may_continue: Callable[[float], bool] | None = None,
) -> Validation | None:
    """The winner re-built beside the baseline and measured for `rounds` interleaved rounds (after the
    warm-up): its speed-up and intervals from rounds that decided nothing (no look stopped them, nothing was
    picked from them), so they cover the truth as often as they say. When those rounds cannot show it faster
    (their interval holds 1), the confirmation goes on to as many rounds as the validation that accepted it
    measured (_extended), once, and its numbers are those of all its rounds. The winner with those numbers
    (estimate "confirmation"); not accepted when the winner fails here, is significantly slower than the
    baseline overall (the validation's verdict did not reproduce), or its rounds still do not show it faster.
    None when the baseline cannot be re-built or measured, or the box allowed fewer than ROUNDS_FLOOR rounds:
    the deciding rounds' numbers stay."""
    builds = [build(trees[0], baseline), build(trees[1], winner.flagset)]
    if not builds[1].ok:
        return replace(
            winner,
            accepted=False,
            reason=f"confirmation: the winner failed to re-build: {builds[1].log_tail}",
            estimate="confirmation",
        )
    if not builds[0].ok:
        log.info(
            "confirmation: the baseline failed to re-build; the numbers written are the deciding rounds'",
            stage="finalists",
            confirmed=False,
        )
        return None
    pair = {"baseline": trees[0], "winner": trees[1]}
    clock = time.perf_counter()
    inter = interleave(runner, pair, rounds, rounds, seed, lambda _: False, ("baseline", "winner"), may_continue)
    if "winner" in inter.failures:
        return replace(
            winner, accepted=False, reason=f"confirmation: {inter.failures['winner']}", estimate="confirmation"
        )
    if "baseline" in inter.failures or inter.rounds < ROUNDS_FLOOR:
        why = inter.failures.get("baseline") or f"the time limit ended it after {plural(inter.rounds, 'round')}"
        log.info(
            f"confirmation: {why}; the numbers written are the deciding rounds' (a little optimistic)",
            stage="finalists",
            confirmed=False,
        )
        return None
    per_round = (time.perf_counter() - clock) / max(1, inter.rounds)
    inter = _extended(runner, pair, winner, inter, seed, may_continue, per_round, log)
    if "winner" in inter.failures:
        return replace(
            winner, accepted=False, reason=f"confirmation: {inter.failures['winner']}", estimate="confirmation"
        )
    return _confirmation(runner, winner, inter, log)


def _numbers(runner: Measures, winner: Validation, inter: Interleaved) -> tuple[float, float, list[Comparison]]:
    """The confirmation's correlation (mean, sd) and comparisons: a few rounds of two variants tell little of
    the correlation, so the validation's (more variants and rounds) is the floor (the simulator: 93% coverage
    at rho 0.5 from the confirmation's own estimate alone); the interval allows for the sd of the one used."""
    mean, sd = rounds_posterior_of(runner.spec, inter.samples)
    rho, rho_sd = (winner.rho, winner.rho_sd) if winner.rho >= mean else (mean, sd)
    return rho, rho_sd, comparisons(runner.spec, inter.samples["baseline"], inter.samples["winner"], rho, rho_sd)


def _extended(
    runner: Measures,
    pair: dict[str, Tree],
    winner: Validation,
    inter: Interleaved,
    seed: int,
    may_continue: Callable[[float], bool] | None,
    per_round: float,
    log: EventStream,
) -> Interleaved:
    """A confirmation whose rounds cannot show the winner faster on their own (their interval holds 1: with a
    few rounds the t distribution's tail is wide, and correlated rounds count for fewer) goes on, once, to as
    many rounds as the validation that accepted it measured (at most --max-rounds), on the same builds: fresh
    rounds that decided nothing. (Pooling them with the accepting rounds instead wrote intervals that covered
    the truth in 70-91% of tunes where the rounds' noise carries over: those rounds stopped at a lucky look.)
    The time box may end them (said); what was measured is what the numbers come from."""
    _, _, comps = _numbers(runner, winner, inter)
    geo, ci = geomean_comparison(comps)
    target = min(runner.spec.max_rounds, min((len(w.baseline) for w in winner.workloads), default=0))
    if ci.low > 1.0 or ci.high < 1.0 or target <= inter.rounds:
        return inter
    more = target - inter.rounds
    log.info(
        f"confirmation: {plural(inter.rounds, 'round')} cannot show it faster on their own "
        f"({geo:.4f}x [{ci.low:.4f}..{ci.high:.4f}]); {plural(more, 'more round')}, as many as the validation "
        "measured",
        stage="finalists",
        rounds=inter.rounds,
        more=more,
    )
    if may_continue is not None and not may_continue(per_round):
        return replace(inter, cut_short=True)
    extra = interleave(runner, pair, more, more, seed + 1, lambda _: False, tuple(pair), may_continue, warmup=0)
    samples = {
        label: {w: [*inter.samples[label][w], *extra.samples[label][w]] for w in runner.spec.workloads}
        for label in pair
    }
    return Interleaved(samples, extra.failures, inter.rounds + extra.rounds, extra.cut_short)


def _confirmation(runner: Measures, winner: Validation, inter: Interleaved, log: EventStream) -> Validation:
    """The winner with the confirmation's numbers: not accepted when significantly slower overall or when its
    interval still holds 1 (then undecided when the time box ended its rounds: a rerun measures it again)."""
    base, cand = inter.samples["baseline"], inter.samples["winner"]
    rho, rho_sd, comps = _numbers(runner, winner, inter)
    geo, ci = geomean_comparison(comps)
    rows = workload_rows(runner.spec, base, cand, comps)
    slower, unshown = ci.high < 1.0, ci.low <= 1.0 <= ci.high
    if slower:
        reason = "confirmation: significantly slower than the baseline"
    elif unshown:
        reason = (
            f"{CUT if inter.cut_short else ''}confirmation: {plural(inter.rounds, 'round')} of its own do not show it "
            "faster (the interval holds 1)" + ("; the time limit ended them" if inter.cut_short else "")
        )
    else:
        reason = ""
    log.info(
        f"confirmation of {winner.flagset.describe()} ({plural(inter.rounds, 'round')} used for nothing else): "
        f"{geo:.4f}x [{ci.low:.4f}..{ci.high:.4f}]"
        + ("; significantly slower than the baseline: not written" if slower else "")
        + ("; that does not show it faster: not written" if unshown else ""),
        stage="finalists",
        confirmed=not reason,
        speedup=geo,
        ci=(ci.low, ci.high),
        rounds=inter.rounds,
    )
    return Validation(winner.flagset, rows, geo, ci.low, ci.high, not reason, reason, "confirmation", rho, rho_sd)


def verdict(v: Validation) -> str:
    """A validation's verdict as the lines say it: accepted, undecided (the box cut it) or rejected."""
    return "accepted" if v.accepted else "undecided" if v.reason.startswith(CUT) else "rejected"


def undecided(results: list[Validation]) -> bool:
    """Whether the box cut any verdict of a validation (then it is not stored: a rerun decides it)."""
    return any(v.reason.startswith(CUT) for v in results)
