"""Tune stage 3, the search loop's conveyor: trials flow build -> (same code as an earlier one?) -> benchmark on
a free GPU, so that the next trials build while earlier ones are measured and every GPU stays busy.

Order is kept where it matters for reproducibility: trials are handed back in the order they were asked, so
the search is told (and asks) at the same points whatever the timing; a build of the same device code as an
earlier trial (finished or still in flight) shares that trial's measurement, decided against every earlier
trial, never by which build finished first. A run on a lost worker (executor.WorkerLost, e.g. a Ray node that died)
re-queues the trial's measurement on another GPU; nothing finished is lost."""

from __future__ import annotations

import math
import queue
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Literal

from ..measure.runner import Runner
from ..model.errors import CompileIQError
from ..model.events import Log, as_stream
from ..model.records import BuildResult, FlagSet, Status, Trial
from ..model.timebox import Stop
from ..project.cmake_project import VariantTree
from .build import same_code
from .executor import WorkerLost

RETRIES = 3  # a trial's measurement is re-queued at most this often after lost workers


@dataclass
class InFlight:
    """Where the trials of the conveyor are: building, waiting for a GPU (or the host), or measured on one."""

    building: int = 0
    waiting: int = 0
    on_gpu: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def describe(self) -> str:
        with self.lock:
            # "": the runner of a host (CPU) tune, or the process's own GPU: no GPU named
            gpus = " ".join(f"GPU {g}:{n}" if g else f"running {n}" for g, n in sorted(self.on_gpu.items()))
            parts = (
                [f"building {self.building}"]
                + ([f"waiting {self.waiting}"] if self.waiting else [])
                + ([gpus] if gpus else [])
            )
        return "in flight: " + ", ".join(parts)


@dataclass
class Finished:
    """One trial off the conveyor: its result, the build it came from, and the driver's own seconds."""

    index: int
    flagset: FlagSet
    trial: Trial  # for a twin: the earlier trial's
    build: BuildResult
    twin: Trial | None  # the earlier trial whose measurement it shares (same device code)
    driver_seconds: float


@dataclass
class _Job:
    index: int
    tree: VariantTree
    flagset: FlagSet
    built: Future = field(default_factory=Future)  # BuildResult
    measured: Future = field(default_factory=Future)  # Trial or None (not measured: a twin or a failed build)
    done: Future | None = None
    cancelled: bool = False  # the plan has no room for it: it is not measured (Pipeline.cancel)
    measuring: bool = False  # its runs have started (a cancel no longer reaches it)


class Pipeline:
    """Runs trials through build and measurement with at most len(trees) in flight, one tree each.

    `measure(index, tree, flagset, build, runner, known)` measures a built trial on `runner` (one of
    `runners`, taken while free: never two measurements on one GPU); `known` are the finished trials when the
    trial was submitted. Finished trials come back from `next()` in submission order."""

    def __init__(
        self,
        trees: tuple[VariantTree, ...],
        build: Callable[[VariantTree, FlagSet, Log | None], BuildResult],
        runners: list[Runner],
        measure: Callable[..., Trial],
        log: Log,
        stop: Stop | None = None,
    ) -> None:
        self._stop = stop  # the tune's: set when the conveyor is left by an exception (Ctrl-C), so nothing runs on
        self._free_trees = deque(trees)
        self._build = build
        self._measure = measure
        self._log = log
        self._free_runners: queue.Queue[Runner | None] = queue.Queue()  # None: no GPU is left (see _drop)
        for r in runners:
            self._free_runners.put(r)
        self._runner_count = len(runners)
        self._lost_gpus: list[str] = []
        self._threads = ThreadPoolExecutor(max_workers=len(trees))
        self._jobs: deque[_Job] = deque()
        self.in_flight = InFlight()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:  # an interrupt or an error: what is queued is dropped, what runs is stopped
            self.cancel(0)
            if self._stop is not None:
                self._stop.cancel(
                    "interrupted" if issubclass(kind, KeyboardInterrupt) else f"cancelled: {kind.__name__}"
                )
        self._threads.shutdown(wait=True)

    def cancel(self, keep: int) -> int:
        """Cancel the trials in flight after the first `keep` whose runs have not started (a build under way
        finishes, its trial is not measured); they come back from next() as CANCELLED. How many."""
        count = 0
        for job in list(self._jobs)[keep:]:
            if not job.measuring and not job.cancelled:
                job.cancelled = True
                count += 1
        return count

    @property
    def pending(self) -> int:
        return len(self._jobs)

    @property
    def has_free_tree(self) -> bool:
        return bool(self._free_trees)

    def submit(self, index: int, flagset: FlagSet, known: dict[str, Trial]) -> None:
        tree = self._free_trees.popleft()
        job = _Job(index, tree, flagset)
        earlier = list(self._jobs)
        known = dict(known)
        with self.in_flight.lock:
            self.in_flight.building += 1
        job.done = self._threads.submit(self._run, job, earlier, known)
        self._jobs.append(job)

    def next(self) -> Finished:
        """The oldest trial in flight, once finished; its tree is free again."""
        job = self._jobs.popleft()
        try:
            assert job.done is not None  # (submitted with the job)
            return job.done.result()
        finally:
            self._free_trees.append(job.tree)

    def _run(self, job: _Job, earlier: list[_Job], known: dict[str, Trial]) -> Finished:
        start = time.perf_counter()
        build = self._built(job, start)
        try:
            twin, waited = self._twin(build, earlier, known)
            if job.cancelled:
                job.measured.set_result(None)
                return self._cancelled(job, build, start)
            if twin is not None:
                job.measured.set_result(None)
                return Finished(
                    job.index, job.flagset, twin, build, twin, time.perf_counter() - start - build.seconds - waited
                )
            if build.ok:
                trial, gpu_wait = self._measure_on_free_gpu(job, build, known)
                waited += gpu_wait
                if trial is None:  # cancelled while it waited for a GPU
                    job.measured.set_result(None)
                    return self._cancelled(job, build, start)
            else:  # nothing to run: no GPU taken
                trial = self._measure(job.index, job.tree, job.flagset, build, None, known)
        except BaseException as exc:
            if not job.measured.done():
                job.measured.set_exception(exc)
            raise
        job.measured.set_result(trial if build.ok else None)
        driver = time.perf_counter() - start - build.seconds - trial.bench_seconds - waited
        return Finished(job.index, job.flagset, trial, build, None, max(0.0, driver))

    def _built(self, job: _Job, start: float) -> BuildResult:
        """The job's build (a failed one when its worker was lost), told to the jobs after it."""
        try:
            build = self._build(job.tree, job.flagset, self._log)
        except WorkerLost as exc:
            build = BuildResult(
                ok=False, seconds=time.perf_counter() - start, log_tail=f"the build's worker was lost: {exc}"
            )
        except BaseException as exc:
            job.built.set_exception(exc)
            job.measured.set_exception(exc)
            raise
        finally:
            with self.in_flight.lock:
                self.in_flight.building -= 1
        job.built.set_result(build)
        return build

    @staticmethod
    def _twin(build: BuildResult, earlier: list[_Job], known: dict[str, Trial]) -> tuple[Trial | None, float]:
        """A trial that built the same device code (a known one, else the first earlier job's in order, waited
        for), and the seconds waited for it."""
        if not (build.ok and build.fingerprint):
            return None, 0.0
        twin = same_code(build, known)
        if twin is not None:
            return twin, 0.0
        w = time.perf_counter()
        for other in earlier:  # every earlier trial's build decides, in order (not the fastest one)
            other_build = other.built.result()
            if other_build.ok and other_build.fingerprint == build.fingerprint:
                twin = other.measured.result()
                break
        return twin, time.perf_counter() - w

    def _cancelled(self, job: _Job, build: BuildResult, start: float) -> Finished:
        trial = Trial(
            job.index,
            job.flagset,
            Status.CANCELLED,
            "cancelled: the plan had no room left for it",
            build_seconds=build.seconds,
            wall_seconds=time.perf_counter() - start,
        )
        return Finished(job.index, job.flagset, trial, build, None, 0.0)

    def _free_runner(self, job: _Job) -> Runner | None | Literal[False]:
        """The next free runner (None: every GPU was lost), or False when the job was cancelled meanwhile."""
        while True:
            try:
                runner = self._free_runners.get(timeout=0.25)
            except queue.Empty:
                if job.cancelled:
                    return False
                continue
            if job.cancelled and runner is not None:  # a GPU freed as it was cancelled: left for the others
                self._free_runners.put(runner)
                return False
            return runner

    def _measure_on_free_gpu(
        self, job: _Job, build: BuildResult, known: dict[str, Trial]
    ) -> tuple[Trial | None, float]:
        waited = 0.0
        for attempt in range(RETRIES + 1):
            with self.in_flight.lock:
                self.in_flight.waiting += 1
            w = time.perf_counter()
            runner = self._free_runner(job)
            waited += time.perf_counter() - w
            if runner is False:
                with self.in_flight.lock:
                    self.in_flight.waiting -= 1
                return None, waited
            job.measuring = True
            if runner is None:  # every GPU was lost: the waiters after this one are told too
                self._free_runners.put(None)
                with self.in_flight.lock:
                    self.in_flight.waiting -= 1
                raise CompileIQError(
                    f"trial #{job.index}: every GPU's worker was lost ({', '.join(self._lost_gpus)}) "
                    "and none came back; the cluster is not usable"
                )
            gpu = runner.gpu.device if runner.gpu is not None else ""
            with self.in_flight.lock:
                self.in_flight.waiting -= 1
                self.in_flight.on_gpu[gpu] = self.in_flight.on_gpu.get(gpu, 0) + 1
            lost = False
            try:
                return self._measure(job.index, job.tree, job.flagset, build, runner, known), waited
            except WorkerLost as exc:
                lost = True
                if attempt == RETRIES:
                    raise CompileIQError(
                        f"trial #{job.index} lost its worker {RETRIES + 1} times ({exc}); the cluster is not usable"
                    ) from None
                as_stream(self._log).info(f"trial #{job.index}: worker lost on GPU {gpu} ({exc}); re-queued")
            finally:
                with self.in_flight.lock:
                    self.in_flight.on_gpu[gpu] -= 1
                if not lost or getattr(runner, "alive", lambda: True)():  # a worker that came back (restarted)
                    self._free_runners.put(runner)
                else:
                    self._drop(gpu)
        raise AssertionError("unreachable")

    def _drop(self, gpu: str) -> None:
        """A runner that did not come back leaves the conveyor; with the last one gone, every trial waiting
        for a GPU (now or later) ends with an error instead of waiting for good."""
        with self.in_flight.lock:
            self._lost_gpus.append(gpu)
            left = self._runner_count - len(self._lost_gpus)
        if left:
            as_stream(self._log).info(f"GPU {gpu} did not come back; the tune goes on without it")
        else:
            as_stream(self._log).info(f"GPU {gpu} did not come back, and it was the last one")
            self._free_runners.put(None)


def lookahead(trials, gpus: int, workers: int) -> int:
    """How many trials to keep in flight: enough that a built trial waits for each GPU when it frees, no more.
    Every trial in flight was asked without its result, so the search decides blind that many steps ahead;
    on the H200 a tune with 8 build trees asked its 9th-11th trials before the 4th (fast math, 1.23x) was
    measured, and never combined it with device LTO (1.13x) within a budget of 12 (more-speed.md). Per GPU:
    the trial on it plus ceil(build s / benchmark s) building, and one spare build overall; medians of the
    trials measured so far (their build times under the same parallel load), at most `workers`."""
    measured = [t for t in trials if t.same_code_as is None and t.bench_seconds > 0 and t.build_seconds > 0]
    if not measured:
        return workers
    build = statistics.median(t.build_seconds for t in measured)
    bench = statistics.median(t.bench_seconds for t in measured)
    need = gpus * (1 + math.ceil(build / max(bench, 1e-3))) + 1
    return max(1, min(workers, need))


def finished_trial(finished: Finished) -> Trial:
    """The trial of a finished job: its own, or for a build that shares an earlier trial's measurement, that
    measurement under its own index, flags and build."""
    twin, build = finished.twin, finished.build
    if twin is None:
        return finished.trial
    return replace(
        twin,
        index=finished.index,
        flagset=finished.flagset,
        build_seconds=build.seconds,
        bench_seconds=0.0,
        wall_seconds=build.seconds,
        compile_command=build.compile_command,
        same_code_as=twin.index,
        reason=twin.reason or f"same device code as #{twin.index}",
        kernels=build.kernels,
        binary_bytes=build.binary_bytes,
        device_bytes=build.device_bytes,
    )
