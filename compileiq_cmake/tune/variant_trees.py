"""Tune setup, the variant trees: a tune's own (<state>/worker-N) or a suite's, borrowed from its pool; the
search's configured at setup, the rest when the finalists need them (OnDemandTrees); in a suite, the seconds of
a tree's first configure in the run are the suite's shared setup (TreePool.first_configures)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..model.spec import TuneSpec
from ..project.cmake_project import VariantTree
from ..project.variant_settings import VariantSettings
from .tree_pool import TreePool
from .tune_setup import FINALISTS, OnDemandTrees

T = TypeVar("T")


def new_trees(
    spec: TuneSpec, settings: VariantSettings, tree_pool: TreePool | None, start: int, n: int
) -> tuple[VariantTree, ...]:
    """`n` variant trees of the tune (worker-<start> on), or a suite's, borrowed from its pool under the state
    folder's name (the caller gives them back)."""
    state_dir = spec.state_dir
    if tree_pool is not None:
        return tree_pool.take(str(state_dir), n, settings.cmake, settings.config, state_dir / "logs")
    return tuple(
        VariantTree(state_dir, f"worker-{i}", settings.cmake, settings.config) for i in range(start, start + n)
    )


def pool_step(tree_pool: TreePool | None, target: str, trees: tuple[VariantTree, ...], step: Callable[[], T]) -> T:
    """A setup step that configures `trees` where needed; in a suite, its seconds are the suite's shared setup
    when it configured one of the pool's trees for the first time in the run (TreePool.first_configures)."""
    return step() if tree_pool is None else tree_pool.first_configures(target, trees, step)


def variant_trees(
    spec: TuneSpec,
    first: VariantTree,
    settings: VariantSettings,
    language: str,
    one_at_a_time: bool,
    tree_pool: TreePool | None,
    gpus: int,
) -> tuple[tuple[VariantTree, ...], OnDemandTrees]:
    """The tune's variant trees, `first` (the own build's) first, and those the search uses configured: one per
    worker + 1 per GPU (the baseline build measured next to trials on a noisy machine); the rest (up to one per
    finalist and the baseline) are configured when the finalists need them (OnDemandTrees). `one_at_a_time`: the
    project's configure writes into its source tree."""
    searched = spec.workers + max(1, gpus)
    n_trees = max(searched + 1, FINALISTS + 1)  # (+1: a bank's validation needs two trees besides the references)
    trees = (first, *new_trees(spec, settings, tree_pool, 1, n_trees - 1))
    later = OnDemandTrees(trees, 1, settings, spec.target, language, one_at_a_time=one_at_a_time)
    pool_step(tree_pool, spec.target, trees[:searched], lambda: later.configure(searched))
    return trees, later
