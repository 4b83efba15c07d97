"""Record a landscape of a whole CMake project (format of README.md, version 1): every point of a small space
whose dimensions may be per-file (tokens `[path]flag`, compileiq_cmake/model/build_flags.py), built by the tool's
own variant trees (so a point builds exactly what a tune would), fingerprinted, and timed by running the
project's benchmark. It is what `search_efficiency.py` needs to measure the per-file search like the global
one (record.py records standalone kernels through pycuda instead).

    python3 benchmarks/landscapes/record_project.py -S examples/cuda_multifile -B /tmp/mf/build \
        --target multi_bench --bench multi_bench --metric '^time_ms=([0-9.eE+-]+)' --pass-regex '^PASS' \
        --workload '--size 1' --scale 1000 --out benchmarks/landscapes/multifile_per_file.json \
        --dim 'compute.cu:use_fast_math=[src/compute.cu]--use_fast_math' \
        --dim 'compute.cu:maxrregcount=[src/compute.cu]-maxrregcount=64|[src/compute.cu]-maxrregcount=128' \
        --dim 'gemm.cu:ptxas_opt_level=[src/gemm.cu]-Xptxas=-O1' \
        --dim 'gemm.cu:maxrregcount=[src/gemm.cu]-maxrregcount=96|[src/gemm.cu]-maxrregcount=255' \
        --dim 'stream.cu:load_cache=[src/stream.cu]-Xptxas=-dlcm=cg|[src/stream.cu]-Xptxas=-dlcm=cs'

A dimension is NAME=VALUE|VALUE...; a value is one or more tokens separated by spaces; the default value
(nothing added) is implicit. `--learn` adds every dimension of record.py's learning design (LEARN_DIMENSIONS,
all values of the installed nvcc's space) and records that design instead of the full product: the full
product of the `--core` values (NAME or NAME=INDEX,INDEX...: value indices, 0 the default; NAME alone: the
first two), every single change and `--random` uniform random points (issue 23: a relocatable project with calls
across files for the prior, e.g. benchmarks/projects/suite16's mc_rdc with `--dim 'device_lto=-dlto'`). Builds run in the tool's variant trees (--workers of them in parallel); each new
device code's benchmark executable is copied aside (a self-contained executable: libraries it loads from
the build tree are not copied), then `--passes` passes over all codes in random order time it (the metric
times --scale, e.g. ms -> us), the default code at the start and end of each pass. The program's own check
(--pass-regex) is the verdict: a run that does not pass makes the code `wrong_result`. `--dry-run` builds
and fingerprints only (no GPU) and writes <out>.dryrun.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from compileiq_cmake.measure.bench import run_benchmark
from compileiq_cmake.execute.factory import make_executor
from compileiq_cmake.model.records import FlagSet, Status
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.tune.setup import setup as tune_setup
from compileiq_cmake.flags.space import load_space
from record import LEARN_DIMENSIONS, noise_estimate  # noqa: E402  (this folder: the kernel recorder's)


def parse_dim(text: str) -> dict:
    name, _, values = text.partition("=")
    if not name or not values:
        raise SystemExit(f"--dim {text!r}: give NAME=VALUE|VALUE...")
    return {"name": name, "values": [[]] + [v.split() for v in values.split("|")]}


def learn_dims(nvcc_version: str) -> list[dict]:
    """The learning design's dimensions with every value of the installed nvcc's space."""
    space = load_space("nvcc", "NVIDIA", nvcc_version, include=LEARN_DIMENSIONS, arch="90")
    by_name = {d.name: d for d in space.dimensions}
    missing = [n for n in LEARN_DIMENSIONS if n not in by_name]
    if missing:
        raise SystemExit(f"not in the nvcc {nvcc_version} space: {', '.join(missing)}")
    return [{"name": n, "values": [list(v) for v in by_name[n].values]} for n in LEARN_DIMENSIONS]


def design_points(dims: list[dict], core: list[str], n_random: int, seed: int) -> tuple[list[tuple[int, ...]], dict, str]:
    """The learning design: the full product of the core values, every single change, random points."""
    names = [d["name"] for d in dims]
    ranges = [[0] for _ in dims]
    chosen_core = {}
    for item in core:
        name, _, idx = item.partition("=")
        if name not in names:
            raise SystemExit(f"--core {item}: no dimension {name}")
        d = names.index(name)
        ranges[d] = [int(i) for i in idx.split(",")] if idx else [0, 1]
        if 0 not in ranges[d] or max(ranges[d]) >= len(dims[d]["values"]):
            raise SystemExit(f"--core {item}: give value indices of {name} including 0 (its default)")
        chosen_core[name] = [dims[d]["values"][i] for i in ranges[d]]
    chosen = dict.fromkeys(itertools.product(*ranges))
    n_core = len(chosen)
    for d, dim in enumerate(dims):
        for v in range(1, len(dim["values"])):
            chosen[tuple(v if i == d else 0 for i in range(len(dims)))] = None
    rng = random.Random(seed)
    target = len(chosen) + n_random
    while len(chosen) < target:
        chosen[tuple(rng.randrange(len(d["values"])) for d in dims)] = None
    sizes = [len(d["values"]) for d in dims]
    return sorted(chosen), chosen_core, (f"learn: the full product of the core values ({n_core} points: "
                                         f"{', '.join(chosen_core)}), every single change and {n_random} uniform "
                                         f"random points, {len(chosen)} of {math.prod(sizes)}")


def noise(pairs: list[tuple[float, float]]) -> dict:
    """record.py's estimate; a landscape needs rel_sd, so without a code measured twice 1% is assumed."""
    estimate = noise_estimate(pairs)
    if "rel_sd" not in estimate:
        return {**estimate, "rel_sd": 0.01, "method": "no code measured twice: 1% assumed"}
    return {**estimate, "rel_sd": max(estimate["rel_sd"], 1e-6)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-S", dest="source", required=True)
    p.add_argument("-B", dest="build", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--bench", required=True)
    p.add_argument("--metric", required=True)
    p.add_argument("--pass-regex")
    p.add_argument("--workload", default="")
    p.add_argument("--dim", action="append", default=[])
    p.add_argument("--learn", action="store_true", help="the learning design (see above) instead of the full product")
    p.add_argument("--core", action="append", default=[], help="NAME or NAME=I,J...: a core dimension (--learn)")
    p.add_argument("--random", type=int, default=20, help="uniform random points (--learn)")
    p.add_argument("--deadline", type=float, default=0.0, help="seconds: no timing pass starts after it (0: none)")
    p.add_argument("--scale", type=float, default=1.0, help="metric x scale = microseconds")
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--out", required=True)
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args()

    t_start = time.monotonic()
    nvcc = shutil.which("nvcc") or ""
    nvcc_text = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout if nvcc else ""
    nvcc_match = re.search(r"V(\d+\.\d+\.\d+)", nvcc_text)  # "release 13.0, V13.0.88" (as record.py stores it)
    nvcc_version = nvcc_match.group(1) if nvcc_match else ""
    dims = [parse_dim(d) for d in args.dim]
    core: dict = {}
    if args.learn:
        dims = learn_dims(".".join(nvcc_version.split(".")[:2]) or "13.0") + dims
        points, core, sampling = design_points(dims, args.core, args.random, seed=1)
    else:
        points, sampling = list(itertools.product(*(range(len(d["values"])) for d in dims))), "full"
    if not dims:
        raise SystemExit("give --dim or --learn")
    metric = MetricSpec.parse(args.metric, lower_is_better=True)
    workload = tuple(args.workload.split())
    spec = TuneSpec(source_dir=Path(args.source).resolve(), build_dir=Path(args.build).resolve(), target=args.target,
                    benchmark=(args.bench,), workloads=(workload,), metric=metric, pass_regex=args.pass_regex,
                    workers=args.workers, screen=False, cuda_arch="90" if args.dry_run else None,
                    output=Path(args.out).with_suffix(".unused.toml"))
    log = lambda line: print(line, flush=True)  # noqa: E731
    setup = tune_setup(spec, log)
    relocatable = setup.trees[0].decisions().relocatable
    executor = make_executor(setup.execution_plan)
    codes: dict[str, dict] = {}
    point_code: dict[tuple[int, ...], str] = {}
    binaries = Path(args.build).resolve() / "compileiq" / "landscape-binaries"
    shutil.rmtree(binaries, ignore_errors=True)
    lock = threading.Lock()
    queue = list(points)

    def flags_of(point) -> tuple[str, ...]:
        return tuple(t for d, i in zip(dims, point) for t in d["values"][i])

    def worker(tree) -> None:
        while True:
            with lock:
                if not queue:
                    return
                point = queue.pop(0)
            flags = flags_of(point)
            built = executor.build(tree, FlagSet((), flags))
            key = built.fingerprint or ("build failed: " + built.log_tail[-200:] if not built.ok else "no fingerprint " + repr(flags))
            with lock:
                point_code[point] = key
                log(f"built {len(point_code)}/{len(points)}: {' '.join(flags) or '(default)'} -> "
                    + ("build failed" if not built.ok else f"code {list(codes).index(key) if key in codes else len(codes)}"))
                if key in codes:
                    continue
                codes[key] = {"digest": built.fingerprint or None, "flags": list(flags),
                              "regs": max((k.registers for k in built.kernels), default=0),
                              "spill": max((k.spill_bytes for k in built.kernels), default=0)}
                if not built.ok:
                    codes[key].update(status="build_failed", valid=False, error=None, time_us=[],
                                      message=built.log_tail[-300:])
                    continue
                argv = list(setup.bench.for_tree(tree, workload))
                exe = Path(argv[0])
                keep = binaries / f"code-{len(codes)}"
                keep.mkdir(parents=True)
                shutil.copy2(exe, keep / exe.name)
                codes[key]["argv"] = [str(keep / exe.name), *argv[1:]]

    trees = setup.trees_for(len(setup.trees))  # every tree builds points (the finalists' ones configured now)
    with ThreadPoolExecutor(len(trees)) as pool:
        list(pool.map(worker, trees))
    default_key = point_code[tuple(0 for _ in dims)]
    anchors: list[float] = []
    if not args.dry_run:
        timed = [k for k, c in codes.items() if "argv" in c]
        rng = random.Random(1)

        def time_code(key: str) -> float | None:
            c = codes[key]
            out = run_benchmark(c["argv"], binaries, metric, args.pass_regex, args.timeout)
            if out.status is Status.OK and out.value is not None:
                return out.value * args.scale
            c.setdefault("message", f"{out.status.value}: {out.reason}; {out.last_line()}")
            c["failed"] = out.status.value
            return None

        for n in range(args.passes):
            if n and args.deadline and time.monotonic() - t_start > args.deadline:
                log(f"pass {n + 1}/{args.passes} not started: past the deadline of {args.deadline:.0f} s")
                break
            order = timed[:]
            rng.shuffle(order)
            anchors.append(time_code(default_key) or float("nan"))
            for key in order:
                value = time_code(key)
                if value is not None:
                    codes[key].setdefault("time_us", []).append(value)
            anchors.append(time_code(default_key) or float("nan"))
            log(f"pass {n + 1}/{args.passes} done")
        for c in codes.values():
            if "status" in c:
                continue
            failed = c.pop("failed", None)
            c["status"] = "ok" if not failed and c.get("time_us") else (
                "wrong_result" if failed in ("pass_missing", "verify_failed") else "launch_failed")
            c["valid"] = c["status"] == "ok"
            c["error"] = None
            c.setdefault("time_us", [])
    keys = list(codes)
    for c in codes.values():
        c.pop("argv", None)
    pairs = [tuple(c["time_us"][:2]) for c in codes.values() if c.get("valid") and len(c.get("time_us", [])) >= 2]
    document = {
        "format": "compileiq-landscape", "version": 1, "kernel": args.target, "family": "nvcc",
        "metric": {"name": "kernel_time", "unit": "us", "higher_is_better": False},
        "meta": {"synthetic": False, "dry_run": args.dry_run, "source": str(args.source), "target": args.target,
                 "benchmark": [args.bench, *workload], "metric_regex": args.metric, "scale_to_us": args.scale,
                 "date": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
                 "command": " ".join(sys.argv), "sampling": sampling, "core": core,
                 "space_size": math.prod(len(d["values"]) for d in dims), "relocatable": relocatable,
                 "passes": args.passes, "default_anchors_us": anchors,
                 "nvcc_version": nvcc_version,
                 "gpu": {"name": setup.devices.device}, "arch": setup.devices.cuda_arch,
                 "tolerance": {"metric": f"the program's own check ({args.pass_regex})", "max": None},
                 "timing": "one sample = one run of the project's benchmark executable (its own metric) x scale",
                 "noise": noise(pairs)},
        "dimensions": dims, "default_code": keys.index(default_key),
        "points": [[*pt, keys.index(point_code[pt])] for pt in points],
        "codes": list(codes.values()),
    }
    out = Path(args.out)
    if args.dry_run:
        out = out.with_suffix(".dryrun.json")
    out.write_text(json.dumps(document, indent=1) + "\n")
    log(f"wrote {out}: {len(points)} points, {len(codes)} codes")


if __name__ == "__main__":
    main()
