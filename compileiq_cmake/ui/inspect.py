"""The read-only commands: `show` (a TOML's entries), `space` (a flag space, or a target's screened one),
`trials` (a store's trials), `prior` (the learned prior: show, export, import)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from ..flags import load_space, toolkit
from ..flags.catalogue import added_dimensions, applies_when
from ..flags.features import command_features
from ..flags.screening import format_screen, screen_target
from ..measure.gpu import detect_gpu
from ..model.errors import CompileIQError, UsageError
from ..model.events import EventStream
from ..model.wording import plural, printable, untested_line
from ..results.prior_store import LocalPrior, prior_dir
from ..results.schema import duplicate_entries, duplicates_line
from ..results.store import TrialStore
from ..results.toml_io import read_entries
from ..search.prior import space_prior
from .parser import PROG
from .tune_options import split as _split


def _predictions(ts, jobs: int | None) -> list[str]:
    """What the prior predicts for each value of a screened space, and the features behind it."""
    tf = command_features(list(ts.commands), ts.cuda_arch, ts.nvcc or None, ts.relocatable, jobs or os.cpu_count() or 1)
    features = tf.vector()
    model = LocalPrior(prior_dir()).model()
    space = ts.result.space
    sp = space_prior(model, space, features, ts.cuda_arch)
    n = sum(1 for o in model.observations if o.family == space.family)
    top = ", ".join(f"{name} {100 * share:.0f}%" for name, share in tf.top(5))
    lines = [
        f"prior ({plural(n, 'observation')} of {space.family} flags): predicted effect of each value alone "
        f"(+ faster, +/- one sd) from the features of {plural(len(tf.kernels), 'function')} in "
        f"{plural(tf.units, 'unit')}: instructions {top}; registers {255 * features['registers']:.0f}, "
        f"occupancy {100 * features['occupancy']:.0f}%, spills {2 ** features['spills'] - 1:.0f} bytes"
        + (", relocatable" if tf.relocatable else "")
    ]
    h = model.hyper.get(space.family)
    if h is not None:
        lines.append(f"  similarity by: {', '.join(h.features) or 'none (every observation alike)'}")
    for d_index, d in enumerate(space.dimensions):
        for i in range(1, len(d.values)):
            p = sp.of(d_index, i)
            mark = "  [tried last]" if p.harmful else ""
            lines.append(f"  {d.name:<26} {' '.join(d.values[i]):<36} {p.describe()}{mark}")
    for c in sp.first:
        fs = space.flagset({d.name: v for d, v in zip(space.dimensions, c, strict=False)})
        lines.append(f"  proposed first: {fs.describe()}")
    return lines


def prior_command(args: argparse.Namespace) -> None:
    local = LocalPrior(prior_dir())
    if args.export:
        n = local.export(Path(args.export))
        print(f"wrote {plural(n, 'observation')} of your tunes to {args.export}")
        return
    if args.import_file:
        added, updated, same = local.import_file(Path(args.import_file))
        print(
            f"{args.import_file}: {plural(added, 'observation')} added, {updated} replaced an older one of the same "
            f"id, {same} already there as they are ({local.observations_dir})"
        )
        return
    if args.refit:  # a fit by leave-one-out over every observation: tens of seconds; say so first
        print(
            f"prior --refit: fitting on {plural(len(local.model().observations), 'observation')} (shipped and "
            "yours) by leave-one-out; this takes a while (about 30 s on 2 cores)...",
            flush=True,
        )
        for family, r in local.refit().items():
            print(
                f"{family}: refit on {plural(r['observations'], 'observation')} ({plural(r['values'], 'value')}): "
                f"bandwidth {'unbounded' if r['bandwidth'] is None else format(r['bandwidth'], '.3g')}, "
                f"shrink {r['shrink']:.3g}, features {', '.join(r['features']) or 'none'} "
                f"(leave-one-out loss {r['loo_score']:.4g})"
            )
        print(f"saved in {local.refit_path}")
        return
    model = local.model()
    mine = local.observations()
    print(
        f"prior: {plural(len(model.observations), 'observation')} ({len(mine)} from your tunes, in "
        f"{local.observations_dir})"
    )
    made = model.provenance
    if made:
        print(
            f"  shipped: {made.get('made_by', '?')}, {made.get('date', '?')}, commit "
            f"{str(made.get('commit', ''))[:12] or '?'}"
        )
    for family in model.families():
        h = model.hyper.get(family)
        obs = [o for o in model.observations if o.family == family]
        print(
            f"  {family}: {plural(len(obs), 'observation')}; "
            + (
                f"bandwidth {'unbounded' if h.bandwidth == float('inf') else format(h.bandwidth, '.3g')}, "
                f"shrink {h.shrink:.3g}, features {', '.join(h.features) or 'none'}"
                if h
                else "not fitted (prior --refit)"
            )
        )
    for o in mine:
        print(f"  yours: {o.id} ({o.family}, {plural(len(o.effects), 'value')} measured)")


def show_command(path: Path) -> None:
    """`show FILE`: each entry in a few lines; every value the file holds is escaped (printable), so that a
    newline in a recorded field cannot forge a line."""

    def say(line: str) -> None:
        print(printable(line))

    entries = read_entries(path)
    say(f"{path}: {plural(len(entries), 'entry', 'entries')}")
    for e in entries:
        where = f"sm_{e.arch}" if e.arch else "host"
        replay = "  [REPLAY: never applied]" if e.replay else ""
        say(
            f"- {e.target} ({e.language}, {where}, {e.compiler_id} {e.compiler_version}, "
            f"{e.build_type or 'every build type'}){replay}"
        )
        say(f"    flags:    {' '.join(e.flags) or '(none)'}")
        say(f"    device:   {e.device}{' cc ' + e.compute_capability if e.compute_capability else ''}")
        if e.tuned_cpu:
            say(
                f"    cpu:      tuned on {e.tuned_cpu}; needs {', '.join(e.cpu_features) or 'no recorded ISA features'}"
            )
        if e.arch_scope != "all":
            say(f"    archs:    arch_scope {e.arch_scope}: applied only to builds of sm_{e.arch} alone")
        energy = e.objective == "energy"
        say(
            f"    metric:   {e.metric} ({'lower' if e.lower_is_better else 'higher'} is better)"
            + ("; tuned for energy: the numbers below are joules per run (the GPU's counter)" if energy else "")
        )
        for w, b, t in zip(e.workloads or ("",), e.baseline, e.tuned, strict=False):
            say(f"    workload {w or '(default)'}: baseline {b:.6g} -> tuned {t:.6g}{' J' if energy else ''}")
        say(
            f"    {'energy gain' if energy else 'speedup'}:  {e.speedup:.3f}x over {plural(e.trials, 'trial')}, "
            f"{e.date}, compileiq_cmake {e.tool_version}"
            + {
                "confirmation": " (a confirmation's rounds)",
                "deciding rounds": " (the rounds that accepted it: not confirmed)",
                "validation and confirmation": " (the rounds that accepted it and a confirmation's, together)",
            }.get(e.speedup_from, "")
        )
        if e.untested_flags:
            say(f"    {untested_line(e.untested_flags)}")
    for group in duplicate_entries(entries).values():  # the one rule of the configure, check and the writer
        say(f"refused: {duplicates_line(entries, group, path.name)}")


def space_command(
    family: str | None, version: str, args: argparse.Namespace | None = None, events: EventStream | None = None
) -> None:
    if args is not None and args.target:
        if not args.source_dir or not args.build_dir:
            raise UsageError("space --target needs -S <source dir> and -B <build dir>")
        ts = screen_target(
            Path(args.source_dir).resolve(),
            Path(args.build_dir).resolve(),
            args.target,
            args.cuda_arch,
            _split(args.include_flags),
            _split(args.exclude_flags),
            args.jobs,
            gpu_arch=lambda: detect_gpu().arch,
        )
        print("\n".join(format_screen(ts, notes=events is None)))
        for note in ts.notes if events is not None else ():
            assert events is not None  # (the loop runs only then)
            events.note(note.removeprefix("note: "), stage="space")
        print("\n".join(_predictions(ts, args.jobs)))
        return
    if family is None:
        raise UsageError("give a family (space nvcc|gcc|clang) or a target (space -S src -B build --target T)")
    compiler = {"nvcc": "NVIDIA", "clang": "Clang"}.get(family, "GNU")
    serves = {"gcc": " (GNU, Clang, AppleClang)", "clang": " (GNU, Clang, AppleClang; as Clang gets it)"}
    serves_line, family = serves.get(family, ""), "nvcc" if family == "nvcc" else "gcc"  # gcc's serves Clang too
    space = load_space(
        family,
        compiler,
        version,
        _split(args.include_flags) if args else (),
        _split(args.exclude_flags) if args else (),
    )
    print(
        f"{family} flag space{serves_line}: {plural(len(space.dimensions), 'dimension')}, {plural(space.size, 'point')}"
    )
    when = applies_when(family)
    for d in space.dimensions:
        unsafe = "  [unsafe numerics]" if d.unsafe_numerics else ""
        unsafe += "  [experimental]" if d.experimental else ""
        unsafe += f"  [{when[d.name]}]" if when.get(d.name) else ""
        print(f"  {d.name:<26} {' | '.join(d.labels())}{unsafe}")
    for note in space.dropped:
        print(f"  dropped: {note}")
    added = added_dimensions(family)
    if added:
        print("added by a tune where they apply:")
        for name, values, condition in added:
            print(f"  {name:<26} {values}  [{condition}]")


CSV_COLUMNS = (
    "target",
    "tune",
    "trial",
    "status",
    "flags",
    "workload",
    "median",
    "runs",
    "build_seconds",
    "bench_seconds",
    "binary_bytes",
    "device_bytes",
    "joules_median",
    "metric_median",
    "same_code_as",
    "gpu",
    "reason",
)


def _csv(groups: dict[str, list], names: dict[str, str]) -> None:
    """One row per trial and workload (a trial without measurements: one row, its workload empty). median: the
    objective's values (the metric, or joules with --objective energy); joules_median: the GPU's energy per run
    where measured; metric_median: the program's metric."""
    import csv

    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for spec, trials in groups.items():
        for t in trials:
            rows = [
                (
                    " ".join(m.workload),
                    f"{statistics.median(m.samples):.6g}" if m.samples else "",
                    len(m.samples),
                    f"{statistics.median(m.joules):.6g}" if m.joules else "",
                    f"{m.metric_median:.6g}" if m.samples else "",
                )
                for m in t.measurements
            ] or [("", "", 0, "", "")]
            for workload, median, runs, joules, metric in rows:
                writer.writerow(
                    (
                        names[spec],
                        spec,
                        t.index,
                        t.status.value,
                        " ".join(t.flagset.flags),
                        workload,
                        median,
                        runs,
                        f"{t.build_seconds:.3f}",
                        f"{t.bench_seconds:.3f}",
                        t.binary_bytes,
                        t.device_bytes,
                        joules,
                        metric,
                        "" if t.same_code_as is None else t.same_code_as,
                        t.gpu,
                        " ".join(t.reason.split()),
                    )
                )


def trials_command(build_dir: Path, as_json: bool, as_csv: bool = False) -> None:
    """Every stored trial of a build tree: the tune's own store and a suite's (the CMake route's compileiq_tune
    keeps one per target under <build>/compileiq/suite/); each tune named by its target where its summary or
    suite folder says it."""
    path = build_dir / "compileiq" / "trials.sqlite"
    stores = ([path] if path.is_file() else []) + sorted((build_dir / "compileiq" / "suite").glob("*/trials.sqlite"))
    if not stores:
        raise UsageError(f"{build_dir} holds no tune results ({path} does not exist); run a tune with -B {build_dir}")
    groups, effects, names = _stored(stores, path)
    if as_json:
        print(json.dumps({spec: [t.as_dict() for t in trials] for spec, trials in groups.items()}, indent=1))
        return
    if as_csv:
        _csv(groups, names)
        return
    for spec, trials in groups.items():
        _print_trials(spec, names[spec], trials, effects[spec])


def _stored(stores: list[Path], own: Path) -> tuple[dict[str, list], dict[str, list], dict[str, str]]:
    """The trials of each tune of these stores by its spec, its flag effects, and the target it tuned (from its
    summary, else its suite folder; "" for the tune's own store without one)."""
    groups: dict[str, list] = {}
    effects: dict[str, list] = {}
    names: dict[str, str] = {}
    path = own
    for each in stores:
        store = TrialStore(each, "", reader=True)  # a read command: a damaged store is said and left
        if store.note:  # a damaged store was moved aside: say so instead of a traceback or an empty answer
            raise CompileIQError(store.note)
        try:
            found = store.load_all()
            if store.skipped_rows:
                print(
                    f"{PROG}: warning: {store.skipped_rows} row(s) of {each} are not trials (edited or damaged by "
                    "something else): left out",
                    file=sys.stderr,
                )
            for spec, trials in found.items():
                store.spec = spec
                groups[spec] = trials
                effects[spec] = store.load_result("flag_effects") or []
                summary = store.load_result("summary")
                target = summary.get("target") if isinstance(summary, dict) else None
                names[spec] = target or (each.parent.name if each != path else "")
        finally:
            store.close()
    return groups, effects, names


def _print_trials(spec: str, name: str, trials: list, effects: list) -> None:
    """One tune's trials as lines (each kernel's resources below its trial), then its flag effects."""
    named = f"{name} ({spec[:12]})" if name else spec
    print(f"tune {named}: {plural(len(trials), 'trial')}")
    for t in trials:
        medians = " / ".join(f"{m:.4g}" for m in t.medians())
        state = medians if t.valid else f"{t.status.value}: {' '.join(t.reason.split())}"  # whole, one line
        same = f" (same device code as #{t.same_code_as})" if t.same_code_as is not None else ""
        print(f"  #{t.index:<3} {state:<40} {t.flagset.describe()}{same}")
        for k in t.kernels:
            print(
                f"        {k.name.split(':', 1)[-1][:40]:<40} regs {k.registers}, spills {k.spill_bytes} B, "
                f"shared {k.shared_bytes} B, {k.instructions} instructions"
            )
    if effects:
        print("  flag effects (least squares over the valid trials, 95% CI):")
        for e in effects:
            print(
                f"    {e['flag']:<40} {e['speedup']:.3f}x [{e['ci'][0]:.3f}..{e['ci'][1]:.3f}] in "
                f"{plural(e['trials_with'], 'trial')}"
            )


def toolkit_command(version: str, prefix: Path | None) -> None:
    """`toolkit X.Y`: NVIDIA's PyPI toolkit installed (or found) and the configure argument that uses it."""
    kit = toolkit.install(version, prefix)
    print(f"CUDA {kit.version} at {kit.root}")
    print(f"configure the tune's build tree and release builds with: {kit.cmake_argument()}")
    print(
        "a GPU driver older than the toolkit runs only SASS built for its GPU: e.g. -DCMAKE_CUDA_ARCHITECTURES=90-real"
    )
