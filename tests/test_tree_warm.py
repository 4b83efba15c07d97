"""Issue 54: under the hot-file focus the search's other trees are built while the GPU measures the baseline
(tune.tree_warm); a build in such a tree waits for that one, and a warm build that fails is said."""

from __future__ import annotations

import threading
import time

import pytest

from compileiq_cmake.model.events import EventStream, Recorder
from compileiq_cmake.model.records import BuildResult, FlagSet
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.tune.tree_warm import WarmTrees

pytestmark = pytest.mark.unit


class _Builds:
    """An executor whose builds take `seconds` and record (tree, flags, start, end); `fail` names trees whose
    builds fail."""

    name = "fake"
    runner = None

    def __init__(self, seconds: float = 0.2, fail: tuple[str, ...] = ()) -> None:
        self.seconds, self.fail = seconds, fail
        self.done: list[tuple[str, tuple[str, ...], float, float]] = []
        self._lock = threading.Lock()

    def build(self, tree, flagset, log=None) -> BuildResult:
        start = time.perf_counter()
        time.sleep(self.seconds)
        with self._lock:
            self.done.append((tree.path.name, flagset.flags, start, time.perf_counter()))
        if tree.path.name in self.fail:
            return BuildResult(ok=False, seconds=self.seconds, log_tail="ninja: build stopped: subcommand failed.")
        return BuildResult(ok=True, seconds=self.seconds)

    def gpu_runners(self):
        return {}


def _trees(tmp_path, *names):
    return tuple(VariantTree(tmp_path, name, "cmake") for name in names)


def test_a_build_in_a_warm_tree_waits_for_its_warm_build_and_the_others_do_not(tmp_path):
    builds, recorder = _Builds(0.3), Recorder()
    warm_tree, other = _trees(tmp_path, "worker-1", "worker-0")
    warm = WarmTrees((warm_tree,), builds, FlagSet((), ()), EventStream(recorder))  # type: ignore[arg-type]
    searching = warm.waiting(builds)  # type: ignore[arg-type]
    assert searching is builds  # nothing started: the executor itself
    warm.start()
    searching = warm.waiting(builds)  # type: ignore[arg-type]
    assert searching is not builds
    searching.build(other, FlagSet((), ("-O1",)))  # not a warm tree: builds at once, beside the warm build
    searching.build(warm_tree, FlagSet((), ("-O2",)))
    warm.close()
    by = {(name, flags): (start, end) for name, flags, start, end in builds.done}
    warm_start, warm_end = by[("worker-1", ())]
    assert by[("worker-0", ("-O1",))][0] < warm_end  # the other tree did not wait
    assert by[("worker-1", ("-O2",))][0] >= warm_end  # the warm tree's trial began after its warm build ended
    lines = [e.text for e in recorder.events]
    assert any(t.startswith("hot-file focus ahead: worker-1 built with the project's own flags") for t in lines)
    assert any("1 variant tree built in 0.3 s beside the baseline's runs" in t for t in lines), lines


def test_a_warm_build_that_fails_is_said_and_the_trial_still_builds(tmp_path):
    builds, recorder = _Builds(0.01, fail=("worker-1",)), Recorder()
    (tree,) = _trees(tmp_path, "worker-1")
    warm = WarmTrees((tree,), builds, FlagSet((), ()), EventStream(recorder))  # type: ignore[arg-type]
    warm.start()
    warm.start()  # once only
    result = warm.waiting(builds).build(tree, FlagSet((), ("-O1",)))  # type: ignore[arg-type]
    warm.close()
    warm.close()  # said once
    assert not result.ok and [f for _, f, _, _ in builds.done] == [(), ("-O1",)]
    notes = [e.text for e in recorder.events if e.kind == "note"]
    assert notes == [
        "hot-file focus ahead: the warm build of worker-1 (ninja: build stopped: subcommand failed.) did not "
        "succeed; a trial there builds every file itself"
    ]


def test_no_tree_no_thread(tmp_path):
    builds = _Builds()
    warm = WarmTrees((), builds, FlagSet((), ()), EventStream())  # type: ignore[arg-type]
    warm.start()
    warm.close()
    assert warm.waiting(builds) is builds and builds.done == []  # type: ignore[arg-type]
