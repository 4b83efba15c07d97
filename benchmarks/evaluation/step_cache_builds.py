"""Issue 38: what the compile-step cache saves per trial build, on this machine (no GPU needed: builds only).

For each target of a project, in a variant tree of its own (the tool's own VariantTree and build_variant, the
target's own compile commands checked as in a tune): the project's own flags built clean (a full build), then
trials in turn: a ptxas-only change, a front-end change, the ptxas-only change again; with the step cache
(sccache launcher, a fresh cache) and without it, same order. Prints one JSON object per target and variant
(build seconds per step) and a table of medians: a ptxas-only trial's build as a share of the full build.
`--routes`: also each trial's flags through the fragment (CMake runs again for every trial, as before the
trial flags file) against the trial flags file (today's way), both with the step cache.

    python3 benchmarks/evaluation/step_cache_builds.py <source dir> <user build dir> <target>... [--arch 90] [--routes]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from compileiq_cmake.execute.build import BuildContext, build_variant, command_tokens
from compileiq_cmake.execute.step_cache import StepCache, find_sccache
from compileiq_cmake.model.records import FlagSet
from compileiq_cmake.project.cmake_project import VariantSettings, VariantTree, render_fragment

STEPS = (("full build (own flags)", ()), ("ptxas-only: -Xptxas=-O1", ("-Xptxas=-O1",)),
         ("front end: --use_fast_math", ("--use_fast_math",)), ("ptxas-only: -Xptxas=-O2", ("-Xptxas=-O2",)))


class FragmentRoute(VariantTree):
    """A variant tree whose trials put every flag into the fragment (the way before the trial flags file):
    each trial re-runs CMake."""

    def write_flags(self, target, language, cuda_arch, flags, device_link=()):
        self._target, self._language = target, language
        text = render_fragment(target, language, cuda_arch, flags, device_link, self.record, str(self.flags_file))
        self.path.mkdir(parents=True, exist_ok=True)
        self.flags_file.write_text("") if not self.flags_file.is_file() else None
        self.changed_flags_files = frozenset()
        if self.fragment.is_file() and self.fragment.read_text() == text:
            return False
        self.fragment.write_text(text)
        return True


def measure(source: Path, settings: VariantSettings, target: str, root: Path, name: str,
            tree_class: type = VariantTree) -> dict[str, float]:
    tree = tree_class(root, name, settings.cmake)
    model = tree.prepare(settings, target, "CUDA")
    t = model.target(target)
    entries = tree.compile_commands(t.sources_in("CUDA"), t.name)
    context = BuildContext(target=target, language="CUDA", cuda_arch=settings.cuda_arch, build_targets=(target,),
                           sources=t.sources, source_dir=source, trees=1, timeout=600.0,
                           own_commands={str(Path(e["file"]).resolve()): command_tokens(tree, e) for e in entries})
    out = {}
    for label, flags in STEPS:
        built = build_variant(context, tree, FlagSet(tuple((f, 1) for f in flags), flags))
        if not built.ok:
            raise SystemExit(f"{target} {label}: {built.log_tail}")
        out[label] = round(built.seconds, 3)
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("source", type=Path)
    p.add_argument("build", type=Path)
    p.add_argument("targets", nargs="+")
    p.add_argument("--arch", default="90")
    p.add_argument("--routes", action="store_true")
    args = p.parse_args()
    settings, _ = VariantSettings.from_user_tree(args.source.resolve(), args.build.resolve(), args.arch)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cache = StepCache(find_sccache() or sys.exit("sccache not found"), root / "step-cache")
        if cache.start()[1]:
            sys.exit("the sccache server did not start")
        try:
            cached = replace(settings, cuda_launcher=cache.launcher)
            variants = ((("fragment", cached, FragmentRoute), ("flags file", cached, VariantTree)) if args.routes else
                        (("without", settings, VariantTree), ("step cache", cached, VariantTree)))
            for k, target in enumerate(args.targets):
                for variant, s, kind in variants if k % 2 == 0 else variants[::-1]:  # (who warms the cache, in turn)
                    row = {"target": target, "variant": variant,
                           **measure(args.source.resolve(), s, target, root, f"{target}-{variant.replace(' ', '-')}",
                                     kind)}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            stats = cache.stats()
        finally:
            cache.stop()
    print(f"\ncache: {stats.line() if stats else 'no stats'}")
    print("| variant | full build s (median) | ptxas-only trial s | share of full | front-end trial s |")
    print("|---|---|---|---|---|")
    for variant in dict.fromkeys(r["variant"] for r in rows):
        mine = [r for r in rows if r["variant"] == variant]
        full = statistics.median(r[STEPS[0][0]] for r in mine)
        ptxas = statistics.median(x for r in mine for x in (r[STEPS[1][0]], r[STEPS[3][0]]))
        front = statistics.median(r[STEPS[2][0]] for r in mine)
        print(f"| {variant} | {full:.2f} | {ptxas:.2f} | {100 * ptxas / full:.0f}% | {front:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
