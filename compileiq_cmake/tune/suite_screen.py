"""A suite's static screening in one pass (issue 38): once the suite's one baseline build holds every target's
compile commands, the screening of the targets after the first ones runs ahead in one background thread, in
the suite's order, on a part of the build cores at a lower priority, into the screening cache every tune reads
(flags.screen_cache). A target whose setup reaches its own screening then finds its values there (cache hits)
instead of compiling them within its small share of the box, where a short share used to screen one value
and search the rest unscreened. A target whose setup began already is left to its own screening."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..flags import FlagSpace
from ..flags.screening import SCREEN_SHARE, prepare_cuda_space
from ..model.timebox import Stop
from ..project import file_api
from ..project.cmake_project import VariantTree
from .focus import many_files

AHEAD_CORE_SHARE = 4  # the thread's compiles use cores // this (the targets in flight keep the rest)
AHEAD_NICE = 10  # and run at this lower priority: a trial's build goes first (Linux: per thread, and its children)
AHEAD_TARGET_SECONDS = 30.0  # at most this long per target (values left unscreened are the target's to screen)


@dataclass
class AheadReport:
    """What the screening ahead did (the suite's summary): the targets it screened, its compiles and cache
    hits, its seconds, and why it stopped early ("" when it went through)."""

    targets: list[str] = field(default_factory=list)
    compiles: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    stopped: str = ""

    def as_dict(self) -> dict:
        return {
            "targets": list(self.targets),
            "compiles": self.compiles,
            "cache_hits": self.cache_hits,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
        }


class ScreenAhead:
    """The background screening of a suite's CUDA targets in `order` (those `started` says began are
    skipped), against their compile commands in the tree of the suite's baselines (`base`)."""

    def __init__(
        self,
        base: VariantTree,
        order: tuple[str, ...],
        space: FlagSpace,
        nvcc: str,
        cuda_arch: str,
        build_dir: Path,
        started: Callable[[str], bool],
        stop: Stop | None,
        jobs: int,
        target_seconds: float = AHEAD_TARGET_SECONDS,
    ) -> None:
        self.base, self.order, self.space = base, order, space
        self.nvcc, self.cuda_arch, self.build_dir = nvcc, cuda_arch, build_dir
        self.started, self.stop, self.jobs = started, stop, max(1, jobs)
        self.target_seconds = target_seconds  # the most it screens one target for
        self.report = AheadReport()
        self._thread = threading.Thread(target=self._run, name="compileiq-screen-ahead", daemon=True)
        self._current = ""  # the target it screens now
        self._moved = threading.Condition()

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wait_for(self, target: str, seconds: float) -> bool:
        """When the thread screens `target` now, wait for it to finish (at most `seconds`: the target's own
        screening then finds every value in the cache instead of compiling them a second time beside it).
        True when it waited and the thread is done with it."""
        deadline = time.monotonic() + max(0.0, seconds)
        with self._moved:
            if self._current != target:
                return False
            while self._current == target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._moved.wait(left)
            return True

    def _screening(self, name: str) -> None:
        with self._moved:
            self._current = name
            self._moved.notify_all()

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            os.nice(AHEAD_NICE)  # this thread only (Linux), and what it starts: the screening compiles
        except OSError:
            pass
        try:
            model = file_api.read_codemodel(self.base.path)
            for name in self.order:
                if self.stop is not None and self.stop.reason():
                    self.report.stopped = self.stop.reason()
                    break
                target = model.targets.get(name)
                # not a target whose own setup skips screening: one of many files (the hot-file focus)
                if target is None or target.primary_language != "CUDA" or many_files(target):
                    continue
                entries = self.base.compile_commands(target.sources_in("CUDA"), name)
                self._screening(name)  # (before the check: a target that begins now waits for it, or is skipped)
                if not entries or self.started(name):
                    self._screening("")
                    continue
                prepared = prepare_cuda_space(
                    self.space,
                    entries,
                    self.nvcc,
                    self.cuda_arch,
                    self.build_dir,
                    name,
                    jobs=self.jobs,
                    decisions=self.base.decisions(name),
                    time_limit=self.target_seconds / SCREEN_SHARE,
                )
                self._screening("")
                if prepared.screen is not None:
                    self.report.targets.append(name)
                    self.report.compiles += prepared.screen.compiles
                    self.report.cache_hits += prepared.screen.cache_hits
        except Exception as exc:  # noqa: BLE001 (a background thread: the targets screen for themselves, said)
            self.report.stopped = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        finally:
            self._screening("")
            self.report.seconds = time.perf_counter() - t0
