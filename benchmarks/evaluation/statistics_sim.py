"""A simulator of the whole decision procedure (issue 22): the real code of decide/ (validation of the
finalists with its looks and Holm, ablation of the winner, validation of the minimal set) fed by a runner
that draws each run from a noise model instead of building and running anything.

Each simulated tune has three finalists, each one flag of its own; the "builds" only tell the runner which
flag set a tree holds. A/A: every finalist's true time is the baseline's (any accepted winner is a false
acceptance). Power: finalist 1 is truly faster by `gain` on every workload, the other two are not; the tune
counts when it writes a winner that holds finalist 1's flag. Two workloads, the default --min-rounds and
--max-rounds; --finalists, --workloads, --max-rounds and --cut change that shape (one finalist on one workload
whose validation a time box ends after 6 rounds: the shape where the correlation is estimated from least);
--bank N runs N bank validations (tune/bank.py: each of a flag without effect, fresh interleaved rounds, the
real decide.validation.validate at its share stats.bank_alpha(j)) before the finalists, who then get what is
left (stats.after_bank), each allowing for at least stats.BANK_RHO_FLOOR of correlation, as tune/bank.py does;
--bank-full gives each bank validation the whole level and no floor, as before issue 51. A bank acceptance is a
written winner (the bank writes at once).

Noise models (each run's value is the true time times a random factor; `sigma` the run-to-run spread):
  gaussian    1 + N(0, sigma)
  heavy       1 + sigma * t(3) / sqrt(3)      (Student t with 3 degrees of freedom, same spread)
  drift       gaussian times (1 + 0.03 * round / max_rounds): 3% slower over the rounds, every variant alike
  bimodal     gaussian; with probability 0.2 a run lands in a second mode 4% slower
  throttle    gaussian; a burst (probability 0.05 per run to start, 8 runs long) makes runs 6% slower
  quantized   gaussian, then printed with 3 decimals at a true time of 0.4505 (one step = 0.22%)
  ar1-build-0.2, ar1-build-0.5
              each build's noise carries over from round to round: per build and workload an AR(1) series
              with lag-1 correlation 0.2 / 0.5 and the same 1 + N(0, sigma) spread, started afresh at each
              build (the issue-36 audit's model: the paired t-test alone accepted 1.2% / 8.9% of A/A tunes)
  ar1-machine the machine's noise carries over from run to run (one AR(1) series, correlation 0.5, shared
              by every variant)
  printed-2g, printed-3g
              gaussian at a true time of 125, printed '%.2g' (1.3e+02: one step = 8%) / '%.3g' (one step = 0.8%)
  offset-12   gaussian; the baseline runs 12% slow at first (a systematic offset: clocks not yet up, a cold
              cache): the tune's first measurement of it (3 runs per workload, from which the search's gains
              and the smallest gain that counts are read) all slow, and after each later build of it its first
              2 runs per workload (a validation's or confirmation's warm-up and its first measured round: an
              offset that outlasts the warm-up). Issue 51: such a baseline made the bank validate about 15
              trials per tune: run it with --bank 15

The smallest gain that counts is what a tune derives: auto_min_gain of the largest robust spread of the
baseline's 3 runs per workload, drawn from the same model (16% of tunes sit at its 0.2% floor at 1% noise).

Usage: python3 benchmarks/evaluation/statistics_sim.py [--tunes 10000] [--power-tunes 2000] [--jobs 2] [--seed 1]
       [--models gaussian,heavy,...] [--gains 0.005,0.01,...] [--no-guard] [--json FILE]; prints the table of
       docs/benchmarks/statistics.md. benchmarks/device/h200_statistics_sim.sh runs it over several seeds on the 16 cores
       of the device machine (no GPU is used) and benchmarks/evaluation/statistics_table.py pools the seeds.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from compileiq_cmake.decide.decided import Limits, ValidationContext
from compileiq_cmake.decide.procedure import _decide
from compileiq_cmake.decide.stats import (
    FALSE_ACCEPTANCE,
    TAIL_SAFETY,
    after_bank,
    auto_min_gain,
    bank_alpha,
    relative_spread,
)
from compileiq_cmake.decide.validation import validate

try:  # the bank's correlation floor (issue 51, third pass); absent from earlier decide/ (a "before" run)
    from compileiq_cmake.decide.stats import BANK_RHO_FLOOR
except ImportError:
    BANK_RHO_FLOOR = None
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.measure.runner import RunResult
from compileiq_cmake.model.events import EventStream
from compileiq_cmake.model.records import BuildResult, FlagSet, Status
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.project.cmake_project import VariantTree

MODELS = ("gaussian", "heavy", "drift", "bimodal", "throttle", "quantized", "ar1-build-0.2", "ar1-build-0.5",
          "ar1-machine", "printed-2g", "printed-3g", "offset-12")
OFFSET_RUNS = (3, 2)  # offset-12: the baseline's slow runs per workload after its first build, after each later one
BASE_TIME = {"quantized": 0.4505, "printed-2g": 125.0, "printed-3g": 125.0}
WORKLOADS = (("--n", "1"), ("--n", "2"), ("--n", "3"))
FLAGS = ("-fa", "-fb", "-fc", "-fd", "-fe")
MAX_ROUNDS = TuneSpec.max_rounds  # the default


@dataclass
class NoiseRunner:
    """The runner of one simulated tune: each tree's true time (from the flag set it holds) times a draw
    of the noise model; counts runs."""

    spec: TuneSpec
    model: str
    sigma: float
    truth: dict[str, float]  # flag -> true time factor (1.0: no effect)
    rng: random.Random
    held: dict[str, FlagSet] = field(default_factory=dict)
    runs: int = 0
    burst: int = 0
    rounds_seen: int = 0
    state: dict = field(default_factory=dict)  # AR(1) noise carried over: (tree, workload) or "machine" -> last
    since_build: dict = field(default_factory=dict)  # (tree, workload) -> runs since the tree's last build
    baseline_builds: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)  # a validation builds its trees in threads

    def build(self, tree: VariantTree, flagset: FlagSet) -> BuildResult:
        with self.lock:
            self.held[tree.path.name] = flagset
            for key in [k for k in self.state if k[0] == tree.path.name]:  # a fresh build: its noise starts afresh
                del self.state[key]
            for key in [k for k in self.since_build if k[0] == tree.path.name]:
                del self.since_build[key]
            self.baseline_builds += not flagset.flags
        return BuildResult(ok=True, seconds=0.0)

    def _ar1(self, key, rho: float) -> float:
        """The next value of a stationary AR(1) series N(0, sigma) with lag-1 correlation rho."""
        rng, sigma = self.rng, self.sigma
        last = self.state.get(key)
        value = rng.gauss(0.0, sigma) if last is None else rho * last + math.sqrt(1 - rho * rho) * rng.gauss(0.0, sigma)
        self.state[key] = value
        return value

    def run(self, tree: VariantTree, workload) -> RunResult:
        self.runs += 1
        base = BASE_TIME.get(self.model, 10.0)
        true = base * math.prod(self.truth.get(f, 1.0) for f in self.held[tree.path.name].flags)
        true *= 1.0 + 0.7 * WORKLOADS.index(workload)
        rng, sigma = self.rng, self.sigma
        factor = 1.0 + rng.gauss(0.0, sigma)
        if self.model == "heavy":
            factor = 1.0 + sigma * rng.gauss(0.0, 1.0) / math.sqrt(max(1e-12, rng.gammavariate(1.5, 2.0) / 3.0)) / math.sqrt(3.0)
        elif self.model == "drift":
            factor *= 1.0 + 0.03 * min(1.0, self.runs / (self.spec.max_rounds * 4 * len(self.spec.workloads)))
        elif self.model == "bimodal" and rng.random() < 0.2:
            factor *= 1.04
        elif self.model == "throttle":
            if self.burst == 0 and rng.random() < 0.05:
                self.burst = 8
            if self.burst:
                self.burst -= 1
                factor *= 1.06
        elif self.model.startswith("ar1-build-"):
            factor = 1.0 + self._ar1((tree.path.name, workload), float(self.model.rsplit("-", 1)[1]))
        elif self.model == "ar1-machine":
            factor = 1.0 + self._ar1(("machine",), 0.5)
        elif self.model == "offset-12":
            key = (tree.path.name, workload)
            self.since_build[key] = self.since_build.get(key, 0) + 1
            slow = OFFSET_RUNS[self.baseline_builds > 1]
            if not self.held[tree.path.name].flags and self.since_build[key] <= slow:
                factor *= 1.12
        value = true * max(0.05, factor)
        if self.model == "quantized":
            value = round(value, 3)
        elif self.model.startswith("printed-"):
            value = float(f"%.{self.model[-2:]}" % value)
        return RunResult(Status.OK, "", value, 0.0)


@dataclass(frozen=True)
class Shape:
    """The shape of the simulated tunes: finalists, workloads, the validation's most rounds, and a time box
    that holds `cut` rounds of the finalists' validation (0: none): its looks are placed within them, as the
    budget's plan does (tune/budget.py, Limits.max_rounds)."""

    finalists: int = 3
    workloads: int = 2
    max_rounds: int = MAX_ROUNDS
    cut: int = 0
    bank: int = 0  # bank validations before the finalists (tune/bank.py), each of a flag without effect
    bank_full: bool = False  # each at the tests' whole level (before issue 51), not its share (stats.bank_alpha)

    def limits(self) -> Limits:
        if not self.cut:
            return Limits()
        asked = [1]  # interleave asks before each round after the first

        def more(_seconds: float) -> bool:
            asked[0] += 1
            return asked[0] <= self.cut

        return Limits(validation_continue=more, max_rounds=self.cut)  # as the budget's plan places the looks


def _spec(tmp: Path, shape: Shape) -> TuneSpec:
    return TuneSpec(source_dir=tmp, build_dir=tmp / "b", target="t", benchmark=("x",),
                    metric=MetricSpec.parse("WALLTIME", True), output=tmp / "o.toml",
                    workloads=WORKLOADS[:shape.workloads], min_rounds=min(5, shape.max_rounds),
                    max_rounds=shape.max_rounds)


def one_tune(args: tuple[str, float, float, int, Shape]) -> tuple[bool, bool, int, float, float, float]:
    """(a winner was written, it holds the truly faster flag, runs spent, the written speed-up and its
    interval) for one simulated tune."""
    model, sigma, gain, seed, shape = args
    tmp = Path(tempfile.gettempdir()) / "compileiq-sim"
    spec = _spec(tmp, shape)
    rng = random.Random(seed)
    truth = {"-fa": 1.0 / (1.0 + gain)} if gain else {}
    runner = NoiseRunner(spec, model, sigma, truth, rng)
    flags = FLAGS[:shape.finalists]
    space = FlagSpace("gcc", tuple(Dimension(f[1:], "", ((), (f,))) for f in flags))
    trees = tuple(VariantTree(tmp / "b" / "compileiq", f"t{i}", "cmake") for i in range(len(flags) + 1))
    context = ValidationContext(trees, space, seed)
    finalists = [space.flagset({f[1:]: 1}) for f in flags]
    # the smallest gain that counts, as a tune derives it: the baseline's 3 runs per workload
    runner.build(trees[0], space.baseline())
    noise = max(relative_spread([runner.run(trees[0], w).value for _ in range(3)]) for w in spec.workloads)
    runner.runs = 0
    min_gain = auto_min_gain(noise)
    limits = shape.limits()
    for j in range(shape.bank):  # the bank's validations during the search: A/A candidates, fresh rounds each
        full = FALSE_ACCEPTANCE * TAIL_SAFETY
        candidate = FlagSet((("bank", j + 1),), (f"-fbank{j}",))
        floor = {} if shape.bank_full or BANK_RHO_FLOOR is None else {"rho_floor": BANK_RHO_FLOOR}
        (banked,) = validate(runner, runner.build, trees[:2], space.baseline(), [candidate], min_gain, seed + j,
                             EventStream(), alpha=full if shape.bank_full else bank_alpha(j), **floor)
        if banked.accepted:  # written at once: a false winner whatever the finalists do
            return True, False, runner.runs, banked.geomean_speedup, banked.geomean_ci_low, banked.geomean_ci_high
    if shape.bank and not shape.bank_full:
        limits = replace(limits, alpha=after_bank(shape.bank))
    winner, _ = _decide(context, runner.build, runner, finalists, min_gain, EventStream(), None, limits)
    wrote = winner is not None
    if not wrote:
        return False, False, runner.runs, math.nan, math.nan, math.nan
    return (True, "-fa" in winner.flagset.flags, runner.runs, winner.geomean_speedup, winner.geomean_ci_low,
            winner.geomean_ci_high)


def upper95(k: int, n: int) -> float:
    """The one-sided 95% upper bound of a rate from k events in n (Clopper-Pearson)."""
    from scipy.stats import beta  # noqa: PLC0415 (a benchmark script: scipy only when it runs)

    return 1.0 if k >= n else float(beta.ppf(0.95, k + 1, n - k))


def run(models: tuple[str, ...], tunes: int, power_tunes: int, gains: tuple[float, ...], sigma: float, jobs: int,
        seed: int, shape: Shape = Shape()) -> dict:
    out: dict = {"sigma": sigma, "tunes": tunes, "power_tunes": power_tunes, "models": {},
                 "finalists": shape.finalists, "workloads": shape.workloads, "max_rounds": shape.max_rounds, "cut": shape.cut,
                 "bank": shape.bank, "bank_full": shape.bank_full}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for model in models:
            started = time.perf_counter()
            row: dict = {}
            aa = list(pool.map(one_tune, [(model, sigma, 0.0, seed * 1_000_003 + i, shape) for i in range(tunes)],
                               chunksize=64))
            false = sum(1 for wrote, *_ in aa if wrote)
            row["aa"] = {"false": false, "tunes": tunes, "rate": false / tunes, "upper95": upper95(false, tunes),
                         "runs": sum(r[2] for r in aa) / tunes}
            for g in gains:
                res = list(pool.map(one_tune, [(model, sigma, g, seed * 7_000_001 + i, shape) for i in range(power_tunes)],
                                    chunksize=64))
                right = [r for r in res if r[1]]
                covered = sum(1 for r in right if r[4] <= 1.0 + g <= r[5])
                written = [r for r in res if r[0]]
                row[f"gain_{g:g}"] = {"accepted": len(right), "tunes": power_tunes, "rate": len(right) / power_tunes,
                                      "written": len(written),
                                      "written_low_at_most_1": sum(1 for r in written if r[4] <= 1.0),
                                      "runs": sum(r[2] for r in res) / power_tunes,
                                      "covered": covered, "coverage": covered / len(right) if right else None,
                                      "bias": (sum(r[3] for r in right) / len(right) - (1.0 + g)) if right else None}
            row["seconds"] = round(time.perf_counter() - started, 1)
            out["models"][model] = row
            print(f"{model}: {json.dumps(row)}", file=sys.stderr, flush=True)
    return out


def table(doc: dict) -> str:
    gains = sorted({k for row in doc["models"].values() for k in row if k.startswith("gain_")},
                   key=lambda k: float(k[5:]))
    head = ("| noise model | A/A false acceptance (k/n) | 95% upper bound | runs per A/A tune | "
            + " | ".join(f"true {100 * float(g[5:]):g}% gain accepted (runs)" for g in gains) + " |")
    lines = [head, "|" + "---|" * (4 + len(gains))]
    for model, row in doc["models"].items():
        aa = row["aa"]
        cells = [model, f"{100 * aa['rate']:.2f}% ({aa['false']}/{aa['tunes']})", f"{100 * aa['upper95']:.2f}%",
                 f"{aa['runs']:.0f}"]
        cells += [f"{100 * row[g]['rate']:.1f}% ({row[g]['runs']:.0f})" for g in gains]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tunes", type=int, default=10000, help="A/A tunes per noise model")
    parser.add_argument("--power-tunes", type=int, default=2000, help="tunes per model and true gain")
    parser.add_argument("--gains", default="0.01,0.02,0.05")
    parser.add_argument("--sigma", type=float, default=0.01, help="run-to-run spread (1%%)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--finalists", type=int, default=3, choices=range(1, len(FLAGS) + 1))
    parser.add_argument("--workloads", type=int, default=2, choices=range(1, len(WORKLOADS) + 1))
    parser.add_argument("--max-rounds", type=int, default=MAX_ROUNDS,
                        help="the validation's most rounds (its looks)")
    parser.add_argument("--cut", type=int, default=0,
                        help="a time box ends the finalists' validation after this many rounds (0: none)")
    parser.add_argument("--bank", type=int, default=0,
                        help="bank validations (of flags without effect) before the finalists in every tune")
    parser.add_argument("--bank-full", action="store_true",
                        help="each bank validation at the tests' whole level (the behaviour before issue 51)")
    parser.add_argument("--json", help="write the raw counts here")
    parser.add_argument("--no-guard", action="store_true",
                        help="without the correlated-rounds guard (every test as if the rounds were independent)")
    args = parser.parse_args()
    if args.no_guard:  # the pool's workers are forked after this: they inherit it
        from compileiq_cmake.decide import sequential  # noqa: PLC0415 (every test's correlation is read there)

        sequential.rounds_correlation = lambda variants: 0.0
    doc = run(tuple(m for m in args.models.split(",") if m), args.tunes, args.power_tunes,
              tuple(float(g) for g in args.gains.split(",") if g), args.sigma, args.jobs, args.seed,
              Shape(args.finalists, args.workloads, args.max_rounds, args.cut, args.bank, args.bank_full))
    doc["guard"] = not args.no_guard
    doc["seed"] = args.seed
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))
    print(table(doc))


if __name__ == "__main__":
    main()
