#!/usr/bin/env python3
"""Issue 52: rules of the prior's use tried on the held-out replay before a change (docs/benchmarks/prior.md,
"A host prior ... variants"). It patches the search's rules in this process only, then runs
prior_heldout.py with the same arguments; nothing of it is the product's code.

Variants (environment variables, combinable):
  HALFSD=K        the prior's second combination keeps a value only when effect - K sd >= 1% (today: effect
                  >= 1%); K = 0.5 in the runs recorded
  FRONT=uncertain the early values (fast math, build modes) the prior is not confident of (effect - sd <= 0)
                  are measured first, before its combinations, as the default measures them (today: only
                  the early values it knows nothing of)
  MOVED=alone     the point the remaining singles build on is a single value alone that moved the metric (or
                  the prior's combination), not a single measured on an earlier pivot
  MOVED=over      ... a point at least the gain faster than the point one value away from it (the value itself
                  moved the metric), instead of at least the gain faster than the baseline
  RULE1=gain      the prior's first (confident) combination keeps a value only when effect - sd >= 1% (today:
                  effect - sd > 0)
  ONE=1           only the first of the prior's combinations is proposed (today: up to two)
  SLOWER=P        the prior's combinations leave out a value that was slower by more than 1% (or invalid) on
                  a weighted share P or more of the similar kernels (the fit's own similarity weights, shrunk
                  to the share over all kernels as p_invalid is)

Usage: HALFSD=0.5 MOVED=over python3 benchmarks/evaluation/prior_variants.py run --seeds 30 --jobs 2 \\
           --hyper docs/benchmarks/raw/prior-52/hyper.json --json OUT.json      (the CUDA kernels)
       ... run ... --prior docs/benchmarks/raw/prior-host/prior_nvcc_gcc.json --kernels <the 13 host kernels> \\
           --hyper docs/benchmarks/raw/prior-host/variants/hyper-host.json --json OUT.json
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "benchmarks" / "landscapes"), str(HERE.parents[1])]

import compileiq_cmake.search.prior as pr  # noqa: E402
import compileiq_cmake.search.search as ss  # noqa: E402

_space_prior = pr.space_prior


def space_prior(model, space, features, arch="", combinations=2):  # noqa: ANN001, ANN201
    """The shipped rule, with HALFSD: the second combination's values need effect - K sd >= 1%."""
    sp = _space_prior(model, space, features, arch, combinations)
    k = os.environ.get("HALFSD", "")
    slower = float(os.environ.get("SLOWER", "1.1"))
    rule1 = math.log1p(pr.VALUE_GAIN) if os.environ.get("RULE1") == "gain" else 0.0
    one = os.environ.get("ONE") == "1"
    if not k and slower > 1 and not rule1 and not one:
        return sp
    k = k or "0"
    ps = p_slower(model, space, features, arch)
    names = [d.name for d in space.dimensions]
    preds = sp.predictions
    rules = [
        lambda p, di: p.known and p.effect - p.sd > rule1 and p.p_invalid < 0.2 and ps.get(di, 0.0) < slower,
        lambda p, di: p.known
        and p.effect - float(k) * p.sd >= math.log1p(pr.VALUE_GAIN)
        and p.p_invalid < 0.5
        and ps.get(di, 0.0) < slower,
    ]
    firsts, keys = [], set()
    for rule in rules[:combinations]:
        choice = []
        for d, dim in enumerate(space.dimensions):
            ok = [(preds[(d, i)].score, i) for i in range(1, len(dim.values)) if rule(preds[(d, i)], (d, i))]
            choice.append(max(ok)[1] if ok else 0)
        t = tuple(choice)
        key = space.flagset(dict(zip(names, t, strict=False))).key
        predicted = sum(preds[(d, i)].effect for d, i in enumerate(t) if i)
        if any(t) and key not in keys and predicted >= math.log1p(pr.FIRST_GAIN):
            firsts.append(t)
            keys.add(key)
    return replace(sp, first=tuple(firsts[:1] if one else firsts))


def p_slower(model, space, features, arch=""):  # noqa: ANN001, ANN201
    """(dimension index, value index) -> the similarity-weighted share of kernels where that value alone was slower
    than 1% or invalid (shrunk as the fit shrinks p_invalid)."""
    import numpy as np  # noqa: PLC0415

    from compileiq_cmake.search.prior_fit import _weights  # noqa: PLC0415

    table = model._table(space.family)
    if table is None:
        return {}
    hyper = model.hyper.get(space.family, pr.Hyper())
    cols = [table.names.index(f) for f in hyper.features if f in table.names]
    x = np.array([[features.get(n, 0.0) for n in table.names]], dtype=float)
    W = _weights((x - table.mean) / table.scale, table.Z, cols, hyper.bandwidth)[0]
    slow = np.where(np.isnan(table.Y), np.where(np.isnan(table.INV), np.nan, table.INV), table.Y < -math.log1p(0.01))
    seen = ~np.isnan(slow)
    s0 = np.where(seen, slow, 0.0)
    prior_share = (s0.sum(axis=0) + 0.5) / (seen.sum(axis=0) + 1.0)
    share = (W @ s0 + hyper.shrink * prior_share) / (W @ seen + hyper.shrink)
    col = {k: j for j, k in enumerate(table.keys)}
    out = {}
    for d, dim in enumerate(space.dimensions):
        for i in range(1, len(dim.values)):
            j = col.get(pr.value_key(space.family, dim.name, dim.values[i]))
            if j is not None:
                out[(d, i)] = float(share[j])
    return out


def prior_order(singles, prior, early=lambda di: False):  # noqa: ANN001, ANN201
    """FRONT=uncertain: search/prior_plan.prior_order with the early values it is not confident of in front."""

    def unsure(di):  # noqa: ANN001, ANN202
        p = prior.of(*di)
        return not p.known or (not p.harmful and p.effect - p.sd <= 0)

    first = [di for di in singles if unsure(di) and early(di)]
    rest = [di for di in singles if di not in first]
    worth = [di for di in rest if prior.of(*di).known and not prior.of(*di).harmful and prior.of(*di).score > 0]
    ranked = iter(sorted(worth, key=lambda di: -prior.of(*di).score))
    harmful = [di for di in rest if prior.of(*di).harmful]
    out = list(first) + [next(ranked) if di in set(worth) else di for di in rest if di not in harmful]
    return out + harmful, set(first)


def moved_alone(self, gain):  # noqa: ANN001, ANN201
    ranked = [
        (loss, key)
        for key, loss in self._losses.items()
        if loss < -math.log1p(max(gain, self._big_gain) if key in self._origin else gain)
        and ((key in self._one_value and sum(1 for c in self._choice_of[key] if c) == 1) or key in self._origin)
    ]
    return self._choice_of[min(ranked)[1]] if ranked else None


def moved_over(self, gain):  # noqa: ANN001, ANN201
    def over(key, loss):  # noqa: ANN001, ANN202
        choice = self._choice_of[key]
        for d, c in enumerate(choice):
            if c:
                below = choice[:d] + (0,) + choice[d + 1 :]
                base = 0.0 if not any(below) else self._losses.get(self._flagset(below).key)
                if base is not None and loss < base - math.log1p(gain):
                    return True
        return False

    ranked = [
        (loss, key)
        for key, loss in self._losses.items()
        if (key in self._origin and loss < -math.log1p(max(gain, self._big_gain)))
        or (key in self._one_value and over(key, loss))
    ]
    return self._choice_of[min(ranked)[1]] if ranked else None


def main() -> None:
    import prior_heldout  # noqa: PLC0415

    pr.space_prior = space_prior
    prior_heldout.space_prior = space_prior
    if os.environ.get("FRONT") == "uncertain":
        ss.prior_order = prior_order
    moved = {"alone": moved_alone, "over": moved_over}.get(os.environ.get("MOVED", ""))
    if moved is not None:
        ss.FlagSearch._moved = moved
    prior_heldout.main()


if __name__ == "__main__":
    main()
