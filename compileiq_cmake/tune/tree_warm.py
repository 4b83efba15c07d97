"""Tune setup, the search's trees built while the GPU measures the baseline (issue 54, builds beside runs).

Under the hot-file focus a trial rebuilds a few files and relinks, but a variant tree's first build compiles
every file of the target: on the H100 the 125-file library's second tree took 28.6 s for its first trial
against 1.9 s for a later one, and since the conveyor takes its trials back in order (execute.pipeline) the
other tree ran one trial in that time and then waited. After the baseline's own build the CPUs are idle while
the GPU runs the project's build, measures its hot files (CUPTI) and checks its warm-up: the other trees the
search will use (tune.focus.ahead_trees) are built then, in the background, with the project's own flags, and
a build in such a tree first waits for that one (it then recompiles only what its flags change).

A warm build that fails is said in a note; a trial's build in that tree then builds everything, as before.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor

from ..execute.executor import Executor
from ..measure.runner import Runner
from ..model.events import Log, as_stream
from ..model.records import BuildResult, FlagSet
from ..model.wording import plural
from ..project.cmake_project import VariantTree


class WarmTrees:
    """The first builds of `trees` with `flagset` (the project's own flags), started by `start()` (the baseline
    calls it once its own build is done) in one background thread, one tree after another."""

    def __init__(self, trees: tuple[VariantTree, ...], executor: Executor, flagset: FlagSet, log: Log) -> None:
        self.trees, self._executor, self._flagset, self._log = trees, executor, flagset, log
        self._futures: dict[str, Future[BuildResult]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._started = 0.0

    def start(self) -> None:
        if not self.trees or self._pool is not None:
            return
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="compileiq-warm")
        self._started = time.perf_counter()
        for tree in self.trees:
            self._futures[str(tree.path)] = self._pool.submit(self._executor.build, tree, self._flagset, None)
        as_stream(self._log).info(
            f"hot-file focus ahead: {', '.join(t.path.name for t in self.trees)} built with the project's own "
            "flags while the GPU measures the baseline (a variant tree's first build compiles every file; a "
            "trial's there then only what its flags change)",
            stage="baseline",
        )

    def wait(self, tree: VariantTree) -> None:
        """Returns once `tree`'s warm build (if any) has ended, whatever its outcome (close() says it)."""
        future = self._futures.get(str(tree.path))
        if future is not None:
            future.exception()

    def waiting(self, executor: Executor) -> Executor:
        """`executor`, its builds first waiting for their tree's warm build (itself when nothing was started)."""
        return _Waiting(executor, self) if self._futures else executor

    def close(self) -> None:
        """Waits for every warm build and says once what they did."""
        if self._pool is None:
            return
        self._pool.shutdown(wait=True)
        self._pool = None
        failed, seconds = [], 0.0
        for path, future in self._futures.items():
            error = future.exception()
            result = future.result() if error is None else None
            if result is not None and result.ok:
                seconds += result.seconds
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
                f"{seconds:.1f} s beside the baseline's runs",
                stage="search",
            )


class _Waiting:
    """An executor whose builds wait for their tree's warm build (WarmTrees.waiting)."""

    def __init__(self, inner: Executor, warm: WarmTrees) -> None:
        self._inner, self._warm = inner, warm

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def runner(self) -> Runner:
        return self._inner.runner

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
        self._warm.wait(tree)
        return self._inner.build(tree, flagset, log)

    def gpu_runners(self) -> dict[str, Runner]:
        return self._inner.gpu_runners()

    def __getattr__(self, name: str):
        return getattr(self._inner, name)
