"""Portability of what a tune writes: -march=native recorded resolved with the CPU and its ISA features, the
configure-time comparison with the configuring host (simulated through COMPILEIQ_HOST_CPU_FEATURES),
COMPILEIQ_PORTABLE, tune --portable; CUDA arch_scope on a multi-architecture target."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace

import pytest

from compileiq_cmake.flags import load_space
from compileiq_cmake.flags.portability import resolve
from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.results.toml_io import read_entries, write_entry
from compileiq_cmake.tune.host_side import host_dimensions
from compileiq_cmake.tune.tune_setup import CodeIdentity, Devices, ProjectModel

from conftest import EXAMPLES, HAVE_NVCC, cmake_dir, commands_for, configure, run_cli, tune_command_rules
from test_result_file import make_entry

GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed")
CPP = "double f(const double* a, int n) { double s = 0; for (int i = 0; i < n; ++i) s += a[i] * a[i]; return s; }\n"


def _native_entry(version: str, **kw):
    r = resolve(("-O3", "-march=native"), GXX, "GNU", "Test CPU 9000")
    base = dict(
        target="host_kernels",
        language="CXX",
        arch="",
        compiler_id="GNU",
        compiler_version=version,
        flags=r.flags,
        compute_capability="",
        device="cpu",
        tuned_cpu=r.cpu,
        cpu_features=r.features,
        sources_sha256="",
    )
    base.update(kw)
    return make_entry(**base)


@pytest.mark.cmake
@needs_gxx
def test_march_native_resolves_to_the_same_code_and_round_trips(tmp_path):
    """The resolved flags name the CPU the compiler picked (no 'native'), build the same object as -march=native
    here, record the ISA features, and a TOML with them reads back."""
    r = resolve(("-O3", "-march=native"), GXX, "GNU", "Test CPU 9000")
    assert r is not None and not r.note
    assert not any("native" in f for f in r.flags)
    march = [f for f in r.flags if f.startswith("-march=")]
    assert len(march) == 1 and march[0] != "-march=native"
    assert r.features and all(re.fullmatch(r"[a-z0-9_.\-]+", f) for f in r.features)
    src = tmp_path / "k.cpp"
    src.write_text(CPP)
    objs = []
    for i, flags in enumerate((["-O3", "-march=native"], list(r.flags))):
        obj = tmp_path / f"k{i}.s"
        subprocess.run([GXX, "-S", *flags, str(src), "-o", str(obj)], check=True)
        objs.append(obj.read_text().replace(f"k{i}", "k"))
    assert objs[0] == objs[1], "the resolved flags must compile to what -march=native compiles to"
    toml = tmp_path / "compileiq.toml"
    entry = _native_entry("12.2.0")
    write_entry(toml, entry)
    assert read_entries(toml) == [entry]
    assert resolve(("-O3",), GXX, "GNU", "x") is None
    # the host side of a CUDA target: -Xcompiler=-march=native, resolved the same way, behind -Xcompiler=
    cuda = resolve(("--use_fast_math", "-Xcompiler=-march=native"), GXX, "GNU", "Test CPU 9000")
    assert cuda.flags[0] == "--use_fast_math" and "-Xcompiler=" + march[0] in cuda.flags
    assert all(f.startswith("-Xcompiler=") for f in cuda.flags[1:]) and not any("native" in f for f in cuda.flags)
    cuda_entry = make_entry(flags=cuda.flags, tuned_cpu=cuda.cpu, cpu_features=cuda.features)
    write_entry(tmp_path / "cuda.toml", cuda_entry)
    assert read_entries(tmp_path / "cuda.toml") == [cuda_entry]


@pytest.mark.unit
def test_schema_of_the_portability_fields(tmp_path):
    """cpu_features only with tuned_cpu; resolved ISA tokens only for recorded features; arch_scope all|tuned,
    tuned only for CUDA."""
    toml = tmp_path / "c.toml"
    host = dict(
        target="h", language="CXX", arch="", compiler_id="GNU", compiler_version="12.2.0", compute_capability=""
    )
    ok = make_entry(
        **host, flags=("-march=znver3", "-mavx512f", "-mno-pku"), tuned_cpu="AMD", cpu_features=("avx512f",)
    )
    write_entry(toml, ok)
    for bad in (
        make_entry(**host, flags=("-march=znver3",), cpu_features=("avx2",)),  # features without the CPU
        make_entry(**host, flags=("-march=znver3",)),  # a resolved flag without a recorded CPU
        make_entry(**host, flags=("-mavx512f",), tuned_cpu="AMD", cpu_features=("avx2",)),  # unrecorded
        make_entry(**host, flags=("-m32; x",), tuned_cpu="AMD"),
        make_entry(**host, flags=("-O3",), tuned_cpu="AMD", cpu_features=("AVX 2",)),  # not a feature name
        make_entry(**host, flags=("-O3",), arch_scope="tuned"),  # tuned: CUDA only
        make_entry(arch_scope="some"),
    ):
        with pytest.raises(CompileIQError):
            write_entry(tmp_path / "bad.toml", bad)
        assert not (tmp_path / "bad.toml").exists()


@pytest.mark.cmake
def test_portable_leaves_host_specific_dimensions_out():
    spec = TuneSpec(
        tempfile.gettempdir(),
        tempfile.gettempdir(),
        "t",
        ("x",),
        MetricSpec("walltime"),
        tempfile.gettempdir(),
        portable=True,
    )
    names = {d.name for d in load_space("gcc", "GNU", "12.2", (), spec.excluded_flags).dimensions}
    assert "march_native" not in names and "opt_level" in names
    assert "march_native" in {
        d.name for d in load_space("gcc", "GNU", "12.2", (), replace(spec, portable=False).excluded_flags).dimensions
    }
    host = {d.name for d in host_dimensions("GNU", "12.2", (), spec.excluded_flags)}
    assert "host_march_native" not in host and "host_opt_level" in host
    out = run_cli("space", "gcc", "--exclude-flags", "cpu_specific")
    assert out.returncode == 0 and "march_native: excluded" in out.stdout and "-march=native" not in out.stdout


@pytest.mark.cmake
def test_portable_keyword_of_compileiq_tune_reaches_the_tune_command(tmp_path):
    rules = tune_command_rules(tmp_path, "PORTABLE")
    assert "--portable" in rules


@pytest.mark.cmake
@needs_gxx
def test_configure_compares_the_isa_features_and_portable_refuses(tmp_path, compiler_versions):
    """A real configure: on this host (which has the features) no line; on a simulated host lacking some,
    ONE status line naming them (the flags still apply); with COMPILEIQ_PORTABLE=ON not applied, with a line."""
    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    entry = _native_entry(compiler_versions.cxx)
    write_entry(src / "compileiq.toml", entry)
    march = next(f for f in entry.flags if f.startswith("-march="))
    pkg = f"-Dcompileiq_cmake_DIR={cmake_dir()}"

    here = configure(src, tmp_path / "here", "-DCMAKE_BUILD_TYPE=Release", pkg)
    assert here.returncode == 0, here.stderr
    assert "compileiq: applied" in here.stdout and "lacks" not in here.stdout
    (cmd,) = commands_for(tmp_path / "here", "main.cpp")
    assert march in cmd.split() and "-march=native" not in cmd

    other = configure(
        src, tmp_path / "other", "-DCMAKE_BUILD_TYPE=Release", pkg, "-DCOMPILEIQ_HOST_CPU_FEATURES=sse3;ssse3;popcnt"
    )
    assert other.returncode == 0, other.stderr
    lines = [line for line in other.stdout.splitlines() if "this host lacks" in line]
    assert len(lines) == 1, other.stdout
    missing = [f for f in entry.cpu_features if f not in ("sse3", "ssse3", "popcnt")]
    assert all(f in lines[0] for f in missing) and "Test CPU 9000" in lines[0] and march in lines[0]
    assert "popcnt," not in lines[0]
    (cmd,) = commands_for(tmp_path / "other", "main.cpp")
    assert march in cmd.split()

    portable = configure(src, tmp_path / "portable", "-DCMAKE_BUILD_TYPE=Release", pkg, "-DCOMPILEIQ_PORTABLE=ON")
    assert portable.returncode == 0, portable.stderr
    assert "COMPILEIQ_PORTABLE is ON" in portable.stdout and "compileiq: applied" not in portable.stdout
    (cmd,) = commands_for(tmp_path / "portable", "main.cpp")
    assert march not in cmd.split()

    # check: the CPU tuned on, and whether this host has its features (here; and a simulated host)
    env = {**os.environ}
    proc = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", "check", "-S", str(src), "-B", str(tmp_path / "here")],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "cpu: tuned on Test CPU 9000" in proc.stdout and "this host has its ISA features" in proc.stdout
    env["COMPILEIQ_HOST_CPU_FEATURES"] = "sse3"
    proc = subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", "check", "-S", str(src), "-B", str(tmp_path / "here")],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "this host lacks" in proc.stdout and missing[0] in proc.stdout


@pytest.mark.cuda
@pytest.mark.cmake
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed")
def test_arch_scope_on_a_multi_architecture_target(tmp_path, compiler_versions):
    """n-body builds 75;80;90, the entry was tuned on sm_90. all (default): applied to every -gencode, the
    note lists measured and unmeasured architectures (check too); tuned: not applied, a line says why; a
    build of sm_90 alone gets them; host-side flags only: applied (no device code changes)."""
    src = tmp_path / "nbody"
    shutil.copytree(EXAMPLES / "cuda_nbody", src)
    version = compiler_versions.cuda
    toml = src / "compileiq.toml"
    pkg = f"-Dcompileiq_cmake_DIR={cmake_dir()}"

    write_entry(toml, make_entry(arch="90", compiler_version=version, flags=("--use_fast_math",), sources_sha256=""))
    every = configure(src, tmp_path / "all", "-DCMAKE_BUILD_TYPE=Release", pkg)
    assert every.returncode == 0, every.stderr
    assert "measured on sm_90 only" in every.stdout and "sm_75, sm_80" in every.stdout
    cmds = commands_for(tmp_path / "all", "nbody.cu")
    assert cmds and all("--use_fast_math" in c and "sm_75" in c for c in cmds)
    proc = run_cli("check", "-S", str(src), "-B", str(tmp_path / "all"))
    assert proc.returncode == 0, proc.stderr
    assert "architectures: measured: sm_90; unmeasured: sm_75, sm_80" in proc.stdout

    toml.unlink()
    write_entry(
        toml,
        make_entry(
            arch="90", compiler_version=version, flags=("--use_fast_math",), sources_sha256="", arch_scope="tuned"
        ),
    )
    tuned = configure(src, tmp_path / "tuned", "-DCMAKE_BUILD_TYPE=Release", pkg)
    assert tuned.returncode == 0, tuned.stderr
    assert 'arch_scope = "tuned"' in tuned.stdout and "not applied" in tuned.stdout
    assert not any("--use_fast_math" in c for c in commands_for(tmp_path / "tuned", "nbody.cu"))
    proc = run_cli("check", "-S", str(src), "-B", str(tmp_path / "tuned"))
    assert (
        proc.returncode == 0
        and "does not apply: arch_scope tuned: measured on sm_90; the target also builds sm_75, sm_80 (unmeasured)"
        in proc.stdout
    ), proc.stdout
    lists = src / "CMakeLists.txt"  # the example sets its architectures itself
    lists.write_text(
        lists.read_text().replace("set(CMAKE_CUDA_ARCHITECTURES 75 80 90)", "set(CMAKE_CUDA_ARCHITECTURES 90)")
    )
    alone = configure(src, tmp_path / "alone", "-DCMAKE_BUILD_TYPE=Release", pkg)
    assert alone.returncode == 0 and "applied 1 tuned flag to nbody" in alone.stdout, alone.stdout
    assert all("--use_fast_math" in c for c in commands_for(tmp_path / "alone", "nbody.cu"))

    lists.write_text(
        lists.read_text().replace("set(CMAKE_CUDA_ARCHITECTURES 90)", "set(CMAKE_CUDA_ARCHITECTURES 75 80 90)")
    )
    toml.unlink()
    write_entry(
        toml,
        make_entry(
            arch="90", compiler_version=version, flags=("-Xcompiler=-O3",), sources_sha256="", arch_scope="tuned"
        ),
    )
    host = configure(src, tmp_path / "host", "-DCMAKE_BUILD_TYPE=Release", pkg)
    assert host.returncode == 0 and "applied 1 tuned flag to nbody" in host.stdout, host.stdout
    assert "change no device code" in host.stdout
    assert all("-Xcompiler=-O3" in c for c in commands_for(tmp_path / "host", "nbody.cu"))


@pytest.mark.cmake
@needs_gxx
@pytest.mark.parametrize(
    "flags", [("-O3", "-march=native"), ("-O3", "[src/main.cpp]-march=native")], ids=["target", "per-file"]
)
def test_a_tune_winner_with_march_native_is_written_resolved(tmp_path, flags):
    """The entry a tune writes (tune._entry) for a host winner '-O3 -march=native': resolved flags, the CPU model
    of this machine and its ISA features, a log line that says so; the TOML reads back and holds no 'native'."""
    from types import SimpleNamespace

    from compileiq_cmake.measure.gpu import host_cpu
    from compileiq_cmake.model.records import FlagSet, Validation, WorkloadComparison
    from compileiq_cmake.tune.entry import _entry

    winner = Validation(
        FlagSet((), flags),
        (WorkloadComparison(("--n", "1"), (2.0, 2.0), (1.6, 1.6), 1.25, 1.2, 1.3, 1e-6),),
        1.25,
        1.2,
        1.3,
        True,
    )
    spec = SimpleNamespace(
        target="host_kernels",
        output=tmp_path / "compileiq.toml",
        metric=SimpleNamespace(label="^time_ms=([0-9.]+)", lower_is_better=True),
        checks=("pass_regex",),
        arch_scope="all",
        pass_regex="PASS",
        lower_is_better=True,
        objective="time",
    )
    setup = SimpleNamespace(
        spec=spec,
        replay=None,
        bench=None,
        code=CodeIdentity(sources_sha256="ab" * 32),
        project=ProjectModel(
            target=None,
            language="CXX",
            build_type="Release",
            toolchain=SimpleNamespace(compiler_id="GNU", version="12.2.0", path=GXX),
        ),
        devices=Devices(device=host_cpu()),
    )
    said = []
    entry = _entry(setup, winner, (), 12, said.append)
    assert entry.tuned_cpu == host_cpu() and entry.cpu_features
    written = entry.flags + tuple(f for s in entry.sources for f in s["flags"])
    assert "-O3" in entry.flags and not any("native" in f for f in written)
    assert any(f.startswith("-march=") for f in written)
    line = next(line for line in said if "-march=native recorded as the compiler resolves it" in line)
    assert "(unresolved)" not in line and "-march=" in line.split(":", 2)[2], line
    write_entry(spec.output, entry)
    assert not any("native" in f for f in entry.untested_flags)  # said as written: resolved
    assert read_entries(spec.output) == [entry] and "native" not in spec.output.read_text()


@pytest.mark.unit
def test_a_winner_with_native_flags_in_several_parts_asks_the_compiler_once(tmp_path):
    """tune._entry resolves -march=native of the target and of each per-file part with one portability.Answers:
    a (fake, counting) g++ is asked what native means on this host once, not again per part."""
    from types import SimpleNamespace

    from compileiq_cmake.model.records import FlagSet, Validation, WorkloadComparison
    from compileiq_cmake.tune.entry import _entry

    calls = tmp_path / "calls.txt"
    gxx = tmp_path / "g++"
    gxx.write_text(f"""#!/bin/sh
echo "$*" >> {calls}
case "$*" in
  *-Q*--help=target*) case "$*" in *-march=native*) printf '  -march=   znver9\\n  -mavx2   [enabled]\\n' ;;
                                   *) printf '  -march=   znver9\\n' ;; esac ;;
esac
""")
    gxx.chmod(0o755)
    flags = ("-march=native", "[src/a.cpp]-march=native", "[src/b.cpp]-march=native")
    winner = Validation(
        FlagSet((), flags),
        (WorkloadComparison(("--n", "1"), (2.0, 2.0), (1.6, 1.6), 1.25, 1.2, 1.3, 1e-6),),
        1.25,
        1.2,
        1.3,
        True,
    )
    spec = SimpleNamespace(
        target="host_kernels",
        output=tmp_path / "compileiq.toml",
        metric=SimpleNamespace(label="^time_ms=([0-9.]+)", lower_is_better=True),
        checks=(),
        arch_scope="all",
        pass_regex="",
        lower_is_better=True,
        objective="time",
    )
    setup = SimpleNamespace(
        spec=spec,
        replay=None,
        bench=None,
        code=CodeIdentity(sources_sha256="ab" * 32),
        project=ProjectModel(
            target=None,
            language="CXX",
            build_type="Release",
            toolchain=SimpleNamespace(compiler_id="GNU", version="12.2.0", path=str(gxx)),
        ),
        devices=Devices(device="cpu"),
    )
    entry = _entry(setup, winner, (), 12, lambda line: None)
    assert entry.flags == ("-march=znver9", "-mavx2") and entry.cpu_features == ("avx2",)
    assert [s["flags"] for s in entry.sources] == [["-march=znver9", "-mavx2"]] * 2
    asked = [a for a in calls.read_text().splitlines() if "-dumpversion" not in a]  # (the entry's provenance)
    assert len(asked) == 5, (
        asked
    )  # the target's resolution (-march=native, -march=znver9, -###, the features' two); none per part


@pytest.mark.unit
def test_arch_scope_tuned_is_refused_for_a_host_target():
    from compileiq_cmake.tune.setup_devices import _check_arch_option

    spec = TuneSpec(
        tempfile.gettempdir(),
        tempfile.gettempdir(),
        "t",
        ("x",),
        MetricSpec("walltime"),
        tempfile.gettempdir(),
        arch_scope="tuned",
    )
    with pytest.raises(CompileIQError, match="--arch-scope tuned"):
        _check_arch_option(spec, "CXX")
    _check_arch_option(spec, "CUDA")
    with pytest.raises(CompileIQError, match="--arch-scope"):
        replace(spec, arch_scope="some")._check_numbers()


@pytest.mark.cmake
def test_an_old_entry_with_a_literal_march_native_is_named_and_portable_refuses_it(tmp_path, compiler_versions):
    """A compileiq.toml written before the resolution (-march=native literally, no tuned_cpu): the configure
    says it is CPU-specific and unrecorded; COMPILEIQ_PORTABLE=ON does not apply it."""
    src = tmp_path / "host_cpp"
    shutil.copytree(EXAMPLES / "host_cpp", src)
    write_entry(
        src / "compileiq.toml",
        make_entry(
            target="host_kernels",
            language="CXX",
            arch="",
            compiler_id="GNU",
            compiler_version=compiler_versions.cxx,
            flags=("-O3", "-march=native"),
            compute_capability="",
            device="cpu",
            sources_sha256="",
        ),
    )
    pkg = f"-Dcompileiq_cmake_DIR={cmake_dir()}"
    plain = configure(src, tmp_path / "plain", "-DCMAKE_BUILD_TYPE=Release", pkg)
    assert plain.returncode == 0 and "compileiq: applied" in plain.stdout
    assert "specific to the CPU they were tuned on an unrecorded CPU (-march=native)" in plain.stdout, plain.stdout
    portable = configure(src, tmp_path / "portable", "-DCMAKE_BUILD_TYPE=Release", pkg, "-DCOMPILEIQ_PORTABLE=ON")
    assert portable.returncode == 0 and "COMPILEIQ_PORTABLE is ON" in portable.stdout
    (cmd,) = commands_for(tmp_path / "portable", "main.cpp")
    assert "-march=native" not in cmd
