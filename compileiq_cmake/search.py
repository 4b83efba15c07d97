"""The search: a seeded nevergrad portfolio over the discrete flag space. A cache answers every flag set
that was already built, so no flag set is built or benchmarked twice."""

from __future__ import annotations

import math
import random

import nevergrad as ng

from .flags import FlagSpace
from .records import FlagSet

# Portfolio members: two discrete (1+1) evolution strategies of different mutation laws and random search.
PORTFOLIO = ("DiscreteLenglerOnePlusOne", "PortfolioDiscreteOnePlusOne", "RandomSearch")
INVALID_LOSS = 10.0  # log-ratio loss given to failed trials: worse than any real slowdown
_MAX_REPEATS = 30


class FlagSearch:
    def __init__(self, space: FlagSpace, budget: int, seed: int, workers: int) -> None:
        self.space = space
        self._param = ng.p.Dict(**{d.name: ng.p.Choice(list(range(len(d.values)))) for d in space.dimensions})
        self._param.random_state.seed(seed)
        optimizer_cls = ng.optimizers.ConfPortfolio(optimizers=list(PORTFOLIO), warmup_ratio=0.0)
        self._opt = optimizer_cls(self._param, budget=max(budget * 20, 100), num_workers=workers)
        self._losses: dict[str, float] = {}
        self._asked: dict[str, object] = {}
        self._rng = random.Random(seed)

    def seen(self, flagset: FlagSet) -> bool:
        return flagset.key in self._losses

    def tell(self, flagset: FlagSet, loss: float) -> None:
        """Tell the optimizer a result: of a flag set it asked for, or of one it never proposed (the
        baseline, trials restored from the store)."""
        loss = loss if math.isfinite(loss) else INVALID_LOSS
        self._losses[flagset.key] = loss
        cand = self._asked.pop(flagset.key, None)
        if cand is None:
            chosen = dict(flagset.choices)
            self._opt.suggest({d.name: chosen.get(d.name, 0) for d in self.space.dimensions})
            cand = self._opt.ask()
        self._opt.tell(cand, loss)

    def ask(self) -> FlagSet | None:
        """A flag set neither measured nor already asked for; None when the space seems exhausted."""
        for _ in range(_MAX_REPEATS):
            cand = self._opt.ask()
            flagset = self.space.flagset(dict(cand.value))
            if flagset.key in self._losses:
                self._opt.tell(cand, self._losses[flagset.key])
                continue
            if flagset.key in self._asked:
                continue  # already being built: its result arrives later
            self._asked[flagset.key] = cand
            return flagset
        # The optimizer keeps proposing known points: fall back to an unseen random point.
        for _ in range(1000):
            choice = {d.name: self._rng.randrange(len(d.values)) for d in self.space.dimensions}
            flagset = self.space.flagset(choice)
            if flagset.key not in self._losses and flagset.key not in self._asked:
                self._opt.suggest(choice)
                self._asked[flagset.key] = self._opt.ask()
                return flagset
        return None
