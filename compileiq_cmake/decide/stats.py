"""Statistics of measurements, without I/O: medians with confidence intervals, the comparison of a
candidate with the baseline (validation: a paired one-sided t-test on the per-round log ratios, gain_test;
unpaired samples: Welch's t-test on log values), the resolution of a printed metric (printed_step), and a
per-flag effects model."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from .correlation import RHO_CAP, RHO_PRIOR, RHO_PRIOR_SD, correlated_rounds

ALPHA = 0.05
Values = Sequence[float]  # one variant's measured values (a list, a tuple or a numpy array)


def _special() -> ModuleType:
    """scipy.special, imported when a test first needs it: the CLI's quick commands (cmake-entries at every
    configure) import this module and must not pay for scipy. Student's t distribution is all this module needs
    of scipy: scipy.special's stdtr and stdtrit are the functions scipy.stats.t's sf and ppf call (the same
    values, bit for bit), and scipy.stats costs a tune's process more than twice the import (0.68 s against
    0.28 s here), paid by every tune, check and suite target started as a process."""
    from scipy import special  # noqa: PLC0415 (slow to import)

    return special


def t_sf(x: float, dof: float) -> float:
    """P(T > x) for Student's t with `dof` degrees of freedom (scipy.stats.t.sf)."""
    return float(_special().stdtr(dof, -x))


def t_ppf(q: float, dof: float) -> float:
    """The q-quantile of Student's t with `dof` degrees of freedom (scipy.stats.t.ppf)."""
    return float(_special().stdtrit(dof, q))


def _binomial_half_cdfs(n: int) -> Iterator[float]:
    """P(Bin(n, 1/2) <= j) for j = 0, 1, ..., n, exactly (integer sums, one correctly rounded division each)."""
    total = 0
    for j in range(n + 1):
        total += math.comb(n, j)
        yield total / 2**n


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def median_ci(samples: list[float] | tuple[float, ...], confidence: float = 0.95) -> Interval:
    """Distribution-free interval for the median from order statistics (binomial); the sample range when
    there are too few samples for the requested confidence."""
    xs = sorted(samples)
    n = len(xs)
    if n < 2:
        return Interval(xs[0], xs[0]) if xs else Interval(math.nan, math.nan)
    tail = (1 - confidence) / 2
    j = 0  # the largest j with P(Bin(n, 1/2) <= j - 1) <= tail: x_(j) (1-based) is the lower bound
    cdfs = _binomial_half_cdfs(n)
    while j < n and next(cdfs) <= tail:
        j += 1
    if j == 0:
        return Interval(xs[0], xs[-1])
    return Interval(xs[j - 1], xs[n - j])


def relative_spread(samples: list[float] | tuple[float, ...]) -> float:
    """Robust relative noise: 1.4826 * MAD / median (the standard deviation for normal data)."""
    med = float(np.median(samples))
    if med == 0:
        return math.inf
    mad = float(np.median(np.abs(np.asarray(samples) - med)))
    return 1.4826 * mad / abs(med)


def decimals(value: float) -> int:
    """The digits after the point with which `value` was printed, as far as the float tells: its shortest
    round-trip text ("2.371" -> 3; "2.3710" -> 3 too: a trailing zero is lost, which only makes the step look
    coarser). A value beyond 15 digits is a computed one, not a printed one: 15."""
    text = repr(float(value)).lower()
    if "inf" in text or "nan" in text:
        return 15
    mantissa, _, exponent = text.partition("e")
    places = len(mantissa.split(".")[1]) if "." in mantissa else 0
    if places == 1 and mantissa.endswith(".0"):
        places = 0
    return max(0, min(15, places - int(exponent or 0)))


def printed_step(values: list[float]) -> float:
    """The step of the finest printed digit, from the values themselves (the one definition the decision and
    the console's warning share): 10^-d for the most digits d after the point any value shows; for whole
    numbers, the largest power of ten that divides every value (a metric printed '%.2g' reads 120, 130, 1.3e+02:
    step 10, not 1). 0 for values measured or printed with 15 digits and more (nothing to widen)."""
    values = [abs(float(x)) for x in values if x]
    if not values:
        return 0.0
    places = 0
    for x in values:  # stops at the first computed value: nothing to widen (a tune's rounds call this often)
        places = max(places, decimals(x))
        if places >= 15:
            return 0.0
    if places > 0:
        return 10.0**-places
    step = 1.0
    while step < 1e15 and all(math.fmod(x, step * 10) == 0 for x in values):
        step *= 10
    return step


def quantum(*samples: Iterable[float]) -> float:
    """The metric's printed resolution relative to its value: printed_step over the smallest value."""
    values = [abs(float(x)) for group in samples for x in group if x]
    step = printed_step(values)
    return step / min(values) if step else 0.0


def auto_min_gain(noise: float) -> float:
    """The smallest gain worth reporting, from the baseline's relative run-to-run spread: half the noise, at
    least 0.2%. It is a floor for what is worth a flag, not the guard against noise: the sequential test
    (sequential.SequentialGainTest, docs/statistics.md) keeps false acceptances at FALSE_ACCEPTANCE whatever the noise.
    (It was twice the noise; then a real 1% gain under 1% noise could never be accepted.)"""
    return max(0.002, 0.5 * noise)


@dataclass(frozen=True)
class Comparison:
    """Candidate vs baseline on one workload. speedup > 1: the candidate is better."""

    speedup: float
    ci: Interval
    p_value: float  # two-sided test on log values (Welch, or paired t on per-round ratios)
    n_baseline: int
    n_candidate: int
    step: float = 0.0  # the printed resolution (relative) the interval was widened by on each side

    def faster(self, min_effect: float) -> bool:
        """Significantly better and by at least min_effect."""
        return self.p_value < ALPHA and self.ci.low > 1.0 and self.speedup >= 1.0 + min_effect

    def slower(self) -> bool:
        """Significantly worse (any size)."""
        return self.p_value < ALPHA and self.ci.high < 1.0

    def decided(self, min_effect: float) -> bool:
        """True when more samples would not change the verdict at the min_effect boundary."""
        return self.ci.low > 1.0 + min_effect / 2 or self.ci.high < 1.0 + min_effect


def compare(baseline: Values, candidate: Values, lower_is_better: bool = True, confidence: float = 0.95) -> Comparison:
    """Welch's t-test and interval on log values: speedup = exp(mean log base - mean log cand)."""
    lb = np.log(np.asarray(baseline, dtype=float))
    lc = np.log(np.asarray(candidate, dtype=float))
    diff = float(lb.mean() - lc.mean())
    if not lower_is_better:
        diff = -diff
    if len(lb) < 2 or len(lc) < 2:  # one run says nothing about the noise: nothing is decided
        return Comparison(math.exp(diff), Interval(0.0, math.inf), 1.0, len(lb), len(lc))
    vb = lb.var(ddof=1) / len(lb) if len(lb) > 1 else 0.0
    vc = lc.var(ddof=1) / len(lc) if len(lc) > 1 else 0.0
    se = math.sqrt(vb + vc)
    dof = (
        (vb + vc) ** 2
        / ((vb**2 / (len(lb) - 1) if len(lb) > 1 else 0.0) + (vc**2 / (len(lc) - 1) if len(lc) > 1 else 0.0))
        if se > 0.0
        else 1.0
    )
    return _t_comparison(diff, se, dof, len(lb), len(lc), confidence, quantum(baseline, candidate))


def _t_comparison(
    diff: float, se: float, dof: float, n_baseline: int, n_candidate: int, confidence: float, step: float = 0.0
) -> Comparison:
    """Speedup exp(diff) with its t interval and two-sided p-value (mean log difference, its standard
    error and degrees of freedom). `step`: the metric's printed resolution (relative, see quantum): rounding
    to it can shift every value of a side alike, so the difference is known only to within one step. The
    interval is widened by a step on each side and the test is of the difference beyond one step: a
    difference below one step is never significant, and identical printed values never give p=0."""
    beyond = max(0.0, abs(diff) - step)
    if se == 0.0:  # every value of each side printed alike (or identical differences): rounding is the noise
        p = 1.0 if beyond == 0.0 else 0.0
        return Comparison(
            math.exp(diff), Interval(math.exp(diff - step), math.exp(diff + step)), p, n_baseline, n_candidate, step
        )
    p = 2 * t_sf(beyond / se, dof)
    q = t_ppf(0.5 + confidence / 2, dof)
    return Comparison(
        math.exp(diff),
        Interval(math.exp(diff - q * se - step), math.exp(diff + q * se + step)),
        p,
        n_baseline,
        n_candidate,
        step,
    )


def compare_paired(
    baseline: Values,
    candidate: Values,
    lower_is_better: bool = True,
    confidence: float = 0.95,
    rho: float = 0.0,
    rho_sd: float = 0.0,
) -> Comparison:
    """Paired t-test and interval on per-round log ratios (baseline[i] and candidate[i] measured in the
    same interleaved round): drift between rounds cancels. `rho`: the rounds' serial correlation
    (correlation.rounds_correlation); the variance and degrees of freedom are those of correlated rounds
    (correlated_rounds). `rho_sd` > 0: the correlation is known only to +- rho_sd (rounds_posterior), and
    the interval's half-width is its mean over that posterior (:func:`_rho_averaged`), wider than at the mean
    correlation alone since the variance grows faster than linearly with it. Falls back to :func:`compare`
    when the samples do not pair up."""
    if len(baseline) != len(candidate) or len(baseline) < 3:
        return compare(baseline, candidate, lower_is_better, confidence)
    d = np.log(np.asarray(baseline, dtype=float)) - np.log(np.asarray(candidate, dtype=float))
    if not lower_is_better:
        d = -d
    n = len(d)
    factor, dof = correlated_rounds(rho, n)
    if rho_sd > 0.0:
        factor = _rho_averaged(rho, rho_sd, n, confidence, dof)
    return _t_comparison(
        float(d.mean()),
        float(d.std(ddof=1)) * math.sqrt(factor / n),
        dof,
        n,
        n,
        confidence,
        quantum(baseline, candidate),
    )


_NODES = 9  # Gauss-Hermite nodes of the average over the correlation's posterior


def _rho_averaged(rho: float, rho_sd: float, n: int, confidence: float, dof: float) -> float:
    """The variance factor whose t interval at `dof` has the posterior mean half-width of correlated rounds:
    each node of rho ~ N(rho, rho_sd) (kept in [0, RHO_CAP]) gives its own factor and degrees of freedom."""
    x, w = np.polynomial.hermite_e.hermegauss(_NODES)
    tail = 0.5 + confidence / 2
    half = 0.0
    for xi, wi in zip(x, w, strict=True):
        f, k = correlated_rounds(min(RHO_CAP, max(0.0, rho + rho_sd * float(xi))), n)
        half += float(wi) * t_ppf(tail, k) * math.sqrt(f)
    half /= float(w.sum())
    return (half / t_ppf(tail, dof)) ** 2


def geomean_comparison(comparisons: list[Comparison]) -> tuple[float, Interval]:
    """Geometric mean speedup over workloads with an interval from the per-workload intervals: the random
    parts of the log half-widths combined as independent errors, the printed resolution's part (a rounding
    that may shift every workload alike) added as it is, so the interval is never narrower than a step."""
    logs = [math.log(c.speedup) for c in comparisons]
    if any(c.ci.low <= 0.0 or math.isinf(c.ci.high) for c in comparisons):  # one undecided: the whole is
        return math.exp(sum(logs) / len(logs)), Interval(0.0, math.inf)
    half = [max(0.0, (math.log(c.ci.high) - math.log(c.ci.low)) / 2 - c.step) for c in comparisons]
    mean = sum(logs) / len(logs)
    width = math.sqrt(sum(h * h for h in half)) / len(half) + sum(c.step for c in comparisons) / len(comparisons)
    return math.exp(mean), Interval(math.exp(mean - width), math.exp(mean + width))


FALSE_ACCEPTANCE = 0.01  # the whole procedure's false-acceptance rate (docs/statistics.md)
EFFECT_FLOOR = 0.2  # the smallest standardized effect (the paired d_z of the per-round mean log ratios) accepted
# the tests run at this share of FALSE_ACCEPTANCE: the t distribution's far tail is not exact for skewed or
# bimodal run times (the simulator measured 0.8% false acceptances at a nominal 1% under bimodal noise)
TAIL_SAFETY = 0.5


# The bank (tune/bank.py) validates obvious wins during the search and writes them at once: its validations are
# looks of the same procedure and spend BANK_SHARE of the tests' budget, its j-th (from 0) at half of what the
# one before spent, so that whatever the number of bank validations, together they spend less than that share;
# the finalists' validation spends the rest. By the union bound a false winner, banked or not, stays within
# the budget (docs/statistics.md).
BANK_SHARE = 0.25


# A bank validation compares one candidate with the baseline: from 2 variants the rounds' correlation is read from
# little, and of a tune's many bank validations those whose estimate came out low are the ones that accept (the
# simulator, rounds correlated at 0.5, 15 bank validations per A/A tune: 0.60% false winners, 5 of 6 from the
# bank, accepted at estimates of 0.04-0.31). Its tests allow for at least the prior's upper end.
BANK_RHO_FLOOR = RHO_PRIOR + RHO_PRIOR_SD


def bank_alpha(j: int) -> float:
    """The level of the tune's j-th bank validation (j = 0, 1, ...)."""
    return FALSE_ACCEPTANCE * TAIL_SAFETY * BANK_SHARE * 0.5 ** (j + 1)


def after_bank(validations: int) -> float:
    """The level left to the finalists' validation after `validations` bank validations."""
    return FALSE_ACCEPTANCE * TAIL_SAFETY * (1.0 - BANK_SHARE * (1.0 - 0.5**validations))


def looks(min_rounds: int, max_rounds: int) -> tuple[int, ...]:
    """The rounds at which a sequential comparison looks at its data (decides to stop, or accepts), fixed
    before the first round: min_rounds, then about 1.5 times the last, and max_rounds ("5, 8, 12, 15")."""
    first = max(2, min(min_rounds, max_rounds))
    out = [first]
    while out[-1] < max_rounds:
        out.append(min(max_rounds, max(out[-1] + 1, math.ceil(out[-1] * 1.5))))
    return tuple(out)


def look_weights(schedule: tuple[int, ...]) -> tuple[float, ...]:
    """The share of the error budget each look spends, in proportion to the square of its rounds (little at
    the early looks, which see little, most at the last; the shape of O'Brien and Fleming's boundaries);
    they add up to 1. A comparison accepted at look i at a nominal level of weight_i * alpha keeps the
    whole sequence at alpha (a union bound: no look can spend more than it was given, whatever the data)."""
    total = sum(n * n for n in schedule)
    return tuple(n * n / total for n in schedule)


@dataclass(frozen=True)
class GainTest:
    """The one-sided test that a candidate is faster than the baseline over every workload at once: the
    per-round mean (over workloads) of the log ratios, tested against one printed step (quantum)."""

    p_value: float  # one-sided: H0 "not faster" (the mean log ratio at most one step)
    effect: float  # the paired effect d_z: the per-round mean log ratios' mean over their spread (0: < 2 rounds)
    rounds: int
    rho: float = 0.0  # the rounds' serial correlation the test allowed for


def gain_test(
    base: list[list[float]], cand: list[list[float]], lower_is_better: bool = True, rho: float = 0.0
) -> GainTest:
    """`base[w]` and `cand[w]`: workload w's values, round by round (paired). Rounds with a value on every
    workload count. `rho`: the rounds' serial correlation (rounds_correlation): the test's variance and
    degrees of freedom are those of correlated rounds (correlated_rounds)."""
    n = min([len(x) for x in base] + [len(x) for x in cand]) if base else 0
    if n < 2:
        return GainTest(1.0, 0.0, n)
    rows = np.array(
        [[math.log(b[i]) - math.log(c[i]) for b, c in zip(base, cand, strict=False)] for i in range(n)], dtype=float
    )
    per_round = rows.mean(axis=1) * (1.0 if lower_is_better else -1.0)
    step = quantum(*base, *cand)
    mean, sd = float(per_round.mean()), float(per_round.std(ddof=1))
    beyond = mean - step
    if sd == 0.0:
        return GainTest(0.0 if beyond > 0 else 1.0, math.inf if beyond > 0 else 0.0, n, rho)
    factor, dof = correlated_rounds(rho, n)
    p = t_sf(beyond / (sd * math.sqrt(factor / n)), dof)
    return GainTest(p, max(0.0, beyond) / sd, n, rho)


def holm(p_values: list[float], alpha: float) -> list[bool]:
    """Holm's step-down rejections at family-wise level alpha (the smallest p against alpha/k, the next
    against alpha/(k-1), ... until one fails)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    out = [False] * len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (len(p_values) - rank):
            break
        out[i] = True
    return out


def coarse_metric_warning(samples: Sequence[float], min_effect: float) -> str | None:
    """A message when the metric is printed too coarsely to resolve effects of min_effect: the step the
    comparisons widen by (quantum), so the warning and the decision never disagree."""
    step = quantum(samples)
    if step and step > min_effect / 2 and len(set(samples)) <= max(2, len(samples) // 3):
        return (
            f"the metric is printed with a resolution of {100 * step:.2g}% of its value, too coarse to see "
            f"the {100 * min_effect:.2g}% differences being sought (a difference of one step is never significant); "
            "print more digits (e.g. %.6e), point --metric at a finer line, or give a longer workload"
        )
    return None


@dataclass(frozen=True)
class FlagEffect:
    flag: str
    speedup: float  # multiplicative effect of adding the flag (> 1 faster)
    ci: Interval
    trials_with: int


MIN_EFFECT_DOF = 3  # residual degrees of freedom below which flag effects get no interval (t(0.975, 1) = 12.7)


def flag_effects(rows: list[tuple[tuple[str, ...], float]], confidence: float = 0.95) -> list[FlagEffect]:
    """Main effects of each flag on the log-ratio loss (negative = faster) by least squares over all
    valid trials: loss = b0 + sum_f b_f [f present]. Flags present in every or no trial are skipped."""
    flags = sorted({f for fs, _ in rows for f in fs})
    flags = [f for f in flags if 0 < sum(f in fs for fs, _ in rows) < len(rows)]
    if not flags or len(rows) - (len(flags) + 1) < MIN_EFFECT_DOF:
        return []  # too few trials for an interval that says anything (the caller says "not enough trials")
    X = np.array([[1.0] + [1.0 if f in fs else 0.0 for f in flags] for fs, _ in rows])
    y = np.array([loss for _, loss in rows])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    dof = len(rows) - X.shape[1]
    sigma2 = float(resid @ resid) / dof
    cov = sigma2 * np.linalg.pinv(X.T @ X)
    q = t_ppf(0.5 + confidence / 2, dof)
    out = []
    for i, f in enumerate(flags, start=1):
        se = math.sqrt(max(cov[i, i], 0.0))
        out.append(
            FlagEffect(
                f,
                math.exp(-beta[i]),
                Interval(math.exp(-beta[i] - q * se), math.exp(-beta[i] + q * se)),
                sum(f in fs for fs, _ in rows),
            )
        )
    return sorted(out, key=lambda e: -abs(math.log(e.speedup)))
