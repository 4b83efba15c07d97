"""Static screening of tests/projects/many_tu (20 CUDA units: 19 kernel files and a host-only main.cu) with the
default nvcc space for sm_90 (or --include's dimensions): cold (empty screening cache), warm (a second tune:
another tree, then the same tree), after one source edit, and cold with a time share (--share seconds). Prints one line per run; the numbers of docs/design.md (Screening and fingerprints).

Run from the repository root on a machine with nvcc and cuobjdump:
    PYTHONPATH=$PWD python3 benchmarks/device/h200_screen_cache.py [--include store_cache,fmad,prec_div] [--share 40]"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from compileiq_cmake.flags import load_space
from compileiq_cmake.flags.screen_cache import ScreenCache
from compileiq_cmake.flags.screening import screen

ROOT = Path(__file__).resolve().parents[2]  # benchmarks/device/ -> the repository


def entries(src: Path, build: Path) -> list[dict]:
    build.mkdir(parents=True, exist_ok=True)
    nvcc = shutil.which("nvcc") or "nvcc"
    out = []
    for cu in sorted((src / "src").glob("*.cu")):
        obj = f"CMakeFiles/many_bench.dir/src/{cu.name}.o"
        out.append({"directory": str(build), "file": str(cu), "arguments": [
            nvcc, f"-I{src}/include", f"-I{src.parent}/common", "-O3", "-DNDEBUG", "-std=c++17", "--generate-code=arch=compute_90,code=[sm_90]",
            "-MD", "-MT", obj, "-MF", f"{obj}.d", "-x", "cu", "-c", str(cu), "-o", obj]})
    return out


def report(label: str, r, n_units: int, n_values: int) -> None:
    print(f"{label}: {r.summary()}; kept {sum(1 for row in r.rows if row.kept)} of {len(r.rows)} values; "
          f"unscreened {r.unscreened}; without the kernel filter and cache: {(n_values + 1) * n_units} compiles",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--include", default="", help="flag dimensions to screen (default: the whole space)")
    parser.add_argument("--share", default="5", help="seconds of the time-share run")
    parser.add_argument("--only-share", action="store_true", help="the time-share run only")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="screen-bench-"))
    src = tmp / "many_tu"
    shutil.copytree(ROOT / "tests" / "projects" / "many_tu", src)
    shutil.copytree(ROOT / "tests" / "projects" / "common", tmp / "common")  # the shared bench.h
    space = load_space("nvcc", "NVIDIA", "13.0", include=tuple(n for n in args.include.split(",") if n), arch="90")
    n_values = sum(len(d.values) - 1 for d in space.dimensions)
    jobs = os.cpu_count()
    print(f"many_tu: 20 units, {n_values} flag values, {jobs} jobs", flush=True)
    cache = ScreenCache.in_dir(tmp / "cache")
    units = entries(src, tmp / "build")
    if args.only_share:
        shared = ScreenCache.in_dir(tmp / "cache2")
        report(f"cold, {args.share} s time share", screen(space, units, "90", jobs=jobs, cache=shared,
                                                          seconds=float(args.share)), len(units), n_values)
        shutil.rmtree(tmp, ignore_errors=True)
        return
    report("cold", screen(space, units, "90", jobs=jobs, cache=cache), len(units), n_values)
    report("warm (second tune, other tree)", screen(space, entries(src, tmp / "other"), "90", jobs=jobs,
                                                    cache=ScreenCache.in_dir(tmp / "cache")), len(units), n_values)
    report("warm (same tree)", screen(space, units, "90", jobs=jobs, cache=cache), len(units), n_values)
    k05 = src / "src" / "k05.cu"
    k05.write_text(k05.read_text().replace("tanhf(x - t)", "tanhf(x - 0.5f * t)"))
    report("after editing k05.cu", screen(space, units, "90", jobs=jobs, cache=cache), len(units), n_values)
    share = float(args.share)
    report(f"cold, {share:g} s time share", screen(space, units, "90", jobs=jobs, cache=ScreenCache.in_dir(tmp / "cache2"),
                                                   seconds=share), len(units), n_values)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
