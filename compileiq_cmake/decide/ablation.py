"""Ablation of the winner: each of its non-default dimensions (and each file's own flags) removed in turn,
the set with and without it re-built side by side and measured interleaved; a removal that costs nothing
significant is kept (the flags are dropped). The smallest set that keeps the speed is what is written."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..flags import FlagSpace
from ..model import build_flags
from ..model.events import EventStream, Log, as_stream
from ..model.records import Contribution, FlagSet
from ..model.wording import plural
from .ports import Build, Measures, Tree
from .rounds import interleave
from .sequential import Samples, comparisons, rounds_rho
from .stats import Comparison, geomean_comparison
from .validation import NOT_ABLATED, UNDECIDED


def ablate(
    runner: Measures,
    build: Build,
    trees: tuple[Tree, ...],
    space: FlagSpace,
    winner: FlagSet,
    min_gain: float,
    seed: int,
    log: Log,
    restored: dict[str, Contribution] | None = None,
    on_step: Callable[[str, Contribution], None] | None = None,
    expected: dict[str, float] | None = None,
    may_start: Callable[[], bool] | None = None,
    may_continue: Callable[[float], bool] | None = None,
    steps: int | None = None,
) -> tuple[FlagSet, tuple[Contribution, ...]]:
    """Remove the winner's non-default dimensions, then each file's own flags (the per-file stage's
    `[path]flag` tokens, one file at a time); a removal that costs nothing significant is kept (the flags are
    dropped). Returns the minimal flag set and each removal's contribution ("per-file <path>" for files).

    `expected` (dimension -> the search's estimate of the speedup of keeping it): the dimensions expected to
    matter least are tried first, and those expected to give less than min_gain are removed together as one
    group first, split in halves only when the group matters (one step when none of them does). `may_start`:
    asked before each step (the time box); the steps it refuses are not run and their flags kept ("not
    ablated"). `steps`: how many steps the time box has room for; fewer than the winner's dimensions: the
    first step removes together every dimension but the one expected to matter most (one step tells whether
    the rest matter at all), split only when they do. Each step has a key (what is removed from which flag set):
    `on_step(key, contribution)` is called as soon as a step is decided, and a step found in `restored` (an
    interrupted ablation's) is not measured again."""
    log = as_stream(log)
    current = winner
    contributions: list[Contribution] = []
    queue = _ablation_queue(space, winner, min_gain, expected, steps)
    while queue:
        group, path = queue.pop(0)
        if may_start is not None and not may_start():
            contributions += _not_ablated(space, current, [(group, path), *queue], log)
            break
        step = f"{'+'.join(group)} from {current.key}"
        kept = (restored or {}).get(step)
        # each decided step is stored before it is announced: a kill after its line never measures it again
        save = None if on_step is None else (lambda c, step=step: on_step(step, c))
        contribution, without = _ablation_step(
            runner, build, trees, space, current, group, path, min_gain, seed, log, kept, may_continue, save
        )
        if len(group) > 1 and contribution.kept:  # the group matters: its halves, each on its own
            half = len(group) // 2
            queue[:0] = [(group[:half], None), (group[half:], None)]
            log.info(
                f"ablation: removing {' '.join(contribution.flags)} together costs speed: split",
                stage="finalists",
                flags=list(contribution.flags),
            )
            continue
        contributions.append(contribution)
        if not contribution.kept:
            current = without
    return current, tuple(contributions)


def _flags_of(space: FlagSpace, current: FlagSet, dim: str) -> tuple[str, ...]:
    """The flags a dimension (or "per-file <path>") adds to `current`."""
    if dim.startswith("per-file "):
        path = dim[len("per-file ") :]
        return tuple(build_flags.source_token(p, f) for p, fs in _own_sources(space, current) if p == path for f in fs)
    choice = dict(current.choices)
    return space.flagset({dim: choice[dim]}).flags if dim in choice else ()


def _own_sources(space: FlagSpace, current: FlagSet) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The per-file stage's own `[path]flag` tokens of `current`, per file: those its dimensions' values do not
    give (under the hot-file focus every dimension's value is per-file tokens itself: removing a dimension
    removes them, and they are no file's own)."""
    given = set(space.flagset(dict(current.choices)).flags)
    return build_flags.split(tuple(t for t in current.flags if t not in given)).sources


def _ablation_queue(
    space: FlagSpace, winner: FlagSet, min_gain: float, expected: dict[str, float] | None, steps: int | None
) -> list[tuple[tuple[str, ...], str | None]]:
    """The ablation's steps in order, each (the dimensions it removes together, the file of a per-file step): an
    opaque dimension (`Dimension.ablated_first`: an Advanced Controls file, which changes every kernel's code and
    is written only where removing it costs speed) alone first; then the dimensions expected to matter least,
    those expected to give less than min_gain (or, with too few `steps`, all but the one expected to matter
    most) as one group; then each file's own flags."""
    opaque = {d.name for d in space.dimensions if d.ablated_first}
    first = [dim for dim, _ in winner.choices if dim in opaque]  # each alone, before anything else
    dims = [dim for dim, _ in winner.choices if dim not in opaque]
    if expected:
        dims.sort(key=lambda d: expected.get(d, math.inf))
        useless = [d for d in dims if expected.get(d, math.inf) < 1.0 + min_gain]
    else:
        useless = []
    room = None if steps is None else steps - len(first)
    if room is not None and room < len(dims) and len(dims) > 2 and len(useless) < len(dims) - 1:
        useless = dims[:-1]  # too little time for one step per dimension: all but the most expected at once
    files = [path for path, _ in _own_sources(space, winner)]
    queue: list[tuple[tuple[str, ...], str | None]] = [((d,), None) for d in first]
    queue += [(tuple(useless), None)] if len(useless) > 1 else []
    queue += [((d,), None) for d in dims if len(useless) <= 1 or d not in useless]
    queue += [((f"per-file {path}",), path) for path in files]
    return queue


def _not_ablated(
    space: FlagSpace, current: FlagSet, left: list[tuple[tuple[str, ...], str | None]], log: EventStream
) -> list[Contribution]:
    """The steps the time box left out: their dimensions kept, "not ablated" (and a line saying how many)."""
    kept = [
        Contribution(dim, _flags_of(space, current, dim), math.nan, math.nan, math.nan, True, NOT_ABLATED)
        for rest, _ in left
        for dim in rest
    ]
    untested = sum(len(g) for g, _ in left)
    log.info(
        f"ablation: time limit reached; {plural(untested, 'dimension')} not ablated (kept)",
        stage="finalists",
        untested=untested,
    )
    return kept


def _ablation_step(
    runner: Measures,
    build: Build,
    trees: tuple[Tree, ...],
    space: FlagSpace,
    current: FlagSet,
    group: tuple[str, ...],
    path: str | None,
    min_gain: float,
    seed: int,
    log: EventStream,
    restored: Contribution | None,
    may_continue: Callable[[float], bool] | None = None,
    save: Callable[[Contribution], None] | None = None,
) -> tuple[Contribution, FlagSet]:
    """One step of `ablate`: removing the dimensions of `group` (`path`: that file's own flags) from `current`;
    its contribution (kept or not) and the flag set without it. `restored`: the step's outcome from the
    trial store. `save`: called with a measured, decided contribution before it is logged (an undecided one
    is measured again by a rerun, and not saved)."""

    def saved(contribution: Contribution) -> Contribution:
        if save is not None and contribution.reason != UNDECIDED:
            save(contribution)
        return contribution

    dim = "+".join(group)
    flags, without = _removed(space, current, group, path)
    if restored is not None:
        log.info(
            f"ablation: {' '.join(flags)}: restored from the trial store -> {'kept' if restored.kept else 'dropped'}",
            stage="finalists",
            flags=list(flags),
            kept=restored.kept,
            restored=True,
        )
        return restored, without
    builds = [build(trees[0], current), build(trees[1], without)]
    if not builds[0].ok or not builds[1].ok:
        return saved(Contribution(dim, flags, math.nan, math.nan, math.nan, True, "re-build failed; kept")), without
    if builds[0].fingerprint and builds[0].fingerprint == builds[1].fingerprint:
        same = saved(Contribution(dim, flags, 1.0, 1.0, 1.0, False, "same device code without it"))
        log.info(
            f"ablation: {' '.join(flags)}: same device code without it -> dropped",
            stage="finalists",
            flags=list(flags),
            kept=False,
        )
        return same, without
    return _measured_step(runner, trees, dim, flags, min_gain, seed, log, may_continue, saved), without


def _removed(
    space: FlagSpace, current: FlagSet, group: tuple[str, ...], path: str | None
) -> tuple[tuple[str, ...], FlagSet]:
    """The flags a step removes (the dimensions of `group`, or the own flags of file `path`) and the flag set
    without them."""
    choice = dict(current.choices)
    own = _own_sources(space, current)  # the files' own flags: not dimensions of the space
    if path is None:
        flags = tuple(f for d in group for f in space.flagset({d: choice[d]}).flags)
        for d in group:
            choice.pop(d)
    else:
        flags = tuple(build_flags.source_token(p, f) for p, fs in own if p == path for f in fs)
    base = space.flagset(choice)
    without = FlagSet(
        base.choices, base.flags + tuple(build_flags.source_token(p, f) for p, fs in own if p != path for f in fs)
    )
    return flags, without


def _measured_step(
    runner: Measures,
    trees: tuple[Tree, ...],
    dim: str,
    flags: tuple[str, ...],
    min_gain: float,
    seed: int,
    log: EventStream,
    may_continue: Callable[[float], bool] | None,
    saved: Callable[[Contribution], Contribution],
) -> Contribution:
    """A step's contribution from interleaved rounds of the flag set with (trees[0]) and without (trees[1]) the
    flags: kept when removing them is significantly slower by at least min_gain on some workload."""
    variants = {"with": trees[0], "without": trees[1]}

    def keeping(samples: Samples) -> list[Comparison]:  # the speedup of keeping it, per workload
        return comparisons(runner.spec, samples["without"], samples["with"], rounds_rho(runner.spec, samples))

    def decided(comps: list[Comparison]) -> bool:
        return all(c.decided(min_gain) or c.slower() or c.faster(min_gain) for c in comps)

    inter = interleave(
        runner,
        variants,
        runner.spec.min_rounds,
        runner.spec.max_rounds,
        seed,
        lambda samples: decided(keeping(samples)),
        required=("with", "without"),
        may_continue=may_continue,
    )
    if "without" in inter.failures:
        reason = f"without it the benchmark fails ({inter.failures['without']}); kept"
        return saved(Contribution(dim, flags, math.nan, math.nan, math.nan, True, reason))
    if "with" in inter.failures:
        return saved(Contribution(dim, flags, math.nan, math.nan, math.nan, True, "measurement failed; kept"))
    comps = keeping(inter.samples)
    geo, ci = geomean_comparison(comps)
    if inter.cut_short and not decided(comps):
        log.info(
            f"ablation: {' '.join(flags)}: not decided within the time limit -> kept",
            stage="finalists",
            flags=list(flags),
            kept=True,
            undecided=True,
        )
        return Contribution(dim, flags, geo, ci.low, ci.high, True, UNDECIDED)
    # kept when removing it is significantly slower by at least min_gain on some workload: the rule that ends
    # the step's rounds (it used to keep any significant difference, however small, against its own stop rule)
    needed = any(c.faster(min_gain) for c in comps)
    reason = "removing it is significantly slower" if needed else "removing it costs nothing significant"
    contribution = saved(Contribution(dim, flags, geo, ci.low, ci.high, needed, reason))
    log.info(
        f"ablation: {' '.join(flags)}: keeping it gives {geo:.4f}x (95% CI {ci.low:.4f}..{ci.high:.4f}) "
        f"-> {'kept' if needed else 'dropped'}",
        stage="finalists",
        flags=list(flags),
        kept=needed,
        speedup=geo,
        ci=(ci.low, ci.high),
    )
    return contribution
