"""The search over the discrete flag space. Seeded and deterministic; a cache answers every flag set that was
already built or is being built, so no flag set is proposed twice.

The default (`FlagSearch`, chosen with benchmarks/evaluation/search_efficiency.py, see docs/benchmarks/search.md) uses
the structure of a flag space:

1. warm start: the given flag sets (best flags of earlier tunes), mapped onto this space;
2. single-flag changes: every value of every dimension alone (in a seeded random order, the values of
   dimensions that relax numerics first: fast math, approximate division and square root, flush to zero
   are the likely big movers of math-bound kernels), so each value's own effect is known (at most
   `SINGLES_SHARE` of the budget);
3. best-first local search: take the best measured valid point whose one-flag neighbourhood is not
   exhausted and build its unseen neighbour of best prior, the prior being the single-flag effects (the
   change's value effect minus the effect of the value it replaces). Starting from the best single this
   combines the best singles greedily, then climbs; interactions (a flag that hurts alone but helps in
   combination) are found because every neighbour of the incumbent is tried eventually;
4. exploration: every `EXPLORE_EVERY`-th proposal after the singles, and whenever no neighbourhood is left,
   comes from a nevergrad portfolio (discrete (1+1) strategies and random search) that is told every
   result;
5. big movers: once a single value is at least `BIG_GAIN` faster alone (fast math on a math-bound
   kernel), every `BIG_EVERY`-th proposal, singles phase included, keeps the incumbent's big-mover values
   and draws every other dimension uniformly (at most `BIG_MAX` such draws, so a landscape where greedy
   combination is what pays loses at most that many builds). Such a flag rewrites much of the code, so the other flags'
   single effects, measured without it, say little about their effects with it; pairs of changes that
   are neutral alone but strong together (n-body: `-Xptxas -O1` with `-maxrregcount=32` under fast math)
   are found by these draws rather than by one-flag climbing. Without a big mover nothing changes;
6. pivot: once a big mover is known, the remaining single-flag changes are measured on top of it (the
   strongest big mover's single point) instead of alone, and the local search's priors use these
   conditional effects: under fast math, flags it implies cost no build (same canonical flags) and the
   effects measured are the ones that matter for combinations with it.
7. with a learned prior (`prior`, search/prior_plan.py; issue 52: never worse than without it): the values it
   predicts worth a build in its order, the others in the default's; its combinations first, built on a value
   that already moved the metric; the pivot is the best point one value (known or not) made `big_gain` faster;
   a prior of low confidence (`LOW_CONFIDENCE`) is not used: the default order. An unoptimized target's -O level
   (`unlike_observed`: the compile line's mark where the prior's observations, of optimized builds, cannot know
   it) comes first whatever the prior predicts, unless one of its combinations holds a value of it (then that
   one is first).

Invalid trials get `INVALID_LOSS` and are never an incumbent. `NevergradSearch` is the earlier default (a
plain nevergrad optimizer or portfolio behind the same cache, search/nevergrad_search.py), kept for comparison."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..flags import FlagSpace
from ..model.records import FlagSet
from .nevergrad_search import INVALID_LOSS as INVALID_LOSS  # (named here: the tune's and the tests')
from .nevergrad_search import PORTFOLIO as PORTFOLIO  # (named here: benchmarks/evaluation's)
from .nevergrad_search import NevergradSearch
from .nevergrad_search import _unseen_fallback as _unseen_fallback  # (named here: the tests')
from .prior import LOW_CONFIDENCE, SpacePrior
from .prior_plan import built_on
from .prior_plan import prior_order as prior_order  # (named here: the tests')

SINGLES_SHARE = 0.6  # at most this share of the budget goes to single-flag changes
EXPLORE_EVERY = 4  # after the singles, one proposal in this many comes from the nevergrad portfolio
BIG_GAIN = 0.10  # a single flag value at least this much faster alone is a "big mover" ...
BIG_EVERY = 2  # ... and then one proposal in this many keeps it and draws the other dimensions at random,
BIG_MAX = 4  # ... at most this many times
MOVE_GAIN = 0.03  # with a prior: a value that moved the metric this much is in the prior's combinations


class FlagSearch:
    """The default search: warm start, single-flag changes, best-first local search with a nevergrad
    portfolio for exploration (module docstring). `ask()` returns None when the space is exhausted."""

    def __init__(
        self,
        space: FlagSpace,
        budget: int,
        seed: int,
        workers: int,
        *,
        warm_start: Sequence[FlagSet] = (),
        singles_share: float = SINGLES_SHARE,
        explore_every: int = EXPLORE_EVERY,
        explore_from_start: bool = False,
        big_gain: float = BIG_GAIN,
        big_every: int = BIG_EVERY,
        big_max: int = BIG_MAX,
        pivot: bool = True,
        numerics_first: bool = True,
        prior: SpacePrior | None = None,
    ) -> None:
        self.space = space
        self._dims = space.dimensions
        self._names = [d.name for d in self._dims]
        self._rng = random.Random(seed)
        self._explorer_args = (space, budget, seed, workers)
        self._explorer: NevergradSearch | None = None  # made at its first ask (most tunes of a suite never ask it)
        self._told: list[tuple[FlagSet, float]] = []  # what it is told at its making, in order
        self._losses: dict[str, float] = {}
        self._choice_of: dict[str, tuple[int, ...]] = {}  # key -> value index per dimension
        self._pending: set[str] = set()
        self._pending_sets: dict[str, FlagSet] = {}  # the flag sets being built or measured, by key
        self._flagsets: dict[tuple[int, ...], FlagSet] = {}
        self._exhausted: set[str] = set()  # keys whose whole neighbourhood is measured or being built
        self._explore_every = max(0, int(explore_every))
        self._local_asks = 0
        self._explore_from_start = explore_from_start  # count warm-start and single-flag asks too
        self._big_gain = big_gain
        self._big_every = big_every
        self._big_asks = 0
        self._big_max = big_max  # at most this many big-mover draws (0: no limit)
        self._big_drawn = 0
        self._pivot = pivot  # once a big mover is known, the remaining singles are measured on top of it
        if prior is not None and prior.confidence < LOW_CONFIDENCE:
            prior = None  # a prior that knows too little (of this space, or at all) leaves the default order
        self._learned = prior
        self._origin: dict[str, str] = {}  # key -> why the prior proposed it
        self._prior_firsts: dict[tuple[int, ...], str] = {}  # the prior's combinations -> why
        self._one_value: set[str] = set()  # keys of points one value away from a measured one (singles)
        # values the prior knows nothing of that the default measures early: before even the prior's combinations
        self._front: set[tuple[int, int]] = set()
        singles = self._ordered_singles(numerics_first, prior)
        self._singles = singles[: max(1, math.ceil(singles_share * max(budget - 1, 1)))]
        self._warm: list[tuple[int, ...]] = []
        self._warm_start(warm_start, prior)

    def _ordered_singles(self, numerics_first: bool, prior: SpacePrior | None) -> list[tuple[int, int]]:
        """Every single-flag change (dimension, value) in the order they are measured: seeded, then the likely
        big movers first; with a prior, in its order (what it knows nothing of that is measured early: `_front`)."""
        singles = [(d, i) for d, dim in enumerate(self._dims) for i in range(1, len(dim.values))]
        self._rng.shuffle(singles)
        # build modes (device LTO) first, then what the setup marked (an unoptimized build's -O level), then
        # approximate-arithmetic values: the likely big movers (stable sort: seeded order within each part)
        singles.sort(
            key=lambda di: (
                not self._dims[di[0]].build_mode,
                not self._dims[di[0]].measured_first,
                numerics_first and not self._dims[di[0]].relaxes_numerics,
                not di[1] <= self._dims[di[0]].leading,
                di[1] if di[1] <= self._dims[di[0]].leading else 0,
            )
        )
        if prior is not None:
            dims = self._dims

            def early(di: tuple[int, int]) -> bool:
                dim = dims[di[0]]
                return (
                    dim.build_mode
                    or dim.measured_first
                    or di[1] <= dim.leading
                    or (numerics_first and dim.relaxes_numerics)
                )

            def evidence(di: tuple[int, int]) -> bool:  # the compile line's mark, where the prior cannot know it
                return dims[di[0]].unlike_observed and not any(c[di[0]] for c in prior.first)

            singles, self._front = prior_order(singles, prior, early, evidence)
        return singles

    def _warm_start(self, warm_start: Sequence[FlagSet], prior: SpacePrior | None) -> None:
        """The warm start's flag sets mapped onto this space, then the prior's combinations (their origin said)."""
        for fs in warm_start:
            choice = self._map_flags(fs.flags)
            if any(choice) and choice not in self._warm:
                self._warm.append(choice)
        first, source = (prior.first, prior.source) if prior is not None else ((), "")
        for n, choice in enumerate(first):
            if choice not in self._warm:
                self._warm.append(choice)
                self._prior_firsts[choice] = (
                    f"the {source}'s predicted best combination"
                    if n == 0
                    else f"the {source}'s combination of every value predicted faster"
                )

    def extend(self, name: str, values: Sequence[tuple[str, ...]]) -> int:
        """More values of dimension `name` (a candidate source's next generation, tune.acf_engine), appended so
        that every earlier index stays valid; each is a single-flag change measured next (alone, or on the
        pivot). The nevergrad explorer keeps the values it was made with. How many were new."""
        d = self._names.index(name)
        dim = self._dims[d]
        new = tuple(dict.fromkeys(v for v in values if v and v not in dim.values))
        if not new:
            return 0
        grown = replace(dim, values=dim.values + new)
        self._dims = self._dims[:d] + (grown,) + self._dims[d + 1 :]
        self.space = replace(self.space, dimensions=self._dims)
        self._singles[0:0] = [(d, i) for i in range(len(dim.values), len(grown.values))]
        self._exhausted.clear()  # every measured point has new neighbours
        return len(new)

    def waiting(self, name: str) -> int:
        """Values of dimension `name` whose single-flag change is still to be proposed or being measured."""
        d = self._names.index(name)
        queued = sum(1 for dd, _ in self._singles if dd == d)
        busy = sum(1 for key in self._pending if dict(self._pending_sets[key].choices).get(name, 0))
        return queued + busy

    def proposed_by(self, flagset: FlagSet) -> str | None:
        """Why the prior proposed this flag set (None: it did not; the singles' order is its only other say)."""
        return self._origin.get(flagset.key)

    # ---- bookkeeping
    def _map_flags(self, flags: Iterable[str]) -> tuple[int, ...]:
        """Value index per dimension of these flags; tokens that are not part of this space are ignored."""
        tokens = set(flags)
        choice = []
        for dim in self._dims:
            best = 0
            for i, value in enumerate(dim.values[1:], start=1):
                if all(t in tokens for t in value) and len(value) > len(dim.values[best]):
                    best = i
            choice.append(best)
        return tuple(choice)

    def _flagset(self, choice: tuple[int, ...]) -> FlagSet:
        fs = self._flagsets.get(choice)
        if fs is None:
            fs = self._flagsets[choice] = self.space.flagset(dict(zip(self._names, choice, strict=False)))
        return fs

    def _taken(self, key: str) -> bool:
        return key in self._losses or key in self._pending

    def seen(self, flagset: FlagSet) -> bool:
        return flagset.key in self._losses

    def tell(self, flagset: FlagSet, loss: float) -> None:
        """Tell a result: of a flag set this search asked for, or of one it never proposed (the baseline,
        trials restored from the store)."""
        loss = loss if math.isfinite(loss) else INVALID_LOSS
        self._pending.discard(flagset.key)
        self._pending_sets.pop(flagset.key, None)
        chosen = dict(flagset.choices)
        if not self._names_its_flags(chosen, flagset.flags):
            # a restored trial whose value indices are another run's (control files sampled again, or an engine's
            # later generation): its values as this space has them, read from its flags
            chosen = {n: i for n, i in zip(self._names, self._map_flags(flagset.flags), strict=False) if i}
            flagset = FlagSet(choices=tuple(chosen.items()), flags=flagset.flags)
        self._choice_of.setdefault(flagset.key, tuple(chosen.get(n, 0) for n in self._names))
        self._losses[flagset.key] = loss
        if self._explorer is None:
            self._told.append((flagset, loss))
        else:
            self._explorer.tell(flagset, loss)

    def _names_its_flags(self, chosen: dict[str, int], flags: tuple[str, ...]) -> bool:
        """Whether choices index values of this space, and a control file's value (its path, which no interaction
        rule drops) is one the flag set holds."""
        dims = dict(zip(self._names, self._dims, strict=False))
        return all(
            n in dims
            and 0 <= i < len(dims[n].values)
            and all(t in flags for t in dims[n].values[i] if "--apply-controls=" in t)
            for n, i in chosen.items()
        )

    # ---- proposals
    def _propose(self, choice: tuple[int, ...]) -> FlagSet | None:
        fs = self._flagset(choice)
        if self._taken(fs.key):
            return None
        self._pending.add(fs.key)
        self._pending_sets[fs.key] = fs
        return fs

    def _single_loss(self, d: int, i: int, guess: bool = False) -> float:
        """The value's measured loss alone; unmeasured: 0, or with `guess` minus the prior's predicted effect."""
        if i == 0:
            return 0.0
        choice = [0] * len(self._dims)
        choice[d] = i
        unmeasured = -self._learned.of(d, i).effect if guess and self._learned is not None else 0.0
        return self._losses.get(self._flagset(tuple(choice)).key, unmeasured)

    def _local(self) -> FlagSet | None:
        """Best-first: the best valid measured point with an unseen neighbour; its neighbour of best prior."""
        ranked = sorted((loss, key) for key, loss in self._losses.items() if loss < INVALID_LOSS)
        pivot = self._pivot_base()
        for _, key in ranked:
            if key in self._exhausted:
                continue
            base = self._choice_of[key]
            neighbours = []
            for d, dim in enumerate(self._dims):
                for i in range(len(dim.values)):
                    if i == base[d]:
                        continue
                    choice = base[:d] + (i,) + base[d + 1 :]
                    prior = self._prior(d, i, pivot) - self._prior(d, base[d], pivot)
                    neighbours.append((prior, d, i, choice))
            neighbours.sort()
            for _, _, _, choice in neighbours:
                fs = self._propose(choice)
                if fs is not None:
                    return fs
            self._exhausted.add(key)
        return None

    def _explore(self) -> FlagSet | None:
        if self._explorer is None:  # the same calls in the same order as when it was made at once: the same asks
            self._explorer = NevergradSearch(*self._explorer_args)
            for told in self._told:
                self._explorer.tell(*told)
            self._told.clear()
        fs = self._explorer.ask(taken=self._taken)
        if fs is not None:
            self._pending.add(fs.key)
            self._pending_sets[fs.key] = fs
        return fs

    def _big_movers(self) -> list[tuple[int, int]]:
        """(dimension, value) of the measured single-flag changes at least `big_gain` faster alone."""
        threshold = -math.log1p(self._big_gain)
        return [
            (d, i)
            for d, dim in enumerate(self._dims)
            for i in range(1, len(dim.values))
            if self._single_loss(d, i) < threshold
        ]

    def _strongest(self, big: list[tuple[int, int]]) -> tuple[int, int]:
        """The big mover (dimension, value) that is fastest alone."""
        return min(big, key=lambda di: self._single_loss(*di))

    def _conditional(self, big: list[tuple[int, int]]) -> FlagSet | None:
        """Keep the incumbent's big-mover values; draw every other dimension uniformly (choice space)."""
        _, best = min((loss, key) for key, loss in self._losses.items() if loss < INVALID_LOSS)
        base = self._choice_of[best]
        fixed = {d for d, i in big if base[d] == i}
        if not fixed:
            fixed = {self._strongest(big)[0]}
            base = tuple(dict(big).get(d, 0) if d in fixed else v for d, v in enumerate(base))
        for _ in range(60):
            choice = tuple(
                base[d] if d in fixed else self._rng.randrange(len(dim.values)) for d, dim in enumerate(self._dims)
            )
            fs = self._propose(choice)
            if fs is not None:
                return fs
        return None

    def ask(self) -> FlagSet | None:
        """A flag set neither measured nor being built; None when the space is exhausted."""
        fs = self._ask_big() if self._big_gain > 0 else None
        if fs is None and self._explore_from_start and (self._warm or self._singles):
            self._local_asks += 1
            fs = self._explore_now()
        if fs is None:
            fs = self._ask_queued()
        if fs is not None:
            return fs
        self._local_asks += 1
        return self._explore_now() or self._local() or self._explore()

    def _ask_big(self) -> FlagSet | None:
        """Every `big_every`-th ask (at most `big_max` of them): a draw around the big movers' values."""
        self._big_asks += 1
        big = (
            self._big_movers()
            if self._big_asks % self._big_every == 0 and (not self._big_max or self._big_drawn < self._big_max)
            else []
        )
        fs = self._conditional(big) if big else None
        if fs is not None:
            self._big_drawn += 1
        return fs

    def _explore_now(self) -> FlagSet | None:
        """Every `explore_every`-th local ask: an exploring draw (None: not now, or nothing left)."""
        if self._explore_every and self._local_asks % self._explore_every == 0:
            return self._explore()
        return None

    def _ask_queued(self) -> FlagSet | None:
        """The queued points: the singles the prior puts in front, the warm starts, the other singles."""
        while self._singles and self._singles[0] in self._front:
            fs = self._single(*self._singles.pop(0))
            if fs is not None:
                return fs
        while self._warm:
            choice = self._warm.pop(0)
            why = self._prior_firsts.get(choice)
            if why is not None:  # the prior's: on top of what already moved the metric (a value it did not know)
                moved = self._moved(MOVE_GAIN)
                choice = built_on(choice, moved)
                why += "" if moved is None or moved == choice else ", on the best measured so far"
            fs = self._propose(choice)
            if fs is not None:
                if why is not None:
                    self._origin[fs.key] = why
                return fs
        while self._singles:
            d, i = self._singles.pop(0)
            fs = self._single(d, i)
            if fs is not None:
                return fs
        return None

    def _pivot_base(self) -> tuple[int, ...] | None:
        """With `pivot`: the single-flag point of the strongest big mover, the base of the remaining singles."""
        if not self._pivot or self._big_gain <= 0:
            return None
        if self._learned is not None:
            return self._moved(self._big_gain)
        big = self._big_movers()
        if not big:
            return None
        d, i = self._strongest(big)
        base = [0] * len(self._dims)
        base[d] = i
        return tuple(base)

    def _moved(self, gain: float) -> tuple[int, ...] | None:
        """With a prior: the best valid point that one value (known to the prior or not) made at least `gain`
        faster (a single, alone or on the pivot), or the prior's combination once at least `big_gain` faster.
        The prior's combinations build on it from MOVE_GAIN, the remaining singles from `big_gain` (a smaller
        gain can be the noise: measured on it, the value that reaches the best alone is missed)."""
        ranked = [
            (loss, key)
            for key, loss in self._losses.items()
            if loss < -math.log1p(max(gain, self._big_gain) if key in self._origin else gain)
            and (key in self._one_value or key in self._origin)
        ]
        return self._choice_of[min(ranked)[1]] if ranked else None

    def _single(self, d: int, i: int) -> FlagSet | None:
        """Value i of dimension d alone, or on top of the pivot: without a prior, another value of the pivot's
        dimension alone; with one, that value in the pivot's place (the pivot is what moved the metric)."""
        base = self._pivot_base()
        if base is not None and (base[d] == 0 or self._learned is not None):
            choice = list(base)
        else:
            choice = [0] * len(self._dims)
        choice[d] = i
        fs = self._propose(tuple(choice))
        if fs is not None:
            self._one_value.add(fs.key)
        return fs

    def _prior(self, d: int, i: int, base: tuple[int, ...] | None) -> float:
        """Expected loss change of value i of dimension d: measured on the pivot `base` when it was, else
        alone."""
        if base is not None and base[d] == 0 and i != 0:
            choice = list(base)
            choice[d] = i
            key = self._flagset(base).key
            cond = self._losses.get(self._flagset(tuple(choice)).key)
            if cond is not None and cond < INVALID_LOSS and key in self._losses:
                return cond - self._losses[key]
        return self._single_loss(d, i, guess=True)
