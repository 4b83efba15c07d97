"""Issue 52, by construction: the prior orders what it knows and interleaves what it does not; once a value (known
or not) moves the metric, the next proposals, the prior's combinations included, build on it; a prior of low
confidence leaves the default order. (The held-out evaluation: tests/test_prior_heldout.py.)"""

from __future__ import annotations

import math

import pytest

from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.search.prior import LOW_CONFIDENCE, Prediction, SpacePrior
from compileiq_cmake.search.prior_plan import built_on, prior_order
from compileiq_cmake.search.search import FlagSearch


def _space() -> FlagSpace:
    return FlagSpace(
        family="nvcc",
        dimensions=(
            Dimension("fast_math_user", "", ((), ("--use_fast_math",)), relaxes_numerics=True),
            Dimension("load_cache", "", ((), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",))),
            Dimension("restrict", "", ((), ("--restrict",))),
            Dimension("ptxas_opt_level", "", ((), ("-Xptxas=-O1",))),
        ),
    )


KNOWN = {
    (1, 1): Prediction(0.02, 0.03, 0.0, 5.0),  # maybe faster: worth a build
    (1, 2): Prediction(-0.06, 0.09, 0.0, 5.0),  # predicted slower, but not confidently: keeps its default place
    (2, 1): Prediction(0.05, 0.01, 0.0, 5.0),  # confidently faster
    (3, 1): Prediction(-0.3, 0.02, 0.0, 5.0),  # confidently slower: last
}


def _flags(search: FlagSearch, n: int, loss=lambda fs: 0.0) -> list[tuple[str, ...]]:
    out = []
    search.tell(search.space.baseline(), 0.0)
    for _ in range(n):
        fs = search.ask()
        if fs is None:
            break
        out.append(fs.flags)
        search.tell(fs, loss(fs))
    return out


@pytest.mark.unit
def test_the_prior_orders_what_it_knows_and_leaves_the_rest_in_the_default_places():
    singles = [(1, 2), (2, 1), (0, 1), (1, 1), (3, 1)]  # a default order
    order, front = prior_order(singles, SpacePrior(KNOWN, "prior"), early=lambda di: di[0] == 0)
    assert front == {(0, 1)} and order[0] == (0, 1)  # unknown and measured early by the default: first
    assert order[1] == (1, 2)  # unsure, predicted slower: its default place, not behind the others
    assert order[2:4] == [(2, 1), (1, 1)]  # the values worth a build, best first, in the places the default gives them
    assert order[-1] == (3, 1)  # confidently harmful: last


@pytest.mark.unit
def test_a_value_that_moved_the_metric_is_in_the_combinations_and_the_next_proposals():
    """Seen on a softmax kernel with fast math unknown to the prior: fast math alone 1.08x, then the prior's
    combination without it 0.91x (13 builds against the default's 12)."""
    assert built_on((0, 1, 1, 0), (1, 0, 0, 0)) == (1, 1, 1, 0) and built_on((0, 1, 1, 0), None) == (0, 1, 1, 0)
    space = _space()
    sp = SpacePrior(KNOWN, "prior", ((0, 1, 1, 0),))
    fast = lambda fs: -math.log(1.15) if "--use_fast_math" in fs.flags else 0.0  # noqa: E731
    search = FlagSearch(space, 20, 3, 1, prior=sp, big_every=100)  # (no draws around the big mover here)
    asked = _flags(search, 3, fast)
    assert asked[0] == ("--use_fast_math",)  # unknown, approximate arithmetic: measured first, as the default does
    assert asked[1] == ("--use_fast_math", "-Xptxas=-dlcm=cg", "--restrict")  # the prior's combination on top of it
    assert "on the best measured so far" in search.proposed_by(space.flagset_from_flags(list(asked[1])))
    assert "--use_fast_math" in asked[2]  # and the singles that follow build on it too (a big gain)
    # 5%: in the combination, but the singles are measured alone (so small a gain may be the noise)
    search = FlagSearch(space, 20, 3, 1, prior=sp)
    asked = _flags(search, 3, lambda fs: -math.log(1.05) * ("--use_fast_math" in fs.flags))
    assert asked[1] == ("--use_fast_math", "-Xptxas=-dlcm=cg", "--restrict") and "--use_fast_math" not in asked[2]
    # a value that moved the metric less than MOVE_GAIN: the combination as the prior made it
    search = FlagSearch(space, 20, 3, 1, prior=sp)
    noise = _flags(search, 2, lambda fs: -0.01 * ("--use_fast_math" in fs.flags))
    assert noise[1] == ("-Xptxas=-dlcm=cg", "--restrict")


@pytest.mark.unit
def test_a_prior_of_low_confidence_leaves_the_default_order():
    space = _space()
    default = _flags(FlagSearch(space, 20, 5, 1), 6)
    vague = {di: Prediction(p.effect, max(p.sd, abs(p.effect) + 0.01), 0.0, 1.0) for di, p in KNOWN.items()}
    nothing = Prediction(0.0, 0.05, 0.1, 0.0)
    half = {(2, 1): vague[(2, 1)], (0, 1): nothing, (1, 1): nothing, (1, 2): nothing}
    assert SpacePrior(KNOWN, "prior").confidence == 1.0  # a value confidently faster: it has something to say
    assert SpacePrior(vague, "prior").confidence == 1.0  # every value known
    assert SpacePrior(half, "prior").confidence < LOW_CONFIDENCE  # vague, and of 3 of the 4 values nothing
    assert _flags(FlagSearch(space, 20, 5, 1, prior=SpacePrior(half, "prior", ((0, 0, 1, 0),))), 6) == default
    mostly_unknown = SpacePrior(
        {(1, 1): KNOWN[(1, 1)], (0, 1): Prediction(0.0, 0.05, 0.1, 0.0), (1, 2): Prediction(0.0, 0.05, 0.1, 0.0)},
        "prior",
        ((0, 1, 0, 0),),
        observations=30,
    )
    assert mostly_unknown.confidence < LOW_CONFIDENCE
    assert _flags(FlagSearch(space, 20, 5, 1, prior=mostly_unknown), 6) == default


@pytest.mark.unit
def test_an_unoptimized_targets_level_comes_before_the_priors_combination_even_where_the_prior_knows_it():
    """A -O0 target with a host prior (your tunes of -O3 targets): the prior's observations are of optimized
    builds (it predicts -O2 slower than their -O3), but the project's own line says the level is what matters
    here; the level first, then the prior's combination built on the level that moved the metric."""
    from dataclasses import replace  # noqa: PLC0415

    space = _space()
    dims = list(space.dimensions)
    dims[3] = replace(dims[3], measured_first=True, unlike_observed=True)  # (standing in for a -O0 target's level)
    space = replace(space, dimensions=tuple(dims))
    sp = SpacePrior(KNOWN, "prior", ((0, 1, 1, 0),))  # it knows (3, 1): confidently slower, and proposes a combination
    order, front = prior_order([(1, 1), (3, 1), (2, 1)], sp, evidence=lambda di: di[0] == 3)
    assert order[0] == (3, 1) and (3, 1) in front
    level = lambda fs: -math.log(8.0) if "-Xptxas=-O1" in fs.flags else 0.0  # noqa: E731
    asked = _flags(FlagSearch(space, 20, 3, 1, prior=sp, big_every=100), 3, level)
    assert asked[0] == ("-Xptxas=-O1",)  # the marked level, not the prior's combination
    assert asked[1] == ("--use_fast_math", "-Xptxas=-O1")  # (unknown approximate arithmetic, on top of the level)
    assert asked[2] == ("--use_fast_math", "-Xptxas=-dlcm=cg", "--restrict", "-Xptxas=-O1")  # the combination on it
    # without the mark, the prior's combination comes first and the level it predicts slower last
    asked = _flags(FlagSearch(_space(), 20, 3, 1, prior=sp), 1)
    assert asked[0] != ("-Xptxas=-O1",)
    # a combination that holds the marked value (your earlier tune of this code measured it): that combination
    # before the level alone (after the unknown approximate arithmetic, as always)
    holding = SpacePrior(KNOWN, "prior", ((0, 1, 1, 1),))
    asked = _flags(FlagSearch(space, 20, 3, 1, prior=holding, big_every=100), 2, level)
    assert asked == [("--use_fast_math",), ("-Xptxas=-dlcm=cg", "--restrict", "-Xptxas=-O1")]
    # a dimension of two levels (-O2, -O3) whose one value a combination holds: neither alone before it (the other
    # measured first would become the incumbent the combination is built on, and replace the prior's value)
    two = list(space.dimensions)
    two[1] = replace(two[1], measured_first=True, unlike_observed=True)
    two[3] = replace(two[3], measured_first=False, unlike_observed=False)
    asked = _flags(FlagSearch(replace(space, dimensions=tuple(two)), 20, 3, 1, prior=sp, big_every=100), 2)
    assert asked[1] == ("-Xptxas=-dlcm=cg", "--restrict") and ("-Xptxas=-dlcm=cs",) not in asked
    # marked first only (-march=native where no instruction set is named: the prior's observations are like it)
    dims[3] = replace(dims[3], unlike_observed=False)
    asked = _flags(FlagSearch(replace(space, dimensions=tuple(dims)), 20, 3, 1, prior=sp, big_every=100), 1, level)
    assert asked[0] != ("-Xptxas=-O1",)
