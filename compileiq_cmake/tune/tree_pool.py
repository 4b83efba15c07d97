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
import threading
from pathlib import Path

from ..project.cmake_project import VariantSettings, VariantTree
from ..execute.build import CoreShare
from ..execute.step_cache import StepCache
from ..project.file_api import CodeModel

POOL_FOLDER = "trees"
OWN_TREE = "own"


class TreePool:
    """The suite's variant trees: lent by name, the lowest free name first (a resumed suite finds its trees
    where they were). `targets`: the suite's targets, whose decisions every configure records."""

    def __init__(self, root: Path, targets: tuple[str, ...]) -> None:
        self.root = root
        self.targets = targets
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

    def own_build(self, settings: VariantSettings, target: str, source_dir: Path, build_dir: Path,
                  logs: Path) -> tuple[VariantTree, CodeModel, list[Path]]:
        """The tree configured as the user configured the project (once in this run), its code model, and what
        its first configure wrote into the source tree (then the suite's trees are configured one at a time)."""
        # one own tree per configuration (a suite file may give a target its own --config): each configured
        # once in the run, never again while another target reads it
        key = hashlib.sha256(json.dumps([settings.generator, settings.config, settings.initial_cache_script(),
                                         settings.user_includes]).encode()).hexdigest()[:10]
        with self._own_lock:
            with self._lock:
                tree = self._tree(f"{OWN_TREE}-{key}", settings.cmake, settings.config, logs)
            model, written = tree.prepare_watching(settings, target, "", source_dir, build_dir)
            if self._own_writes is None:
                self._own_writes = written
            return tree, model, self._own_writes

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


def _configured(tree: Path) -> bool:
    return (tree / "CMakeCache.txt").is_file()
