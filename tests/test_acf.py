"""NVIDIA Advanced Controls (issue 50): the dimension through a candidate source's interface (a fake one here:
compileiq and its search spaces are not on CI), every "not offered" line, the adapter's own lines when
compileiq cannot give candidates, and that the repository holds no NVIDIA binary (search space or ACF)."""

from __future__ import annotations

import gzip
import hashlib
import io
import subprocess
import sys
import tarfile
import types
from pathlib import Path

import pytest

from compileiq_cmake.flags import acf as acf_mod
from compileiq_cmake.flags import acf_compileiq
from compileiq_cmake.flags.acf import AcfRequest, Situation, acf_dimension, gather, why_not_offered
from compileiq_cmake.flags.space import load_space, validate_flags
from compileiq_cmake.model.errors import CompileIQError

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[1]


class FakeSource:
    """A candidate source as the interface says: deterministic bytes, a label, ask/tell recorded."""

    label = "a fake space"
    kind = "ptxas"

    def __init__(self, *_args) -> None:
        self.told: list[dict[bytes, float]] = []
        self.asked = 0

    def sample(self, n: int) -> list[bytes]:
        return [b"fake-controls-%d" % (i % 5) for i in range(n)]  # 5 distinct: duplicates are stored once

    def ask(self, n: int) -> list[bytes]:
        self.asked += 1
        return [b"asked-%d" % i for i in range(n)]

    def tell(self, scores: dict[bytes, float]) -> None:
        self.told.append(scores)


OK = Situation(ptxas_version="13.3.73", arch="90", driver_cuda="13.3", sass_archs=("90",))


def test_the_dimension_is_none_plus_distinct_candidates_stored_by_content(tmp_path):
    source = FakeSource()
    got = gather(AcfRequest(files=(), candidates=8), OK, tmp_path / "acf", lambda *a: source)
    assert len(got.files) == 8 and len({f.sha256 for f in got.files}) == 5 and got.source is source
    for f in got.files:
        assert f.path == (tmp_path / "acf" / f"{f.sha256}.acf").resolve()
        assert hashlib.sha256(f.path.read_bytes()).hexdigest() == f.sha256
    assert "5 candidates sampled from a fake space" in got.notes[0]
    space = acf_dimension(load_space("nvcc", "NVIDIA", "13.3"), list(got.files))
    dim = space.dimensions[-1]
    assert dim.name == "apply_controls" and dim.values[0] == () and len(dim.values) == 6
    assert all(v[0].startswith("-Xptxas=--apply-controls=/") for v in dim.values[1:])
    validate_flags("nvcc", [v[0] for v in dim.values[1:]])  # the grammar knows the token


def test_user_files_join_the_sample_and_are_copied_into_the_state(tmp_path):
    mine = tmp_path / "mine.acf"
    mine.write_bytes(b"my own controls")
    got = gather(AcfRequest(files=(mine,), candidates=2), OK, tmp_path / "acf", FakeSource)
    assert got.files[0].origin == f"--acf {mine}" and got.files[0].path.parent == (tmp_path / "acf").resolve()
    assert "and 1 --acf file(s)" in got.notes[0]
    mine.write_bytes(b"edited later")  # the stored copy is what the trials used
    assert got.files[0].path.read_bytes() == b"my own controls"


def test_nothing_asked_nothing_said(tmp_path):
    assert gather(AcfRequest(candidates=0), OK, tmp_path, FakeSource).notes == ()


@pytest.mark.parametrize(
    ("situation", "words"),
    [
        (
            Situation("13.0.88", "90"),
            "ptxas 13.0.88 has no Advanced Controls (CUDA 13.3 and newer): `compileiq-cmake toolkit 13.3`",
        ),
        (Situation("13.3.73", "90", kind="nvcc"), "nvcc-type controls (--acf-space nvcc) run on sm_100 and newer only"),
        (
            Situation("13.3.73", "90", driver_cuda="13.0", sass_archs=("80", "90-virtual")),
            "the driver supports CUDA 13.0, older than the toolkit's 13.3.73, and the target carries no SASS for sm_90",
        ),
    ],
)
def test_every_not_offered_line(tmp_path, situation, words):
    assert words in why_not_offered(situation)
    got = gather(AcfRequest(files=(), candidates=4), situation, tmp_path, FakeSource)
    assert got.files == () and len(got.notes) == 1
    assert got.notes[0].startswith("note: advanced controls (ACF) not offered: ") and words in got.notes[0]
    assert not (tmp_path / "acf").exists()


@pytest.mark.parametrize(
    "situation",
    [
        Situation("13.3.73", "90", driver_cuda="13.0", sass_archs=("90-real",)),
        Situation("13.3.73", "90", driver_cuda="13.0", sass_archs=("all-major",)),
        Situation("13.3.73", "90", driver_cuda=""),  # unknown driver: not refused for it
        Situation("13.3.73", "100", kind="nvcc"),
    ],
)
def test_offered_where_it_can_work(situation):
    assert why_not_offered(situation) == ""


def test_compileiq_not_importable_is_one_line_with_how(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "compileiq", None)
    monkeypatch.setitem(sys.modules, "compileiq.ciq", None)
    got = gather(AcfRequest(candidates=4), OK, tmp_path, acf_compileiq.compileiq_source)
    assert got.files == () and len(got.notes) == 1
    assert "no candidates sampled: compileiq is not importable" in got.notes[0]
    assert "pip install 'compileiq-cmake[acf]'" in got.notes[0]


def _fake_compileiq(monkeypatch, retrieve):
    """A stand-in for the compileiq package's surface the adapter uses (not its code)."""
    provider = type(
        "Provider",
        (),
        {"__init__": lambda self, version, variant: None, "retrieve": retrieve, "resolution_metadata": None},
    )
    compilers = types.SimpleNamespace(PtxasSearchSpace=provider, NvccSearchSpace=provider)
    for name, module in (
        ("compileiq", types.ModuleType("compileiq")),
        ("compileiq.ciq", types.ModuleType("ciq")),
        ("compileiq.search_spaces", types.SimpleNamespace(compilers=compilers)),
        ("compileiq.types", types.ModuleType("types")),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    sys.modules["compileiq"].types = sys.modules["compileiq.types"]


def test_search_space_not_found_offline_says_which_folder(tmp_path, monkeypatch):
    def missing(self):
        raise FileNotFoundError("CIQ_SEARCH_SPACES_DIR=/x but manifest.json is missing.")

    _fake_compileiq(monkeypatch, missing)
    monkeypatch.setenv("CIQ_SEARCH_SPACES_DIR", str(tmp_path / "spaces"))
    got = gather(AcfRequest(candidates=4), OK, tmp_path, acf_compileiq.compileiq_source)
    assert len(got.notes) == 1 and "no CompileIQ search space for ptxas 13.3 (default)" in got.notes[0]
    assert f"CIQ_SEARCH_SPACES_DIR={tmp_path / 'spaces'} holds no usable ptxas 13.3 'default' space" in got.notes[0]
    monkeypatch.delenv("CIQ_SEARCH_SPACES_DIR")
    got = gather(AcfRequest(candidates=4), OK, tmp_path, acf_compileiq.compileiq_source)
    assert "could not download it (no network?); offline, point CIQ_SEARCH_SPACES_DIR" in got.notes[0]


def test_the_engine_is_told_losses_and_compileiqs_failure_mark_for_what_failed_or_was_not_measured(monkeypatch):
    """CompileIQSource: the first candidates are wide samples of the space; tell: a measured file's loss as it
    is; an invalid one (infinite loss) and one asked but not measured get compileiq's own failure mark "*"
    (its engine replaces such a candidate), not a number that would rank as a real, very slow result."""
    _fake_compileiq(monkeypatch, lambda self: None)
    told: list = []

    class Candidate:
        def __init__(self, pid: int, data: bytes) -> None:
            self.param_id, self.params = pid, data.hex()

    class Search:
        def __init__(self, **kwargs) -> None:
            pass

        def ask(self):
            return [Candidate(i, bytes([i + 1]) * 4) for i in range(3)]

        def tell(self, rows):
            told.extend(rows)

        def sample(self, n):
            return [bytes([200 + i]).hex() for i in range(n)]

    class Score:
        def __init__(self, score, param_id, num_objectives):
            self.score, self.param_id = score, param_id

    sys.modules["compileiq.ciq"].Search = Search
    sys.modules["compileiq.types"].SearchConfiguration = lambda **kw: kw
    sys.modules["compileiq.types"].WorkerTypes = types.SimpleNamespace(MANUAL="manual")
    monkeypatch.setitem(sys.modules, "compileiq.utils", types.ModuleType("utils"))
    monkeypatch.setitem(sys.modules, "compileiq.utils.validation", types.SimpleNamespace(Score=Score))
    source = acf_compileiq.compileiq_source("13.3.73", "default", "ptxas", 16)
    assert source.sample(2) == [bytes([200]), bytes([201])]  # wide samples, not the engine's generation
    source.tell({bytes([200]): -0.1})  # nothing the engine asked: nothing told
    assert told == []
    a, b, c = source.ask(16)
    source.tell({a: -0.05, b: float("inf")})
    assert {r.param_id: r.score for r in told} == {0: -0.05, 1: "*", 2: "*"}


def test_bad_acf_options_are_one_line_exit_2(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text("project(p)\n")
    base = [
        sys.executable,
        "-m",
        "compileiq_cmake",
        "tune",
        "-S",
        str(tmp_path),
        "-B",
        str(tmp_path / "b"),
        "--target",
        "t",
        "--bench",
        "true",
        "--metric",
        "WALLTIME",
    ]
    for extra, words in (
        (["--acf-candidates", "-1"], "--acf-candidates -1 is out of range"),
        (["--acf", str(tmp_path / "none.acf")], "is not a file"),
        (["--acf-space", "big"], "invalid choice"),
    ):
        proc = subprocess.run(base + extra, capture_output=True, text=True, cwd=ROOT)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and not (tmp_path / "b").exists()


def test_toolkit_version_is_checked_before_anything_is_installed(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", "toolkit", "13", "--prefix", str(tmp_path / "k")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "give major.minor such as 13.3" in proc.stderr
    assert not (tmp_path / "k").exists()


def test_toolkit_repair_links_the_unversioned_cudart(tmp_path):
    from compileiq_cmake.flags.toolkit import repair, requirement

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libcudart.so.13").write_bytes(b"")
    assert repair(tmp_path) == [f"{lib / 'libcudart.so'} -> libcudart.so.13"]
    assert (lib / "libcudart.so").resolve() == (lib / "libcudart.so.13").resolve() and repair(tmp_path) == []
    assert requirement("13.3") == "cuda-toolkit[nvcc,cccl,cuobjdump,nvdisasm]==13.3.*"
    assert requirement("13.3.1").endswith("==13.3.1")


# NVIDIA's search spaces (public sha256 of the files in NVIDIA/CompileIQ's history): never in this repository
SEARCH_SPACE_SHA256 = {
    "edae9fe3c0a11f2c5fede8a1949a7dad325908ef478c34b32c46e87c447ed312",  # ptxas 13.3 default
    "4d1b45681194625db287a49ac78b85b1331293d576ecee944d771ebeca214f07",  # ptxas 13.3 att
    "285cf10494298126fa8004eda237bddd40a18c883efea9276a67551b781a4b4a",  # nvcc 13.3
}
KNOWN_BINARY = (b"\x89PNG", b"SQLite format 3", b"\x1f\x8b")


def _text(data: bytes) -> bool:
    return b"\x00" not in data[:8192]


def _problem(name: str, data: bytes) -> str:
    """Why a tracked file may be an NVIDIA binary ("" when it is text or a known container of text)."""
    if name.endswith((".acf", ".bin")):
        return "has an ACF or search-space suffix"
    if hashlib.sha256(data).hexdigest() in SEARCH_SPACE_SHA256:
        return "is one of NVIDIA's search spaces"
    if not data or _text(data) or data.startswith(KNOWN_BINARY[:2]):
        return ""
    if data.startswith(b"\x1f\x8b"):
        inner = gzip.decompress(data)
        if _text(inner):
            return ""
        with tarfile.open(fileobj=io.BytesIO(inner)) as tar:
            for member in tar.getmembers():
                body = tar.extractfile(member)
                why = _problem(member.name, body.read()) if body else ""
                if why:
                    return f"holds {member.name}, which {why}"
        return ""
    return "is an unknown binary (not text, PNG, SQLite or gzip)"


def test_the_repository_holds_no_nvidia_binary():
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    bad = []
    for name in filter(None, (n.decode() for n in names)):
        path = ROOT / name
        if path.is_file() and not path.is_symlink():
            why = _problem(name, path.read_bytes())
            if why:
                bad.append(f"{name} {why}")
    assert not bad, bad
    assert _problem("x.acf", b"") and _problem("blob", bytes(range(256)))  # the rule can fail


def test_fake_source_is_interchangeable_with_the_real_one():
    for name in ("sample", "ask", "tell"):
        assert callable(getattr(acf_compileiq.CompileIQSource, name)) and callable(getattr(FakeSource, name))
    assert acf_mod.DEFAULT_CANDIDATES == 16


def test_an_empty_candidate_is_refused(tmp_path):
    with pytest.raises(CompileIQError, match="empty advanced control file"):
        acf_mod.store(b"", tmp_path, "sample")


def test_people_read_a_control_file_by_its_short_sha():
    from compileiq_cmake.model import build_flags

    flag = "-Xptxas=--apply-controls=/tree/compileiq/acf/" + "ab" * 32 + ".acf"
    assert build_flags.describe(("--use_fast_math", flag)) == "--use_fast_math ACF abababababab"
    assert build_flags.shown("--apply-controls=controls/mine.acf") == "--apply-controls=controls/mine.acf"


def test_the_engine_is_told_the_measurements_and_its_next_generations_join_the_search(tmp_path):
    """CompileIQ's ask/tell as one more proposal source (tune.acf_engine): once every control file so far is
    measured, the source is told each file's best loss and its next generation becomes values of the
    dimension, which the search then measures; at most GENERATIONS times (a fake source: its interface)."""
    import types as _types

    from compileiq_cmake.flags.space import Dimension, FlagSpace
    from compileiq_cmake.search.search import FlagSearch
    from compileiq_cmake.tune.acf_engine import GENERATIONS, AcfEngine

    source = FakeSource()
    got = gather(AcfRequest(candidates=5), OK, tmp_path / "acf", lambda *a: source)
    space = acf_dimension(FlagSpace("nvcc", (Dimension("opt", "", ((), ("-Xptxas=-O1",))),)), list(got.files))
    search = FlagSearch(space, budget=60, seed=3, workers=1)
    lines: list[str] = []
    engine = AcfEngine.of(got, lines.append)

    def measured(fs) -> float:  # an engine candidate 3% faster, a sampled one 1% faster, -O1 neutral
        text = " ".join(Path(f.split("=")[-1]).read_bytes().decode() for f in fs.flags if "apply-controls" in f)
        return -0.03 if "asked" in text else (-0.01 if text else 0.0)

    trials, seen = {}, []
    while (fs := search.ask()) is not None and len(trials) < 60:
        loss = measured(fs)
        search.tell(fs, loss)
        trials[fs.key] = _types.SimpleNamespace(flagset=fs, valid=True, loss=loss)
        seen.append(fs)
        engine.after(search, trials, lambda t: t.loss)
    assert source.asked == GENERATIONS and len(source.told) == GENERATIONS
    assert set(map(bytes, source.told[0])) == {b"fake-controls-%d" % i for i in range(5)}
    assert all(-0.011 < v < -0.009 for v in source.told[0].values())
    assert any(-0.031 < v < -0.029 for v in source.told[1].values())  # the engine's own, told back
    dim = search.space.dimensions[-1]
    assert len(dim.values) == 1 + 5 + 5  # "asked-0..4" each generation: the same bytes are one value
    asked = [fs for fs in seen if measured(fs) == -0.03]
    assert asked and seen.index(asked[0]) < len(seen) - 1
    assert sum("engine was told 5 measured control files (5 faster" in line for line in lines) == 1, lines


def test_what_each_control_file_changed_is_kept_from_the_screening_and_counted(tmp_path):
    import types as _types

    from compileiq_cmake.flags.screening import KernelDelta, ScreenRow, _acf_screened

    got = gather(AcfRequest(candidates=3), OK, tmp_path, FakeSource)
    a, b, c = got.files
    rows = (
        ScreenRow(
            "apply_controls",
            (a.token,),
            True,
            "changes the code of 1 function",
            (KernelDelta("k:spill", (128, 168), (204, 0), (832, 900)),),
        ),
        ScreenRow("apply_controls", (b.token,), False, "same device code as " + a.token),
        ScreenRow("apply_controls", (c.token,), False, "does not compile: ptxas crashed (SIGFPE)"),
        ScreenRow("fmad", ("--fmad=false",), True, "changes the code of 1 function"),
    )
    screened, line = _acf_screened(got, _types.SimpleNamespace(rows=rows))
    assert screened.changed(a.sha256) == "spill: regs 128->168, spills 204->0 B, instrs 832->900"
    assert line == (
        "advanced controls (ACF): 1 of 3 control files kept after screening (1 with the code of the "
        "project's own build or of another, 1 that ptxas refused or crashed on)"
    )


def test_control_files_that_cut_spills_are_measured_first_fewestspills_first(tmp_path):
    import types as _types

    from compileiq_cmake.flags.screening import KernelDelta, ScreenRow, spills_first
    from compileiq_cmake.flags.space import Dimension, FlagSpace
    from compileiq_cmake.search.search import FlagSearch

    got = gather(AcfRequest(candidates=5), OK, tmp_path, FakeSource)
    space = acf_dimension(FlagSpace("nvcc", (Dimension("opt", "", ((), ("-Xptxas=-O1",))),)), list(got.files))
    values = space.dimensions[-1].values[1:]
    after = (300, 0, 204, 100, None)  # spill bytes with each file (baseline 204); None: no change screened
    rows = tuple(
        ScreenRow(
            "apply_controls",
            v,
            True,
            "changes the code",
            (KernelDelta("k:spill", (128, 128), (204, s), (832, 830)),) if s is not None else (),
        )
        for v, s in zip(values, after, strict=False)
    )
    ordered, leading = spills_first(space, _types.SimpleNamespace(rows=rows))
    dim = ordered.dimensions[-1]
    assert leading == 2 and dim.leading == 2 and dim.values[1:3] == (values[1], values[3])
    assert set(dim.values[1:]) == set(values)
    search = FlagSearch(ordered, budget=40, seed=7, workers=1)
    first = [search.ask() for _ in range(2)]
    assert [fs.flags for fs in first] == [values[1], values[3]]


def test_the_engine_waits_for_a_measured_control_file_and_a_refusal_is_said_once(tmp_path):
    import types as _types

    from compileiq_cmake.flags.space import Dimension, FlagSpace
    from compileiq_cmake.search.search import FlagSearch
    from compileiq_cmake.tune.acf_engine import AcfEngine

    class Refusing(FakeSource):
        def tell(self, scores):
            raise CompileIQError("the engine finished")

    source = Refusing()
    got = gather(AcfRequest(candidates=2), OK, tmp_path, lambda *a: source)
    space = acf_dimension(FlagSpace("nvcc", (Dimension("opt", "", ((), ("-Xptxas=-O1",))),)), list(got.files))
    search = FlagSearch(space, budget=1, seed=0, workers=1)  # singles cut to one: the control files never queued
    lines: list[str] = []
    engine = AcfEngine.of(got, lines.append)
    fs = search.ask()
    search.tell(fs, 0.0)
    trials = {fs.key: _types.SimpleNamespace(flagset=fs, valid=True)}
    measured_acf = any("apply-controls" in f for f in fs.flags)
    assert engine.after(search, trials, lambda t: 0.0) == 0
    assert (engine.done == 1) == measured_acf and len(lines) == int(measured_acf)
    acf_fs = search.space.flagset({"apply_controls": 1})
    trials[acf_fs.key] = _types.SimpleNamespace(flagset=acf_fs, valid=True)
    for _ in range(3):
        assert engine.after(search, trials, lambda t: -0.01) == 0
    assert sum("engine stopped (the engine finished)" in line for line in lines) == 1, lines


def test_the_apply_asks_the_ptxas_beside_this_builds_nvcc_not_nvcc(tmp_path):
    """A toolkit whose nvcc and ptxas differ (the machine's nvcc with NVIDIA's 13.3 ptxas beside it, as on the
    GPU machine of docs/benchmarks/acf.md): the control file applies where that ptxas is 13.3, and is left out
    where it is another version, said with both versions (nvcc's own version does not decide)."""
    import os

    from compileiq_cmake.results.cmake_entries import cmake_entries
    from compileiq_cmake.results.toml_io import read_entries, write_entry
    from compileiq_cmake.tune.entry import _portable_acf

    from test_result_file import make_entry

    state = tmp_path / "state.acf"
    state.write_bytes(b"controls")
    flags, digests = _portable_acf((f"-Xptxas=--apply-controls={state}",), tmp_path)
    write_entry(
        tmp_path / "compileiq.toml",
        make_entry(flags=("--use_fast_math", *flags), acf_sha256=digests, acf_ptxas="13.3.73"),
    )
    (entry,) = read_entries(tmp_path / "compileiq.toml")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    def tool(name: str, version: str) -> None:
        (bin_dir / name).write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release x, V{version}'\n")
        os.chmod(bin_dir / name, 0o755)

    tool("nvcc", "13.0.88")
    tool("ptxas", "13.3.73")
    text = cmake_entries([entry], tmp_path, cuda_compiler=str(bin_dir / "nvcc"))
    assert "ACF_FILES" in text and "ACF_PROBLEM" not in text and "ACF_PTXAS" not in text
    tool("ptxas", "13.4.1")
    text = cmake_entries([entry], tmp_path, cuda_compiler=str(bin_dir / "nvcc"))
    assert "apply-controls" not in text.split("ACF_PROBLEM")[0] and '"--use_fast_math"' in text
    assert "it was tuned with ptxas 13.3.73, this build's is 13.4.1" in text
    assert 'ACF_PTXAS "13.3.73"' in cmake_entries([entry], tmp_path)  # no compiler to ask: the module compares


def test_a_restored_trial_with_another_runs_control_file_indices_is_read_from_its_flags(tmp_path):
    """A resumed tune samples other control files (compileiq has no seed) and an engine's later generations are
    not in a fresh space: a restored trial is placed by its flags, never by the earlier run's indices."""
    from compileiq_cmake.flags.space import Dimension, FlagSpace
    from compileiq_cmake.model.records import FlagSet
    from compileiq_cmake.search.search import FlagSearch

    got = gather(AcfRequest(candidates=3), OK, tmp_path, FakeSource)
    space = acf_dimension(FlagSpace("nvcc", (Dimension("opt", "", ((), ("-Xptxas=-O1",))),)), list(got.files))
    search = FlagSearch(space, budget=20, seed=1, workers=1)
    foreign = FlagSet(choices=(("apply_controls", 9),), flags=("-Xptxas=--apply-controls=/old/run/x.acf",))
    swapped = FlagSet(choices=(("apply_controls", 1),), flags=(got.files[2].token,))  # index 1 named file 3
    search.tell(foreign, -0.05)
    search.tell(swapped, -0.02)
    asked = [search.ask() for _ in range(6)]
    assert all(fs is not None for fs in asked)
    assert swapped.key not in {fs.key for fs in asked}  # measured already: never asked again
