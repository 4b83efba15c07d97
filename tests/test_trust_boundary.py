"""Issue 35, the trust boundary: a committed compileiq.toml is data. Nothing written in it runs unless the user
says so on the command line; a regex from it runs under a time limit; every token it can put on a compile line
passes the flags' grammar (CPU records and per-source --apply-controls included) and strings that reach the
check's records are one printable line; a bare benchmark name is a program on PATH, never a file of the
working directory. Each test here failed before the fix."""

from __future__ import annotations

import re
import shutil
import time
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import tomli_w

from compileiq_cmake.model.errors import ResultFileError, UsageError
from compileiq_cmake.results.toml_io import read_entries, write_entry

from conftest import configure, run_cli
from test_check import _entry, _project
from test_result_file import make_entry

HOSTILE_REGEX = "(a|aa)+$"  # catastrophic backtracking on a line of a's ending in another character


def _host_entry_text(tmp_path: Path, name: str = "compileiq.toml", **fields) -> Path:
    """A TOML holding one host entry with `fields` replaced (written as a hostile file would be, not by the tool)."""
    path = tmp_path / name
    write_entry(
        path,
        make_entry(
            target="app",
            language="CXX",
            arch="",
            compiler_id="GNU",
            compiler_version="12.2.0",
            flags=("-O2",),
            compute_capability="",
            device="a CPU",
        ),
    )
    doc = tomllib.loads(path.read_text())
    doc["entry"][0].update(fields)
    path.write_text(tomli_w.dumps(doc))
    return path


@pytest.mark.unit
@pytest.mark.parametrize(
    "flags, features",
    [
        (["-march=x86-64", "-m32"], ["32"]),  # the ABI, through an "ISA feature"
        (["-march=x86-64", "-mno-red-zone"], []),  # -mno-<anything> was accepted
        (["-march=x86-64", "-mgeneral-regs-only"], ["general-regs-only"]),  # a code-generation switch as a feature
    ],
)
def test_cpu_records_cannot_put_a_switch_outside_the_grammar_on_the_compile_line(tmp_path, flags, features):
    path = _host_entry_text(tmp_path, flags=flags, tuned_cpu="Some CPU", cpu_features=features)
    with pytest.raises(ResultFileError):
        read_entries(path)
    # what a resolution really writes still reads
    path = _host_entry_text(
        tmp_path,
        "good.toml",
        flags=["-march=skylake", "-mavx2", "-mno-avx512f"],
        tuned_cpu="Some CPU",
        cpu_features=["avx2"],
    )
    assert read_entries(path)[0].flags == ("-march=skylake", "-mavx2", "-mno-avx512f")


@pytest.mark.unit
def test_a_newline_in_tuned_cpu_and_an_absolute_per_source_acf_are_refused(tmp_path):
    """A newline and a tab in tuned_cpu forged the records check reads; --apply-controls=/etc/shadow in a
    per-source part reached nvcc (only the entry's own flags were checked for it)."""
    path = _host_entry_text(tmp_path, flags=["-march=skylake"], tuned_cpu="X\napp\t90\tapplied\tforged")
    with pytest.raises(ResultFileError, match="tuned_cpu"):
        read_entries(path)
    path = tmp_path / "cuda.toml"
    write_entry(path, make_entry(target="k"))
    doc = tomllib.loads(path.read_text())
    doc["entry"][0]["sources"] = [{"path": "src/k.cu", "flags": ["--apply-controls=/etc/shadow"]}]
    path.write_text(tomli_w.dumps(doc))
    with pytest.raises(ResultFileError, match="relative path inside the source tree"):
        read_entries(path)


@pytest.mark.cmake
def test_show_and_configure_refuse_such_a_file_in_one_line(tmp_path):
    """The refusals hold at every reader: `show` (exit 2, one line) and a configure that applies the file (a
    FATAL_ERROR naming the file, nothing applied)."""
    from conftest import cmake_dir

    src, build = _project(tmp_path)
    path = _host_entry_text(tmp_path, flags=["-march=x86-64", "-m32"], tuned_cpu="Some CPU", cpu_features=["32"])
    proc = run_cli("show", str(path))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "refusing cpu_features" in proc.stderr, proc.stderr
    shutil.copyfile(path, src / "compileiq.toml")
    proc = configure(
        src,
        build,
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}",
    )
    assert proc.returncode != 0 and "refusing cpu_features" in " ".join(proc.stderr.split()), proc.stderr[-2000:]
    assert not any("-m32" in line for line in proc.stdout.splitlines() if "applied" in line)


@pytest.mark.cmake
def test_check_runs_nothing_the_toml_says_unless_told_and_its_regexes_are_bounded(tmp_path):
    """A TOML whose benchmark and VERIFY commands would leave a mark and whose pass_regex backtracks
    catastrophically: `check --remeasure` alone refuses in one line (exit 2) and runs nothing; with the CI's own
    --bench it runs that, never the recorded VERIFY, and the recorded pass_regex runs under its time limit (the
    runs fail PASS, the check ends saying so); --run-recorded prints both commands before running them."""
    src, build = _project(tmp_path)
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    mark = tmp_path / "ran"
    hostile = ("sh", "-c", f"touch {mark}; printf 'time_ms=1\\n'; printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\\n'")
    write_entry(
        src / "compileiq.toml",
        _entry(build, benchmark=hostile, verify=("sh", "-c", f"touch {mark}.verify"), pass_regex=HOSTILE_REGEX),
    )
    gate = ("check", "-S", str(src), "-B", str(build), "--remeasure", "--rounds", "3")
    proc = run_cli(*gate)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--run-recorded" in proc.stderr, proc.stderr
    assert not mark.exists() and not Path(f"{mark}.verify").exists()
    started = time.monotonic()
    proc = run_cli(
        *gate,
        "--bench",
        'sh -c \'printf "time_ms=5\\n"; printf "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\\n"\'',
        timeout=600,
    )
    # the plain build's runs fail PASS by the time limit: the check ends with that reason
    assert proc.returncode == 2 and "ran past its 2 s limit" in proc.stdout + proc.stderr, (
        proc.stdout[-2000:] + proc.stderr[-2000:]
    )
    assert time.monotonic() - started < 300
    assert not mark.exists() and not Path(f"{mark}.verify").exists()
    proc = run_cli(*gate, "--run-recorded", "--pass-regex", "time_ms", timeout=600)
    said = proc.stdout + proc.stderr
    assert f"benchmark: sh -c 'touch {mark};" in said and f"VERIFY: sh -c 'touch {mark}.verify'" in said, said[-2000:]
    assert said.index("--run-recorded runs") < said.index("re-measuring")
    assert mark.exists()  # told to: it ran


@pytest.mark.unit
def test_a_bare_benchmark_name_is_a_program_on_path_never_a_file_of_the_working_directory(tmp_path, monkeypatch):
    """`--bench "python3 ..."` ran a ./python3 of the current directory; a bare name is looked up on PATH only
    (a file of the directory is named ./python3), and a name found nowhere says so."""
    from compileiq_cmake.tune.setup_measured import resolve_benchmark

    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho pwned\n")
    fake.chmod(0o755)
    (tmp_path / "only_here").write_text("#!/bin/sh\n")
    (tmp_path / "only_here").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    model, tree = SimpleNamespace(targets={}), SimpleNamespace(path=tmp_path / "tree")

    def spec(*argv):
        return SimpleNamespace(benchmark=argv, build_dir=tmp_path / "build", verify=())

    bench, owner = resolve_benchmark(spec("python3", "-c", "pass"), model, tree)
    assert bench.argv[0] == "python3" and owner is None  # PATH's, run as a bare name
    with pytest.raises(UsageError, match=r"a file of the current directory is \./only_here"):
        resolve_benchmark(spec("only_here"), model, tree)
    bench, _ = resolve_benchmark(spec("./only_here"), model, tree)
    assert bench.argv[0] == str((tmp_path / "only_here").resolve())


@pytest.mark.unit
def test_outputs_never_destroy_inputs_or_state(tmp_path):
    """--json-summary onto the TOML replaced it with JSON; onto the trial store the next command moved the store
    aside as damaged; report -o wrote HTML over a TOML or a source file. Each is refused before anything runs."""
    from compileiq_cmake.model.spec import MetricSpec, TuneSpec
    from compileiq_cmake.results import report

    (tmp_path / "CMakeLists.txt").write_text("project(p)\n")
    build = tmp_path / "build"
    (build / "compileiq").mkdir(parents=True)
    store = build / "compileiq" / "trials.sqlite"
    store.write_bytes(b"SQLite format 3\0")
    toml = tmp_path / "compileiq.toml"

    def spec(**kw):
        return TuneSpec(
            source_dir=tmp_path,
            build_dir=build,
            target="t",
            benchmark=("true",),
            metric=MetricSpec.parse("WALLTIME", True),
            output=toml,
            **kw,
        )

    for summary, says in (
        (toml, "is the --output TOML"),
        (store, "the tool's own state folder"),
        (tmp_path / "CMakeLists.txt", "is not a JSON document"),
    ):
        with pytest.raises(UsageError, match=says):
            spec(json_summary=str(summary)).validate()
    with pytest.raises(UsageError, match="state folder"):
        TuneSpec(
            source_dir=tmp_path,
            build_dir=build,
            target="t",
            benchmark=("true",),
            metric=MetricSpec.parse("WALLTIME", True),
            output=build / "compileiq" / "x.toml",
        ).validate()
    (tmp_path / "old.json").write_text('{"schema": "compileiq-summary/1"}')
    spec(json_summary=str(tmp_path / "old.json")).validate()  # a summary of an earlier tune is replaced
    toml.write_text("schema_version = 1\n")
    doc = {"target": "t"}
    monkey = pytest.MonkeyPatch()
    monkey.setattr(report, "load_summaries", lambda build_dir: [doc])
    try:
        with pytest.raises(UsageError, match="is not an HTML report"):
            report.report_command(build, toml, None)
    finally:
        monkey.undo()
    assert toml.read_text() == "schema_version = 1\n"


@pytest.mark.unit
def test_a_misspelt_config_is_refused_and_another_build_types_entry_is_not_replaced(tmp_path):
    """--config Relase tuned an unoptimised build and replaced the Release entry: a configuration the tree does
    not have is refused naming those it has, and an entry of another build type is replaced only with --replace."""
    from compileiq_cmake.project.variant_settings import VariantSettings
    from compileiq_cmake.results.toml_io import replacement

    build = tmp_path / "build"
    build.mkdir()
    (build / "CMakeCache.txt").write_text(
        "CMAKE_GENERATOR:INTERNAL=Ninja\nCMAKE_BUILD_TYPE:STRING=Release\nCMAKE_CXX_FLAGS_PROFILE:STRING=-O2 -pg\n"
    )
    with pytest.raises(UsageError, match=r"--config 'Relase' is not a configuration .*did you mean 'Release'\?"):
        VariantSettings.from_user_tree(tmp_path, build, "", "Relase")
    for ok in ("Release", "debug", "PROFILE"):
        VariantSettings.from_user_tree(tmp_path, build, "", ok)
    release = make_entry(target="app", build_type="Release")
    debug = make_entry(target="app", build_type="Debug", speedup=21.7)
    assert not replacement([release], debug, False).allowed
    assert "tuned for the Release build type" in replacement([release], debug, False).message
    assert replacement([release], debug, True).allowed


@pytest.mark.cmake
def test_code_of_the_source_tree_is_not_imported_by_the_driver(tmp_path):
    """A configure run from the source directory: the driver's Python put the working directory on its module
    path, so a compileiq_cmake/ folder or a stdlib-named difflib.py of the project ran. With -P neither is
    imported (each would leave a mark); the apply still works."""
    import subprocess

    from conftest import cmake_dir

    src, build = _project(tmp_path)
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    mark = tmp_path / "imported"
    (src / "difflib.py").write_text(f"open({str(mark)!r} + '-difflib', 'w').close()\n")
    (src / "compileiq_cmake").mkdir()
    (src / "compileiq_cmake" / "__init__.py").write_text(f"open({str(mark)!r} + '-package', 'w').close()\n")
    (src / "compileiq_cmake" / "__main__.py").write_text("raise SystemExit(3)\n")
    write_entry(src / "compileiq.toml", _entry(build))
    proc = subprocess.run(
        [
            "cmake",
            "-S",
            ".",
            "-B",
            str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_apply.cmake'}",
        ],
        cwd=src,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "compileiq: applied 1 tuned flag to gate_bench" in proc.stdout, proc.stdout[-2000:]
    assert not list(tmp_path.glob("imported-*"))


@pytest.mark.cmake
def test_a_line_break_in_a_compileiq_tune_argument_is_refused(tmp_path):
    """compileiq_tune() writes one argument per line for the suite: a value with a line break injected
    arguments (--budget=2 --seed=7 ran). The configure stops naming the argument."""
    from conftest import cmake_dir

    src = tmp_path / "p"
    src.mkdir()
    (src / "main.cpp").write_text("int main() { return 0; }\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p LANGUAGES CXX)\nadd_executable(app main.cpp)\n"
        "find_package(compileiq_cmake CONFIG REQUIRED)\n"
        'compileiq_tune(app BENCHMARK app METRIC "t=([0-9]+)\\n--budget=2")\n'
    )
    proc = configure(src, tmp_path / "b", f"-Dcompileiq_cmake_DIR={cmake_dir()}", "-DCOMPILEIQ_TUNE=ON")
    assert proc.returncode != 0 and "contains a line break" in " ".join(proc.stderr.split()), proc.stderr[-2000:]
    assert not (tmp_path / "b" / "compileiq_suite.args").exists()


def _prior_file(tmp_path: Path, observations: list[dict], name: str = "p.json") -> Path:
    import json

    from compileiq_cmake.search.prior import FORMAT, VERSION

    path = tmp_path / name
    path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "observations": observations}))
    return path


def _observation(id_: str = "a", **kw) -> dict:
    base = {
        "id": id_,
        "source": "team",
        "family": "nvcc",
        "arch": "90",
        "features": {"regs": 32.0},
        "effects": {"ftz:--ftz=true": 0.05},
    }
    base.update(kw)
    return base


@pytest.mark.unit
@pytest.mark.parametrize(
    "observations, bare, says",
    [
        ([_observation(effects={"ftz:--ftz=true": "Infinity"})], True, "Infinity is not a number JSON allows"),
        ([_observation(features={"regs": "NaN"})], False, "not a finite number"),  # a string that float() reads
        ([_observation("x"), _observation("x")], False, "appears 2 times"),
        ([_observation("a\x00b")], False, "control characters"),
        ([_observation("a\x1b[31m")], False, "control characters"),
    ],
)
def test_an_imported_prior_is_refused_when_it_would_poison_or_forge(tmp_path, observations, bare, says):
    """NaN/Infinity were imported and used (a +171.8% prediction from Inf); two observations with one id kept
    one of them while the line said both were added; a NUL or an escape sequence reached the terminal."""
    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.results.prior_store import LocalPrior

    path = _prior_file(tmp_path, observations)
    if bare:  # JSON's non-standard constants, as a hostile file would write them
        path.write_text(path.read_text().replace('"Infinity"', "Infinity"))
    store = LocalPrior(tmp_path / "cache")
    with pytest.raises(CompileIQError, match=re.escape(says)):
        store.import_file(path)
    assert not store.observations()


@pytest.mark.unit
def test_json_files_of_others_are_bounded(tmp_path):
    """A landscape nested 100000 deep gave a RecursionError traceback; a huge file was read whole."""
    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.search.landscape import Landscape
    from compileiq_cmake.system.json_files import load_json

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(CompileIQError, match="nested too deeply"):
        Landscape.load(deep)
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 1000 + "0]")
    with pytest.raises(UsageError, match="at most 100 are read"):
        load_json(big, "--replay big.json", max_bytes=100)


@pytest.mark.unit
def test_an_unreachable_ray_address_is_one_line_within_seconds():
    """--ray-address 127.0.0.1:1 hung for minutes with Ray's warnings: nothing answering is said at once."""
    from compileiq_cmake.execute.ray import _reachable

    started = time.monotonic()
    with pytest.raises(UsageError, match="nothing answers there"):
        _reachable("127.0.0.1:1")
    assert time.monotonic() - started < 15
    _reachable(None)
    _reachable("auto")


@pytest.mark.unit
def test_damaged_rows_of_a_valid_trial_store_are_left_out_not_a_traceback(tmp_path):
    """status='bogus', broken JSON or a non-finite sample in rows of a valid store gave tracebacks in `trials`,
    `report` and a resumed tune; such rows are left out and counted, the good ones kept."""
    import sqlite3

    from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
    from compileiq_cmake.results.store import TrialStore

    path = tmp_path / "build" / "compileiq" / "trials.sqlite"
    path.parent.mkdir(parents=True)
    store = TrialStore(path, "spec")
    for i in range(4):
        store.save(
            Trial(
                i,
                FlagSet((), (f"-O{i}",)),
                Status.OK,
                "",
                (Measurement(("--n", "1"), (1.0 + i,)),),
                1.0,
                1.0,
                2.0,
                "cc",
                "",
                None,
            )
        )
    store.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE trials SET status = 'bogus' WHERE idx = 1")
    db.execute("UPDATE trials SET measurements = '[{' WHERE idx = 2")
    db.execute("""UPDATE trials SET measurements = '[{"workload": [], "samples": ["NaN"]}]' WHERE idx = 3""")
    db.commit()
    db.close()
    store = TrialStore(path, "spec")
    assert [t.index for t in store.load()] == [0] and store.skipped_rows == 3
    store.close()
    proc = run_cli("trials", "-B", str(tmp_path / "build"))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "3 row(s)" in proc.stderr, proc.stderr


@pytest.mark.cmake
def test_the_examples_say_when_the_package_is_not_found(tmp_path):
    """With the examples' find_package(... CONFIG QUIET) pattern a release configure without the package applied
    nothing and printed nothing; now it says so and how to point CMake at it."""
    from conftest import EXAMPLES

    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    proc = configure(
        src,
        tmp_path / "b",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-Dcompileiq_cmake_DIR={tmp_path / 'none'}",
        "-DCMAKE_DISABLE_FIND_PACKAGE_compileiq_cmake=ON",  # nor found through the Python environment on PATH
    )
    said = " ".join(proc.stdout.split())
    assert proc.returncode == 0 and "compileiq_cmake not found: no tuned flags are applied" in said, said[-2000:]
    assert "-Dcompileiq_cmake_DIR=$(compileiq-cmake --cmake-dir)" in said


@pytest.mark.unit
def test_portable_with_a_pass_regex_does_not_claim_nothing_checks_the_results(tmp_path):
    """--portable --pass-regex PASS printed "nothing checks the benchmark's results": the line came whenever the
    excluded flags differed from --exclude-flags, which --portable's cpu_specific also does."""
    from compileiq_cmake.model.spec import MetricSpec, TuneSpec
    from compileiq_cmake.tune.setup_space import unchecked_note

    def spec(**kw):
        return TuneSpec(
            source_dir=tmp_path,
            build_dir=tmp_path / "b",
            target="t",
            benchmark=("true",),
            metric=MetricSpec.parse("WALLTIME", True),
            output=tmp_path / "c.toml",
            **kw,
        )

    assert unchecked_note(spec(portable=True, pass_regex="PASS")) == ""
    assert "cpu_specific" in spec(portable=True, pass_regex="PASS").excluded_flags
    assert "unsafe_numerics" not in spec(portable=True, pass_regex="PASS").excluded_flags
    assert "nothing checks" in unchecked_note(spec(portable=True))


_FAKE_GCC = """#!/bin/sh
# a gcc as -Q --help=target answers: its default is x86-64-v3; this host's -march=native adds avx512f
case " $* " in
  *" --version "*) echo "gcc (fake) 12.2.0"; exit 0;;
esac
on="sse2 avx avx2 fma bmi2"
case " $* " in
  *" -march=native "*|*" -march=skylake-avx512 "*) on="$on avx512f";;
esac
case " $* " in *" -mno-avx512f "*) on="sse2 avx avx2 fma bmi2";; esac
case " $* " in *" -mavx512f "*) on="$on avx512f";; esac
__HOST_LACKS__
for f in $on; do printf '  -m%s\\t\\t[enabled]\\n' "$f"; done
"""


@pytest.mark.unit
@pytest.mark.parametrize("host_lacks", [False, True])
def test_the_apply_asks_its_compiler_what_the_entrys_flags_need_independent_of_defaults(tmp_path, host_lacks):
    """The ISA check compared the entry's cpu_features (what -march=native adds beyond the tuning compiler's
    default) with the same difference for the applying compiler: one whose default is x86-64-v3 said "this host
    lacks" avx2 and others on the very machine that tuned. Now the applying compiler is asked what the entry's
    resolved flags enable and what -march=native enables, each whole."""
    from compileiq_cmake.flags.portability import HostFeatures
    from compileiq_cmake.results.cmake_entries import cmake_entries

    gcc = tmp_path / "gcc"
    lacks = 'case " $* " in *" -march=native "*) on="sse2 avx avx2 fma bmi2";; esac' if host_lacks else ""
    gcc.write_text(_FAKE_GCC.replace("__HOST_LACKS__", lacks))
    gcc.chmod(0o755)
    entry = make_entry(
        target="app",
        language="CXX",
        arch="",
        compiler_id="GNU",
        compiler_version="12.2.0",
        flags=("-O2", "-march=skylake-avx512"),
        compute_capability="",
        device="a CPU",
        tuned_cpu="Intel Xeon",
        cpu_features=("avx", "avx2", "avx512f", "bmi2", "fma"),
    )
    text = cmake_entries([entry], tmp_path, HostFeatures({"CXX": str(gcc)}))
    if host_lacks:
        assert "HOST_LACKS avx512f" in text and "avx2" not in text.split("HOST_LACKS")[1].split("FLAGS")[0], text
    else:
        assert "HOST_HAS_FEATURES" in text and "HOST_LACKS" not in text, text


@pytest.mark.unit
def test_a_suite_that_tuned_nothing_or_lost_a_target_says_so_in_its_exit_status():
    """A suite with a misspelt target and --time-limit 1 exited 0."""
    from compileiq_cmake.model.events import EventStream
    from compileiq_cmake.tune.suite import TargetOutcome
    from compileiq_cmake.ui.suite_command import suite_status

    said: list[str] = []
    events = EventStream()
    events.subscribe(lambda e: said.append(e.text))
    assert (
        suite_status(
            [TargetOutcome("a", "tuned"), TargetOutcome("b", "no gain"), TargetOutcome("c", "skipped")], events
        )
        == 0
    )
    assert suite_status([TargetOutcome("a", "tuned"), TargetOutcome("typo", "failed", "unknown target")], events) == 1
    assert suite_status([TargetOutcome("a", "skipped"), TargetOutcome("b", "skipped")], events) == 1
    assert any("typo" in s for s in said) and any("no target was tuned" in s for s in said)


@pytest.mark.unit
def test_validation_rounds_are_not_silent():
    """Validation rounds ran 20-60 s without a line: each round is reported to a progress callback, and the
    validation says a line whenever 5 s or more passed since its last one."""
    from compileiq_cmake.decide.rounds import interleave
    from compileiq_cmake.measure.runner import RunResult
    from compileiq_cmake.model.records import Status

    runner = SimpleNamespace(
        spec=SimpleNamespace(workloads=(("--n", "1"),)), run=lambda tree, workload: RunResult(Status.OK, "", 1.0)
    )
    seen: list[int] = []
    out = interleave(
        runner,
        {"baseline": None, "c0": None},
        3,
        6,
        1,
        lambda live: False,
        progress=lambda rounds, seconds: seen.append(rounds),
    )
    assert out.rounds == 6 and seen == [1, 2, 3, 4, 5, 6]


@pytest.mark.unit
def test_what_a_person_reads_holds_no_control_characters_and_options_are_not_guessed(tmp_path, capsys, monkeypatch):
    """An escape sequence in a TOML's device name reached the terminal raw through `show`; option typos got
    28 lines of usage and no "did you mean"; an unquoted benchmark argument was taken for --no-screen;
    -S naming a file said "does not exist"; COMPILEIQ_SIMULATE_GPUS=100000 was accepted."""
    from compileiq_cmake.measure.gpu import visible_gpus
    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.ui.cli import main

    path = tmp_path / "c.toml"
    write_entry(path, make_entry(device="GPU \x1b[2J\x1b[31mred"))
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out
    for argv, says in (
        (["tune", "-S", ".", "-B", "b", "--target", "t", "--bugdet", "3"], "did you mean --budget?"),
        (
            ["tune", "-S", ".", "-B", "b", "--target", "t", "--bench", "prog", "--n", "100"],
            "go inside the quotes of --bench",
        ),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.count("\n") == 1 and says in err, err
    (tmp_path / "file").write_text("")
    assert (
        main(
            [
                "tune",
                "-S",
                str(tmp_path / "file"),
                "-B",
                str(tmp_path / "b"),
                "--target",
                "t",
                "--bench",
                "true",
                "--metric",
                "WALLTIME",
            ]
        )
        == 2
    )
    assert "is a file, not a directory" in capsys.readouterr().err
    with pytest.raises(CompileIQError, match="from 1 to 64"):
        visible_gpus(environ={"COMPILEIQ_SIMULATE_GPUS": "100000"})


@pytest.mark.cmake
def test_check_refuses_a_toml_with_a_switch_outside_the_grammar(tmp_path):
    """The third reader of the file: `check` stops at the file, in one line, before configuring anything."""
    src, build = _project(tmp_path)
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    path = _host_entry_text(
        tmp_path,
        flags=["-march=x86-64", "-mgeneral-regs-only"],
        tuned_cpu="Some CPU",
        cpu_features=["general-regs-only"],
    )
    proc = run_cli("check", str(path), "-S", str(src), "-B", str(build))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "-mgeneral-regs-only" in proc.stderr, proc.stderr
    assert not (build / "compileiq" / "check").exists()


@pytest.mark.cmake
def test_check_of_a_tree_without_a_build_type_checks_the_release_build_its_tune_tuned(tmp_path):
    """After the CMake route (a tree configured with -DCOMPILEIQ_TUNE=ON and no build type: its tune tunes a
    Release build), `check -B build` said every entry "does not apply"."""
    src, build = _project(tmp_path)
    assert configure(src, build).returncode == 0  # no CMAKE_BUILD_TYPE
    write_entry(src / "compileiq.toml", _entry(build))  # build_type Release
    proc = run_cli("check", "-S", str(src), "-B", str(build), "--strict")
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "checking a Release build" in said and "applies" in said, said[-2000:]


@pytest.mark.unit
def test_trials_reads_the_cmake_routes_suite_stores_and_names_targets(tmp_path):
    """After the CMake route, `trials -B build` said the tree "holds no tune results" (the umbrella target's
    suite keeps one store per target) and named tunes by a hash."""
    from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
    from compileiq_cmake.results.store import TrialStore

    path = tmp_path / "build" / "compileiq" / "suite" / "nbody" / "trials.sqlite"
    path.parent.mkdir(parents=True)
    store = TrialStore(path, "abcdef0123456789")
    store.save(
        Trial(0, FlagSet((), ()), Status.OK, "", (Measurement(("--n", "1"), (2.0,)),), 1.0, 1.0, 2.0, "cc", "", None)
    )
    store.save_result("summary", {"target": "nbody"})
    store.close()
    proc = run_cli("trials", "-B", str(tmp_path / "build"))
    assert proc.returncode == 0 and "tune nbody (abcdef012345): 1 trial" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.unit
def test_numbers_a_person_reads_are_rounded_and_never_nan():
    """'--time-limit 269.998 s' (a suite share) and 'nanx [nan..nan]' (an ablation step the box left out)."""
    import math

    from compileiq_cmake.model.records import Contribution
    from compileiq_cmake.model.wording import seconds
    from compileiq_cmake.tune.lines import contribution_line

    assert seconds(269.998) == "270 s" and seconds(2.5) == "2.5 s" and seconds(0.25) == "0.25 s"
    row = contribution_line(
        Contribution(
            "ptxas_opt_level", ("-Xptxas=-O1",), math.nan, math.nan, math.nan, True, "not ablated: the time limit"
        )
    )
    assert "nan" not in row.replace("not ablated", "") and "not measured" in row, row
    measured = contribution_line(Contribution("ftz", ("--ftz=true",), 1.0123, 1.001, 1.02, True, "kept"))
    assert "1.0123x [1.0010..1.0200]" in measured


@pytest.mark.unit
def test_ids_that_read_alike_keep_their_own_observations(tmp_path):
    """Two ids that differ only in characters a file name cannot hold ('a/b', 'a_b') shared one file: an import
    of both said "added 2" and kept one."""
    from compileiq_cmake.results.prior_store import LocalPrior

    store = LocalPrior(tmp_path / "cache")
    assert store.import_file(_prior_file(tmp_path, [_observation("a/b"), _observation("a_b")])) == (2, 0, 0)
    assert sorted(o.id for o in store.observations()) == ["a/b", "a_b"]
