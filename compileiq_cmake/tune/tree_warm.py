"""Tune setup, the search's other tree built before the search (issue 54, builds beside runs).

Under the hot-file focus a trial rebuilds a few files and relinks, but a variant tree's first build compiles
every file of the target: on the H100 the 125-file library's second tree took 28.6 s for its first trial
against 1.9 s for a later one, and since the conveyor hands trials back in the order they were asked
(execute.pipeline) the other tree ran one trial in that time and then waited. Once the baseline is measured
(its runs and the host-side check are not disturbed by it), the search's other trees (tune.focus.ahead_trees:
only where the focus can apply) are built in the background with the project's own flags while the GPU
profiles the hot files; a build of the search in such a tree first waits for that build (and then recompiles
only what its flags change). When the focus turns out off (no file holds the kernel time) the warm build is
stopped: every trial then recompiles the target anyway.

The warm builds have a stop token of their own under the tune's (an interrupt, the box's end or a tune that
ends before its search stops them); one that fails is said in a note, and a trial there builds everything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace

from ..execute.build import build_variant
from ..execute.executor import Executor
from ..execute.shared import SharedExecutor
from ..measure.runner import Runner
from ..model.events import Log, as_stream
from ..model.records import BuildResult, FlagSet
from ..model.timebox import Stop
from ..model.wording import plural
from ..project.cmake_project import VariantTree
from .focus import ahead_trees
from .tune_setup import TuneSetup


class WarmTrees:
    """The background first builds of the focus's other trees; `start` once the baseline is measured, `keep`
    once the focus is decided, `waiting` for the search's executor, `close` when the search ends (or the tune)."""

    def __init__(self) -> None:
        self._futures: dict[str, Future[BuildResult]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._stop: Stop | None = None
        self._log: Log | None = None
        self._waited = 0.0

    def start(self, setup: TuneSetup, executor: Executor, runner: Runner, parent: Stop | None, log: Log) -> None:
        """The focus's other trees (none where it cannot apply) built with the project's own flags, each in a
        suite's build slot as the executor's builds are (its stop token is its own, so not through it)."""
        trees = ahead_trees(setup, runner)
        if not trees:
            return
        stop = Stop(parent=parent)
        context = replace(setup.build_context, stop=stop)
        flagset = setup.space.baseline()

        def build(tree: VariantTree) -> BuildResult:
            with build_slot(executor):
                return build_variant(context, tree, flagset, None)

        self.begin(trees, build, stop, log)

    def begin(
        self, trees: tuple[VariantTree, ...], build: Callable[[VariantTree], BuildResult], stop: Stop, log: Log
    ) -> None:
        """`build(tree)` for each of `trees`, one after another in a background thread; `stop` ends them."""
        if not trees or self._pool is not None:
            return
        self._stop, self._log = stop, log
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="compileiq-warm")
        for tree in trees:
            self._futures[str(tree.path)] = self._pool.submit(build, tree)
        as_stream(log).info(
            f"hot-file focus ahead: {', '.join(t.path.name for t in trees)} built with the project's own flags "
            "while the GPU profiles the hot files (a variant tree's first build compiles every file; a trial's "
            "there then only what its flags change)",
            stage="baseline",
        )

    def keep(self, focused: bool) -> None:
        """The focus is decided: without it a trial recompiles the whole target anyway, so the warm builds stop."""
        if not focused and self._pool is not None:
            self.close(stopping="the hot-file focus is off")

    def wait(self, tree: VariantTree) -> float:
        """Returns once `tree`'s warm build (if any) has ended, whatever its outcome; the seconds waited."""
        future = self._futures.get(str(tree.path))
        if future is None or future.done():
            return 0.0
        t0 = time.perf_counter()
        future.exception()
        waited = time.perf_counter() - t0
        self._waited += waited
        return waited

    def waiting(self, executor: Executor) -> Executor:
        """`executor`, its builds first waiting for their tree's warm build (itself when none is under way)."""
        return _Waiting(executor, self) if self._pool is not None else executor

    def close(self, stopping: str = "") -> None:
        """Waits for the warm builds (`stopping`: stopped first, for that reason) and says once what they did."""
        if self._pool is None:
            return
        if stopping and self._stop is not None:
            self._stop.cancel(stopping)
        self._pool.shutdown(wait=True)
        self._pool = None
        if self._log is None or stopping:  # (a stopped build says nothing: the reason is the stop's)
            return
        failed, seconds = [], 0.0
        for path, future in self._futures.items():
            error = future.exception()
            result = future.result() if error is None else None
            if result is not None and (result.ok or result.cancelled):
                seconds += result.seconds if result.ok else 0.0
                continue
            why = str(error) if error is not None else (result.log_tail if result is not None else "")
            lines = why.strip().splitlines()
            failed.append(f"{path.rsplit('/', 1)[-1]} ({lines[-1] if lines else 'failed'})")
        stream = as_stream(self._log)
        if failed:
            stream.note(
                f"hot-file focus ahead: the warm build of {', '.join(failed)} did not succeed; a trial there "
                "builds every file itself",
                stage="search",
            )
        if len(failed) < len(self._futures):
            stream.info(
                f"hot-file focus ahead: {plural(len(self._futures) - len(failed), 'variant tree')} built in "
                f"{seconds:.1f} s before its first trial; the search's builds waited {self._waited:.1f} s for it",
                stage="search",
            )


def build_slot(executor: Executor) -> AbstractContextManager:
    """The build slot the executor's builds take (a suite's shared one: SharedExecutor), else nothing to hold."""
    return executor.lease.build() if isinstance(executor, SharedExecutor) else nullcontext()


class _Waiting:
    """An executor whose builds wait for their tree's warm build (WarmTrees.waiting); a build's seconds include
    that wait (its trial's build, from the trial's side: not the driver's overhead)."""

    def __init__(self, inner: Executor, warm: WarmTrees) -> None:
        self._inner, self._warm = inner, warm

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def runner(self) -> Runner:
        return self._inner.runner

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
        waited = self._warm.wait(tree)
        result = self._inner.build(tree, flagset, log)
        return replace(result, seconds=result.seconds + waited) if waited else result

    def gpu_runners(self) -> dict[str, Runner]:
        return self._inner.gpu_runners()
