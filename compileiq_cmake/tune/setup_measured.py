"""Tune setup, deciding what the trials measure, from the project as read (tune.project_reading): the benchmark
command resolved (a target of the project, a file of the build tree, a file or a program on PATH), what a
variant build builds, and the code identity (the sources, the project headers they include, the compile
commands) with the project's own compile flags per source."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from ..execute.build import command_tokens
from ..measure.runs import BenchCommand
from ..model.errors import UsageError
from ..model.events import Log, as_stream
from ..model.spec import TuneSpec
from ..project.cmake_project import VariantTree
from ..project.file_api import CodeModel
from .project_reading import Entry, VariantBuild
from .tune_setup import CodeIdentity


def resolve_benchmark(spec: TuneSpec, model: CodeModel, tree: VariantTree) -> tuple[BenchCommand, str | None]:
    """Map the benchmark's first word: a target of the project, a path in the user's build tree, a file,
    or a program on PATH. Returns the command and the target that builds it (if any)."""
    first, rest = spec.benchmark[0], list(spec.benchmark[1:])
    owner: str | None = None
    if first in model.targets and model.targets[first].artifacts:
        owner = first
        exe = str(model.targets[first].artifacts[0])
        first_mapped = str(spec.build_dir) + exe[len(str(tree.path)) :] if exe.startswith(str(tree.path)) else exe
    else:
        path = Path(first)
        build_prefix = str(spec.build_dir)
        if path.is_absolute() and (first.startswith(build_prefix + "/")):
            relative = first[len(build_prefix) + 1 :]
            found = model.target_owning(tree.path / relative)
            owner = found.name if found else None
            first_mapped = first
        elif "/" not in first:  # a bare name: a program on PATH only, never a file of the working directory
            if not shutil.which(first):
                raise UsageError(
                    f"benchmark command '{first}' not found: it is not a target of the project or a "
                    "program on PATH (a file of the current directory is ./" + first + ")"
                )
            first_mapped = first
        elif path.exists():
            first_mapped = str(path.resolve())
        else:
            raise UsageError(
                f"benchmark command '{first}' not found: it is not a target of the project, a file, "
                "or a program on PATH"
            )
    return BenchCommand(argv=(first_mapped, *rest), verify=spec.verify, user_build_dir=spec.build_dir), owner


def build_targets(spec: TuneSpec, bench: BenchCommand, owner: str | None) -> tuple[str, ...]:
    """What a variant build builds: everything when a check runs or the benchmark is not a file of the build
    tree a target of the project owns; else the target and the benchmark's owner."""
    if spec.verify or (owner is None and not Path(bench.argv[0]).is_absolute()):
        return ("all",)
    if owner is None:
        return ("all",) if str(bench.argv[0]).startswith(str(spec.build_dir)) else (spec.target,)
    return tuple(dict.fromkeys((spec.target, owner)))


def code_identity(variant: VariantBuild, log: Log) -> CodeIdentity:
    """What the trials measure besides the flags: the target's sources and the project headers its compiles
    include (the compiler's dependency scan of the project's own compile commands, read with the variant
    tree; the sources it could not scan are said), those commands, and the project's flags (their hash as the
    apply checks it)."""
    tree, entries, scan = variant.tree, variant.all_commands, variant.headers
    for source, why in scan.problems[:3]:
        as_stream(log).note(
            f"the headers of {source} could not be listed ({why}); a change in them is not "
            "seen as a change of the sources"
        )
    commands = sorted((str(Path(e["file"]).resolve()), sorted(command_tokens(tree, e))) for e in entries)
    return CodeIdentity(
        sources_sha256=variant.sources_sha256,
        headers=scan.headers,
        commands_sha256=hashlib.sha256(json.dumps(commands).encode()).hexdigest(),
        flags_sha256=variant.decisions.flags_sha256,
    )


def own_commands(tree: VariantTree, entries: list[Entry]) -> dict[str, frozenset[str]]:
    """Per source (its compile command among `entries`): the tokens of that command with the project's own
    flags."""
    return {str(Path(entry["file"]).resolve()): command_tokens(tree, entry) for entry in entries}
