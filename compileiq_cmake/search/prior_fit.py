"""The prior's arithmetic (search/prior.py): the observations of a family as matrices, the similarity weights,
the shrunk weighted moments, and the hyper-parameters (per family the bandwidth, the shrinkage and the features
of the similarity) chosen by leave-one-out over the observations (forward selection of up to MAX_FEATURES
features, each step over the bandwidth x shrink grid)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SD_FLOOR = 0.005  # the effect of a value on a new target is never known better than 0.5%
UNKNOWN_SD = 0.05  # a value no observation has: effect 0 +/- 5%
CLIP = 1.0  # effects are learned clipped to +/- 1 (0.37x .. 2.7x): how much worse a terrible value is does not matter
BANDWIDTHS = (0.25, 0.5, 1.0, 2.0, 4.0, math.inf)
SHRINKS = (0.25, 0.5, 1.0, 2.0, 4.0)
MAX_FEATURES = 6


@dataclass(frozen=True)
class Hyper:
    bandwidth: float = 1.0
    shrink: float = 1.0
    features: tuple[str, ...] = ()  # empty: every observation is equally similar (the value's mean)

    def as_dict(self) -> dict:
        return {
            "bandwidth": None if math.isinf(self.bandwidth) else self.bandwidth,
            "shrink": self.shrink,
            "features": list(self.features),
        }

    @staticmethod
    def from_dict(d: Mapping) -> Hyper:
        bw = d.get("bandwidth")
        return Hyper(
            bandwidth=math.inf if bw is None else float(bw),
            shrink=float(d.get("shrink", 1.0)),
            features=tuple(str(f) for f in d.get("features", ())),
        )


@dataclass
class _Table:
    """The observations of one family as matrices: Z (n x F standardized features), Y and INV (n x V, NaN
    where an observation lacks the value)."""

    obs: list[Any]  # search/prior.py's Observations
    keys: list[str]
    names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    Z: np.ndarray
    Y: np.ndarray
    INV: np.ndarray

    @staticmethod
    def of(obs: list[Any], names: Sequence[str]) -> _Table:
        keys = sorted({k for o in obs for k in o.effects})
        X = np.array([[o.features.get(n, 0.0) for n in names] for o in obs], dtype=float).reshape(len(obs), len(names))
        mean = X.mean(axis=0) if len(obs) else np.zeros(len(names))
        scale = X.std(axis=0) if len(obs) else np.ones(len(names))
        scale = np.where(scale > 1e-9, scale, 1.0)
        Z = (X - mean) / scale
        Y = np.full((len(obs), len(keys)), np.nan)
        INV = np.full((len(obs), len(keys)), np.nan)
        col = {k: j for j, k in enumerate(keys)}
        for i, o in enumerate(obs):
            for k, v in o.effects.items():
                INV[i, col[k]] = 1.0 if v is None else 0.0
                if v is not None:
                    Y[i, col[k]] = min(CLIP, max(-CLIP, v))
        return _Table(obs, keys, list(names), mean, scale, Z, Y, INV)


def _moments(Y: np.ndarray, INV: np.ndarray, exclude: np.ndarray | None = None):
    """Per value: mean and variance of the valid effects and the smoothed invalid rate (rows in `exclude`
    left out when given: leave-one-out)."""
    valid = ~np.isnan(Y)
    seen = ~np.isnan(INV)
    if exclude is not None:
        valid = valid & ~exclude[:, None]
        seen = seen & ~exclude[:, None]
    n = valid.sum(axis=0)
    y0 = np.where(valid, Y, 0.0)
    ybar = np.where(n > 0, y0.sum(axis=0) / np.maximum(n, 1), 0.0)
    var = np.where(n > 1, (np.where(valid, (Y - ybar) ** 2, 0.0)).sum(axis=0) / np.maximum(n - 1, 1), UNKNOWN_SD**2)
    inv = np.where(seen, INV, 0.0).sum(axis=0)
    m = seen.sum(axis=0)
    pbar = (inv + 0.5) / (m + 1.0)
    return ybar, var, pbar


def _weights(Zq: np.ndarray, Z: np.ndarray, cols: Sequence[int], bandwidth: float) -> np.ndarray:
    """Similarity weights (queries x observations)."""
    if not cols or math.isinf(bandwidth):
        return np.ones((Zq.shape[0], Z.shape[0]))
    d2 = ((Zq[:, None, cols] - Z[None, :, cols]) ** 2).mean(axis=2)
    return np.exp(-d2 / (2 * bandwidth**2))


def _predict(W: np.ndarray, Y: np.ndarray, INV: np.ndarray, ybar, var, pbar, shrink: float):
    """Effect, sd, p_invalid, support (queries x values) from weights W (queries x observations)."""
    valid = ~np.isnan(Y)
    seen = ~np.isnan(INV)
    y0 = np.where(valid, Y, 0.0)
    wv = W @ valid
    effect = (W @ y0 + shrink * ybar) / (wv + shrink)
    # sum_k w (y - e)^2 = sum w y^2 - 2 e sum w y + e^2 sum w
    sq = W @ (y0**2) - 2 * effect * (W @ y0) + effect**2 * wv
    sd = np.sqrt(np.maximum(sq, 0.0) / (wv + shrink) + shrink * var / (wv + shrink) + SD_FLOOR**2)
    ws = W @ seen
    p_inv = (W @ np.where(seen, INV, 0.0) + shrink * pbar) / (ws + shrink)
    return effect, sd, p_inv, ws


def loo_score(table: _Table, cols: Sequence[int], bandwidth: float, shrink: float) -> float:
    """Leave-one-out loss: mean squared error of the valid effects (in units of SD_FLOOR^2 ... plain) plus the
    Brier score of invalidity, over every (observation, value) cell; lower is better."""
    n = len(table.obs)
    if n < 2:
        return math.inf
    W = _weights(table.Z, table.Z, cols, bandwidth)
    np.fill_diagonal(W, 0.0)
    total_sq = total_brier = 0.0
    cells = 0
    for i in range(n):
        exclude = np.zeros(n, dtype=bool)
        exclude[i] = True
        ybar, var, pbar = _moments(table.Y, table.INV, exclude)
        e, _sd, p, _ = _predict(W[i : i + 1], table.Y, table.INV, ybar, var, pbar, shrink)
        yi, ii = table.Y[i], table.INV[i]
        valid = ~np.isnan(yi)
        seen = ~np.isnan(ii)
        total_sq += float(np.sum((e[0, valid] - yi[valid]) ** 2))
        total_brier += float(np.sum((p[0, seen] - ii[seen]) ** 2))
        cells += int(seen.sum())
    return (total_sq + 0.01 * total_brier) / max(cells, 1)


def fit_table(table: _Table) -> tuple[Hyper, float]:
    """Forward selection of features, each step over the bandwidth x shrink grid; stops when no feature
    lowers the leave-one-out loss."""
    chosen: list[int] = []
    best = (math.inf, Hyper())
    for shrink in SHRINKS:
        s = loo_score(table, [], math.inf, shrink)
        if s < best[0]:
            best = (s, Hyper(math.inf, shrink, ()))
    while len(chosen) < MAX_FEATURES:
        step = None
        for c in range(len(table.names)):
            if c in chosen:
                continue
            for bw in BANDWIDTHS[:-1]:
                for shrink in SHRINKS:
                    s = loo_score(table, [*chosen, c], bw, shrink)
                    if step is None or s < step[0]:
                        step = (s, c, bw, shrink)
        if step is None or step[0] >= best[0] * (1 - 1e-3):
            break
        chosen.append(step[1])
        best = (step[0], Hyper(step[2], step[3], tuple(table.names[c] for c in chosen)))
    return best[1], best[0]
