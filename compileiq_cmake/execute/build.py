"""A trial's build in a variant tree: what a build needs (BuildContext, a small record the tune's setup gives),
the build itself checked against what would be written (the project's own compile commands plus the trial's
flags), and the fingerprint of the device code it produced."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..flags.fingerprint import DeviceFingerprint, FingerprintCache
from ..flags.space import HOST_PREFIX
from ..model import build_flags
from ..model.events import Log, as_stream
from ..model.records import BuildResult, FlagSet, KernelResources, Trial
from ..model.timebox import Stop
from ..project.cmake_project import VariantTree
from ..project.nvcc_command import flags_files_read, normalize, output_file, tokens
from .device_size import device_code_bytes

_LTO_CODE = re.compile(r"([=,\[])lto_(?=\d)")


class CoreShare:
    """This machine's cores shared by the builds under way of one tune (or suite): a build that starts while no
    other builds gets every core (a tune's baseline, a large target's only build), n at once about cores/n each,
    decided as each starts. A copy sent to another process (a Ray task) cannot see the others' builds: it
    divides the cores by the trees, as every build did before."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = cores or os.cpu_count() or 2
        self._active = 0
        self._lock: threading.Lock | None = threading.Lock()

    def __getstate__(self) -> dict:
        return {"cores": self.cores}

    def __setstate__(self, state: dict) -> None:
        self.cores, self._active, self._lock = state["cores"], 0, None

    @contextmanager
    def claim(self, trees: int) -> Iterator[int]:
        """The jobs of a build that starts now (`trees`: the tune's trees, the share of a copy in another process)."""
        if self._lock is None:
            yield max(1, self.cores // max(1, trees))
            return
        with self._lock:
            self._active += 1
            jobs = max(1, self.cores // self._active)
        try:
            yield jobs
        finally:
            with self._lock:
                self._active -= 1


@dataclass(frozen=True)
class BuildContext:
    """What building a flag set in a variant tree needs, and nothing else of the tune."""

    target: str  # the CMake target tuned
    language: str  # CUDA, CXX or C
    cuda_arch: str  # the architecture the trees build ("" for a host target)
    build_targets: tuple[str, ...]  # what each build builds (the target, the benchmark's owner, or all)
    sources: tuple[Path, ...]  # the target's sources (their compile commands are checked)
    source_dir: Path
    trees: int  # variant trees building at once (they share the machine's cores)
    timeout: float  # the benchmark's timeout; a build gets at least 600 s
    own_commands: dict[str, frozenset[str]] = field(default_factory=dict)  # per source: its own command's tokens
    fingerprints: FingerprintCache | None = None  # CUDA: None when cuobjdump is missing
    objects: tuple[Path, ...] = ()  # CUDA: the target's object files, relative to a variant tree
    artifacts: tuple[Path, ...] = ()  # the tuned target's files, relative to a variant tree
    stop: Stop | None = None  # the tune's stop token (set by make_executor): a build under way is killed by it
    device_link: tuple[str, ...] = ()  # a static/object library: the consumers whose device link gets -dlto
    cores: CoreShare | None = None  # the cores the tune's builds share (None: divided by the trees)


def command_tokens(tree: VariantTree, entry: dict) -> frozenset[str]:
    """The canonical tokens of a compile command, the tree's path written as <tree> (so that every variant
    tree compares alike)."""
    return frozenset(t.replace(str(tree.path), "<tree>") for t in normalize(tokens(entry)))


def command_problem(context: BuildContext, tree: VariantTree, entries: list[dict], flagset: FlagSet) -> str:
    """Why the trial's compile commands (`entries`, the tree's for the target) are not the project's own plus
    the trial's flags ("" when they are): what is measured must be what would be written. Per-file flags
    count for their file only; device LTO shows as one more architecture option, code=lto_XX (the LTO IR the
    device link optimizes, beside the machine code)."""
    wanted_flags = build_flags.split(flagset.flags)
    source_dir = context.source_dir.resolve()
    for entry in entries:
        path = Path(entry["file"]).resolve()
        own = context.own_commands.get(str(path))
        if own is None:  # a source of another language
            continue
        got = command_tokens(tree, entry)
        if wanted_flags.device_lto:
            if not any(_LTO_CODE.search(t) for t in got):
                return f"the compile command of {path.name} does not generate LTO code (code=lto_XX) for device LTO"
            got = frozenset(t for t in got if not _LTO_CODE.search(t))
        rel = path.relative_to(source_dir).as_posix() if path.is_relative_to(source_dir) else ""
        wanted = set(normalize(["cc", *wanted_flags.target, *wanted_flags.of_source(rel)]))
        missing, extra = wanted - got, got - own - wanted
        if missing or extra:
            what = ", ".join([*(f"+{t}" for t in sorted(extra)), *(f"missing {t}" for t in sorted(missing))])
            return (
                f"the compile command of {Path(entry['file']).name} is not the project's own plus the trial's "
                f"flags ({what})"
            )
    return ""


def not_compiled_again(tree: VariantTree, entries: list[dict]) -> str:
    """Why the build does not hold the trial's flags ("" when it does): after a trial flags file of the tree
    changed (its own, a source file's), every compile that reads it must have run again (its object newer
    than the file); one that did not would be measured with the flags of an earlier trial."""
    changed = tree.changed_flags_files
    for entry in entries:
        read = [f for f in flags_files_read(entry) if f in changed and f.is_file()]
        out = output_file(entry) if read else None
        if out is None:
            continue
        # the newest file it reads (a tie: a source's own before the tree's, the more specific name)
        newest = max(read, key=lambda f: (f.stat().st_mtime_ns, f != tree.flags_file))
        path = out if out.is_absolute() else Path(entry.get("directory") or tree.path) / out
        if not path.is_file() or path.stat().st_mtime_ns < newest.stat().st_mtime_ns:
            return (
                f"{Path(entry['file']).name} was not compiled again after the trial's flags changed (its object "
                f"is older than {newest.name}); its build would measure an earlier trial's flags"
            )
    return ""


def build_variant(context: BuildContext, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
    """The flag set built in the tree: a failed build, a build whose compile commands are not what would be
    written, or a good one with its compile command and (CUDA) its device code's fingerprint and kernels."""
    clock = time.perf_counter()
    if tree.restore_cache() and log is not None:
        as_stream(log).warning(
            f"CMakeCache.txt of {tree.path.name} was changed by something else since the last "
            "build (the benchmark?); restored before building the next trial"
        )
    tree.write_flags(context.target, context.language, context.cuda_arch, flagset.flags, context.device_link)
    steps = [("prepare", time.perf_counter() - clock)]
    with (context.cores or CoreShare()).claim(context.trees) as jobs:  # (a fresh share: alone, every core)
        result = tree.build(
            context.build_targets,
            jobs=jobs,
            timeout=max(600.0, context.timeout),
            stop=context.stop,
            progress=as_stream(log).info if log is not None else None,
        )  # long builds: objects done, ETA
    if not result.ok:
        return replace(result, steps=tuple(steps))
    clock = time.perf_counter()
    wanted = build_flags.split(flagset.flags)
    entries = tree.compile_commands(context.sources, context.target)
    problem = not_compiled_again(tree, entries) if tree.flags_file_changed else ""
    problem = problem or (command_problem(context, tree, entries, flagset) if context.own_commands else "")
    steps.append(("check", time.perf_counter() - clock))
    if problem:
        return replace(result, ok=False, log_tail=problem, steps=tuple(steps))
    command = shlex.join(tokens(entries[0])) if entries else ""  # (the trial flags file's flags written out)
    digest = ""
    kernels: tuple[KernelResources, ...] = ()
    clock = time.perf_counter()
    if context.fingerprints is not None:
        code = device_code(context, tree, wanted.device_lto)
        if code.kernels:
            digest = code.digest
            host = sorted(t for t in flagset.flags if t.startswith(HOST_PREFIX))
            # host flags change host code only, and a library's objects hold the same machine code with
            # device LTO (its consumer's device link differs): the same device code is not the same build
            marks = [*host, *([build_flags.DEVICE_LTO] if wanted.device_lto else [])]
            if marks:
                digest = hashlib.sha256("\0".join([digest, *marks]).encode()).hexdigest()
            kernels = tuple(
                KernelResources(k.name, k.registers, k.spill_bytes, k.shared_bytes, k.instructions)
                for k in code.kernels
            )
    steps.append(("fingerprint", time.perf_counter() - clock))
    files = [tree.path / rel for rel in context.artifacts if (tree.path / rel).is_file()]
    size = sum(f.stat().st_size for f in files)
    device = device_code_bytes(files) if context.language == "CUDA" else 0
    return replace(
        result,
        compile_command=command,
        fingerprint=digest,
        kernels=kernels,
        steps=tuple(steps),
        binary_bytes=size,
        device_bytes=device,
    )


def device_code(context: BuildContext, tree: VariantTree, device_lto: bool = False) -> DeviceFingerprint:
    """The fingerprint of the tuned target's device code: its object files (in parallel, unchanged ones from
    the cache); the target's own files (an executable's: its device-linked code) under device LTO, whose
    result the objects' machine code does not show, or when the objects are not known or hold none."""
    assert context.fingerprints is not None
    artifacts = [tree.path / rel for rel in context.artifacts]
    if device_lto and artifacts:
        code = context.fingerprints.combined(artifacts)
        if code.kernels:
            return code
    objects = [tree.path / rel for rel in context.objects if (tree.path / rel).is_file()]
    code = context.fingerprints.combined(objects) if objects else DeviceFingerprint.of([])
    if not code.kernels and artifacts:
        code = context.fingerprints.combined(artifacts)
    return code


def same_code(build: BuildResult, trials: dict[str, Trial]) -> Trial | None:
    """The measured trial whose device code this build reproduces exactly (CUDA targets), if any."""
    if not build.ok or not build.fingerprint:
        return None
    return next((t for t in trials.values() if t.fingerprint == build.fingerprint and t.same_code_as is None), None)
