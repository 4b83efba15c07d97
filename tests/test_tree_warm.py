"""Issue 54: under the hot-file focus the search's other tree is built before the search (tune.tree_warm); a
build of the search in that tree waits for it, one that fails is said, and it stops when the focus is off."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from compileiq_cmake.model.events import EventStream, Recorder
from compileiq_cmake.model.records import BuildResult, FlagSet
from compileiq_cmake.model.timebox import Stop
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.tune.tree_warm import WarmTrees

pytestmark = pytest.mark.unit

OWN = FlagSet((), ())


class _Builds:
    """An executor whose builds take `seconds[tree]` (0.02 s otherwise) and record (tree, flags, start, end);
    `fail` names trees whose builds fail; a build stopped by `stop` ends early, cancelled."""

    name = "fake"
    runner = None

    def __init__(self, seconds: dict[str, float] | None = None, fail: tuple[str, ...] = ()) -> None:
        self.seconds, self.fail = seconds or {}, fail
        self.done: list[tuple[str, tuple[str, ...], float, float]] = []
        self._lock = threading.Lock()

    def build(self, tree, flagset, log=None, stop: Stop | None = None) -> BuildResult:
        start = time.perf_counter()
        seconds = self.seconds.get(tree.path.name, 0.02)
        if stop is not None and stop.wait(seconds):
            return BuildResult(ok=False, seconds=time.perf_counter() - start, cancelled=stop.reason())
        if stop is None:
            time.sleep(seconds)
        with self._lock:
            self.done.append((tree.path.name, flagset.flags, start, time.perf_counter()))
        if tree.path.name in self.fail:
            return BuildResult(ok=False, seconds=seconds, log_tail="ninja: build stopped: subcommand failed.")
        return BuildResult(ok=True, seconds=seconds)

    def gpu_runners(self):
        return {}


def _trees(tmp_path, *names):
    return tuple(VariantTree(tmp_path, name, "cmake") for name in names)


def _started(builds, trees, recorder=None, stop=None):
    warm = WarmTrees()
    stop = stop or Stop()
    warm.begin(trees, lambda tree: builds.build(tree, OWN, None, stop), stop, EventStream(recorder or Recorder()))
    return warm


def test_a_build_in_a_warm_tree_waits_for_its_warm_build_and_the_others_do_not(tmp_path):
    builds, recorder = _Builds({"worker-1": 0.4}), Recorder()
    warm_tree, other = _trees(tmp_path, "worker-1", "worker-0")
    assert WarmTrees().waiting(builds) is builds  # type: ignore[arg-type]  # nothing under way: the executor itself
    warm = _started(builds, (warm_tree,), recorder)
    searching = warm.waiting(builds)  # type: ignore[arg-type]
    assert searching is not builds
    searching.build(other, FlagSet((), ("-O1",)))  # not a warm tree: built at once (0.02 s), beside the warm one
    trial = searching.build(warm_tree, FlagSet((), ("-O2",)))
    warm.close()
    by = {(name, flags): (start, end) for name, flags, start, end in builds.done}
    warm_end = by[("worker-1", ())][1]
    assert by[("worker-0", ("-O1",))][1] < warm_end  # the other tree did not wait
    assert by[("worker-1", ("-O2",))][0] >= warm_end  # the warm tree's trial began after its warm build ended
    assert trial.seconds > 0.3  # its wait is the trial's build time (not the driver's overhead)
    lines = [e.text for e in recorder.events]
    assert any(t.startswith("hot-file focus ahead: worker-1 built with the project's own flags") for t in lines)
    assert any(
        "1 variant tree built in 0.4 s before its first trial; the search's builds waited 0." in t for t in lines
    )


def test_a_warm_build_that_fails_is_said_and_the_trial_still_builds(tmp_path):
    builds, recorder = _Builds(fail=("worker-1",)), Recorder()
    (tree,) = _trees(tmp_path, "worker-1")
    warm = _started(builds, (tree,), recorder)
    warm.begin((tree,), lambda t: builds.build(t, OWN), Stop(), EventStream(recorder))  # started once only
    result = warm.waiting(builds).build(tree, FlagSet((), ("-O1",)))  # type: ignore[arg-type]
    warm.close()
    warm.close()  # said once
    assert not result.ok and [f for _, f, _, _ in builds.done] == [(), ("-O1",)]
    notes = [e.text for e in recorder.events if e.kind == "note"]
    assert notes == [
        "hot-file focus ahead: the warm build of worker-1 (ninja: build stopped: subcommand failed.) did not "
        "succeed; a trial there builds every file itself"
    ]


def test_the_warm_build_stops_when_the_focus_is_off_or_the_tune_ends_before_its_search(tmp_path):
    for leave in (lambda w: w.keep(False), lambda w: w.close(stopping="the tune ended before its search")):
        builds, recorder = _Builds({"worker-1": 30.0}), Recorder()
        warm = _started(builds, _trees(tmp_path, "worker-1"), recorder)
        t0 = time.perf_counter()
        leave(warm)
        assert time.perf_counter() - t0 < 2.0  # stopped, not waited for (a 30 s build)
        assert builds.done == [] and not [e for e in recorder.events if e.kind == "note"]
        assert warm.waiting(builds) is builds  # type: ignore[arg-type]
    builds = _Builds({"worker-1": 0.05})
    warm = _started(builds, _trees(tmp_path, "worker-1"))
    warm.keep(True)  # the focus is on: the warm build goes on
    warm.close()
    assert [name for name, *_ in builds.done] == ["worker-1"]


def test_the_tunes_stop_reaches_the_warm_build(tmp_path):
    tune = Stop()
    builds = _Builds({"worker-1": 30.0})
    warm = _started(builds, _trees(tmp_path, "worker-1"), stop=Stop(parent=tune))
    tune.cancel("interrupted")
    t0 = time.perf_counter()
    warm.close()
    assert time.perf_counter() - t0 < 2.0 and builds.done == []


def test_no_tree_no_thread(tmp_path):
    builds = _Builds()
    warm = WarmTrees()
    warm.begin((), lambda t: builds.build(t, OWN), Stop(), EventStream())
    warm.close()
    assert warm.waiting(builds) is builds and builds.done == []  # type: ignore[arg-type]


def test_in_a_suite_the_warm_build_takes_the_suites_build_slot_as_every_build_does(tmp_path):
    from compileiq_cmake.execute.shared import BUILD, Lease, SharedExecutor, SharedSlots
    from compileiq_cmake.tune.tree_warm import build_slot

    slots = SharedSlots({BUILD: 1})
    builds = _Builds()
    suite = SharedExecutor(builds, Lease(slots, "one"))  # type: ignore[arg-type]
    assert isinstance(build_slot(builds), contextlib.nullcontext)  # type: ignore[arg-type]  # alone: nothing to hold
    order: list[str] = []
    with Lease(slots, "other").build():  # another target's build holds the one slot
        warm = WarmTrees()

        def build(tree):
            with build_slot(suite):
                order.append("warm")
                return builds.build(tree, OWN)

        warm.begin(_trees(tmp_path, "worker-1"), build, Stop(), EventStream())
        time.sleep(0.2)
        order.append("other done")
    warm.close()
    assert order == ["other done", "warm"]
