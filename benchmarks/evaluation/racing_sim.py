"""Racing's miss rate (issue 54): how often a search trial that truly beats the best so far by 2% or 5% is
dropped by racing before its runs are done, under every noise model of the statistics simulator
(statistics_sim.NoiseRunner, 1% noise, three workloads), with the real code: the baseline, the best so far and
the candidate are measured by compileiq_cmake's Runner.measure, the look is tune.trial.race_look (the tune's own,
decide.racing.Race), the noise and smallest gain that counts come from the baseline's runs as in a tune.
Also: how often a trial as fast as the best (0%) and one 5% slower than it are dropped, and the runs a trial got.

    python3 benchmarks/evaluation/racing_sim.py --trials 2000 -o docs/benchmarks/raw/racing/sim.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "evaluation"))
from statistics_sim import MODELS, WORKLOADS, NoiseRunner  # noqa: E402

from compileiq_cmake.decide.stats import auto_min_gain, relative_spread  # noqa: E402
from compileiq_cmake.measure.runner import BenchCommand, Runner, RunResult  # noqa: E402
from compileiq_cmake.model.records import FlagSet, Status, Trial  # noqa: E402
from compileiq_cmake.model.spec import MetricSpec, TuneSpec  # noqa: E402
from compileiq_cmake.project.cmake_project import VariantTree  # noqa: E402
from compileiq_cmake.tune.trial import race_look  # noqa: E402

BEST = 0.90  # the best so far: 10% faster than the baseline
CASES = (("winner by 5%", 0.95), ("winner by 2%", 0.98), ("as fast as the best", 1.0), ("2% slower", 1.02),
         ("5% slower", 1.05), ("20% slower", 1.2))


@dataclass
class SimRunner(Runner):
    noise: NoiseRunner | None = None
    runs: int = 0

    def run(self, tree: VariantTree, workload: tuple[str, ...]) -> RunResult:
        assert self.noise is not None
        self.runs += 1
        return self.noise.run(tree, workload)


def one(model: str, factor: float, seed: int, tmp: Path) -> tuple[bool, int]:
    spec = TuneSpec(source_dir=tmp, build_dir=tmp / "b", target="t", benchmark=("b",),
                    metric=MetricSpec.parse(r"t=([0-9.]+)", True), output=tmp / "o.toml", workloads=WORKLOADS,
                    warmup=0)  # fmt: skip
    truth = {"-best": BEST, "-cand": BEST * factor}
    noise = NoiseRunner(spec, model, 0.01, truth, random.Random(seed))
    runner = SimRunner(spec, BenchCommand(spec.benchmark, (), tmp / "b"), noise=noise)
    trees = {name: VariantTree(tmp / "b" / "compileiq", name, "cmake") for name in ("base", "best", "cand")}
    sets = {"base": FlagSet((), ()), "best": FlagSet((("x", 1),), ("-best",)), "cand": FlagSet((("x", 2),), ("-cand",))}
    trials = {}
    for name in ("base", "best"):
        noise.build(trees[name], sets[name])
        m = runner.measure(trees[name], spec.repeats, 0)
        trials[name] = Trial(len(trials), sets[name], Status.OK, measurements=m.measurements)
    base = trials["base"]
    level = max(relative_spread(m.samples) for m in base.measurements)
    look = race_look(SimpleNamespace(spec=spec), base, dict(trials), lambda t: base,
                     auto_min_gain(level), level)  # fmt: skip
    noise.build(trees["cand"], sets["cand"])
    before = runner.runs
    m = runner.measure(trees["cand"], spec.repeats, 0, race=look)
    return bool(m.stopped), (runner.runs - before) // len(WORKLOADS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--models", default=",".join(m for m in MODELS if not m.startswith("printed")))
    ap.add_argument("-o", "--out", type=Path, required=True)
    a = ap.parse_args()
    tmp = Path("/tmp/racing-sim")
    rows = []
    for model in a.models.split(","):
        for label, factor in CASES:
            drops, runs = 0, []
            for seed in range(a.trials):
                dropped, n = one(model, factor, seed, tmp)
                drops += dropped
                runs.append(n)
            rows.append({"model": model, "case": label, "factor": factor, "trials": a.trials, "dropped": drops,
                         "mean_runs": statistics.fmean(runs)})  # fmt: skip
            print(f"{model:14} {label:24} dropped {drops}/{a.trials} ({100 * drops / a.trials:.2f}%), "
                  f"runs per workload {statistics.fmean(runs):.2f} of 3", flush=True)  # fmt: skip
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"sigma": 0.01, "best": BEST, "repeats": 3, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
