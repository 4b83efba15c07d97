"""The tuning loop: variant trees, baseline, nevergrad search, confirmation of the best against the
baseline, and the TOML. Every trial is stored as soon as it finishes."""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from . import __version__
from .cmake_project import VariantSettings, VariantTree
from .errors import CompileIQError
from .file_api import CodeModel, Target, Toolchain
from .fingerprint import DeviceFingerprint, FingerprintCache, find_tool
from .flags import FlagSpace, family_for_compiler, load_space
from .nvcc_command import normalize, output_file, target_architectures, tokens
from .screening import prepare_cuda_space
from .gpu import GpuMonitor, detect_gpu, host_cpu
from .landscape import Landscape
from .measure import BenchCommand, Runner
from .replay import ReplayRunner
from .records import BuildResult, Contribution, FlagSet, KernelResources, Status, Trial, TuneResult, Validation
from .bench import kill_leftovers
from .result_file import FlagsEntry, check_output_writable, numerics_checked, read_entries, write_entry
from .search import INVALID_LOSS, FlagSearch
from .spec import TuneSpec, compute_capability
from .stats import auto_min_gain, coarse_metric_warning, flag_effects, relative_spread
from .validation import ablate, validate

Log = Callable[[str], None]
FINALISTS = 3  # candidates validated against the baseline at the end
PAIRED_NOISE = 0.01  # above this spread of the baseline's runs, trials are measured next to baseline runs


def _print(line: str) -> None:
    print(line, flush=True)


@dataclass(frozen=True)
class TuneSetup:
    spec: TuneSpec
    state_dir: Path
    trees: tuple[VariantTree, ...]
    target: Target
    language: str
    toolchain: Toolchain
    space: FlagSpace
    cuda_arch: str
    device: str
    compute_capability: str
    build_targets: tuple[str, ...]
    bench: BenchCommand
    monitor: GpuMonitor | None
    artifacts: tuple[Path, ...] = ()  # the tuned target's files, relative to a variant tree
    replay: ReplayRunner | None = None  # answers builds and runs from a recorded landscape
    build_type: str = ""  # the configuration tuned (recorded in the TOML; empty for a replay)
    sources_sha256: str = ""  # the target's sources as compileiq_variant.cmake hashes them (the apply checks it)
    objects: tuple[Path, ...] = ()  # CUDA: the target's object files, relative to a variant tree
    own_commands: dict[str, frozenset[str]] = field(default_factory=dict)  # see _own_commands
    fingerprints: FingerprintCache | None = None  # CUDA: None when cuobjdump is missing (a note said so)
    warned: set[str] = field(default_factory=set)  # benchmark warnings already printed (each once per tune)


def _resolve_benchmark(spec: TuneSpec, model: CodeModel, tree: VariantTree) -> tuple[BenchCommand, str | None]:
    """Map the benchmark's first word: a target of the project, a path in the user's build tree, a file,
    or a program on PATH. Returns the command and the target that builds it (if any)."""
    first, rest = spec.benchmark[0], list(spec.benchmark[1:])
    owner: str | None = None
    if first in model.targets and model.targets[first].artifacts:
        owner = first
        exe = str(model.targets[first].artifacts[0])
        first_mapped = str(spec.build_dir) + exe[len(str(tree.path)):] if exe.startswith(str(tree.path)) else exe
    else:
        path = Path(first)
        build_prefix = str(spec.build_dir)
        if path.is_absolute() and (first.startswith(build_prefix + "/")):
            relative = first[len(build_prefix) + 1:]
            found = model.target_owning(tree.path / relative)
            owner = found.name if found else None
            first_mapped = first
        elif path.exists():
            first_mapped = str(path.resolve())
        elif "/" not in first and shutil.which(first):
            first_mapped = first
        else:
            raise CompileIQError(
                f"benchmark command '{first}' not found: it is not a target of the project, a file, "
                "or a program on PATH"
            )
    return BenchCommand(argv=(first_mapped, *rest), verify=spec.verify, user_build_dir=spec.build_dir), owner


def _cuda_architecture(spec: TuneSpec, tree: VariantTree, target: Target, log: Log) -> tuple[str, str, str]:
    """(arch, device, compute capability) to tune for: --cuda-arch, else the GPU's. Says which architectures
    the project's own build of the target really targets (its compile commands: CUDA_ARCHITECTURES or
    -arch/-gencode written by hand) and warns when this GPU's is not among them."""
    own = target_architectures(tree.compile_commands(target.sources_in("CUDA")))
    if spec.cuda_arch:
        arch = spec.cuda_arch
        device, capability = f"(architecture {arch} given on the command line)", compute_capability(arch)
    else:
        gpu = detect_gpu()
        arch = gpu.arch
        device, capability = f"{gpu.name} ({gpu.sm_count} SMs)", "%d.%d" % gpu.compute_capability
    origin = " ".join(own.options) if own.options else "no architecture option"
    log(f"compileiq: the project's own build of {spec.target} targets {own.describe()} ({origin}); "
        f"tuning for sm_{arch}")
    if not own.builds(arch):
        log(f"compileiq: note: the project's own build does not target sm_{arch}; the variant trees build sm_{arch}, "
            f"and a release build gets the tuned flags only where it targets sm_{arch}")
    return arch, device, capability


def _check_arch_option(spec: TuneSpec, language: str) -> None:
    if spec.cuda_arch and language != "CUDA":
        raise CompileIQError(f"--cuda-arch {spec.cuda_arch} was given but target '{spec.target}' is a {language} "
                             "target (no CUDA sources); leave --cuda-arch out")


def _cuda_in_dependencies(model: CodeModel, target: Target) -> list[str]:
    return [d for d in target.dependencies if d in model.targets and model.targets[d].sources_in("CUDA")]


def _snapshot(source_dir: Path, build_dir: Path) -> dict[Path, tuple[int, int]]:
    """(mtime, size) of the files of the source tree (version-control folders and build trees inside it left
    out), to see whether a configure writes into it."""
    out: dict[Path, tuple[int, int]] = {}
    skip = {build_dir.resolve()}
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = [d for d in dirs if d not in (".git", ".hg", ".svn") and (Path(root) / d).resolve() not in skip
                   and not (Path(root) / d / "CMakeCache.txt").exists()]
        for name in files:
            path = Path(root) / name
            try:
                st = path.stat()
            except OSError:
                continue
            out[path] = (st.st_mtime_ns, st.st_size)
    return out


def _changed(before: dict[Path, tuple[int, int]], after: dict[Path, tuple[int, int]]) -> list[Path]:
    return sorted(p for p, stamp in after.items() if before.get(p) != stamp)


def setup(spec: TuneSpec, log: Log) -> TuneSetup:
    state_dir = spec.build_dir / "compileiq"
    settings, notes = VariantSettings.from_user_tree(spec.source_dir, spec.build_dir, "", spec.config)
    for note in notes:
        log(f"compileiq: {note}")
    first = VariantTree(state_dir, "worker-0", settings.cmake, settings.config)
    first.write_flags(spec.target, "", "", ())
    before = _snapshot(spec.source_dir, spec.build_dir)
    model = first.configure(settings, spec.target, "")  # the project's own build, as the user configured it
    written = _changed(before, _snapshot(spec.source_dir, spec.build_dir))
    if written:
        shown = ", ".join(str(p.relative_to(spec.source_dir)) for p in written[:3]) + (" ..." if len(written) > 3 else "")
        log(f"compileiq: note: configuring the project writes into its source tree ({shown}); the variant trees "
            "are configured one at a time")
    target = model.target(spec.target)
    language = target.primary_language
    if language not in ("CUDA", "CXX", "C"):
        raise CompileIQError(f"target '{spec.target}' compiles no C, C++ or CUDA sources; nothing to tune")
    _check_arch_option(spec, language)
    if language != "CUDA" and (with_cuda := _cuda_in_dependencies(model, target)):
        log(f"compileiq: note: {spec.target} has no CUDA sources of its own; its CUDA code is in {', '.join(with_cuda)}: "
            f"tune {'that target' if len(with_cuda) == 1 else 'those targets'} (--target) for nvcc flags")
    toolchain = model.toolchains.get(language)
    if toolchain is None:
        raise CompileIQError(f"CMake reported no {language} compiler for this project (CMake >= 3.20 is needed)")
    family = family_for_compiler(language, toolchain.compiler_id)
    device, capability, arch = host_cpu(), "", ""
    if language == "CUDA":
        arch, device, capability = _cuda_architecture(spec, first, target, log)
    settings = replace(settings, cuda_arch=arch)
    first.write_flags(spec.target, language, arch, ())
    model = first.configure(settings, spec.target, language)  # CUDA: now building this architecture only
    target = model.target(spec.target)
    exclude = spec.exclude_flags
    if not spec.checks_outputs and "unsafe_numerics" not in exclude:
        exclude = (*exclude, "unsafe_numerics")
        log("compileiq: nothing checks the benchmark's results (no PASS_REGEX, VERIFY or output comparison): "
            "flags that change numerics (fast-math family) are not searched")
    space = load_space(family, toolchain.compiler_id, toolchain.version, spec.include_flags, exclude, arch=arch)
    fingerprints = None
    objects: tuple[Path, ...] = ()
    if language == "CUDA":
        entries = first.compile_commands(target.sources_in("CUDA"))
        prepared = prepare_cuda_space(space, entries, toolchain.path, arch, spec.build_dir, spec.target,
                                      spec.acf_files, spec.screen)
        for note in prepared.notes:
            log(f"compileiq: {note}")
        if prepared.screen is not None:
            r = prepared.screen
            kept = sum(1 for row in r.rows if row.kept)
            log(f"compileiq: screening: {kept} of {len(r.rows)} flag values change the device code of {spec.target}; "
                f"space {r.points_before} -> {r.points_after} points ({r.compiles} compiles, {r.seconds:.1f} s)")
        space = prepared.space
        if find_tool("cuobjdump", toolchain.path) is None or find_tool("nvdisasm", toolchain.path) is None:
            log("compileiq: note: device-code fingerprints are off: cuobjdump/nvdisasm not found (pip install "
                "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm); trials that build the same code are all benchmarked")
        else:
            fingerprints = FingerprintCache(toolchain.path)
            objects = tuple(o.relative_to(first.path) for o in (output_file(e) for e in entries)
                            if o is not None and o.resolve().is_relative_to(first.path.resolve()))
    if not space.dimensions:
        why = "; ".join(space.dropped[-3:]) or "the include/exclude options leave none"
        raise CompileIQError(f"nothing to tune for {spec.target}: no flag dimension is left to search ({why}); "
                             "change --include-flags/--exclude-flags")
    n_trees = max(spec.workers + 1, FINALISTS + 1)  # + 1: the baseline build next to trials on a noisy machine
    trees = (first, *(VariantTree(state_dir, f"worker-{i}", settings.cmake, settings.config) for i in range(1, n_trees)))
    for tree in trees[1:]:
        tree.write_flags(spec.target, language, arch, ())
    with ThreadPoolExecutor(max_workers=1 if written else len(trees) - 1) as pool:
        models = [model, *pool.map(lambda t: t.configure(settings, spec.target, language), trees[1:])]
    bench, owner = _resolve_benchmark(spec, models[0], trees[0])
    if spec.verify or (owner is None and not Path(bench.argv[0]).is_absolute()):
        build_targets: tuple[str, ...] = ("all",)
    elif owner is None:
        build_targets = ("all",) if str(bench.argv[0]).startswith(str(spec.build_dir)) else (spec.target,)
    else:
        build_targets = tuple(dict.fromkeys((spec.target, owner)))
    return TuneSetup(
        spec=spec, state_dir=state_dir, trees=trees, target=target, language=language, toolchain=toolchain,
        space=space, cuda_arch=arch, device=device, compute_capability=capability,
        build_targets=build_targets, bench=bench, monitor=GpuMonitor() if language == "CUDA" else None,
        artifacts=tuple(a.relative_to(trees[0].path) for a in models[0].target(spec.target).artifacts
                        if a.is_relative_to(trees[0].path)),
        build_type=settings.build_type, sources_sha256=first.info().get("sources_sha256", ""),
        objects=objects, fingerprints=fingerprints, own_commands=_own_commands(first, target, language),
    )


def replay_setup(spec: TuneSpec, log: Log) -> TuneSetup:
    """A tune whose builds and benchmark runs are answered from a recorded landscape (no CMake, no GPU)."""
    landscape = Landscape.load(spec.replay)
    meta = landscape.meta
    gpu = (meta.get("gpu") or {}).get("name") or "no GPU"
    arch = str((meta.get("gpu") or {}).get("arch") or meta.get("arch") or "90").removeprefix("sm_")
    log(f"compileiq: REPLAY of {landscape.describe()}; nothing is built or run")
    state_dir = spec.build_dir / "compileiq"
    trees = tuple(VariantTree(state_dir, f"replay-{i}", "cmake") for i in range(max(spec.workers + 1, FINALISTS + 1)))
    runner = ReplayRunner(spec, BenchCommand((), (), spec.build_dir), None, landscape=landscape, seed=spec.seed)
    version = str(meta.get("nvcc_version") or meta.get("compiler_version") or "0")
    return TuneSetup(
        spec=spec, state_dir=state_dir, trees=trees,
        target=Target(spec.target, "REPLAY", ("CUDA",), (), (), ()), language="CUDA",
        toolchain=Toolchain("CUDA", "NVIDIA", version, ""), space=landscape.space(), cuda_arch=arch,
        device=f"{gpu} (REPLAY of {Path(spec.replay).name})", compute_capability=compute_capability(arch),
        build_targets=(), bench=runner.bench, monitor=None, replay=runner,
    )


def _own_commands(tree: VariantTree, target: Target, language: str) -> dict[str, frozenset[str]]:
    """Per source of the target's language: the tokens of its compile command with the project's own flags
    (the tree's path written as <tree>, so that every variant tree compares alike)."""
    out = {}
    for entry in tree.compile_commands(target.sources_in(language)):
        out[str(Path(entry["file"]).resolve())] = frozenset(
            t.replace(str(tree.path), "<tree>") for t in normalize(tokens(entry)))
    return out


def _command_problem(setup: TuneSetup, tree: VariantTree, flagset: FlagSet) -> str:
    """Why the trial's compile commands are not the project's own plus the trial's flags ("" when they are):
    what is measured must be what would be written."""
    for entry in tree.compile_commands(setup.target.sources_in(setup.language)):
        own = setup.own_commands.get(str(Path(entry["file"]).resolve()))
        if own is None:
            continue
        got = {t.replace(str(tree.path), "<tree>") for t in normalize(tokens(entry))}
        wanted = set(normalize(["cc", *flagset.flags]))
        missing, extra = wanted - got, got - own - wanted
        if missing or extra:
            what = ", ".join([*(f"+{t}" for t in sorted(extra)), *(f"missing {t}" for t in sorted(missing))])
            return f"the compile command of {Path(entry['file']).name} is not the project's own plus the trial's flags ({what})"
    return ""


def _build(setup: TuneSetup, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
    if setup.replay is not None:
        return setup.replay.build(tree, flagset)
    if tree.restore_cache() and log is not None:
        log(f"compileiq: warning: CMakeCache.txt of {tree.path.name} was changed by something else since the last "
            "build (the benchmark?); restored before building the next trial")
    tree.write_flags(setup.spec.target, setup.language, setup.cuda_arch, flagset.flags)
    jobs = max(1, (os.cpu_count() or 2) // len(setup.trees) or 1)
    result = tree.build(setup.build_targets, jobs=jobs, timeout=max(600.0, setup.spec.timeout))
    if not result.ok:
        return result
    problem = _command_problem(setup, tree, flagset) if setup.own_commands else ""
    if problem:
        return replace(result, ok=False, log_tail=problem)
    entries = tree.compile_commands(setup.target.sources)
    command = entries[0].get("command", " ".join(entries[0].get("arguments", []))) if entries else ""
    digest, kernels = "", ()
    if setup.fingerprints is not None:
        code = _device_code(setup, tree)
        if code.kernels:
            digest = code.digest
            kernels = tuple(KernelResources(k.name, k.registers, k.spill_bytes, k.shared_bytes, k.instructions)
                            for k in code.kernels)
    return replace(result, compile_command=command, fingerprint=digest, kernels=kernels)


def _device_code(setup: TuneSetup, tree: VariantTree) -> DeviceFingerprint:
    """The fingerprint of the tuned target's device code: its object files (in parallel, unchanged ones from
    the cache); the target's own files when the objects hold no SASS (-dlto) or are not known."""
    assert setup.fingerprints is not None
    objects = [tree.path / rel for rel in setup.objects if (tree.path / rel).is_file()]
    code = setup.fingerprints.combined(objects) if objects else DeviceFingerprint.of([])
    if not code.kernels and setup.artifacts:
        code = setup.fingerprints.combined([tree.path / rel for rel in setup.artifacts])
    return code


def _trial(runner: Runner, setup: TuneSetup, tree: VariantTree, index: int, flagset: FlagSet,
           build: BuildResult, reference: VariantTree | None = None, log: Log | None = None) -> Trial:
    start = time.perf_counter()
    if not build.ok:
        return Trial(index, flagset, Status.BUILD_FAILED, f"build failed: {build.log_tail}",
                     build_seconds=build.seconds, wall_seconds=build.seconds)
    m = runner.measure(tree, setup.spec.repeats, setup.spec.warmup, reference)
    for warning in getattr(m, "warnings", ()):
        if warning not in setup.warned and log is not None:
            setup.warned.add(warning)
            log(f"compileiq: warning: {warning}")
    wall = build.seconds + (time.perf_counter() - start)
    return Trial(index, flagset, m.status, m.reason, m.measurements, build.seconds, m.seconds, wall, build.compile_command,
                 build.fingerprint, kernels=build.kernels)


def loss(trial: Trial, baseline: Trial, lower_is_better: bool) -> float:
    """Mean log ratio against the baseline over the workloads (negative = better): per workload the median
    of the per-pair ratios when the trial was measured next to the baseline build, else the ratio of the
    medians."""
    if not trial.valid:
        return INVALID_LOSS
    ratios = [statistics.median(m.ratios()) if m.paired else m.median / b
              for m, b in zip(trial.measurements, baseline.medians()) if b > 0]
    logs = [math.log(r) for r in ratios if r > 0]
    if len(logs) != len(baseline.medians()):
        return INVALID_LOSS
    mean = sum(logs) / len(logs)
    return mean if lower_is_better else -mean


def _baseline_error(trial: Trial, setup: TuneSetup) -> CompileIQError:
    spec = setup.spec
    if trial.status is Status.BUILD_FAILED:
        return CompileIQError(f"the project's own build of '{spec.target}' fails in the variant tree: {trial.reason}")
    if trial.status is Status.METRIC_MISSING and spec.metric.kind == "regex":
        return CompileIQError(
            f"--metric regex {spec.metric.pattern!r} never matched the benchmark's output with the project's own flags; "
            f"{trial.reason.split('; ', 1)[-1]}"
        )
    if trial.status is Status.RUN_FAILED and ("exit code 127" in trial.reason or "cannot start" in trial.reason):
        return CompileIQError(f"benchmark '{spec.benchmark[0]}' could not be started after the build: {trial.reason}")
    return CompileIQError(f"the benchmark does not pass with the project's own flags: {trial.reason}")


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def run_tune(spec: TuneSpec, log: Log = _print) -> TuneResult:
    from .store import TuneLock

    spec = spec.validate()
    check_output_writable(spec.output)  # a result must not be lost at the end for want of a place to write it
    started = time.perf_counter()
    state_dir = spec.build_dir / "compileiq"
    fresh_state = not state_dir.exists()
    stored_any = False
    try:
        with TuneLock(state_dir):
            killed = kill_leftovers(state_dir / "bench.pid")
            if killed:
                log(f"compileiq: killed {killed} benchmark process(es) left running by an earlier, killed tune")
            tune_setup = replay_setup(spec, log) if spec.replay else setup(spec, log)
            _check_replacement(tune_setup)
            store = _open_store(state_dir / "trials.sqlite", spec.identity() + "-" + tune_setup.cuda_arch,
                                f"{tune_setup.toolchain.compiler_id} {tune_setup.toolchain.version} "
                                f"sources {tune_setup.sources_sha256}", log)
            try:
                result = _search(tune_setup, store, log, started)
                stored_any = True
                return result
            finally:
                stored_any = stored_any or bool(store.load())
                store.close()
    except CompileIQError as exc:
        if fresh_state and not stored_any:  # nothing earned: no half-made state, but a log the error names stays
            for child in state_dir.iterdir() if state_dir.is_dir() else ():
                if child.name != "logs" or str(child) not in str(exc):
                    shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
            if state_dir.is_dir() and not any(state_dir.iterdir()):
                state_dir.rmdir()
        raise


def _check_replacement(setup: TuneSetup) -> None:
    """Refuse before any GPU time, not after: an entry of this target whose numerics were checked by output
    comparison is not replaced by a tune that compares nothing (unless --replace)."""
    spec = setup.spec
    if spec.replace or {"compare_output", "compare_file"} & set(spec.checks) or not spec.output.is_file():
        return
    key = (spec.target, setup.language, setup.cuda_arch or setup.toolchain.compiler_id)
    old = next((e for e in read_entries(spec.output) if e.key == key), None)
    if old is not None and numerics_checked(old):
        raise CompileIQError(
            f"{spec.output} holds an entry for {spec.target} ({' '.join(old.flags) or 'no flags'}, {old.speedup}x) "
            f"whose numerics were checked ({', '.join(old.checks)}); this tune compares no output: give "
            "--compare-output/--compare-file as well, or --replace to replace it anyway")


def _open_store(path: Path, identity: str, code: str, log: Log):
    """The trial store of this tune. When its trials were measured on other sources or with another compiler,
    they are stale: the store is moved aside (kept, named in the log) and a fresh one starts."""
    from .store import TrialStore

    store = TrialStore(path, identity)
    if store.note:
        log(f"compileiq: {store.note}")
    stored = store.load_result("code")
    if store.load() and stored is not None and stored != code:
        store.close()
        stamp = f"{path.name}.stale-{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%SZ}"
        aside = next(p for i in range(1000) if not (p := path.with_name(stamp + (f"-{i}" if i else ""))).exists())
        os.replace(path, aside)
        was, now = str(stored).split(" sources ")[0], code.split(" sources ")[0]
        what = f"the compiler changed ({was} -> {now})" if was != now else "the target's sources changed"
        log(f"compileiq: {what} since the stored trials were measured; they are not reused: the old trial store "
            f"is kept as {aside} and a fresh one starts")
        store = TrialStore(path, identity)
    store.save_result("code", code)
    return store


def _check_comparison(spec: TuneSpec, baseline: Trial) -> None:
    """An output comparison that compares nothing is no check: the baseline's output must match
    --compare-output and yield numbers (--compare-file: the baseline must write it, with numbers)."""
    if not (spec.compare_output or spec.compare_file):
        return
    empty = [" ".join(m.workload) or "(default)" for m in baseline.measurements if not m.numbers]
    if empty:
        what = (f"--compare-output {spec.compare_output!r} matched no line with numbers in" if spec.compare_output
                else f"--compare-file {spec.compare_file} holds no numbers after")
        raise CompileIQError(f"{what} the output of the project's own build (workload {empty[0]}); nothing would be "
                             "compared: fix the regex or the file name")


def _search(setup: TuneSetup, store, log: Log, started: float) -> TuneResult:
    spec = setup.spec
    lower = spec.metric.lower_is_better
    log(
        f"compileiq: tuning {spec.target} ({setup.language}, {setup.toolchain.compiler_id} {setup.toolchain.version}"
        f"{', sm_' + setup.cuda_arch if setup.cuda_arch else ''}) on {setup.device}; "
        f"flag space {len(setup.space.dimensions)} dimensions, {setup.space.size} points; budget {spec.budget}"
    )
    runner = setup.replay or Runner(spec, setup.bench, setup.monitor, pid_file=setup.state_dir / "bench.pid")
    restored = {t.flagset.key: t for t in store.load()}
    if restored:
        log(f"compileiq: resuming: {len(restored)} finished trials restored from {store.path}")
    baseline_set = setup.space.baseline()
    baseline = restored.get(baseline_set.key)
    if baseline is None:
        baseline = _trial(runner, setup, setup.trees[0], 0, baseline_set, _build(setup, setup.trees[0], baseline_set),
                          log=log)
        if not baseline.valid:
            raise _baseline_error(baseline, setup)
        store.save(baseline)
    elif not baseline.valid:
        raise _baseline_error(baseline, setup)
    _check_comparison(spec, baseline)
    runner.reference.update({m.workload: m.numbers for m in baseline.measurements})
    noise = max(relative_spread(m.samples) for m in baseline.measurements)
    min_gain = spec.min_gain if spec.min_gain is not None else auto_min_gain(noise)
    log(f"compileiq: baseline noise (robust spread of {spec.repeats} runs per workload): {100 * noise:.2f}%; "
        f"smallest gain that counts: {100 * min_gain:.2f}%{'' if spec.min_gain is not None else ' (from the noise)'}")
    first = baseline.measurements[0]
    printed = []
    if len(set(first.samples)) == 1 and spec.metric.kind == "regex" and not restored:  # how were they printed?
        printed = [runner.run(setup.trees[0], first.workload).printed]
    coarse = coarse_metric_warning(list(first.samples), [p for p in printed if p], min_gain)
    if coarse:
        log(f"compileiq: warning: {coarse}")
    reference = _reference_tree(setup, baseline_set, noise, log)
    trials: dict[str, Trial] = {baseline.flagset.key: baseline, **restored}
    search = FlagSearch(setup.space, spec.budget, spec.seed, spec.workers, warm_start=_warm_start(setup, log))
    for trial in trials.values():
        search.tell(trial.flagset, loss(trial, baseline, lower))
    _progress(setup, log, baseline, baseline, trials, started)

    overhead = 0.0
    loop_trials = 0
    while len(trials) < spec.budget:
        if spec.time_limit is not None and time.perf_counter() - started > spec.time_limit:
            log(f"compileiq: time limit of {spec.time_limit:.0f} s reached")
            break
        batch: list[FlagSet] = []
        for _ in range(min(spec.workers, spec.budget - len(trials))):
            flagset = search.ask()
            if flagset is not None:
                batch.append(flagset)
        if not batch:
            log("compileiq: every point of the flag space has been tried")
            break
        batch_start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            builds = list(pool.map(lambda pair: _build(setup, *pair, log), zip(setup.trees, batch)))
        subprocess_seconds = max(b.seconds for b in builds)
        for tree, flagset, build in zip(setup.trees, batch, builds):
            twin = _same_code(build, trials)
            if twin is not None:
                trial = replace(twin, index=len(trials), flagset=flagset, build_seconds=build.seconds, bench_seconds=0.0,
                                wall_seconds=build.seconds, compile_command=build.compile_command,
                                same_code_as=twin.index, reason=twin.reason or f"same device code as #{twin.index}",
                                kernels=build.kernels)
            else:
                trial = _trial(runner, setup, tree, len(trials), flagset, build, reference, log)
                floor = noise
                if reference is not None:  # once 3 paired trials show it, the noise pairing leaves
                    paired, n = _paired_noise(trials.values())
                    floor = paired if n >= 3 else noise
                trial = _measure_more_if_promising(runner, setup, tree, trial, baseline, trials, floor, reference)
            subprocess_seconds += trial.bench_seconds
            store.save(trial)
            trials[flagset.key] = trial
            search.tell(flagset, loss(trial, baseline, lower))
            _progress(setup, log, trial, baseline, trials, started)
        overhead += (time.perf_counter() - batch_start) - subprocess_seconds
        loop_trials += len(batch)

    search_seconds = time.perf_counter() - started
    runs = sum(len(m.samples) + len(m.reference) + spec.warmup
               for t in trials.values() if t.same_code_as is None for m in t.measurements)
    saved = sum((spec.repeats + spec.warmup) * len(spec.workloads) for t in trials.values() if t.same_code_as is not None)
    effects = flag_effects([(t.flagset.flags, loss(t, baseline, lower)) for t in trials.values() if t.valid])
    store.save_result("flag_effects", [
        {"flag": e.flag, "speedup": e.speedup, "ci": [e.ci.low, e.ci.high], "trials_with": e.trials_with} for e in effects
    ])
    ranked = sorted((t for t in trials.values() if t.valid and not t.flagset.is_baseline),
                    key=lambda t: (loss(t, baseline, lower), len(t.flagset.flags)))
    finalists: list[FlagSet] = []
    codes = {baseline.fingerprint} - {""}
    for t in ranked:  # one flag set per device code (the one with the fewest flags), none with the baseline's code
        if loss(t, baseline, lower) >= 0 or len(finalists) == FINALISTS:
            break
        if t.fingerprint and t.fingerprint in codes:
            continue
        codes.add(t.fingerprint)
        finalists.append(t.flagset)
    if reference is not None and spec.min_gain is None:
        paired_noise, n = _paired_noise(trials.values())
        if n:
            min_gain = auto_min_gain(paired_noise)
            log(f"compileiq: noise of paired runs (median over {n} trials): {100 * paired_noise:.2f}%; "
                f"smallest gain that counts: {100 * min_gain:.2f}%")
    winner, contributions = _validate_and_ablate(setup, runner, finalists, min_gain, log, store)
    toml_path = None
    if winner is not None:
        new = _entry(setup, winner, contributions, len(trials))
        change = write_entry(spec.output, new, fallback_dir=setup.state_dir, replace=spec.replace)
        if change is not None and change.replaces is not None:
            log(f"compileiq: {change.message}")
        toml_path = str(spec.output)
    wall = time.perf_counter() - started
    notes = []
    shared = sum(1 for t in trials.values() if t.same_code_as is not None)
    notes.append(f"search phase: {len(trials)} trials in {search_seconds:.1f} s, {runs} benchmark runs"
                 + (f"; {shared} trials built the same device code as an earlier one and were not benchmarked "
                    f"(about {saved} runs saved)" if shared else ""))
    throttled = sum(1 for t in trials.values() for m in t.measurements if m.throttled)
    if throttled:
        notes.append(f"warning: {throttled} measurements were taken while the GPU reported a slowdown "
                     "(thermal or power); see 'compileiq-cmake trials'")
    if loop_trials and setup.replay is None:
        per_trial = sum(t.wall_seconds for t in trials.values()) / len(trials)
        notes.append(f"driver overhead {1000 * overhead / loop_trials:.0f} ms per trial "
                     f"({100 * overhead / loop_trials / per_trial:.1f}% of a trial)")
    result = TuneResult(spec.target, tuple(trials.values()), baseline, winner, toml_path, wall, tuple(notes),
                        contributions)
    _final_table(setup, result, effects, log)
    return result


def _warm_start(setup: TuneSetup, log: Log) -> tuple[FlagSet, ...]:
    """Flag sets of earlier tunes (compileiq.toml files) that fit this space, tried first by the search."""
    seeds: list[FlagSet] = []
    for path in setup.spec.warm_start:
        for entry in read_entries(Path(path)):
            if entry.language != setup.language:
                continue
            known = [f for f in entry.flags if any(f in v for d in setup.space.dimensions for v in d.values)]
            try:
                seeds.append(setup.space.flagset_from_flags(known))
            except CompileIQError:
                continue
            if len(known) < len(entry.flags):
                log(f"compileiq: warm start from {entry.target}: {len(entry.flags) - len(known)} flag(s) outside this space ignored")
    if seeds:
        log(f"compileiq: warm start: {len(seeds)} flag set(s) from earlier tunes are tried first")
    return tuple(dict.fromkeys(seeds))


def _same_code(build: BuildResult, trials: dict[str, Trial]) -> Trial | None:
    """The measured trial whose device code this build reproduces exactly (CUDA targets), if any."""
    if not build.ok or not build.fingerprint:
        return None
    return next((t for t in trials.values() if t.fingerprint == build.fingerprint and t.same_code_as is None), None)


def _reference_tree(setup: TuneSetup, baseline: FlagSet, noise: float, log: Log) -> VariantTree | None:
    """On a noisy machine (the baseline's runs spread more than PAIRED_NOISE), a tree holding the project's
    own build whose runs are taken next to every trial's, so that drift and bursts of load hit both."""
    spec = setup.spec
    if noise <= PAIRED_NOISE or spec.budget <= 1:
        return None
    tree = setup.trees[spec.workers]
    build = _build(setup, tree, baseline)
    if not build.ok:
        log(f"compileiq: warning: the baseline did not re-build for paired runs ({build.log_tail[-200:]}); "
            "trials are compared with the baseline's first measurement")
        return None
    log(f"compileiq: the baseline's runs spread {100 * noise:.1f}% (> {100 * PAIRED_NOISE:.0f}%): every trial is "
        "measured next to runs of the project's own build, and compared with those")
    return tree


def _paired_noise(trials) -> tuple[float, int]:
    """The run-to-run noise that paired comparisons actually see: the spread of the trials' per-pair ratios
    (divided by sqrt 2, as each ratio holds two runs' noise), the median over the trials, and how many
    trials it comes from (0: none yet, noise nan). Drift that pairing cancels does not count."""
    spreads = sorted(max(relative_spread(m.ratios()) for m in t.measurements) / math.sqrt(2)
                     for t in trials if t.valid and t.same_code_as is None and t.measurements
                     and all(m.paired and len(m.samples) >= 3 for m in t.measurements))
    return (statistics.median(spreads), len(spreads)) if spreads else (math.nan, 0)


def _measure_more_if_promising(runner: Runner, setup: TuneSetup, tree: VariantTree, trial: Trial, baseline: Trial,
                               trials: dict[str, Trial], noise: float, reference: VariantTree | None = None) -> Trial:
    """A trial whose median is within the noise of the best so far gets more runs (up to max_repeats),
    so that the search's ranking of close candidates is not left to chance."""
    spec = setup.spec
    lower = spec.metric.lower_is_better
    if not trial.valid:
        return trial
    best = min(loss(t, baseline, lower) for t in trials.values())
    current = trial
    while len(current.measurements[0].samples) < spec.max_repeats:
        spread = max(noise, max(relative_spread(m.ratios() if m.paired else m.samples) for m in current.measurements))
        if loss(current, baseline, lower) > best + 2 * spread:
            break
        more = runner.extend(tree, current.measurements, spec.repeats, reference)
        if more.status is not Status.OK:
            return replace(current, status=more.status, reason=more.reason, measurements=())
        current = replace(current, measurements=more.measurements, bench_seconds=current.bench_seconds + more.seconds,
                          wall_seconds=current.wall_seconds + more.seconds)
    return current


def _result_name(kind: str, *parts: object) -> str:
    """The store's name of a validation or ablation result: what was decided, on what, with which threshold."""
    return kind + ":" + hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _validate_and_ablate(setup: TuneSetup, runner: Runner, finalists: list[FlagSet], min_gain: float,
                         log: Log, store=None) -> tuple[Validation | None, tuple[Contribution, ...]]:
    """Validation of the finalists, ablation of the best, validation of the minimal set. Each outcome is kept
    in the trial store as soon as it is decided, so that a rerun (after a kill) does not measure it again."""
    spec = setup.spec
    if not finalists:
        return None, ()
    build = lambda tree, fs: _build(setup, tree, fs)  # noqa: E731
    baseline = setup.space.baseline()

    def validated(candidates: list[FlagSet], seed: int) -> list[Validation]:
        name = _result_name("validation", [c.key for c in candidates], min_gain, seed)
        kept = store.load_validations(name) if store is not None else None
        if kept is not None:
            log(f"compileiq: validation of {', '.join(c.describe() for c in candidates)}: restored from the trial store")
            return kept
        results = validate(runner, build, setup.trees, baseline, candidates, min_gain, seed, log)
        if store is not None:
            store.save_validations(name, results)
        return results

    results = validated(finalists, spec.seed)
    for v in results:
        per = ", ".join(f"{w.speedup:.4f}x (p={w.p_value:.2g})" for w in v.workloads)
        log(f"compileiq:   {'accepted' if v.accepted else 'rejected'} {v.flagset.describe()}: "
            f"{v.geomean_speedup:.4f}x [{v.geomean_ci_low:.4f}..{v.geomean_ci_high:.4f}] {per}"
            f"{'; ' + v.reason if v.reason else ''}")
    accepted = sorted((v for v in results if v.accepted), key=lambda v: -v.geomean_speedup)
    if not accepted:
        return None, ()
    best = accepted[0]
    name = _result_name("ablation", best.flagset.key, min_gain, spec.seed + 1)
    kept = store.load_ablation(name) if store is not None else None
    if kept is not None:
        log("compileiq: ablation: restored from the trial store")
        minimal, contributions = kept
    else:
        minimal, contributions = ablate(runner, build, setup.trees, setup.space, best.flagset, min_gain, spec.seed + 1, log)
        if store is not None:
            store.save_ablation(name, minimal, contributions)
    if minimal == best.flagset:
        return best, contributions
    (final,) = validated([minimal], spec.seed + 2)
    log(f"compileiq: minimal flag set {minimal.describe()}: {final.geomean_speedup:.4f}x "
        f"[{final.geomean_ci_low:.4f}..{final.geomean_ci_high:.4f}]{'; ' + final.reason if final.reason else ''}")
    if final.accepted:
        return final, contributions
    log("compileiq: the minimal set did not validate; keeping the full validated winner")
    return best, contributions


def _portable_acf(flags: tuple[str, ...], toml_dir: Path) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """--apply-controls paths as the TOML records them: relative to its directory, each with its sha256."""
    out, digests = [], []
    for flag in flags:
        if flag.startswith("--apply-controls="):
            path = Path(flag.split("=", 1)[1])
            rel = os.path.relpath(path, toml_dir)
            digests.append((rel, hashlib.sha256(path.read_bytes()).hexdigest()))
            flag = f"--apply-controls={rel}"
        out.append(flag)
    return tuple(out), tuple(digests)


def _entry(setup: TuneSetup, winner: Validation, contributions: tuple[Contribution, ...], n_trials: int) -> FlagsEntry:
    spec = setup.spec
    flags, acf_sha256 = _portable_acf(winner.flagset.flags, spec.output.parent)
    return FlagsEntry(
        target=spec.target, language=setup.language, arch=setup.cuda_arch,
        compiler_id=setup.toolchain.compiler_id, compiler_version=setup.toolchain.version,
        flags=flags, acf_sha256=acf_sha256, build_type=setup.build_type, device=setup.device,
        compute_capability=setup.compute_capability, metric=spec.metric.label,
        lower_is_better=spec.metric.lower_is_better,
        workloads=tuple(" ".join(w.workload) for w in winner.workloads),
        baseline=tuple(round(statistics.median(w.baseline), 9) for w in winner.workloads),
        tuned=tuple(round(statistics.median(w.candidate), 9) for w in winner.workloads),
        speedup=round(winner.geomean_speedup, 4), trials=n_trials,
        date=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        tool_version=__version__, sources_sha256=setup.sources_sha256,
        replay=setup.replay is not None,
        speedup_ci=(round(winner.geomean_ci_low, 4), round(winner.geomean_ci_high, 4)),
        workload_speedups=tuple(round(w.speedup, 4) for w in winner.workloads),
        workload_ci=tuple((round(w.ci_low, 4), round(w.ci_high, 4)) for w in winner.workloads),
        p_values=tuple(float(f"{w.p_value:.3g}") for w in winner.workloads), checks=spec.checks,
        contributions=tuple(
            {"flags": list(c.flags), "speedup": round(c.speedup, 4), "ci": [round(c.ci_low, 4), round(c.ci_high, 4)],
             "kept": c.kept, "reason": c.reason}
            for c in contributions if math.isfinite(c.speedup)
        ),
    )


def _progress(setup: TuneSetup, log: Log, trial: Trial, baseline: Trial, trials: dict[str, Trial], started: float) -> None:
    spec = setup.spec
    lower = spec.metric.lower_is_better
    best = min(trials.values(), key=lambda t: loss(t, baseline, lower))
    best_speedup = math.exp(-loss(best, baseline, lower))
    elapsed = time.perf_counter() - started
    eta = elapsed / len(trials) * (spec.budget - len(trials))
    if trial.valid:
        value = " / ".join(f"{m:.4g}" for m in trial.medians())
        what = f"{value} ({math.exp(-loss(trial, baseline, lower)):.3f}x)"
    else:
        what = f"INVALID {trial.status.value}: {trial.reason[:80]}"
    log(f"[{len(trials):>3}/{spec.budget}] #{trial.index:<3} {what}  best {best_speedup:.3f}x  "
        f"ETA {_fmt_eta(eta)}  {trial.flagset.describe()}")


def _final_table(setup: TuneSetup, result: TuneResult, effects, log: Log) -> None:
    spec = setup.spec
    lower = spec.metric.lower_is_better
    valid = sum(1 for t in result.trials if t.valid)
    log("")
    log(f"compileiq: {spec.target}: {len(result.trials)} trials ({valid} valid, "
        f"{len(result.trials) - valid} invalid) in {result.wall_seconds:.1f} s")
    ranked = sorted(result.trials, key=lambda t: loss(t, result.baseline, lower))
    log(f"  {'#':>4}  {'speedup':>8}  {'metric (per workload)':<28}  flags")
    for t in ranked[:8]:
        speed = f"{math.exp(-loss(t, result.baseline, lower)):.3f}x" if t.valid else t.status.value
        metric = " / ".join(f"{m:.4g}" for m in t.medians()) if t.valid else ""
        log(f"  {t.index:>4}  {speed:>8}  {metric:<28}  {t.flagset.describe()}")
    if effects:
        log("  flag effects over all valid trials (least squares on log time; 95% CI):")
        for e in effects[:6]:
            log(f"    {e.flag:<40} {e.speedup:.3f}x [{e.ci.low:.3f}..{e.ci.high:.3f}] in {e.trials_with} trials")
    if result.contributions:
        log("  ablation of the winner (speedup of keeping each flag, 95% CI):")
        for c in result.contributions:
            log(f"    {' '.join(c.flags):<40} {c.speedup:.4f}x [{c.ci_low:.4f}..{c.ci_high:.4f}] "
                f"{'kept' if c.kept else 'dropped'}: {c.reason}")
    if result.winner is not None:
        w = result.winner
        per = ", ".join(f"{x.speedup:.3f}x [{x.ci_low:.3f}..{x.ci_high:.3f}]" for x in w.workloads)
        log(f"compileiq: winner (re-measured interleaved against the baseline): {w.geomean_speedup:.3f}x "
            f"[95% CI {w.geomean_ci_low:.3f}..{w.geomean_ci_high:.3f}] per workload {per} with {w.flagset.describe()}")
        log(f"compileiq: wrote {result.toml_path}" + (" (REPLAY: a configure never applies it)" if setup.replay else ""))
    else:
        log("compileiq: no significant improvement: no flag set beat the project's own build significantly "
            f"on every workload; no flags written for {spec.target}")
    for note in result.notes:
        log(f"compileiq: {note}")
    sys.stdout.flush()
