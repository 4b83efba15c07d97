"""Which trials get more runs during the search: those within two noise-spreads of the best trial so far,
where every trial (the best ones included) is judged against the baseline of the GPU it ran on."""

from types import SimpleNamespace

import pytest

from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
from compileiq_cmake.tune.trial import measure_more_if_promising

W = ("--n", "1")


def _trial(index: int, flags: tuple[str, ...], gpu: str, *samples: float) -> Trial:
    return Trial(index, FlagSet((), flags), Status.OK, measurements=(Measurement(W, samples),), gpu=gpu)


class _CountingRunner:
    """Gives every extra run the trial's own median again, and counts the calls."""

    def __init__(self):
        self.extended = 0

    def extend(self, tree, measurements, repeats, reference):
        self.extended += 1
        m = measurements[0]
        return SimpleNamespace(
            status=Status.OK, measurements=(Measurement(W, m.samples + (m.median,) * repeats),), seconds=1.0
        )


def _setup():
    spec = SimpleNamespace(
        metric=SimpleNamespace(lower_is_better=True), lower_is_better=True, max_repeats=9, repeats=3, race=False
    )
    return SimpleNamespace(spec=spec)


# GPU 1 is 10% slower than GPU 0: its baseline is 110 where GPU 0's is 100.
BASELINES = {"0": _trial(0, (), "0", 100, 100, 100), "1": _trial(0, (), "1", 110, 110, 110)}


def base_of(trial: Trial) -> Trial:
    return BASELINES[trial.gpu]


@pytest.mark.unit
def test_the_best_so_far_is_judged_on_its_own_gpus_baseline():
    best_on_gpu1 = _trial(1, ("-a",), "1", 104.5, 104.5, 104.5)  # 0.95x of GPU 1's baseline: the best so far
    known = {"base": BASELINES["0"], "a": best_on_gpu1}
    # 0.98x of GPU 0's baseline: 3% behind the best, more than 2 x 1% noise -> no more runs. Judged against
    # GPU 0's baseline the best would look 4.5% slower than the baseline and this trial the best of all.
    behind = _trial(2, ("-b",), "0", 98, 98, 98)
    runner = _CountingRunner()
    out = measure_more_if_promising(runner, _setup(), None, behind, base_of, known, 0.01)
    assert runner.extended == 0 and len(out.measurements[0].samples) == 3
    # 0.955x of GPU 0's baseline: within the noise band of the best -> measured up to max_repeats.
    close = _trial(3, ("-c",), "0", 95.5, 95.5, 95.5)
    out = measure_more_if_promising(runner, _setup(), None, close, base_of, known, 0.01)
    assert runner.extended == 2 and len(out.measurements[0].samples) == 9
