"""Racing a search trial: after each round of runs (one per workload), is the trial already shown unable to
beat the best so far by the smallest gain that counts? Then its remaining runs are not spent on it (as
irace and successive halving stop hopeless configurations early). The search only proposes: a raced trial
is told to the search with what its runs showed and is never a finalist (tune.finalists.pick).

The rule, on the log scale of the search's loss (mean over the workloads of log(trial / baseline), lower
is better): after k rounds the trial's loss L_k is compared with the best so far, L_best (0 when no trial has
beaten the baseline yet). The trial is dropped when even its optimistic value is worse than what would
count:

    L_k - z * se  >  L_best - log(1 + min_gain),   se = sqrt(se_trial(k)^2 + se_best^2)

se_trial(k) is the standard error of k runs' ratio (sqrt 2 x the per-run noise: each ratio holds the
trial's run and the baseline's), x 1.2533 for a median (k >= 3); se_best the same for the best's runs; z
the one-sided normal quantile of `risk`. For Gaussian run noise the chance that a trial whose true loss is
exactly at the threshold (it beats the best by the smallest gain that counts) is dropped after a given
round is at most `risk`; benchmarks/evaluation/racing_sim.py measures the miss rate of real winners
under the statistics simulator's noise models (docs/statistics.md)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from statistics import NormalDist

from ..model.records import RACED

RISK = 0.01  # the chance, per look, of dropping a trial at the threshold (Gaussian runs)
NOISE_FLOOR = 0.002  # the per-run noise assumed at least: a 3-run baseline can look quieter than it is
MEDIAN_EFFICIENCY = 1.2533  # the standard error of a median of normal data / that of the mean


@dataclass(frozen=True)
class Race:
    """What a trial races against: the best loss so far (0.0: the baseline) and the runs behind it per
    workload, the smallest gain that counts, the per-run relative noise, the risk per look."""

    best_loss: float
    best_runs: int
    min_gain: float
    noise: float
    risk: float = RISK

    def _se(self, runs: int) -> float:
        sigma = math.sqrt(2.0) * max(self.noise, NOISE_FLOOR)
        return sigma * (MEDIAN_EFFICIENCY if runs >= 3 else 1.0) / math.sqrt(max(1, runs))

    def threshold(self) -> float:
        """The loss a trial must be able to reach to be worth its runs."""
        return self.best_loss - math.log1p(self.min_gain)

    def hopeless(self, loss: float, runs: int) -> bool:
        """True when a trial at `loss` after `runs` runs per workload cannot beat the threshold at the risk."""
        if not math.isfinite(loss) or runs < 1:
            return False
        se = math.hypot(self._se(runs), self._se(self.best_runs) if self.best_runs > 0 else 0.0)
        z = NormalDist().inv_cdf(1.0 - self.risk)
        return loss - z * se > self.threshold()

    def reason(self, loss: float, runs: int) -> str:
        """The stored reason of a trial dropped after `runs` runs per workload."""
        return (
            f"{RACED}stopped after {runs} run{'s' if runs != 1 else ''} per workload: "
            f"{100 * math.expm1(-loss):+.2f}% vs the baseline cannot beat the best so far "
            f"({100 * math.expm1(-self.best_loss):+.2f}%) by {100 * self.min_gain:.2f}% "
            f"(risk {100 * self.risk:g}% per look)"
        )


COLD_MARGIN = 0.005  # a first run this much worse than the median (or 2x the noise, if more) is a cold one


def cold_first_run(warm: float, samples: tuple[float, ...], noise: float, lower_is_better: bool) -> float | None:
    """How much worse (relative) the first (warm-up) run of a fresh build was than its measured runs' median,
    when that is more than the noise allows (2 x the noise, at least COLD_MARGIN); None when it was not: then
    a first run measures like the others, and the search's trials need no warm-up run; nan when not known."""
    if not samples or not math.isfinite(warm) or warm <= 0:
        return math.nan  # not known: the caller keeps the warm-up
    mid = statistics.median(samples)
    worse = (warm / mid - 1.0) if lower_is_better else (mid / warm - 1.0)
    return worse if worse > max(2.0 * noise, COLD_MARGIN) else None
