"""The time box's clock and the tune's plan (issue 21): pure arithmetic on measured costs."""

import math
from dataclasses import replace

import pytest

from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
from compileiq_cmake.model.timebox import TimeBox
from compileiq_cmake.tune.plan import (
    ROUNDS_FLOOR,
    WRITE_SECONDS,
    Costs,
    costs_from,
    finish_cost,
    finish_reserve,
    plan_finish,
    plan_tune,
    search_wall,
)

pytestmark = pytest.mark.unit


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_timebox_counts_from_its_start_and_never_goes_negative():
    clock = FakeClock()
    box = TimeBox(45.0, clock)
    clock.now += 40
    assert box.elapsed() == pytest.approx(40)
    assert box.remaining() == pytest.approx(5)
    assert box.fits(4) and not box.fits(6) and not box.fits(4, reserve=2)
    clock.now += 100
    assert box.remaining() == 0.0
    unbounded = TimeBox(None, clock)
    assert unbounded.remaining() == math.inf and unbounded.fits(1e9) and not unbounded.bounded


SLOW = Costs(build=6.0, run=1.5, workloads=1, warmup=1, repeats=3)  # a host project with 1.5 s runs


def test_the_asked_finish_is_kept_when_it_fits():
    plan = plan_finish(1e6, SLOW, finalists=3, min_rounds=5, flags=4)
    assert (plan.finalists, plan.rounds, plan.ablation_steps, plan.cut) == (3, 5, 4, ())
    assert plan.seconds == pytest.approx(finish_cost(SLOW, 3, 5, 4, 0))


def test_a_small_box_cuts_finalists_then_ablation_then_rounds_and_says_what():
    full = finish_cost(SLOW, 3, 5, 4, 0)
    one = plan_finish(finish_cost(SLOW, 1, 5, 4, 0), SLOW, 3, 5, 4)
    assert (one.finalists, one.ablation_steps) == (1, 4) and one.cut == ("2 of 3 finalists not validated",)
    assert one.confirm
    # next the winner's confirmation goes (its numbers are then the deciding rounds', said so), then ablation steps
    unconfirmed = plan_finish(finish_cost(SLOW, 1, 5, 4, 0, confirm=False), SLOW, 3, 5, 4)
    assert (unconfirmed.ablation_steps, unconfirmed.confirm) == (4, False) and "not confirmed" in unconfirmed.cut[-1]
    some = plan_finish(finish_cost(SLOW, 1, 5, 2, 0, confirm=False) + 0.1, SLOW, 3, 5, 4)
    assert (some.finalists, some.rounds, some.ablation_steps) == (1, 5, 2)
    assert any("2 of 4 flags not ablated" in c for c in some.cut)
    short = plan_finish(finish_cost(SLOW, 1, ROUNDS_FLOOR, 0, 0, confirm=False), SLOW, 3, 5, 4)
    assert (short.finalists, short.rounds, short.ablation_steps) == (1, ROUNDS_FLOOR, 0)
    assert any("wider interval" in c for c in short.cut)
    assert full > one.seconds > some.seconds > short.seconds
    none = plan_finish(short.seconds - 0.1, SLOW, 3, 5, 4)
    assert none.finalists == 0 and "not one validation fits" in none.cut[0]


def test_every_planned_finish_fits_its_seconds():
    for seconds in range(0, 400, 7):
        plan = plan_finish(float(seconds), SLOW, 3, 5, 6, confirmations=1)
        assert plan.finalists == 0 or plan.seconds <= seconds


def test_the_search_gets_what_the_finish_leaves_and_stops_before_the_box():
    plan = plan_tune(90.0, elapsed=14.0, costs=SLOW, finalists=3, min_rounds=5, flags=3)
    assert plan.finish.seconds <= (90 - 14) * 0.5 + 1e-9
    margin = SLOW.run * SLOW.workloads + 0.1 * plan.finish.seconds  # the last trial may end late
    assert plan.search_seconds == pytest.approx(90 - 14 - plan.finish.seconds - margin)
    assert plan.search_trials == int(plan.search_seconds // SLOW.trial())
    # a trial starts only while it (and those under way) end before the search's share
    assert plan.search_open(0, SLOW) == (SLOW.trial() <= plan.search_seconds)
    assert not plan.search_open(plan.search_trials, SLOW)
    assert "plan for --time-limit 90 s" in plan.describe()


def test_the_finalists_share_is_fixed_after_the_baseline_not_squeezed_by_each_replan():
    """Issue 21 (H200): re-planned from what was left after each trial, the finalists' share halved with the
    time left, and a 600 s tune of slow runs that planned ablation after the baseline had none at the end.
    With the share fixed after the baseline, the plan late in the search keeps the first plan's finish."""
    slow_runs = Costs(build=8.0, run=4.7, workloads=1, warmup=1, repeats=3)
    reserve = finish_reserve(600.0, 37.0)
    first = plan_tune(600.0, elapsed=37.0, costs=slow_runs, finalists=3, min_rounds=5, flags=8, reserve=reserve)
    late = plan_tune(600.0, elapsed=250.0, costs=slow_runs, finalists=3, min_rounds=5, flags=8, reserve=reserve)
    squeezed = plan_tune(600.0, elapsed=250.0, costs=slow_runs, finalists=3, min_rounds=5, flags=8)
    assert first.finish.ablation_steps >= 1 and late.finish == first.finish
    assert squeezed.finish.seconds < first.finish.seconds  # the old re-plan: a smaller finish
    assert late.search_seconds == pytest.approx(
        600 - 250 - first.finish.seconds - slow_runs.run - 0.1 * first.finish.seconds
    )
    assert finish_reserve(None, 10.0) is None


def test_a_box_too_small_for_a_search_trial_gives_it_to_the_finish():
    quick_build = Costs(build=2.0, run=1.5, workloads=1, warmup=1, repeats=3)
    plan = plan_tune(45.0, elapsed=14.0, costs=quick_build, finalists=3, min_rounds=5, flags=3)
    assert plan.search_trials >= 1 and plan.finish.finalists >= 1  # the finish is kept possible ...
    assert plan.finish.seconds + plan.search_seconds <= 31 + 1e-9  # ... and the whole plan fits the box
    assert plan.search_trials >= 1 or plan.finish.finalists == 0  # a finish with nothing to validate is not planned
    # 6 s builds: 52 s needed (a trial 16.5 s, one finalist at 3 rounds and the warm-up round 21.5 s, the write)
    slow = plan_tune(45.0, elapsed=14.0, costs=SLOW, finalists=3, min_rounds=5, flags=3)
    assert (slow.search_trials, slow.finish.finalists, slow.needed) == (0, 0, pytest.approx(52.0))
    tiny = plan_tune(30.0, elapsed=14.0, costs=SLOW, finalists=3, min_rounds=5, flags=3)
    assert tiny.search_trials == 0 and tiny.finish.finalists == 0 and tiny.search_seconds == 0
    assert tiny.needed == pytest.approx(14 + SLOW.trial() + finish_cost(SLOW, 1, ROUNDS_FLOOR, 0, 0, confirm=False))
    assert tiny.needed > 30
    assert "no search trial fits" in tiny.describe()


def test_without_a_limit_the_search_is_not_bounded_by_time():
    plan = plan_tune(None, elapsed=50.0, costs=SLOW, finalists=3, min_rounds=5, flags=3)
    assert math.isinf(plan.search_seconds) and plan.search_open(100, SLOW)
    assert plan.finish.finalists == 3 and plan.finish.seconds > WRITE_SECONDS


def test_parallel_workers_overlap_builds_and_runs():
    serial = Costs(build=20.0, run=1.0, workloads=2, warmup=1, repeats=3)
    parallel = Costs(build=20.0, run=1.0, workloads=2, warmup=1, repeats=3, workers=4)
    assert serial.trial() == pytest.approx(28.0)
    assert parallel.trial() == pytest.approx(8.0)  # runs (8 s) pace it; builds take 20/4 = 5 s each
    assert parallel.builds(4) == pytest.approx(20.0) and serial.builds(4) == pytest.approx(80.0)


def test_a_trial_costs_at_least_what_the_trials_so_far_took():
    """Paired runs and a loaded machine make a search trial longer than its repeats say: the plan counts what
    the trials really took at their normal runs (a 90 s box once ran 9 s over on the formula alone)."""
    formula = Costs(build=2.0, run=1.5, workloads=1, warmup=1, repeats=3)
    assert formula.trial() == pytest.approx(8.0)
    assert Costs(build=2.0, run=1.5, paired=True).trial() == pytest.approx(12.5)  # the warm-up is not paired
    assert Costs(build=2.0, run=1.5, observed=25.0).trial() == pytest.approx(25.0)


def _recorded(
    index: int, flags: tuple[str, ...], build: float, bench: float, wall: float, samples: int, paired: bool = True
) -> Trial:
    """A trial as the host tune of tests/test_time_box.py recorded it (one workload, one warm-up)."""
    runs = Measurement((), (20.0,) * samples, reference=(50.0,) * samples if paired else ())
    return Trial(index, FlagSet(tuple((f, 1) for f in flags), flags), Status.OK, "", (runs,), build, bench, wall)


# the 90 s box of tests/test_time_box.py (slow_host, paired runs, 3 repeats, max 9): the baseline after 9.4 s,
# then a promising first trial that got 6 more paired runs (27 s) and a normal one (11 s)
BASELINE = _recorded(0, (), 0.37, 5.48, 5.86, 3, paired=False)
EXTENDED = _recorded(1, ("-ffast-math",), 0.46, 26.30, 26.81, 9)
NORMAL = _recorded(2, ("-O2",), 0.87, 10.41, 11.39, 3)


def _host_costs(trials: list[Trial]) -> Costs:
    return costs_from(trials, warmup=1, repeats=3, workloads=1, workers=1, gpus=1, paired=True)


def test_a_promising_trials_extra_runs_are_not_the_next_search_trials_cost():
    """Issue 21 (host tune, 90 s box): the first trial's 6 extra runs made it 27 s; taken as what a search
    trial costs, the plan after the second (11 s) trial had no room for a third and kept 42 s for a finish of
    17 s. A trial costs its build and its normal runs: the extra runs come out at the trial's pace."""
    assert search_wall(EXTENDED, 1, 3) == pytest.approx(26.81 - 26.30 * 12 / 19)  # 12 of its 19 runs were extra
    assert search_wall(NORMAL, 1, 3) == pytest.approx(NORMAL.wall_seconds)
    costs = _host_costs([BASELINE, EXTENDED, NORMAL])
    assert costs.trial() == pytest.approx(NORMAL.wall_seconds)  # the slower normal trial, not the extended one
    reserve = finish_reserve(90.0, 9.4)
    plan = plan_tune(90.0, elapsed=47.8, costs=costs, finalists=3, min_rounds=5, flags=1, reserve=reserve)
    assert plan.search_trials == 1 and plan.search_open(0, costs)
    assert 47.8 + plan.search_seconds + plan.finish.seconds <= 90.0  # the finish still fits after it


def test_a_box_searches_the_trials_it_has_room_for_when_one_got_extra_runs():
    """Replayed trial by trial as the search loop re-plans: the search stops only when one more normal trial
    would eat into the finalists' planned time, and the finish fits in what is left."""
    reserve = finish_reserve(90.0, 9.4)
    elapsed, trials = 9.4, [BASELINE]
    costs = _host_costs(trials)
    plan = plan_tune(90.0, elapsed, costs, finalists=3, min_rounds=5, flags=3, reserve=reserve)
    while plan.search_open(0, costs):
        done = EXTENDED if len(trials) == 1 else NORMAL
        trials.append(replace(done, index=len(trials), flagset=FlagSet((("n", len(trials)),), (f"-f{len(trials)}",))))
        elapsed += done.wall_seconds
        costs = _host_costs(trials)
        plan = plan_tune(90.0, elapsed, costs, finalists=3, min_rounds=5, flags=1, reserve=reserve)
    left_after_finish = 90.0 - elapsed - plan.finish.seconds
    assert len(trials) - 1 == 3
    assert 0 <= left_after_finish < NORMAL.wall_seconds + costs.run + 0.1 * plan.finish.seconds
