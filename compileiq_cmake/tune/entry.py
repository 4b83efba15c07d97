"""The TOML entry of a tune's winner (tune.publish writes it; the bank's early write too): its flags as written
(--apply-controls files copied beside the TOML, host-specific flags resolved as this host's compiler resolves
them), how it was measured, what the apply checks, and where it was tuned (provenance)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import shlex
import statistics
from pathlib import Path
from typing import Any

from .. import __version__
from ..decide.validation import untested_flags
from ..flags import acf, portability
from ..flags.acf import acf_path
from ..measure.gpu import host_cpu
from ..measure.provenance import Provenance, collect
from ..model import build_flags
from ..model.errors import CompileIQError
from ..model.events import Log, as_stream
from ..model.records import Contribution, Validation
from ..results.schema import FlagsEntry
from . import host_side
from .tune_setup import TuneSetup

ACF_FOLDER = "compileiq/acf"  # beside the TOML: the winners' advanced control files, named by their sha256


def _portable_acf(
    flags: tuple[str, ...],
    toml_dir: Path,
    log: Log | None = None,
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Each --apply-controls file of the winner copied beside the TOML as compileiq/acf/<sha256>.acf (with
    NVIDIA's notice in that folder: such files may be shared in binary form only, with it), the flag naming it
    relative to the TOML's directory; with each file's sha256."""
    out, digests = [], []
    for flag in flags:
        path_text = acf_path(flag)
        if path_text is not None:
            data = Path(path_text).read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            copy = acf.store(data, toml_dir / ACF_FOLDER, "the winner").path
            notice = toml_dir / ACF_FOLDER / "NOTICE"
            if not notice.is_file():
                notice.write_text(acf.NOTICE_TEXT, encoding="utf-8")
            rel = os.path.relpath(copy, toml_dir)
            digests.append((rel, digest))
            if log is not None:
                as_stream(log).info(
                    f"advanced control file {digest[:12]} copied to {rel}: NVIDIA's notice applies to it "
                    f'({ACF_FOLDER}/NOTICE: "{acf.NOTICE}"; binary form only, not under an open-source licence)'
                )
            flag = flag[: -len(path_text)] + rel
        out.append(flag)
    return tuple(out), tuple(digests)


def _acf_ptxas(setup: TuneSetup) -> str:
    """The ptxas version the tune's control files were made for (the tuned compiler's when not recorded)."""
    acf_of = setup.tools.acf if setup.tools is not None else None
    return (acf_of.ptxas if acf_of is not None and acf_of.ptxas else "") or setup.project.toolchain.version


def _resolve_host_specific(
    setup: TuneSetup, flags: tuple[str, ...], log: Log, answers: portability.Answers
) -> portability.Resolution | None:
    """-march=native and the like, as the compiler resolves them on this host, with the CPU and its ISA
    features (None when no flag is host-specific). Kept literal, with a note, when the compiler cannot say."""
    if not any(portability.is_native(f) for f in flags):
        return None
    cpu = host_cpu()
    try:
        if setup.project.language == "CUDA":
            compiler = host_side.host_compiler_path(setup)
            compiler_id = answers.ask(("kind", compiler), lambda: portability.compiler_kind(compiler))
        else:
            compiler, compiler_id = setup.project.toolchain.path, setup.project.toolchain.compiler_id
        resolution = portability.resolve(flags, compiler, compiler_id, cpu, answers)
    except CompileIQError as exc:
        resolution = portability.Resolution(flags, cpu, (), f"kept as they are ({exc})")
    assert resolution is not None  # (a flag is host-specific)
    if resolution.note:
        as_stream(log).note(f"host-specific flags: {resolution.note}")
    return resolution


def _as_written(flags: tuple[str, ...], written: list[str]) -> tuple[str, ...]:
    """Flags of the searched set as the entry writes them: a host-specific one (-march=native) as the compiler
    resolved it (`written`: every part's written flags), on its file when it was a per-file token."""
    out: list[str] = []
    for token in flags:
        path, flag = build_flags.parse_token(token)
        resolved = portability.host_specific(written) if portability.is_native(flag) else [flag]
        out += [build_flags.source_token(path, f) if path else f for f in resolved]
    return tuple(dict.fromkeys(out))


def _entry(
    setup: TuneSetup,
    winner: Validation,
    contributions: tuple[Contribution, ...],
    n_trials: int,
    log: Log,
    untested: tuple[str, ...] = (),
) -> FlagsEntry:
    """The TOML entry of a winner: its flags as written (--apply-controls paths relative to the TOML,
    host-specific flags resolved), how it was measured, and what the apply checks."""
    spec = setup.spec
    parts = build_flags.split(winner.flagset.flags)
    flags, acf_sha256 = _portable_acf(parts.target, spec.output.parent, log)
    portable = dict(zip(parts.target, flags, strict=False))  # a control file's flag as the TOML names it (relative)
    bench = setup.bench if setup.replay is None else None  # how it was measured, for check --remeasure
    resolved, written, sources, features, after = _as_resolved(setup, flags, parts.sources, log)
    return FlagsEntry(
        untested=untested,
        speedup_from=winner.estimate or "deciding rounds",
        untested_flags=tuple(
            portable.get(f, f) for f in _as_written(untested_flags(winner.flagset, contributions), after)
        ),
        target=spec.target,
        language=setup.project.language,
        arch=setup.devices.cuda_arch,
        compiler_id=setup.project.toolchain.compiler_id,
        compiler_version=setup.project.toolchain.version,
        flags=written,
        acf_sha256=acf_sha256,
        acf_ptxas=_acf_ptxas(setup) if acf_sha256 else "",
        build_type=setup.project.build_type,
        device=setup.devices.device,
        compute_capability=setup.devices.compute_capability,
        metric=spec.metric.label,
        lower_is_better=spec.metric.lower_is_better,
        objective=spec.objective,
        workloads=tuple(shlex.join(w.workload) for w in winner.workloads),
        baseline=tuple(round(statistics.median(w.baseline), 9) for w in winner.workloads),
        tuned=tuple(round(statistics.median(w.candidate), 9) for w in winner.workloads),
        speedup=round(winner.geomean_speedup, 4),
        trials=n_trials,
        date=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        tool_version=__version__,
        sources_sha256=setup.code.sources_sha256,
        headers=setup.code.headers,
        flags_sha256=setup.code.flags_sha256,
        replay=setup.replay is not None,
        speedup_ci=(round(winner.geomean_ci_low, 4), round(winner.geomean_ci_high, 4)),
        workload_speedups=tuple(round(w.speedup, 4) for w in winner.workloads),
        workload_ci=tuple((round(w.ci_low, 4), round(w.ci_high, 4)) for w in winner.workloads),
        p_values=tuple(float(f"{w.p_value:.3g}") for w in winner.workloads),
        checks=spec.checks,
        contributions=tuple(
            {
                "flags": [portable.get(f, f) for f in c.flags],
                "speedup": round(c.speedup, 4),
                "ci": [round(c.ci_low, 4), round(c.ci_high, 4)],
                "kept": c.kept,
                "reason": c.reason,
            }
            for c in contributions
            if math.isfinite(c.speedup)
        ),
        device_lto=parts.device_lto,
        device_link=setup.project.device_link if parts.device_lto else (),
        sources=tuple(sources),
        tuned_cpu=resolved.cpu if resolved else "",
        cpu_features=tuple(sorted(features)),
        arch_scope=spec.arch_scope if setup.project.language == "CUDA" else "all",
        benchmark=bench.relative(bench.argv) if bench else (),
        pass_regex=spec.pass_regex or "",
        verify=bench.relative(bench.verify) if bench else (),
        **_provenance(setup).entry_fields(),
    )


def _as_resolved(
    setup: TuneSetup, flags: tuple[str, ...], parts: tuple[tuple[str, tuple[str, ...]], ...], log: Log
) -> tuple[portability.Resolution | None, tuple[str, ...], list[dict[str, Any]], set[str], list[str]]:
    """The host-specific flags of the target and of each file resolved as the compiler resolves them here (said
    once): (a resolution, the target's flags as written, each file's part, the ISA features the build needs,
    every part's flags as written)."""
    answers = portability.Answers()  # the compiler asked once for all parts
    resolved = _resolve_host_specific(setup, flags, log, answers)
    written = resolved.flags if resolved else flags
    sources = []
    features: set[str] = set(resolved.features) if resolved else set()
    before, after = list(flags), list(written)  # every part's flags as searched and as written
    for path, own in parts:
        part = _resolve_host_specific(setup, own, log, answers)
        resolved = resolved or part
        features |= set(part.features) if part else set()
        sources.append({"path": path, "flags": list(part.flags if part else own)})
        before += own
        after += part.flags if part else own
    if resolved is not None:
        shown = " ".join(dict.fromkeys(f for f in before if portability.is_native(f)))
        cpu_flags = portability.host_specific(after)
        extra = len(after) - len(before) + sum(1 for f in before if portability.is_native(f)) - len(cpu_flags)
        cpu_flags = list(dict.fromkeys(cpu_flags))  # shown once, also when several parts had them
        as_stream(log).info(
            f"{shown} recorded as the compiler resolves it on this host ({resolved.cpu}): "
            f"{' '.join(cpu_flags) or '(unresolved)'}{f' and {extra} ISA/cache options' if extra > 0 else ''}, "
            f"with {len(features)} ISA features the build needs; tune --portable leaves such flags out"
        )
    return resolved, written, sources, features, after


def _provenance(setup: TuneSetup) -> Provenance:
    """Where the tune measured (measure.provenance); nothing for a replay."""
    if setup.replay is not None:
        return Provenance()
    cuda = setup.project.language == "CUDA"
    compiler = (setup.tools.host_compiler if setup.tools is not None else "") if cuda else setup.project.toolchain.path
    return collect(compiler, setup.devices.gpus[0] if cuda and setup.devices.gpus else None)
