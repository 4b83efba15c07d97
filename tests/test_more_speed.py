"""Issue 13's levers on CI (no GPU): the device_lto dimension and when it is offered, variant trees that build
a trial with device LTO and per-file flags (real CMake + nvcc compile lines, the device link's options) and
the check that what was built is what would be written, the CUPTI collector (built here against the
toolkit's CUPTI), kernel-time files, the choice of files, and the per-file candidates."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from compileiq_cmake.execute.build import command_tokens
from compileiq_cmake.flags.catalogue import add_device_lto_dimension
from compileiq_cmake.flags.space import load_space
from compileiq_cmake.measure import kernel_times
from compileiq_cmake.model import build_flags
from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.project.fragment import render_fragment
from compileiq_cmake.search.per_file import PerFileContext, Proposals, candidates, kernel_name, plan
from compileiq_cmake.search.search import FlagSearch

from conftest import HAVE_NVCC, PROJECTS, cmake_dir, compile_commands, configure, copy_project

NVCC = shutil.which("nvcc")


def _space():
    return load_space("nvcc", "NVIDIA", "13.0.88", (), (), arch="90")


@pytest.mark.unit
def test_device_lto_is_offered_for_relocatable_device_code_only():
    space = _space()
    lto, notes = add_device_lto_dimension(space, ["-rdc=true", "-O3"], True, "", True)
    dim = lto.dimensions[-1]
    assert dim.name == "device_lto" and dim.values == ((), ("-dlto",)) and dim.build_mode and notes
    plain, notes = add_device_lto_dimension(
        space, ["-O3"], True, "sep_bench does not build relocatable device code", False
    )
    assert plain.dimensions == space.dimensions and not notes
    assert any("does not build relocatable device code" in d for d in plain.dropped)
    already, _ = add_device_lto_dimension(
        space, ["-rdc=true", "-gencode=arch=compute_90,code=[lto_90]"], True, "", True
    )
    assert already.dimensions == space.dimensions and any("already uses device LTO" in d for d in already.dropped)
    # a refusal (here: the toolkit's -dlto link probe) for a relocatable target: dropped with a note
    old, notes = add_device_lto_dimension(
        space, ["-rdc=true"], True, "a device link with -dlto fails with this toolkit (nvlink fatal)", True
    )
    assert old.dimensions == space.dimensions and "fails with this toolkit" in notes[0]
    assert any("fails with this toolkit" in d for d in old.dropped)
    excluded, notes = add_device_lto_dimension(space, ["-rdc=true"], False, "", True)
    assert excluded.dimensions == space.dimensions and not notes
    from compileiq_cmake.flags.catalogue import device_lto_wanted

    assert (
        device_lto_wanted((), ())
        and device_lto_wanted(("experimental",), ())
        and device_lto_wanted(("device_lto",), ())
    )
    assert not device_lto_wanted(("ftz",), ()) and not device_lto_wanted((), ("device_lto",))
    # --exclude-flags / --include-flags may name it (it is not in the catalogue file)
    load_space("nvcc", "NVIDIA", "13.0.88", (), ("device_lto",), arch="90")
    with pytest.raises(CompileIQError):
        load_space("gcc", "GNU", "12.2", (), ("device_lto",))


@pytest.mark.unit
def test_device_lto_is_among_the_first_single_changes():
    space, _ = add_device_lto_dimension(_space(), ["-rdc=true"], True, "", True)
    search = FlagSearch(space, budget=30, seed=3, workers=1)
    first = search.ask()  # the baseline is told by the tune, not asked
    assert first.flags == ("-dlto",), first.flags


@pytest.mark.unit
def test_build_flags_split_target_lto_and_per_file_tokens():
    flags = (
        "--use_fast_math",
        "-dlto",
        "[src/b.cu]-Xptxas=-O1",
        "[src/a.cu]-maxrregcount=64",
        "[src/b.cu]-Xptxas=-dlcm=cs",
    )
    b = build_flags.split(flags)
    assert b.target == ("--use_fast_math",) and b.device_lto
    assert b.sources == (("src/a.cu", ("-maxrregcount=64",)), ("src/b.cu", ("-Xptxas=-O1", "-Xptxas=-dlcm=cs")))
    assert b.of_source("src/b.cu") == ("-Xptxas=-O1", "-Xptxas=-dlcm=cs") and b.of_source("src/c.cu") == ()
    assert build_flags.describe(flags) == (
        "--use_fast_math; device LTO; src/a.cu: -maxrregcount=64; src/b.cu: -Xptxas=-O1 -Xptxas=-dlcm=cs"
    )
    assert build_flags.split(()).target == () and build_flags.describe(()) == "(project's own flags)"


def _variant(src: Path, tree: Path, flags: tuple[str, ...]):
    tree.mkdir(parents=True)
    fragment = tree / "compileiq_trial_flags.cmake"
    fragment.write_text(render_fragment("sep_bench", "CUDA", "90", flags))
    proc = configure(
        src,
        tree,
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_variant.cmake'}",
        f"-DCOMPILEIQ_VARIANT_FRAGMENT={fragment}",
        "-DCMAKE_BUILD_TYPE=Release",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {Path(e["file"]).name: e for e in compile_commands(tree)}


def _device_link_flags(tree: Path) -> str:
    ninja = tree / "build.ninja"
    text = ninja.read_text() if ninja.is_file() else "".join(p.read_text() for p in tree.rglob("dlink.txt"))
    lines = text.splitlines()
    if ninja.is_file():  # the LINK_FLAGS of the device-link edge
        at = next(i for i, line in enumerate(lines) if line.startswith("build") and "cmake_device_link.o:" in line)
        edge = []
        for line in lines[at + 1 :]:
            if not line.startswith(" "):
                break
            edge.append(line)
        return "\n".join(line for line in edge if "LINK_FLAGS" in line)
    return text


@pytest.mark.cuda
@pytest.mark.cmake
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_a_variant_tree_builds_device_lto_and_per_file_flags_as_the_apply_would(tmp_path):
    from compileiq_cmake.model.records import FlagSet
    from compileiq_cmake.tune.trial import _command_problem

    src = tmp_path / "separable"
    copy_project("separable", src)
    own = _variant(src, tmp_path / "own", ())
    flags = ("-Xptxas=-O1", "-dlto", "[src/main.cu]-Xptxas=-dlcm=cs")
    got = _variant(src, tmp_path / "trial", flags)
    main, other = got["main.cu"]["command"], got["device_math.cu"]["command"]
    # CUDA-only device LTO: LTO IR beside the machine code (the device link with -dlto uses the IR)
    assert all("code=lto_90" in c and "code=[sm_90]" in c for c in (main, other)), main
    assert "-Xptxas=-O1" in main and "-Xptxas=-O1" in other
    assert "-Xptxas=-dlcm=cs" in main and "-Xptxas=-dlcm=cs" not in other
    assert "-dlto" not in main.split()  # nvcc refuses -dlto next to --generate-code
    link = _device_link_flags(tmp_path / "trial")
    assert "-dlto" in link and "-Xptxas=-O1" in link, link
    assert "-dlto" not in _device_link_flags(tmp_path / "own")
    # what was built is what would be written: the checker accepts it, and catches a per-file flag on the
    # wrong file and a missing LTO
    trees = {name: SimpleNamespace(path=tmp_path / name) for name in ("own", "trial")}
    setup = SimpleNamespace(
        build_context=SimpleNamespace(
            source_dir=src,
            own_commands={  # stand-in: what the check reads
                str(Path(e["file"]).resolve()): command_tokens(trees["own"], e) for e in own.values()
            },
        )
    )
    entries = list(got.values())
    assert _command_problem(setup, trees["trial"], entries, FlagSet((), flags)) == ""
    wrong = ("-Xptxas=-O1", "-dlto", "[src/device_math.cu]-Xptxas=-dlcm=cs")
    assert "not the project's own plus the trial's flags" in _command_problem(
        setup, trees["trial"], entries, FlagSet((), wrong)
    )
    no_lto = _variant(src, tmp_path / "no-lto", ("-Xptxas=-O1", "[src/main.cu]-Xptxas=-dlcm=cs"))
    assert "does not generate LTO code" in _command_problem(
        setup, SimpleNamespace(path=tmp_path / "no-lto"), list(no_lto.values()), FlagSet((), flags)
    )


@pytest.mark.cuda
@pytest.mark.cmake
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_device_lto_on_a_target_without_relocatable_code_fails_its_trial_build(tmp_path):
    src = tmp_path / "plain"
    copy_project("separable", src)
    text = (
        (src / "CMakeLists.txt").read_text().replace("CUDA_SEPARABLE_COMPILATION ON", "CUDA_SEPARABLE_COMPILATION OFF")
    )
    (src / "CMakeLists.txt").write_text(text)
    tree = tmp_path / "tree"
    tree.mkdir()
    fragment = tree / "compileiq_trial_flags.cmake"
    fragment.write_text(render_fragment("sep_bench", "CUDA", "90", ("-dlto",)))
    proc = configure(
        src,
        tree,
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_variant.cmake'}",
        f"-DCOMPILEIQ_VARIANT_FRAGMENT={fragment}",
    )
    assert proc.returncode != 0 and "does not build relocatable device code" in " ".join(proc.stderr.split())


@pytest.mark.unit
def test_kernel_times_files_are_read_strictly(tmp_path):
    f = tmp_path / "times.tsv"
    with pytest.raises(CompileIQError, match="wrote no kernel times"):
        kernel_times.read_times(f)
    f.write_text("11\t100\tk\n")
    with pytest.raises(CompileIQError, match="not a kernel-times file"):
        kernel_times.read_times(f)
    f.write_text(f"{kernel_times.HEADER} incomplete\n")
    with pytest.raises(CompileIQError, match="lost records"):
        kernel_times.read_times(f)
    f.write_text(f"{kernel_times.HEADER}\n2\t300\t_Z1av\n1\t900\t_Z1bv\nbroken line\n")
    assert kernel_times.read_times(f) == (
        kernel_times.KernelTime("_Z1bv", 1, 900),
        kernel_times.KernelTime("_Z1av", 2, 300),
    )
    f.write_text(f"{kernel_times.HEADER}\n")
    assert kernel_times.read_times(f) == ()


@pytest.mark.unit
def test_kernel_time_shares_and_the_files_tuned_separately():
    times = (
        kernel_times.KernelTime("a", 1, 500),
        kernel_times.KernelTime("b", 1, 250),
        kernel_times.KernelTime("c", 1, 150),
        kernel_times.KernelTime("lib", 1, 100),
    )
    shares, unmapped = kernel_times.file_shares(times, {"x.cu": ("a",), "y.cu": ("b",), "z.cu": ("c",)})
    assert [(s.path, round(s.share, 2)) for s in shares] == [("x.cu", 0.5), ("y.cu", 0.25), ("z.cu", 0.15)]
    assert unmapped == pytest.approx(0.1)
    assert [s.path for s in kernel_times.choose_files(shares)] == ["x.cu", "y.cu", "z.cu"]
    assert [s.path for s in kernel_times.choose_files(shares, most=2)] == ["x.cu", "y.cu"]
    assert [s.path for s in kernel_times.choose_files(shares, least=0.2)] == ["x.cu", "y.cu"]
    one, _ = kernel_times.file_shares(times[:1], {"x.cu": ("a",), "y.cu": ("b",)})
    assert kernel_times.choose_files(one) == ()  # one file holds all of it: its flags are the global ones
    assert kernel_name("sm_90:__nv_static_30__x_Z1kv#2") == "__nv_static_30__x_Z1kv"


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_the_cupti_collector_builds_against_the_toolkit(tmp_path):
    try:
        lib = kernel_times.build_collector(NVCC, tmp_path / "cupti")
    except CompileIQError as exc:
        assert "has no CUPTI" in str(exc)
        pytest.skip(str(exc))
    symbols = subprocess.run(["nm", "-D", str(lib)], capture_output=True, text=True).stdout
    assert " T InitializeInjection" in symbols
    assert kernel_times.build_collector(NVCC, tmp_path / "cupti") == lib  # cached by source and toolkit
    env = kernel_times.injection_env(lib, tmp_path / "t.tsv")
    assert env == {"CUDA_INJECTION64_PATH": str(lib), "COMPILEIQ_KERNEL_TIMES": str(tmp_path / "t.tsv")}
    with pytest.raises(CompileIQError, match="has no CUPTI"):
        kernel_times.build_collector(str(tmp_path / "no-toolkit" / "bin" / "nvcc"), tmp_path / "other")


def _per_file_context(tmp_path, **kw) -> PerFileContext:
    """The per-file stage's input for a CUDA target "t" with two sources, changed by `kw`."""
    fields = dict(
        target="t",
        language="CUDA",
        source_dir=tmp_path,
        cuda_sources=(Path("a.cu"), Path("b.cu")),
        workloads=((),),
        space=_space(),
        nvcc="nvcc",
        state_dir=tmp_path / "state",
    )
    return PerFileContext(**{**fields, **kw})


@pytest.mark.unit
def test_per_file_candidates_take_turns_and_skip_what_the_global_flags_make_redundant(tmp_path):
    space = _space()
    start = space.flagset({"use_fast_math": 1})
    files = (kernel_times.FileShare("src/a.cu", 6, 0.6, ("a",)), kernel_times.FileShare("src/b.cu", 4, 0.4, ("b",)))
    got = candidates(_per_file_context(tmp_path, space=space), start, files, 6)
    assert len(got) == 6
    assert all(fs.flags[0] == "--use_fast_math" and fs.choices == start.choices for fs in got)
    extra = [fs.flags[1:] for fs in got]
    assert [e[0].split("]")[0] for e in extra] == ["[src/a.cu", "[src/b.cu"] * 3  # the files take turns
    assert not any("--ftz=true" in t or "--prec-div=false" in t for e in extra for t in e)  # implied by fast math
    assert len({fs.key for fs in got}) == 6
    # static screening said which kernels each value changes: a value that changes none of a file's kernels
    # is not proposed for it
    screened = _per_file_context(
        tmp_path, space=space, screen_kernels={("ptxas_opt_level", ("-Xptxas=-O1",)): frozenset({"sm_90:a"})}
    )
    tried = [fs.flags[1:] for fs in candidates(screened, start, files, 40)]
    assert ("[src/a.cu]-Xptxas=-O1",) in tried and ("[src/b.cu]-Xptxas=-O1",) not in tried
    queue = Proposals(got)
    assert len(queue) == 6 and queue.ask() == got[0] and len(queue) == 5


@pytest.mark.unit
def test_the_prior_ranks_the_per_file_candidates(tmp_path):
    """Issue 23: with a prior, a file's candidates come in order of predicted score, harmful ones last."""
    from compileiq_cmake.search.prior import Prediction, SpacePrior

    space = _space()
    names = [d.name for d in space.dimensions]
    o1, cg = names.index("ptxas_opt_level"), names.index("load_cache")
    cg_i = space.dimensions[cg].values.index(("-Xptxas=-dlcm=cg",))
    prior = SpacePrior({(o1, 1): Prediction(-0.5, 0.05, 0.0, 5.0), (cg, cg_i): Prediction(0.2, 0.02, 0.0, 5.0)})
    start = space.flagset({"use_fast_math": 1})
    files = (kernel_times.FileShare("src/a.cu", 6, 1.0, ("a",)),)
    ranked = [
        fs.flags[1:] for fs in candidates(_per_file_context(tmp_path, space=space, prior=prior), start, files, 200)
    ]
    plain = [fs.flags[1:] for fs in candidates(_per_file_context(tmp_path, space=space), start, files, 200)]
    assert ranked[0] == ("[src/a.cu]-Xptxas=-dlcm=cg",) and ranked[-1] == ("[src/a.cu]-Xptxas=-O1",)
    assert sorted(ranked) == sorted(plain) and plain[0] == ("[src/a.cu]-Xptxas=-O1",)  # today's order without one


@pytest.mark.unit
def test_the_per_file_stage_says_why_it_does_not_run(tmp_path):
    from compileiq_cmake.model.events import recording

    events, recorder = recording()
    baseline = SimpleNamespace(valid=True, flagset=_space().baseline())
    base = _per_file_context(tmp_path, fingerprints=object())
    from compileiq_cmake.measure.runner import Runner

    runner = Runner.__new__(Runner)
    assert plan(replace(base, language="CXX"), None, None, runner, {}, None, 8, events) is None
    assert plan(base, None, None, runner, {}, None, 0, events) is None
    assert recorder.events == []  # not applicable: nothing to say
    plan(replace(base, replay=True), None, None, runner, {}, None, 8, events)
    plan(replace(base, cuda_sources=(Path("a.cu"),)), None, None, runner, {}, None, 8, events)
    plan(replace(base, fingerprints=None), None, None, runner, {"b": baseline}, None, 8, events)

    class OtherRunner(Runner):
        def run(self, tree, workload):  # e.g. the Ray executor's
            raise AssertionError

    plan(base, None, None, OtherRunner.__new__(OtherRunner), {}, None, 8, events)
    expected = [
        "a replay has no kernel times",
        "t has one CUDA translation unit (its flags are the global ones)",
        "kernels cannot be mapped to files without cuobjdump",
        "per-kernel times are measured by the local executor",
    ]
    assert len(recorder.events) == len(expected) and recorder.of("note") == recorder.events, recorder.events
    for event, start in zip(recorder.events, expected, strict=False):
        assert event.text == f"per-file stage skipped: {event.data['skipped']}", event
        assert event.data["skipped"].startswith(start) and event.stage == "per-file", event
    assert recorder.lines()[0] == "compileiq: note: per-file stage skipped: a replay has no kernel times"
    # a function of a line (code not converted to the stream yet) still hears the same lines
    said: list[str] = []
    plan(replace(base, replay=True), None, None, runner, {}, None, 8, said.append)
    assert said == ["compileiq: note: per-file stage skipped: a replay has no kernel times"]


# --- the host side of CUDA targets (host_side.py) ---------------------------------------------------------


@pytest.mark.unit
def test_host_dimensions_are_the_host_compilers_catalogue_through_xcompiler():
    from compileiq_cmake.tune.host_side import host_dimensions

    dims = host_dimensions("GNU", "12.2", (), ())
    assert dims and all(d.name.startswith("host_") for d in dims)
    assert all(t.startswith("-Xcompiler=") for d in dims for v in d.values for t in v)
    assert any(v == ("-Xcompiler=-march=native",) for d in dims for v in d.values)
    only = host_dimensions("GNU", "12.2", ("host_march_native",), ())
    assert [d.name for d in only] == ["host_march_native"]
    safe = host_dimensions("GNU", "12.2", (), ("unsafe_numerics", "host_unroll_loops"))
    names = {d.name for d in safe}
    assert "host_fast_math" not in names and "host_unroll_loops" not in names and "host_opt_level" in names
    # the flags are nvcc flags of the catalogue: a TOML entry with them is valid
    from compileiq_cmake.flags.space import validate_flags

    assert validate_flags("nvcc", ["-Xcompiler=-march=native", "--use_fast_math"])
    with pytest.raises(CompileIQError):
        validate_flags("nvcc", ["-Xcompiler=-fplugin=evil.so"])


class _TimedRunner:
    """Stands in for a GPU run: writes the collector's file with `kernel_s` of kernels, `wall_s` wall time."""

    def __init__(self, kernel_s: float, wall_s: float, env=None):
        self.kernel_s, self.wall_s, self.env = kernel_s, wall_s, env or {}

    def with_env(self, env):
        return _TimedRunner(self.kernel_s, self.wall_s, env)

    def run(self, tree, workload):
        from compileiq_cmake.measure.runner import RunResult
        from compileiq_cmake.model.records import Status

        Path(self.env["COMPILEIQ_KERNEL_TIMES"]).write_text(
            f"{kernel_times.HEADER}\n3\t{int(self.kernel_s * 1e9)}\t_Z1kv\n"
        )
        return RunResult(Status.OK, "", 1.0, self.wall_s)


def _host_setup(tmp_path, kind="walltime", include=()):
    from compileiq_cmake.model.spec import MetricSpec

    metric = MetricSpec(kind=kind, pattern="t=([0-9.]+)" if kind == "regex" else "", lower_is_better=True)
    spec = SimpleNamespace(
        metric=metric, include_flags=include, workloads=(("--n", "1"), ("--n", "2")), state_dir=tmp_path / "state"
    )
    tree = SimpleNamespace(path=tmp_path / "tree")
    tree.path.mkdir(exist_ok=True)
    from compileiq_cmake.tune.tune_setup import Devices, ProjectModel, TuneSetup

    project = ProjectModel(target=None, language="CUDA", toolchain=SimpleNamespace(path=NVCC or "nvcc"))
    return TuneSetup(
        spec=spec,
        trees=(tree,),
        project=project,
        devices=Devices(),
        space=_space(),
        bench=None,
    )


@pytest.mark.unit
def test_host_side_joins_when_wall_time_is_host_time_and_the_metric_sees_it(tmp_path, monkeypatch):
    from compileiq_cmake.tune import host_side

    monkeypatch.setattr(kernel_times, "build_collector", lambda nvcc, work: work / "collector.so")
    monkeypatch.setattr(host_side, "host_compiler", lambda setup: ("GNU", "12.2"))
    said: list[str] = []
    setup = _host_setup(tmp_path)
    out = host_side.with_host_side(setup, _TimedRunner(0.05, 1.0), (), said.append)
    added = [d.name for d in out.space.dimensions if d.name.startswith("host_")]
    assert added and out.space.size > setup.space.size
    assert "95% of a run's wall time is outside kernels (CUPTI)" in said[-1] and "join the search" in said[-1]
    # mostly kernel time: not offered, and said so
    said.clear()
    assert host_side.with_host_side(setup, _TimedRunner(0.9, 1.0), (), said.append) is setup
    assert "10% of a run's wall time is outside kernels" in said[-1] and "not offered" in said[-1]
    # the metric is a time the program prints (e.g. CUDA events): host flags cannot move it
    said.clear()
    printed = _host_setup(tmp_path, kind="regex")
    assert host_side.with_host_side(printed, _TimedRunner(0.05, 1.0), (), said.append) is printed
    assert "is not the run's wall time" in said[-1] and "%" not in said[-1]  # nothing measured for it
    # asked for by name: searched whatever the share; excluded: never, silently
    said.clear()
    asked = _host_setup(tmp_path, kind="regex", include=("host_side",))
    assert host_side.with_host_side(asked, _TimedRunner(0.9, 1.0), (), said.append).space.size > asked.space.size
    said.clear()
    assert host_side.with_host_side(setup, _TimedRunner(0.05, 1.0), ("host_side",), said.append) is setup and not said

    # the collector cannot be built: a note, nothing added
    def no_cupti(nvcc, work):
        raise CompileIQError("the CUDA toolkit of nvcc has no CUPTI")

    monkeypatch.setattr(kernel_times, "build_collector", no_cupti)
    assert host_side.with_host_side(setup, _TimedRunner(0.05, 1.0), (), said.append) is setup
    assert "host share could not be measured" in said[-1] and "no CUPTI" in said[-1]


@pytest.mark.cuda
@pytest.mark.cmake
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_a_host_side_flag_reaches_the_cuda_compile_line(tmp_path):
    from compileiq_cmake.model.records import FlagSet
    from compileiq_cmake.tune.trial import _command_problem

    src = tmp_path / "separable"
    copy_project("separable", src)
    own = _variant(src, tmp_path / "own", ())
    got = _variant(src, tmp_path / "trial", ("-Xcompiler=-funroll-loops",))
    assert all("-Xcompiler=-funroll-loops" in e["command"] for e in got.values())
    trees = {name: SimpleNamespace(path=tmp_path / name) for name in ("own", "trial")}
    setup = SimpleNamespace(
        build_context=SimpleNamespace(
            source_dir=src,
            own_commands={  # stand-in: what the check reads
                str(Path(e["file"]).resolve()): command_tokens(trees["own"], e) for e in own.values()
            },
        )
    )
    assert (
        _command_problem(setup, trees["trial"], list(got.values()), FlagSet((), ("-Xcompiler=-funroll-loops",))) == ""
    )
    obj = subprocess.run(
        ["cmake", "--build", str(tmp_path / "trial"), "--target", "CMakeFiles/sep_bench.dir/src/device_math.cu.o"],
        capture_output=True,
        text=True,
    )
    assert obj.returncode == 0, obj.stdout[-2000:]


@pytest.mark.cuda
@pytest.mark.cmake
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_a_per_file_landscape_is_recorded_through_the_tools_own_builds(tmp_path):
    """benchmarks/landscapes/record_project.py --dry-run (no GPU: builds and fingerprints): every point of a
    per-file space built in the variant trees, points grouped by device code, a failing build kept with its
    reason (here nvlink: a per-file -maxrregcount below what a called function of another file needs), and
    a file Landscape.load's checks accept apart from the timings."""
    import json
    import os
    import sys

    from compileiq_cmake.flags.fingerprint import find_tool

    if find_tool("cuobjdump", NVCC) is None:
        pytest.skip("cuobjdump is not installed")
    src = tmp_path / "separable"
    copy_project("separable", src)
    assert configure(src, src / "build", "-DCMAKE_CUDA_ARCHITECTURES=90").returncode == 0
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [
            sys.executable,
            str(repo / "benchmarks" / "landscapes" / "record_project.py"),
            "-S",
            str(src),
            "-B",
            str(src / "build"),
            "--target",
            "sep_bench",
            "--bench",
            "sep_bench",
            "--metric",
            "time_ms=([0-9.]+)",
            "--workers",
            "2",
            "--out",
            str(tmp_path / "land.json"),
            "--dry-run",
            "--dim",
            "main.cu:maxrregcount=[src/main.cu]-maxrregcount=32",
            "--dim",
            "device_math.cu:fast=[src/device_math.cu]--use_fast_math",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "land.dryrun.json").read_text())
    assert doc["meta"]["dry_run"] and doc["meta"]["space_size"] == 4 and len(doc["points"]) == 4
    codes = doc["codes"]
    default = codes[doc["default_code"]]
    assert default["flags"] == [] and default["digest"]
    failed = [c for c in codes if c.get("status") == "build_failed"]
    assert failed and all("-maxrregcount=32" in " ".join(c["flags"]) for c in failed)
    assert "regcount" in failed[0]["message"]
    fast = next(c for c in codes if c["flags"] == ["[src/device_math.cu]--use_fast_math"])
    assert fast["digest"] and fast["digest"] != default["digest"]  # a per-file flag changed that file's code


@pytest.mark.unit
def test_a_winner_with_device_lto_and_per_file_flags_is_written_and_applied_as_built(tmp_path):
    """The TOML entry of such a winner: target flags, device_lto = true, one [[entry.sources]] per file (read
    back and validated like the rest), and the CMake calls of the apply for both parts."""
    from compileiq_cmake.model.records import FlagSet, Validation, WorkloadComparison
    from compileiq_cmake.results.cmake_entries import cmake_entries
    from compileiq_cmake.results.toml_io import read_entries, write_entry
    from compileiq_cmake.tune.entry import _entry

    flags = (
        "--use_fast_math",
        "-dlto",
        "[src/gemm.cu]-Xptxas=-O1",
        "[src/compute.cu]-maxrregcount=64",
        "[src/gemm.cu]-Xptxas=-dlcm=cs",
    )
    winner = Validation(
        FlagSet((), flags),
        (WorkloadComparison(("--size", "1"), (2.0, 2.0), (1.6, 1.6), 1.25, 1.2, 1.3, 1e-6),),
        1.25,
        1.2,
        1.3,
        True,
    )
    spec = SimpleNamespace(
        target="multi_bench",
        output=tmp_path / "compileiq.toml",
        metric=SimpleNamespace(label="^time_ms=([0-9.]+)", lower_is_better=True),
        checks=("pass_regex",),
        pass_regex="PASS",
        arch_scope="all",
        lower_is_better=True,
        objective="time",
    )
    from compileiq_cmake.tune.tune_setup import CodeIdentity, Devices, ProjectModel

    setup = SimpleNamespace(
        spec=spec,
        bench=None,
        replay=None,
        tools=None,
        project=ProjectModel(
            target=None,
            language="CUDA",
            build_type="Release",
            toolchain=SimpleNamespace(compiler_id="NVIDIA", version="13.0.88"),
            device_link=("bench_exe",),
        ),
        devices=Devices(cuda_arch="90", device="NVIDIA H200", compute_capability="9.0"),
        code=CodeIdentity(sources_sha256="ab" * 32),
    )
    entry = _entry(setup, winner, (), 20, lambda line: None)
    assert entry.flags == ("--use_fast_math",) and entry.device_lto and entry.device_link == ("bench_exe",)
    assert entry.sources == (
        {"path": "src/compute.cu", "flags": ["-maxrregcount=64"]},
        {"path": "src/gemm.cu", "flags": ["-Xptxas=-O1", "-Xptxas=-dlcm=cs"]},
    )
    write_entry(spec.output, entry)
    back = read_entries(spec.output)[0]
    assert back.device_lto and back.sources == entry.sources and back.flags == entry.flags
    text = cmake_entries([back], tmp_path)
    assert (
        "DEVICE_LTO" in text and text.count("_compileiq_source_flags(") == 2 and "_compileiq_source_flags_done(" in text
    )
    assert 'DEVICE_LINK "bench_exe"' in text and back.device_link == ("bench_exe",)


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_the_per_file_stage_runs_its_whole_path_in_a_tune(tmp_path, monkeypatch):
    """tests/projects/per_file_sim: a separable target with kernels in two files whose host program stands
    in for the GPU run (it writes the collector's file itself: 70% hot.cu, 30% warm.cu). The tune plans the
    per-file stage from those times, proposes single changes for both files on top of the best global flag
    set, builds each with the flag on that file only (checked against the compile commands), measures them in
    the same loop and keeps the plan in the store for the report."""
    import json

    from compileiq_cmake.flags.fingerprint import find_tool

    from conftest import run_cli

    if find_tool("cuobjdump", NVCC) is None:
        pytest.skip("cuobjdump is not installed")
    try:
        kernel_times.build_collector(NVCC, tmp_path / "probe-cupti")
    except CompileIQError as exc:
        pytest.skip(str(exc))
    src = tmp_path / "per_file_sim"
    shutil.copytree(PROJECTS / "per_file_sim", src)
    build = src / "build"
    assert configure(src, build, "-DCMAKE_CUDA_ARCHITECTURES=90", "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    monkeypatch.setenv("COMPILEIQ_SIMULATE_GPUS", "1")  # the tune's runs need no GPU here
    proc = run_cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        "--target",
        "sim_bench",
        "--bench",
        "sim_bench",
        "--metric",
        "time_ms=([0-9.]+)",
        "--pass-regex",
        "PASS",
        "--cuda-arch",
        "90",
        "--budget",
        "4",
        "--per-file-budget",
        "4",
        "--workers",
        "2",
        "--exclude-flags",
        "device_lto",
        "--max-rounds",
        "6",
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "kernel time by file (CUPTI, one run per workload, from " in out
    assert "src/hot.cu 70%, src/warm.cu 30%" in out
    assert "per-file stage: 4 flag sets, single changes for src/hot.cu, src/warm.cu on top of " in out
    assert "[  8/8]" in out  # the planned count grew by the per-file budget
    trials = next(iter(json.loads(run_cli("trials", "-B", str(build), "--json").stdout).values()))
    per_file = [t for t in trials if any(f.startswith("[src/") for f in t["flags"])]
    assert len(per_file) == 4
    assert {f.split("]")[0] for t in per_file for f in t["flags"] if f.startswith("[")} == {
        "[src/hot.cu",
        "[src/warm.cu",
    }
    # built as written: none was refused by the compile-command check
    assert not any("is not the project's own plus the trial's flags" in t["reason"] for t in per_file)
    assert all(t["status"] == "ok" for t in per_file), [t["reason"] for t in per_file]
    summary = json.loads(run_cli("report", "-B", str(build), "--json").stdout)
    files = {f["path"]: f for f in summary["per_file"]["files"]}
    assert files["src/hot.cu"]["share"] == pytest.approx(0.7) and files["src/hot.cu"]["tuned"]
    assert files["src/warm.cu"]["kernels"] == ["warm_kernel"]


@pytest.mark.unit
def test_per_file_landscape_dimensions_keep_their_catalogue_traits():
    """A recorded per-file landscape names its dimensions "<file>:<dimension>"; replayed, they keep the
    catalogue's numerics traits (the default search measures approximate arithmetic first, as the tune's
    per-file stage does): the H200 landscape of the multi-file example."""
    from compileiq_cmake.search.landscape import Landscape

    land = Landscape.load(Path(__file__).parent.parent / "benchmarks" / "landscapes" / "multifile_per_file.json")
    traits = {d.name: (d.relaxes_numerics, d.unsafe_numerics) for d in land.dimensions}
    assert traits["compute.cu:use_fast_math"][0] and traits["compute.cu:use_fast_math"][1]
    assert traits["stream.cu:load_cache"] == (False, False)
    assert not land.meta.get("synthetic") and land.meta["space_size"] == 108


@pytest.mark.unit
def test_a_librarys_device_lto_is_measured_through_the_benchmarks_consumer_or_not_offered():
    """A static or object library's device code is device-linked by its consumers: device LTO is measured (and
    later applied) at the one that builds the benchmark's program; with none known it is not offered, and the
    note says how to name one. Executables keep device LTO at their own link."""
    from compileiq_cmake.project.file_api import Target
    from compileiq_cmake.tune.setup_space import device_link

    space, _ = add_device_lto_dimension(_space(), ["-rdc=true"], True, "", True)
    spec = SimpleNamespace(target="devlib")
    lines: list[str] = []
    lib = Target("devlib", "STATIC_LIBRARY", ("CUDA",), (), (), ())
    assert device_link(spec, lib, "bench_a", space, lines.append) == (("bench_a",), space)
    link, left = device_link(spec, lib, None, space, lines.append)
    assert link == () and not any(d.name == "device_lto" for d in left.dimensions)
    assert len(lines) == 1 and "devlib is a static library" in lines[0] and "--bench" in lines[0]
    exe = Target("devlib", "EXECUTABLE", ("CUDA",), (), (), ())
    assert device_link(spec, exe, None, space, lines.append) == ((), space)


@pytest.mark.unit
def test_entries_are_tried_newest_architecture_first_and_device_link_needs_device_lto(tmp_path):
    """The apply's rule for several architectures' entries of one target does not depend on the file's order;
    a device_link list on an entry without device LTO is refused as data."""
    from compileiq_cmake.model.errors import ResultFileError
    from compileiq_cmake.results.cmake_entries import cmake_entries
    from compileiq_cmake.results.toml_io import read_entries, write_entry

    from test_result_file import make_entry

    entries = [make_entry(target="t", arch=a) for a in ("80", "90", "100", "90a")]
    calls = [line for line in cmake_entries(entries, tmp_path).splitlines() if line.startswith("_compileiq_entry(")]
    assert [re.search(r'ARCH "([^"]*)"', c).group(1) for c in calls] == ["100", "90a", "90", "80"]
    assert cmake_entries(entries[::-1], tmp_path) == cmake_entries(entries, tmp_path)
    path = tmp_path / "c.toml"
    write_entry(path, make_entry(target="t", device_lto=True, device_link=("bench_a",)))
    assert read_entries(path)[0].device_link == ("bench_a",)
    path.write_text(path.read_text().replace("device_lto = true", "device_lto = false"))
    with pytest.raises(ResultFileError, match="only an entry with device_lto = true"):
        read_entries(path)
