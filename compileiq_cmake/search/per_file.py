"""Tune stage 3b, per-file flags: after the global search, the translation units that hold most of the GPU
time get flags of their own on top of the best global flag set.

Plan: build the best global flag set (the project's own flags when nothing beat them), run every workload
once with the CUPTI collector (kernel_times), map kernels to files through each object's device code, choose
the files that hold most of the kernel time, and propose for each of them the single changes of the searched
space that the global flag set does not already make, as `[path]flag` tokens (build_flags). The proposals are
measured by the search loop like any trial; validation and ablation then keep a per-file difference only
when it is significant. Every step that cannot run says why in a note and proposes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..flags.acf import ACF_DIMENSION
from ..flags.catalogue import canonical_flags
from ..flags.fingerprint import FingerprintCache
from ..flags.space import FlagSpace
from ..measure import kernel_times
from ..measure.runner import Runner
from ..model import build_flags
from ..model.errors import CompileIQError
from ..model.events import EventStream, Lines, as_stream
from ..model.records import BuildResult, FlagSet, Trial
from ..project.cmake_project import VariantTree
from ..project.nvcc_command import output_file
from .prior import SpacePrior

Build = Callable[[VariantTree, FlagSet], BuildResult]


class Proposals:
    """A fixed list of flag sets behind the search's ask/tell."""

    def __init__(self, flagsets: list[FlagSet]) -> None:
        self._queue = list(flagsets)

    def ask(self) -> FlagSet | None:
        return self._queue.pop(0) if self._queue else None

    def tell(self, flagset: FlagSet, loss: float) -> None:
        pass

    def __len__(self) -> int:
        return len(self._queue)


@dataclass(frozen=True)
class PerFileContext:
    """What the per-file stage needs of the tune: the target (name, language, CUDA sources, source folder), the
    workloads, the searched space and what static screening saw, the CUDA compiler (for the CUPTI collector),
    the state folder, the device-code fingerprints (None without cuobjdump) and whether the tune replays."""

    target: str
    language: str
    source_dir: Path
    cuda_sources: tuple[Path, ...]
    workloads: tuple[tuple[str, ...], ...]
    space: FlagSpace
    nvcc: str
    state_dir: Path
    fingerprints: FingerprintCache | None = None
    screen_kernels: dict[tuple[str, tuple[str, ...]], frozenset[str]] = field(default_factory=dict)
    replay: bool = False
    prior: SpacePrior | None = None  # the learned prior's predictions for `space`: the candidates' order
    focused: bool = False  # the hot-file focus tunes the target's files already (tune.focus)


@dataclass(frozen=True)
class Plan:
    start: Trial
    shares: tuple[kernel_times.FileShare, ...]  # averaged over the workloads
    unmapped: float  # share of kernel time in no file of the target (libraries, other targets)
    files: tuple[kernel_times.FileShare, ...]  # tuned separately
    proposals: tuple[FlagSet, ...]

    def as_dict(self) -> dict:
        return {
            "start": list(self.start.flagset.flags),
            "unmapped_share": round(self.unmapped, 4),
            "files": [
                {"path": s.path, "share": round(s.share, 4), "kernels": list(s.kernels), "tuned": s in self.files}
                for s in self.shares
            ],
            "proposals": len(self.proposals),
        }


def _kernels_by_file(context: PerFileContext, tree: VariantTree) -> dict[str, tuple[str, ...]]:
    """Per CUDA source of the target (path relative to the source dir): the kernels its object defines."""
    assert context.fingerprints is not None
    source_dir = context.source_dir.resolve()
    out: dict[str, tuple[str, ...]] = {}
    for entry in tree.compile_commands(context.cuda_sources, context.target):
        obj = output_file(entry)
        src = Path(entry["file"]).resolve()
        if obj is None or not obj.is_file() or not src.is_relative_to(source_dir):
            continue
        out[src.relative_to(source_dir).as_posix()] = tuple(
            dict.fromkeys(kernel_name(k.name) for k in context.fingerprints.combined([obj]).kernels)
        )
    return out


def measured_shares(
    context: PerFileContext, tree: VariantTree, runner: Runner, collector: Path
) -> tuple[tuple[kernel_times.FileShare, ...], float]:
    """Kernel time by file of what `tree` holds built: one run per workload with the CUPTI collector, the
    kernels mapped to the files whose objects define them, averaged over the workloads (the per-file stage's
    plan and the hot-file focus); CompileIQError says why not (a run failed, no kernel was seen)."""
    kernels_of = _kernels_by_file(context, tree)
    per_workload = []
    for workload in context.workloads:
        _, times = kernel_times.run_with_collector(
            runner, tree, workload, collector, context.state_dir / "cupti" / "kernel-times.tsv"
        )
        if not times:
            raise CompileIQError("the benchmark launched no kernel that the CUPTI collector saw")
        per_workload.append(kernel_times.file_shares(times, kernels_of))
    return _averaged(per_workload)


def kernel_name(fingerprint_name: str) -> str:
    """A fingerprint's kernel name ("sm_90:<mangled>", a repeat with "#2") as the CUDA driver reports it."""
    return fingerprint_name.split(":", 1)[-1].split("#", 1)[0]


def _start(trials: dict[str, Trial], loss_of: Callable[[Trial], float]) -> Trial:
    """The best valid trial without device LTO (under LTO the code of every file is generated together at the
    device link); the baseline when none beat it."""
    valid = [t for t in trials.values() if t.valid and not build_flags.split(t.flagset.flags).device_lto]
    return min(valid, key=lambda t: (loss_of(t), len(t.flagset.flags)))


def _averaged(
    per_workload: list[tuple[tuple[kernel_times.FileShare, ...], float]],
) -> tuple[tuple[kernel_times.FileShare, ...], float]:
    """Shares averaged over the workloads (each workload weighs the same in the tune's loss)."""
    n = len(per_workload)
    total: dict[str, float] = {}
    kernels: dict[str, tuple[str, ...]] = {}
    ns: dict[str, int] = {}
    for shares, _ in per_workload:
        for s in shares:
            total[s.path] = total.get(s.path, 0.0) + s.share / n
            kernels[s.path] = tuple(dict.fromkeys(kernels.get(s.path, ()) + s.kernels))
            ns[s.path] = ns.get(s.path, 0) + s.ns
    out = tuple(sorted((kernel_times.FileShare(p, ns[p], total[p], kernels[p]) for p in total), key=lambda s: -s.share))
    return out, sum(u for _, u in per_workload) / n


def candidates(
    context: PerFileContext, start: FlagSet, files: tuple[kernel_times.FileShare, ...], budget: int
) -> list[FlagSet]:
    """Single changes of the searched space for each file, on top of `start`: every value of a dimension
    other than the one `start` has (not the project's own value: a per-file flag can add, not take away;
    not one the global flags make redundant, not one that static screening saw change none of the file's
    kernels), numerics-relaxing values first (with a prior: in order of its predicted score, confidently
    harmful ones last); the files take turns, largest share first, up to `budget`."""
    screen = {key: frozenset(kernel_name(k) for k in names) for key, names in context.screen_kernels.items()}
    per_file = [_file_candidates(context, start, screen, f) for f in files]
    out: list[FlagSet] = []
    while len(out) < budget and any(per_file):
        for queue in per_file:
            if queue and len(out) < budget:
                out.append(queue.pop(0))
    return out


def _file_candidates(
    context: PerFileContext,
    start: FlagSet,
    screen: dict[tuple[str, tuple[str, ...]], frozenset[str]],
    f: kernel_times.FileShare,
) -> list[FlagSet]:
    """The single changes for one file, in the order `candidates` proposes them."""
    chosen = dict(start.choices)
    prior = context.prior
    mine: list[tuple[tuple, FlagSet]] = []
    for n, d in enumerate(context.space.dimensions):
        if d.build_mode or d.name == ACF_DIMENSION:  # device LTO, a control file: the whole target's, not a file's
            continue
        for i, value in enumerate(d.values[1:], start=1):
            if i == chosen.get(d.name, 0) or any(t in start.flags for t in value):
                continue
            if set(canonical_flags(start.flags + value, context.space.family)) == set(
                canonical_flags(start.flags, context.space.family)
            ):
                continue  # redundant next to the global flags (e.g. --ftz=true under --use_fast_math)
            changed = screen.get((d.name, value))
            if changed is not None and not changed & set(f.kernels):
                continue  # static screening: it changes no kernel of this file
            tokens = tuple(build_flags.source_token(f.path, t) for t in value)
            order = (
                (0 if d.relaxes_numerics else 1,)
                if prior is None
                else (prior.of(n, i).harmful, -prior.of(n, i).score, 0 if d.relaxes_numerics else 1)
            )
            mine.append((order, FlagSet(start.choices, start.flags + tokens)))
    return [fs for _, fs in sorted(mine, key=lambda x: x[0])]


def _not_applicable(context: PerFileContext, runner: Runner) -> str:
    """Why the per-file stage cannot run in this CUDA tune ("" when it can)."""
    if context.replay:
        return "a replay has no kernel times"
    if context.focused:
        return "the hot-file focus tuned the flags of the target's hot files already"
    if type(runner).run is not Runner.run:
        return f"per-kernel times are measured by the local executor only (this tune runs on {type(runner).__name__})"
    if len(context.cuda_sources) < 2:
        return f"{context.target} has one CUDA translation unit (its flags are the global ones)"
    if context.fingerprints is None:
        return "kernels cannot be mapped to files without cuobjdump"
    return ""


def plan(
    context: PerFileContext,
    tree: VariantTree,
    build: Build,
    runner: Runner,
    trials: dict[str, Trial],
    loss_of: Callable[[Trial], float],
    budget: int,
    log: EventStream | Lines,
) -> Plan | None:
    """The per-file proposals, or None (a note says why when the stage could have applied). `log`: the tune's
    event stream (or a function of a line)."""
    log = as_stream(log)

    def skip(why: str) -> Plan | None:
        """No plan, with a note saying why."""
        log.note(f"per-file stage skipped: {why}", stage="per-file", skipped=why)
        return None

    if context.language != "CUDA" or budget <= 0:
        return None
    why = _not_applicable(context, runner)
    if why:
        return skip(why)
    start = _start(trials, loss_of)
    try:
        collector = kernel_times.build_collector(context.nvcc, context.state_dir / "cupti")
    except CompileIQError as exc:
        return skip(str(exc))
    built = build(tree, start.flagset)
    if not built.ok:
        return skip(f"the best global flag set did not build again: {built.log_tail}")
    try:
        shares, unmapped = measured_shares(context, tree, runner, collector)
    except CompileIQError as exc:
        return skip(str(exc))
    if not shares:
        return skip(
            f"no kernel of the run is defined by an object of {context.target} (the kernel time is "
            "in libraries or other targets)"
        )
    shown = ", ".join(f"{s.path} {100 * s.share:.0f}%" for s in shares[:6])
    log.info(
        f"kernel time by file (CUPTI, one run per workload, from {start.flagset.describe()}): {shown}"
        + (f"; {100 * unmapped:.0f}% in kernels of no file of {context.target}" if unmapped >= 0.005 else ""),
        stage="per-file",
        shares={s.path: s.share for s in shares},
        unmapped=unmapped,
    )
    files = kernel_times.choose_files(shares)
    if not files:
        return skip("one file holds (nearly) all the kernel time")
    proposals = tuple(candidates(context, start.flagset, files, budget))
    log.info(
        f"per-file stage: {len(proposals)} flag sets, single changes for "
        f"{', '.join(f.path for f in files)} on top of {start.flagset.describe()}",
        stage="per-file",
        proposals=len(proposals),
        files=[f.path for f in files],
    )
    return Plan(start, shares, unmapped, files, proposals)
