"""Variant trees shared by the targets of a suite (issue 24): <build>/compileiq/suite/trees/tree-<k>. A target
in flight borrows the trees its tune needs and gives them back when its tune ends; the next target configures
them again for itself (a reconfigure: CMake's compiler checks are not repeated) and builds only what its flags
change: the rest of the project (its libraries, the other targets) stays built from the target before. Each
tree is lent to one target at a time; what a tree holds is never trusted (every trial builds its own flags),
so a suite killed mid-way resumes with the trees as they are."""

from __future__ import annotations

import threading
from pathlib import Path

from ..project.cmake_project import VariantTree

POOL_FOLDER = "trees"


class TreePool:
    """The suite's variant trees: lent by name, the lowest free name first (a resumed suite finds its trees
    where they were)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lent: dict[str, list[str]] = {}  # owner -> names
        self._lock = threading.Lock()
        self.lent_again = 0  # trees lent to a target already configured by an earlier one (what the pool saved)

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
        return tuple(VariantTree(self.root, name, cmake, config, logs=logs) for name in names)

    def give_back(self, owner: str) -> None:
        """Every tree `owner` holds is free again."""
        with self._lock:
            self._lent.pop(owner, None)

    def configured(self) -> int:
        """How many of the pool's trees were configured (the suite's summary)."""
        return sum(1 for tree in self.root.glob("tree-*") if _configured(tree))


def _configured(tree: Path) -> bool:
    return (tree / "CMakeCache.txt").is_file()
