"""The rounds' serial correlation (a build whose noise carries over from round to round: its layout, its memory
placement): its estimate from the rounds, updated from a prior (docs/statistics.md), and what it does to the
variance and degrees of freedom of a mean of rounds. Pure arithmetic; decide.stats's tests and intervals use it."""

from __future__ import annotations

import math

import numpy as np

RHO_CAP = 0.8  # the largest serial correlation the variance is corrected for (beyond it: as at the cap)


RHO_PRIOR, RHO_PRIOR_SD = 0.2, 0.2  # what the rounds' correlation is taken to be before any data (see below)


def rounds_correlation(variants: list[list[list[float]]]) -> float:
    """The posterior mean of :func:`rounds_posterior`: the correlation the tests allow for."""
    return rounds_posterior(variants)[0]


def rounds_posterior(variants: list[list[list[float]]]) -> tuple[float, float]:
    """(mean, sd) of the serial correlation of a build's runs from round to round (a build whose noise carries over: its
    layout, its memory placement), pooled over every variant and workload: `variants[v][w]` holds variant v's
    values on workload w, round by round. Each round's mean over the variants is taken out first (what hits
    every variant alike, drift or a machine-wide slow phase, cancels in the paired ratios and is no
    correlation of a build), then each series' own mean; the lag-1 autocorrelation of what is left, pooled,
    is corrected for its bias in short series (Kendall: E[r] ~ rho - (1 + 3 rho) / n).

    From a few rounds of one comparison that estimate is noise of +-0.9 (taken at its word it withheld a 20x
    gain from 6 rounds; read as 0 when it comes out low, it let 2.5% of A/A tunes through at a true 0.5), so
    it updates a prior instead: RHO_PRIOR +- RHO_PRIOR_SD (the simulator's models span 0 to 0.5), weighted by
    their precisions (:func:`_updated`); many rounds over several variants and workloads end near the data's
    own estimate. The mean is kept in [0, RHO_CAP]; the prior with fewer than 4 rounds or 2 variants. The sd
    says how little a few rounds tell: the written interval allows for it (:func:`compare_paired`)."""
    n = min((len(series) for v in variants for series in v), default=0) if len(variants) >= 2 else 0
    if n < 4:
        return RHO_PRIOR, RHO_PRIOR_SD
    lag = total = 0.0
    for w in range(len(variants[0])):
        logs = np.log(np.array([v[w][:n] for v in variants], dtype=float))  # variants x rounds
        resid = logs - logs.mean(axis=0, keepdims=True)
        resid -= resid.mean(axis=1, keepdims=True)
        lag += float((resid[:, 1:] * resid[:, :-1]).sum())
        total += float((resid * resid).sum())
    if total <= 0.0:
        return RHO_PRIOR, RHO_PRIOR_SD
    corrected = (n * lag / total + 1.0) / (n - 3.0)
    # independent lag pairs: the variants' residuals add up to 0 in each round, so v variants hold v - 1 series
    pairs = (len(variants) - 1) * len(variants[0]) * (n - 1)
    mean, sd = _updated(corrected, n / (n - 3.0) / math.sqrt(pairs))
    return min(RHO_CAP, max(0.0, mean)), sd


def _updated(estimate: float, noise: float) -> tuple[float, float]:
    """The prior RHO_PRIOR +- RHO_PRIOR_SD updated by an estimate with standard error `noise` (the normal
    posterior's mean and sd: the two weighted by their precisions)."""
    weight = RHO_PRIOR_SD**2 / (RHO_PRIOR_SD**2 + noise * noise)
    return RHO_PRIOR + weight * (estimate - RHO_PRIOR), math.sqrt(weight) * noise


def correlated_rounds(rho: float, n: int) -> tuple[float, float]:
    """(factor, degrees of freedom) for the mean of n rounds whose values follow an AR(1) series with lag-1
    correlation rho: the variance of the mean is s^2 / n * factor, where s^2 is the rounds' sample variance
    (which itself comes out low for correlated rounds: E[s^2] = sigma^2 (n - g) / (n - 1), with
    g = 1 + 2 sum_k (1 - k/n) rho^k the variance inflation of the mean), and the degrees of freedom are
    those of n / g independent rounds. (1, n - 1) for independent rounds."""
    if rho <= 0.0 or n < 2:
        return 1.0, max(1.0, n - 1.0)
    rho = min(rho, RHO_CAP)
    g = 1.0 + 2.0 * sum((1.0 - k / n) * rho**k for k in range(1, n))
    return g * (n - 1.0) / (n - g), max(1.0, n / g - 1.0)
