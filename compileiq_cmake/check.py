"""`compileiq-cmake check` for CI: is a committed compileiq.toml still right for this build?

1. The file is validated (a bad file: one line, exit 2).
2. Applies / stale: a scratch configure of the project with the user's cache settings and the file applied
   through compileiq_apply.cmake; the CMake apply logic itself records, per entry, whether it applied and why
   not (target, architecture, compiler, build type) and whether it is stale (sources or compiler patch
   version changed since the tune), in COMPILEIQ_CHECK_FILE. No second copy of those rules here.
3. --remeasure: that tree (tuned) and one without the file (plain) are built, and the benchmark runs
   interleaved (plain/tuned alternating, the order flipped every round) on each entry's workloads. An entry
   passes when no workload is significantly slower and the geometric-mean speedup is significantly above
   1 + min gain (default: from the plain build's noise, as a tune decides). Exit 1 when one does not.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .bench import run_benchmark
from .cmake_project import find_cmake, forwarded_cache, initial_cache_script, read_cache
from .errors import CompileIQError
from .file_api import read_codemodel, write_query
from .records import Status
from .resources import cmake_dir
from .result_file import FlagsEntry, read_entries
from .spec import MetricSpec
from .stats import auto_min_gain, compare_paired, geomean_comparison, relative_spread


@dataclass
class WorkloadResult:
    workload: str
    plain: list[float]
    tuned: list[float]
    speedup: float
    ci: tuple[float, float]
    p_value: float


@dataclass
class EntryCheck:
    target: str
    arch: str
    flags: list[str]
    applies: bool
    why: str  # the apply's own line: what it did or why not
    stale: list[str] = field(default_factory=list)  # why the entry may be out of date
    cpu: str = ""  # host-specific flags: the CPU tuned on and whether this host has its ISA features
    archs: str = ""  # CUDA: the measured and the unmeasured architectures the target builds
    remeasure: dict | None = None  # {speedup, ci, min_gain, passed, reason, workloads: [WorkloadResult]}


def _configure(source_dir: Path, tree: Path, cache: dict[str, tuple[str, str]], generator: str, cmake: str,
               toml: Path, apply: bool, record: Path | None) -> None:
    tree.mkdir(parents=True, exist_ok=True)
    init = tree / "compileiq_check_cache.cmake"
    init.write_text(initial_cache_script(cache))
    write_query(tree)
    cmd = [cmake, "-S", str(source_dir), "-B", str(tree), "-G", generator, "-C", str(init),
           f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}",
           f"-Dcompileiq_cmake_DIR={cmake_dir()}", f"-DCOMPILEIQ_FLAGS_FILE={toml}",
           f"-DCOMPILEIQ_APPLY={'ON' if apply else 'OFF'}", "-DCOMPILEIQ_TUNE=OFF", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"]
    if record is not None:
        record.unlink(missing_ok=True)
        cmd.append(f"-DCOMPILEIQ_CHECK_FILE={record}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise CompileIQError(f"configuring {source_dir} into {tree} failed (exit {proc.returncode}):\n{tail}")


def _records(path: Path) -> dict[tuple[str, str], dict]:
    """What the apply recorded per (target, arch): applies, why, stale reasons."""
    out: dict[tuple[str, str], dict] = {}
    for line in path.read_text().splitlines() if path.is_file() else ():
        target, arch, status, text = (line.split("\t", 3) + ["", "", "", ""])[:4]
        rec = out.setdefault((target, arch), {"applies": False, "why": "", "stale": [], "cpu": "", "archs": ""})
        if status == "applied":
            rec.update(applies=True, why=text)
        elif status == "stale":
            rec["stale"].append(text)
        elif status in ("cpu", "archs"):
            rec[status] = text
        elif status == "sources":
            rec["why"] += f"; {text}"
        else:
            rec.update(applies=False, why=text)
    return out


def _benchmark_argv(argv: list[str], tree: Path) -> list[str]:
    """The benchmark command in one tree: a first word that names a target of the project is its binary there."""
    model = read_codemodel(tree)
    target = model.targets.get(argv[0])
    if target is not None and target.artifacts:
        return [str(target.artifacts[0]), *argv[1:]]
    return argv


def _remeasure(entry: FlagsEntry, plain: Path, tuned: Path, bench: list[str], pass_regex: str | None,
               rounds: int, min_gain: float | None, timeout: float) -> dict:
    metric = MetricSpec.parse(entry.metric, entry.lower_is_better)
    workloads = list(entry.workloads) or [""]
    argv = {"plain": _benchmark_argv(bench, plain), "tuned": _benchmark_argv(bench, tuned)}
    results = []
    for w in workloads:
        samples: dict[str, list[float]] = {"plain": [], "tuned": []}
        for r in range(rounds):
            for which in (("plain", "tuned") if r % 2 == 0 else ("tuned", "plain")):
                tree = plain if which == "plain" else tuned
                out = run_benchmark(argv[which] + shlex.split(w), tree, metric, pass_regex, timeout)
                if out.status is not Status.OK:
                    raise CompileIQError(f"the {which} build's benchmark failed on workload '{w}': {out.reason}; "
                                         f"last output line: {out.last_line()}")
                samples[which].append(out.value)
        cmp = compare_paired(samples["plain"], samples["tuned"], entry.lower_is_better)
        results.append((w, samples, cmp))
    speedup, ci = geomean_comparison([c for _, _, c in results])
    gain = min_gain if min_gain is not None else auto_min_gain(max(relative_spread(s["plain"]) for _, s, _ in results))
    slower = [w for w, _, c in results if c.slower()]
    if slower:
        passed, reason = False, f"significantly slower than the plain build on {', '.join(repr(w) for w in slower)}"
    elif not (ci.low > 1.0 and speedup >= 1.0 + gain):
        passed, reason = False, (f"not significantly faster than the plain build by the minimum gain of {100 * gain:.2f}% "
                                 f"({speedup:.4f}x [{ci.low:.4f}..{ci.high:.4f}])")
    else:
        passed, reason = True, f"{speedup:.4f}x [{ci.low:.4f}..{ci.high:.4f}] >= 1 + {100 * gain:.2f}%"
    return {"speedup": speedup, "ci": [ci.low, ci.high], "min_gain": gain, "passed": passed, "reason": reason,
            "rounds": rounds,
            "workloads": [asdict(WorkloadResult(w, s["plain"], s["tuned"], c.speedup, (c.ci.low, c.ci.high), c.p_value))
                          for w, s, c in results]}


def run_check(toml: Path, source_dir: Path, build_dir: Path, *, remeasure: bool = False, bench: str | None = None,
              pass_regex: str | None = None, rounds: int = 9, min_gain: float | None = None,
              timeout: float = 300.0, jobs: int | None = None) -> list[EntryCheck]:
    if not (source_dir / "CMakeLists.txt").is_file():
        raise CompileIQError(f"{source_dir} has no CMakeLists.txt; pass the project root with -S")
    if not (build_dir / "CMakeCache.txt").is_file():
        raise CompileIQError(f"{build_dir} is not a configured build tree (no CMakeCache.txt); configure it first "
                             "(cmake -S src -B build -DCMAKE_BUILD_TYPE=Release) and pass it with -B")
    if remeasure and not bench:
        raise CompileIQError("--remeasure needs the benchmark command: --bench 'program args' (its first word may be "
                             "a target of the project)")
    if rounds < 3:
        raise CompileIQError(f"--rounds {rounds} is too few for a paired test: give at least 3")
    if min_gain is not None and not (math.isfinite(min_gain) and 0 <= min_gain < 1):
        raise CompileIQError(f"--min-gain {min_gain:g} is out of range: give a fraction such as 0.01 (1%)")
    toml = toml.resolve()
    entries = read_entries(toml)  # validated: a bad file is one line, exit 2
    user = read_cache(build_dir)
    cache = forwarded_cache(user, keep=frozenset({"CMAKE_CUDA_ARCHITECTURES"}))  # this build's, as it is
    generator = user.get("CMAKE_GENERATOR", ("", "Unix Makefiles"))[1]
    cmake = find_cmake(user)
    root = build_dir / "compileiq" / "check"
    record = root / "applied.tsv"
    _configure(source_dir, root / "tuned", cache, generator, cmake, toml, True, record)
    recorded = _records(record)
    checks = []
    for e in entries:
        rec = recorded.get((e.target, e.arch)) or recorded.get((e.target, ""))
        checks.append(EntryCheck(e.target, e.arch, list(e.flags), bool(rec and rec["applies"]),
                                 rec["why"] if rec else "not looked at by the apply (its language is not enabled?)",
                                 rec["stale"] if rec else [],
                                 rec["cpu"] if rec else (f"tuned on {e.tuned_cpu}" if e.tuned_cpu else ""),
                                 rec["archs"] if rec else ""))
    if remeasure and any(c.applies for c in checks):
        _configure(source_dir, root / "plain", cache, generator, cmake, toml, False, None)
        for tree in (root / "plain", root / "tuned"):
            proc = subprocess.run([cmake, "--build", str(tree), "-j", str(jobs or os.cpu_count() or 2)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
                raise CompileIQError(f"building {tree} failed (exit {proc.returncode}):\n{tail}")
        argv = shlex.split(bench)
        for c, e in zip(checks, entries):
            if c.applies:
                c.remeasure = _remeasure(e, root / "plain", root / "tuned", argv, pass_regex, rounds, min_gain, timeout)
    return checks


def print_checks(checks: list[EntryCheck], as_json: bool) -> int:
    """The report on stdout; the exit status: 1 when a re-measured entry failed, else 0."""
    failed = any(c.remeasure is not None and not c.remeasure["passed"] for c in checks)
    if as_json:
        print(json.dumps({"passed": not failed, "entries": [asdict(c) for c in checks]}, indent=1))
        return 1 if failed else 0
    for c in checks:
        where = f"{c.target} (sm_{c.arch})" if c.arch else c.target
        print(f"compileiq: {where}: {'applies' if c.applies else 'does not apply'}: {c.why}")
        for s in c.stale:
            print(f"compileiq: {where}: stale: {s}")
        if c.cpu:
            print(f"compileiq: {where}: cpu: {c.cpu}")
        if c.archs:
            print(f"compileiq: {where}: architectures: {c.archs}")
        if c.remeasure is not None:
            r = c.remeasure
            per = ", ".join(f"'{w['workload']}' {w['speedup']:.4f}x [{w['ci'][0]:.4f}..{w['ci'][1]:.4f}]" for w in r["workloads"])
            print(f"compileiq: {where}: re-measured ({r['rounds']} interleaved rounds): {per}; "
                  f"{'PASS' if r['passed'] else 'FAIL'}: {r['reason']}")
    return 1 if failed else 0
