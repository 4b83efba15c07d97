"""Screening that scales (unit tier, fake compiles): only units with kernels are screened, outcomes are
cached across tunes and trees (a header edit invalidates exactly its includers), the hottest files go
first, a time share cuts the screening and says so, and the cache takes two writers at once."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from compileiq_cmake.flags import load_space
from compileiq_cmake.flags.fingerprint import DeviceFingerprint, KernelFingerprint
from compileiq_cmake.flags.probe import CACHE_DIR_VARIABLE, user_cache_dir
from compileiq_cmake.flags.screen_cache import Outcome, ScreenCache, outcome_key
from compileiq_cmake.flags.screen_compile import ScreenTools
from compileiq_cmake.flags.screening import NOT_SCREENED, SAME_AS_BASELINE, screen

pytestmark = pytest.mark.unit

SPACE = load_space("nvcc", "NVIDIA", "13.0", include=("store_cache", "fmad", "prec_div"))
N_VALUES = sum(len(d.values) - 1 for d in SPACE.dimensions)  # 6: prec-div, fmad, 4 store-cache values


class FakeProject:
    """Three units: a.cu (kernel k_div, includes a.h and common.h), b.cu (kernel k_mul, common.h) and
    main.cpp (host code only, common.h). The fake compiler's device code follows simple rules per flag."""

    def __init__(self, tree: str = "/build/compileiq/worker-0") -> None:
        self.tree = tree
        self.files = {
            "/src/a.cu": "a1",
            "/src/b.cu": "b1",
            "/src/main.cpp": "m1",
            "/src/a.h": "ah1",
            "/src/common.h": "c1",
        }
        self.includes = {
            "/src/a.cu": ["/src/a.h", "/src/common.h"],
            "/src/b.cu": ["/src/common.h"],
            "/src/main.cpp": ["/src/common.h"],
        }
        self.kernels = {"/src/a.cu": ["_Z5k_divPf"], "/src/b.cu": ["_Z5k_mulPf"], "/src/main.cpp": []}
        self.compiled: list[tuple[str, tuple[str, ...]]] = []
        self.lock = threading.Lock()
        self.delay = 0.0

    def entries(self) -> list[dict]:
        return [
            {
                "directory": self.tree,
                "file": f,
                "arguments": [
                    "/usr/bin/nvcc",
                    f"-I{self.tree}/generated",
                    "-O3",
                    "-x",
                    "cu",
                    "-MD",
                    "-MT",
                    f"CMakeFiles/app.dir{f}.o",
                    "-MF",
                    f"CMakeFiles/app.dir{f}.o.d",
                    "-c",
                    f,
                    "-o",
                    f"CMakeFiles/app.dir{f}.o",
                ],
            }
            for f in ("/src/main.cpp", "/src/a.cu", "/src/b.cu")
        ]

    def _code(self, kernel: str, flags: tuple[str, ...]) -> str:
        flag = flags[0] if flags else ""
        if flag == "--fmad=false" or (flag == "--prec-div=false" and "div" in kernel):
            return f"{kernel}|{flag}"
        if flag in ("-Xptxas=-dscm=wt", "-Xptxas=-dscm=cg"):  # same code for both
            return f"{kernel}|dscm"
        return f"{kernel}|base"  # -dscm=wb, and prec-div on a kernel without a division: no change

    def compile(self, entry: dict, flags: tuple[str, ...], deadline: float | None) -> Outcome | None:
        if deadline is not None and time.perf_counter() >= deadline:
            return None
        time.sleep(self.delay)
        with self.lock:
            self.compiled.append((entry["file"], flags))
        if flags == ("-Xptxas=-dscm=cs",):
            return Outcome(None, "error: unsupported cache operator")
        return Outcome(
            DeviceFingerprint.of(
                [
                    KernelFingerprint(
                        name=f"sm_90:{k}",
                        sass_sha256=hashlib.sha256(self._code(k, flags).encode()).hexdigest(),
                        registers=16 + len(flags),
                    )
                    for k in self.kernels[entry["file"]]
                ]
            )
        )

    def inputs(self, entry: dict) -> str:
        f = entry["file"]
        return hashlib.sha256("|".join(self.files[p] for p in [f, *self.includes[f]]).encode()).hexdigest()

    def tools(self) -> ScreenTools:
        return ScreenTools(compile=self.compile, inputs=self.inputs, version="13.0.88")


def _screen(project: FakeProject, cache: ScreenCache | None, **kw):
    return screen(SPACE, project.entries(), "90", jobs=kw.pop("jobs", 4), cache=cache, tools=project.tools(), **kw)


def _rows(result) -> dict[str, tuple[bool, str]]:
    return {" ".join(r.value): (r.kept, r.reason) for r in result.rows}


def test_units_without_kernels_are_not_screened_and_said_in_one_line():
    project = FakeProject()
    r = _screen(project, None)
    # main.cpp: only its own build (to see it has no kernels); a.cu and b.cu: own build + every value
    assert sorted(f for f, flags in project.compiled if f == "/src/main.cpp") == ["/src/main.cpp"]
    assert r.compiles == 3 + 2 * N_VALUES and r.cache_hits == 0
    assert r.no_kernel_files == ("main.cpp",) and set(r.screened_files) == {"a.cu", "b.cu"}
    lines = [n for n in r.notes if "define no kernel" in n]
    assert lines == ["note: static screening: 1 file of 3 define no kernel and are not screened: main.cpp"]
    rows = _rows(r)
    assert rows["--prec-div=false"][0] and "1 function" in rows["--prec-div=false"][1]  # a.cu's k_div only
    assert rows["--fmad=false"] == (True, "changes the code of 2 functions")
    assert rows["-Xptxas=-dscm=wb"] == (False, SAME_AS_BASELINE)
    assert rows["-Xptxas=-dscm=cg"] == (False, "same device code as -Xptxas=-dscm=wt")
    assert rows["-Xptxas=-dscm=cs"][1] == "does not compile: error: unsupported cache operator"
    assert len(r.baseline.kernels) == 2 and r.unscreened == 0
    assert r.summary().startswith(f"{3 + 2 * N_VALUES} compiles, 0 cache hits, ")
    assert r.summary().endswith("; 2 files screened, 1 without kernels skipped")


def test_a_second_screening_compiles_nothing_and_a_header_edit_recompiles_exactly_its_includers(tmp_path: Path):
    cache = ScreenCache.in_dir(tmp_path / "cache")
    project = FakeProject()
    cold = _screen(project, cache)
    assert cold.compiles == 3 + 2 * N_VALUES
    project.compiled.clear()
    warm = _screen(project, ScreenCache.in_dir(tmp_path / "cache"))  # a second tune: a new handle on the file
    assert warm.compiles == 0 and project.compiled == []
    assert warm.cache_hits == 3 + 2 * N_VALUES  # every own build and every (unit, value) answered
    assert _rows(warm) == _rows(cold) and warm.baseline == cold.baseline
    assert [r.effects for r in warm.rows] == [r.effects for r in cold.rows]
    assert warm.no_kernel_files == ("main.cpp",)
    # a.h is included by a.cu only: a.cu's own build and its values compile again, nothing else
    project.files["/src/a.h"] = "ah2"
    edited = _screen(project, cache)
    assert {f for f, _ in project.compiled} == {"/src/a.cu"}
    assert edited.compiles == 1 + N_VALUES and edited.cache_hits == 2 + N_VALUES
    # common.h is included by every unit
    project.compiled.clear()
    project.files["/src/common.h"] = "c2"
    assert _screen(project, cache).compiles == 3 + 2 * N_VALUES
    # a different compiler version is a different key
    project.compiled.clear()
    other = screen(
        SPACE,
        project.entries(),
        "90",
        cache=cache,
        tools=ScreenTools(project.compile, project.inputs, version="13.1.0"),
    )
    assert other.compiles == 3 + 2 * N_VALUES


def test_the_cache_key_ignores_the_tree_and_output_paths_but_not_the_flags(tmp_path: Path):
    cache = ScreenCache.in_dir(tmp_path / "cache")
    assert _screen(FakeProject("/build/compileiq/worker-0"), cache).compiles == 3 + 2 * N_VALUES
    other_tree = FakeProject("/elsewhere/other-build/compileiq/worker-3")
    assert _screen(other_tree, cache).compiles == 0  # same code, another tree (its -I, -o, -MF paths differ)

    def key(cmd):
        return outcome_key(cmd, "/t", "13.0.88", "x")

    assert key(["nvcc", "-I/t/gen", "-O3", "k.cu"]) == outcome_key(
        ["nvcc", "-I/u/gen", "-O3", "k.cu"], "/u", "13.0.88", "x"
    )
    assert key(["nvcc", "-O3", "k.cu"]) != key(["nvcc", "-O2", "k.cu"])
    assert key(["nvcc", "-O3", "k.cu"]) != outcome_key(["nvcc", "-O3", "k.cu"], "/t", "13.0.88", "y")


def test_the_files_with_the_most_kernel_time_are_screened_first():
    project = FakeProject()
    _screen(project, None, jobs=1, kernel_ns={"_Z5k_mulPf": 900, "_Z5k_divPf": 100, "libkernel": 5000})
    order = [f for f, flags in project.compiled if flags]
    assert order == ["/src/b.cu"] * N_VALUES + ["/src/a.cu"] * N_VALUES
    project.compiled.clear()
    r = _screen(project, None, jobs=1, kernel_ns={"_Z5k_mulPf": 100, "_Z5k_divPf": 900})
    assert [f for f, flags in project.compiled if flags][0] == "/src/a.cu"
    assert any("most recorded kernel time first (a.cu, b.cu)" in n for n in r.notes)


def test_the_time_share_cut_leaves_values_unscreened_and_says_so(tmp_path: Path):
    project = FakeProject()
    none = _screen(project, None, seconds=0.0, seconds_label=", 10% of --time-limit 0 s")
    assert none.compiles == 0 and none.unscreened == N_VALUES and none.screened_files == ()
    assert none.summary().endswith(f"0 files screened, 0 without kernels skipped, {N_VALUES} values not screened")
    assert all(r.kept and r.reason == NOT_SCREENED and not r.screened for r in none.rows)
    assert none.space.size == SPACE.size  # every value is searched
    [line] = [n for n in none.notes if "time share" in n]
    assert line == (
        f"note: static screening stopped at its time share (0.0 s, 10% of --time-limit 0 s): "
        f"{N_VALUES} flag values not screened are searched unscreened"
    )
    # a cut half-way: b.cu (hot) done, a.cu (cold) not; values that changed b.cu are kept on that evidence
    cache = ScreenCache.in_dir(tmp_path / "cache")
    project.delay = 0.05
    part = _screen(project, cache, jobs=1, seconds=0.05 * (3 + N_VALUES) - 0.025, kernel_ns={"_Z5k_mulPf": 9})
    assert 0 < part.unscreened < N_VALUES and part.compiles < 3 + 2 * N_VALUES
    rows = {" ".join(r.value): r for r in part.rows}
    assert rows["--fmad=false"].kept and not rows["--fmad=false"].screened
    assert "screened on 1 of 2 files" in rows["--fmad=false"].reason
    assert rows["--prec-div=false"].reason == NOT_SCREENED  # changes only a.cu's kernel, not screened there
    # what was compiled is kept: the next screening finishes from there
    project.delay = 0.0
    project.compiled.clear()
    rest = _screen(project, cache)
    assert rest.cache_hits == part.compiles and rest.compiles == 3 + 2 * N_VALUES - part.compiles
    assert rest.unscreened == 0


_WRITER = """
import sys
from pathlib import Path
from compileiq_cmake.flags.fingerprint import DeviceFingerprint, KernelFingerprint
from compileiq_cmake.flags.screen_cache import Outcome, ScreenCache
cache = ScreenCache(Path(sys.argv[1]))
me = sys.argv[2]
for i in range(150):
    fp = DeviceFingerprint.of([KernelFingerprint(name=f"sm_90:k{i}", sass_sha256=me, registers=i)])
    cache.put_many({f"{me}-{i}": Outcome(fp), f"shared-{i}": Outcome(fp)})
"""


def test_the_cache_survives_two_concurrent_writers(tmp_path: Path):
    path = tmp_path / "cache" / "screen.sqlite"
    ScreenCache(path)
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name], stderr=subprocess.PIPE, text=True)
        for name in ("one", "two")
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    cache = ScreenCache(path)
    assert len(cache) == 3 * 150  # each writer's own records and the shared keys, none lost
    got = cache.get_many([f"one-{i}" for i in range(150)] + ["two-7", "shared-7"])
    assert len(got) == 152 and got["two-7"].fingerprint.kernels[0].sass_sha256 == "two"
    assert got["shared-7"].fingerprint.kernels[0].sass_sha256 in ("one", "two")  # one whole record
    assert got["one-9"].fingerprint.kernels[0].registers == 9


def test_the_user_cache_directory(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "mine"))
    assert user_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv(CACHE_DIR_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "compileiq"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "compileiq"
    # an unreadable record (another version's) is not an answer: compiled again
    cache = ScreenCache(tmp_path / "c.sqlite")
    import sqlite3

    with sqlite3.connect(cache.path) as db:
        db.execute("INSERT INTO outcome VALUES ('k', '{\"kernels\": [[1]]}')")
    assert cache.get_many(["k"]) == {}


def test_a_unit_whose_includes_cannot_be_listed_is_compiled_every_time_and_said(tmp_path: Path):
    project = FakeProject()
    scanned = project.inputs
    tools = ScreenTools(project.compile, lambda e: None if e["file"] == "/src/b.cu" else scanned(e), "13.0.88")
    cache = ScreenCache.in_dir(tmp_path / "cache")
    first = screen(SPACE, project.entries(), "90", cache=cache, tools=tools)
    second = screen(SPACE, project.entries(), "90", cache=cache, tools=tools)
    assert first.compiles == 3 + 2 * N_VALUES and second.compiles == 1 + N_VALUES  # b.cu's, never stored
    assert (
        "note: the screening cache leaves out 1 file whose includes could not be listed (the compiler's -M "
        "scan failed): b.cu"
    ) in second.notes


def test_a_units_dependency_scan_is_remembered_until_one_of_its_files_changes(tmp_path: Path):
    """InputHasher with a fake compiler (a script answering -M with a make rule, counting its runs)."""
    from compileiq_cmake.flags.screen_cache import InputHasher

    (tmp_path / "k.cu").write_text("kernel\n")
    (tmp_path / "k.h").write_text("header 1\n")
    runs = tmp_path / "runs"
    cc = tmp_path / "fakecc"
    cc.write_text(f"#!/bin/sh\necho run >> {runs}\necho 'k.o: k.cu k.h'\n")
    cc.chmod(0o755)
    entry = {"directory": str(tmp_path), "file": "k.cu", "arguments": [str(cc), "-c", "k.cu", "-o", "k.o"]}
    cache = ScreenCache.in_dir(tmp_path / "cache")
    first = InputHasher(cache).digest(entry)
    assert first and runs.read_text().count("run") == 1
    assert InputHasher(cache).digest(entry) == first and runs.read_text().count("run") == 1  # no scan, no read
    (tmp_path / "k.h").write_text("header 2, longer\n")
    edited = InputHasher(cache).digest(entry)
    assert edited != first and runs.read_text().count("run") == 2
    assert InputHasher(None).digest(entry) == edited and runs.read_text().count("run") == 3  # without a store: scans


def test_the_tune_reads_recorded_kernel_times_for_the_screening_order(tmp_path: Path):
    from compileiq_cmake.measure.kernel_times import HEADER
    from compileiq_cmake.tune.setup_space import _recorded_kernel_ns

    path = tmp_path / "cupti" / "kernel-times.tsv"
    assert _recorded_kernel_ns(path) == {}  # no earlier tune recorded any
    path.parent.mkdir()
    path.write_text(f"{HEADER}\n3\t900\t_Z5k_mulPf\n1\t100\t_Z5k_divPf\n")
    assert _recorded_kernel_ns(path) == {"_Z5k_mulPf": 900, "_Z5k_divPf": 100}
    path.write_text("not a kernel-times file\n")
    assert _recorded_kernel_ns(path) == {}
