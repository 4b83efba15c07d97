"""The budget of one tune: the one owner of its seconds. Every stage asks it before it spends (a search
trial, more runs of a trial, a validation round, an ablation step, the write); it holds the clock
(model.timebox.TimeBox), the one cost model (tune.plan: what a build, a run, a trial and a validation cost,
as measured so far; the progress line's ETA reads it too), the plan (the search's share and the finalists'
reserve), every cut the box made (the only source of `untested` in the summary, the console, the report
and the TOML) and the stop token (model.timebox.Stop: Ctrl-C, a suite's interrupt, trials the plan
cancels, the end of the box).

Rules it keeps:
- trials in flight are part of the plan: the search stops when the trials under way and one more no longer
  fit its share, and what is still queued when the finalists' time comes is cancelled (tune.search_loop);
- with no candidate yet (nothing beat the project's own build), the finalists' reserve goes back to the
  search: it goes on while one more trial and one validation of it fit;
- the first run of the project's own build prices every run: a box that cannot hold the baseline, one
  trial and one validation ends the tune at once with the --time-limit it would need (TimeTooShort);
- a resumed tune counts what its killed run already spent of the same box (`spent_before`, kept in the
  trial store), so it does not search again with a fresh box and redo its finished stages."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from ..decide.decided import NO_LIMITS, Limits
from ..decide.rounds import WARMUP
from ..model.errors import CompileIQError
from ..model.records import Trial
from ..model.spec import TuneSpec
from ..model.timebox import Interrupted, Stop, TimeBox
from ..model.wording import seconds
from .plan import (
    WRITE_SECONDS,
    Costs,
    FinishPlan,
    Plan,
    confirmation_cost,
    finish_cost,
    finish_reserve,
    least_finish,
    plan_finish,
    plan_tune,
    tune_costs,
)
from .tune_setup import FINALISTS

BOX_RESULT = "time_box"  # the trial store's record of the box a tune spent (a resume counts it)


class TimeTooShort(CompileIQError):
    """The box cannot hold the baseline, one trial and its validation: the tune ends at once and says what
    --time-limit it would need (`needed`)."""

    def __init__(self, message: str, needed: float) -> None:
        super().__init__(message)
        self.needed = needed


@dataclass(frozen=True)
class FinishGates:
    """The finalists' stage's questions to the box, each keeping the time of what must still follow:
    validation keeps the ablation's, the minimal set's, the confirmation's and the write's; an ablation step
    the minimal set's, the confirmation's and the write's; the minimal set the confirmation's and the write's;
    the confirmation (on the first GPU and the others') the write's. A removal nobody validates is lost: on
    the H200 an unplanned step left the minimal set one round, 0..inf."""

    box: TimeBox
    after_validation: float
    one: float  # one validation of one candidate at the plan's rounds
    tail: float  # after an ablation step: the minimal set's validation, the confirmations and the write
    confirmations: float  # the confirmation stage (plan.confirmation_cost)

    def validation_continue(self, seconds: float) -> bool:
        return self.box.fits(seconds, self.after_validation)

    def ablation_start(self) -> bool:
        return self.box.fits(self.one, self.tail)

    def ablation_continue(self, seconds: float) -> bool:
        return self.box.fits(seconds, self.tail)

    def final_continue(self, seconds: float) -> bool:  # the minimal set: the confirmations follow
        return self.box.fits(seconds, self.confirmations + WRITE_SECONDS)

    def confirm_continue(self, seconds: float) -> bool:
        return self.box.fits(seconds, WRITE_SECONDS)


def _never(seconds: float) -> bool:
    """The planned finalists' stage has no confirmation: none starts."""
    return False


def _rounds_within(room: float, per_round: float, least: int) -> int | None:
    """The validation rounds `room` seconds hold after the warm-up, at least `least` (None: rounds cost nothing)."""
    return max(least, math.floor(room / per_round) - WARMUP) if per_round > 0 else None


class Budget:
    """One tune's seconds (see the module's docstring). Thread-safe where the conveyor's threads ask it."""

    def __init__(self, spec: TuneSpec, box: TimeBox, stop: Stop | None = None) -> None:
        self.spec = spec
        self.box = box
        self.stop = stop if stop is not None else Stop(box)
        self.gpus = 1
        self.paired = False
        self.warmup: int | None = None  # the search trials' warm-up runs (None: the spec's)
        self.plan: Plan | None = None
        self.needed = 0.0  # the --time-limit one trial and its validation would need (0: not asked)
        self._reserve: float | None = None
        self._trial_cost = 0.0  # one search trial at the last plan's costs
        self._cuts: list[str] = []
        self._lock = threading.Lock()

    # the clock -------------------------------------------------------------------------------------------
    @property
    def bounded(self) -> bool:
        return self.box.bounded

    def elapsed(self) -> float:
        return self.box.elapsed()

    def remaining(self) -> float:
        return self.box.remaining()

    def fits(self, seconds: float, keep: float = 0.0) -> bool:
        return self.box.fits(seconds, keep)

    # the stop token ----------------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise Interrupted when the tune was interrupted (its finished work is stored; nothing more is done)."""
        if self.stop.interrupted:
            raise Interrupted(self.stop.reason())

    # the cost model ----------------------------------------------------------------------------------------
    def measured_by(self, gpus: int, paired: bool, warmup: int | None = None) -> None:
        """After the baseline: how many GPUs measure the search's trials, whether runs are paired, and the
        search trials' warm-up runs (None: the spec's)."""
        self.gpus, self.paired, self.warmup = max(1, gpus), paired, warmup

    def costs(self, trials) -> Costs:
        return tune_costs(trials, self.spec, self.gpus, self.paired, self.warmup)

    def eta(self, trials: dict[str, Trial], budget: int) -> tuple[float, float]:
        """(search seconds left, finalists' seconds): the plan's when there is one; else the search at the
        pace so far and the finalists' stage of the cost model (FINALISTS x min_rounds, ablation of 3 flags)."""
        costs = self.costs(trials.values())
        finish = finish_cost(costs, FINALISTS, self.spec.min_rounds, 3, 0) - WRITE_SECONDS
        elapsed = self.elapsed()
        search = elapsed / max(1, len(trials)) * max(0, budget - len(trials))
        if self.box.limit is not None:
            search = max(0.0, min(search, self.remaining()))
        if self.plan is not None:
            search, finish = min(search, self.plan.search_seconds), self.plan.finish.seconds
        return search, finish

    # the plan ----------------------------------------------------------------------------------------------
    def replan(self, trials: dict[str, Trial], finalists: int, steps: int, confirmations: int) -> Plan | None:
        """The plan from now (None without a box); the first one fixes the finalists' reserve."""
        if not self.bounded:
            return None
        if self._reserve is None:
            self._reserve = finish_reserve(self._limit(), self.box.elapsed())
        costs = self.costs(trials.values())
        self._trial_cost = costs.trial()
        self.plan = plan_tune(
            self._limit(),
            self.box.elapsed(),
            costs,
            finalists,
            self.spec.min_rounds,
            steps,
            confirmations,
            self._reserve,
        )
        if self.plan.needed:
            self.needed = self.plan.needed
        return self.plan

    def _limit(self) -> float:
        """The box as a limit from the tune's start: --time-limit, or less where an outer deadline (a suite's
        end) comes first."""
        limit = self.spec.time_limit
        if limit is None or self.box.remaining() < limit - self.box.elapsed():
            return self.box.elapsed() + self.box.remaining()
        return limit

    def search_open(self, pending: int, trials: dict[str, Trial], candidate: bool) -> bool:
        """Whether another search trial may start with `pending` under way. The trials in flight count at the
        cost model's price. With no candidate yet, the finalists' reserve is the search's: one more trial and
        one validation at the fewest rounds must fit."""
        if self.plan is None:
            return True
        costs = self.costs(trials.values())
        if candidate:
            return self.plan.search_open(pending, costs)
        return (pending + 1) * costs.trial() + least_finish(costs, self.spec.min_rounds) <= self.remaining()

    def queued_fit(self, trials: dict[str, Trial], candidate: bool) -> int:
        """How many of the trials in flight the plan still has room for (the rest is cancelled)."""
        if self.plan is None or math.isinf(self.plan.search_seconds):
            return 1 << 30
        costs = self.costs(trials.values())
        trial = max(costs.trial(), 1e-6)
        room = self.plan.search_seconds if candidate else self.remaining() - least_finish(costs, self.spec.min_rounds)
        return max(0, int(room // trial))

    def may_extend(self, seconds: float) -> bool:
        """More runs of a promising search trial: only while they leave the finalists' planned time and one
        more search trial (in a box of a few trials, a near-tie's extra runs took the search's last trial:
        a -O0 project's -O2 was never tried)."""
        if not self.bounded:
            return True
        finish = self.plan.finish.seconds if self.plan is not None else 0.0
        return self.box.fits(seconds, finish + self._trial_cost)

    # the first run prices the runs -------------------------------------------------------------------------
    def check_first_run(self, run_seconds: float, build_seconds: float) -> None:
        """Called after the first run of the project's own build: raise TimeTooShort when the baseline's
        other runs, one trial and one validation of it no longer fit the box."""
        if not self.bounded:
            return
        spec = self.spec
        workloads = len(spec.workloads)
        costs = Costs(
            build=build_seconds, run=run_seconds, workloads=workloads, warmup=spec.warmup, repeats=spec.repeats
        )
        baseline_rest = max(0, (spec.warmup + spec.repeats) * workloads - 1) * run_seconds
        rest = baseline_rest + costs.trial() + least_finish(costs, spec.min_rounds)
        if rest <= self.remaining():
            return
        needed = self.elapsed() + rest
        self.needed = needed
        raise TimeTooShort(
            f"a run of the project's own build took {run_seconds:.1f} s: the rest of its baseline, one trial and "
            f"the validation of one candidate need about {rest:.0f} s, more than the {self.remaining():.0f} s left "
            f"of the time box; stopped at once: give at least --time-limit {math.ceil(needed)}",
            needed,
        )

    def first_run_check(self, build_seconds: float) -> Callable[[float], None] | None:
        """The baseline's `after_first` (Runner.measure): its first run prices the rest (None: no box)."""
        return partial(self.check_first_run, build_seconds=build_seconds) if self.bounded else None

    def too_short(self, baseline: Trial) -> TimeTooShort:
        """The box ended while the project's own build was measured: what it would need, from what it took."""
        needed = self.elapsed() + max(baseline.wall_seconds, 1.0) * 3
        self.needed = needed
        return TimeTooShort(
            f"the time box ended while the project's own build was measured ({baseline.reason}); "
            f"stopped there: give at least --time-limit {math.ceil(needed)}",
            needed,
        )

    # cuts --------------------------------------------------------------------------------------------------
    def cut(self, *phrases: str) -> None:
        """Record what the box left out, once each (the summary's, console's, report's and TOML's `untested`)."""
        with self._lock:
            for p in phrases:
                if p and p not in self._cuts:
                    self._cuts.append(p)

    @property
    def untested(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._cuts)

    # the finalists' stage ----------------------------------------------------------------------------------
    def finish(
        self, trials: dict[str, Trial], finalists: int, steps: int, confirmations: int, record: bool = True
    ) -> FinishPlan:
        """The finalists' stage sized to what is left (its cuts recorded, unless `record` is False)."""
        finish = plan_finish(
            self.remaining(), self.costs(trials.values()), finalists, self.spec.min_rounds, steps, confirmations
        )
        if record:
            self.cut(*finish.cut)
        return finish

    def gates(self, trials: dict[str, Trial], finish: FinishPlan, expected: dict[str, float]) -> Limits:
        """The finalists' limits: the plan's rounds and steps, and the box's questions (FinishGates)."""
        if not self.bounded:
            return replace(NO_LIMITS, expected=expected)
        costs = self.costs(trials.values())
        one = costs.validation(1, finish.rounds)
        confirmations = confirmation_cost(costs, finish.rounds, finish.confirmations, finish.confirm)
        gates = FinishGates(
            self.box,
            finish.seconds - costs.validation(finish.finalists, finish.rounds),
            one,
            one + confirmations + WRITE_SECONDS,
            confirmations,
        )
        # the rounds the validation could hold before its gate says no (the looks are placed within them)
        per_round = costs.round(finish.finalists + 1)
        room = self.remaining() - gates.after_validation - costs.builds(finish.finalists + 1)
        horizon = _rounds_within(room, per_round, finish.rounds)
        pair = costs.round(2)  # another GPU's validation of the winner: its rounds when it starts (builds made)

        def elsewhere_rounds() -> int | None:
            return _rounds_within(self.remaining() - WRITE_SECONDS, pair, finish.rounds)

        return Limits(
            min_rounds=finish.rounds,
            validation_continue=gates.validation_continue,
            ablation_start=gates.ablation_start,
            ablation_continue=gates.ablation_continue,
            final_continue=gates.final_continue if finish.confirm or finish.confirmations else gates.confirm_continue,
            confirm_continue=gates.confirm_continue if finish.confirm else _never,
            elsewhere_continue=gates.confirm_continue,
            elsewhere_rounds=elsewhere_rounds,
            expected=expected,
            ablation_steps=finish.ablation_steps,
            max_rounds=horizon,
        )

    # a resume ----------------------------------------------------------------------------------------------
    def record(self, finished: bool = False) -> dict:
        """What the trial store keeps of the box (saved at each stored trial and at the end)."""
        return {"limit": self.spec.time_limit, "spent": round(self.elapsed(), 3), "finished": finished}

    def limit_text(self) -> str:
        """The box as the lines name it."""
        return (
            f"--time-limit {seconds(self.spec.time_limit)}" if self.spec.time_limit is not None else "the suite's time"
        )


def resumed_box(stored: object, spec: TuneSpec) -> float:
    """Seconds an earlier, unfinished run of the same tune spent of a box of the same limit (0: none)."""
    if not isinstance(stored, dict) or stored.get("finished") or spec.time_limit is None:
        return 0.0
    if stored.get("limit") != spec.time_limit:
        return 0.0
    spent = stored.get("spent")
    return float(spent) if isinstance(spent, (int, float)) and math.isfinite(spent) and spent > 0 else 0.0


def not_charged(waited: Callable[[], float], shared: Callable[[], float], limit: float | None) -> Callable[[], float]:
    """The seconds of a suite target's wall time its box does not count: its waits for slots other targets
    held, up to its own limit (so its wall time is at most about twice its share: with more targets in flight
    than GPUs + 1 each waits most of the time, and uncounted waits gave the first targets the wall time of the
    last ones, H200 `--suite-jobs 4` on one GPU: 120 s for a 32 s share), and the suite's shared setup it ran
    or waited for (`shared`: the project's own build read once, the pool trees' first configures, the one
    baseline build), in full."""
    cap = limit if limit is not None else math.inf
    return lambda: min(waited(), cap) + shared()
