"""How the search uses the learned prior (issue 52: never worse than no prior): the single-flag changes in its
order where it knows them, interleaved with what it does not know; its combinations built on what already moved
the metric."""

from __future__ import annotations

from collections.abc import Callable

from .prior import SpacePrior


def prior_order(
    singles: list[tuple[int, int]],
    prior: SpacePrior,
    early: Callable[[tuple[int, int]], bool] = lambda di: False,
    evidence: Callable[[tuple[int, int]], bool] = lambda di: False,
) -> tuple[list[tuple[int, int]], set[tuple[int, int]]]:
    """The single-flag changes in the prior's order where it has something to say, in the default's order
    where it has not: the values it knows nothing of (a dimension under a name no observation has: a user's
    --acf, a newer nvcc's flag) that the default measures early (`early`: a build mode, approximate arithmetic)
    come first (the front, measured before even the prior's combinations); the values it predicts worth a
    build (a positive score: faster, or maybe faster within half an sd), best first, fill the places the
    default gives them; every other value (unknown, or predicted slower but not confidently) keeps its place
    in the default order, interleaved; values confidently harmful go last. What the project's own compile line
    marks (`evidence`: an unoptimized target's -O level, where no combination of the prior holds a value of it)
    comes first whatever the prior predicts: observations of optimized builds cannot say what a level does to
    this one. (Issue 36: a fast-math choice under another name went behind values predicted slower with a large
    uncertainty; issue 52: the one value that gained, predicted -6% +/- 9%, was measured last: worse than no
    prior on such kernels.)"""
    first = [di for di in singles if evidence(di) or (not prior.of(*di).known and early(di))]
    rest = [di for di in singles if di not in first]
    worth = [di for di in rest if prior.of(*di).known and not prior.of(*di).harmful and prior.of(*di).score > 0]
    ranked = iter(sorted(worth, key=lambda di: -prior.of(*di).score))
    harmful = [di for di in rest if prior.of(*di).harmful]
    placed = set(worth)
    out = list(first) + [next(ranked) if di in placed else di for di in rest if di not in harmful]
    return out + harmful, set(first)


def built_on(combination: tuple[int, ...], incumbent: tuple[int, ...] | None) -> tuple[int, ...]:
    """The prior's combination on top of the incumbent that moved the metric: the incumbent's values where it
    has one (measured beats predicted), the combination's elsewhere. (Issue 52: a combination built after a
    fast-math value had shown the gain, without it, measured 0.997x.)"""
    if incumbent is None:
        return combination
    return tuple(m if m else c for c, m in zip(combination, incumbent, strict=True))
