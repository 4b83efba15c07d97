"""Tune a suite (issue 24): the targets of one suite file in one command with one time box; every entry
goes into one TOML; one suite summary (JSON) and report (HTML); resumable as a whole: while a suite is
unfinished (killed), each finished target's outcome is kept in a state file beside the trial store, with a
stamp of the project's files (a change since discards it), and a target cut by the kill resumes from its
trials; a complete suite removes the file.

One scheduler: `jobs` targets are in flight at a time (started in order of priority, the next when one
ends), each in a state folder of its own (<build>/compileiq/suite/<target>: trees, store, logs), and all of
them share the build slots and every GPU (execute.shared): each build takes a build slot, each benchmark run
its GPU's slot, and a freed slot goes to the waiting target the Scheduler ranks first: within its floor
first, then by expected gain per second of device time. With jobs = 1 the targets run one after another in
the build tree's own state folder, as before.

Time: with a limit, each target gets max(its floor, what is left x its priority / the priorities left x the
targets in flight), never so much that the targets after it lose their floors; a target whose share is below
its floor when its turn comes is skipped and said. Nor is a share smaller than 1.5 x the median time the
targets before it took to their first trial (setup and baseline): it is raised to that, or the target is
skipped (said) when not that much is left. On Ray (--executor ray) one set of GPU workers per GPU type
serves every target (each run carries its target's runner), and the slots are the cluster's GPUs.

Shared trees: the targets borrow their variant trees from one pool (tree_pool.TreePool,
<build>/compileiq/suite/trees) and give them back when their tune ends, so a suite configures at most as
many trees as its targets in flight hold at once, each once in a run (every configure records the decisions
of every target of the suite, so the next target only writes its fragment; the rest of the project stays
built in them), and reads the project's own build from one tree configured once.
The screening and probe caches are the user's (flags.probe.user_cache_dir), shared by every tune."""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path

from ..execute.ray import RayCluster
from ..execute.shared import Lease
from ..measure.gpu import visible_gpus
from ..model.errors import CompileIQError, UsageError
from ..model.events import PHASES, Event, EventStream, Log, as_stream
from ..model.spec import TuneSpec
from ..model.suite import Suite, SuiteTarget
from ..model.timebox import Stop
from ..model.wording import plural
from ..results import suite_summary, summary
from ..system.writable import check_output
from .orchestration import close_step_cache, run_tune, tune_on_cluster
from .suite_schedule import SETUP_MARGIN, Scheduler, allot, check_floors
from .suite_state import TargetOutcome, _load_state, _save_state, state_path, tree_stamp
from .tree_pool import POOL_FOLDER, TreePool

SUITE_FOLDER = "compileiq/suite"  # targets in flight together: a state folder each (trees, store, logs)


def run_suite(
    suite: Suite,
    make_spec: Callable[[SuiteTarget, float | None], TuneSpec],
    log: Log,
    time_limit: float | None,
    build_dir: Path,
    report_dir: Path | None = None,
    json_summary: Path | None = None,
    jobs: int | None = None,
    gpus: str | None = None,
    on_ray: bool = False,
    ray_address: str | None = None,
) -> list[TargetOutcome]:
    """Every target of the suite, `jobs` at a time (None: default_jobs), sharing the build slots and each GPU
    through one Scheduler. `on_ray`: on the Ray cluster at `ray_address` (None: a new local one), connected once
    every target's options are checked, its GPU workers shared by the targets; each target is tuned on each GPU
    type, its first type's tune in the outcome. Returns the outcomes in the suite's order (excluded included)."""
    if json_summary is not None:
        try:
            check_output(  # before hours of tuning, not after; never the suite file, a device or another's file
                json_summary, "--json-summary", summary.written_by_tool, "a suite summary", (suite.path,)
            )
        except CompileIQError as exc:
            raise UsageError(str(exc)) from None
    if jobs is not None and jobs < 1:
        raise UsageError(f"--suite-jobs {jobs}: give the number of targets tuned at the same time (>= 1)")
    specs = {t.name: make_spec(t, None) for t in suite.ordered}  # every target's options checked before any runs
    cluster = None
    if on_ray:
        cluster = RayCluster(ray_address, log)
        cluster.share_workers = True
    try:
        return _tune_suite(
            suite,
            specs,
            make_spec,
            log,
            time_limit,
            build_dir,
            report_dir,
            json_summary,
            jobs if jobs is not None else default_jobs(gpus, cluster),
            cluster,
        )
    finally:
        if cluster is not None:
            cluster.close()


def default_jobs(gpus: str | None, cluster: RayCluster | None) -> int:
    """Targets in flight by default: the GPUs the tunes use (--gpus; on Ray the cluster's) + 1, so that a
    target's builds overlap another's runs; at least 2."""
    if cluster is not None:
        return max(2, int(sum(n["Resources"].get("GPU", 0) for n in cluster.nodes)) + 1)
    try:
        count = len(visible_gpus(gpus))
    except CompileIQError:
        count = 0
    return max(2, count + 1)


def _tune_suite(
    suite: Suite,
    specs: dict[str, TuneSpec],
    make_spec: Callable[[SuiteTarget, float | None], TuneSpec],
    log: Log,
    time_limit: float | None,
    build_dir: Path,
    report_dir: Path | None,
    json_summary: Path | None,
    jobs: int,
    cluster: RayCluster | None,
) -> list[TargetOutcome]:
    stream = as_stream(log)
    jobs = max(1, min(jobs, len(suite.ordered)))
    check_floors(suite, time_limit, jobs)
    source = next(iter(specs.values())).source_dir
    outputs = tuple({s.output for s in specs.values()}) + ((json_summary,) if json_summary is not None else ())
    stamp = tree_stamp(source, (build_dir,) + ((report_dir,) if report_dir is not None else ()), outputs)
    state = state_path(suite, build_dir)
    run = _suite_run(suite, specs, make_spec, log, stream, time_limit, jobs, cluster, state, stamp, build_dir)
    order = list(suite.ordered)
    _say_suite(suite, order, set(run.finished), jobs, time_limit, stream)
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="compileiq-suite")
    running: list[Future] = []
    try:
        for k, target in enumerate(order):
            if target.name in run.finished:
                run.outcomes[target.name] = replace(run.finished[target.name], resumed=True)
                stream.info(
                    f"suite: {target.name}: finished in an earlier run ({run.finished[target.name].status}); kept",
                    stage="suite",
                )
                continue
            while len([f for f in running if not f.done()]) >= jobs:  # a target starts when one in flight ends
                wait(running, return_when=FIRST_COMPLETED)
            for f in [f for f in running if f.done()]:
                f.result()  # a UsageError of a target ends the suite
                running.remove(f)
            allotted = run.share(k, target, order)
            if allotted is not None and allotted <= 0:
                continue  # skipped (said)
            stream.info(
                f"suite: target {k + 1} of {len(order)}: {target.name}"
                + (f" ({allotted:.0f} s of the suite's time)" if allotted else ""),
                stage="suite",
                target=target.name,
            )
            running.append(pool.submit(run.tune, target, allotted))
            run.allotted_at[running[-1]] = (allotted or 0.0, time.perf_counter())
        for f in running:
            f.result()
    except KeyboardInterrupt:
        _interrupt(run.stop, running, stream)
        raise
    finally:
        pool.shutdown(wait=True)
        close_step_cache(run.tree_pool.step_cache, stream)  # started by one of its targets, if any
    state.unlink(missing_ok=True)  # the suite is complete: a later run tunes every target again (from its store)
    rows = [
        run.outcomes.get(t.name) or TargetOutcome(t.name, "excluded", "exclude = true in the suite file")
        for t in suite.targets
    ]
    _summarize(suite, rows, run, build_dir, report_dir, json_summary)
    return rows


def _suite_run(
    suite: Suite,
    specs: dict[str, TuneSpec],
    make_spec: Callable[[SuiteTarget, float | None], TuneSpec],
    log: Log,
    stream: EventStream,
    time_limit: float | None,
    jobs: int,
    cluster: RayCluster | None,
    state: Path,
    stamp: str,
    build_dir: Path,
) -> _SuiteRun:
    """The suite's run: what an earlier run of it finished, its scheduler and its pool of variant trees."""
    run = _SuiteRun(
        suite,
        specs,
        make_spec,
        log,
        stream,
        time_limit,
        jobs,
        cluster,
        state,
        stamp,
        _load_state(state, stamp, log),
        Scheduler(build_slots=max(s.workers for s in specs.values())),  # every target's builds share --workers
        TreePool(
            build_dir / SUITE_FOLDER / POOL_FOLDER,
            tuple(t.name for t in suite.targets),
            # their own baseline: a VERIFY build builds everything, a compared file is
            # written into the tree by each run (two targets' runs would share it)
            {n: (s.benchmark[0], bool(s.verify or s.compare_file)) for n, s in specs.items() if s.benchmark},
        ),
    )
    run.tree_pool.stop = run.stop
    run.tree_pool.deadline = run.started + time_limit if time_limit else math.inf
    run.tree_pool.order = tuple(t.name for t in suite.ordered if t.name not in run.finished)
    run.scheduler.shared = run.tree_pool.shared_seconds
    return run


def _say_suite(
    suite: Suite,
    order: list[SuiteTarget],
    finished: set[str],
    jobs: int,
    time_limit: float | None,
    stream: EventStream,
) -> None:
    """The suite's first line: its targets, how many at a time, its time limit, those finished before."""
    stream.info(
        f"suite {suite.path.name}: {plural(len(order), 'target')}"
        + (f", {jobs} at a time sharing the build slots and every GPU (one scheduler)" if jobs > 1 else "")
        + (
            f", --time-limit {time_limit:g} s shared out by priority (floor {suite.min_seconds:g} s)"
            if time_limit
            else ", no time limit"
        )
        + (
            f"; {plural(len([t for t in order if t.name in finished]), 'target')} finished in an earlier run "
            "of this suite (kept)"
            if any(t.name in finished for t in order)
            else ""
        ),
        stage="suite",
        jobs=jobs,
    )


@dataclass
class _SuiteRun:
    """One run of a suite (mutable, shared by the targets' threads under `saving`): what every target's tune
    shares (the scheduler, the tree pool, the stop token, the suite's clock) and what the run has found."""

    suite: Suite
    specs: dict[str, TuneSpec]
    make_spec: Callable[[SuiteTarget, float | None], TuneSpec]
    log: Log
    stream: EventStream
    time_limit: float | None
    jobs: int
    cluster: RayCluster | None
    state: Path
    stamp: str
    finished: dict[str, TargetOutcome]  # this run's and an earlier run's finished targets (the state file)
    scheduler: Scheduler
    tree_pool: TreePool
    started: float = field(default_factory=time.perf_counter)
    stop: Stop = field(default_factory=Stop)  # the suite's interrupt: every target's stop token has it as parent
    outcomes: dict[str, TargetOutcome] = field(default_factory=dict)
    allotted_at: dict[Future, tuple[float, float]] = field(default_factory=dict)  # in flight: its share, its start
    saving: threading.Lock = field(default_factory=threading.Lock)

    def held(self) -> tuple[float, int]:
        """What the targets in flight still hold of their shares, and how many they are."""
        now = time.perf_counter()
        live = [(a, t0) for f, (a, t0) in self.allotted_at.items() if not f.done()]
        return sum(max(0.0, a - (now - t0)) for a, t0 in live), len(live)

    def share(self, k: int, target: SuiteTarget, order: list[SuiteTarget]) -> float | None:
        """The seconds `target` gets of the suite's time (None: no time limit); 0 when it is skipped (said,
        and its outcome recorded): the time left is below its floor or below what a setup takes."""
        if not self.time_limit:
            return None
        remaining = self.time_limit - (time.perf_counter() - self.started)
        rest = [t for t in order[k + 1 :] if t.name not in self.finished]
        floor = self.suite.floor(target)
        holding, in_flight = self.held()
        allotted = allot(remaining, target, rest, self.suite.min_seconds, self.jobs, holding, in_flight)
        setup = self.scheduler.setup_estimate()  # a share below what a setup takes would only overrun the box
        need = SETUP_MARGIN * setup if setup is not None else 0.0
        if need and need > allotted:
            allotted = min(remaining, need)
        if remaining < max(floor, need) or allotted <= 0:
            why = (
                f"{remaining:.0f} s of the suite's time were left, below its floor of {floor:g} s"
                if remaining < floor
                else f"{remaining:.0f} s of the suite's time were left, less than {SETUP_MARGIN:g} x the "
                f"{setup:.0f} s the setup and baseline of the targets before it took (median)"
            )
            self.outcomes[target.name] = TargetOutcome(target.name, "skipped", why, allotted=max(0.0, remaining))
            self.stream.note(f"suite: {target.name} skipped: {self.outcomes[target.name].reason}", stage="suite")
            return 0.0
        return float(max(1, math.floor(allotted)))  # whole seconds: its lines say "--time-limit 89 s"

    def tune(self, target: SuiteTarget, allotted: float | None) -> None:
        """One target's tune in its share (a thread of the suite's pool); its outcome saved at once."""
        spec = self.make_spec(target, allotted) if allotted else self.specs[target.name]
        target_log = EventStream(self.stream.emit)  # its own stream (its own current stage), heard by the suite's
        self.scheduler.join(target, self.suite.floor(target))
        # its part of the GPUs: they are shared by the targets in flight or still to start (the slots count its seconds)
        left = sum(t.name not in self.finished and t.name not in self.outcomes for t in self.suite.ordered)
        lease = Lease(self.scheduler.slots, target.name, sharing=max(1, min(self.jobs, left)))
        if self.jobs > 1:  # its own state folder, and its share of the build slots in variant trees of its own
            spec = replace(
                spec,
                state_subdir=f"{SUITE_FOLDER}/{_folder(target.name)}",
                workers=max(1, math.ceil(spec.workers / self.jobs)),
            )
            target_log = _target_stream(self.stream, target.name, self.scheduler)
        t0, wall0 = time.perf_counter(), time.time()
        starts: dict[str, float] = {}  # when each phase of its time began (Event.at of its first mark)

        def mark(e: Event) -> None:
            if e.kind == "detail" and "phase" in e.data:
                starts.setdefault(e.data["phase"], e.at)

        target_log.subscribe(mark)
        deadline = self.started + self.time_limit if self.time_limit else math.inf  # no target outlives the box
        try:
            result = (
                tune_on_cluster(spec, target_log, self.cluster, lease, self.tree_pool, self.stop, deadline)[0]
                if self.cluster is not None
                else run_tune(spec, target_log, lease=lease, pool=self.tree_pool, stop=self.stop, deadline=deadline)
            )
        except UsageError:
            raise
        except CompileIQError as exc:
            outcome = TargetOutcome(
                target.name,
                "failed",
                str(exc).splitlines()[0][:300],
                seconds=time.perf_counter() - t0,
                allotted=allotted,
            )
            self.stream.warning(f"suite: {target.name} failed: {outcome.reason}; the suite goes on", stage="suite")
        else:
            outcome = TargetOutcome.of(target.name, result, time.perf_counter() - t0, allotted)
        finally:
            lease.end()  # its GPUs go to the targets after it
        outcome = replace(
            outcome,
            started=round(t0 - self.started, 3),
            objective=spec.objective,
            device_seconds=round(self.scheduler.slots.device_use(target.name)[0], 3),
            waited_seconds=round(self.scheduler.slots.waited(target.name), 3),
            shared_seconds=round(self.tree_pool.shared_seconds(target.name), 3),
            stages=_stage_seconds(starts, wall0, time.time()),
        )
        with self.saving:
            self.outcomes[target.name] = outcome
            self.finished[target.name] = outcome
            _save_state(self.state, self.finished, self.stamp)


def _stage_seconds(starts: dict[str, float], start: float, end: float) -> dict[str, float]:
    """Seconds per phase of one target's tune (model.events.PHASES) from when each began (time.time()): setup
    from the target's start to the first phase mark, then each phase it reached up to the next one's start;
    the last runs to `end` (a failed or skipped target stops where it stopped). Waiting for a suite's slots
    is inside these (said apart: TargetOutcome.waited_seconds)."""
    marks = sorted((at, name) for name, at in starts.items() if name in PHASES)
    bounds = [(start, "setup"), *marks, (end, "")]
    return {name: round(max(0.0, nxt - at), 3) for (at, name), (nxt, _) in pairwise(bounds)}


def _summarize(
    suite: Suite,
    rows: list[TargetOutcome],
    run: _SuiteRun,
    build_dir: Path,
    report_dir: Path | None,
    json_summary: Path | None,
) -> None:
    """The suite's table, its HTML report and (asked) its JSON summary, with how the targets shared the slots."""
    stream, scheduler = run.stream, run.scheduler
    wall = time.perf_counter() - run.started
    shared = {
        "jobs": run.jobs,
        "idle_share": {n: round(v, 4) for n, v in scheduler.slots.idle_share(wall).items()},
        "busy_seconds": {n: round(u.busy, 3) for n, u in sorted(scheduler.slots.use.items())},
    }
    if len(suite.ordered) > run.jobs:  # targets waited for a place in flight: the GPUs' idle share meanwhile
        last = run.started + max((r.started for r in rows if not r.resumed), default=0.0)
        shared["idle_share_queued"] = {n: round(v, 4) for n, v in scheduler.slots.idle_share_until(last).items()}
    # how many variant trees the suite configured, how often one served another, and its configures in this run
    shared["trees"] = {
        "pool": run.tree_pool.configured(),
        "lent_again": run.tree_pool.lent_again,
        "configures": run.tree_pool.configures(),
    }
    shared["baseline_builds"] = run.tree_pool.baseline_builds()  # the suite's one build of its targets' baselines
    shared["screen_ahead"] = run.tree_pool.end_screen_ahead()  # its screening in one pass (None: it did not run)
    doc = suite_summary.build(suite, rows, run.time_limit, wall, shared)
    for line in suite_summary.table(doc):
        stream(line)  # a table row: printed as it is
    report = (report_dir or build_dir / "compileiq") / "suite-report.html"
    suite_summary.write_whole(report, suite_summary.render(doc))
    stream.info(f"suite report: {report}", stage="suite")
    if json_summary is not None:
        suite_summary.write_whole(json_summary, json.dumps(doc, indent=1) + "\n")
        stream.info(f"wrote the suite summary {json_summary}", stage="suite")


def _interrupt(stop: Stop, running: list[Future], stream: EventStream) -> None:
    """Ctrl-C of a suite: every target's builds and runs are stopped (their stop tokens have the suite's as
    parent), their finished trials stay stored and nothing is written after it; a second Ctrl-C while they
    stop ends the process at once."""
    stop.cancel("interrupted: Ctrl-C")
    stream.note(
        "suite: interrupted: stopping the targets in flight (finished trials are stored; Ctrl-C again to end at once)",
        stage="suite",
    )
    try:
        wait(running, timeout=60)
    except KeyboardInterrupt:
        print("compileiq-cmake: interrupted twice: ended at once", file=sys.stderr, flush=True)
        os._exit(130)


def _folder(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._+-" else "_" for c in name)


def _target_stream(suite: EventStream, target: str, scheduler: Scheduler) -> EventStream:
    """A target's own stream (its own current stage) whose events reach the suite's stream tagged with the
    target and, as lines, prefixed with it (targets in flight together interleave their lines)."""

    def forward(event: Event) -> None:
        scheduler.heard(target, event)
        suite.emit(replace(event, text=f"[{target}] {event.text}", data={**event.data, "target": target}))

    return EventStream(forward)
