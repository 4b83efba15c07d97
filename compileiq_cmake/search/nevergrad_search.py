"""`NevergradSearch`: a plain nevergrad optimizer (or a portfolio of several) behind the search's cache, the
default before issue 5 and `FlagSearch`'s explorer; and the fallback to an unseen point when an optimizer keeps
proposing known ones."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

from ..flags import FlagSpace
from ..model.records import FlagSet

# Portfolio members: two discrete (1+1) evolution strategies of different mutation laws and random search.
PORTFOLIO = ("DiscreteLenglerOnePlusOne", "PortfolioDiscreteOnePlusOne", "RandomSearch")
INVALID_LOSS = 10.0  # log-ratio loss given to failed trials: worse than any real slowdown
_MAX_REPEATS = 10
_ENUMERATE_LIMIT = 20_000  # spaces up to this size are enumerated to find an unseen point (well under 1 s)


def _unseen_fallback(space: FlagSpace, rng: random.Random, taken) -> dict[str, int] | None:
    """An unseen point: random draws first, then (small spaces) enumeration, so a small space is exhausted."""
    for _ in range(1000):
        choice = {d.name: rng.randrange(len(d.values)) for d in space.dimensions}
        if not taken(space.flagset(choice).key):
            return choice
    if space.size <= _ENUMERATE_LIMIT:
        for combo in itertools.product(*(range(len(d.values)) for d in space.dimensions)):
            choice = {d.name: i for d, i in zip(space.dimensions, combo, strict=False)}
            if not taken(space.flagset(choice).key):
                return choice
    return None


class NevergradSearch:
    """A nevergrad optimizer (a registry name) or a ConfPortfolio of several behind the cache. The shipped
    default before issue 5 was `NevergradSearch(..., optimizer=PORTFOLIO)`."""

    def __init__(
        self, space: FlagSpace, budget: int, seed: int, workers: int, *, optimizer: str | Sequence[str] = PORTFOLIO
    ) -> None:
        import nevergrad as ng  # noqa: PLC0415 (slow to import: only a search needs it, not every CLI command)

        self.space = space
        self._param = ng.p.Dict(**{d.name: ng.p.Choice(list(range(len(d.values)))) for d in space.dimensions})
        self._param.random_state.seed(seed)
        if isinstance(optimizer, str):
            optimizer_cls = ng.optimizers.registry[optimizer]
        else:
            optimizer_cls = ng.optimizers.ConfPortfolio(optimizers=list(optimizer), warmup_ratio=0.0)
        self._opt = optimizer_cls(self._param, budget=max(budget * 20, 100), num_workers=workers)
        self._sizes = {d.name: len(d.values) for d in space.dimensions}
        self._losses: dict[str, float] = {}
        self._asked: dict[str, object] = {}
        self._rng = random.Random(seed)

    def seen(self, flagset: FlagSet) -> bool:
        return flagset.key in self._losses

    def tell(self, flagset: FlagSet, loss: float) -> None:
        """Tell the optimizer a result: of a flag set it asked for, or of one it never proposed (the
        baseline, trials restored from the store, points another strategy proposed)."""
        loss = loss if math.isfinite(loss) else INVALID_LOSS
        self._losses[flagset.key] = loss
        cand = self._asked.pop(flagset.key, None)
        chosen = dict(flagset.choices)
        if cand is None and any(chosen.get(d.name, 0) >= self._sizes[d.name] for d in self.space.dimensions):
            return  # a value added after it was made (FlagSearch.extend): outside its parametrization
        if cand is None:
            self._opt.suggest({d.name: chosen.get(d.name, 0) for d in self.space.dimensions})
            cand = self._opt.ask()
        self._opt.tell(cand, loss)

    def ask(self, taken=None) -> FlagSet | None:
        """A flag set neither measured nor already asked for (nor `taken(key)`); None when the space seems
        exhausted."""
        taken = taken or (lambda key: False)
        busy = lambda key: key in self._losses or key in self._asked or taken(key)  # noqa: E731
        for _ in range(_MAX_REPEATS):
            cand = self._opt.ask()
            flagset = self.space.flagset(dict(cand.value))
            if flagset.key in self._losses:
                self._opt.tell(cand, self._losses[flagset.key])
                continue
            if busy(flagset.key):
                continue  # already being built: its result arrives later
            self._asked[flagset.key] = cand
            return flagset
        # The optimizer keeps proposing known points: fall back to an unseen point.
        choice = _unseen_fallback(self.space, self._rng, busy)
        if choice is None:
            return None
        flagset = self.space.flagset(choice)
        self._opt.suggest(choice)
        self._asked[flagset.key] = self._opt.ask()
        return flagset
