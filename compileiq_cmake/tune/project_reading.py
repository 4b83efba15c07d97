"""Tune setup, reading the project: what setup decides from, read once into typed records. First the project's
own build as the user configured it (OwnBuild: the user's tree's settings, the code model, the target, what the
configure wrote into the source tree, and for a CUDA target the architectures its own compile commands build and
the apply's decisions there); then the first variant tree, configured with what setup decided from that (the
architecture, the compile-step cache), read once (VariantBuild: its code model, CMake cache, apply decisions, the
target's compile commands and source lines). The deciding modules (setup_devices, setup_space, setup_measured)
take these records and read the project no more."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.events import Log, as_stream
from ..model.spec import TuneSpec
from ..project import depscan
from ..project.apply_decisions import ApplyDecisions
from ..project.cmake_project import VariantTree
from ..project.file_api import CodeModel, Target, Toolchain
from ..project.nvcc_command import CudaArchitectures, target_architectures
from ..project.user_tree import read_cache
from ..project.variant_settings import VariantSettings
from .tree_pool import TreePool
from .variant_trees import new_trees, pool_step

Entry = dict[str, Any]  # a compile_commands.json entry


@dataclass(frozen=True)
class OwnBuild:
    """The project's own build as the user configured it, read once (in the first variant tree, or in a suite's
    own-build tree): what decides the language, the toolchain and the architecture."""

    settings: VariantSettings  # read from the user's build tree (cmake, configuration, generator, launcher)
    build_dir: Path  # the user's build tree
    first: VariantTree  # the tune's first variant tree (alone: the own build was configured there)
    model: CodeModel
    target: Target
    written: tuple[Path, ...]  # what the configure wrote into the source tree (trees then configure one at a time)
    architectures: CudaArchitectures | None = None  # CUDA: what the target's own compile commands build
    decisions: ApplyDecisions | None = None  # CUDA: the apply's decisions for the target in the own build

    @property
    def language(self) -> str:
        return self.target.primary_language

    @property
    def toolchain(self) -> Toolchain | None:
        return self.model.toolchains.get(self.language)


@dataclass(frozen=True)
class VariantBuild:
    """The first variant tree configured for the target with the tune's settings (its architecture, launcher),
    read once: the code model it wrote, the target in it, its CMake cache, the apply's decisions (the
    configuration, the flags' hash), the target's compile commands, and its sources with the project headers
    they include (the compiler's dependency scan of those commands), hashed as the apply does at configure."""

    settings: VariantSettings
    tree: VariantTree
    language: str
    model: CodeModel
    target: Target
    cache: dict[str, tuple[str, str]]
    decisions: ApplyDecisions
    commands: list[Entry]  # the target's compile commands in its language (its own flags, the screening)
    all_commands: list[Entry]  # of all its sources (what the trials measure besides the flags)
    headers: depscan.HeaderScan  # the project headers those commands include, and the sources not scanned
    sources_sha256: str  # the sources and those headers, hashed as the apply does (depscan.sources_sha256)


def read_own_build(spec: TuneSpec, log: Log, tree_pool: TreePool | None = None) -> OwnBuild:
    """The project's own build, as the user configured it: in the first variant tree, or in a suite's tree that
    holds it (configured once for the suite); the files its configure wrote into the source tree are said."""
    settings, notes = VariantSettings.from_user_tree(spec.source_dir, spec.build_dir, "", spec.config)
    for note in notes:
        as_stream(log).info(f"{note}")
    if tree_pool is not None:  # the suite's tree as the user configured the project, configured once
        own, model, written = tree_pool.own_build(
            settings, spec.target, spec.source_dir, spec.build_dir, spec.state_dir / "logs"
        )
        _said_writes(spec, written, log)
        (first,) = new_trees(spec, settings, tree_pool, 0, 1)
    else:
        (first,) = new_trees(spec, settings, tree_pool, 0, 1)
        own = first
        model, written = first.prepare_watching(settings, spec.target, "", spec.source_dir, spec.build_dir)
        _said_writes(spec, written, log)
    target = model.target(spec.target)
    if target.primary_language != "CUDA":
        return OwnBuild(settings, spec.build_dir, first, model, target, tuple(written))
    cuda = own.compile_commands(target.sources_in("CUDA"), target.name)
    return OwnBuild(
        settings,
        spec.build_dir,
        first,
        model,
        target,
        tuple(written),
        target_architectures(cuda),
        own.decisions(spec.target),
    )


def read_variant_build(own: OwnBuild, settings: VariantSettings, tree_pool: TreePool | None = None) -> VariantBuild:
    """The first variant tree set to the project's own flags with `settings` and configured (CUDA: now building
    the tuned architecture only), and what setup needs of it, read once."""
    first, name, language = own.first, own.target.name, own.language
    model = pool_step(tree_pool, name, (first,), lambda: first.prepare(settings, name, language))
    target = model.target(name)
    all_commands = first.compile_commands(target.sources, target.name)
    source_dir = settings.source_dir
    scan = depscan.scan_headers(all_commands, source_dir, (own.build_dir,))
    return VariantBuild(
        settings=settings,
        tree=first,
        language=language,
        model=model,
        target=target,
        cache=read_cache(first.path),
        decisions=first.decisions(),
        commands=first.compile_commands(target.sources_in(language), target.name),
        all_commands=all_commands,
        headers=scan,
        sources_sha256=depscan.sources_sha256(first.source_lines(), source_dir, scan.headers),
    )


def _said_writes(spec: TuneSpec, written: list[Path], log: Log) -> None:
    if written:
        shown = ", ".join(str(p.relative_to(spec.source_dir)) for p in written[:3]) + (
            " ..." if len(written) > 3 else ""
        )
        as_stream(log).note(
            f"configuring the project writes into its source tree ({shown}); the variant trees "
            "are configured one at a time"
        )
