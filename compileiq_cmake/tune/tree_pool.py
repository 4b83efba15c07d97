"""Variant trees shared by the targets of a suite (issues 24, 38): <build>/compileiq/suite/trees/tree-<k>, and
one tree that stays configured as the user configured the project (`own`: each target's setup reads the
project's own build there). A target in flight borrows the trees its tune needs and gives them back when its
tune ends. Each tree records the apply decisions of every target of the suite at its configure
(VariantTree.record), so a tree configured once in this run serves the next target without configuring
again: the target's setup writes its fragment, and its first build re-runs CMake as after any trial. Only the
rest of the project changed by the target's flags is rebuilt. Each tree is lent to one target at a time; what
a tree holds is never trusted (every trial builds its own flags), so a suite killed mid-way resumes with the
trees as they are (configured once more in the new run)."""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from ..execute.build import CoreShare
from ..execute.step_cache import StepCache
from ..flags import FlagSpace
from ..model.errors import CompileIQError
from ..model.records import BuildResult
from ..model.timebox import Stop
from ..project import file_api
from ..project.baseline_tree import BaselineTree
from ..project.cmake_project import VariantTree
from ..project.file_api import CodeModel, Target
from ..project.variant_settings import VariantSettings
from .suite_screen import AHEAD_CORE_SHARE, AHEAD_TARGET_SECONDS, ScreenAhead

POOL_FOLDER = "trees"
OWN_TREE = "own"
BASE_TREE = "base"
BASE_TIMEOUT = 3600.0  # the suite's one baseline build: every target's, on every core
T = TypeVar("T")


@dataclass(frozen=True)
class Baselines:
    """The suite's one baseline build of one configuration: the tree that holds it (None: not made), the suite
    targets whose baselines it holds, what it built, how it went and what is said about it."""

    tree: BaselineTree | None
    targets: tuple[str, ...]
    built: tuple[str, ...]
    result: BuildResult | None
    why: str = ""  # not made, or failed: why (said once, by the target that ran it)

    def holds(self, target: str) -> bool:
        return self.tree is not None and target in self.targets

    def as_dict(self) -> dict:
        return {
            "tree": self.tree.path.name if self.tree is not None else None,
            "targets": list(self.targets),
            "built": list(self.built),
            "ok": bool(self.result and self.result.ok),
            "seconds": round(self.result.seconds, 3) if self.result is not None else 0.0,
            "why": self.why,
        }


def _partly_built(
    tree: BaselineTree,
    result: BuildResult,
    held: list[str],
    built: tuple[str, ...],
    pairs: dict[str, tuple[str, str]],
    made: dict[str, Target],
    started: float,
) -> Baselines | tuple[list[str], tuple[str, ...], str]:
    """A failed baseline build: the targets it built whole anyway (each and its benchmark's target: Ninja has
    nothing left to do, or their artifacts are newer than the build's start), what is built, and why the others
    build their own baselines; Baselines without a tree when it holds none of them (or was stopped)."""
    first_line = (result.log_tail or "").strip().splitlines()
    failed = "it failed" + (f" ({first_line[0][:200]})" if first_line else "")
    if result.cancelled or result.failure is None or result.failure.exit_code is None:
        return Baselines(None, (), built, result, failed)

    def whole(name: str) -> bool:  # it and its benchmark's target are built (Ninja: nothing left to do)
        said = tree.up_to_date(pairs[name])
        if said is not None:
            return said
        return all(
            n in made
            and made[n].artifacts
            and all(a.is_file() and a.stat().st_mtime >= started for a in made[n].artifacts)
            for n in pairs[name]
        )

    broken = [n for n in held if not whole(n)]
    held = [n for n in held if n not in broken]
    fresh = {x for n in held for x in pairs[n]}
    if not held:
        return Baselines(None, (), built, result, failed)
    why = (
        f"{', '.join(broken)} did not build with the project's own flags ({failed}; log "
        f"{tree.log_path('build')}): "
        f"{'it builds its own baseline' if len(broken) == 1 else 'they build their own baselines'}"
    )
    return held, tuple(n for n in built if n in fresh), why


class TreePool:
    """The suite's variant trees: lent by name, the lowest free name first (a resumed suite finds its trees
    where they were). `targets`: the suite's targets, whose decisions every configure records."""

    def __init__(
        self, root: Path, targets: tuple[str, ...], benchmarks: dict[str, tuple[str, bool]] | None = None
    ) -> None:
        self.root = root
        self.targets = targets
        # per target: its benchmark's first word and whether its builds build everything (a VERIFY command)
        self.benchmarks = benchmarks or {}
        self._bases: dict[str, Baselines] = {}  # per configuration: the suite's one baseline build
        self._base_lock = threading.Lock()
        self._shared: dict[str, float] = {}  # owner -> seconds it spent on (or waiting for) the shared baseline build
        self.stop: Stop | None = None  # the suite's interrupt (the one baseline build is stopped by it)
        self.deadline = math.inf  # the suite's end (perf_counter): the one baseline build does not outlive it
        self.order: tuple[str, ...] = targets  # the order the suite tunes its targets in (the screening ahead's)
        self.ahead: ScreenAhead | None = None  # the suite's screening ahead (tune.suite_screen), once started
        self.ahead_seconds = AHEAD_TARGET_SECONDS  # the most the screening ahead spends on one target
        self._began: set[str] = set()  # targets whose setup began
        self._trees: dict[str, VariantTree] = {}  # one object per name for the whole run (it knows its configure)
        self._lent: dict[str, list[str]] = {}  # owner -> names
        self._lock = threading.Lock()
        self._own_lock = threading.Lock()
        self._own_writes: list[Path] | None = None  # what the first configure of the own tree wrote into the sources
        self.lent_again = 0  # trees lent to a target already configured by an earlier one (what the pool saved)
        self.step_cache: StepCache | None = None  # a compile-step cache server a target started: the suite stops it
        self.cores = CoreShare()  # the machine's cores, shared by the builds of every target in flight

    def _tree(self, name: str, cmake: str, config: str, logs: Path) -> VariantTree:
        tree = self._trees.get(name)
        if tree is None or tree.cmake != cmake or tree.config != config:
            tree = self._trees[name] = VariantTree(self.root, name, cmake, config, logs=logs, record=self.targets)
        tree.logs = logs
        return tree

    def take(self, owner: str, n: int, cmake: str, config: str, logs: Path) -> tuple[VariantTree, ...]:
        """`n` more trees for `owner` (their logs in `logs`)."""
        with self._lock:
            busy = {name for names in self._lent.values() for name in names}
            names: list[str] = []
            k = 0
            while len(names) < n:
                name = f"tree-{k}"
                if name not in busy:
                    names.append(name)
                k += 1
            self.lent_again += sum(1 for name in names if _configured(self.root / name))
            self._lent.setdefault(owner, []).extend(names)
            return tuple(self._tree(name, cmake, config, logs) for name in names)

    def own_build(
        self, settings: VariantSettings, target: str, source_dir: Path, build_dir: Path, logs: Path
    ) -> tuple[VariantTree, CodeModel, list[Path]]:
        """The tree configured as the user configured the project (once in this run), its code model, and what
        its first configure wrote into the source tree (then the suite's trees are configured one at a time).
        Its seconds (that configure, or waiting for it) are the suite's shared setup (shared_seconds)."""
        # one own tree per configuration (a suite file may give a target its own --config): each configured
        # once in the run, never again while another target reads it
        key = _settings_key(settings)
        t0 = time.perf_counter()
        with self._own_lock:
            with self._lock:
                tree = self._tree(f"{OWN_TREE}-{key}", settings.cmake, settings.config, logs)
            model, written = tree.prepare_watching(settings, target, "", source_dir, build_dir)
            if self._own_writes is None:
                self._own_writes = written
        self._charge(target, time.perf_counter() - t0)
        return tree, model, self._own_writes

    def first_configures(self, owner: str, trees: tuple[VariantTree, ...], step: Callable[[], T]) -> T:
        """`step`'s result: a setup step of `owner` that configures `trees` where they need it. Its seconds are
        the suite's shared setup (shared_seconds) when it configured one of them for the first time in this
        run: the pool's trees are configured once for every target that borrows them later."""
        fresh = [tree for tree in trees if tree.configures == 0]
        t0 = time.perf_counter()
        result = step()
        if any(tree.configures for tree in fresh):
            self._charge(owner, time.perf_counter() - t0)
        return result

    def _charge(self, owner: str, seconds: float) -> None:
        """`seconds` of `owner`'s wall time were the suite's shared setup (with one target: its own)."""
        if len(self.targets) > 1:
            with self._lock:
                self._shared[owner] = self._shared.get(owner, 0.0) + seconds

    def baselines(
        self,
        settings: VariantSettings,
        target: str,
        language: str,
        model: CodeModel,
        logs: Path,
        progress: Callable[[str], object] | None = None,
    ) -> tuple[Baselines, bool]:
        """The suite's one build of its targets' baselines in this configuration (`settings`, the variant
        trees' own: architecture, launcher), made by the first target that asks (on every core: the targets
        after it wait for it) in the tree `base-<key>`: every suite target of the same kind (CUDA or host) whose
        benchmark is a target of the project, with that benchmark's target, in one `cmake --build`. Returns it
        and whether this call made it. Seconds spent on it or waiting for it are the suite's (`shared`), not
        `target`'s."""
        key = _settings_key(settings) + ("-cuda" if language == "CUDA" else "-host")
        t0 = time.perf_counter()
        made = False
        with self._base_lock:
            base = self._bases.get(key)
            if base is None:
                base = self._bases[key] = self._build_baselines(settings, key, target, language, model, logs, progress)
                made = True
        self._charge(target, time.perf_counter() - t0)
        return base, made

    def _build_baselines(
        self,
        settings: VariantSettings,
        key: str,
        target: str,
        language: str,
        model: CodeModel,
        logs: Path,
        progress: Callable[[str], object] | None,
    ) -> Baselines:
        held, pairs = self._held(model, language == "CUDA")
        built = tuple(dict.fromkeys(n for name in held for n in pairs[name]))
        if len(held) < 2:
            return Baselines(
                None,
                (),
                (),
                None,
                "fewer than two of the suite's targets have a benchmark built by a target of the project",
            )
        tree = BaselineTree(
            self.root, f"{BASE_TREE}-{key}", settings.cmake, settings.config, logs=logs, record=self.targets
        )
        with self._lock:
            self._trees[tree.path.name] = tree  # (its configure is counted with the others')
        try:
            tree.prepare(settings, target, language)
        except CompileIQError as exc:
            return Baselines(None, (), built, None, f"its tree could not be configured: {str(exc).splitlines()[0]}")
        started = time.time()
        with self.cores.claim(1) as jobs:  # every core while no other build runs
            timeout = max(1.0, min(BASE_TIMEOUT, self.deadline - time.perf_counter()))
            # past a target that fails to build, the others are still built (a broken one builds its own, and fails)
            result = tree.build(built, jobs=jobs, timeout=timeout, stop=self.stop, progress=progress, keep_going=True)
        try:
            made = file_api.read_codemodel(tree.path).targets
        except CompileIQError:
            made = {}
        why = ""
        if not result.ok:
            partial = _partly_built(tree, result, held, built, pairs, made, started)
            if isinstance(partial, Baselines):
                return partial
            held, built, why = partial
            result = replace(result, ok=True)
        tree.built = frozenset(built)
        tree.estimate_seconds(
            result.seconds,
            jobs,
            {  # (prices a trial's build)
                n: tuple(a.relative_to(tree.path) for a in made[n].artifacts if a.is_relative_to(tree.path))
                for n in built
                if n in made
            },
        )
        return Baselines(tree, tuple(held), built, result, why)

    def _held(self, model: CodeModel, cuda: bool) -> tuple[list[str], dict[str, tuple[str, str]]]:
        """The suite's targets of this language whose benchmark is built by one target of the project (the one
        baseline build can hold them), each with (itself, its benchmark's target)."""
        held: list[str] = []
        pairs: dict[str, tuple[str, str]] = {}  # held target -> (itself, its benchmark's target)
        for name in self.targets:
            t = model.targets.get(name)
            if t is None or (t.primary_language == "CUDA") != cuda:
                continue
            first, everything = self.benchmarks.get(name, ("", True))
            owner = model.targets.get(first)
            if everything or owner is None or not owner.artifacts:  # its builds build all, or a file: its own
                continue
            held.append(name)
            pairs[name] = (name, first)
        return held, pairs

    def begin(self, target: str) -> None:
        """`target`'s setup begins (the screening ahead leaves it to its own)."""
        with self._lock:
            self._began.add(target)

    def began(self, target: str) -> bool:
        with self._lock:
            return target in self._began

    def screen_ahead(self, base: Baselines, space: FlagSpace, nvcc: str, cuda_arch: str, build_dir: Path) -> bool:
        """Start the suite's screening ahead (once) over the CUDA targets of `base`'s tree; False when it runs
        already or there is no tree."""
        with self._lock:
            if self.ahead is not None or base.tree is None:
                return False
            self.ahead = ScreenAhead(
                base.tree,
                self.order,
                space,
                nvcc,
                cuda_arch,
                build_dir,
                self.began,
                Stop(parent=self.stop),
                self.cores.cores // AHEAD_CORE_SHARE,
                self.ahead_seconds,
            )
        self.ahead.start()
        return True

    def end_screen_ahead(self) -> dict | None:
        """Stop the screening ahead (after the target it screens now) and what it did (None: it never ran)."""
        if self.ahead is None:
            return None
        if self.ahead.stop is not None:  # (made with one: the suite's)
            self.ahead.stop.cancel("the suite ended")
        self.ahead.join(timeout=60)
        return self.ahead.report.as_dict()

    def shared_seconds(self, owner: str) -> float:
        """Seconds `owner` spent on the suite's shared setup, or waiting for it: the project's own build read
        once, the first configure of the pool's trees, the one baseline build."""
        with self._lock:
            return self._shared.get(owner, 0.0)

    def baseline_builds(self) -> list[dict]:
        """The suite's baseline builds (the suite's summary)."""
        with self._base_lock:
            return [b.as_dict() for b in self._bases.values()]

    def give_back(self, owner: str) -> None:
        """Every tree `owner` holds is free again."""
        with self._lock:
            self._lent.pop(owner, None)

    def configured(self) -> int:
        """How many of the pool's trees were configured (the suite's summary)."""
        return sum(1 for tree in self.root.glob("tree-*") if _configured(tree))

    def configures(self) -> int:
        """How many configures the pool's trees ran in this run (the suite's summary: one per tree when the
        targets share one configuration)."""
        with self._lock:
            return sum(tree.configures for tree in self._trees.values())


def _settings_key(settings: VariantSettings) -> str:
    """A configuration of the project (generator, build type, initial cache, includes; the variant trees'
    architecture and launcher), as a short name."""
    return hashlib.sha256(
        json.dumps(
            [
                settings.generator,
                settings.config,
                settings.initial_cache_script(),
                settings.user_includes,
                settings.cuda_arch,
                settings.cuda_launcher,
            ]
        ).encode()
    ).hexdigest()[:10]


def _configured(tree: Path) -> bool:
    return (tree / "CMakeCache.txt").is_file()
