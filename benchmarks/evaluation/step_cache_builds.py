"""Issue 38: what the compile-step cache saves per trial build, on this machine (no GPU needed: builds only).

For each target of a project, in a variant tree of its own (the tool's own VariantTree and build_variant, the
target's own compile commands checked as in a tune): the project's own flags built clean (a full build), then
trials in turn: a ptxas-only change, a front-end change, the ptxas-only change again; with the step cache
without a launcher, with sccache alone, and with the ptxas-only route before sccache (the default step cache),
each with an empty cache of its own, the variants in turn. Prints one JSON object per target and variant
(build seconds per step) and a table: a ptxas-only trial's build as a share of the full build without cache.
`--routes`: instead, each trial's flags through the fragment (CMake runs again for every trial, as before the
trial flags file) with sccache alone (as before the ptxas-only route) and with the route, against the trial
flags file with the route (today's way).

`--replay STORE...`: instead of those four steps, the flag sets of recorded tunes' trials (trial stores, or
`compileiq-cmake trials --json` files, `.json` or `.json.gz`, as the raw data of docs/benchmarks holds them), in
their order, each trial in tree k % `--trees` as a tune's trials go to its trees; prints trials per minute with
the stores' median run.

    python3 benchmarks/evaluation/step_cache_builds.py <source dir> <user build dir> <target>... [--arch 90] [--routes]
        [--replay STORE... --trees N] [--only VARIANT] [--also-route NAME=FILE]
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
from compileiq_cmake.execute import step_cache
from compileiq_cmake.execute.step_cache import ROUTE, StepCache, find_sccache
from compileiq_cmake.model.records import FlagSet
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.fragment import render_fragment
from compileiq_cmake.project.variant_settings import VariantSettings

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
            tree_class: type = VariantTree, steps: tuple = STEPS, trees: int = 1) -> dict[str, float]:
    """Build seconds of each step's flags in turn; with `trees`, step k in tree k % trees (as a tune's trials
    go to its variant trees), each tree's first build included."""
    pool = [tree_class(root, f"{name}-{i}", settings.cmake) for i in range(trees)]
    model = [tree.prepare(settings, target, "CUDA") for tree in pool][0]
    t = model.target(target)
    entries = pool[0].compile_commands(t.sources_in("CUDA"), t.name)
    context = BuildContext(target=target, language="CUDA", cuda_arch=settings.cuda_arch, build_targets=(target,),
                           sources=t.sources, source_dir=source, trees=1, timeout=600.0,
                           own_commands={str(Path(e["file"]).resolve()): command_tokens(pool[0], e) for e in entries})
    out = {}
    for k, (label, flags) in enumerate(steps):
        built = build_variant(context, pool[k % trees], FlagSet(tuple((f, 1) for f in flags), flags))
        if not built.ok:
            raise SystemExit(f"{target} {label}: {built.log_tail}")
        out[label] = round(built.seconds, 3)
    return out


def replayed(stores: list[Path]) -> tuple[tuple, list[float]]:
    """The flag sets of recorded tunes' trials, in each store's order (its baseline first), and their runs'
    seconds: a real search's sequence of trials."""
    import gzip
    import sqlite3

    steps, runs = [], []
    for store in stores:
        if store.name.endswith((".json", ".json.gz")):  # trials --json: {tune identity: [trial, ...]}
            doc = json.loads((gzip.open if store.name.endswith(".gz") else open)(store, "rt").read())
            tunes = [sorted((t["index"], t["flags"], t["bench_seconds"]) for t in trials) for trials in doc.values()]
        else:
            with sqlite3.connect(store) as db:
                tunes = [[(i, json.loads(f), b) for i, f, b in
                          db.execute("SELECT idx, flags, bench_seconds FROM trials ORDER BY idx")]]
        for idx, flags, bench in (row for rows in tunes for row in rows):  # (each label its own: a build each)
            steps.append((f"{len(steps)}. {store.name} #{idx}: {' '.join(flags) or 'own flags'}", tuple(flags)))
            runs.append(float(bench))
    return tuple(steps), runs


def _slug(variant: str) -> str:
    """A variant's name as a folder name."""
    return variant.replace(" ", "-").replace(",", "")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("source", type=Path)
    p.add_argument("build", type=Path)
    p.add_argument("targets", nargs="+")
    p.add_argument("--arch", default="90")
    p.add_argument("--routes", action="store_true")
    p.add_argument("--replay", type=Path, nargs="*", default=[], help="trial stores whose trials' flags to build")
    p.add_argument("--trees", type=int, default=1)
    p.add_argument("--only", default="", help="one variant (e.g. 'ptxas-only route')")
    p.add_argument("--also-route", action="append", default=[], metavar="NAME=FILE",
                   help="one more variant (beside those --only keeps): the step cache with this ptxas_route.py "
                   "(e.g. of an earlier commit)")
    args = p.parse_args()
    steps, runs = replayed(args.replay) if args.replay else (STEPS, [])
    settings, _ = VariantSettings.from_user_tree(args.source.resolve(), args.build.resolve(), args.arch)
    program = find_sccache() or sys.exit("sccache not found")
    rows, stats = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # each variant with a cache of its own (empty at its start), the variants in turn per target
        # (name, tree, step cache: None without, else whether the ptxas-only route is on)
        variants = (("fragment, sccache", FragmentRoute, False), ("fragment", FragmentRoute, True),
                    ("flags file", VariantTree, True)) if args.routes else \
            (("without", VariantTree, None), ("sccache", VariantTree, False), ("ptxas-only route", VariantTree, True))
        if args.only:
            variants = tuple(v for v in variants if v[0] == args.only) or sys.exit(f"no variant {args.only!r}")
        scripts = dict(a.split("=", 1) for a in args.also_route)  # variant -> its route script
        variants += tuple((name, VariantTree, True) for name in scripts)
        caches = {v: None if route is None else
                  StepCache(program, root / f"cache-{_slug(v)}", ptxas_route=route)
                  for v, _, route in variants}  # (only the variants run start a server)
        try:
            for _, cache in caches.items():
                if cache is not None and cache.start()[1]:
                    sys.exit("the sccache server did not start")
            for k, target in enumerate(args.targets):
                for variant, kind, _ in variants if k % 2 == 0 else variants[::-1]:
                    cache = caches[variant]
                    step_cache.ROUTE = Path(scripts.get(variant, ROUTE)).resolve()  # (read by .launcher)
                    s = replace(settings, cuda_launcher=cache.launcher) if cache else settings
                    step_cache.ROUTE = ROUTE
                    row = {"target": target, "variant": variant,
                           **measure(args.source.resolve(), s, target, root, f"{target}-{_slug(variant)}",
                                     kind, steps, args.trees)}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            stats = {v: caches[v].stats() for v, *_ in variants if caches[v] is not None}
        finally:
            for cache in caches.values():
                if cache is not None:
                    cache.stop()
    for variant, got in stats.items():
        print(f"\n{variant}: {got.line() if got else 'no stats'}")
    first = variants[0][0]
    if args.replay:  # a recorded search's trials: build seconds, and trials per minute with the recorded runs
        run = statistics.median(runs)
        print(f"\n{len(steps)} trials replayed in {args.trees} tree(s); a trial's run: the recorded median, {run:.2f} s")
        print("| target | variant | build s per trial, median (IQR) | the same after each tree's first build | "
              "sum of builds s | trials per minute (build + run) |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            builds = [r[label] for label, _ in steps]
            q, later = statistics.quantiles(builds, n=4), builds[args.trees:] or builds
            ql = statistics.quantiles(later, n=4) if len(later) > 1 else later * 3
            print(f"| {r['target']} | {r['variant']} | {statistics.median(builds):.2f} ({q[0]:.2f}-{q[2]:.2f}) | "
                  f"{statistics.median(later):.2f} ({ql[0]:.2f}-{ql[2]:.2f}) | "
                  f"{sum(builds):.1f} | {60 * len(builds) / (sum(builds) + run * len(builds)):.1f} |")
        return 0
    print(f"\n| target | variant | full build s | ptxas-only trials s | share of {first}'s full build | front-end trial s |")
    print("|---|---|---|---|---|---|")
    for target in args.targets:
        base = next(r for r in rows if r["target"] == target and r["variant"] == first)[STEPS[0][0]]
        for r in (r for r in rows if r["target"] == target):
            ptxas = statistics.median((r[STEPS[1][0]], r[STEPS[3][0]]))
            print(f"| {target} | {r['variant']} | {r[STEPS[0][0]]:.2f} | {r[STEPS[1][0]]:.2f}, {r[STEPS[3][0]]:.2f} | "
                  f"{100 * ptxas / base:.0f}% | {r[STEPS[2][0]]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
