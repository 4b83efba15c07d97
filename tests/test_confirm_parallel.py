"""Issue 54, decisions per GPU-second: with several GPUs the winner's confirmation on the first GPU and its
validation on each other GPU run at the same time (each comparison paired on its own GPU), the builds of the
shared trees one at a time, the trial store used from the tune's thread only, and the plan prices them as one
validation (fake runners: no CMake, no processes)."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compileiq_cmake.decide.decided import ValidationContext
from compileiq_cmake.decide.procedure import validate_and_ablate
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.measure.gpu import GpuSlot
from compileiq_cmake.measure.runner import RunResult
from compileiq_cmake.model.events import recording as recording_stream
from compileiq_cmake.model.records import BuildResult, FlagSet, Status, Validation
from compileiq_cmake.model.spec import TuneSpec
from compileiq_cmake.model.timebox import Interrupted, Stop
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.tune.plan import Costs, finish_cost, plan_finish

from conftest import replay_spec, scripted_spec

RUN_SECONDS = 0.01
WINNER = FlagSet((("use_fast_math", 1),), ("--use_fast_math",))


@dataclass
class Gpus:
    """What every fake GPU shares: which flag set each tree holds, the runs' (GPU, start, end), builds at once."""

    built: dict[str, FlagSet] = field(default_factory=dict)
    spans: list[tuple[str, float, float]] = field(default_factory=list)
    building: dict[str, int] = field(default_factory=dict)  # per tree, its builds under way
    most_building: int = 0  # the most builds under way in one tree at one moment
    builds: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def build(self, tree: VariantTree, flagset: FlagSet) -> BuildResult:
        name = tree.path.name
        with self.lock:
            self.builds += 1
            self.building[name] = self.building.get(name, 0) + 1
            self.most_building = max(self.most_building, self.building[name])
        time.sleep(0.002)
        with self.lock:
            self.built[name] = flagset
            self.building[name] -= 1
        return BuildResult(ok=True, seconds=0.002)


@dataclass
class OnGpu:
    """One GPU's runner: the baseline 10 s, the winner `winner_time` s, a little noise; each run sleeps."""

    spec: TuneSpec
    gpu: GpuSlot
    gpus: Gpus
    winner_time: float = 8.0
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    fail_after: int | None = None  # this GPU's run number that raises (a lost worker, say)
    runs: int = 0
    seconds: float = RUN_SECONDS
    failed_at: float = 0.0
    stop: Stop | None = None  # the tune's stop token, as a live Runner has it: a run under it is cancelled
    interrupt_at: int | None = None  # this GPU's run number at which Ctrl-C arrives (in its thread)
    stop_at: tuple[int, str] | None = None  # this GPU's run number at which the token is set from outside

    def run(self, tree: VariantTree, workload) -> RunResult:
        start = time.perf_counter()
        self.runs += 1
        if self.stop_at is not None and self.runs >= self.stop_at[0] and self.stop is not None:
            self.stop.cancel(self.stop_at[1])
        if self.interrupt_at is not None and self.runs >= self.interrupt_at:
            raise KeyboardInterrupt
        if self.stop is not None and self.stop.reason():
            return RunResult(Status.CANCELLED, self.stop.reason())
        if self.fail_after is not None and self.runs >= self.fail_after:
            self.failed_at = time.perf_counter()
            raise RuntimeError(f"GPU {self.gpu.device} was lost")
        time.sleep(self.seconds)
        value = self.winner_time if self.gpus.built[tree.path.name].flags else 10.0
        with self.gpus.lock:
            self.gpus.spans.append((self.gpu.device, start, time.perf_counter()))
        return RunResult(Status.OK, "", value * (1 + self.rng.gauss(0, 0.002)), 0.0)


class MainThreadStore:
    """A decision store that, like the sqlite trial store, may only be used from the thread that made it."""

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.validations: dict[str, list[Validation]] = {}
        self.saved_at: dict[str, float] = {}
        self.ablations: dict[str, tuple] = {}

    def _here(self) -> None:
        assert threading.get_ident() == self.owner, "the trial store was used from another thread"

    def save_validations(self, name, validations):
        self._here()
        self.validations[name] = list(validations)
        self.saved_at[name] = time.perf_counter()

    def load_validations(self, name):
        self._here()
        return self.validations.get(name)

    def save_ablation(self, name, minimal, contributions):
        self._here()
        self.ablations[name] = (minimal, contributions)

    def load_ablation(self, name):
        self._here()
        return self.ablations.get(name)

    def save_ablation_step(self, name, step, contribution):
        self._here()

    def load_ablation_steps(self, name):
        self._here()
        return {}


def _setup(tmp_path: Path, winner_times: tuple[float, ...], **fields) -> tuple[ValidationContext, Gpus, list[OnGpu]]:
    spec = scripted_spec(tmp_path, **{"min_rounds": 3, "max_rounds": 8, **fields})
    trees = tuple(VariantTree(tmp_path / "b" / "compileiq", f"worker-{i}", "cmake") for i in range(3))
    space = FlagSpace("nvcc", (Dimension("use_fast_math", "", ((), ("--use_fast_math",))),))
    gpus = Gpus()
    runners = [
        OnGpu(spec, GpuSlot(i, str(i), "fake GPU"), gpus, t, random.Random(i)) for i, t in enumerate(winner_times)
    ]
    return ValidationContext(trees, space, 0), gpus, runners


def _most_at_once(spans: list[tuple[str, float, float]], devices: set[str]) -> int:
    """The most runs of `devices` that were under way at one moment."""
    edges = sorted((t, step) for d, a, b in spans if d in devices for t, step in ((a, 1), (b, -1)))
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@pytest.mark.unit
def test_the_other_gpus_confirm_the_winner_at_the_same_time_and_the_store_stays_on_the_tunes_thread(tmp_path):
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 8.0))
    store = MainThreadStore()
    events, recorder = recording_stream()
    winner, _ = validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))
    assert winner is not None and winner.flagset == WINNER
    texts = [e.text for e in recorder.of("info")]
    assert any(t.startswith("confirmed on GPU 1 (fake GPU)") for t in texts), texts
    assert any(t.startswith("confirmed on GPU 2 (fake GPU)") for t in texts), texts
    # each other GPU's validation line names its GPU (they come from several threads at once)
    assert any(t.startswith("validation on GPU 1 (fake GPU): 1 candidate and the baseline") for t in texts), texts
    # both other GPUs measured, and at the same time: their runs overlap (one after the other they never do)
    assert {d for d, _, _ in gpus.spans} == {"0", "1", "2"}
    assert _most_at_once(gpus.spans, {"1", "2"}) == 2, "the confirmations on the other GPUs ran one after another"
    # and beside the winner's own confirmation on the first GPU (its numbers are the ones written)
    assert _most_at_once(gpus.spans, {"0", "1", "2"}) == 3, "the first GPU's confirmation ran before the others"
    assert gpus.most_building == 1, "two builds ran at once in one tree"
    confirmations = store.validations["confirmations"]
    assert [c.accepted for c in confirmations] == [True, True]


@pytest.mark.unit
def test_a_gpu_that_does_not_confirm_the_winner_keeps_it_from_being_written(tmp_path):
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 10.0))  # GPU 2: the winner is no faster
    events, recorder = recording_stream()
    winner, contributions = validate_and_ablate(
        context, gpus.build, first, [WINNER], 0.01, events, MainThreadStore(), tuple(others)
    )
    assert winner is None and contributions == ()
    texts = [e.text for e in recorder.of("info")]
    assert any(t.startswith("confirmed on GPU 1 (fake GPU)") for t in texts), texts
    assert any("is not confirmed on GPU 2 (fake GPU)" in t for t in texts), texts


@pytest.mark.unit
def test_a_gpus_confirmation_kept_in_the_store_is_not_measured_again(tmp_path):
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 8.0))
    store = MainThreadStore()
    events, _ = recording_stream()
    validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))
    measured = len(gpus.spans)
    gpus.spans.clear()
    events, recorder = recording_stream()  # a rerun after a kill: every decision restored
    winner, _ = validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))
    assert winner is not None and measured > 0 and gpus.spans == []
    assert len(store.validations["confirmations"]) == 2, "the summary lost the other GPUs' confirmations"
    assert sum("restored from the trial store" in e.text for e in recorder.of("info")) >= 3


@pytest.mark.unit
def test_the_plan_prices_the_confirmations_on_every_gpu_as_one_validation():
    costs = Costs(build=1.0, run=0.5, workloads=2)
    one = costs.validation(1, 5)
    # with the winner's confirmation on the first GPU: the other GPUs' run beside it, at no extra time
    alone = finish_cost(costs, 1, 5, 0, 0)
    assert finish_cost(costs, 1, 5, 0, 1) == pytest.approx(alone) == pytest.approx(finish_cost(costs, 1, 5, 0, 7))
    # without it (the box left no room): the other GPUs' confirmations cost one validation, however many
    bare = finish_cost(costs, 1, 5, 0, 0, confirm=False)
    assert alone - bare == pytest.approx(one)
    assert finish_cost(costs, 1, 5, 0, 7, confirm=False) - bare == pytest.approx(one)


@pytest.mark.unit
def test_the_other_gpus_reuse_the_two_builds_of_the_confirmation(tmp_path):
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 8.0))
    events, _ = recording_stream()
    validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, MainThreadStore(), ())
    alone = gpus.builds
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 8.0))
    validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, MainThreadStore(), tuple(others))
    assert gpus.builds == alone, "the other GPUs built the trees again"


@pytest.mark.unit
def test_with_a_compare_file_in_the_tree_the_gpus_take_their_turns(tmp_path):
    """A benchmark that writes its --compare-file into the tree cannot share the tree with a run on another
    GPU (one run would remove or read the other's file): one GPU after another, said."""
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 8.0, 8.0), compare_file="out.txt")
    events, recorder = recording_stream()
    winner, _ = validate_and_ablate(
        context, gpus.build, first, [WINNER], 0.01, events, MainThreadStore(), tuple(others)
    )
    assert winner is not None
    assert _most_at_once(gpus.spans, {"0", "1", "2"}) == 1
    assert any("one GPU after another" in e.text and "out.txt" in e.text for e in recorder.of("info"))


def _confirming(context: ValidationContext, gpus: Gpus, first: OnGpu, store: MainThreadStore) -> None:
    """The stage up to its confirmation decided and kept, the confirmation taken out of the store again (so
    that a second `_decide` restores the rest and measures the confirmations only)."""
    from compileiq_cmake.decide.procedure import _decide

    events, _ = recording_stream()
    _decide(context, gpus.build, first, [WINNER], 0.01, events, store)
    store.validations = {k: v for k, v in store.validations.items() if not k.startswith("confirmation")}


@pytest.mark.unit
def test_a_gpu_lost_mid_stage_stops_the_others_at_their_next_round(tmp_path):
    from compileiq_cmake.decide.procedure import _decide

    context, gpus, (first, one, two) = _setup(tmp_path, (8.0, 10.0, 8.0), max_rounds=30)
    store = MainThreadStore()
    _confirming(context, gpus, first, store)
    one.seconds, two.fail_after = 0.1, 3  # GPU 1: no faster, slow runs (many rounds); GPU 2 lost at once
    events, _ = recording_stream()
    with pytest.raises(RuntimeError, match="GPU 2 was lost"):
        _decide(context, gpus.build, first, [WINNER], 0.01, events, store, others=(one, two))
    # its warm-up round and the round under way when GPU 2 was lost (at least 3 rounds more without the stop)
    assert one.runs <= 6, f"GPU 1 ran on after GPU 2 was lost: {one.runs} runs"


@pytest.mark.unit
def test_what_a_gpu_decided_is_kept_when_another_is_lost_later(tmp_path):
    from compileiq_cmake.decide.procedure import _decide

    context, gpus, (first, one, two) = _setup(tmp_path, (8.0, 8.0, 10.0), max_rounds=30)
    store = MainThreadStore()
    _confirming(context, gpus, first, store)
    before = set(store.validations)
    two.seconds, two.fail_after = 0.2, 7  # GPU 2: slow runs, lost well after GPU 1 and the first GPU decided
    events, _ = recording_stream()
    with pytest.raises(RuntimeError, match="GPU 2 was lost"):
        _decide(context, gpus.build, first, [WINNER], 0.01, events, store, others=(one, two))
    new = {k: v for k, v in store.validations.items() if k not in before}
    assert any(k.startswith("confirmation:") for k in new), "the first GPU's confirmation was not kept"
    assert any(k.startswith("validation:") and v[0].accepted for k, v in new.items()), "GPU 1's was not kept"
    # kept as soon as decided, not when the stage ended (a kill meanwhile would have lost them)
    assert all(store.saved_at[k] < two.failed_at for k in new if k != "confirmations"), "kept only at the end"
    assert [c.accepted for c in new["confirmations"]] == [True]


@pytest.mark.unit
@pytest.mark.parametrize("compare_file", [None, "out.txt"])
def test_the_other_gpus_baselines_wait_for_the_first_only_with_a_compare_file(tmp_path, monkeypatch, compare_file):
    """The baseline stage measures the other GPUs' baselines while the first GPU measures its own, all in the
    one baseline tree; a benchmark that writes its --compare-file there cannot share it, so they then come
    after the first's (replay on 2 simulated GPUs, a baseline of about 0.2 s; stopped after the baselines)."""
    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.tune import baseline as baseline_stage
    from compileiq_cmake.tune import orchestration as tune

    sample = Path(__file__).resolve().parents[1] / "benchmarks" / "landscapes" / "sample_small.json"
    monkeypatch.setenv("COMPILEIQ_SIMULATE_GPUS", "2")
    monkeypatch.setenv("COMPILEIQ_REPLAY_PACE", "50")
    spans: list[tuple[str, float, float]] = []
    real = baseline_stage.run_trial

    def timed(runner, *args, **kwargs):
        start = time.perf_counter()
        trial = real(runner, *args, **kwargs)
        spans.append((runner.gpu.device if runner.gpu is not None else "", start, time.perf_counter()))
        return trial

    def stop(*args, **kwargs):
        raise CompileIQError("stopped after the baselines")

    monkeypatch.setattr(baseline_stage, "run_trial", timed)
    monkeypatch.setattr(baseline_stage, "check_comparison", lambda spec, baseline: None)  # (a replay writes none)
    monkeypatch.setattr(baseline_stage, "search_warmup", stop)  # (the next step after every GPU's baseline)
    spec = replay_spec(tmp_path, sample, workers=2, budget=5, compare_file=compare_file)
    with pytest.raises(CompileIQError, match="stopped after the baselines"):
        tune.run_tune(spec, lambda line: None)
    assert {d for d, _, _ in spans} == {"0", "1"}, spans
    overlap = _most_at_once(spans, {"0", "1"}) == 2
    assert overlap == (compare_file is None), spans


def _with_token(runners: list[OnGpu]) -> Stop:
    token = Stop()
    for r in runners:
        r.stop = token
    return token


@pytest.mark.unit
def test_ctrl_c_on_one_gpu_cancels_the_tunes_runs_under_way_and_is_raised(tmp_path):
    from compileiq_cmake.decide.procedure import _decide

    context, gpus, (first, one, two) = _setup(tmp_path, (8.0, 10.0, 8.0), max_rounds=30)
    store = MainThreadStore()
    _confirming(context, gpus, first, store)
    token = _with_token([first, one, two])
    one.seconds, two.interrupt_at = 0.05, 3
    events, _ = recording_stream()
    with pytest.raises(KeyboardInterrupt):
        _decide(context, gpus.build, first, [WINNER], 0.01, events, store, others=(one, two))
    assert token.interrupted, token.reason()  # the runs under way and to come are cancelled, as in the search
    assert not [k for k in store.validations if k.startswith("validation:") and "confirm" not in k][2:]


@pytest.mark.unit
@pytest.mark.parametrize("why", ["interrupted by the suite", "stopped at the end of the time box"])
def test_runs_cancelled_from_outside_are_no_verdict_and_nothing_of_them_is_kept(tmp_path, why):
    """A suite's Ctrl-C or the box's end cancels the runs through the tune's token: a validation whose runs
    were cancelled is no rejection (a rerun would restore it and drop the winner for good)."""
    from compileiq_cmake.decide.procedure import _decide

    context, gpus, (first, one, two) = _setup(tmp_path, (8.0, 8.0, 10.0), max_rounds=30)
    store = MainThreadStore()
    _confirming(context, gpus, first, store)
    before = set(store.validations)
    _with_token([first, one, two])
    two.seconds, two.stop_at = 0.05, (3, why)
    events, recorder = recording_stream()
    if why.startswith("interrupted"):
        with pytest.raises(Interrupted):
            _decide(context, gpus.build, first, [WINNER], 0.01, events, store, others=(one, two))
    else:
        winner, _ = _decide(context, gpus.build, first, [WINNER], 0.01, events, store, others=(one, two))
        assert winner is None  # not confirmed on GPU 2: no verdict there
        assert any(
            "is not confirmed on GPU 2 (fake GPU): its validation was stopped" in e.text for e in recorder.of("info")
        )
    new = {k: v for k, v in store.validations.items() if k not in before and k != "confirmations"}
    assert not any(not v[0].accepted for v in new.values()), "a cancelled validation was kept as a rejection"


@pytest.mark.unit
def test_the_plan_never_leaves_out_the_winners_confirmation_when_other_gpus_confirm_anyway():
    """Beside the other GPUs' validations the first GPU's confirmation costs nothing more: a box that holds
    them holds it (it used to be the first thing cut, leaving the deciding rounds' optimistic numbers)."""
    costs = Costs(build=20, run=2, workloads=2)
    for seconds in (150.0, 300.0, 530.1, 800.0):
        plan = plan_finish(seconds, costs, 3, 5, 4, confirmations=1)
        assert plan.confirmations == 0 or plan.confirm, (seconds, plan)


@pytest.mark.unit
def test_with_a_compare_file_the_plan_prices_each_gpus_turn():
    from dataclasses import replace

    at_once = Costs(build=1.0, run=0.5, workloads=2)
    turns = replace(at_once, confirm_at_once=False)
    one = at_once.validation(1, 5)
    assert finish_cost(turns, 1, 5, 0, 3) - finish_cost(at_once, 1, 5, 0, 3) == pytest.approx(3 * one)


@pytest.mark.unit
def test_a_gpu_that_rejects_the_winner_stops_the_others_early(tmp_path):
    """The winner is not written when one GPU does not confirm it, so the other GPUs' rounds would decide
    nothing: they stop at their next round, say why, and nothing of their cut rounds is kept."""

    def slow_gpu2_runs(winner_on_1: float) -> tuple[int, list[str], MainThreadStore, Validation | None]:
        context, gpus, (first, *others) = _setup(tmp_path, (8.0, winner_on_1, 9.9), max_rounds=40)
        others[1].seconds = 0.03  # GPU 2: slow runs, and a 1% gain that needs many rounds to decide
        store = MainThreadStore()
        events, recorder = recording_stream()
        winner, _ = validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))
        return others[1].runs, [e.text for e in recorder.of("info")], store, winner

    alone, _, _, _ = slow_gpu2_runs(8.0)  # GPU 1 confirms: GPU 2 measures until it decides
    stopped, texts, store, winner = slow_gpu2_runs(12.0)  # GPU 1: the winner is slower there, rejected early
    assert winner is None
    assert any("is not confirmed on GPU 1 (fake GPU)" in t for t in texts), texts
    assert any(
        "is not confirmed on GPU 2 (fake GPU): its validation was stopped (GPU 1 (fake GPU) did not confirm it)" in t
        for t in texts
    ), texts
    assert stopped < alone / 2, (stopped, alone)
    assert [c.accepted for c in store.validations["confirmations"]] == [False]  # GPU 2's cut rounds: not kept


@pytest.mark.unit
def test_another_gpus_validation_places_its_looks_within_the_rounds_the_box_holds(tmp_path):
    """As the finalists' validation does (Limits.max_rounds): a box that holds 6 more rounds spends the other
    GPUs' error budget on looks up to 6, not on looks up to --max-rounds that it never reaches."""
    from compileiq_cmake.decide.decided import Limits  # noqa: PLC0415

    def looks_on_gpu1(limits: Limits) -> list[int]:
        context, gpus, (first, *others) = _setup(tmp_path, (8.0, 9.9), max_rounds=40)
        events, recorder = recording_stream()
        validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, None, tuple(others), limits)
        (line,) = [e for e in recorder.of("info") if e.text.startswith("validation on GPU 1 (fake GPU):")]
        return list(line.data["looks"])

    asked: list[int] = []

    def six() -> int:
        asked.append(6)
        return 6

    boxed = looks_on_gpu1(Limits(elsewhere_rounds=six))
    free = looks_on_gpu1(Limits())
    assert asked == [6], "the horizon is asked once, when the GPU's validation starts"
    assert boxed and max(boxed) <= 6, boxed
    assert max(free) > 6, free  # (a 1% gain: without a horizon it takes more rounds than that)


@pytest.mark.unit
def test_a_rerun_that_restores_a_gpus_rejection_measures_nothing_more(tmp_path):
    """A kill after GPU 1 rejected the winner, before the rest was decided: the rerun restores the rejection and
    neither builds nor runs anything of the stage (the winner is not written whatever the others would find);
    the first GPU's confirmation the stop cut was not kept."""
    context, gpus, (first, *others) = _setup(tmp_path, (8.0, 12.0, 8.0))  # GPU 1: the winner is slower there
    first.seconds = 0.05  # (its confirmation is still under way when GPU 1 rejects the winner)
    store = MainThreadStore()
    events, _ = recording_stream()
    assert validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))[0] is None
    assert not [n for n in store.validations if n.startswith("confirmation:")], "a confirmation the stop cut was kept"
    gpus.spans.clear()
    builds = gpus.builds
    events, recorder = recording_stream()
    assert validate_and_ablate(context, gpus.build, first, [WINNER], 0.01, events, store, tuple(others))[0] is None
    assert gpus.spans == [] and gpus.builds == builds, "the rerun measured the stage again"
    texts = [e.text for e in recorder.of("info")]
    assert any("is not confirmed on GPU 1 (fake GPU)" in t for t in texts), texts
